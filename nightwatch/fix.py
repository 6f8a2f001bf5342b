"""Turn a model's proposed fix into exact new file contents, or refuse it with the reason.

A fix is a list of FileChange edits: replace an excerpt (`before`) that must occur exactly once in the
current file, or create a new file. Anything ambiguous is refused rather than guessed, and a fix never
deletes files or touches CI configuration, workflows or secrets, whatever the model proposed.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import os

from pydantic import BaseModel, Field

from nightwatch.codehosts.base import CodeHost, CodeHostError, digest_bytes, safe_relative_path
from nightwatch.models import CONFIDENCE_RANK, Analysis, ErrorAnalysisResult, FileChange, RegressionTest

MAX_FILES_PER_FIX = 10
# Every CI system's folders, and folders whose files run with the repository's privileges.
_REFUSED_DIRS = {".github", ".gitlab", ".gitea", ".forgejo", ".woodpecker", ".circleci", ".buildkite", ".tekton", ".ci",
                 ".husky", ".devcontainer", ".semaphore", ".harness", ".teamcity", ".azure-pipelines",
                 ".aws", ".ssh", ".gnupg", "migrate", "migrations", "alembic"}
_REFUSED_NAMES = [
    # CI and build systems
    ".gitlab-ci.yml", "jenkinsfile", "jenkinsfile.*", "*.jenkinsfile", ".travis.yml", "azure-pipelines.yml", "azure-pipelines.yaml",
    "bitbucket-pipelines.yml", ".drone.yml", ".drone.yaml", "appveyor.yml", ".appveyor.yml", "buildkite*", ".woodpecker.yml",
    ".woodpecker.yaml", "cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json", "codemagic.yaml", "bitrise.yml", "wercker.yml",
    ".cirrus.yml", "tekton*.yaml", "taskcluster.yml", ".taskcluster.yml", "buildspec.yml", "makefile", "rakefile",
    # containers and environment
    "dockerfile", "dockerfile.*", "*.dockerfile", "containerfile", "docker-compose*.yml", "docker-compose*.yaml",
    "compose.yml", "compose.yaml", ".dockerignore", ".envrc", ".gitmodules", ".gitattributes", ".pre-commit-config.yaml",
    # secrets and credentials
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "id_rsa*", "id_dsa*",
    "id_ecdsa*", "id_ed25519*", "*.ppk", "credentials*", "secrets*", "*.secret", "*.secrets", ".netrc", ".npmrc",
    ".pypirc", ".git-credentials", "master.key", "*.tfvars", "*.tfstate", "htpasswd", ".htpasswd",
]
_REFUSED_PATHS = ["config/master.key", "config/credentials*", "config/database.yml", "config/secrets.yml",
                  "db/schema.rb", "db/structure.sql", "*/migrations/*", "db/migrate/*"]


class FixRejected(Exception):
    """The proposed fix cannot be applied safely; the message names the file and the reason."""


class ValidatedFix(BaseModel):
    """The exact contents a draft PR would commit, and its unified diff."""

    changes: dict[str, str]  # path -> new full content
    diff: str
    base_digests: dict[str, str | None] = Field(default_factory=dict)  # path -> sha256 validated against (None: new)


def fix_digest(changes: list[FileChange]) -> str:
    """What a fix changes, as one digest: the same edits (whitespace at their ends aside) give the same digest whatever
    the analysis around them says, so a fix that was merged and failed is recognised when it is proposed again."""
    edits = sorted((c.path, c.action, (c.before or "").strip(), (c.after or "").strip()) for c in changes)
    return hashlib.sha256(repr(edits).encode("utf-8")).hexdigest()[:16]


def refused_reason(path: str) -> str | None:
    """Why a fix may never write this path (CI, workflows, secrets), or None if it may."""
    lowered = path.lower()
    parts = lowered.split("/")
    name = parts[-1]
    if any(part in _REFUSED_DIRS for part in parts[:-1]):
        return "CI configuration and workflows are never changed by a fix"
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in _REFUSED_NAMES) or any(
        fnmatch.fnmatchcase(lowered, pattern) for pattern in _REFUSED_PATHS
    ):
        return "CI configuration and secrets are never changed by a fix"
    return None


def confidence_gate(analysis: Analysis, minimum: str) -> str | None:
    """Why a fix of this confidence opens no PR, or None when it clears the minimum."""
    if CONFIDENCE_RANK[analysis.confidence] >= CONFIDENCE_RANK.get(minimum, CONFIDENCE_RANK["high"]):
        return None
    return (f"the analysis is {analysis.confidence} confidence; a draft PR needs {minimum} or above "
            "(NIGHTWATCH_PR_MIN_CONFIDENCE); the proposed change stays in the issue")


def validate_fix(analysis: Analysis, host: CodeHost) -> ValidatedFix:
    """Apply the analysis' edits to the host's current files in memory; refuse anything unsafe or ambiguous."""
    originals, changed = _edited(analysis, host)
    return ValidatedFix(
        changes=changed,
        diff="".join(unified_diff(p, originals[p], changed[p]) for p in sorted(changed)),
        base_digests={p: digest_bytes(original.encode()) if (original := originals[p]) is not None else None for p in changed},
    )


def _edited(analysis: Analysis, host: CodeHost) -> tuple[dict[str, str | None], dict[str, str]]:
    """(each edited file as it is now, None where it is new; the files the edits change, as they leave them)."""
    if not analysis.has_fix or not analysis.file_changes:
        raise FixRejected("the analysis proposes no fix (has_fix is false or there are no file changes)")
    if len(analysis.file_changes) > MAX_FILES_PER_FIX:
        raise FixRejected(f"the fix edits {len(analysis.file_changes)} files; at most {MAX_FILES_PER_FIX} are allowed")
    originals: dict[str, str | None] = {}
    updated: dict[str, str] = {}
    for change in analysis.file_changes:
        path = checked_path(change.path, host)
        if path not in originals:
            originals[path] = _current_text(host, path)
        current = updated.get(path, originals[path])
        updated[path] = _apply(change, path, current)
    changed = {p: text for p, text in updated.items() if text != originals[p]}
    if not changed:
        raise FixRejected("the fix changes nothing: every `after` equals its `before`")
    return originals, changed


def lines_it_changes(analysis: Analysis, host: CodeHost, limit: int = 40) -> list[tuple[str, int]]:
    """(file, line) of the current files that the analysis' fix removes or changes (for a pure insertion, the line it
    goes after), as a blame of the lines a fix touches asks for them; none where the fix is not a valid one."""
    try:
        originals, changed = _edited(analysis, host)
    except (FixRejected, CodeHostError):
        return []
    out: list[tuple[str, int]] = []
    for path in sorted(changed):
        old = originals[path]
        if old is not None:
            out.extend((path, n) for n in changed_lines(old, changed[path]))
    return out[:limit]


def changed_lines(old: str, new: str) -> list[int]:
    """1-based lines of `old` that `new` removes or replaces; for text only inserted, the line before it (or 1)."""
    lines: list[int] = []
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines.extend(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            lines.append(max(i1, 1))
    return list(dict.fromkeys(lines))


def with_regression_test(fix: ValidatedFix, test: RegressionTest, host: CodeHost) -> ValidatedFix:
    """The fix with its regression test as part of the change (a new file, or the test file as the test left it)."""
    path = checked_path(test.path, host)
    if path in fix.changes:
        raise FixRejected(f"the regression test {path} is also a file the fix edits")
    original = _current_text(host, path)
    if original == test.content:
        return fix
    return ValidatedFix(changes={**fix.changes, path: test.content}, diff=fix.diff + unified_diff(path, original, test.content),
                        base_digests={**fix.base_digests, path: digest_bytes(original.encode()) if original is not None else None})


def checked_path(raw: str, host: CodeHost | None = None) -> str:
    """The path as named and as it resolves (a symlinked folder such as `ci -> .github/workflows` is
    judged by where it leads): both must be allowed."""
    try:
        path = safe_relative_path(raw)
    except CodeHostError as exc:
        raise FixRejected(f"refused {raw!r}: {exc}") from exc
    for candidate in dict.fromkeys([path, resolved_path(host, path)]):
        if candidate is None:
            raise FixRejected(f"refused {path}: it resolves outside the repository")
        reason = refused_reason(candidate)
        if reason:
            where = "" if candidate == path else f" (it resolves to {candidate})"
            raise FixRejected(f"refused {path}{where}: {reason}")
    return path


def resolved_path(host: CodeHost | None, path: str) -> str | None:
    """Where a repository path leads once symlinks are followed (repository-relative), None when it leaves the
    repository. A host without a local checkout (the GitHub API) is taken at its word."""
    root = getattr(host, "root", None)
    if root is None:
        return path
    real = os.path.realpath(os.path.join(root, path))
    base = os.path.realpath(root)
    if real != base and not real.startswith(base + os.sep):
        return None
    return os.path.relpath(real, base).replace(os.sep, "/")


def _current_text(host: CodeHost, path: str) -> str | None:
    """The file's text now, or None when it does not exist."""
    if host.file_digest(path) is None:
        return None
    try:
        return host.read_text(path)
    except CodeHostError as exc:
        raise FixRejected(f"cannot read {path}: {exc}") from exc


def _apply(change: FileChange, path: str, current: str | None) -> str:
    if change.action == "delete":
        raise FixRejected(f"refused {path}: a fix never deletes files")
    if change.action == "create":
        if current is not None:
            raise FixRejected(f"cannot create {path}: it already exists (propose a modify with an exact excerpt)")
        if not change.after:
            raise FixRejected(f"cannot create {path}: no content given in `after`")
        return change.after
    if current is None:
        raise FixRejected(f"cannot modify {path}: no such file in the repository")
    if not change.before or change.after is None:
        raise FixRejected(f"cannot modify {path}: both `before` (an exact excerpt) and `after` are required")
    count = current.count(change.before)
    if count != 1:
        why = "does not occur in the current file" if count == 0 else f"occurs {count} times (it must be unique)"
        raise FixRejected(f"cannot modify {path}: the `before` excerpt {why}")
    return current.replace(change.before, change.after)


def unified_diff(path: str, old: str | None, new: str) -> str:
    """A git-style unified diff with a/ b/ prefixes; /dev/null for a new file."""
    lines = difflib.unified_diff(
        _diff_lines(old or ""), _diff_lines(new),
        fromfile="/dev/null" if old is None else f"a/{path}", tofile=f"b/{path}",
    )
    return "".join(lines)


def _diff_lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def choose_best_fix(results: list[ErrorAnalysisResult]) -> ErrorAnalysisResult | None:
    """The fix most worth a draft PR: highest confidence, then most occurrences; first one wins ties."""
    candidates = [r for r in results if r.analysis and r.analysis.has_fix and r.analysis.file_changes]
    if not candidates:
        return None
    return max(candidates, key=lambda r: (CONFIDENCE_RANK[r.analysis.confidence], r.error.occurrences))  # type: ignore

