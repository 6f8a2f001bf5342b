"""What a Sentry event knows besides the stack reaches the investigation: the crash frame's and its caller's local
variables, the request's shape and the last breadcrumbs in the first message; every application frame's variables
and source lines, and older breadcrumbs, through get_error_traces. Read from events the real sentry-sdk sent (the
Python demo's, and the Django shop's, whose database calls leave breadcrumbs)."""

from __future__ import annotations

import json
from pathlib import Path

from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import BREADCRUMB_PAGE, CodeCache, ToolRunner
from nightwatch.models import ErrorGroup, StackFrame, TraceData
from nightwatch.prompts import investigation_message, production_values
from nightwatch.research import ResearchContext
from nightwatch.settings import DEMO_DIRS
from nightwatch.sources.sentry_event import exceptions_of, trace_of

ROOT = Path(__file__).resolve().parents[2]
DEMO = json.loads((DEMO_DIRS["python"] / "sentry_events.json").read_text(encoding="utf-8"))["events"]
SHOP = json.loads((ROOT / "tests" / "captured" / "sentry_python" / "django-sdk3.json").read_text(encoding="utf-8"))["events"]


def event_of(events: list[dict], error_type: str) -> dict:
    return next(e for e in events if exceptions_of(e) and exceptions_of(e)[-1]["type"] == error_type)


def runner_for(traces) -> ToolRunner:  # type: ignore[no-untyped-def]
    return ToolRunner(cache=CodeCache(None), traces=traces, events=EventLog(), run_id="r1", fingerprint="fp",  # type: ignore[arg-type]
                      allowed=["get_error_traces"])


def test_the_first_message_holds_the_crash_frames_and_callers_values_and_the_request() -> None:
    traces = trace_of("fp", [event_of(DEMO, "KeyError")])  # RATES[currency] with currency 'GBP'
    held = production_values(traces)
    crash, caller = held.split("Local variables of ")[1:3]
    assert crash.startswith("the crash frame") and "currency = 'GBP'" in crash
    assert caller.startswith("its caller") and "isbn = '9780553418026'" in caller
    assert "Request: GET /books/9780553418026/price (route /books/{isbn}/price); query keys: currency" in held
    message = investigation_message(ErrorGroup(error_class="KeyError", transaction="/books/{isbn}/price"), traces,
                                    ResearchContext(fingerprint="fp"))
    assert held in message[0]["text"]  # the first block: before the research, whatever it holds


def test_a_body_is_named_by_its_keys_and_a_none_passed_on_is_shown() -> None:
    traces = trace_of("fp", [event_of(DEMO, "AttributeError")])  # normalise_coupon(None)
    held = production_values(traces)
    assert "code = None" in held and "Request: POST /coupons/check" in held


def test_breadcrumbs_show_the_newest_few_and_page_back_through_the_rest() -> None:
    traces = trace_of("fp", [event_of(SHOP, "OperationalError")])
    assert len(traces.breadcrumbs) >= 3 and all(b.category for b in traces.breadcrumbs)
    held = production_values(traces)
    newest = traces.breadcrumbs[-1]
    assert "breadcrumbs before the error, newest last" in held and newest.message[:40] in held
    page = runner_for(traces).run("get_error_traces", {"breadcrumbs": 0}, 1).text
    assert f"of {len(traces.breadcrumbs)}, oldest first" in page and newest.message[:40] in page
    beyond = runner_for(traces).run("get_error_traces", {"breadcrumbs": len(traces.breadcrumbs) // BREADCRUMB_PAGE + 1}, 1)
    assert "There is no page" in beyond.text


def test_every_application_frame_can_be_read_with_its_source_lines_and_variables() -> None:
    traces = trace_of("fp", [event_of(DEMO, "TypeError")])  # a csv's strings summed with ints, two frames down
    runner = runner_for(traces)
    for index, frame in enumerate(traces.in_app_frames):
        page = runner.run("get_error_traces", {"frame": index}, 1).text
        assert f"application frame {index} of {len(traces.in_app_frames)}" in page
        assert f"> {frame.line:>5}|" in page  # the line production ran, marked among its neighbours
        assert all(f"  {name} = " in page for name in frame.variables)
    assert "There is no application frame" in runner.run("get_error_traces", {"frame": 99}, 1).text


def test_new_relic_traces_add_nothing_to_the_first_message() -> None:
    """New Relic's agents record no variables, request shape or breadcrumbs: its first message is as it was."""
    traces = TraceData(fingerprint="fp", stack_frames=[StackFrame(file="app/models/order.rb", line=3, in_app=True)])
    assert production_values(traces) == ""
