"""At most one draft pull request per night, carrying a validated fix; files instead when offline.

The PR targets the repository's real default branch (asked, never assumed to be `main`), is always a
draft, and is idempotent: its branch is named after the fingerprint and its body carries the
fingerprint marker, so a rerun finds the open PR instead of opening another.
"""

from __future__ import annotations

import contextlib
import json
from itertools import islice
from pathlib import Path
from typing import Protocol

from github.GithubException import UnknownObjectException

from nightwatch.atomic import atomic_write_text
from nightwatch.codehosts.base import CodeHost, CodeHostError, safe_relative_path
from nightwatch.codehosts.github import GitHubError, GitHubRepoAdapter, github_errors
from nightwatch.fix import ValidatedFix, refused_reason
from nightwatch.models import CreatedPRResult, ErrorAnalysisResult
from nightwatch.publishers.issues import carries, with_marker
from nightwatch.publishers.tracker_files import PULL_FIELDS, tracker_entries
from nightwatch.render.issue import fingerprint_marker, pr_body, pr_title

MAX_PULLS_SCANNED = 200


def fix_branch(fingerprint: str) -> str:
    return f"nightwatch/fix-{fingerprint}"


class PullRequestPublisher(Protocol):
    def find_open_pr(self, fingerprint: str) -> tuple[int, str] | None: ...

    def create_draft_pr(
        self, title: str, body: str, branch: str, base: str | None, changes: dict[str, str], fingerprint: str
    ) -> tuple[int, str]: ...


# GitHub ---------------------------------------------------------------------------------------------
class GitHubPRPublisher(GitHubRepoAdapter):
    """Branch from the base's head, one commit per file, a draft PR labelled `nightwatch`."""

    def find_open_pr(self, fingerprint: str) -> tuple[int, str] | None:
        marker, branch = fingerprint_marker(fingerprint), fix_branch(fingerprint)
        with github_errors("looking for an open fix pull request"):
            for pr in islice(self.repository.get_pulls(state="open", sort="created", direction="desc"), MAX_PULLS_SCANNED):
                if pr.head.ref == branch or carries(pr.body, marker):
                    return pr.number, pr.html_url
        return None

    def create_draft_pr(
        self, title: str, body: str, branch: str, base: str | None, changes: dict[str, str], fingerprint: str
    ) -> tuple[int, str]:
        try:
            with github_errors(f"opening a draft pull request from {branch}"):
                base_name = base or self.repository.default_branch
                self._ensure_branch(branch, base_name)
                for path, content in sorted(changes.items()):
                    self._commit_file(branch, path, content, title)
                pr = self.repository.create_pull(
                    base=base_name, head=branch, title=title, body=with_marker(body, fingerprint_marker(fingerprint)), draft=True
                )
        except GitHubError as exc:
            found = self.find_open_pr(fingerprint) if exc.status == 422 and "already exists" in str(exc) else None
            if found:
                return found
            raise
        with contextlib.suppress(GitHubError), github_errors("labelling the pull request"):
            pr.add_to_labels(self.label)  # cosmetic: a missing label never fails the fix
        return pr.number, pr.html_url

    def _ensure_branch(self, branch: str, base: str) -> None:
        """Create the fix branch at the base's head, unless an earlier attempt already did."""
        try:
            self.repository.get_git_ref(f"heads/{branch}")  # raises when the branch does not exist yet
            return
        except UnknownObjectException:
            pass
        sha = self.repository.get_git_ref(f"heads/{base}").object.sha
        self.repository.create_git_ref(f"refs/heads/{branch}", sha)

    def _commit_file(self, branch: str, path: str, content: str, message: str) -> None:
        try:
            existing = self.repository.get_contents(path, ref=branch)
        except UnknownObjectException:
            existing = None
        if isinstance(existing, list):
            raise GitHubError(f"{path} is a directory on {branch}; the fix cannot write it")
        if existing is None:
            self.repository.create_file(path, message, content, branch=branch)
        elif existing.decoded_content != content.encode("utf-8"):  # equal: committed by an earlier attempt
            self.repository.update_file(path, message, content, existing.sha, branch=branch)


# files ----------------------------------------------------------------------------------------------
class FilePRPublisher:
    """The same contract over files: root/pulls/<number>-<fingerprint>/{PR.md,files/} plus root/pulls/index.json.

    The index lives under pulls/ so the file issue tracker can share the same root (its index is root/index.json).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._index_path = self.root / "pulls" / "index.json"

    def _index(self) -> list[dict]:
        return tracker_entries(self._index_path, "pulls", PULL_FIELDS)

    def _url(self, entry: dict) -> str:
        return (self.root / entry["folder"] / "PR.md").resolve().as_uri()

    def find_open_pr(self, fingerprint: str) -> tuple[int, str] | None:
        entry = next((e for e in self._index() if e["fingerprint"] == fingerprint and e["state"] == "open"), None)
        return (entry["number"], self._url(entry)) if entry else None

    def create_draft_pr(
        self, title: str, body: str, branch: str, base: str | None, changes: dict[str, str], fingerprint: str
    ) -> tuple[int, str]:
        pulls = self._index()
        number = max((e["number"] for e in pulls), default=0) + 1
        folder_name = f"pulls/{number}-{fingerprint}"
        entry = {"number": number, "fingerprint": fingerprint, "title": title, "branch": branch, "base": base,
                 "state": "open", "draft": True, "folder": folder_name, "files": sorted(changes)}
        folder = self.root / folder_name
        for path, content in changes.items():
            atomic_write_text(folder / "files" / safe_relative_path(path), content)
        header = f"# {title}\n\n- Draft: yes\n- Branch: `{branch}`\n- Base: `{base}`\n\n"
        atomic_write_text(folder / "PR.md", header + with_marker(body, fingerprint_marker(fingerprint)))
        atomic_write_text(self._index_path, json.dumps({"pulls": pulls + [entry]}, indent=2) + "\n")
        return number, self._url(entry)


# the step ---------------------------------------------------------------------------------------------
def propose_fix(
    result: ErrorAnalysisResult,
    fix: ValidatedFix,
    publisher: PullRequestPublisher,
    host: CodeHost,
    run_id: str,
    issue_number: int | None,
    report_dir: Path | None,
) -> CreatedPRResult:
    """Open (or find) the draft PR for one validated fix; the diff is written to report_dir either way."""
    fp, branch = result.fingerprint, fix_branch(result.fingerprint)
    title, body = pr_title(result), pr_body(result, fix, issue_number)
    diff_path = None
    if report_dir is not None:
        diff_path = Path(report_dir) / "pr" / f"{fp}.diff"
        atomic_write_text(diff_path, fix.diff)
    try:
        outcome = _publish(result, fix, publisher, host, title, body)
    except CodeHostError as exc:
        outcome = CreatedPRResult(fingerprint=fp, action="skipped", branch=branch, reason=f"error: {exc}")
    outcome.diff_path = str(diff_path) if diff_path else None
    if report_dir is not None:
        _write_summary(Path(report_dir) / "pr" / f"{fp}.md", outcome, title, body, run_id)
    return outcome


def _publish(
    result: ErrorAnalysisResult, fix: ValidatedFix, publisher: PullRequestPublisher, host: CodeHost, title: str, body: str
) -> CreatedPRResult:
    fp, branch = result.fingerprint, fix_branch(result.fingerprint)
    refused = next((f"{p}: {refused_reason(p)}" for p in fix.changes if refused_reason(p)), None)
    if refused:
        return CreatedPRResult(fingerprint=fp, action="skipped", branch=branch, reason=f"refused {refused}")
    base = host.default_branch()
    existing = publisher.find_open_pr(fp)
    if existing:
        number, url = existing
        return CreatedPRResult(fingerprint=fp, action="exists", pr_number=number, url=url, branch=branch, base_branch=base)
    stale = _changed_since_validation(fix, host)
    if stale:
        return CreatedPRResult(fingerprint=fp, action="skipped", branch=branch, base_branch=base,
                               reason=f"files changed since the fix was validated: {', '.join(stale)}")
    number, url = publisher.create_draft_pr(title, body, branch, base, fix.changes, fp)
    return CreatedPRResult(fingerprint=fp, action="created", pr_number=number, url=url, branch=branch, base_branch=base)


def _changed_since_validation(fix: ValidatedFix, host: CodeHost) -> list[str]:
    """A fix is only committed over the exact text it was validated against: the branch as it is now, not as the night
    first read it."""
    return [path for path, digest in sorted(fix.base_digests.items()) if host.current_digest(path) != digest]


def _write_summary(path: Path, outcome: CreatedPRResult, title: str, body: str, run_id: str) -> None:
    where = f"#{outcome.pr_number} {outcome.url}" if outcome.pr_number else "no pull request"
    lines = [f"# {title}", "", f"- Action: **{outcome.action}** ({where})", f"- Branch: `{outcome.branch}`",
             f"- Base: `{outcome.base_branch or '?'}`", f"- Run: `{run_id}`"]
    if outcome.reason:
        lines.append(f"- Reason: {outcome.reason}")
    atomic_write_text(path, "\n".join(lines) + "\n\n---\n\n" + body)
