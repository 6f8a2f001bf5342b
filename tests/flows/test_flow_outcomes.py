"""Outcomes through a whole night: the offline tracker says the fix PR of night 1 merged; the error is seen again
after the deploy lag, so night 2 reports it first as a regression, says so on its issue and records the outcome.
And ten nights of outcomes: every regression announced, commented and counted once, the failed fix never again."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from nightwatch.flows.nightwatch import run_night

from nightwatch.render.markdown import report_markdown

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


def test_a_merged_fix_whose_error_comes_back_is_a_regression_first_in_the_next_report(nightwatch_home: Path, monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_PR_MIN_CONFIDENCE", "medium")  # the offline model is never highly confident
    monkeypatch.setenv("NIGHTWATCH_PR_REQUIRE_VERIFIED", "false")  # the Rails demo's tests need a Ruby toolchain
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


def _edit(path: Path, key: str, number: int, **fields: object) -> None:
    """What a person does in the offline tracker: one entry's fields changed by hand."""
    data = json.loads(path.read_text())
    next(e for e in data[key] if e["number"] == number).update(fields)
    path.write_text(json.dumps(data))


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
def test_ten_nights_of_outcomes_each_regression_once_trust_as_the_readme_says_no_fix_proposed_twice(nightwatch_home: Path,
                                                                                                  monkeypatch, tmp_path):
    """A fix merged whose error comes back (NightWatch flags it), an issue closed as won't fix whose error recurs, an
    issue closed as fixed and reopened by a person, then the merged fix reverted: ten nights, each regression
    announced, commented and counted once, the rest said in one line a night."""
    from nightwatch.knowledge_store.documents import read_doc

    monkeypatch.setenv("NIGHTWATCH_PR_MIN_CONFIDENCE", "medium")
    monkeypatch.setenv("NIGHTWATCH_PR_REQUIRE_VERIFIED", "false")  # the Rails demo's tests need a Ruby toolchain
    tracker = nightwatch_home / "tracker"
    nights = [run_night(until=UNTIL, max_errors=6, max_issues=3)]
    fixed = nights[0].pr
    assert fixed is not None and fixed.action == "created", fixed
    issues = {i.fingerprint: i.issue_number for i in nights[0].issues if i.action == "created"}
    wontfix, reopened = [fp for fp in issues if fp != fixed.fingerprint][:2]
    _edit(tracker / "pulls" / "index.json", "pulls", fixed.pr_number, state="merged",
          merged_at=(UNTIL - timedelta(days=10)).isoformat())
    _edit(tracker / "index.json", "issues", issues[wontfix], state="closed", state_reason="not_planned",
          closed_at=(UNTIL - timedelta(days=1)).isoformat())
    for night in range(2, 11):
        if night == 4:  # closed as fixed, the error's occurrences all before the fix: no regression
            _edit(tracker / "index.json", "issues", issues[reopened], state="closed", state_reason="completed",
                  closed_at=UNTIL.isoformat())
        if night == 5:  # ... until a person reopens it
            _edit(tracker / "index.json", "issues", issues[reopened], state="open", state_reason="reopened")
        if night == 7:
            _edit(tracker / "pulls" / "index.json", "pulls", fixed.pr_number, state="reverted")
        nights.append(run_night(until=UNTIL + timedelta(hours=night - 1), max_errors=6, max_issues=3))
        assert nights[-1].succeeded, nights[-1].steps

    flagged = {n: sorted(r.fingerprint for r in report.regressions) for n, report in enumerate(nights, 1) if report.regressions}
    assert flagged == {2: [fixed.fingerprint], 5: [reopened]}
    still = {n: sorted(r.fingerprint for r in report.still_regressing) for n, report in enumerate(nights, 1)}
    assert still[3] == [fixed.fingerprint] and still[6] == [fixed.fingerprint, reopened] and still[10] == [reopened]
    assert all(r.still_regressing.startswith("still regressing since 2026-11-2") for r in nights[5].still_regressing)

    def text(fingerprint: str) -> str:
        return next((tracker / "issues").glob(f"{issues[fingerprint]}-*.md")).read_text()

    assert text(fixed.fingerprint).count("**Regression:**") == 1 and text(reopened).count("**Regression:**") == 1
    entries = {e["fingerprint"]: e for e in json.loads((tracker / "index.json").read_text())["issues"]}
    assert entries[wontfix]["state"] == "closed" and "**Regression:**" not in text(wontfix)
    assert "closed as won't fix" in text(wontfix) and "Reopen it if the fix did not hold" not in text(wontfix)

    def meta(fingerprint: str) -> dict:
        return read_doc(next((nightwatch_home / "knowledge" / "errors").glob(f"*_{fingerprint[:8]}.md")))[0]

    assert (meta(fixed.fingerprint)["fix_state"], meta(fixed.fingerprint)["trust"]) == ("reverted", 0.1)
    assert meta(fixed.fingerprint)["fix_confirmed"] is False and len(meta(fixed.fingerprint)["failed_fixes"]) == 1
    assert (meta(reopened)["fix_state"], meta(reopened)["trust"], meta(wontfix)["fix_state"]) == ("regressed", 0.3, "rejected")

    pulls = json.loads((tracker / "pulls" / "index.json").read_text())["pulls"]
    assert [p["fingerprint"] for p in pulls].count(fixed.fingerprint) == 1  # the failed fix is never proposed again
    from nightwatch.knowledge_store.duck import connect_readonly
    from nightwatch.knowledge_store.summary import summarise

    with connect_readonly(nightwatch_home) as con:  # what `nightwatch metrics` reads and says
        regressed = con.execute("select fingerprint, count(*) from outcomes where fix_state = 'regressed' group by 1").fetchall()
        summary = summarise(con, 30)
    assert sorted(regressed) == sorted([(fixed.fingerprint, 1), (reopened, 1)])
    assert summary.figures["regressions"] == 2  # each regression once, over ten nights
    acceptance = dict(zip(summary.acceptance.columns, summary.acceptance.rows[0]))
    assert (acceptance["fixes_judged"], acceptance["merged"], acceptance["acceptance_rate"]) == (1, 0, 0.0)  # merged, then failed

    # the home restored from a backup to another path: its eleventh night runs there, on its own rows only
    import shutil

    from nightwatch.knowledge_store.doctor import check_views_file

    restored = tmp_path / "restored-home"
    shutil.copytree(nightwatch_home, restored)
    assert [f.problem for f in check_views_file(restored, repair=False)] == [
        f"views read {(nightwatch_home / 'metrics').resolve().as_posix()}, not this home's "
        f"{(restored / 'metrics').resolve().as_posix()} (the home was copied or moved)"]
    eleventh = run_night(until=UNTIL + timedelta(hours=10), max_errors=6, max_issues=3, overrides={"home": str(restored)})
    assert eleventh.succeeded, eleventh.steps
    for home, nights_there in ((restored, 11), (nightwatch_home, 10)):
        con = duckdb.connect(str(home / "nightwatch.duckdb"), read_only=True)
        try:
            assert con.execute("select count(distinct run_id) from runs").fetchone() == (nights_there,)
        finally:
            con.close()
