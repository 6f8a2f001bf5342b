"""Outcome feedback through the fake GitHub server: what people do with NightWatch's issues and PRs moves the
trust of the analysis behind them, and an error that comes back after its fix merged is a regression.

The chain is the production one: PyGithub against a local GitHub, the knowledge documents and their DuckDB index,
search, triage's `known_prior`, the regression check and the report's renderers.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from nightwatch.knowledge_store.documents import read_doc, update_doc_metadata, write_error_doc
from nightwatch.knowledge_store.index import open_index
from nightwatch.knowledge_store.outcomes import apply_changes, last_synced, outcome_changes
from nightwatch.knowledge_store.search import search_prior_knowledge
from pydantic import SecretStr

from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, RunReport, TriageVerdict, Window
from nightwatch.outcomes import Observed, judge, mark_regression
from nightwatch.publishers.issues import FileIssueTracker, GitHubIssueTracker, file_issues, reverted_numbers
from nightwatch.render.markdown import report_markdown
from nightwatch.render.summary import text_summary
from nightwatch.research import ResearchContext
from nightwatch.triage.merge import combine_results
from nightwatch.triage.verdict import TriageOutcome, known_prior
from tests.fakes.github import FakeGitHub

NIGHT_1 = datetime(2026, 11, 1, 6, tzinfo=timezone.utc)
LAG = timedelta(hours=24)


def error(occurrences: int = 40, last_seen: datetime | None = None) -> ErrorGroup:
    return ErrorGroup(error_class="NoMethodError", transaction="Controller/orders/show",
                      message="undefined method `name' for nil", occurrences=occurrences, last_seen=last_seen)


def analysed(run_id: str = "night-1") -> ErrorAnalysisResult:
    analysis = Analysis(title="Order#customer is nil for guest checkouts", reasoning="Guest orders have no customer.",
                        root_cause="Order#customer is nil for guest checkouts", has_fix=True, confidence="high")
    return ErrorAnalysisResult(run_id=run_id, error=error(last_seen=NIGHT_1), analysis=analysis)


@pytest.fixture
def github():
    with FakeGitHub() as fake:
        yield fake


def tracker(fake: FakeGitHub) -> GitHubIssueTracker:
    return GitHubIssueTracker(fake.full_name, SecretStr(fake.token), fake.url, retries=0)


def night_one(knowledge: Path, fake: FakeGitHub) -> tuple[int, int]:
    """Night 1 analysed the error, filed an issue and a draft fix PR, and remembered both numbers."""
    result = analysed()
    write_error_doc(result, knowledge, file_hashes={"app/models/order.rb": "a" * 64}, detected_at=NIGHT_1)
    issue = tracker(fake).create_issue("NoMethodError in orders#show", "body", [], result.fingerprint).number
    pr = fake.add_pr("[NightWatch] Fix: guest orders", ["app/models/order.rb"], author="nightwatch-bot", state="open",
                     draft=True)
    update_doc_metadata(knowledge, result.fingerprint, issue_number=issue, pr_number=pr)
    with open_index(knowledge) as index:
        index.sync()
    return issue, pr


def sync(knowledge: Path, fake: FakeGitHub, at: datetime) -> list[str]:
    """Step 1.5 as the task runs it."""
    with open_index(knowledge) as index:
        found = outcome_changes(index, tracker(fake).observe_outcomes(index.filed(), last_synced(index)))
        apply_changes(index, found, at)
    return [c.note for c in found if c.judged]


def research_tonight(knowledge: Path, seen: datetime) -> tuple[ResearchContext, ErrorGroup]:
    tonight = error(last_seen=seen)
    with open_index(knowledge) as index:
        priors = search_prior_knowledge(tonight, index)
    research = ResearchContext(fingerprint=tonight.fingerprint, prior_analyses=priors,
                               file_digests={"app/models/order.rb": "a" * 64})
    return mark_regression(research, tonight, seen, LAG), tonight


def test_a_merged_fix_is_trusted_and_reused_as_known(tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue, pr = night_one(knowledge, github)
    github.merge_pr(pr, at=NIGHT_1 + timedelta(hours=3))
    github.close_issue(issue, "completed")

    assert sync(knowledge, github, NIGHT_1 + timedelta(days=1)) == [
        f"issue #{issue} closed as completed{sync_date(github, issue)}", f"PR #{pr} merged on 2026-11-01"]
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    assert (meta["fix_state"], meta["trust"], meta["fix_confirmed"], meta["pr_state"]) == ("merged", 0.9, True, "merged")

    research, tonight = research_tonight(knowledge, NIGHT_1 + timedelta(hours=12))  # within the deploy lag
    assert research.regression == ""
    known, why = known_prior(research.prior_analyses, research.file_digests, research.regression)
    assert known is not None and known.trust == 0.9 and why.startswith("known: fix-confirmed")
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=2)) == []  # the same states again change nothing


def sync_date(fake: FakeGitHub, number: int) -> str:
    return f" on {fake.issues[number]['closed_at']:%Y-%m-%d}"


def test_a_fix_closed_unmerged_is_distrusted_and_investigated_again_with_the_rejection_in_the_prompt(
        tmp_path: Path, github: FakeGitHub) -> None:
    from nightwatch.triage.verdict import triage_params

    knowledge = tmp_path / "knowledge"
    _, pr = night_one(knowledge, github)
    update_doc_metadata(knowledge, analysed().fingerprint, fix_confirmed=True)  # even a confirmed analysis
    github.close_pr(pr)

    assert sync(knowledge, github, NIGHT_1 + timedelta(days=1)) == [f"PR #{pr} closed without merging{sync_date(github, pr)}"]
    research, tonight = research_tonight(knowledge, NIGHT_1 + timedelta(days=1))
    prior = research.prior_analyses[0]
    assert (prior.fix_state, prior.trust, prior.fix_confirmed) == ("rejected", 0.2, False)
    assert known_prior(research.prior_analyses, research.file_digests, research.regression)[0] is None
    prompt = triage_params(tonight, _no_traces(tonight), research.prior_analyses, "claude-haiku-4-5")["messages"][0]
    assert "People REJECTED this analysis or its fix" in prompt["content"][0]["text"]
    assert f"PR #{pr} closed without merging" in prompt["content"][0]["text"]


def _no_traces(tonight: ErrorGroup):  # type: ignore[no-untyped-def]
    from nightwatch.models import TraceData

    return TraceData(fingerprint=tonight.fingerprint)


def fixed_and_closed(knowledge: Path, github: FakeGitHub) -> int:
    """Night 1's issue and fix PR; the PR merged three hours later, the issue closed, and the next sync saw both."""
    issue, pr = night_one(knowledge, github)
    github.merge_pr(pr, at=NIGHT_1 + timedelta(hours=3))
    github.close_issue(issue, "completed")
    sync(knowledge, github, NIGHT_1 + timedelta(days=1))
    return issue


def test_an_error_seen_after_its_fix_merged_is_a_regression_first_in_the_report_and_on_its_issue(
        tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue = fixed_and_closed(knowledge, github)

    seen = NIGHT_1 + timedelta(days=3)
    research, tonight = research_tonight(knowledge, seen)
    assert research.regression.startswith("regression: seen 2026-11-04 06:00 UTC, after PR #")
    assert known_prior(research.prior_analyses, research.file_digests, research.regression)[0] is None
    other = ErrorGroup(error_class="KeyError", transaction="Controller/carts/show", message="key not found: :id", occurrences=900)
    verdicts = [TriageVerdict(fingerprint=e.fingerprint, route="simple", likely_root_cause="cause", confidence="high")
                for e in (other, tonight)]
    results = combine_results("night-4", "default", [other, tonight], [ResearchContext(fingerprint=other.fingerprint), research],
                              [TriageOutcome(run_id="night-4", verdict=v) for v in verdicts], {})
    assert [bool(r.regression) for r in results] == [False, True]
    report = RunReport(run_id="night-4", started_at=seen, window=Window.ending_at(seen, timedelta(days=1)), results=results)
    markdown, text = report_markdown(report), text_summary(report)
    assert markdown.index("## Regressions (1)") < markdown.index("## Errors")
    assert "REGRESSIONS (1)" in text.splitlines()[:8]

    filed = file_issues([r for r in results if r.regression], tracker(github), "night-4", 5, 50, demo=False)
    assert [(f.issue_number, f.action) for f in filed] == [(issue, "commented")]
    assert github.issues[issue]["state"] == "open"  # reopened: the fix did not hold
    assert github.comments[issue][-1]["body"].startswith("**Regression:** regression: seen 2026-11-04")


def test_a_reopened_issue_makes_the_next_occurrence_a_regression(tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue, _ = night_one(knowledge, github)
    github.close_issue(issue, "completed")
    sync(knowledge, github, NIGHT_1 + timedelta(days=1))
    github.reopen_issue(issue)

    assert sync(knowledge, github, NIGHT_1 + timedelta(days=2)) == [f"issue #{issue} reopened{_updated(github, issue)}"]
    research, _ = research_tonight(knowledge, NIGHT_1 + timedelta(days=2))
    assert research.regression == f"regression: issue #{issue} reopened{_updated(github, issue)}"
    assert research.prior_analyses[0].fix_state == "regressed"


def _updated(fake: FakeGitHub, number: int) -> str:
    return f" on {fake.issues[number]['updated_at']:%Y-%m-%d}"


def test_wontfix_labels_not_planned_and_reverts_reject_the_analysis() -> None:
    closed = Observed(kind="issue", number=3, state="closed", reason="wontfix")
    assert judge(closed, "open") == ("rejected", "issue #3 closed as wontfix")
    assert judge(Observed(kind="issue", number=3, state="closed", reason="not_planned"), None)[0] == "rejected"
    assert judge(Observed(kind="pr", number=9, state="reverted"), "merged") == ("reverted", "PR #9 was merged, then reverted")
    assert judge(Observed(kind="issue", number=3, state="open"), None) is None  # still open: says nothing yet
    assert reverted_numbers('Revert "[NightWatch] Fix: guest orders"', "Reverts acme/shop#12", "acme/shop") == {12}
    assert reverted_numbers("Fix things", "Reverts acme/shop#12", "acme/shop") == set()
    assert reverted_numbers("Revert x", "Reverts other/repo#12", "acme/shop") == set()


def test_reverts_are_found_among_the_prs_merged_since(tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    _, pr = night_one(knowledge, github)
    github.merge_pr(pr, at=NIGHT_1 + timedelta(hours=3))
    sync(knowledge, github, NIGHT_1 + timedelta(hours=4))
    github.add_pr('Revert "[NightWatch] Fix: guest orders"', ["app/models/order.rb"], body=f"Reverts acme/shop#{pr}",
                  merged_at=NIGHT_1 + timedelta(hours=30))
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=2)) == [f"PR #{pr} was merged, then reverted on 2026-11-02"]
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    assert (meta["fix_state"], meta["trust"], meta["fix_confirmed"]) == ("reverted", 0.1, False)


def test_the_offline_tracker_reports_outcomes_from_its_files(tmp_path: Path) -> None:
    knowledge, files = tmp_path / "knowledge", FileIssueTracker(tmp_path / "tracker")
    result = analysed()
    write_error_doc(result, knowledge, detected_at=NIGHT_1)
    number = files.create_issue("NoMethodError in orders#show", "body", [], result.fingerprint).number
    update_doc_metadata(knowledge, result.fingerprint, issue_number=number)
    index_file = tmp_path / "tracker" / "index.json"
    entries = json.loads(index_file.read_text())
    entries["issues"][0].update(state="closed", labels=["nightwatch", "not-a-bug"])  # as a person would edit it
    index_file.write_text(json.dumps(entries))
    with open_index(knowledge) as index:
        index.sync()
        found = outcome_changes(index, files.observe_outcomes(index.filed(), None))
        apply_changes(index, found, NIGHT_1)
    assert [c.note for c in found if c.judged] == [f"issue #{number} closed as not-a-bug"]


def doc_state(knowledge: Path) -> tuple:
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    return meta["fix_state"], meta["trust"], meta["fix_confirmed"]


def test_a_second_fix_pr_is_watched_after_the_first_was_closed(tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    _, first = night_one(knowledge, github)
    github.close_pr(first)
    sync(knowledge, github, NIGHT_1 + timedelta(days=1))
    assert doc_state(knowledge) == ("rejected", 0.2, False)
    second = github.add_pr("[NightWatch] Fix: guest orders, again", ["app/models/order.rb"], author="nightwatch-bot",
                           state="open", draft=True)
    update_doc_metadata(knowledge, analysed().fingerprint, pr_number=second)  # a later night's draft PR
    with open_index(knowledge) as index:
        index.sync()
    github.merge_pr(second, at=NIGHT_1 + timedelta(days=2))
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=3)) == [f"PR #{second} merged on 2026-11-03"]
    assert doc_state(knowledge) == ("merged", 0.9, True)


def test_an_issue_closed_after_its_fix_merged_keeps_the_merge_and_nothing_undoes_a_revert(
        tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue, pr = night_one(knowledge, github)
    github.merge_pr(pr, at=NIGHT_1 + timedelta(hours=3))
    sync(knowledge, github, NIGHT_1 + timedelta(days=1))
    github.close_issue(issue, "completed")  # a day later, by hand
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=2)) == []
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    assert doc_state(knowledge) == ("merged", 0.9, True) and meta["fix_merged_at"].startswith("2026-11-01T09:00")
    github.reopen_issue(issue)  # the merged fix did not hold
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=3)) == [f"issue #{issue} reopened{_updated(github, issue)}"]
    assert doc_state(knowledge)[:2] == ("regressed", 0.3)

    github.add_pr('Revert "[NightWatch] Fix: guest orders"', ["app/models/order.rb"], body=f"Reverts acme/shop#{pr}",
                  merged_at=NIGHT_1 + timedelta(days=3, hours=1))
    with open_index(knowledge) as index:  # the revert is looked for among PRs merged since the last sync
        index.set_meta("outcomes_synced_at", (NIGHT_1 + timedelta(days=3)).isoformat())
    update_doc_metadata(knowledge, analysed().fingerprint, pr_state="merged")
    with open_index(knowledge) as index:
        index.sync()
    sync(knowledge, github, NIGHT_1 + timedelta(days=4))
    assert doc_state(knowledge)[:2] == ("reverted", 0.1)
    github.close_issue(issue, "completed")
    sync(knowledge, github, NIGHT_1 + timedelta(days=5))
    github.reopen_issue(issue)
    sync(knowledge, github, NIGHT_1 + timedelta(days=6))
    assert doc_state(knowledge)[:2] == ("reverted", 0.1)  # "do not propose it again" stands


def test_a_regression_reopens_its_issue_once_a_night_and_the_reopening_is_no_outcome(
        tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue = fixed_and_closed(knowledge, github)
    research, tonight = research_tonight(knowledge, NIGHT_1 + timedelta(days=3))
    regression = analysed("night-4").model_copy(update={"regression": research.regression})
    first = file_issues([regression], tracker(github), "night-4", 5, 50, demo=False)
    assert [(f.action, f.reopened) for f in first] == [("commented", True)]
    update_doc_metadata(knowledge, regression.fingerprint, issue_number=issue, issue_state="open:reopened")  # step 12
    with open_index(knowledge) as index:
        index.sync()
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=4)) == []  # NightWatch's own reopening is no outcome
    github.close_issue(issue, "completed")  # someone closes it again before the night is rerun
    again = file_issues([regression], tracker(github), "night-4", 5, 50, demo=False)
    assert [(f.action, f.reopened) for f in again] == [("unchanged", False)]
    assert github.issues[issue]["state"] == "closed"
    assert sum("Regression" in c["body"] for c in github.comments[issue]) == 1


def _record_regression(knowledge: Path, result: ErrorAnalysisResult, night_end: datetime) -> list:
    """Step 12's part for regressions, as the task runs it: the rows to write, then the documents."""
    from nightwatch.knowledge_store.outcomes import apply_regressions, plan_regressions

    with open_index(knowledge) as index:
        where = index.paths_of([result.fingerprint])
        planned = plan_regressions(knowledge, [result], where, night_end)
        apply_regressions(knowledge, planned)
        index.upsert(list(where.values()))
    return [p.row for p in planned if p.row]


def test_a_regression_nightwatch_flags_is_recorded_once_and_later_nights_say_it_is_still_regressing(
        tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue = fixed_and_closed(knowledge, github)
    night_4 = NIGHT_1 + timedelta(days=3)
    research = mark_regression(*_prior_research(knowledge, night_4), night_4, LAG, night_end=night_4)
    assert research.regression.startswith("regression: seen 2026-11-04") and not research.still_regressing
    flagged = analysed("night-4").model_copy(update={"regression": research.regression})

    rows = _record_regression(knowledge, flagged, night_4)
    assert [(r.kind, r.number, r.fix_state, r.trust) for r in rows] == [("issue", issue, "regressed", 0.3)]
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    assert (meta["fix_state"], meta["trust"], meta["fix_confirmed"]) == ("regressed", 0.3, False)
    assert _record_regression(knowledge, flagged, night_4) == []  # a rerun of night 4 records nothing again
    rerun = mark_regression(*_prior_research(knowledge, night_4), night_4, LAG, night_end=night_4)
    assert rerun.regression == research.regression  # ... and still announces what night 4 announced

    for later in (night_4 + timedelta(days=1), night_4 + timedelta(days=5)):
        again = mark_regression(*_prior_research(knowledge, later), later, LAG, night_end=later)
        assert (again.regression, again.still_regressing) == ("", "still regressing since 2026-11-04")
        assert known_prior(again.prior_analyses, again.file_digests, again.regression)[0] is None  # never known
        result = analysed("night-5").model_copy(update={"still_regressing": again.still_regressing})
        report = RunReport(run_id="night-5", started_at=later, window=Window.ending_at(later, timedelta(days=1)),
                           results=[result])
        assert report.regressions == [] and "## Regressions (0 new; 1 still)" in report_markdown(report)
        assert _record_regression(knowledge, result, later) == []


def test_a_regression_a_person_flagged_by_reopening_is_announced_once_and_not_recorded_twice(
        tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue, _ = night_one(knowledge, github)
    github.close_issue(issue, "completed")
    sync(knowledge, github, NIGHT_1 + timedelta(days=1))
    github.reopen_issue(issue)
    sync(knowledge, github, NIGHT_1 + timedelta(days=2))  # the sync's `regressed` row: the person's outcome
    night_3 = NIGHT_1 + timedelta(days=2)
    research = mark_regression(*_prior_research(knowledge, night_3), night_3, LAG, night_end=night_3)
    assert research.regression == f"regression: issue #{issue} reopened{_updated(github, issue)}"
    flagged = analysed("night-3").model_copy(update={"regression": research.regression})
    assert _record_regression(knowledge, flagged, night_3) == []  # already recorded by the sync
    later = night_3 + timedelta(days=1)
    assert mark_regression(*_prior_research(knowledge, later), later, LAG, night_end=later).still_regressing == (
        "still regressing since 2026-11-03")


def test_a_wont_fix_issue_that_recurs_is_no_regression_and_stays_closed(tmp_path: Path, github: FakeGitHub) -> None:
    knowledge = tmp_path / "knowledge"
    issue, _ = night_one(knowledge, github)
    github.close_issue(issue, "not_planned")
    assert sync(knowledge, github, NIGHT_1 + timedelta(days=1))[0].startswith(f"issue #{issue} closed as not planned")
    later = NIGHT_1 + timedelta(days=3)
    research = mark_regression(*_prior_research(knowledge, later), later, LAG, night_end=later)
    assert (research.regression, research.still_regressing) == ("", "")
    result = analysed("night-4").model_copy(update={"prior_analyses": research.prior_analyses})
    file_issues([result], tracker(github), "night-4", 5, 50, demo=False)
    assert github.issues[issue]["state"] == "closed"
    said = github.comments[issue][-1]["body"]
    assert "closed as won't fix" in said and "Reopen it if the fix did not hold" not in said


def _prior_research(knowledge: Path, seen: datetime) -> tuple[ResearchContext, ErrorGroup]:
    tonight = error(last_seen=seen)
    with open_index(knowledge) as index:
        priors = search_prior_knowledge(tonight, index)
    return ResearchContext(fingerprint=tonight.fingerprint, prior_analyses=priors,
                           file_digests={"app/models/order.rb": "a" * 64}), tonight


@pytest.mark.parametrize(("entry", "said"), [
    ({"fingerprint": "f" * 16, "title": "t", "state": "open", "file": "issues/1-x.md"}, "entry 1: field 'number' is missing"),
    ({"number": 1, "fingerprint": "f" * 16, "title": "t", "state": "shut", "file": "issues/1-x.md", "labels": []},
     "entry 1 (#1): field 'state' is 'shut', expected one of closed, open"),
    ({"number": "1", "fingerprint": "f" * 16, "title": "t", "state": "open", "file": "x", "labels": []},
     "entry 1: field 'number' is str, expected int"),
    ({"number": 1, "fingerprint": "f" * 16, "title": "t", "state": "closed", "file": "x", "labels": [], "closed_at": "last tuesday"},
     "entry 1 (#1): field 'closed_at' is not an ISO 8601 time ('last tuesday')"),
    ("an issue", "entry 1 is not an object"),
    ({"number": 1, "fingerprint": "f" * 16, "title": "t", "state": "open", "file": "x"}, "entry 1 (#1): field 'labels' is missing"),
    ({"number": 1, "fingerprint": "f" * 16, "title": "t", "state": "open", "file": "x", "labels": [{"name": "wontfix"}]},
     "entry 1 (#1): field 'labels' must list label names (strings)"),
    ({"number": True, "fingerprint": "f" * 16, "title": "t", "state": "open", "file": "x", "labels": []},
     "entry 1: field 'number' is bool, expected int"),
    ({"number": 1, "fingerprint": "f" * 16, "title": "t", "state": "open", "file": "../../etc/passwd", "labels": []},
     "entry 1 (#1): field 'file' must be a path inside the tracker's folder, not '../../etc/passwd'"),
])
def test_a_hand_edited_tracker_entry_that_is_wrong_names_the_file_the_entry_and_the_field(tmp_path: Path, entry, said) -> None:
    from nightwatch.codehosts.base import CodeHostError

    index = tmp_path / "tracker" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"issues": [entry]}))
    with pytest.raises(CodeHostError) as raised:
        FileIssueTracker(tmp_path / "tracker").observe_outcomes([], None)
    assert str(raised.value) == f"{index}: {said}"


def test_a_fix_marked_merged_by_hand_without_a_date_is_a_warning_not_a_silent_non_event(tmp_path: Path) -> None:
    from nightwatch.codehosts.base import CodeHostError
    from nightwatch.outcomes import Filed, changes

    pulls = tmp_path / "tracker" / "pulls" / "index.json"
    pulls.parent.mkdir(parents=True)
    entry = {"number": 4, "fingerprint": "f" * 16, "folder": "pulls/4-ffff", "state": "merged"}
    pulls.write_text(json.dumps({"pulls": [entry]}))
    observed = FileIssueTracker(tmp_path / "tracker").observe_outcomes([], None)
    (change,) = changes([Filed(fingerprint="f" * 16, path="errors/x.md", pr_number=4)], observed)
    assert change.fix_state == "merged" and change.note == (
        "PR #4 merged (warning: no merged_at given, so the error seen again cannot count as a regression)")
    assert change.fields()["fix_merged_at"] == ""  # an older date (an issue closed earlier) never stands in for it
    pulls.write_text(json.dumps({"pulls": [entry, entry]}))
    with pytest.raises(CodeHostError, match=r"entry 2 \(#4\): field 'number' repeats entry 1"):
        FileIssueTracker(tmp_path / "tracker").observe_outcomes([], None)
    pulls.write_text(json.dumps({"pulls": [entry | {"merged_at": "2026-11-20T10:00:00"}]}))
    observed = FileIssueTracker(tmp_path / "tracker").observe_outcomes([], None)
    assert observed[("pr", 4)].at == datetime(2026, 11, 20, 10, tzinfo=timezone.utc)  # no zone: UTC


def test_a_person_reopening_an_issue_whose_regression_nightwatch_recorded_records_nothing_more(
        tmp_path: Path, github: FakeGitHub) -> None:
    """NightWatch flagged the regression (one row) but did not reopen the issue (its budget, or an attempt killed after
    step 9); a person reopens it the next day: the same regression, no second row."""
    knowledge = tmp_path / "knowledge"
    issue = fixed_and_closed(knowledge, github)
    night_4 = NIGHT_1 + timedelta(days=3)
    research = mark_regression(*_prior_research(knowledge, night_4), night_4, LAG, night_end=night_4)
    assert len(_record_regression(knowledge, analysed("night-4").model_copy(update={"regression": research.regression}),
                                  night_4)) == 1
    github.reopen_issue(issue)
    assert sync(knowledge, github, night_4 + timedelta(days=1)) == []
    meta, _ = read_doc(next((knowledge / "errors").glob("*.md")))
    assert (meta["fix_state"], meta["outcome"]) == ("regressed", research.regression)


def test_the_failed_fix_is_remembered_even_when_the_regression_night_opens_a_pr_for_another_fix(tmp_path: Path) -> None:
    from nightwatch.knowledge_store.outcomes import apply_regressions, plan_regressions

    from nightwatch.outcomes import failed_fix_fields

    knowledge = tmp_path / "knowledge"
    path = write_error_doc(analysed(), knowledge)
    update_doc_metadata(knowledge, analysed().fingerprint, path=path, pr_number=2, pr_state="merged", fix_digest="d1",
                        fix_state="merged", fix_merged_at="2026-11-01T09:00:00+00:00")
    flagged = analysed("night-4").model_copy(update={"regression": "regression: seen after PR #2 merged"})
    planned = plan_regressions(knowledge, [flagged], {flagged.fingerprint: path}, NIGHT_1 + timedelta(days=3))
    apply_regressions(knowledge, planned)  # step 12 records it before tonight's new PR (#99, digest d2) is written
    update_doc_metadata(knowledge, flagged.fingerprint, path=path, pr_number=99, fix_digest="d2")
    meta, _ = read_doc(path)
    assert list(meta["failed_fixes"]) == ["d1"] and "was merged on 2026-11-01 and the error came back" in meta["failed_fixes"]["d1"]
    never_merged = {"fix_digest": "d3", "pr_state": "open"}  # a draft nobody merged did not fail: it is not blocked
    assert failed_fix_fields(never_merged, "regressed", "issue #1 reopened") == {}
