"""Draft fix PRs: against the detected default branch, idempotent, resumable, and only ever drafts."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from pydantic import SecretStr

from nightwatch.codehosts.github import GitHubHost
from nightwatch.codehosts.local import LocalRepoHost, run_git
from nightwatch.fix import ValidatedFix, validate_fix
from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, FileChange
from nightwatch.publishers.issues import FileIssueTracker
from nightwatch.publishers.pull_requests import FilePRPublisher, GitHubPRPublisher, fix_branch, propose_fix
from tests.fakes.github import FakeGitHub
from tests.fakes.http import Reply

CONTROLLER = "class CheckoutController\n  def create\n    order.total\n  end\nend\n"


def make_result() -> ErrorAnalysisResult:
    return ErrorAnalysisResult(
        run_id="run-1",
        error=ErrorGroup(error_class="NoMethodError", transaction="Controller/checkout/create", message="undefined method `total' for nil", occurrences=42),
        analysis=Analysis(
            title="Nil order in checkout", reasoning="r", root_cause="Order.find_by returns nil.", has_fix=True, confidence="high",
            file_changes=[FileChange(path="app/controllers/checkout_controller.rb", before="order.total", after="order&.total",
                                     description="Guard the nil order")],
        ),
    )


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    gh = FakeGitHub("acme/shop", default_branch="develop")  # no "main" branch exists at all
    gh.add_file("app/controllers/checkout_controller.rb", CONTROLLER)
    with gh:
        yield gh


def clients(fake: FakeGitHub) -> tuple[GitHubHost, GitHubPRPublisher]:
    options = {"base_url": fake.url, "retries": 2, "backoff_factor": 0, "seconds_between_requests": 0}
    host = GitHubHost("acme/shop", SecretStr(fake.token), **options)
    return host, GitHubPRPublisher("acme/shop", SecretStr(fake.token), seconds_between_writes=0, **options)


def test_a_draft_pr_is_opened_against_the_detected_default_branch(fake: FakeGitHub, tmp_path: Path) -> None:
    host, publisher = clients(fake)
    result = make_result()
    fix = validate_fix(result.analysis, host)
    outcome = propose_fix(result, fix, publisher, host, "run-1", issue_number=7, report_dir=tmp_path / "report")
    assert (outcome.action, outcome.base_branch, outcome.branch) == ("created", "develop", fix_branch(result.fingerprint))
    pr = fake.pull_json(outcome.pr_number)
    assert pr["draft"] is True and pr["base"]["ref"] == "develop" and pr["head"]["ref"] == outcome.branch
    assert "nightwatch" in fake.issues[outcome.pr_number]["labels"]
    assert "Refs #7" in pr["body"] and f"nightwatch:fingerprint={result.fingerprint}" in pr["body"]
    assert fake.branches[outcome.branch]["app/controllers/checkout_controller.rb"].decode() == CONTROLLER.replace("order.total", "order&.total")
    assert fake.branches["develop"]["app/controllers/checkout_controller.rb"].decode() == CONTROLLER
    assert Path(outcome.diff_path).read_text() == fix.diff
    assert "**created**" in (tmp_path / "report/pr" / f"{result.fingerprint}.md").read_text()


def test_a_rerun_finds_the_open_pr_instead_of_opening_another(fake: FakeGitHub) -> None:
    host, publisher = clients(fake)
    result = make_result()
    fix = validate_fix(result.analysis, host)
    first = propose_fix(result, fix, publisher, host, "run-1", None, None)
    again = propose_fix(result, fix, publisher, host, "run-1", None, None)
    assert (again.action, again.pr_number, again.url) == ("exists", first.pr_number, first.url)
    assert len(fake.pulls) == 1 and len(fake.commits) == 1


def test_a_failed_attempt_resumes_on_the_same_branch_without_duplicate_commits(fake: FakeGitHub) -> None:
    host, publisher = clients(fake)
    result = make_result()
    fix = validate_fix(result.analysis, host)
    fake.fail_next("POST", fake.repo_path("/pulls"), Reply(502, {"message": "Bad Gateway"}))
    failed = propose_fix(result, fix, publisher, host, "run-1", None, None)
    assert failed.action == "skipped" and "error: GitHub API error 502" in failed.reason
    assert fix_branch(result.fingerprint) in fake.branches and fake.pulls == {}
    retried = propose_fix(result, fix, publisher, host, "run-1", None, None)
    assert retried.action == "created" and len(fake.commits) == 1


def test_repositories_without_draft_prs_get_no_pr_at_all(fake: FakeGitHub) -> None:
    fake.drafts_supported = False
    host, publisher = clients(fake)
    result = make_result()
    outcome = propose_fix(result, validate_fix(result.analysis, host), publisher, host, "run-1", None, None)
    assert outcome.action == "skipped" and "Draft pull requests are not supported" in outcome.reason
    assert fake.pulls == {}


def test_a_file_changed_since_validation_is_not_overwritten(fake: FakeGitHub) -> None:
    host, publisher = clients(fake)
    result = make_result()
    fix = validate_fix(result.analysis, host)
    fake.add_file("app/controllers/checkout_controller.rb", CONTROLLER + "# hotfix\n")
    outcome = propose_fix(result, fix, publisher, host, "run-1", None, None)
    assert outcome.action == "skipped" and "files changed since the fix was validated" in outcome.reason
    assert fake.pulls == {}


def test_a_fix_built_by_hand_still_cannot_touch_workflows(fake: FakeGitHub) -> None:
    host, publisher = clients(fake)
    fix = ValidatedFix(changes={".github/workflows/deploy.yml": "on: push\n"}, diff="")
    outcome = propose_fix(make_result(), fix, publisher, host, "run-1", None, None)
    assert outcome.action == "skipped" and outcome.reason.startswith("refused .github/workflows/deploy.yml")
    assert fake.server.calls("POST") == []


def test_file_publisher_writes_the_pr_and_is_idempotent(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "app/controllers").mkdir(parents=True)
    (repo / "app/controllers/checkout_controller.rb").write_text(CONTROLLER)
    host = _local_host_on_branch(repo, "trunk")
    publisher, result = FilePRPublisher(tmp_path / "outbox"), make_result()
    issues = FileIssueTracker(tmp_path / "outbox")  # both may share one root
    issues.create_issue("an issue", "body", [], "aaaa")
    fix = validate_fix(result.analysis, host)
    first = propose_fix(result, fix, publisher, host, "run-1", 3, tmp_path / "report")
    assert (first.action, first.pr_number, first.base_branch) == ("created", 1, "trunk")
    folder = tmp_path / "outbox/pulls" / f"1-{result.fingerprint}"
    assert (folder / "files/app/controllers/checkout_controller.rb").read_text() == fix.changes["app/controllers/checkout_controller.rb"]
    assert "- Base: `trunk`" in (folder / "PR.md").read_text()
    second = propose_fix(result, fix, publisher, host, "run-2", 3, tmp_path / "report")
    assert (second.action, second.pr_number) == ("exists", 1)
    assert issues.find_by_fingerprint("aaaa") is not None and issues.create_issue("next", "b", [], "bbbb").number == 2


def _local_host_on_branch(repo: Path, branch: str) -> LocalRepoHost:
    run_git(repo, "init", "--quiet", "-b", branch)
    return LocalRepoHost(repo)
