"""A local git checkout as the code host: the offline default and the demo's repository.

Everything the agent asks for is confined to the checkout: `..`, absolute paths, NUL bytes, `.git`
and symlinks that resolve outside the root are refused with a message the model can act on.
Only files git tracks are served (read, searched, listed): git-ignored and untracked files are where a
checkout keeps its local secrets (.env, config/master.key), and a folder without git serves nothing.
Secret files are withheld by name and by content even when tracked (see base.secret_file_reason).
Merged pull requests come from `git log` on the default branch (GitHub's merge and squash commits).
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Iterator

from nightwatch.codehosts.base import (
    SEARCH_MAX_FILE_BYTES,
    CodeHostError,
    SearchHit,
    are_commit_ids,
    decode_text,
    digest_bytes,
    glob_matches,
    hit_text,
    line_matcher,
    looks_binary,
    render_file,
    safe_relative_path,
    secret_file_reason,
    secret_text_reason,
    withheld,
)
from nightwatch.codehosts.blame import FIELD as _FIELD
from nightwatch.codehosts.blame import MERGE as _MERGE
from nightwatch.codehosts.blame import RECORD as _RECORD
from nightwatch.codehosts.blame import SQUASH as _SQUASH
from nightwatch.codehosts.blame import Blame, Landing, blame_lines, hunk_of, is_ancestor, landing_of
from nightwatch.models import CorrelatedPR

READ_HARD_LIMIT_BYTES = 20_000_000  # beyond this a file is not opened at all
SKIPPED_DIRS = {".git", "node_modules", "__pycache__"}
_GITHUB_REMOTE = re.compile(r"github\.com[:/](?P<slug>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")


class GitCommandError(CodeHostError):
    """git exited non-zero; `returncode` lets callers tell 'not found' from real failures."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 30.0) -> str:
    """Run git with list arguments (never a shell) and a timeout; stdout, or a GitCommandError."""
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=timeout, env=full_env, check=False,
        )
    except FileNotFoundError as exc:
        raise CodeHostError("git is not installed or not on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise CodeHostError(f"git {args[0]} timed out after {timeout:.0f}s in {cwd}") from exc
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no message"])[0]
        raise GitCommandError(f"git {args[0]} failed in {cwd}: {detail}", proc.returncode)
    return proc.stdout


class LocalRepoHost:
    """A git checkout on disk; reads see the working tree, history comes from the default branch."""

    search_is_exhaustive = True  # search_code reads every tracked text file

    def __init__(self, root: Path, git_timeout: float = 30.0) -> None:
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise CodeHostError(f"code path is not a directory: {root}")
        self.name = f"local:{self.root}"
        self.git_timeout = git_timeout
        self._content_reasons: dict[tuple[str, int, int], str | None] = {}

    # what is served -----------------------------------------------------------------------------
    @cached_property
    def _tracked(self) -> frozenset[str]:
        """Paths (relative to the root) of the files git tracks; listed once per host."""
        try:
            out = run_git(self.root, "ls-files", "-z", "--cached", timeout=self.git_timeout)
        except GitCommandError as exc:
            raise CodeHostError(
                f"{self.root} is not a git checkout: only files git tracks are served, so nothing there can be read "
                "(point the code path at a clone of the repository)"
            ) from exc
        return frozenset(p for p in out.split("\x00") if p)

    def tracked_files(self) -> frozenset[str]:
        return self._tracked

    @cached_property
    def _tracked_dirs(self) -> frozenset[str]:
        """Every folder holding a tracked file, at any depth."""
        dirs: set[str] = set()
        for path in self._tracked:
            folder = posixpath.dirname(path)
            while folder and folder not in dirs:
                dirs.add(folder)
                folder = posixpath.dirname(folder)
        return frozenset(dirs)

    def _real_rel(self, real: Path) -> str | None:
        """The repository-relative path a resolved path stands for; None outside the root or inside .git."""
        if real == self.root:
            return ""
        if not real.is_relative_to(self.root) or real.is_relative_to(self.root / ".git"):
            return None
        return real.relative_to(self.root).as_posix()

    def _check_served(self, rel: str, real: Path) -> None:
        """Refuse a secret file by name (as asked and as resolved) and a file git does not track."""
        real_rel = self._real_rel(real)
        for name in (rel, real_rel or ""):
            reason = secret_file_reason(name) if name else None
            if reason:
                raise withheld(rel, reason)
        tracked = self._tracked  # a folder without git is refused here, whatever was asked
        if real.is_file() and real_rel not in tracked:
            raise CodeHostError(
                f"{rel} is not tracked by git, so it is not served (git-ignored and untracked files can hold local "
                "secrets); only committed files can be read"
            )

    def _content_reason(self, rel: str, real: Path, text: str) -> str | None:
        try:
            stat = real.stat()
        except OSError:
            return None
        key = (str(real), stat.st_size, stat.st_mtime_ns)
        if key not in self._content_reasons:
            self._content_reasons[key] = secret_text_reason(text)
        return self._content_reasons[key]

    # paths --------------------------------------------------------------------------------------
    def _resolve(self, path: str, allow_root: bool = False) -> tuple[str, Path]:
        rel = safe_relative_path(path, allow_root=allow_root)
        real = (self.root / rel).resolve()
        if real != self.root and not real.is_relative_to(self.root):
            raise CodeHostError(f"symlink points outside the repository: {path}")
        if real.is_relative_to(self.root / ".git"):
            raise CodeHostError(f"symlink points into .git, which is not part of the code: {path}")
        return rel, real

    def _file_bytes(self, path: str, limit: int, served: bool = False) -> tuple[str, bytes]:
        rel, real = self._resolve(path)
        if served:  # what the model may see: tracked, and not a secret file by name
            self._check_served(rel, real)
        if real.is_dir():
            raise CodeHostError(f"{rel} is a directory; use list_directory")
        if not real.is_file():
            raise CodeHostError(f"no such file: {rel} (list_directory or search_code can find the right path)")
        size = real.stat().st_size
        if size > limit:
            raise CodeHostError(f"file too large to read whole: {rel} ({size:,} bytes)")
        return rel, real.read_bytes()

    # reading ------------------------------------------------------------------------------------
    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, numbered: bool = False
    ) -> str:
        """A tracked, non-secret file's text, redacted, cut to the line range and the read cap."""
        rel, data = self._file_bytes(path, READ_HARD_LIMIT_BYTES, served=True)
        text = decode_text(rel, data)
        reason = self._content_reason(rel, self._resolve(path)[1], text)
        if reason:
            raise withheld(rel, reason)
        return render_file(rel, text, start_line, end_line, numbered)

    def read_text(self, path: str) -> str:
        """Exact text for fix validation (never shown to the model as a tool result)."""
        rel, data = self._file_bytes(path, SEARCH_MAX_FILE_BYTES)
        return decode_text(rel, data)

    def file_digest(self, path: str) -> str | None:
        """sha256 of the current bytes; None when the path is not a readable file of this repository."""
        try:
            _, real = self._resolve(path)
        except CodeHostError:
            return None
        return digest_bytes(real.read_bytes()) if real.is_file() else None

    def current_digest(self, path: str) -> str | None:
        """The checkout is read anew every time: the same as file_digest."""
        return self.file_digest(path)

    def list_directory(self, path: str = "") -> list[str]:
        """Repository-relative paths of a folder's tracked entries, folders ending with '/'; secret files left out."""
        rel, real = self._resolve(path, allow_root=True)
        tracked, tracked_dirs = self._tracked, self._tracked_dirs
        if real.is_file():
            raise CodeHostError(f"{rel} is a file; use read_file")
        real_rel = self._real_rel(real)
        if not real.is_dir():
            raise CodeHostError(f"no such directory: {rel}")
        if real_rel and real_rel not in tracked_dirs:
            raise CodeHostError(f"no such directory among the files git tracks: {rel}")
        entries = []
        for child in sorted(real.iterdir(), key=lambda p: p.name):
            child_rel = f"{rel}/{child.name}" if rel else child.name
            # `real` is resolved: only a link among its entries leads elsewhere (resolving each of thousands is slow)
            child_real = self._real_rel(child.resolve()) if child.is_symlink() else (
                f"{real_rel}/{child.name}" if real_rel else child.name)
            if child.name == ".git" or child_real is None or secret_file_reason(child_rel) or secret_file_reason(child_real):
                continue
            if child.is_dir() and child_real in tracked_dirs:
                entries.append(child_rel + "/")
            elif child.is_file() and child_real in tracked:
                entries.append(child_rel)
        return entries

    # search -------------------------------------------------------------------------------------
    def search_code(
        self, query: str, path_glob: str | None = None, limit: int = 20, regex: bool = False
    ) -> list[SearchHit]:
        """Case-insensitive substring (or regex) over tracked text files; skips secret files, binaries and files > 1 MB.

        `git grep` first names the files that can match (in its own process, on every core, the GIL free for the
        night's other investigations); only those are read here, in the same order and through the same guards (secret
        files by name and content, symlinks, binaries, the size cap) as a walk of every file, so the hits are the
        same. Where git cannot say (a query with letters outside ASCII, whose case folding git and Python do not
        share; a regular expression PCRE refuses), every tracked file is walked."""
        matches = line_matcher(query, regex)
        candidates = self._grep_candidates(query, regex)
        hits: list[SearchHit] = []
        for rel, real in self._walk_files(candidates):
            if not glob_matches(rel, path_glob):
                continue
            for number, line in self._text_lines(rel, real):
                if matches(line):
                    hits.append(SearchHit(path=rel, line=number, text=hit_text(line)))
                    if len(hits) >= limit:
                        return hits
        return hits

    def _grep_candidates(self, query: str, regex: bool) -> frozenset[str] | None:
        """The tracked files git grep finds the query in, and every tracked symlink (git greps a link's own text, the
        walk reads its target); None where git's answer would not hold every file the walk would match."""
        if not query.isascii():
            return None
        pattern = ["-P", "-e", query] if regex else ["-F", "-e", query]
        try:  # decoded as run_git decodes `ls-files`, so a path reads the same in both
            out = run_git(self.root, "grep", "-l", "-z", "-i", "--no-color", "--full-name", *pattern, env={"LC_ALL": "C"},
                          timeout=self.git_timeout * 4)
        except GitCommandError as exc:
            if exc.returncode != 1:  # 1: no file matches; anything else: git could not search
                return None
            out = ""
        except CodeHostError:  # timed out
            return None
        found = {p for p in out.split("\x00") if p}
        return frozenset(found | self._symlinks)

    @cached_property
    def _symlinks(self) -> frozenset[str]:
        """Tracked paths that are symbolic links (mode 120000 in the index)."""
        out = run_git(self.root, "ls-files", "-s", "-z", timeout=self.git_timeout)
        return frozenset(entry.split("\t", 1)[1] for entry in out.split("\x00") if entry.startswith("120000 "))

    @cached_property
    def _walk_order(self) -> list[str]:
        """Tracked files in os.walk order (a folder's files before its subfolders), sorted once per host."""
        return sorted(self._tracked, key=_walk_key)

    def _walk_files(self, only: frozenset[str] | None = None) -> Iterator[tuple[str, Path]]:
        """Tracked files (or those of `only`) in os.walk order, secret files left out."""
        order = self._walk_order if only is None else sorted(only & self._tracked, key=_walk_key)
        for rel in order:
            if any(part in SKIPPED_DIRS for part in rel.split("/")[:-1]) or secret_file_reason(rel):
                continue
            full = self.root / rel
            real_rel = self._real_rel(full.resolve())
            if real_rel is None or real_rel not in self._tracked or secret_file_reason(real_rel):
                continue
            yield rel, full

    def _text_lines(self, rel: str, real: Path) -> Iterator[tuple[int, str]]:
        try:
            if real.stat().st_size > SEARCH_MAX_FILE_BYTES:
                return
            data = real.read_bytes()
        except OSError:
            return
        if looks_binary(data):
            return
        text = data.decode("utf-8", errors="replace")
        if self._content_reason(rel, real, text):
            return
        yield from enumerate(text.splitlines(), 1)

    # git ----------------------------------------------------------------------------------------
    def _git(self, *args: str) -> str:
        return run_git(self.root, *args, timeout=self.git_timeout)

    def default_branch(self) -> str:
        return self._default_branch

    @cached_property
    def _default_branch(self) -> str:
        """origin/HEAD, else the checked-out branch, else init.defaultBranch; never a guess."""
        try:
            self._git("rev-parse", "--is-inside-work-tree")
        except GitCommandError as exc:
            raise CodeHostError(f"not a git repository: {self.root}") from exc
        for args in (("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"),
                     ("symbolic-ref", "--quiet", "--short", "HEAD"),
                     ("config", "--get", "init.defaultBranch")):
            try:
                branch = self._git(*args).strip()
            except GitCommandError:
                continue
            if branch:
                return branch.removeprefix("origin/")
        raise CodeHostError(
            f"cannot tell the default branch of {self.root}: no origin/HEAD, HEAD is detached and "
            "init.defaultBranch is unset (run `git remote set-head origin --auto`)"
        )

    def _branch_ref(self, branch: str) -> str:
        for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"):
            try:
                self._git("rev-parse", "--verify", "--quiet", ref)
                return ref
            except GitCommandError:
                continue
        return "HEAD"

    def recent_merged_prs(self, since: datetime, limit: int = 30) -> list[CorrelatedPR]:
        """Merge commits ("Merge pull request #N from …") and squash commits ("Title (#N)"), newest first."""
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        fmt = _FIELD.join(["%H", "%P", "%an", "%cI", "%s", "%b"]) + _RECORD
        out = self._git("log", self._branch_ref(self.default_branch()), "--first-parent",
                        f"--since={since.isoformat()}", f"--format={fmt}")
        prs: list[CorrelatedPR] = []
        for record in out.split(_RECORD):
            pr = self._pr_from_commit(record.strip("\n").split(_FIELD))
            if pr and pr.merged_at and pr.merged_at >= since:
                prs.append(pr)
                if len(prs) >= limit:
                    break
        return prs

    # who changed what: the evidence for suspect commits (nightwatch.suspects) --------------------------------

    def blame(self, path: str, lines: list[int]) -> Blame:
        rel, _ = self._resolve(path)
        return blame_lines(self.root, run_git, rel, lines, self.git_timeout)

    def landing(self, sha: str) -> Landing:
        return landing_of(self.root, run_git, sha, self._branch_ref(self.default_branch()), self.git_timeout)

    def hunk(self, sha: str, path: str, texts: Sequence[str] = ()) -> str:
        return hunk_of(self.root, run_git, sha, path, self.git_timeout, texts=texts)

    def pull_url(self, number: int) -> str:
        return self._pull_url(number)

    def contains(self, release: str, sha: str) -> bool | None:
        """Whether the commit `release` (a deploy marker's) includes `sha`; None when this history cannot tell (a
        commit it does not have, a name that is not a commit)."""
        return is_ancestor(self.root, run_git, sha, release, self.git_timeout) if are_commit_ids(release, sha) else None

    def commits_between(self, older: str, newer: str, limit: int = 20) -> tuple[int, list[str]] | None:
        """(how many commits `newer` has that `older` has not, the newest `limit` of them as "<sha> <subject>"); None
        when this history cannot tell (a commit it does not have, a name that is not a commit)."""
        if not are_commit_ids(older, newer):
            return None
        span = f"{older}..{newer}"
        try:
            count = int(run_git(self.root, "rev-list", "--count", span, timeout=self.git_timeout).strip() or 0)
            listed = run_git(self.root, "log", f"--max-count={max(limit, 0)}", "--format=%H %s", span, "--",
                             timeout=self.git_timeout).splitlines()
        except (CodeHostError, ValueError):
            return None
        return count, [line for line in listed if line.strip()]

    def _pr_from_commit(self, fields: list[str]) -> CorrelatedPR | None:
        if len(fields) != 6:
            return None
        sha, parents, author, date, subject, body = fields
        parent_list = parents.split()
        merge, squash = _MERGE.match(subject), _SQUASH.match(subject)
        if merge and len(parent_list) >= 2:
            number, title = int(merge["number"]), _first_line(body) or merge["branch"]
            author = self._git("log", "-1", "--format=%an", parent_list[1]).strip() or author
        elif squash:
            number, title = int(squash["number"]), squash["title"]
        else:
            return None
        return CorrelatedPR(number=number, title=title, url=self._pull_url(number), author=author,
                            merged_at=datetime.fromisoformat(date), files=self._changed_files(sha, parent_list))

    def _changed_files(self, sha: str, parents: list[str]) -> list[str]:
        base = [parents[0], sha] if parents else ["--root", sha]
        out = self._git("diff-tree", "-r", "-z", "--no-commit-id", "--name-only", *base)
        return [name for name in out.split("\x00") if name]

    def _pull_url(self, number: int) -> str:
        return f"https://github.com/{self._github_slug}/pull/{number}" if self._github_slug else ""

    @cached_property
    def _github_slug(self) -> str:
        try:
            remote = self._git("config", "--get", "remote.origin.url").strip()
        except GitCommandError:
            return ""
        match = _GITHUB_REMOTE.search(remote)
        return match["slug"] if match else ""


def _walk_key(rel: str) -> tuple[tuple[int, str], ...]:
    parts = rel.split("/")
    return tuple((1, d) for d in parts[:-1]) + ((0, parts[-1]),)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
