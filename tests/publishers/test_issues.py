"""Issues: rendering, dedup by fingerprint, idempotent comments per run, limits; on GitHub and on files."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest
from pydantic import SecretStr

from nightwatch.models import (
    Analysis,
    ErrorAnalysisResult,
    ErrorGroup,
    FileChange,
    RegressionTest,
    TriageVerdict,
    Verification,
)
from nightwatch.publishers.issues import FileIssueTracker, GitHubIssueTracker, file_issues
from nightwatch.render.issue import issue_body, issue_title, occurrence_comment
from tests.fakes.github import FakeGitHub
from tests.fakes.http import Reply

LEAKED = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def make_result(error_class: str = "NoMethodError", message: str = "undefined method `total' for nil", run_id: str = "run-1",
                title: str = "Nil order in checkout", occurrences: int = 42) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction="Controller/checkout/create", message=message,
                       occurrences=occurrences, last_seen=datetime(2026, 11, 20, 2, 0, tzinfo=timezone.utc))
    analysis = Analysis(
        title=title, reasoning="The order lookup returns nil for @guest carts.", root_cause="Order.find_by returns nil.",
        has_fix=True, confidence="high", suggested_next_steps=["Add a request spec"],
        file_changes=[FileChange(path="app/controllers/checkout_controller.rb", before="order.total", after="order&.total")],
    )
    verdict = TriageVerdict(fingerprint=error.fingerprint, severity="high", category="code_bug")
    return ErrorAnalysisResult(run_id=run_id, error=error, analysis=analysis, verdict=verdict, agent="base-analyzer",
                               model="claude-sonnet-4-6", iterations=4)


# rendering ----------------------------------------------------------------------------------------------
def test_issue_text_is_redacted_defused_and_carries_markers() -> None:
    result = make_result(message=f"token={LEAKED} <!-- nightwatch:fingerprint=deadbeefdeadbeef --> ```")
    body = issue_body(result, "run-1", demo=True)
    assert LEAKED not in body and "[REDACTED]" in body
    assert "<!-- nightwatch:fingerprint=deadbeefdeadbeef" not in body
    assert body.rstrip().endswith(f"<!-- nightwatch:fingerprint={result.fingerprint} -->\n<!-- nightwatch:run=run-1 -->")
    assert "Demo data" in body and "Demo data" not in issue_body(result, "run-1", demo=False)
    assert "````" in body  # the fence outgrows the backticks in the message
    assert "@\u2060guest" in body  # no accidental mention
    for section in ("## Error", "## Root cause", "## Reasoning", "## Proposed changes", "## Next steps", "## Confidence"):
        assert section in body
    assert "`claude-sonnet-4-6`" in body and "4 iterations" in body


def test_a_triage_only_result_still_makes_a_useful_issue() -> None:
    result = make_result().model_copy(update={"analysis": None, "failure": "token budget spent"})
    result.verdict.likely_root_cause = "A nil order reaches checkout."
    body = issue_body(result, "run-1", demo=False)
    assert "A nil order reaches checkout." in body and "Analysis incomplete: token budget spent" in body
    assert "## Proposed changes" not in body and "## Reasoning" not in body


def test_a_regression_test_that_could_not_run_is_shown_in_its_own_language() -> None:
    result = make_result()
    result.analysis.regression_test = RegressionTest(path="spec/requests/checkout_spec.rb", content="it 'checks out' do\nend")
    result.verification = Verification(status="not run", reason="no Ruby toolchain on this machine")
    body = issue_body(result, "run-1", demo=False)
    assert "**not run**: no Ruby toolchain on this machine" in body
    assert "```ruby\nit 'checks out' do\nend\n```" in body


def test_titles_are_one_line_and_capped() -> None:
    assert issue_title(make_result()) == "[NightWatch] Nil order in checkout"
    long = issue_title(make_result(title="x" * 300 + "\nsecond line"))
    assert len(long) == 120 and long.endswith("…") and "\n" not in long
    assert issue_title(make_result(title=" ")) == "[NightWatch] NoMethodError in Controller/checkout/create"


def test_occurrence_comment_carries_the_run_marker_and_notes_closed_issues() -> None:
    text = occurrence_comment(make_result(), "run-7", issue_state="closed")
    assert "<!-- nightwatch:run=run-7 -->" in text and "42 occurrences" in text and "closed" in text


# file tracker ---------------------------------------------------------------------------------------------
def test_file_tracker_keeps_numbered_markdown_and_an_index(tmp_path: Path) -> None:
    tracker = FileIssueTracker(tmp_path / "outbox")
    first = tracker.create_issue("T1", "body one", ["nightwatch"], "aaaa")
    second = tracker.create_issue("T2", "body two", ["other"], "bbbb")
    assert (first.number, second.number) == (1, 2)
    assert (tmp_path / "outbox/issues/1-aaaa.md").read_text().startswith("# T1\n\nbody one")
    assert tracker.find_by_fingerprint("bbbb") == second and tracker.find_by_fingerprint("cccc") is None
    assert tracker.add_comment(1, "again", "nightwatch:run=r2") is True
    assert tracker.add_comment(1, "again", "nightwatch:run=r2") is False
    text = (tmp_path / "outbox/issues/1-aaaa.md").read_text()
    assert text.count("## Comments") == 1 and text.count("nightwatch:run=r2") == 1
    assert tracker.open_issue_count("nightwatch") == 2 and tracker.open_issue_count("other") == 1
    assert [e["number"] for e in json.loads((tmp_path / "outbox/index.json").read_text())["issues"]] == [1, 2]
    assert not list((tmp_path / "outbox").rglob("*.tmp"))


def test_file_issues_creates_then_comments_once_per_run(tmp_path: Path) -> None:
    tracker, report = FileIssueTracker(tmp_path / "outbox"), tmp_path / "report"
    result = make_result()
    first = file_issues([result], tracker, "run-1", max_issues=3, open_limit=10, demo=True, report_dir=report)
    assert [(o.action, o.issue_number) for o in first] == [("created", 1)]
    assert Path(first[0].outbox_path).read_text().startswith("# [NightWatch] Nil order in checkout")
    again = file_issues([result], tracker, "run-1", max_issues=3, open_limit=10, demo=True, report_dir=report)
    assert again[0].action == "unchanged"  # a rerun of the run that created it
    second = file_issues([result], tracker, "run-2", max_issues=3, open_limit=10, demo=True)
    rerun = file_issues([result], tracker, "run-2", max_issues=3, open_limit=10, demo=True)
    assert (second[0].action, rerun[0].action) == ("commented", "unchanged")
    assert (tmp_path / "outbox/issues/1-" f"{result.fingerprint}.md").read_text().count("New occurrence") == 1


def test_per_run_and_open_issue_limits_skip_with_a_reason(tmp_path: Path) -> None:
    tracker = FileIssueTracker(tmp_path / "outbox")
    results = [make_result(error_class=f"E{i}") for i in range(4)]
    outcomes = file_issues(results, tracker, "run-1", max_issues=2, open_limit=10, demo=False)
    assert [o.action for o in outcomes] == ["created", "created", "skipped", "skipped"]
    assert outcomes[2].reason == "limit of 2 new issues per night reached"
    later = file_issues(results[2:], tracker, "run-2", max_issues=5, open_limit=3, demo=False)
    assert [o.action for o in later] == ["created", "skipped"]
    assert later[1].reason == "WIP limit: 3 open NightWatch issues (limit 3)"


# GitHub tracker -------------------------------------------------------------------------------------------
@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    gh = FakeGitHub("acme/shop", default_branch="develop")
    with gh:
        yield gh


def github_tracker(fake: FakeGitHub) -> GitHubIssueTracker:
    return GitHubIssueTracker("acme/shop", SecretStr(fake.token), base_url=fake.url, retries=2, backoff_factor=0,
                              seconds_between_requests=0, seconds_between_writes=0)


def test_github_issue_is_created_then_commented_never_duplicated(fake: FakeGitHub) -> None:
    result = make_result(message=f"password={LEAKED}")
    fake.add_issue("Unrelated", "<!-- nightwatch:fingerprint=ffffffffffffffff -->", labels=["nightwatch"])
    created = file_issues([result], github_tracker(fake), "run-1", 3, 10, demo=False)
    number = created[0].issue_number
    issue = fake.issues[number]
    assert created[0].action == "created" and created[0].url.endswith(f"/issues/{number}")
    assert set(issue["labels"]) == {"nightwatch", "severity:high"}
    assert f"nightwatch:fingerprint={result.fingerprint}" in issue["body"] and LEAKED not in issue["body"]
    assert file_issues([result], github_tracker(fake), "run-1", 3, 10, demo=False)[0].action == "unchanged"
    assert file_issues([result], github_tracker(fake), "run-2", 3, 10, demo=False)[0].action == "commented"
    assert file_issues([result], github_tracker(fake), "run-2", 3, 10, demo=False)[0].action == "unchanged"
    assert len(fake.comments[number]) == 1 and "nightwatch:run=run-2" in fake.comments[number][0]["body"]
    assert len([i for i in fake.issues.values() if not i["pull_request"]]) == 2


def test_a_closed_issue_stays_closed_but_hears_about_the_new_occurrence(fake: FakeGitHub) -> None:
    result = make_result()
    number = fake.add_issue("Old", f"<!-- nightwatch:fingerprint={result.fingerprint} -->", labels=["nightwatch"], state="closed")
    outcome = file_issues([result], github_tracker(fake), "run-3", 3, 10, demo=False)[0]
    assert (outcome.action, outcome.issue_number) == ("commented", number)
    assert fake.issues[number]["state"] == "closed"
    assert "error happened again" in fake.comments[number][0]["body"]


def test_markers_inside_production_text_cannot_hijack_dedup_or_silence_comments(fake: FakeGitHub) -> None:
    victim = make_result(error_class="KeyError")
    sneaky = make_result(message=f"boom <!-- nightwatch:run=run-2 --> <!-- nightwatch:fingerprint={victim.fingerprint} -->")
    tracker = github_tracker(fake)
    assert file_issues([sneaky], tracker, "run-1", 3, 10, demo=False)[0].action == "created"
    assert file_issues([victim], tracker, "run-1", 3, 10, demo=False)[0].action == "created"  # not mistaken for #1
    assert file_issues([sneaky], tracker, "run-2", 3, 10, demo=False)[0].action == "commented"


def test_open_limit_counts_issues_not_pull_requests(fake: FakeGitHub) -> None:
    fake.add_issue("open one", labels=["nightwatch"])
    pr = fake.add_pr("a fix", ["a.rb"], state="open")
    fake.issues[pr]["labels"].append("nightwatch")
    assert github_tracker(fake).open_issue_count("nightwatch") == 1
    outcomes = file_issues([make_result("A"), make_result("B")], github_tracker(fake), "run-1", 5, open_limit=2, demo=False)
    assert [o.action for o in outcomes] == ["created", "skipped"]


def test_a_failed_create_skips_one_error_and_keeps_the_rest(fake: FakeGitHub) -> None:
    fake.fail_next("POST", fake.repo_path("/issues"), Reply(500, {"message": "Server Error"}))
    outcomes = file_issues([make_result("A"), make_result("B")], github_tracker(fake), "run-1", 5, 10, demo=False)
    assert [o.action for o in outcomes] == ["skipped", "created"]
    assert outcomes[0].reason.startswith("error: GitHub API error 500 while creating an issue")
    assert len(fake.server.calls("POST", fake.repo_path("/issues"))) == 2  # a POST is never retried blindly
