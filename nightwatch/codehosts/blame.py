"""Who last changed a line, from local git: `git blame --porcelain` of chosen lines, and the pull request that brought
a commit to the default branch.

Every failure here is an answer with fewer lines and the reason (a file no longer in the repository, a shallow clone,
a blame that timed out on a huge file), never an exception: suspects are evidence, not a step that can fail a night.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from pydantic import Field

from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.formatting import formatting_only, lines_before
from nightwatch.models import Model

_HEADER = re.compile(r"^(?P<sha>[0-9a-f]{40}) (?P<orig>\d+) (?P<final>\d+)(?: (?P<count>\d+))?$")
MERGE = re.compile(r"^Merge pull request #(?P<number>\d+) from (?P<branch>\S+)")
SQUASH = re.compile(r"^(?P<title>.+?) \(#(?P<number>\d+)\)$")
FIELD, RECORD = "\x1f", "\x1e"
IGNORE_REVS = ".git-blame-ignore-revs"  # formatting-only commits a team asked blame to look through


class BlamedLine(Model):
    line: int
    sha: str
    author: str = ""
    committed_at: datetime | None = None
    summary: str = ""
    boundary: bool = False  # the oldest commit a shallow clone has: the line may be older still
    path: str = ""  # the file's name in that commit (renames are followed)
    source_line: int = 0  # the line's number in that commit's version of the file (git's; 0 where unknown)


class Blame(Model):
    lines: list[BlamedLine] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class Landing(Model):
    """How a commit reached the default branch: its pull request's merge, or itself."""

    landed_at: datetime | None = None
    pr_number: int | None = None
    root: bool = False  # the repository's first commit: an import of what was there, not a change


def parse_porcelain(text: str) -> list[BlamedLine]:
    """`git blame --porcelain` output: one entry per final line; a commit's details are given once, then reused.
    Lines are git's, split on "\n" only: a commit's subject or author may hold any other line separator (U+2028,
    form feed...) and must not start a header of its own."""
    commits: dict[str, dict[str, str]] = {}
    out: list[BlamedLine] = []
    current: dict[str, str] | None = None
    final = orig = 0
    sha = ""
    for raw in text.split("\n"):
        if raw.startswith("\t"):  # the line's content closes its entry
            info = commits.get(sha, {})
            out.append(BlamedLine(line=final, sha=sha, author=info.get("author", ""), summary=info.get("summary", ""),
                                  committed_at=_moment(info.get("committer-time") or info.get("author-time")),
                                  boundary="boundary" in info, path=info.get("filename", ""), source_line=orig))
            current = None
            continue
        header = _HEADER.match(raw)
        if header and current is None:
            sha, final, orig = header["sha"], int(header["final"]), int(header["orig"])
            current = commits.setdefault(sha, {})
            continue
        if current is not None:
            key, _, value = raw.partition(" ")
            current[key] = value
    return out


def _moment(seconds: str | None) -> datetime | None:
    """A porcelain timestamp; None for one no date can hold (a commit dated after the year 9999)."""
    try:
        return datetime.fromtimestamp(int(seconds), tz=timezone.utc) if seconds else None
    except (ValueError, OverflowError, OSError):
        return None


def _when(iso: str) -> datetime | None:
    """git's strict ISO date (%cI); None for one Python cannot read (git accepts a zone such as +9959)."""
    try:
        return datetime.fromisoformat(iso)
    except ValueError:
        return None


def _number(digits: str) -> int | None:
    """A pull request's number from a commit subject; None past any number a pull request has."""
    return int(digits) if len(digits) <= 9 else None


def blame_lines(root: Path, run_git, path: str, lines: list[int], timeout: float) -> Blame:
    """Who last changed each of `lines` of `path` at HEAD, looking through what changed no code: whitespace-only
    edits (`-w`), the commits a `.git-blame-ignore-revs` names, and commits that only
    reformatted the file (nightwatch.codehosts.formatting: found among the commits blamed; each of their lines is
    followed into the commit's parent by the syntax tree the two versions share, and blamed there, a few rounds deep:
    black after an older autopep8). git's own `--ignore-rev` matches a line by its text and leaves a line it cannot
    place (a closing bracket, an element black split onto a line of its own) on the formatter. Moves within
    the file (`-M`) are not looked for: a line that also stands elsewhere in the file (`current_user =
    get_current_user()` in each of a schema's validators) is taken for a copy of the other and blamed on whoever wrote
    that one, and the ground truth the eval measures against (scripts/history_slices.py) is `git blame -w` too."""
    wanted = sorted({n for n in lines if n > 0})
    if not wanted:
        return Blame()
    ranges = [arg for n in wanted for arg in ("-L", f"{n},{n}")]
    ignore = ["--ignore-revs-file", IGNORE_REVS] if (root / IGNORE_REVS).is_file() else []
    try:
        text = run_git(root, "blame", "--porcelain", "-w", *ignore, *ranges, "HEAD", "--", path, timeout=timeout)
    except CodeHostError as exc:
        return Blame(notes=[f"no blame for {path}: {str(exc)[:200]}"])
    blamed, looked, stopped = _look_through(root, run_git, path, parse_porcelain(text), ignore, timeout)
    notes = formatting_notes(path, looked, stopped)
    shallow = [b for b in blamed if b.boundary]
    if shallow and (root / ".git" / "shallow").exists():
        notes.append(f"{path}: {len(shallow)} line(s) older than this shallow clone's history")
        blamed = [b for b in blamed if not b.boundary]
    return Blame(lines=blamed, notes=notes)


def _look_through(root: Path, run_git, path: str, blamed: list[BlamedLine], ignore: list[str],
                  timeout: float) -> tuple[list[BlamedLine], list[str], str]:
    """`blamed` with each line a formatting commit last changed blamed again at that commit's parent; the commits
    looked through; why it stopped early ("" when it did not: a failure keeps the blame that stands)."""
    current = {b.line: b for b in blamed}
    looked: list[str] = []
    checked: set[tuple[str, str]] = set()
    for _ in range(FORMATTING_ROUNDS - 1):
        named = [key for key in dict.fromkeys((b.sha, b.path or path) for b in current.values() if not b.boundary)
                 if key not in checked][:FORMATTING_CHECKS]
        checked.update(named)
        found = [(sha, name, back) for sha, name in named if (back := formatting_map(root, run_git, sha, name, timeout))]
        for sha, name, back in found:
            targets = {b.line: back[b.source_line] for b in current.values()
                       if (b.sha, b.path or path) == (sha, name) and b.source_line in back}
            if not targets:
                continue
            ranges = [arg for n in sorted(set(targets.values())) for arg in ("-L", f"{n},{n}")]
            try:
                text = run_git(root, "blame", "--porcelain", "-w", *ignore, *ranges, f"{sha}^", "--", name,
                               timeout=timeout)
            except CodeHostError as exc:
                return sorted(current.values(), key=lambda b: b.line), looked, str(exc)
            again = {b.line: b for b in parse_porcelain(text)}
            followed = [line for line, at in targets.items() if at in again]
            for line in followed:
                current[line] = again[targets[line]].model_copy(update={"line": line})
            if followed:
                looked.append(sha)
        if not found:
            break
    return sorted(current.values(), key=lambda b: b.line), looked, ""


def formatting_notes(path: str, looked: list[str], stopped: str) -> list[str]:
    """What the research notes say of the formatting commits a blame of `path` looked through, and of why it stopped
    early: the same words from local git and from GitHub."""
    notes = []
    if looked:
        shown = ", ".join(sha[:12] for sha in looked[:NOTED_COMMITS])
        more = f" and {len(looked) - NOTED_COMMITS} more" if len(looked) > NOTED_COMMITS else ""
        notes.append(f"{path}: looked through {len(looked)} commit(s) that only reformatted it ({shown}{more})")
    if stopped:
        notes.append(f"{path}: stopped looking through formatting commits: {stopped[:200]}")
    return notes


NOTED_COMMITS = 6
FORMATTING_ROUNDS = 4  # blames of one file: the first, then one past each round of formatting commits found
FORMATTING_CHECKS = 12  # commits checked for formatting per round (each reads the file twice)
FORMATTING_MAX_BYTES = 1_000_000


def reformatted(root: Path, run_git, sha: str, path: str, timeout: float) -> bool:
    """Whether commit `sha` only reformatted `path`, against its first parent (a file it added or renamed, or the first
    commit, is never formatting)."""
    return formatting_map(root, run_git, sha, path, timeout) is not None


@lru_cache(maxsize=4096)
def formatting_map(root: Path, run_git, sha: str, path: str, timeout: float) -> dict[int, int] | None:
    """Where each line of `path` at `sha` came from in its parent, when `sha` only reformatted it
    (nightwatch.codehosts.formatting.lines_before; empty where a line cannot be followed); None when it changed it."""
    try:
        before = run_git(root, "show", f"{sha}^:{path}", timeout=timeout)
        after = run_git(root, "show", f"{sha}:{path}", timeout=timeout)
    except CodeHostError:
        return None
    if max(len(before), len(after)) > FORMATTING_MAX_BYTES or not formatting_only(before, after, path):
        return None
    return lines_before(before, after, path)


def landing_of(root: Path, run_git, sha: str, branch_ref: str, timeout: float) -> Landing:
    """The merge of the pull request that brought `sha` to `branch_ref` (the oldest merge of the branch's own line
    that descends from it, unless `sha` was on that line already), or a squash commit's own number, or the commit
    itself."""
    try:
        # the subject last: it is the one field a committer writes, and may hold the separator itself
        own = run_git(root, "log", "-1", f"--format=%cI{FIELD}%P{FIELD}%s", sha, timeout=timeout).strip("\n").split(FIELD, 2)
        merges = run_git(root, "log", "--merges", "--first-parent", "--ancestry-path", "--reverse",
                         f"--format=%H{FIELD}%cI{FIELD}%s{RECORD}", f"{sha}..{branch_ref}", timeout=timeout)
    except CodeHostError:
        return Landing()
    if len(own) == 3 and not own[1].strip():
        return Landing(landed_at=_when(own[0]), root=True)
    fields: list[str] = next((r.strip("\n").split(FIELD, 2) for r in merges.split(RECORD) if r.strip()), [])
    # a merge brought `sha` unless it was on the branch's line already (an ancestor of the merge's first parent)
    brought = len(fields) == 3 and is_ancestor(root, run_git, sha, f"{fields[0]}^1", timeout) is not True
    if brought and (match := MERGE.match(fields[2])):
        return Landing(landed_at=_when(fields[1]), pr_number=_number(match["number"]))
    if len(own) == 3:
        squash = SQUASH.match(own[2])
        return Landing(landed_at=_when(own[0]), pr_number=_number(squash["number"]) if squash else None)
    return Landing()


def is_ancestor(root: Path, run_git, ancestor: str, descendant: str, timeout: float) -> bool | None:
    """Whether `descendant` includes `ancestor` (`git merge-base --is-ancestor`); None when git cannot tell (a commit
    this history does not have)."""
    try:
        run_git(root, "merge-base", "--is-ancestor", ancestor, descendant, timeout=timeout)
    except CodeHostError as exc:
        return False if getattr(exc, "returncode", None) == 1 else None
    return True


def hunk_of(root: Path, run_git, sha: str, path: str, timeout: float, limit_lines: int = 40,
            texts: Sequence[str] = ()) -> str:
    """What `sha` changed in `path` (renames followed), capped: the hunks that wrote one of `texts` (the blamed lines
    as they read now) where there are any, else every hunk."""
    try:
        text = run_git(root, "show", "--format=", "--no-color", "-M", "--unified=2", sha, "--", path, timeout=timeout)
    except CodeHostError:
        return ""
    lines = text.removesuffix("\n").split("\n")  # git's lines: a changed line may hold U+2028, which ends none
    start = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    return hunks_writing(lines[start:], texts, limit_lines)  # from the first hunk, as GitHub's patch of a file reads


def hunks_writing(body: list[str], texts: Sequence[str], limit_lines: int) -> str:
    """The hunks of one file's diff (`@@` headers and their lines) that add a line reading as one of `texts`, all
    whitespace aside (blame looks through whitespace-only changes), or every hunk when none does; capped at
    `limit_lines`. A commit that touched a file in several places is then shown where it wrote the blamed line, not
    only where its diff starts."""
    wanted = {key for key in ("".join(t.split()) for t in texts) if len(key) >= 3}  # `end`, `}`: names nothing
    hunks: list[list[str]] = []
    for line in body:
        if line.startswith("@@") or not hunks:
            hunks.append([])
        hunks[-1].append(line)
    chosen = [h for h in hunks if any(line.startswith("+") and "".join(line[1:].split()) in wanted for line in h)]
    shown = [line for hunk in (chosen or hunks) for line in hunk]
    return "\n".join(shown[:limit_lines]) + ("\n…" if len(shown) > limit_lines else "")
