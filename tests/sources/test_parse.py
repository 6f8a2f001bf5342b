"""Parsing NerdGraph answers: envelopes, facet rows, stack traces, trace rows."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from nightwatch.sources.base import SourceError
from nightwatch.sources.parse import (
    MAX_FRAMES,
    is_app_path,
    parse_error_rows,
    parse_stack_trace,
    parse_traces,
    stack_frames_with_notes,
    unwrap_results,
)
from tests.fakes.nerdgraph import nerdgraph_response

T0 = 1795154400000  # 2026-11-20T06:00:00Z


def row(error_class: str = "NoMethodError", transaction: str = "Controller/orders/show", **extra: object) -> dict:
    return {
        "error.class": error_class,
        "transactionName": transaction,
        "occurrences": 10,
        "message": "boom",
        "first_seen": T0,
        "last_seen": T0 + 3_600_000,
        "http_status": 500,
        **extra,
    }


# --- envelope ---------------------------------------------------------------------------------


def test_unwrap_returns_rows() -> None:
    assert unwrap_results(nerdgraph_response([{"a": 1}]), "errors query") == ([{"a": 1}], [])


def test_unwrap_partial_keeps_rows_and_turns_errors_into_warnings() -> None:
    rows, warnings = unwrap_results(nerdgraph_response([{"a": 1}, "junk"], errors=["NRQL timeout on shard 3"]), "q")
    assert rows == [{"a": 1}]
    assert "partial result for the q: NRQL timeout on shard 3" in warnings[0]
    assert "1 result(s)" in warnings[1]


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ({"errors": [{"message": "x"}]}, "missing data.actor.account.nrql.results (top-level keys: errors)"),
        ({"data": {"actor": {"account": {"nrql": {"results": {"a": 1}}}}}}, "a dict instead of a list at"),
        ({}, "(top-level keys: none)"),
        ([], "a list, not an object"),
    ],
)
def test_unwrap_without_usable_data_raises(response: object, problem: str) -> None:
    with pytest.raises(SourceError, match="malformed response for the errors query") as info:
        unwrap_results(response, "errors query")
    assert problem in str(info.value)


# --- facet rows -------------------------------------------------------------------------------


def test_rows_become_groups_with_aware_timestamps() -> None:
    [group], warnings = parse_error_rows([row()], "shop")
    assert warnings == []
    assert group.first_seen == datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)
    assert (group.occurrences, group.http_status, group.app_name) == (10, 500, "shop")


def test_facet_list_is_enough() -> None:
    bare = {"facet": ["KeyError", "WebTransaction/Function/api.orders"], "count": "7"}
    [group], _ = parse_error_rows([bare], "shop")
    assert (group.error_class, group.transaction, group.occurrences) == (
        "KeyError",
        "WebTransaction/Function/api.orders",
        7,
    )


def test_a_bad_row_is_skipped_with_a_warning() -> None:
    rows = [
        row(),
        "not a row",
        row(error_class=None),
        row(occurrences="many"),
        row(first_seen="yesterday-ish"),
        row("B"),
    ]
    groups, warnings = parse_error_rows(rows, "shop")
    assert [g.error_class for g in groups] == ["NoMethodError", "B"]
    assert [w.split(":")[0] for w in warnings] == [f"skipped row {i} of the errors query" for i in (1, 2, 3, 4)]


def test_messages_are_redacted_and_capped() -> None:
    secret = "sk-ant-api03-" + "a" * 40
    [group], _ = parse_error_rows([row(message=f"failed with key {secret} " + "x" * 5000)], "shop")
    assert secret not in group.message
    assert "[REDACTED]" in group.message
    assert len(group.message) < 2300


def test_rows_with_one_fingerprint_merge() -> None:
    rows = [
        row(
            transaction="Controller/orders/12/edit",
            occurrences=5,
            first_seen=T0 + 1000,
            last_seen=T0 + 5000,
            message="id 12",
        ),
        row(
            transaction="Controller/orders/99/edit", occurrences=7, first_seen=T0, last_seen=T0 + 9000, message="id 99"
        ),
        row(transaction="Controller/orders/99/show", occurrences=1),
    ]
    groups, _ = parse_error_rows(rows, "shop")
    assert len(groups) == 2
    merged = groups[0]
    assert merged.occurrences == 12
    assert merged.transaction == "Controller/orders/99/edit"  # the larger facet names the group
    assert merged.first_seen == datetime.fromtimestamp(T0 / 1000, tz=timezone.utc)
    assert merged.last_seen == datetime.fromtimestamp((T0 + 9000) / 1000, tz=timezone.utc)
    assert merged.message == "id 99"


# --- stack traces -----------------------------------------------------------------------------


def test_ruby_backtrace_both_quote_styles() -> None:
    frames = parse_stack_trace(
        "app/models/order.rb:42:in 'Order#total'\n"
        "from /srv/app/lib/pricing.rb:7:in `block in compute'\n"
        "/usr/local/lib/ruby/3.3.0/net/http.rb:1603:in `request'\n"
        "/bundle/gems/rack-3.0.8/lib/rack/builder.rb:9:in `call'"
    )
    assert [(f.file, f.line, f.method, f.in_app) for f in frames] == [
        ("app/models/order.rb", 42, "Order#total", True),
        ("/srv/app/lib/pricing.rb", 7, "block in compute", True),
        ("/usr/local/lib/ruby/3.3.0/net/http.rb", 1603, "request", False),
        ("/bundle/gems/rack-3.0.8/lib/rack/builder.rb", 9, "call", False),
    ]


def test_python_traceback_is_turned_raising_frame_first() -> None:
    frames = parse_stack_trace(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/flask/app.py", line 880, in full_dispatch_request\n'
        "    rv = self.dispatch_request()\n"
        '  File "src/shop/views.py", line 31, in checkout\n'
        "    total = cart.total / count\n"
        "ZeroDivisionError: division by zero"
    )
    assert [(f.file, f.line, f.method, f.in_app) for f in frames] == [
        ("src/shop/views.py", 31, "checkout", True),
        ("/usr/lib/python3.11/site-packages/flask/app.py", 880, "full_dispatch_request", False),
    ]


def test_list_forms() -> None:
    as_strings = parse_stack_trace(["config/initializers/x.rb:3:in `<main>'", "vendor/bundle/y.rb:1"])
    assert [(f.file, f.in_app) for f in as_strings] == [
        ("config/initializers/x.rb", True),
        ("vendor/bundle/y.rb", False),
    ]
    as_dicts = parse_stack_trace([{"filename": "lib/tax.rb", "lineNumber": 4, "methodName": "rate"}, {"nothing": 1}])
    assert [(f.file, f.line, f.method) for f in as_dicts] == [("lib/tax.rb", 4, "rate")]
    as_json_text = parse_stack_trace('["app/a.rb:1:in `x\'", "app/b.rb:2"]')
    assert [f.file for f in as_json_text] == ["app/a.rb", "app/b.rb"]
    assert parse_stack_trace(None) == [] and parse_stack_trace("no frames here") == []


def test_jvm_and_node_frames() -> None:
    frames = parse_stack_trace(
        "  at com.shop.Cart.total(Cart.java:42)\n    at handler (/srv/node_modules/express/router.js:10:5)"
    )
    assert [(f.file, f.line, f.method, f.in_app) for f in frames] == [
        ("Cart.java", 42, "com.shop.Cart.total", True),
        ("/srv/node_modules/express/router.js", 10, "handler", False),
    ]


@pytest.mark.parametrize(
    ("path", "in_app"),
    [
        ("app/models/a.rb", True),
        ("./lib/b.rb", True),
        ("/site-packages/x.py", False),
        ("<internal:kernel>", False),
        ("", False),
    ],
)
def test_app_paths(path: str, in_app: bool) -> None:
    assert is_app_path(path) is in_app


def test_frames_are_capped_keeping_the_top() -> None:
    frames, notes = stack_frames_with_notes([f"app/f{i}.rb:{i + 1}" for i in range(250)])
    assert len(frames) == MAX_FRAMES and frames[0].file == "app/f0.rb"
    assert notes == [f"frames truncated: kept the top {MAX_FRAMES} of 250 (50 dropped)"]


# --- trace rows -------------------------------------------------------------------------------


def test_traces_clean_attributes_and_use_the_newest_stack() -> None:
    tx_rows = [
        {
            "timestamp": T0,
            "request.headers.authorization": "Bearer abcdefghijkl",
            "user.password": "hunter22",
            "message": "token=Zq8vN3xKp7Lm2Rt9Wb4Yc6",
            "duration": 1.5,
            "ok": True,
            "tags": ["a", "b"],
        }
    ]
    traces = [{"timestamp": T0, "stackTrace": "app/old.rb:1"}, {"timestamp": T0 + 10, "stackTrace": "app/new.rb:2"}]
    data = parse_traces("f" * 16, tx_rows, traces)
    attrs = data.transaction_errors[0]
    assert attrs["timestamp"] == "2026-11-20T06:00:00+00:00"
    assert attrs["request.headers.authorization"] == "[REDACTED]" and attrs["user.password"] == "[REDACTED]"
    assert "Zq8vN3xKp7Lm2Rt9Wb4Yc6" not in attrs["message"]
    assert (attrs["duration"], attrs["ok"], attrs["tags"]) == (1.5, True, '["a", "b"]')
    assert data.stack_frames[0].file == "app/new.rb" and data.stack_trace == "app/new.rb:2"
    assert not data.truncated and data.notes == []


def test_a_trace_past_the_cap_costs_no_more_however_long_it_is() -> None:
    """Ten times the trace past the cap costs about the same CPU (measured 1.05x here; linear would be 10x). CPU time of
    this thread, the least of three runs: what else the machine runs does not count."""
    frame = "app/models/order.rb:42:in `total'\n"

    def cpu(size: int) -> float:
        trace = frame * (size // len(frame))
        best = float("inf")
        for _ in range(3):
            started = time.thread_time()
            parse_traces("f" * 16, [], [{"timestamp": T0, "stackTrace": trace}], trace_char_limit=20_000)
            best = min(best, time.thread_time() - started)
        return best

    assert cpu(20 * 1024 * 1024) < 3 * cpu(2 * 1024 * 1024)


def test_no_traces_is_a_note() -> None:
    assert parse_traces("f" * 16, [], []).notes == ["no error traces found"]
    assert parse_traces("f" * 16, [], [{"timestamp": T0}]).notes == ["no stack trace in the error traces"]


def test_a_5mb_trace_is_capped_with_a_note() -> None:
    frame = "app/models/order.rb:42:in `total'\n"
    huge = frame * (5 * 1024 * 1024 // len(frame))
    data = parse_traces("f" * 16, [], [{"timestamp": T0, "stackTrace": huge}], trace_char_limit=20_000)
    assert data.truncated
    assert len(data.stack_trace) < 20_500
    assert any(note.startswith("stack trace: truncated: kept 20,000 of") for note in data.notes)
    assert len(data.stack_frames) == MAX_FRAMES


def test_a_binary_trace_is_neutralised() -> None:
    binary = bytes(range(256)).decode("latin-1") * 40_000  # ~10 MB of control and high characters
    data = parse_traces("f" * 16, [], [{"timestamp": T0, "stackTrace": binary}], trace_char_limit=5_000)
    assert data.truncated
    assert "stack trace: binary or control characters replaced" in data.notes
    assert not any(ord(ch) < 0x09 for ch in data.stack_trace)
    assert len(data.stack_trace) < 5_500


def test_a_secret_in_a_stack_trace_is_redacted() -> None:
    trace = "app/x.rb:1:in `call'\npassword=supersecret123 in app/y.rb"
    data = parse_traces("f" * 16, [], [{"timestamp": T0, "stackTrace": trace}])
    assert "supersecret123" not in data.stack_trace


def test_a_status_reported_under_any_of_its_names_is_read_in_order_of_preference() -> None:
    from nightwatch.sources.parse import parse_error_rows

    base = {"facet": ["builtins:KeyError", "WebTransaction/Function/shop.views:order_detail"], "occurrences": 3}
    rows = [
        {**base, "http_status": None, "response_status": "500", "http_response_code": None},  # Python agent 8.x-12.x
        {**base, "facet": ["a:B", "t1"], "http_status": 502, "response_status": "500"},  # today's agents send both
        {**base, "facet": ["a:B", "t2"], "http_status": None, "response_status": "abc", "http_response_code": "404"},
        {**base, "facet": ["a:B", "t3"], "http_status": None, "response_status": None},  # a background job
    ]
    groups, warnings = parse_error_rows(rows, "shop-production")
    assert [g.http_status for g in groups] == [500, 502, 404, None] and warnings == []


@pytest.mark.parametrize("path, in_app", [
    ("/srv/shop/venv/bin/gunicorn", False), ("/srv/shop/.venv/bin/celery", False), ("/opt/venv-3.11/bin/uvicorn", False),
    ("/home/deploy/.virtualenvs/shop/bin/gunicorn", False), ("/opt/conda/envs/api/bin/gunicorn", False),
    ("/srv/shop/env/bin/gunicorn", False), ("/srv/virtualenv/bin/gunicorn", False),
    ("bin/rails", True), ("/app/bin/import_prices.py", True), ("/srv/environments/bin/tool.py", True),
    ("/srv/shop/shop/views.py", True),
])
def test_a_python_environment_s_console_scripts_are_not_application_code(path: str, in_app: bool) -> None:
    from nightwatch.sources.parse import is_app_path

    assert is_app_path(path) is in_app
