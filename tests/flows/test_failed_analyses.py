"""A night in which analyses failed says so everywhere, and never passes a failure off as an answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nightwatch.models import TriageVerdict
from nightwatch.publishers.issues import FileIssueTracker, file_issues
from nightwatch.render.blocks import fallback_text, report_blocks
from nightwatch.render.markdown import report_markdown
from nightwatch.render.summary import analysed, confidence_of, status_line, text_summary
from nightwatch.selection import select_for_issues
from tests.publishers.test_render import make_report, make_result

REASON = "model call failed at iteration 2: InternalServerError: Overloaded"


def _failed(i: int):
    result = make_result(i)
    verdict = TriageVerdict(fingerprint=result.fingerprint, route="deep", confidence="high", likely_root_cause="a nil user")
    return result.model_copy(update={"analysis": None, "failure": REASON, "verdict": verdict})


def test_a_failed_analysis_is_counted_as_failed_not_analysed():
    report = make_report(results=[make_result(1), _failed(2)], errors_selected=2)
    assert report.errors_failed == 1 and not report.succeeded
    assert [r.fingerprint for r in analysed(report)] == [report.results[0].fingerprint]
    assert confidence_of(report.results[1]) == "failed"  # never triage's "high" shown as the model's answer
    assert "1 of 2 analyses failed" in status_line(report)
    again = type(report).model_validate_json(report.model_dump_json())
    assert again.errors_failed == 1 and not again.succeeded


def test_every_rendering_lists_the_failure_with_its_reason():
    report = make_report(results=[make_result(1), _failed(2)], errors_selected=2)
    failed = report.results[1]
    summary = text_summary(report)
    assert summary.index("FAILED: 1 of 2 analyses failed") < summary.index("Sources")  # first thing after the header
    assert "Overloaded" in summary.split("Sources")[0] and failed.error.error_class in summary.split("Sources")[0]
    row = next(line for line in summary.splitlines() if line.startswith("  2 ") and failed.error.error_class in line)
    assert row.split()[4] == "failed" and "1 FAILED" in summary
    blocks = json.dumps(report_blocks(report))
    assert "analyses failed" in blocks and "Overloaded" in blocks and "1 failed" in blocks
    assert "FAILED" in fallback_text(report)
    markdown = report_markdown(report)
    assert "analyses failed" in markdown and "Overloaded" in markdown


def test_a_night_with_a_failed_step_is_not_a_success():
    report = make_report()
    assert not report.errors_failed and report.steps_failed == ["10 propose_fix"]
    assert not report.succeeded and "step(s) failed: 10 propose_fix" in status_line(report)
    report.steps = [s for s in report.steps if s.status != "failed"]
    assert report.succeeded and status_line(report).endswith("ok, 3 of 8 errors analysed")


def test_a_failed_analysis_opens_no_issue_but_its_open_issue_hears_of_it(tmp_path: Path):
    tracker = FileIssueTracker(tmp_path / "tracker")
    first = make_result(1)
    file_issues([first], tracker, "night-1", max_issues=3, open_limit=10, demo=False)
    failing = _failed(1).model_copy(update={"error": first.error})
    other = _failed(2)
    chosen = select_for_issues([failing, other])
    assert [r.fingerprint for r in chosen] == [failing.fingerprint, other.fingerprint]
    outcomes = file_issues(chosen, tracker, "night-2", max_issues=3, open_limit=10, demo=False)
    assert [o.action for o in outcomes] == ["commented", "skipped"]
    assert "analysis failed" in outcomes[1].reason
    issue_text = next((tmp_path / "tracker" / "issues").glob("1-*.md")).read_text()
    assert "Tonight's analysis failed" in issue_text and "Overloaded" in issue_text


def test_the_new_issue_cap_holds_across_attempts_of_one_night(tmp_path: Path):
    tracker = FileIssueTracker(tmp_path / "tracker")
    results = [make_result(i) for i in range(5)]
    first = file_issues(results[:2], tracker, "night-1", max_issues=2, open_limit=10, demo=False)
    assert [o.action for o in first] == ["created", "created"]
    again = file_issues(results, tracker, "night-1", max_issues=2, open_limit=10, demo=False)  # a retry with more errors
    assert [o.action for o in again] == ["unchanged", "unchanged", "skipped", "skipped", "skipped"]
    assert len(list((tmp_path / "tracker" / "issues").glob("*.md"))) == 2
    next_night = file_issues(results, tracker, "night-2", max_issues=2, open_limit=10, demo=False)
    assert [o.action for o in next_night].count("created") == 2


def test_a_failed_night_s_state_raises_one_line_naming_the_step_and_gives_its_report_back():
    """What a worker's flow-run process does with a night's final state: its log ends in the night's status line, not in
    Prefect's complaint about a failed state that carries no exception; `run_night` gets the report back from it."""
    import pickle

    from nightwatch.flows.nightwatch import NightFailed, night_state

    report = make_report()
    state = night_state(report)
    assert state.is_failed() and "step(s) failed: 10 propose_fix" in state.message
    with pytest.raises(NightFailed, match=r"FAILED: step\(s\) failed: 10 propose_fix") as raised:
        state.result()
    assert raised.value.report is report and "\n" not in str(raised.value)
    assert pickle.loads(pickle.dumps(raised.value)).report == report  # a result store or another process keeps it whole
    assert night_state(report.model_copy(update={"steps": [s for s in report.steps if s.status != "failed"]})).run_id
