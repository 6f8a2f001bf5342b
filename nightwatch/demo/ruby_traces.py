"""Ruby backtrace frames for the demo export.

In-app frames are located in the demo application under app/ by a snippet of their line, so a trace
never points at a line that is not there. Framework frames are the Rails 7.1 / Ruby 3.2 stacks the
New Relic Ruby agent reports below the application code (trimmed as the agent trims them).
"""

from __future__ import annotations

from pathlib import Path

APP_DIR = Path(__file__).resolve().parent / "app"
GEMS = "/usr/local/bundle/gems"
RUBY_LIB = "/usr/local/lib/ruby/3.2.0"


class DemoSourceError(Exception):
    """The demo application no longer contains a line a stack trace must point at."""


def line_of(path: str, snippet: str, after: str | None = None) -> int:
    """1-based number of the only line of `path` containing `snippet` (below the line containing `after`)."""
    lines = (APP_DIR / path).read_text(encoding="utf-8").splitlines()
    start = line_of(path, after) if after else 0
    hits = [number for number, text in enumerate(lines, start=1) if number > start and snippet in text]
    if after:
        hits = hits[:1]
    if len(hits) != 1:
        raise DemoSourceError(f"{path}: expected exactly one line containing {snippet!r}, found {len(hits)}")
    return hits[0]


def app(path: str, snippet: str, method: str, after: str | None = None) -> str:
    """An in-app backtrace frame, located by a snippet of its line (the first one below `after`, if given)."""
    return f"{path}:{line_of(path, snippet, after)}:in `{method}'"


def gem(name: str, path: str, line: int, method: str) -> str:
    return f"{GEMS}/{name}/lib/{path}:{line}:in `{method}'"


def stdlib(path: str, line: int, method: str) -> str:
    return f"{RUBY_LIB}/{path}:{line}:in `{method}'"


AP, AS, AR, AV, RT = "actionpack-7.1.3", "activesupport-7.1.3", "activerecord-7.1.3", "actionview-7.1.3", "railties-7.1.3"
SQ, NR, PUMA, STRIPE = "sidekiq-7.2.2", "newrelic_rpm-9.7.1", "puma-6.4.2", "stripe-10.8.0"

# Everything below a controller action, from ActionController down to Puma (trimmed as the agent sends it).
CONTROLLER_STACK = [
    gem(AP, "action_controller/metal/basic_implicit_render.rb", 6, "send_action"),
    gem(AP, "abstract_controller/base.rb", 224, "process_action"),
    gem(AP, "action_controller/metal/rendering.rb", 165, "process_action"),
    gem(AP, "abstract_controller/callbacks.rb", 259, "block in process_action"),
    gem(AS, "active_support/callbacks.rb", 121, "block in run_callbacks"),
    gem(AS, "active_support/callbacks.rb", 141, "run_callbacks"),
    gem(AP, "abstract_controller/callbacks.rb", 258, "process_action"),
    gem(AP, "action_controller/metal/rescue.rb", 25, "process_action"),
    gem(AP, "action_controller/metal/instrumentation.rb", 74, "block in process_action"),
    gem(AS, "active_support/notifications.rb", 206, "block in instrument"),
    gem(AS, "active_support/notifications/instrumenter.rb", 58, "instrument"),
    gem(AP, "action_controller/metal/instrumentation.rb", 73, "process_action"),
    gem(AR, "active_record/railties/controller_runtime.rb", 32, "process_action"),
    gem(AP, "abstract_controller/base.rb", 160, "process"),
    gem(AV, "action_view/rendering.rb", 40, "process"),
    gem(AP, "action_controller/metal.rb", 227, "dispatch"),
    gem(AP, "action_dispatch/routing/route_set.rb", 49, "dispatch"),
    gem(AP, "action_dispatch/journey/router.rb", 51, "block in serve"),
    gem(AP, "action_dispatch/journey/router.rb", 32, "serve"),
    gem(AP, "action_dispatch/routing/route_set.rb", 882, "call"),
    gem(NR, "new_relic/agent/instrumentation/middleware_tracing.rb", 99, "call"),
    "/usr/local/bundle/gems/rack-timeout-0.6.3/lib/rack/timeout/core.rb:148:in `block in call'",
    gem(RT, "rails/engine.rb", 536, "call"),
    gem(PUMA, "puma/request.rb", 100, "block in handle_request"),
    gem(PUMA, "puma/request.rb", 99, "handle_request"),
    gem(PUMA, "puma/server.rb", 443, "process_client"),
    gem(PUMA, "puma/thread_pool.rb", 155, "block in spawn_thread"),
]

# Rack middleware only: errors raised before a controller runs (routing, request parsing, methods).
MIDDLEWARE_STACK = [
    gem(AP, "action_dispatch/middleware/debug_exceptions.rb", 30, "call"),
    gem(AP, "action_dispatch/middleware/show_exceptions.rb", 31, "call"),
    gem(RT, "rails/rack/logger.rb", 37, "call_app"),
    gem(RT, "rails/rack/logger.rb", 24, "block in call"),
    gem(AS, "active_support/tagged_logging.rb", 135, "block in tagged"),
    gem(RT, "rails/rack/logger.rb", 24, "call"),
    gem(AP, "action_dispatch/middleware/remote_ip.rb", 92, "call"),
    gem(AP, "action_dispatch/middleware/request_id.rb", 28, "call"),
    "/usr/local/bundle/gems/rack-2.2.8.1/lib/rack/method_override.rb:24:in `call'",
    "/usr/local/bundle/gems/rack-2.2.8.1/lib/rack/runtime.rb:22:in `call'",
    "/usr/local/bundle/gems/rack-timeout-0.6.3/lib/rack/timeout/core.rb:148:in `block in call'",
    gem(AP, "action_dispatch/middleware/executor.rb", 14, "call"),
    gem(AP, "action_dispatch/middleware/static.rb", 25, "call"),
    gem(AP, "action_dispatch/middleware/host_authorization.rb", 131, "call"),
    gem(NR, "new_relic/agent/instrumentation/middleware_tracing.rb", 99, "call"),
    gem(RT, "rails/engine.rb", 536, "call"),
    *CONTROLLER_STACK[-4:],
]

SIDEKIQ_STACK = [
    gem(SQ, "sidekiq/processor.rb", 202, "execute_job"),
    gem(SQ, "sidekiq/processor.rb", 170, "block (2 levels) in process"),
    gem(SQ, "sidekiq/middleware/chain.rb", 180, "traverse"),
    gem(NR, "new_relic/agent/instrumentation/sidekiq/server.rb", 20, "block in call"),
    gem(NR, "new_relic/agent/instrumentation/controller_instrumentation.rb", 373, "perform_action_with_newrelic_trace"),
    gem(NR, "new_relic/agent/instrumentation/sidekiq/server.rb", 17, "call"),
    gem(SQ, "sidekiq/middleware/chain.rb", 173, "invoke"),
    gem(SQ, "sidekiq/processor.rb", 169, "block in process"),
    gem(SQ, "sidekiq/job_retry.rb", 113, "local"),
    gem(SQ, "sidekiq/rails.rb", 14, "block in call"),
    gem(AS, "active_support/execution_wrapper.rb", 92, "wrap"),
    gem(SQ, "sidekiq/processor.rb", 123, "dispatch"),
    gem(SQ, "sidekiq/processor.rb", 78, "process_one"),
    gem(SQ, "sidekiq/component.rb", 19, "block in safe_thread"),
]

RAKE_STACK = [
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:281:in `block in execute'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:281:in `each'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:281:in `execute'",
    gem(NR, "new_relic/agent/instrumentation/rake.rb", 44, "block in execute"),
    gem(NR, "new_relic/agent/instrumentation/controller_instrumentation.rb", 373, "perform_action_with_newrelic_trace"),
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:219:in `block in invoke_with_call_chain'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:199:in `invoke_with_call_chain'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/task.rb:188:in `invoke'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/application.rb:160:in `invoke_task'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/application.rb:116:in `block (2 levels) in top_level'",
    "/usr/local/bundle/gems/rake-13.1.0/lib/rake/application.rb:83:in `run'",
    "/usr/local/bundle/gems/rake-13.1.0/exe/rake:27:in `<top (required)>'",
    "/usr/local/bundle/bin/rake:25:in `load'",
    "/usr/local/bundle/bin/rake:25:in `<main>'",
]

STRIPE_REQUEST = [
    gem(STRIPE, "stripe/stripe_client.rb", 924, "handle_error_response"),
    gem(STRIPE, "stripe/stripe_client.rb", 861, "execute_request_with_rescues"),
    gem(STRIPE, "stripe/stripe_client.rb", 511, "execute_request_internal"),
    gem(STRIPE, "stripe/stripe_client.rb", 299, "execute_request"),
    gem(STRIPE, "stripe/api_operations/request.rb", 75, "execute_resource_request"),
    gem(STRIPE, "stripe/api_operations/request.rb", 38, "request_stripe_object"),
    gem(STRIPE, "stripe/api_operations/create.rb", 8, "create"),
]

PG_QUERY = [
    gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 55, "exec"),
    gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 55, "block (2 levels) in raw_execute"),
    gem(AR, "active_record/connection_adapters/abstract_adapter.rb", 1028, "block in with_raw_connection"),
    gem(AS, "active_support/concurrency/null_lock.rb", 9, "synchronize"),
    gem(AR, "active_record/connection_adapters/abstract_adapter.rb", 1000, "with_raw_connection"),
    gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 54, "block in raw_execute"),
    gem(AS, "active_support/notifications/instrumenter.rb", 58, "instrument"),
    gem(AR, "active_record/connection_adapters/abstract_adapter.rb", 1143, "log"),
    gem(AR, "active_record/connection_adapters/postgresql/database_statements.rb", 53, "raw_execute"),
]

NET_HTTP_READ = [
    stdlib("net/protocol.rb", 229, "rbuf_fill"),
    stdlib("net/protocol.rb", 199, "readuntil"),
    stdlib("net/protocol.rb", 209, "readline"),
    stdlib("net/http/response.rb", 158, "read_status_line"),
    stdlib("net/http/response.rb", 147, "read_new"),
    stdlib("net/http.rb", 2350, "block in transport_request"),
    stdlib("net/http.rb", 2341, "catch"),
    stdlib("net/http.rb", 2341, "transport_request"),
    stdlib("net/http.rb", 2314, "request"),
    gem(NR, "new_relic/agent/instrumentation/net_http/prepend.rb", 13, "request"),
]
