"""Build the demo application as a real git repository with a believable pull-request history.

The demo app ships as plain files plus a history file describing the PRs that led to them. Replaying
that history gives LocalRepoHost real merge commits to correlate errors with, exactly as on GitHub.
Each PR lists how to undo it (`revert`: find the text as it is after the PR, replace it with the text
before), so the files on disk stay the single source of truth for the final tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nightwatch import safe_yaml
from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.local import run_git

STAMP_NAME = "nightwatch-demo-stamp"  # kept inside .git so the working tree equals the app exactly
COMMITTER = {"GIT_COMMITTER_NAME": "NightWatch Demo", "GIT_COMMITTER_EMAIL": "demo@nightwatch.invalid"}
ISOLATED_GIT = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
Files = dict[str, bytes]


class DemoRepoError(CodeHostError):
    """The demo history cannot be replayed onto the demo app; the message names PR, file and text."""


class Revert(BaseModel):
    model_config = ConfigDict(extra="forbid")
    find: str
    replace: str


class TouchedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    created: bool = False
    revert: list[Revert] = Field(default_factory=list)


class DemoPR(BaseModel):
    model_config = ConfigDict(extra="forbid")
    number: int
    title: str
    author: str
    branch: str
    merged_hours_ago: float
    files: list[TouchedFile]


class DemoHistory(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_branch: str = "main"
    org: str = "demo"
    pull_requests: list[DemoPR] = Field(default_factory=list)  # oldest first


def materialize_demo_repo(app_dir: Path, history_file: Path, dest: Path, now: datetime) -> Path:
    """A git repository at `dest` whose tree equals `app_dir`, with the history replayed; reused if unchanged."""
    now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    files = _read_tree(Path(app_dir))
    history = load_history(Path(history_file))
    stamp = _stamp(files, Path(history_file).read_bytes(), now)
    dest = Path(dest)
    if _stamp_of(dest) == stamp:
        return dest
    _check_replaceable(dest)
    build = dest.parent / f".{dest.name}.build-{uuid.uuid4().hex[:8]}"
    build.mkdir(parents=True)
    try:
        _build(build, files, history, now)
        (build / ".git" / STAMP_NAME).write_text(stamp)
        _swap_into_place(build, dest)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return dest


def load_history(history_file: Path) -> DemoHistory:
    try:
        return DemoHistory.model_validate(safe_yaml.safe_load(history_file.read_text(encoding="utf-8")) or {})
    except FileNotFoundError as exc:
        raise DemoRepoError(f"demo history file not found: {history_file}") from exc
    except (yaml.YAMLError, ValidationError) as exc:
        raise DemoRepoError(f"demo history {history_file} is invalid: {exc}") from exc


def pre_pr_states(final: Files, history: DemoHistory) -> list[Files]:
    """The tree before each PR (oldest first), undoing the PRs newest-first from the final files."""
    states: list[Files] = []
    current = dict(final)
    for pr in reversed(history.pull_requests):
        current = _undo(pr, current)
        states.append(current)
    return list(reversed(states))


def _undo(pr: DemoPR, after: Files) -> Files:
    before = dict(after)
    for touched in pr.files:
        where = f"PR #{pr.number}, file {touched.path}"
        if touched.path not in before:
            raise DemoRepoError(f"{where}: the file is not in the tree after this PR")
        if touched.created:
            del before[touched.path]
        elif not touched.revert:
            raise DemoRepoError(f"{where}: neither `created` nor `revert`, so the PR would not change it")
        else:
            before[touched.path] = _apply_reverts(where, before[touched.path], touched.revert)
    return before


def _apply_reverts(where: str, data: bytes, reverts: list[Revert]) -> bytes:
    text = data.decode("utf-8")
    for revert in reverts:
        count = text.count(revert.find)
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            raise DemoRepoError(f"{where}: revert text must occur exactly once but was {found}: {revert.find!r}")
        text = text.replace(revert.find, revert.replace)
    return text.encode("utf-8")


# building -----------------------------------------------------------------------------------------
def _build(repo: Path, final: Files, history: DemoHistory, now: datetime) -> None:
    states = pre_pr_states(final, history)
    git = _Git(repo)
    git("init", "--quiet", "-b", history.default_branch)
    oldest = max((pr.merged_hours_ago for pr in history.pull_requests), default=0.0)
    _write_tree(repo, states[0] if states else final)
    git.commit("Initial commit", "NightWatch Demo", now - timedelta(hours=oldest + 24))
    for pr, after in zip(history.pull_requests, states[1:] + [final]):
        merged_at = now - timedelta(hours=pr.merged_hours_ago)
        git("checkout", "--quiet", "-b", pr.branch)
        _write_tree(repo, after)
        git.commit(pr.title, pr.author, merged_at - timedelta(hours=1))
        git("checkout", "--quiet", history.default_branch)
        git.at(merged_at, "NightWatch Demo")(
            "merge", "--quiet", "--no-ff", "--no-edit", "-m", f"Merge pull request #{pr.number} from {history.org}/{pr.branch}",
            "-m", pr.title, pr.branch,
        )
        git("branch", "--quiet", "-D", pr.branch)


class _Git:
    """git in one repository with a fixed identity, fixed dates and no user or system config."""

    def __init__(self, repo: Path, env: dict[str, str] | None = None) -> None:
        self.repo, self.env = repo, {**ISOLATED_GIT, **COMMITTER, **(env or {})}

    def __call__(self, *args: str) -> str:
        return run_git(self.repo, "-c", "commit.gpgsign=false", *args, env=self.env, timeout=60)

    def at(self, when: datetime, author: str) -> "_Git":
        stamp, email = when.isoformat(), author.lower().replace(" ", ".") + "@example.com"
        return _Git(self.repo, {**self.env, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": email,
                                "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})

    def commit(self, message: str, author: str, when: datetime) -> None:
        self("add", "--all")
        self.at(when, author)("commit", "--quiet", "--allow-empty", "-m", message)


def _read_tree(app_dir: Path) -> Files:
    if not app_dir.is_dir():
        raise DemoRepoError(f"demo app folder not found: {app_dir}")
    return {
        p.relative_to(app_dir).as_posix(): p.read_bytes()
        for p in sorted(app_dir.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(app_dir).parts
    }


def _write_tree(repo: Path, files: Files) -> None:
    """Make the working tree hold exactly `files` (removing what is not there)."""
    for existing in [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts]:
        if existing.relative_to(repo).as_posix() not in files:
            existing.unlink()
    for rel, data in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)


# idempotence --------------------------------------------------------------------------------------
def _stamp(files: Files, history: bytes, now: datetime) -> str:
    digest = hashlib.sha256()
    for rel, data in sorted(files.items()):
        digest.update(json.dumps([rel, hashlib.sha256(data).hexdigest()]).encode())
    digest.update(hashlib.sha256(history).digest())
    digest.update(now.astimezone(timezone.utc).isoformat().encode())
    return digest.hexdigest()


def _stamp_of(dest: Path) -> str | None:
    stamp = dest / ".git" / STAMP_NAME
    return stamp.read_text().strip() if stamp.is_file() else None


def _check_replaceable(dest: Path) -> None:
    """Only an empty folder or an earlier demo build is ever replaced: never someone's own files."""
    if dest.exists() and (not dest.is_dir() or (any(dest.iterdir()) and _stamp_of(dest) is None)):
        raise DemoRepoError(f"{dest} exists and is not a NightWatch demo repository; choose another folder")


def _swap_into_place(build: Path, dest: Path) -> None:
    if dest.exists():
        old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(dest, old)
        shutil.rmtree(old, ignore_errors=True)
    os.replace(build, dest)
