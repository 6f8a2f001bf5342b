"""GitHub issues for analysed errors, one per fingerprint, or Markdown files when offline.

An issue carries its fingerprint as a hidden marker, so the next night finds it and comments "new
occurrence" instead of opening a duplicate; comments carry the run's marker, so rerunning a run never
comments twice. Closed issues stay closed (a person closed them) but still hear about new occurrences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from nightwatch.atomic import atomic_write_text
from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.github import GitHubRepoAdapter, github_errors
from nightwatch.models import CreatedIssueResult, ErrorAnalysisResult
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

    def open_issue_count(self, label: str) -> int:
        with github_errors("counting open issues"):
            listing = self.repository.get_issues(state="open", labels=[label])
            return sum(1 for issue in islice(listing, MAX_ISSUES_SCANNED) if not _is_pull(issue.html_url))


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
        if not self._index_path.exists():
            return []
        try:
            return json.loads(self._index_path.read_text(encoding="utf-8"))["issues"]
        except (ValueError, KeyError) as exc:
            raise CodeHostError(f"issue index is damaged: {self._index_path} ({exc}); fix or remove it") from exc

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
        entry = {"number": number, "fingerprint": fingerprint, "title": title, "state": "open",
                 "labels": list(dict.fromkeys([LABEL, *labels])), "file": f"issues/{number}-{fingerprint}.md"}
        atomic_write_text(self.root / entry["file"], f"# {title}\n\n{with_marker(body, fingerprint_marker(fingerprint))}")
        self._save(issues + [entry])
        return self._tracked(entry)

    def add_comment(self, number: int, body: str, marker: str) -> bool:
        entry = next((e for e in self._index() if e["number"] == number), None)
        if entry is None:
            raise CodeHostError(f"issue #{number} not found in {self._index_path}")
        path = self.root / entry["file"]
        text = path.read_text(encoding="utf-8")
        if carries(text, marker):
            return False
        heading = "" if COMMENTS_HEADING in text else f"\n{COMMENTS_HEADING}\n"
        atomic_write_text(path, f"{text.rstrip()}\n{heading}\n---\n\n{with_marker(body, marker)}")
        return True

    def open_issue_count(self, label: str) -> int:
        return sum(1 for e in self._index() if e["state"] == "open" and label in e["labels"])


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
        action = "commented" if added else "unchanged"
        reason = "" if added else f"run {run_id} already reported this occurrence"
        return _Filed(_outcome(result, action, existing, reason), comment)
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
        fingerprint=result.fingerprint, action=action,  # type: ignore[arg-type]
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
