"""Outcomes through a whole night: the offline tracker says the fix PR of night 1 merged; the error is seen again
after the deploy lag, so night 2 reports it first as a regression, says so on its issue and records the outcome."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from flows.nightwatch import run_night
from nightwatch.render.markdown import report_markdown

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


def test_a_merged_fix_whose_error_comes_back_is_a_regression_first_in_the_next_report(nightwatch_home: Path, monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_PR_MIN_CONFIDENCE", "medium")  # the offline model is never highly confident
    first = run_night(until=UNTIL, max_errors=6)
    assert first.pr is not None and first.pr.action == "created", first.pr
    pulls = nightwatch_home / "tracker" / "pulls" / "index.json"
    entries = json.loads(pulls.read_text())
    merged_at = UNTIL - timedelta(days=10)  # long before the error's occurrences in the next window
    entries["pulls"][0].update(state="merged", merged_at=merged_at.isoformat())  # what a person does, offline
    pulls.write_text(json.dumps(entries))

    second = run_night(until=UNTIL + timedelta(hours=1), max_errors=6)
    assert any(line.startswith(f"PR #{first.pr.pr_number} merged on {merged_at:%Y-%m-%d}") for line in second.outcomes), second.outcomes
    (back,) = second.regressions
    assert back.fingerprint == first.pr.fingerprint and back.regression.startswith("regression: seen ")
    assert back.verdict.route != "known"
    markdown = report_markdown(second)
    assert markdown.index("## Regressions (1)") < markdown.index("## Errors")
    assert "## What happened to what NightWatch filed" in markdown
    issue = next(i for i in second.issues if i.fingerprint == back.fingerprint)
    assert issue.action == "commented"
    issue_file = next((nightwatch_home / "tracker" / "issues").glob(f"{issue.issue_number}-*.md"))
    assert "**Regression:** regression: seen " in issue_file.read_text()
    con = duckdb.connect(str(nightwatch_home / "nightwatch.duckdb"), read_only=True)
    try:
        rows = con.execute("select kind, fix_state, trust from outcomes").fetchall()
        regressions = con.execute("select count(*) from analyses where regression is not null").fetchone()[0]
    finally:
        con.close()
    assert ("pr", "merged", 0.9) in rows and regressions == 1
