"""GitHub issues for analysed errors, one per fingerprint, or Markdown files when offline.

An issue carries its fingerprint as a hidden marker, so the next night finds it and comments "new
occurrence" instead of opening a duplicate; comments carry the run's marker, so rerunning a run never
comments twice. Closed issues stay closed (a person closed them) but still hear about new occurrences.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

from github.GithubObject import NotSet
from pydantic import BaseModel

from nightwatch.atomic import atomic_write_text
from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.github import GitHubRepoAdapter, github_errors
from nightwatch.models import CreatedIssueResult, ErrorAnalysisResult
from nightwatch.outcomes import REJECTING_LABELS, Filed, Observed
from nightwatch.publishers.tracker_files import ISSUE_FIELDS, PULL_FIELDS, moment, tracker_entries
from nightwatch.render.issue import (
    fingerprint_marker,
    hidden,
    issue_body,
    issue_title,
    marked_run,
    occurrence_comment,
    run_marker,
)

LABEL = "nightwatch"
MAX_ISSUES_SCANNED = 500
MAX_OUTCOMES_SCANNED = 2_000
COMMENTS_HEADING = "## Comments"


class TrackedIssue(BaseModel):
    number: int
    url: str
    state: str
    title: str
    opened_by_run: str | None = None  # the night whose marker the issue's body carries


def opened_by(body: str | None) -> str | None:
    """The night that opened an issue, from the run marker in its body (not in its comments)."""
    return marked_run((body or "").split(COMMENTS_HEADING)[0])


class IssueTracker(Protocol):
    def find_by_fingerprint(self, fingerprint: str) -> TrackedIssue | None: ...

    def create_issue(self, title: str, body: str, labels: list[str], fingerprint: str) -> TrackedIssue: ...

    def add_comment(self, number: int, body: str, marker: str) -> bool:
        """Comment unless the issue or one of its comments already carries `marker`; True if commented."""
        ...

    def open_issue_count(self, label: str) -> int: ...

    def reopen(self, number: int) -> None: ...

    def observe_outcomes(self, filed: list[Filed], since: datetime | None) -> dict[tuple[str, int | str], Observed]: ...


def hidden_form(marker: str) -> str:
    """Markers are matched only as NightWatch writes them (an HTML comment), never as bare text."""
    return marker if marker.startswith("<!--") else hidden(marker)


def carries(text: str | None, marker: str) -> bool:
    return hidden_form(marker) in (text or "")


def with_marker(body: str, marker: str) -> str:
    return body if carries(body, marker) else f"{body.rstrip()}\n\n{hidden_form(marker)}\n"


# GitHub --------------------------------------------------------------------------------------------
class GitHubIssueTracker(GitHubRepoAdapter):
    """Issues of one GitHub repository, found by the fingerprint marker among issues labelled `nightwatch`."""

    def find_by_fingerprint(self, fingerprint: str) -> TrackedIssue | None:
        marker = fingerprint_marker(fingerprint)
        with github_errors("looking for the issue of an error"):
            listing = self.repository.get_issues(state="all", labels=[self.label], sort="created", direction="desc")
            for issue in islice(listing, MAX_ISSUES_SCANNED):
                if not _is_pull(issue.html_url) and carries(issue.body, marker):
                    return TrackedIssue(number=issue.number, url=issue.html_url, state=issue.state, title=issue.title,
                                        opened_by_run=opened_by(issue.body))
        return None

    def create_issue(self, title: str, body: str, labels: list[str], fingerprint: str) -> TrackedIssue:
        names = list(dict.fromkeys([self.label, *labels]))
        with github_errors("creating an issue"):
            body = with_marker(body, fingerprint_marker(fingerprint))
            issue = self.repository.create_issue(title=title, body=body, labels=names)
        return TrackedIssue(number=issue.number, url=issue.html_url, state=issue.state, title=issue.title)

    def add_comment(self, number: int, body: str, marker: str) -> bool:
        with github_errors(f"commenting on issue #{number}", not_found=f"issue #{number} not found"):
            issue = self.repository.get_issue(number)
            if carries(issue.body, marker) or any(carries(c.body, marker) for c in issue.get_comments()):
                return False
            issue.create_comment(with_marker(body, marker))
        return True

    def reopen(self, number: int) -> None:
        with github_errors(f"reopening issue #{number}", not_found=f"issue #{number} not found"):
            self.repository.get_issue(number).edit(state="open")

    def observe_outcomes(self, filed: list[Filed], since: datetime | None) -> dict[tuple[str, int | str], Observed]:
        """The state of the issues and PRs NightWatch filed: one listing of the labelled issues (PRs included) updated
        since the last sync, the tracked PRs still open read one by one, and reverts among the PRs merged since."""
        issues = {d.issue_number for d in filed if d.issue_number is not None}
        prs = {d.pr_number for d in filed if d.pr_number is not None}
        found: dict[tuple[str, int | str], Observed] = {}
        with github_errors("reading the state of the issues and PRs NightWatch filed"):
            listing = self.repository.get_issues(state="all", labels=[self.label], sort="updated", direction="desc",
                                                 since=since if since else NotSet)
            for issue in islice(listing, MAX_OUTCOMES_SCANNED):
                if not _is_pull(issue.html_url) and issue.number in issues:
                    found[("issue", issue.number)] = issue_observed(issue)
            pending = [d.pr_number for d in filed if d.pr_number is not None and d.pr_state in (None, "open")]
            for number in pending:
                found[("pr", number)] = pr_observed(self.repository.get_pull(number))
            merged = {d.pr_number for d in filed if d.pr_state == "merged" and d.pr_number is not None} | {
                o.number for (k, _), o in found.items() if k == "pr" and o.state == "merged"}
            found |= self._reverts(merged & prs, since)
        return found

    def _reverts(self, merged: set[int], since: datetime | None) -> dict[tuple[str, int | str], Observed]:
        """PRs of `merged` that a later merged PR reverted ("Reverts owner/repo#N", as GitHub's revert button writes)."""
        found: dict[tuple[str, int | str], Observed] = {}
        if not merged:
            return found
        for pr in islice(self.repository.get_pulls(state="closed", sort="updated", direction="desc"), MAX_OUTCOMES_SCANNED):
            if since and pr.updated_at and pr.updated_at < since:
                break
            for number in reverted_numbers(pr.title, pr.body, self.repo_name) & merged if pr.merged_at else ():
                found[("pr", number)] = Observed(kind="pr", number=number, state="reverted", at=pr.merged_at, url=pr.html_url)
        return found

    def open_issue_count(self, label: str) -> int:
        with github_errors("counting open issues"):
            listing = self.repository.get_issues(state="open", labels=[label])
            return sum(1 for issue in islice(listing, MAX_ISSUES_SCANNED) if not _is_pull(issue.html_url))


def issue_observed(issue: Any) -> Observed:
    """An issue's state: closed with its reason (a rejecting label first), or open (and whether it was reopened)."""
    labels = sorted({label.name.lower() for label in issue.labels} & REJECTING_LABELS)
    if issue.state == "closed":
        reason = labels[0] if labels else (issue.state_reason or "completed")
        return Observed(kind="issue", number=issue.number, state="closed", reason=reason, at=issue.closed_at, url=issue.html_url)
    reopened = "reopened" if issue.state_reason == "reopened" else ""
    return Observed(kind="issue", number=issue.number, state="open", reason=reopened, at=issue.updated_at, url=issue.html_url)


def pr_observed(pr: Any) -> Observed:
    if pr.merged_at is not None:
        return Observed(kind="pr", number=pr.number, state="merged", at=pr.merged_at, url=pr.html_url)
    closed = pr.state == "closed"
    return Observed(kind="pr", number=pr.number, state="closed" if closed else "open", at=pr.closed_at if closed else None,
                    url=pr.html_url)


_REVERTS = re.compile(r"\bReverts\s+(?P<repo>[\w.-]+/[\w.-]+)?#(?P<number>\d+)")


def reverted_numbers(title: str | None, body: str | None, repo: str) -> set[int]:
    """The PR numbers a revert PR names: `Reverts owner/repo#12` (the form GitHub writes) or `Reverts #12`."""
    if not (title or "").startswith("Revert"):
        return set()
    return {int(m["number"]) for m in _REVERTS.finditer(body or "") if m["repo"] in (None, repo)}


def _is_pull(html_url: str | None) -> bool:
    """The issues API lists pull requests too; their web address says so without another request."""
    return "/pull/" in (html_url or "")


# files -----------------------------------------------------------------------------------------------
class FileIssueTracker:
    """The same contract over files: root/issues/<number>-<fingerprint>.md plus root/index.json."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def _index_path(self) -> Path:
        return self.root / "index.json"

    def _index(self) -> list[dict]:
        return tracker_entries(self._index_path, "issues", ISSUE_FIELDS)

    def _save(self, issues: list[dict]) -> None:
        atomic_write_text(self._index_path, json.dumps({"issues": issues}, indent=2) + "\n")

    def _tracked(self, entry: dict) -> TrackedIssue:
        path = self.root / entry["file"]
        return TrackedIssue(number=entry["number"], url=path.resolve().as_uri(), state=entry["state"], title=entry["title"],
                            opened_by_run=opened_by(path.read_text(encoding="utf-8")) if path.is_file() else None)

    def find_by_fingerprint(self, fingerprint: str) -> TrackedIssue | None:
        entry = next((e for e in self._index() if e["fingerprint"] == fingerprint), None)
        return self._tracked(entry) if entry else None

    def create_issue(self, title: str, body: str, labels: list[str], fingerprint: str) -> TrackedIssue:
        issues = self._index()
        number = max((e["number"] for e in issues), default=0) + 1
        file = f"issues/{number}-{fingerprint}.md"
        entry = {"number": number, "fingerprint": fingerprint, "title": title, "state": "open",
                 "labels": list(dict.fromkeys([LABEL, *labels])), "file": file}
        atomic_write_text(self.root / file, f"# {title}\n\n{with_marker(body, fingerprint_marker(fingerprint))}")
        self._save(issues + [entry])
        return self._tracked(entry)

    def add_comment(self, number: int, body: str, marker: str) -> bool:
        entry = next((e for e in self._index() if e["number"] == number), None)
        if entry is None:
            raise CodeHostError(f"issue #{number} not found in {self._index_path}")
        path = self.root / entry["file"]
        if not path.is_file():
            raise CodeHostError(f"{self._index_path}: issue #{number}'s file {entry['file']} does not exist")
        text = path.read_text(encoding="utf-8")
        if carries(text, marker):
            return False
        heading = "" if COMMENTS_HEADING in text else f"\n{COMMENTS_HEADING}\n"
        atomic_write_text(path, f"{text.rstrip()}\n{heading}\n---\n\n{with_marker(body, marker)}")
        return True

    def open_issue_count(self, label: str) -> int:
        return sum(1 for e in self._index() if e["state"] == "open" and label in e["labels"])

    def reopen(self, number: int) -> None:
        issues = self._index()
        for entry in issues:
            if entry["number"] == number:
                entry.update(state="open", state_reason="reopened")
        self._save(issues)

    def observe_outcomes(self, filed: list[Filed], since: datetime | None) -> dict[tuple[str, int | str], Observed]:
        """The same states from the tracker's files, as a person (or a script) left them: an issue's `state`,
        `state_reason`, `labels` and `closed_at`; a PR's `state` (open, closed, merged, reverted) and `merged_at`."""
        found = {("issue", e["number"]): _file_issue(e) for e in self._index()}
        entries = tracker_entries(self.root / "pulls" / "index.json", "pulls", PULL_FIELDS)
        found |= {("pr", e["number"]): Observed(kind="pr", number=e["number"], state=e.get("state", "open"),
                                                at=moment(e, "merged_at" if e.get("state") == "merged" else "closed_at"))
                   for e in entries}
        return found


def _file_issue(entry: dict) -> Observed:
    labels = sorted({str(label).lower() for label in entry.get("labels", [])} & REJECTING_LABELS)
    if entry.get("state") == "closed":
        reason = labels[0] if labels else str(entry.get("state_reason") or "completed")
        return Observed(kind="issue", number=entry["number"], state="closed", reason=reason, at=moment(entry, "closed_at"))
    reopened = "reopened" if entry.get("state_reason") == "reopened" else ""
    return Observed(kind="issue", number=entry["number"], state="open", reason=reopened)


# the step ------------------------------------------------------------------------------------------
@dataclass
class _IssueBudget:
    max_issues: int
    open_limit: int
    created: int = 0
    open_now: int | None = None

    def refusal(self, tracker: IssueTracker) -> str | None:
        if self.created >= self.max_issues:
            return f"limit of {self.max_issues} new issues per night reached"
        if self.open_now is None:
            self.open_now = tracker.open_issue_count(LABEL)
        if self.open_now >= self.open_limit:
            return f"WIP limit: {self.open_now} open NightWatch issues (limit {self.open_limit})"
        return None

    def spend(self) -> None:
        self.created += 1
        self.open_now = (self.open_now or 0) + 1


@dataclass
class _Filed:
    outcome: CreatedIssueResult
    text: str = ""


def file_issues(
    results: list[ErrorAnalysisResult],
    tracker: IssueTracker,
    run_id: str,
    max_issues: int,
    open_limit: int,
    demo: bool,
    report_dir: Path | None = None,
) -> list[CreatedIssueResult]:
    """Create or comment, in the given order, within the per-run and WIP limits; one failure skips one error."""
    budget = _IssueBudget(max_issues, open_limit)
    found = {r.fingerprint: _existing(tracker, r) for r in results}
    budget.created = sum(1 for issue in found.values() if isinstance(issue, TrackedIssue) and issue.opened_by_run == run_id)
    outcomes = []
    for result in results:
        try:
            issue = found[result.fingerprint]
            if isinstance(issue, CodeHostError):
                raise issue
            filed = _file_one(result, issue, tracker, run_id, demo, budget)
        except CodeHostError as exc:
            filed = _Filed(_outcome(result, "skipped", reason=f"error: {exc}"), issue_body(result, run_id, demo))
        if report_dir is not None:
            filed.outcome.outbox_path = str(_write_outbox(Path(report_dir), filed, run_id))
        outcomes.append(filed.outcome)
    return outcomes


def _existing(tracker: IssueTracker, result: ErrorAnalysisResult) -> TrackedIssue | CodeHostError | None:
    try:
        return tracker.find_by_fingerprint(result.fingerprint)
    except CodeHostError as exc:  # costs this error its issue, not the others theirs
        return exc


def _file_one(result: ErrorAnalysisResult, existing: TrackedIssue | None, tracker: IssueTracker, run_id: str, demo: bool,
              budget: _IssueBudget) -> _Filed:
    if existing and existing.opened_by_run == run_id:  # an earlier attempt of this night opened it (counted in the cap)
        outcome = _outcome(result, "unchanged", existing, f"opened by this night ({run_id}) already")
        outcome.opened_by_night = True
        return _Filed(outcome, issue_body(result, run_id, demo))
    if existing:
        comment = occurrence_comment(result, run_id, issue_state=existing.state)
        added = tracker.add_comment(existing.number, comment, run_marker(run_id))
        reopen = added and bool(result.regression) and existing.state == "closed"
        if reopen:  # a regression is not done with: the fix did not hold (once a night: a rerun finds its comment)
            tracker.reopen(existing.number)
        action = "commented" if added else "unchanged"
        reason = "" if added else f"run {run_id} already reported this occurrence"
        outcome = _outcome(result, action, existing, reason)
        outcome.reopened = reopen
        return _Filed(outcome, comment)
    body = issue_body(result, run_id, demo)
    if result.failed:
        return _Filed(_outcome(result, "skipped", reason=f"analysis failed: {result.failure}"), body)
    refusal = budget.refusal(tracker)
    if refusal:
        return _Filed(_outcome(result, "skipped", reason=refusal), body)
    issue = tracker.create_issue(issue_title(result), body, _labels(result, demo), result.fingerprint)
    budget.spend()
    outcome = _outcome(result, "created", issue)
    outcome.opened_by_night = True
    return _Filed(outcome, body)


def _labels(result: ErrorAnalysisResult, demo: bool) -> list[str]:
    labels = [LABEL]
    if result.verdict:
        labels.append(f"severity:{result.verdict.severity}")
    if demo:
        labels.append("nightwatch-demo")
    return labels


def _outcome(result: ErrorAnalysisResult, action: str, issue: TrackedIssue | None = None, reason: str = "") -> CreatedIssueResult:
    return CreatedIssueResult(
        fingerprint=result.fingerprint, action=action,
        issue_number=issue.number if issue else None, url=issue.url if issue else "",
        title=issue.title if issue else issue_title(result), reason=reason,
    )


def _write_outbox(report_dir: Path, filed: _Filed, run_id: str) -> Path:
    o = filed.outcome
    where = f"#{o.issue_number} {o.url}" if o.issue_number else "no issue"
    lines = [f"# {o.title}", "", f"- Action: **{o.action}** ({where})", f"- Run: `{run_id}`"]
    if o.reason:
        lines.append(f"- Reason: {o.reason}")
    path = report_dir / "issues" / f"{o.fingerprint}.md"
    atomic_write_text(path, "\n".join(lines) + "\n\n---\n\n" + filed.text)
    return path
