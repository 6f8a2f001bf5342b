"""Resolve gem backtrace frames to real line numbers in the gems' sources at the right tags."""

from __future__ import annotations

import functools
import os
import re
import subprocess

MIRROR = os.environ.get("GEM_MIRRORS", "mirrors")


@functools.cache
def source(repo: str, tag: str, path: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={MIRROR}/{repo}/repo", "show", f"{tag}:{path}"],
                         capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace").splitlines()


def find(repo: str, tag: str, path: str, snippet: str, after: str | None = None, nth: int = 1,
         unique: bool = False) -> int:
    lines = source(repo, tag, path)
    start = 0
    if after:
        hits = [i for i, t in enumerate(lines, 1) if after in t]
        if not hits:
            raise LookupError(f"{repo}@{tag}:{path}: no line containing after={after!r}")
        start = hits[0]
    hits = [i for i, t in enumerate(lines, 1) if i > start and snippet in t]
    if unique and len(hits) != 1:
        raise LookupError(f"{repo}@{tag}:{path}: {len(hits)} lines contain {snippet!r}")
    if len(hits) < nth:
        raise LookupError(f"{repo}@{tag}:{path}: fewer than {nth} lines contain {snippet!r} after {after!r}")
    return hits[nth - 1]


def short_label(label: str) -> str:
    """Ruby < 3.4 labels: 'block in Foo::Bar#baz' -> 'block in baz', 'Array#each' -> 'each'."""
    def strip(part: str) -> str:
        if part.startswith("<"):
            return part
        return re.split(r"[#.]", part)[-1] if re.search(r"[#.]", part) else part
    m = re.match(r"^((?:block (?:\(\d+ levels\) )?in |rescue in |ensure in )?)(.*)$", label)
    return m.group(1) + strip(m.group(2))


class Ctx:
    """One deployment: where gems live, which versions, which Ruby label style."""

    def __init__(self, ruby34: bool, gem_root: str, gems: dict[str, tuple[str, str, str, str]]):
        # gems: key -> (mirror repo, tag, path prefix inside repo, printed gem dir name)
        self.ruby34 = ruby34
        self.gem_root = gem_root.rstrip("/")
        self.gems = gems

    def label(self, label: str) -> str:
        return f"'{label}'" if self.ruby34 else f"`{short_label(label)}'"

    def g(self, key: str, path: str, snippet: str, label: str, after: str | None = None, nth: int = 1,
          unique: bool = False) -> str:
        repo, tag, prefix, gemdir = self.gems[key]
        line = find(repo, tag, prefix + path, snippet, after=after, nth=nth, unique=unique)
        return f"{self.gem_root}/{gemdir}/lib/{path}:{line}:in {self.label(label)}"

    def raw(self, path: str, line: int, label: str) -> str:
        return f"{path}:{line}:in {self.label(label)}"

    def tag(self, key: str) -> str:
        return self.gems[key][1]


def rails_gems(version: str, extra: dict | None = None) -> dict:
    tag = f"v{version}"
    gems = {
        "AP": ("rails+rails", tag, "actionpack/lib/", f"actionpack-{version}"),
        "AS": ("rails+rails", tag, "activesupport/lib/", f"activesupport-{version}"),
        "AR": ("rails+rails", tag, "activerecord/lib/", f"activerecord-{version}"),
        "AV": ("rails+rails", tag, "actionview/lib/", f"actionview-{version}"),
        "AM": ("rails+rails", tag, "activemodel/lib/", f"activemodel-{version}"),
        "AJ": ("rails+rails", tag, "activejob/lib/", f"activejob-{version}"),
        "RT": ("rails+rails", tag, "railties/lib/", f"railties-{version}"),
    }
    gems.update(extra or {})
    return gems


def major(ctx: Ctx) -> tuple[int, int]:
    v = ctx.tag("AP").lstrip("v").split(".")
    return int(v[0]), int(v[1])


# --- ActiveSupport::Callbacks -------------------------------------------------------------------

def run_callbacks_final(c: Ctx) -> list[str]:
    """run_callbacks when the chain has no around callback: the yield of the final path."""
    return [c.g("AS", "active_support/callbacks.rb", "env.value = !env.halted && (!block_given? || yield)",
                "ActiveSupport::Callbacks#run_callbacks", after="# Common case")]


def run_callbacks_around_skipped(c: Ctx) -> list[str]:
    """run_callbacks when an around callback exists but is skipped for this action (only: [...])."""
    return [
        c.g("AS", "active_support/callbacks.rb", "env.value = !env.halted && (!block_given? || yield)",
            "block in ActiveSupport::Callbacks#run_callbacks", after="invoke_sequence = Proc.new"),
        c.g("AS", "active_support/callbacks.rb", "invoke_sequence.call", "ActiveSupport::Callbacks#run_callbacks",
            after="def run_callbacks"),
    ]


def method_lambda(c: Ctx) -> str:
    if major(c) >= (6, 1):
        return c.g("AS", "active_support/callbacks.rb", "target.send(@method_name, &block)",
                   "block in ActiveSupport::Callbacks::CallTemplate::MethodCall#make_lambda", after="def make_lambda")
    return c.g("AS", "active_support/callbacks.rb", "target.send(method, *arguments, &block)",
               "block in ActiveSupport::Callbacks::CallTemplate#make_lambda", after="def make_lambda")


def before_filter_frames(c: Ctx, conditional: bool, terminator: list[str]) -> list[str]:
    """From the user callback's lambda to CallbackSequence#invoke_before (a before callback that raises)."""
    f = "active_support/callbacks.rb"
    if major(c) >= (7, 1):
        call = [c.g("AS", f, "result_lambda = -> { user_callback.call target, value }",
                    "block in ActiveSupport::Callbacks::Filters::Before#call", after="class Before")]
        call2 = [c.g("AS", f, "env.halted = halted_lambda.call(target, result_lambda)",
                     "ActiveSupport::Callbacks::Filters::Before#call", after="class Before")]
    else:
        meth = "halting_and_conditional" if conditional else "halting"
        anchor = f"def self.{meth}("
        call = [c.g("AS", f, "result_lambda = -> { user_callback.call target, value }",
                    f"block (2 levels) in ActiveSupport::Callbacks::Filters::Before.{meth}", after=anchor)]
        call2 = [c.g("AS", f, "env.halted = halted_lambda.call(target, result_lambda)",
                     f"block in ActiveSupport::Callbacks::Filters::Before.{meth}", after=anchor)]
    seq = "@before&.each { |b| b.call(arg) }" if major(c) >= (7, 1) else "@before.each { |b| b.call(arg) }"
    invoke = [
        c.g("AS", f, seq, "block in ActiveSupport::Callbacks::CallbackSequence#invoke_before"),
        c.g("AS", f, seq, "Array#each"),
        c.g("AS", f, seq, "ActiveSupport::Callbacks::CallbackSequence#invoke_before"),
    ]
    return [method_lambda(c)] + call + terminator + call2 + invoke


def controller_terminator(c: Ctx) -> list[str]:
    return [c.g("AP", "abstract_controller/callbacks.rb", "result_lambda.call; controller.performed?",
                "block (2 levels) in <module:Callbacks>")]


def after_filter_frames(c: Ctx) -> list[str]:
    f = "active_support/callbacks.rb"
    assert major(c) >= (7, 1)
    seq = "@after&.each { |a| a.call(arg) }"
    return [
        method_lambda(c),
        c.g("AS", f, "user_callback.call target, value", "ActiveSupport::Callbacks::Filters::After#call",
            after="class After"),
        c.g("AS", f, seq, "block in ActiveSupport::Callbacks::CallbackSequence#invoke_after"),
        c.g("AS", f, seq, "Array#each"),
        c.g("AS", f, seq, "ActiveSupport::Callbacks::CallbackSequence#invoke_after"),
        c.g("AS", f, "next_sequence.invoke_after(env)", "ActiveSupport::Callbacks#run_callbacks",
            after="# Common case"),
    ]


# --- ActionController down to the app server ---------------------------------------------------

def action_frames(c: Ctx) -> list[str]:
    """send_action .. the callbacks block that runs the action."""
    m = major(c)
    if m >= (8, 0):
        send = c.g("AP", "action_controller/metal/basic_implicit_render.rb", "ret = super",
                   "ActionController::BasicImplicitRender#send_action")
    else:
        send = c.g("AP", "action_controller/metal/basic_implicit_render.rb", "super.tap { default_render unless performed? }",
                   "ActionController::BasicImplicitRender#send_action")
    return [
        send,
        c.g("AP", "abstract_controller/base.rb", "send_action(", "AbstractController::Base#process_action",
            after="def process_action"),
        c.g("AP", "action_controller/metal/rendering.rb", "super", "ActionController::Rendering#process_action",
            after="def process_action"),
        c.g("AP", "abstract_controller/callbacks.rb", "super", "block in AbstractController::Callbacks#process_action",
            after="def process_action"),
    ]


def process_action_frames(c: Ctx) -> list[str]:
    """AbstractController::Callbacks#process_action (the run_callbacks call) .. Metal.dispatch."""
    return [
        c.g("AP", "abstract_controller/callbacks.rb", "run_callbacks(:process_action)",
            "AbstractController::Callbacks#process_action"),
        c.g("AP", "action_controller/metal/rescue.rb", "super", "ActionController::Rescue#process_action",
            after="def process_action"),
        c.g("AP", "action_controller/metal/instrumentation.rb", "result = super",
            "block in ActionController::Instrumentation#process_action", after="def process_action"),
        c.g("AS", "active_support/notifications.rb", "instrumenter.instrument(name, payload) { yield payload if block_given? }",
            "block in ActiveSupport::Notifications.instrument"),
        c.g("AS", "active_support/notifications/instrumenter.rb", "yield payload",
            "ActiveSupport::Notifications::Instrumenter#instrument", after="def instrument("),
        c.g("AS", "active_support/notifications.rb", "instrumenter.instrument(name, payload) { yield payload if block_given? }",
            "ActiveSupport::Notifications.instrument"),
        c.g("AP", "action_controller/metal/instrumentation.rb", 'ActiveSupport::Notifications.instrument("process_action.action_controller"',
            "ActionController::Instrumentation#process_action"),
        c.g("AP", "action_controller/metal/params_wrapper.rb", "super", "ActionController::ParamsWrapper#process_action",
            after="def process_action"),
        c.g("AR", "active_record/railties/controller_runtime.rb", "super",
            "ActiveRecord::Railties::ControllerRuntime#process_action", after="def process_action"),
        c.g("AP", "abstract_controller/base.rb", "process_action(action_name", "AbstractController::Base#process"),
        c.g("AV", "action_view/rendering.rb", "super", "ActionView::Rendering#process", after="def process("),
        c.g("AP", "action_controller/metal.rb", "process(name)", "ActionController::Metal#dispatch",
            after="def dispatch(name, request, response)"),
        c.g("AP", "action_controller/metal.rb", "new.dispatch(name, req, res)", "ActionController::Metal.dispatch",
            after="def self.dispatch", nth=2),
    ]


def routing_frames(c: Ctx) -> list[str]:
    m = major(c)
    rs = "action_dispatch/routing/route_set.rb"
    jr = "action_dispatch/journey/router.rb"
    out = [
        c.g("AP", rs, "controller.dispatch(action, req, res)",
            "ActionDispatch::Routing::RouteSet::Dispatcher#dispatch"),
        c.g("AP", rs, "dispatch(controller, params[:action], req, res)",
            "ActionDispatch::Routing::RouteSet::Dispatcher#serve"),
    ]
    if m >= (8, 0):
        out += [
            c.g("AP", jr, "route.app.serve(req)", "block in ActionDispatch::Journey::Router#serve"),
            c.g("AP", jr, "yield [match_data, path_parameters, r]", "block in ActionDispatch::Journey::Router#find_routes"),
            c.g("AP", jr, "routes.each { |r|", "Array#each"),
            c.g("AP", jr, "routes.each { |r|", "ActionDispatch::Journey::Router#find_routes"),
            c.g("AP", jr, "find_routes(req) do |match, parameters, route|", "ActionDispatch::Journey::Router#serve"),
        ]
    else:
        out += [
            c.g("AP", jr, "route.app.serve(req)", "block in ActionDispatch::Journey::Router#serve"),
            c.g("AP", jr, "find_routes(req).each do |match, parameters, route|", "Array#each"),
            c.g("AP", jr, "find_routes(req).each do |match, parameters, route|", "ActionDispatch::Journey::Router#serve"),
        ]
    out.append(c.g("AP", rs, "@router.serve(req)", "ActionDispatch::Routing::RouteSet#call"))
    return out


def nr_tracing(c: Ctx) -> str:
    return c.g("NR", "new_relic/agent/instrumentation/middleware_tracing.rb", "traced_call(env) : target.call(env)",
               "NewRelic::Agent::Instrumentation::MiddlewareTracing#call")


def middleware_frames(c: Ctx, from_debug_exceptions: bool = False) -> list[str]:
    """Rack middleware between the app server and the router, trimmed as the agent trims them."""
    m = major(c)
    out: list[str] = []
    if not from_debug_exceptions:
        out.append(nr_tracing(c))
        out.append(c.g("AP", "action_dispatch/middleware/debug_exceptions.rb", "response = @app.call(env)",
                       "ActionDispatch::DebugExceptions#call"))
    out.append(nr_tracing(c))
    out.append(c.g("AP", "action_dispatch/middleware/show_exceptions.rb", "@app.call(env)",
                   "ActionDispatch::ShowExceptions#call", after="def call(env)"))
    out.append(nr_tracing(c))
    lg = "rails/rack/logger.rb"
    out.append(c.g("RT", lg, "@app.call(env)", "Rails::Rack::Logger#call_app", after="def call_app"))
    if m >= (7, 1):
        out.append(c.g("RT", lg, "call_app(request, env)", "Rails::Rack::Logger#call", after="def call(env)"))
    else:
        out += [
            c.g("RT", lg, "logger.tagged(compute_tags(request)) { call_app(request, env) }", "block in Rails::Rack::Logger#call"),
            c.g("AS", "active_support/tagged_logging.rb", "formatter.tagged(*tags) { yield self }",
                "block in ActiveSupport::TaggedLogging#tagged"),
            c.g("AS", "active_support/tagged_logging.rb", "yield self", "ActiveSupport::TaggedLogging::Formatter#tagged",
                after="def tagged(*tags)"),
            c.g("AS", "active_support/tagged_logging.rb", "formatter.tagged(*tags) { yield self }",
                "ActiveSupport::TaggedLogging#tagged"),
            c.g("RT", lg, "logger.tagged(compute_tags(request)) { call_app(request, env) }", "Rails::Rack::Logger#call"),
        ]
    out.append(nr_tracing(c))
    out.append(c.g("AP", "action_dispatch/middleware/remote_ip.rb", "@app.call(req.env)", "ActionDispatch::RemoteIp#call"))
    out.append(c.g("AP", "action_dispatch/middleware/request_id.rb", "@app.call(env)", "ActionDispatch::RequestId#call"))
    out.append(c.g("AP", "action_dispatch/middleware/executor.rb", "response = @app.call(env)", "ActionDispatch::Executor#call"))
    if m >= (6, 0):
        out.append(c.g("AP", "action_dispatch/middleware/host_authorization.rb", "@app.call(env)",
                       "ActionDispatch::HostAuthorization#call", nth=2))
    out.append(nr_tracing(c))
    out.append(c.g("RT", "rails/engine.rb", "app.call req.env", "Rails::Engine#call"))
    return out


def puma_frames(c: Ctx) -> list[str]:
    tag = c.tag("PUMA")
    if tag.startswith("v4."):
        return [
            c.g("PUMA", "puma/server.rb", "status, headers, res_body = @app.call(env)", "Puma::Server#handle_request"),
            c.g("PUMA", "puma/server.rb", "case handle_request(client, buffer)", "Puma::Server#process_client"),
            c.g("PUMA", "puma/server.rb", "process_client client, buffer", "block in Puma::Server#run",
                after="@thread_pool = ThreadPool.new", nth=1),
            c.g("PUMA", "puma/thread_pool.rb", "block.call(work, *extra)", "block in Puma::ThreadPool#spawn_thread"),
        ]
    return [
        c.g("PUMA", "puma/request.rb", "@app.call(env)", "block in Puma::Request#handle_request", after="with_force_shutdown do"),
        c.g("PUMA", "puma/thread_pool.rb", "yield", "Puma::ThreadPool#with_force_shutdown", after="def with_force_shutdown"),
        c.g("PUMA", "puma/request.rb", "status, headers, app_body = @thread_pool.with_force_shutdown do",
            "Puma::Request#handle_request"),
        c.g("PUMA", "puma/server.rb", "case handle_request(client, requests + 1)", "Puma::Server#process_client"),
        c.g("PUMA", "puma/server.rb", "{ |client| process_client client }", "block in Puma::Server#run"),
        c.g("PUMA", "puma/thread_pool.rb", "block.call(work)", "block in Puma::ThreadPool#spawn_thread"),
    ]


def unicorn_frames(c: Ctx, gemdir: str = "unicorn-5.4.1") -> list[str]:
    # unicorn is not mirrored here: these are the well-known 5.4.x line numbers
    root = f"{c.gem_root}/{gemdir}"
    return [
        f"{root}/lib/unicorn/http_server.rb:606:in {c.label('Unicorn::HttpServer#process_client')}",
        f"{root}/lib/unicorn/http_server.rb:701:in {c.label('Unicorn::HttpServer#worker_loop')}",
        f"{root}/lib/unicorn/http_server.rb:549:in {c.label('Unicorn::HttpServer#spawn_missing_workers')}",
        f"{root}/lib/unicorn/http_server.rb:142:in {c.label('Unicorn::HttpServer#start')}",
        f"{root}/bin/unicorn:126:in {c.label('<top (required)>')}",
    ]
