"""Build the lobsters-* evaluation cases under evals/ from real Lobsters bug-fix commits.

Needs bare clones: LOBSTERS_GIT_DIR (github.com/lobsters/lobsters) and, for framework frame line numbers,
GEM_MIRRORS (a folder of `<owner>+<name>/repo` bare clones of rails/rails, puma/puma, …). Run from the
repository root: `python scripts/lobsters_evals/build.py`, then `python scripts/lobsters_evals/verify.py`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from frames import (
    Ctx,
    action_frames,
    after_filter_frames,
    before_filter_frames,
    controller_terminator,
    middleware_frames,
    process_action_frames,
    puma_frames,
    rails_gems,
    routing_frames,
    run_callbacks_around_skipped,
    run_callbacks_final,
    unicorn_frames,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from history_slices import write_slice  # noqa: E402

EVALS = Path(__file__).resolve().parents[2] / "evals"
LOBSTERS = os.environ.get("LOBSTERS_GIT_DIR", "lobsters.git")
EXPORTED_AT = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
ACCOUNT_ID = 1234567
APP_NAME = "lobsters-production"
FORMAT = "nightwatch.nerdgraph-export/1"


def git(*args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={LOBSTERS}", *args], capture_output=True, check=True).stdout


def lob_lines(commit: str, path: str) -> list[str]:
    return git("show", f"{commit}:{path}").decode("utf-8").splitlines()


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def nrql(results: list[dict]) -> dict:
    return {"data": {"actor": {"account": {"nrql": {"results": results}}}}}


def gems(ctx_rails: str, puma: str | None, nr: str, extra: dict | None = None) -> dict:
    g = {"NR": ("newrelic+newrelic-ruby-agent", nr, "lib/", f"newrelic_rpm-{nr}")}
    if puma:
        g["PUMA"] = ("puma+puma", f"v{puma}", "lib/", f"puma-{puma}")
    g.update(extra or {})
    return rails_gems(ctx_rails, g)


class Group:
    """One error group of a case's export: facet row, samples, trace."""

    def __init__(self, error_class: str, transaction: str, message: str, occurrences: int, http_status: int | None,
                 frames: list[str], hosts: list[str], span_hours: float, last_minutes_ago: int,
                 uri: str | None = None, method: str | None = None, sample_messages: list[str] | None = None,
                 extra: dict | None = None):
        self.error_class, self.transaction, self.message = error_class, transaction, message
        self.occurrences, self.http_status, self.frames, self.hosts = occurrences, http_status, frames, hosts
        self.span_hours, self.last_minutes_ago = span_hours, last_minutes_ago
        self.uri, self.method = uri, method
        self.sample_messages = sample_messages or [message]
        self.extra = extra or {}

    def window(self) -> tuple[datetime, datetime]:
        last = EXPORTED_AT - timedelta(minutes=self.last_minutes_ago)
        first = max(last - timedelta(hours=self.span_hours), EXPORTED_AT - timedelta(hours=23, minutes=55))
        return first, last

    def facet(self) -> dict:
        first, last = self.window()
        return {
            "facet": [self.error_class, self.transaction],
            "error.class": self.error_class,
            "transactionName": self.transaction,
            "occurrences": self.occurrences,
            "message": self.message,
            "first_seen": epoch_ms(first),
            "last_seen": epoch_ms(last),
            "http_status": self.http_status,
        }

    def detail(self) -> dict:
        rng = random.Random(f"lobsters|{self.error_class}|{self.transaction}")
        first, last = self.window()
        count = min(self.occurrences, 3)
        times = [last] if count == 1 else [last - (last - first) / (count - 1) * i for i in range(count)]
        samples = []
        for i, moment in enumerate(times):
            row = {
                "timestamp": epoch_ms(moment.replace(second=rng.randint(0, 59), microsecond=0)
                                      if i else moment),
                "error.class": self.error_class,
                "error.message": self.sample_messages[i % len(self.sample_messages)],
                "transactionName": self.transaction,
                "host": self.hosts[i % len(self.hosts)],
                "appName": APP_NAME,
            }
            if self.uri:
                row.update({"request.uri": self.uri, "request.method": self.method,
                            "http.statusCode": self.http_status})
            row.update(self.extra)
            samples.append(row)
        trace = {k: samples[0][k] for k in ("timestamp", "error.class", "error.message", "transactionName")}
        trace["stackTrace"] = "\n".join(self.frames)
        return {
            "error_class": self.error_class,
            "transaction": self.transaction,
            "transaction_errors": nrql(samples),
            "error_traces": nrql([trace]),
        }


def export(groups: list[Group]) -> dict:
    groups = sorted(groups, key=lambda g: -g.occurrences)  # NRQL FACET rows come ordered by count
    return {
        "format": FORMAT,
        "account_id": ACCOUNT_ID,
        "app_name": APP_NAME,
        "exported_at": EXPORTED_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "errors": nrql([g.facet() for g in groups]),
        "details": [g.detail() for g in groups],
    }


def controller_tail(c: Ctx, server: list[str]) -> list[str]:
    return process_action_frames(c) + routing_frames(c) + middleware_frames(c) + server


# ================================================================================================
# Cases
# ================================================================================================

CASES: list[dict] = []


def case(**kw):
    CASES.append(kw)
    return kw


# --- A: inbox after_action on every action --------------------------------------------------------
def build_inbox():
    parent = "3cbaf24c405d238a6554afcb7994ca3d0b69665a"
    root = "/var/www/lobsters/releases/20261119143012"
    c = Ctx(True, "/var/www/lobsters/shared/bundle/ruby/3.4.0/gems", gems("8.0.2", "6.6.0", "9.20.0"))
    app = [c.raw(f"{root}/app/controllers/inbox_controller.rb", 52, "InboxController#update_read_at")]
    frames = app + after_filter_frames(c) + controller_tail(c, puma_frames(c))
    hosts = ["lobsters-web-01", "lobsters-web-02"]
    main = Group("NoMethodError", "Controller/inbox/index", "undefined method 'touch_all' for nil", 143, 500,
                 frames, hosts, span_hours=23.3, last_minutes_ago=11, uri="/inbox", method="GET")
    routing = (
        [c.g("AP", "action_dispatch/middleware/debug_exceptions.rb", "raise ActionController::RoutingError",
             "ActionDispatch::DebugExceptions#call")]
        + middleware_frames(c, from_debug_exceptions=True) + puma_frames(c)
    )
    noise = Group("ActionController::RoutingError", "Controller/Middleware/Rack/ActionDispatch::Routing::RouteSet/call",
                  'No route matches [GET] "/wp-login.php"', 3412, 404, routing, hosts, span_hours=23.5,
                  last_minutes_ago=2, uri="/wp-login.php", method="GET",
                  extra={"request.headers.userAgent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
                                                      "(KHTML, like Gecko) Chrome/91.0.4472.124 Safari/537.36"})
    return case(
        id="lobsters-inbox-read-at-after-action",
        title="Every visit to /inbox raises NoMethodError: the after_action update_read_at runs on index, which sets no @notifications",
        parent=parent, fix="cad83b3b15a50b90703a0e0ab38f029a8be71a3f",
        groups=[main, noise],
        error=("NoMethodError", "Controller/inbox/index"),
        route="deep",
        crash=("app/controllers/inbox_controller.rb", 52),
        origin=("app/controllers/inbox_controller.rb", [6, 6]),
        alternatives=[],
        keywords=["after_action", "index", "notifications"],
        noise=[("ActionController::RoutingError", "Controller/Middleware/Rack/ActionDispatch::Routing::RouteSet/call")],
        files=["app/controllers/inbox_controller.rb", "app/controllers/application_controller.rb",
               "app/controllers/concerns/authenticatable.rb", "app/models/notification.rb", "config/routes.rb"],
        app_frames=[("app/controllers/inbox_controller.rb", 52, "touch_all")],
        prefix=root, prefix_style="Capistrano release",
        notes=("GET /inbox only redirects (to /inbox/unread or /inbox/all) and never assigns @notifications, but "
               "`after_action :update_read_at` was declared for every action, so the callback calls touch_all on nil "
               "after the redirect. The crash is in update_read_at; the real fix restricts the callback declaration "
               "to the actions that load notifications (`only: [:all, :unread]`) rather than nil-guarding the callback."),
    )


# --- B: check_url_dupe without a logged-in user ---------------------------------------------------
def build_check_url_dupe():
    parent = "20f208e4c1a2e9e3d265f2245f01035bf5fb471e"
    root = "/var/www/lobsters/releases/20261120221547"
    c = Ctx(False, "/var/www/lobsters/shared/bundle/ruby/2.3.0/gems", gems("5.2.1", None, "5.3.0.346"))
    sc = f"{root}/app/controllers/stories_controller.rb"
    app = [c.raw(sc, 362, "StoriesController#story_params"), c.raw(sc, 339, "StoriesController#check_url_dupe")]
    frames = app + action_frames(c) + run_callbacks_around_skipped(c) + controller_tail(c, unicorn_frames(c))
    hosts = ["lobsters-app-1"]
    main = Group("NoMethodError", "Controller/stories/check_url_dupe",
                 "undefined method `is_moderator?' for nil:NilClass", 9, 500, frames, hosts, span_hours=2.2,
                 last_minutes_ago=47, uri="/stories/check_url_dupe", method="POST",
                 extra={"request.headers.userAgent": "python-requests/2.19.1"})
    hc = f"{root}/app/controllers/home_controller.rb"
    unknown = (
        [c.g("AP", "action_controller/metal/mime_responds.rb", "raise ActionController::UnknownFormat",
             "ActionController::MimeResponds#respond_to"),
         c.raw(hc, 115, "HomeController#newest")]
        + action_frames(c) + run_callbacks_final(c) + controller_tail(c, unicorn_frames(c))
    )
    noise = Group("ActionController::UnknownFormat", "Controller/home/newest", "ActionController::UnknownFormat",
                  512, 406, unknown, hosts, span_hours=23.4, last_minutes_ago=9, uri="/newest.atom", method="GET",
                  extra={"request.headers.userAgent": "Mozilla/5.0 (compatible; SemrushBot/7~bl; "
                                                      "+http://www.semrush.com/bot.html)"})
    return case(
        id="lobsters-check-url-dupe-anonymous",
        title="POST /stories/check_url_dupe without a session raises NoMethodError in story_params (@user is nil)",
        parent=parent, fix="6553de202e36757047e776f8b47cd8e69e1dedf7",
        groups=[main, noise],
        error=("NoMethodError", "Controller/stories/check_url_dupe"),
        route="deep",
        crash=("app/controllers/stories_controller.rb", 362),
        origin=("app/controllers/stories_controller.rb", [4, 5]),
        alternatives=[],
        keywords=["before_action", "logged", "check_url_dupe"],
        noise=[("ActionController::UnknownFormat", "Controller/home/newest")],
        files=["app/controllers/stories_controller.rb", "app/controllers/application_controller.rb",
               "app/controllers/home_controller.rb", "app/models/story.rb", "app/models/user.rb", "config/routes.rb"],
        app_frames=[("app/controllers/stories_controller.rb", 362, "@user.is_moderator?"),
                    ("app/controllers/stories_controller.rb", 339, "story_params"),
                    ("app/controllers/home_controller.rb", 115, "respond_to")],
        prefix=root, prefix_style="Capistrano release",
        notes=("check_url_dupe was missing from the `require_logged_in_user_or_400` before_action list, so a request "
               "without a session (a scripted submission, or cookies cleared after opening the form) reaches "
               "story_params, which calls @user.is_moderator? on nil. The author deliberately fixed the before_action "
               "declaration instead of nil-checking story_params, because anonymous users must not submit story data "
               "at all."),
    )


# --- C: user threads for a user who never commented ------------------------------------------------
def build_user_threads():
    parent = "73f4c0cab6580422661480ff7af2710c445bedd2"
    root = "/var/www/lobsters/current"
    my2 = ("brianmario+mysql2", "0.5.5", "lib/", "mysql2-0.5.5")
    c = Ctx(False, "/var/www/lobsters/shared/bundle/ruby/2.7.0/gems", gems("7.0.4.3", "6.3.1", "9.4.1", {"MY2": my2}))
    AR = "active_record/connection_adapters/"
    lim = "active_support/concurrency/load_interlock_aware_monitor.rb"

    def sync():
        return [
            c.g("AS", lim, "Thread.handle_interrupt(EXCEPTION_IMMEDIATE, &block)", "Thread.handle_interrupt"),
            c.g("AS", lim, "Thread.handle_interrupt(EXCEPTION_IMMEDIATE, &block)",
                "block in ActiveSupport::Concurrency::LoadInterlockAwareMonitor#synchronize"),
            c.g("AS", lim, "Thread.handle_interrupt(EXCEPTION_NEVER) do", "Thread.handle_interrupt"),
            c.g("AS", lim, "Thread.handle_interrupt(EXCEPTION_NEVER) do",
                "ActiveSupport::Concurrency::LoadInterlockAwareMonitor#synchronize"),
        ]

    db = [
        c.g("MY2", "mysql2/client.rb", "_query(sql, @query_options.merge(options))", "Mysql2::Client#_query"),
        c.g("MY2", "mysql2/client.rb", "_query(sql, @query_options.merge(options))", "block in Mysql2::Client#query"),
        c.g("MY2", "mysql2/client.rb", "Thread.handle_interrupt(::Mysql2::Util::TIMEOUT_ERROR_NEVER) do", "Thread.handle_interrupt"),
        c.g("MY2", "mysql2/client.rb", "Thread.handle_interrupt(::Mysql2::Util::TIMEOUT_ERROR_NEVER) do", "Mysql2::Client#query"),
        c.g("AR", AR + "abstract_mysql_adapter.rb", "@connection.query(sql)",
            "block (2 levels) in ActiveRecord::ConnectionAdapters::AbstractMysqlAdapter#raw_execute"),
        c.g("AS", "active_support/concurrency/share_lock.rb", "yield", "ActiveSupport::Concurrency::ShareLock#yield_shares",
            after="def yield_shares"),
        c.g("AS", "active_support/dependencies/interlock.rb", "@lock.yield_shares(compatible: [:load], &block)",
            "ActiveSupport::Dependencies::Interlock#permit_concurrent_loads"),
        c.g("AR", AR + "abstract_mysql_adapter.rb", "ActiveSupport::Dependencies.interlock.permit_concurrent_loads do",
            "block in ActiveRecord::ConnectionAdapters::AbstractMysqlAdapter#raw_execute", after="def raw_execute"),
    ] + sync() + [
        c.g("AR", AR + "abstract_adapter.rb", "@lock.synchronize(&block)", "block in ActiveRecord::ConnectionAdapters::AbstractAdapter#log"),
        c.g("AS", "active_support/notifications/instrumenter.rb", "yield payload", "ActiveSupport::Notifications::Instrumenter#instrument",
            after="def instrument("),
        c.g("AR", AR + "abstract_adapter.rb", "@instrumenter.instrument(", "ActiveRecord::ConnectionAdapters::AbstractAdapter#log",
            after="def log("),
        c.g("AR", AR + "abstract_mysql_adapter.rb", "log(sql, name, async: async) do",
            "ActiveRecord::ConnectionAdapters::AbstractMysqlAdapter#raw_execute", after="def raw_execute"),
        c.g("AR", AR + "mysql/database_statements.rb", "super", "ActiveRecord::ConnectionAdapters::MySQL::DatabaseStatements#raw_execute",
            after="def raw_execute"),
        c.g("AR", AR + "mysql/database_statements.rb", "raw_execute(sql, name, async: async)",
            "ActiveRecord::ConnectionAdapters::MySQL::DatabaseStatements#execute", after="def execute("),
        c.g("AR", AR + "abstract_mysql_adapter.rb", "yield execute(sql, name, async: async)",
            "ActiveRecord::ConnectionAdapters::AbstractMysqlAdapter#execute_and_free"),
        c.g("AR", AR + "mysql/database_statements.rb", "execute_and_free(sql, name, async: async) do |result|",
            "ActiveRecord::ConnectionAdapters::MySQL::DatabaseStatements#exec_query"),
        c.g("AR", AR + "abstract/database_statements.rb", "exec_query(sql, name, binds, prepare: prepare)",
            "ActiveRecord::ConnectionAdapters::DatabaseStatements#select", after="def select("),
        c.g("AR", AR + "abstract/database_statements.rb", "select(sql, name, binds, prepare: prepared_statements && preparable",
            "ActiveRecord::ConnectionAdapters::DatabaseStatements#select_all"),
        c.g("AR", AR + "abstract/query_cache.rb", "cache_sql(sql, name, binds) { super(sql, name, binds, preparable: preparable, async: async) }",
            "block in ActiveRecord::ConnectionAdapters::QueryCache#select_all"),
        c.g("AR", AR + "abstract/query_cache.rb", "@query_cache[sql][binds] = yield",
            "block in ActiveRecord::ConnectionAdapters::QueryCache#cache_sql"),
    ] + sync() + [
        c.g("AR", AR + "abstract/query_cache.rb", "@lock.synchronize do", "ActiveRecord::ConnectionAdapters::QueryCache#cache_sql",
            after="def cache_sql"),
        c.g("AR", AR + "abstract/query_cache.rb", "cache_sql(sql, name, binds) { super(sql, name, binds, preparable: preparable, async: async) }",
            "ActiveRecord::ConnectionAdapters::QueryCache#select_all"),
        c.g("AR", AR + "mysql/database_statements.rb", "super", "ActiveRecord::ConnectionAdapters::MySQL::DatabaseStatements#select_all",
            after="def select_all", nth=2),
        c.g("AR", "active_record/querying.rb", "connection.select_all(sanitize_sql(sql)", "ActiveRecord::Querying#_query_by_sql"),
        c.g("AR", "active_record/relation.rb", "klass._query_by_sql(arel, async: async)", "block in ActiveRecord::Relation#exec_main_query"),
        c.g("AR", "active_record/relation.rb", "yield", "ActiveRecord::Relation#skip_query_cache_if_necessary",
            after="def skip_query_cache_if_necessary"),
        c.g("AR", "active_record/relation.rb", "skip_query_cache_if_necessary do", "ActiveRecord::Relation#exec_main_query",
            after="def exec_main_query"),
        c.g("AR", "active_record/relation.rb", "exec_main_query", "block in ActiveRecord::Relation#exec_queries",
            after="def exec_queries"),
        c.g("AR", "active_record/relation.rb", "yield", "ActiveRecord::Relation#skip_query_cache_if_necessary",
            after="def skip_query_cache_if_necessary"),
        c.g("AR", "active_record/relation.rb", "skip_query_cache_if_necessary do", "ActiveRecord::Relation#exec_queries",
            after="def exec_queries"),
        c.g("AR", "active_record/relation.rb", "@records = exec_queries(&block)", "ActiveRecord::Relation#load"),
        c.g("AR", "active_record/relation.rb", "load", "ActiveRecord::Relation#records", after="def records"),
        c.g("AR", "active_record/relation/delegation.rb", "delegate :to_xml, :encode_with, :length, :each, :join,",
            "ActiveRecord::Delegation#each"),
    ]
    cc = f"{root}/app/controllers/comments_controller.rb"
    app = [c.raw(cc, 369, "Enumerable#map"), c.raw(cc, 369, "CommentsController#user_threads")]
    frames = db + app + action_frames(c) + run_callbacks_final(c) + controller_tail(c, puma_frames(c))

    # MariaDB quotes the next 80 characters of the statement from where parsing failed (") and" after "in (").
    heredoc = lob_lines(parent, "app/models/comment.rb")[561:583]  # lines 562..583, the <<~SQL body
    indent = min(len(l) - len(l.lstrip()) for l in heredoc if l.strip())
    body = "\n".join(l[indent:] for l in heredoc)
    sql_text = body.replace("#{thread_ids.join(', ')}", "").replace("#{Comment::COP_LENGTH}", "1200")
    near = sql_text[sql_text.index(") and\n"):][:80]
    line_no = sql_text[: sql_text.index(") and\n")].count("\n") + 1
    message = ("Mysql2::Error: You have an error in your SQL syntax; check the manual that corresponds to your MariaDB "
               f"server version for the right syntax to use near '{near}' at line {line_no}")
    hosts = ["lobsters-prod-web1"]
    main = Group("ActiveRecord::StatementInvalid", "Controller/comments/user_threads", message, 37, 500, frames, hosts,
                 span_hours=20.5, last_minutes_ago=31, uri="/~kestrel_dev/threads", method="GET")
    return case(
        id="lobsters-user-threads-never-commented",
        title="Viewing the threads page of a user who never commented raises a MariaDB syntax error (thread_id in ())",
        parent=parent, fix="07bfde6634aaf5b4d086e900d385fadc3e1d2c5b",
        groups=[main],
        error=("ActiveRecord::StatementInvalid", "Controller/comments/user_threads"),
        route="deep",
        crash=("app/controllers/comments_controller.rb", 369),
        origin=("app/models/comment.rb", [558, 559]),
        alternatives=[("app/models/comment.rb", [550, 570])],
        keywords=["empty", "thread_ids", "recent_threads"],
        noise=[],
        files=["app/controllers/comments_controller.rb", "app/models/comment.rb", "app/models/user.rb",
               "app/controllers/application_controller.rb", "config/routes.rb"],
        app_frames=[("app/controllers/comments_controller.rb", 369, "@threads.map(&:story_id)")],
        prefix=root, prefix_style="Capistrano current",
        notes=("Comment.recent_threads plucks the user's 20 most recent thread ids and interpolates them into a "
               "recursive CTE as `thread_id in (#{thread_ids.join(', ')})`; for a user with no comments the list is "
               "empty and MariaDB rejects `in ()`. The relation is lazy, so the error surfaces where the controller "
               "first loads it (@threads.map in user_threads); the fix returns Comment.none from recent_threads when "
               "thread_ids is empty."),
    )


# --- D: duplicate notification when a reply @mentions the parent commenter -------------------------
def build_notify_job():
    parent = "a4b7553bb48a9594a4947a12ee2e726009a72e75"
    root = "/rails"
    sq = ("rails+solid_queue", "v1.2.1", "", "solid_queue-1.2.1")
    cr = ("ruby-concurrency+concurrent-ruby", "v1.3.5", "lib/concurrent-ruby/", "concurrent-ruby-1.3.5")
    c = Ctx(True, "/usr/local/bundle/ruby/3.4.0/gems", gems("8.0.3", None, "9.22.0", {"SQ": sq, "CR": cr}))
    AR = "active_record/connection_adapters/"
    ca = "active_record/associations/collection_association.rb"
    top = [
        c.g("AR", AR + "trilogy/database_statements.rb", "result = raw_connection.query(sql)", "Trilogy#query"),
        c.g("AR", AR + "trilogy/database_statements.rb", "result = raw_connection.query(sql)",
            "ActiveRecord::ConnectionAdapters::Trilogy::DatabaseStatements#perform_query"),
        c.g("AR", AR + "abstract/database_statements.rb", "perform_query(conn, sql, binds, type_casted_binds",
            "block (2 levels) in ActiveRecord::ConnectionAdapters::DatabaseStatements#raw_execute"),
        c.g("AR", AR + "abstract_adapter.rb", "yield @raw_connection",
            "block in ActiveRecord::ConnectionAdapters::AbstractAdapter#with_raw_connection", after="def with_raw_connection"),
        c.g("AR", AR + "abstract_adapter.rb", "@lock.synchronize do",
            "ActiveRecord::ConnectionAdapters::AbstractAdapter#with_raw_connection", after="def with_raw_connection"),
        c.g("AR", AR + "abstract/database_statements.rb", "with_raw_connection(allow_retry: allow_retry",
            "block in ActiveRecord::ConnectionAdapters::DatabaseStatements#raw_execute"),
        c.g("AS", "active_support/notifications/instrumenter.rb", "yield payload if block_given?",
            "ActiveSupport::Notifications::Instrumenter#instrument", after="def instrument("),
        c.g("AR", AR + "abstract_adapter.rb", "instrumenter.instrument(", "ActiveRecord::ConnectionAdapters::AbstractAdapter#log",
            after="def log("),
        c.g("AR", AR + "abstract/database_statements.rb", "log(sql, name, binds, type_casted_binds, async: async) do",
            "ActiveRecord::ConnectionAdapters::DatabaseStatements#raw_execute"),
        c.g("AR", AR + "abstract/database_statements.rb", "raw_execute(sql, name, binds, prepare: prepare, async: async",
            "ActiveRecord::ConnectionAdapters::DatabaseStatements#internal_execute", after="def internal_execute"),
        c.g("AR", AR + "trilogy/database_statements.rb", "internal_execute(sql, name)",
            "ActiveRecord::ConnectionAdapters::Trilogy::DatabaseStatements#exec_insert"),
        c.g("AR", AR + "abstract/database_statements.rb", "value = exec_insert(sql, name, binds, pk, sequence_name",
            "ActiveRecord::ConnectionAdapters::DatabaseStatements#insert"),
        c.g("AR", "active_record/persistence.rb", "connection.insert(", "ActiveRecord::Persistence::ClassMethods#_insert_record"),
        c.g("AR", "active_record/persistence.rb", "returning_values = self.class._insert_record(",
            "block in ActiveRecord::Persistence#_create_record"),
        c.g("AR", "active_record/persistence.rb", "self.class.with_connection do |connection|",
            "ActiveRecord::Persistence#_create_record", after="def _create_record"),
        c.g("AR", "active_record/callbacks.rb", "_run_create_callbacks { super }", "block in ActiveRecord::Callbacks#_create_record"),
        c.g("AR", "active_record/callbacks.rb", "_run_create_callbacks { super }", "ActiveRecord::Callbacks#_create_record"),
        c.g("AR", "active_record/persistence.rb", "result = new_record? ? _create_record(&block) : _update_record(&block)",
            "ActiveRecord::Persistence#create_or_update"),
        c.g("AR", "active_record/callbacks.rb", "_run_save_callbacks { super }", "block in ActiveRecord::Callbacks#create_or_update"),
        c.g("AR", "active_record/callbacks.rb", "_run_save_callbacks { super }", "ActiveRecord::Callbacks#create_or_update"),
        c.g("AR", "active_record/persistence.rb", "create_or_update(**options, &block)", "ActiveRecord::Persistence#save",
            after="def save("),
        c.g("AR", "active_record/validations.rb", "perform_validations(options) ? super : false", "ActiveRecord::Validations#save"),
        c.g("AR", "active_record/transactions.rb", "with_transaction_returning_status { super }",
            "block in ActiveRecord::Transactions#save", after="def save("),
        c.g("AR", "active_record/transactions.rb", "status = yield",
            "block in ActiveRecord::Transactions#with_transaction_returning_status"),
        c.g("AR", "active_record/transactions.rb", "connection.transaction do",
            "ActiveRecord::Transactions#with_transaction_returning_status", after="def with_transaction_returning_status"),
        c.g("AR", "active_record/transactions.rb", "with_transaction_returning_status { super }",
            "ActiveRecord::Transactions#save", after="def save("),
        c.g("AR", ca, "record.save(validate: validate, &block)",
            "ActiveRecord::Associations::CollectionAssociation#insert_record"),
        c.g("AR", "active_record/associations/has_many_association.rb", "super",
            "ActiveRecord::Associations::HasManyAssociation#insert_record", after="def insert_record"),
        c.g("AR", ca, "result = insert_record(record, true, raise) {",
            "block (2 levels) in ActiveRecord::Associations::CollectionAssociation#_create_record", after="def _create_record"),
        c.g("AR", ca, "yield(record) if block_given?",
            "ActiveRecord::Associations::CollectionAssociation#replace_on_target", after="def replace_on_target"),
        c.g("AR", ca, "replace_on_target(record, skip_callbacks, replace: replace || association_scope.distinct_value, &block)",
            "ActiveRecord::Associations::CollectionAssociation#add_to_target"),
        c.g("AR", ca, "add_to_target(record) do",
            "block in ActiveRecord::Associations::CollectionAssociation#_create_record", after="def _create_record"),
        c.g("AR", ca, "reflection.klass.transaction(&block)",
            "ActiveRecord::Associations::CollectionAssociation#transaction"),
        c.g("AR", ca, "transaction do", "ActiveRecord::Associations::CollectionAssociation#_create_record",
            after="def _create_record"),
        c.g("AR", "active_record/associations/association.rb", "_create_record(attributes, &block)",
            "ActiveRecord::Associations::Association#create", after="def create("),
        c.g("AR", "active_record/associations/collection_proxy.rb", "@association.create(attributes, &block)",
            "ActiveRecord::Associations::CollectionProxy#create"),
    ]
    jf = f"{root}/app/jobs/notify_comment_job.rb"
    batches = "active_record/relation/batches.rb"
    mid = [
        c.raw(jf, 22, "block in NotifyCommentJob#deliver_mention_notifications"),
        c.g("AR", batches, "records.each(&block)", "Array#each", after="def find_each"),
        c.g("AR", batches, "records.each(&block)", "block in ActiveRecord::Batches#find_each", after="def find_each"),
        c.g("AR", batches, "yield batch.to_a", "block in ActiveRecord::Batches#find_in_batches"),
        c.g("AR", batches, "yield yielded_relation", "block in ActiveRecord::Batches#batch_on_unloaded_relation"),
        "<internal:kernel>:168:in 'Kernel#loop'",
        c.g("AR", batches, "loop do", "ActiveRecord::Batches#batch_on_unloaded_relation", after="def batch_on_unloaded_relation"),
        c.g("AR", batches, "batch_on_unloaded_relation(", "ActiveRecord::Batches#in_batches", after="def in_batches"),
        c.g("AR", batches, "in_batches(of: batch_size, start: start, finish: finish, load: true",
            "ActiveRecord::Batches#find_in_batches"),
        c.g("AR", batches, "find_in_batches(start: start, finish: finish, batch_size: batch_size",
            "ActiveRecord::Batches#find_each", after="def find_each"),
        c.raw(jf, 21, "NotifyCommentJob#deliver_mention_notifications"),
        c.raw(jf, 12, "NotifyCommentJob#deliver_comment_notifications"),
        c.raw(jf, 6, "block in NotifyCommentJob#perform"),
        c.raw(jf, 5, "Array#each"),
        c.raw(jf, 5, "NotifyCommentJob#perform"),
    ]
    cb = "active_support/callbacks.rb"
    nr_aj = "new_relic/agent/instrumentation/active_job.rb"
    tl = "active_support/tagged_logging.rb"
    bottom = [
        c.g("AJ", "active_job/execution.rb", "perform(*arguments)", "block in ActiveJob::Execution#_perform_job"),
        c.g("AS", cb, "env.value = !env.halted && (!block_given? || yield)", "block in ActiveSupport::Callbacks#run_callbacks",
            after="invoke_sequence = Proc.new"),
        c.g("NR", "new_relic/agent/tracer.rb", "yield", "NewRelic::Agent::Tracer.in_transaction", after="def in_transaction"),
        c.g("NR", nr_aj, "::NewRelic::Agent::Tracer.in_transaction(name: transaction_name_for_job(job),",
            "NewRelic::Agent::Instrumentation::ActiveJobHelper.run_in_transaction"),
        c.g("NR", nr_aj, "run_in_transaction(job, block)", "NewRelic::Agent::Instrumentation::ActiveJobHelper.perform"),
        c.g("NR", nr_aj, "NewRelic::Agent::Instrumentation::ActiveJobHelper.perform(job, block)",
            "block (4 levels) in <top (required)>"),
        c.g("AS", cb, "target.send(method, *arguments, &block)", "BasicObject#instance_exec", after="def run_callbacks"),
        c.g("AS", cb, "target.send(method, *arguments, &block)", "block in ActiveSupport::Callbacks#run_callbacks",
            after="def run_callbacks"),
        c.g("AS", cb, "invoke_sequence.call", "ActiveSupport::Callbacks#run_callbacks", after="def run_callbacks"),
        c.g("AJ", "active_job/execution.rb", "run_callbacks :perform do", "ActiveJob::Execution#_perform_job"),
        c.g("AJ", "active_job/instrumentation.rb", "super", "ActiveJob::Instrumentation#_perform_job", after="def _perform_job"),
        c.g("AJ", "active_job/execution.rb", "_perform_job", "ActiveJob::Execution#perform_now", after="def perform_now"),
        c.g("AJ", "active_job/instrumentation.rb", "instrument(:perform) { super }", "block in ActiveJob::Instrumentation#perform_now"),
        c.g("AJ", "active_job/instrumentation.rb", "value = block.call if block", "block in ActiveJob::Instrumentation#instrument"),
        c.g("AS", "active_support/notifications.rb", "instrumenter.instrument(name, payload) { yield payload if block_given? }",
            "block in ActiveSupport::Notifications.instrument"),
        c.g("AS", "active_support/notifications/instrumenter.rb", "yield payload if block_given?",
            "ActiveSupport::Notifications::Instrumenter#instrument", after="def instrument("),
        c.g("AS", "active_support/notifications.rb", "instrumenter.instrument(name, payload) { yield payload if block_given? }",
            "ActiveSupport::Notifications.instrument"),
        c.g("AJ", "active_job/instrumentation.rb", 'ActiveSupport::Notifications.instrument("#{operation}.active_job", payload) do',
            "ActiveJob::Instrumentation#instrument"),
        c.g("AJ", "active_job/instrumentation.rb", "instrument(:perform) { super }", "ActiveJob::Instrumentation#perform_now"),
        c.g("AJ", "active_job/logging.rb", "tag_logger(self.class.name, self.job_id) { super }", "block in ActiveJob::Logging#perform_now"),
        c.g("AS", tl, "formatter.tagged(*tags) { yield self }", "block in ActiveSupport::TaggedLogging#tagged"),
        c.g("AS", tl, "yield self", "ActiveSupport::TaggedLogging::Formatter#tagged", after="def tagged(*tags)"),
        c.g("AS", tl, "formatter.tagged(*tags) { yield self }", "ActiveSupport::TaggedLogging#tagged"),
        c.g("AJ", "active_job/logging.rb", "logger.tagged(*tags, &block)", "ActiveJob::Logging#tag_logger"),
        c.g("AJ", "active_job/logging.rb", "tag_logger(self.class.name, self.job_id) { super }", "ActiveJob::Logging#perform_now"),
        c.g("AJ", "active_job/execution.rb", "job.perform_now", "block in ActiveJob::Execution::ClassMethods#execute"),
        c.g("AS", cb, "env.value = !env.halted && (!block_given? || yield)", "block in ActiveSupport::Callbacks#run_callbacks",
            after="invoke_sequence = Proc.new"),
        c.g("AJ", "active_job/railtie.rb", "inner.call", "block (4 levels) in <class:Railtie>"),
        c.g("AS", "active_support/reloader.rb", "yield", "block in ActiveSupport::Reloader.wrap", after="executor.wrap(**kwargs) do"),
        c.g("AS", "active_support/execution_wrapper.rb", "return yield if active?", "ActiveSupport::ExecutionWrapper.wrap",
            after="def self.wrap"),
        c.g("AS", "active_support/reloader.rb", "executor.wrap(**kwargs) do", "ActiveSupport::Reloader.wrap"),
        c.g("AJ", "active_job/railtie.rb", "app.reloader.wrap do", "block (3 levels) in <class:Railtie>"),
        c.g("AS", cb, "target.send(method, *arguments, &block)", "BasicObject#instance_exec", after="def run_callbacks"),
        c.g("AS", cb, "target.send(method, *arguments, &block)", "block in ActiveSupport::Callbacks#run_callbacks",
            after="def run_callbacks"),
        c.g("AS", cb, "invoke_sequence.call", "ActiveSupport::Callbacks#run_callbacks", after="def run_callbacks"),
        c.g("AJ", "active_job/execution.rb", "ActiveJob::Callbacks.run_callbacks(:execute) do",
            "ActiveJob::Execution::ClassMethods#execute"),
        c.g("SQ", "app/models/solid_queue/claimed_execution.rb", "ActiveJob::Base.execute(job.arguments",
            "SolidQueue::ClaimedExecution#execute"),
        c.g("SQ", "app/models/solid_queue/claimed_execution.rb", "result = execute", "SolidQueue::ClaimedExecution#perform"),
        c.g("SQ", "lib/solid_queue/pool.rb", "thread_execution.perform", "block (2 levels) in SolidQueue::Pool#post"),
        c.g("AS", "active_support/execution_wrapper.rb", "yield", "ActiveSupport::ExecutionWrapper.wrap", after="def self.wrap", nth=2),
        c.g("SQ", "lib/solid_queue/app_executor.rb", 'SolidQueue.app_executor.wrap(source: "application.solid_queue", &block)',
            "SolidQueue::AppExecutor#wrap_in_app_executor"),
        c.g("SQ", "lib/solid_queue/pool.rb", "wrap_in_app_executor do", "block in SolidQueue::Pool#post"),
        c.g("CR", "concurrent/promises.rb", "resolve_with Fulfilled.new(block.call(*args))",
            "Concurrent::Promises::AbstractPromise#evaluate_to"),
        c.g("CR", "concurrent/promises.rb", "evaluate_to(*args, task)", "block in Concurrent::Promises::ChainPromise#on_resolvable",
            after="class ChainPromise"),
        c.g("CR", "concurrent/executor/ruby_thread_pool_executor.rb", "task.call(*args)",
            "Concurrent::RubyThreadPoolExecutor::Worker#run_task"),
        c.g("CR", "concurrent/executor/ruby_thread_pool_executor.rb", "run_task my_pool, task, args",
            "block (2 levels) in Concurrent::RubyThreadPoolExecutor::Worker#create_worker"),
    ]
    # the sq gem's files are not under lib/ for app/models: fix the printed path
    frames = [f.replace("/solid_queue-1.2.1/lib/app/", "/solid_queue-1.2.1/app/").replace(
        "/solid_queue-1.2.1/lib/lib/", "/solid_queue-1.2.1/lib/").replace(
        "/concurrent-ruby-1.3.5/lib/concurrent/", "/concurrent-ruby-1.3.5/lib/concurrent-ruby/concurrent/")
        for f in top + mid + bottom]
    key = "idx_on_user_id_notifiable_type_notifiable_id_ffac34041e"
    msgs = [f"Trilogy::ProtocolError: 1062: Duplicate entry '{u}-Comment-{cid}' for key '{key}' (trilogy_query_recv)"
            for u, cid in [(4127, 503318), (18834, 503291), (902, 503207)]]
    hosts = ["lobsters-jobs-6c4f9d7b8-x7kqp"]
    main = Group("ActiveRecord::RecordNotUnique", "OtherTransaction/ActiveJob::SolidQueue/NotifyCommentJob/execute",
                 msgs[0], 23, None, frames, hosts, span_hours=21.0, last_minutes_ago=17, sample_messages=msgs)
    return case(
        id="lobsters-notify-mention-duplicate-notification",
        title="NotifyCommentJob fails with RecordNotUnique when a reply @mentions the parent commenter",
        parent=parent, fix="3c92967d271cfa14db59616791082e8fc592281c",
        groups=[main],
        error=("ActiveRecord::RecordNotUnique", "OtherTransaction/ActiveJob::SolidQueue/NotifyCommentJob/execute"),
        route="deep",
        crash=("app/jobs/notify_comment_job.rb", 22),
        origin=("app/jobs/notify_comment_job.rb", [68, 93]),
        alternatives=[("app/jobs/notify_comment_job.rb", [16, 16])],
        keywords=["notified", "mention", "duplicate"],
        noise=[],
        files=["app/jobs/notify_comment_job.rb", "app/jobs/application_job.rb", "app/models/notification.rb",
               "app/models/comment.rb", "app/controllers/comments_controller.rb", "db/schema.rb"],
        app_frames=[("app/jobs/notify_comment_job.rb", 22, "u.notifications.create(notifiable: comment)"),
                    ("app/jobs/notify_comment_job.rb", 21, "find_each"),
                    ("app/jobs/notify_comment_job.rb", 12, "deliver_mention_notifications"),
                    ("app/jobs/notify_comment_job.rb", 6, "deliver_comment_notifications"),
                    ("app/jobs/notify_comment_job.rb", 5, "comments.each")],
        prefix=root, prefix_style="Docker (Rails 7.1+ Dockerfile, /rails)",
        notes=("deliver_reply_notifications creates a Notification for the parent commenter but only adds them to "
               "`notified` when an email or pushover is actually sent; if the reply also @mentions them, "
               "deliver_mention_notifications creates a second Notification for the same (user, comment), which the "
               "unique index on notifications rejects. The crash is the create in the mention loop; the fix is in "
               "deliver_reply_notifications, recording everyone who got a Notification in `notified` (the Comment "
               "association also became has_many)."),
    )


# --- E: Mastodon disconnect when the instance no longer resolves -----------------------------------
def build_mastodon():
    parent = "25084fd6dde82f64c4a3aa03fe700c0e4c7f0414"
    root = "/usr/src/app"
    c = Ctx(True, "/usr/local/bundle/gems", gems("8.0.3", "6.6.0", "9.22.0"))
    app = [
        c.raw(f"{root}/extras/sponge.rb", 148, "Sponge#fetch"),
        c.raw(f"{root}/app/models/mastodon_app.rb", 108, "MastodonApp#revoke_token"),
        c.raw(f"{root}/app/controllers/settings_controller.rb", 225, "SettingsController#mastodon_disconnect"),
    ]
    frames = app + action_frames(c) + run_callbacks_final(c) + controller_tail(c, puma_frames(c))
    msgs = ["couldn't resolve mastodon.technology (#<NoIPsError: NoIPsError>)",
            "couldn't resolve mastodon.technology (#<NoIPsError: NoIPsError>)",
            "couldn't resolve mastodon.technology (#<NoIPsError: NoIPsError>)"]
    hosts = ["8b1e0c4f2a9d", "f03c6d7e91b2"]
    main = Group("DNSError", "Controller/settings/mastodon_disconnect", msgs[0], 3, 500, frames, hosts, span_hours=14.0,
                 last_minutes_ago=66, uri="/settings/mastodon_disconnect", method="POST", sample_messages=msgs)
    return case(
        id="lobsters-mastodon-disconnect-dead-instance",
        title="Disconnecting a Mastodon account whose instance no longer resolves raises DNSError from Sponge",
        parent=parent, fix="1741e96a7b7da5e978d3f5de12b973e7887a3df1",
        groups=[main],
        error=("DNSError", "Controller/settings/mastodon_disconnect"),
        route="deep",
        crash=("extras/sponge.rb", 148),
        origin=("app/models/mastodon_app.rb", [123, 123]),
        alternatives=[("app/controllers/settings_controller.rb", [224, 226])],
        keywords=["NoIPsError", "rescue", "revoke_token"],
        noise=[],
        files=["extras/sponge.rb", "app/models/mastodon_app.rb", "app/controllers/settings_controller.rb",
               "app/jobs/send_webmention_job.rb", "app/controllers/application_controller.rb", "config/routes.rb"],
        app_frames=[("extras/sponge.rb", 148, "raise DNSError"),
                    ("app/models/mastodon_app.rb", 108, "s.fetch("),
                    ("app/controllers/settings_controller.rb", 225, "app.revoke_token")],
        prefix=root, prefix_style="Docker (/usr/src/app)",
        notes=("When an instance disappears, Resolv returns no addresses and Sponge raises NoIPsError inside its "
               "resolution block, but its own `rescue => e` wraps every error into DNSError. "
               "MastodonApp#revoke_token only rescued NoIPsError (register_app! already rescued both), so the "
               "DNSError escaped to mastodon_disconnect as a 500; the fix rescues DNSError too in revoke_token."),
    )


# --- F: RSS feed with a stale token ---------------------------------------------------------------
def build_rss_token():
    parent = "c88714682e06847c88d93521760807c98104bffd"
    root = "/app"
    c = Ctx(True, "/app/vendor/bundle/ruby/3.4.0/gems", gems("8.0.1", "6.6.0", "9.19.0"))
    ac = f"{root}/app/controllers/application_controller.rb"
    cb = "active_support/callbacks.rb"
    frames = (
        [c.raw(ac, 75, "ApplicationController#find_user_from_rss_token")]
        + before_filter_frames(c, True, controller_terminator(c))
        + [c.g("AS", cb, "current.invoke_before(env)", "block in ActiveSupport::Callbacks#run_callbacks",
               after="invoke_sequence = Proc.new"),
           c.raw(ac, 151, "ApplicationController#n_plus_one_detection"),
           c.g("AS", cb, "target.send(method, *arguments, &block)", "block in ActiveSupport::Callbacks#run_callbacks",
               after="def run_callbacks"),
           c.g("AS", cb, "invoke_sequence.call", "ActiveSupport::Callbacks#run_callbacks", after="def run_callbacks")]
        + controller_tail(c, puma_frames(c))
    )
    hosts = ["web.1", "web.2"]
    main = Group("NoMethodError", "Controller/home/index", "undefined method 'token' for nil", 2916, 500, frames, hosts,
                 span_hours=23.8, last_minutes_ago=3, uri="/rss", method="GET",
                 extra={"request.headers.userAgent": "Tiny Tiny RSS/24.09 (https://tt-rss.org/)"})
    return case(
        id="lobsters-rss-invalid-token",
        title="RSS requests with an unknown token raise NoMethodError in find_user_from_rss_token",
        parent=parent, fix="a950fd597caeedebe1720b80eb2f4cde00b88d58",
        groups=[main],
        error=("NoMethodError", "Controller/home/index"),
        route="deep",
        crash=("app/controllers/application_controller.rb", 75),
        origin=("app/controllers/application_controller.rb", [75, 75]),
        alternatives=[],
        keywords=["token", "nil", "rss"],
        noise=[],
        files=["app/controllers/application_controller.rb", "app/controllers/home_controller.rb",
               "app/controllers/concerns/authenticatable.rb", "config/routes.rb"],
        app_frames=[("app/controllers/application_controller.rb", 75, "@user.token"),
                    ("app/controllers/application_controller.rb", 151, "yield")],
        prefix=root, prefix_style="Heroku (/app)",
        notes=("find_user_from_rss_token looks the user up with `.first` and then passes @user.token, @user.username and "
               "@user.email to Telebugs.user on the next line; a feed reader still polling with a regenerated or "
               "deleted token gets nil and every poll is a 500. The fix is on the crash line itself (safe navigation "
               "on @user)."),
    )


# --- G: YouTube playlist URL on story submission --------------------------------------------------
def build_youtube():
    parent = "811fe208d6a11452f0af3f2be65ff91effdf7c90"
    root = "/app"
    c = Ctx(False, "/usr/local/bundle/gems", gems("7.0.4.3", "6.2.2", "9.3.1"))
    sm = f"{root}/app/models/story.rb"
    cb = "active_support/callbacks.rb"
    app = [
        c.raw(sm, 250, "block in Story.find_similar_by_url"),
        c.raw(sm, 248, "Array#each"),
        c.raw(sm, 248, "Story.find_similar_by_url"),
        c.raw(sm, 304, "Story#similar_stories"),
        c.raw(sm, 322, "Story#most_recent_similar"),
        c.raw(sm, 189, "Story#already_posted_recently?"),
        c.raw(sm, 157, "block in <class:Story>"),
    ]
    validation = [
        c.g("AS", cb, "target.instance_exec(&@override_block)", "BasicObject#instance_exec", after="class InstanceExec0"),
        c.g("AS", cb, "target.instance_exec(&@override_block)", "block in ActiveSupport::Callbacks::CallTemplate::InstanceExec0#make_lambda",
            after="class InstanceExec0"),
        c.g("AS", cb, "result_lambda = -> { user_callback.call target, value }",
            "block (2 levels) in ActiveSupport::Callbacks::Filters::Before.halting", after="def self.halting("),
        c.g("AS", cb, "result_lambda.call", "block (2 levels) in ActiveSupport::Callbacks::CallbackChain#default_terminator",
            after="def default_terminator"),
        c.g("AS", cb, "catch(:abort) do", "Kernel#catch", after="def default_terminator"),
        c.g("AS", cb, "catch(:abort) do", "block in ActiveSupport::Callbacks::CallbackChain#default_terminator",
            after="def default_terminator"),
        c.g("AS", cb, "env.halted = halted_lambda.call(target, result_lambda)",
            "block in ActiveSupport::Callbacks::Filters::Before.halting", after="def self.halting("),
        c.g("AS", cb, "@before.each { |b| b.call(arg) }", "block in ActiveSupport::Callbacks::CallbackSequence#invoke_before"),
        c.g("AS", cb, "@before.each { |b| b.call(arg) }", "Array#each"),
        c.g("AS", cb, "@before.each { |b| b.call(arg) }", "ActiveSupport::Callbacks::CallbackSequence#invoke_before"),
        c.g("AS", cb, "next_sequence.invoke_before(env)", "ActiveSupport::Callbacks#run_callbacks", after="# Common case"),
        c.g("AS", cb, "run_callbacks #{name.inspect}, &block", "ActiveSupport::Callbacks#_run_validate_callbacks"),
        c.g("AM", "active_model/validations.rb", "_run_validate_callbacks", "ActiveModel::Validations#run_validations!",
            after="def run_validations!"),
        c.g("AM", "active_model/validations/callbacks.rb", "_run_validation_callbacks { super }",
            "block in ActiveModel::Validations::Callbacks#run_validations!"),
        c.g("AS", cb, "env.value = !env.halted && (!block_given? || yield)", "ActiveSupport::Callbacks#run_callbacks",
            after="# Common case"),
        c.g("AS", cb, "run_callbacks #{name.inspect}, &block", "ActiveSupport::Callbacks#_run_validation_callbacks"),
        c.g("AM", "active_model/validations/callbacks.rb", "_run_validation_callbacks { super }",
            "ActiveModel::Validations::Callbacks#run_validations!"),
        c.g("AM", "active_model/validations.rb", "run_validations!", "ActiveModel::Validations#valid?", after="def valid?"),
        c.g("AR", "active_record/validations.rb", "output = super(context)", "ActiveRecord::Validations#valid?"),
    ]
    ctrl = [c.raw(f"{root}/app/controllers/stories_controller.rb", 20, "StoriesController#create")]
    frames = app + validation + ctrl + action_frames(c) + run_callbacks_around_skipped(c) + controller_tail(c, puma_frames(c))
    hosts = ["a4c19e07d2f3"]
    main = Group("NoMethodError", "Controller/stories/create", "undefined method `[]' for nil:NilClass", 6, 500, frames,
                 hosts, span_hours=9.0, last_minutes_ago=122, uri="/stories", method="POST")
    return case(
        id="lobsters-youtube-playlist-url",
        title="Submitting a YouTube playlist URL raises NoMethodError in Story.find_similar_by_url",
        parent=parent, fix="fabc8381deacc49519ca78937148008de7ffea1e",
        groups=[main],
        error=("NoMethodError", "Controller/stories/create"),
        route="deep",
        crash=("app/models/story.rb", 250),
        origin=("app/models/story.rb", [249, 250]),
        alternatives=[],
        keywords=["youtube", "match", "nil"],
        noise=[],
        files=["app/models/story.rb", "app/controllers/stories_controller.rb", "config/routes.rb"],
        app_frames=[("app/models/story.rb", 250, ".match(u)[1]"), ("app/models/story.rb", 248, "urls.each do |u|"),
                    ("app/models/story.rb", 304, "find_similar_by_url"), ("app/models/story.rb", 322, "similar_stories.first"),
                    ("app/models/story.rb", 189, "most_recent_similar"), ("app/models/story.rb", 157, "already_posted_recently?"),
                    ("app/controllers/stories_controller.rb", 20, "@story.valid?")],
        prefix=root, prefix_style="Docker (/app)",
        notes=("find_similar_by_url enters its YouTube branch for any youtube.com/youtu.be URL, then extracts the video "
               "id with a second regex that only matches watch?v= and youtu.be/ forms and indexes the MatchData with "
               "[1]; a playlist URL (youtube.com/playlist?list=...) matches the first regex but not the second, so "
               "nil[1] raises during story validation. The fix skips URLs whose id regex does not match, on the "
               "crash line."),
    )


# --- H: PDF without a Title on the submit form ----------------------------------------------------
def build_pdf_title():
    parent = "b1048fa7c92797a9c4cbceabb494e6ef43f934b4"
    root = "/var/www/lobsters/releases/20261117081544"
    c = Ctx(False, "/var/www/lobsters/shared/bundle/ruby/2.7.0/gems", gems("6.0.3.3", "4.3.6", "6.12.0.367"))
    app = [c.raw(f"{root}/app/models/story.rb", 783, "Story#title="),
           c.raw(f"{root}/app/controllers/stories_controller.rb", 96, "StoriesController#new")]
    frames = app + action_frames(c) + run_callbacks_around_skipped(c) + controller_tail(c, puma_frames(c))
    hosts = ["lobsters-web-02"]
    main = Group("NoMethodError", "Controller/stories/new", "undefined method `strip' for nil:NilClass", 14, 500, frames,
                 hosts, span_hours=18.0, last_minutes_ago=38, uri="/stories/new", method="GET")
    return case(
        id="lobsters-pdf-title-nil",
        title="Opening the submit form for a PDF without a Title raises NoMethodError in Story#title=",
        parent=parent, fix="ecc8b5873bf495040b3229171cd2cbe0d8bed7d9",
        groups=[main],
        error=("NoMethodError", "Controller/stories/new"),
        route="deep",
        crash=("app/models/story.rb", 783),
        origin=("app/models/story.rb", [783, 783]),
        alternatives=[("app/models/story.rb", [988, 990]), ("app/controllers/stories_controller.rb", [96, 96])],
        keywords=["pdf", "title", "nil"],
        noise=[],
        files=["app/models/story.rb", "app/controllers/stories_controller.rb", "config/routes.rb"],
        app_frames=[("app/models/story.rb", 783, "t.strip"), ("app/controllers/stories_controller.rb", 96, "@story.title = sattrs[:title]")],
        prefix=root, prefix_style="Capistrano release",
        notes=("GET /stories/new?url=... (the bookmarklet) fetches the URL and assigns the fetched title to the story; "
               "for a PDF, fetched_attributes_pdf stores pdf.info[:Title], which is nil when the document has no Title "
               "metadata, and Story#title= calls strip on it. The fix makes the setter coerce with to_s, on the crash "
               "line; returning \"\" from fetched_attributes_pdf or guarding the assignment would be equally accepted."),
    )


BUILDERS = [build_inbox, build_check_url_dupe, build_user_threads, build_notify_job, build_mastodon, build_rss_token,
            build_youtube, build_pdf_title]


# ================================================================================================
# Writing
# ================================================================================================

def yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def expected_yml(k: dict) -> str:
    out = [
        f"id: {k['id']}",
        f"title: {yaml_str(k['title'])}",
        "source:",
        "  repository: https://github.com/lobsters/lobsters",
        f"  commit: {k['parent']}",
        f"  fix_commit: {k['fix']}",
        "  license: BSD-3-Clause",
        "error:",
        f"  error_class: {yaml_str(k['error'][0])}",
        f"  transaction: {yaml_str(k['error'][1])}",
        f"route: {k['route']}",
        "crash:",
        f"  file: {k['crash'][0]}",
        f"  line: {k['crash'][1]}",
        "origin:",
        f"  file: {k['origin'][0]}",
        f"  lines: [{k['origin'][1][0]}, {k['origin'][1][1]}]",
    ]
    if k["alternatives"]:
        out.append("alternatives:")
        for f, (a, b) in k["alternatives"]:
            out += [f"  - file: {f}", f"    lines: [{a}, {b}]"]
    out.append("root_cause_keywords: [" + ", ".join(yaml_str(w) if " " in w else w for w in k["keywords"]) + "]")
    if k["noise"]:
        out.append("noise:")
        for cls, tx in k["noise"]:
            out += [f"  - error_class: {yaml_str(cls)}", f"    transaction: {yaml_str(tx)}"]
    out.append(f"notes: {yaml_str(k['notes'])}")
    return "\n".join(out) + "\n"


def write_case(k: dict) -> list[Path]:
    folder = EVALS / k["id"]
    written = []
    folder.mkdir(parents=True, exist_ok=True)
    write_slice(Path(LOBSTERS), "lobsters", k["id"], k["parent"], {*k["files"], "LICENSE"})  # the case's code: its history
    (folder / "export.json").write_text(json.dumps(export(k["groups"]), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "expected.yml").write_text(expected_yml(k), encoding="utf-8")
    written += [folder / "export.json", folder / "expected.yml"]
    return written


def main() -> None:
    for b in BUILDERS:
        b()
    for k in CASES:
        files = write_case(k)
        print(k["id"], len(files), "files")
    (Path(__file__).resolve().parent / "cases.json").write_text(json.dumps(
        [{key: v for key, v in k.items() if key != "groups"} for k in CASES], indent=1, default=str))


if __name__ == "__main__":
    main()
