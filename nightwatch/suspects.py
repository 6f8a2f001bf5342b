"""Why now: the commits that last changed the lines of an error's stack, ranked as the commit that introduced it.

Every in-app frame's line is blamed at the commit the night reads (top frame first). A commit is a candidate however
old it is (a bug can sleep until the input that wakes it arrives) and scores by

- the frames whose line it last changed, the top frame weighing most (1, 1/2, 1/3, ...);
- how close it landed before the error was first seen: the same day counts up to twice, two weeks before hardly more
  than once; a commit that landed after the error was first seen cannot have introduced it and is left out.

It is "likely" when it last changed the top frame's line and landed within three days before the error was first seen,
else "possible". Nothing is named when blame finds nothing (no history, a file not in the repository, a shallow clone
whose history stops before the lines changed, lines unchanged since the repository's first commit, which imported
them): fewer suspects with the reason, never a failed step.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

from nightwatch.codehosts.blame import Blame, BlamedLine, Landing
from nightwatch.models import SuspectCommit, TraceData
from nightwatch.redact import redact

LIKELY_WITHIN = timedelta(hours=72)
LANDED_AFTER_GRACE = timedelta(minutes=5)  # clocks of a deploy and of New Relic differ a little
MAX_FRAMES = 8
MAX_SUSPECTS = 3
MAX_FIX_LINES = 40


class BlameHost(Protocol):
    def blame(self, path: str, lines: list[int]) -> Blame: ...
    def landing(self, sha: str) -> Landing: ...
    def hunk(self, sha: str, path: str) -> str: ...
    def pull_url(self, number: int) -> str: ...


def can_blame(host: object) -> bool:
    return all(callable(getattr(host, name, None)) for name in ("blame", "landing", "hunk", "pull_url"))


def blamable_frames(traces: TraceData) -> list[tuple[str, int]]:
    """(file, line) of the in-app frames found in the repository, top frame first."""
    return [(f.file, f.line) for f in traces.in_app_frames if f.located and f.line]


def suspect_commits(host: BlameHost, frames: Iterable[tuple[str, int]], first_seen: datetime | None,
                    limit: int = MAX_SUSPECTS, fix_lines: Iterable[tuple[str, int]] = ()) -> tuple[list[SuspectCommit], list[str]]:
    """(suspects, best first; notes on what could not be blamed) for in-app `frames` (file, line), top frame first,
    and the lines an analysis would change (`fix_lines`: where it says the error starts, the lines its fix removes or
    changes), which weigh as the top frame."""
    stack = _distinct(frames)[:MAX_FRAMES]
    fixes = _distinct(fix_lines)[:MAX_FIX_LINES]
    blamed, notes = _blame_stack(host, list(dict.fromkeys(stack + fixes)))
    by_sha: dict[str, list[tuple[int, BlamedLine, str]]] = {}
    # a line both in the stack and among the fix's lines counts once, as a fix line (the top frame's weight)
    weighed = [*((0, f) for f in fixes), *((d, f) for d, f in enumerate(stack) if f not in fixes)]
    for depth, (file, line) in weighed:
        hit = blamed.get((file, line))
        if hit is not None:
            by_sha.setdefault(hit.sha, []).append((depth, hit, file))
    suspects: list[SuspectCommit] = []
    late = imported = 0
    for sha, hits in by_sha.items():
        landing = host.landing(sha)
        if landing.root:
            imported += 1
            continue
        landed = landing.landed_at or hits[0][1].committed_at
        if first_seen and landed and landed > first_seen + LANDED_AFTER_GRACE:
            late += 1
            continue
        suspects.append(_suspect(host, sha, hits, landing, landed, first_seen, set(fixes)))
    if imported:
        notes.append("lines unchanged since the repository's first commit (an import, not a change) name no suspect")
    if late:
        notes.append(f"{late} commit(s) that last changed these lines landed after the error was first seen")
    suspects.sort(key=lambda s: (-s.score, -(s.landed_at.timestamp() if s.landed_at else 0), s.sha))  # ties: the newer
    return suspects[:limit], notes


def _why(hits: list[tuple[int, BlamedLine, str]], fixes: set[tuple[str, int]]) -> str:
    if any((file, b.line) in fixes for _, b, file in hits):
        return "last changed a line the analysis says the error starts at or its fix changes"
    if any(depth == 0 for depth, _, _ in hits):
        return "last changed the top frame's line"
    return f"last changed {len(hits)} line(s) deeper in the stack"


def _distinct(frames: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    return list(dict.fromkeys((f, n) for f, n in frames if f and n and n > 0))


def _blame_stack(host: BlameHost, stack: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], BlamedLine], list[str]]:
    """One blame per file, for all its lines in the stack."""
    per_file: dict[str, list[int]] = {}
    for file, line in stack:
        per_file.setdefault(file, []).append(line)
    found: dict[tuple[str, int], BlamedLine] = {}
    notes: list[str] = []
    for file, lines in per_file.items():
        result = host.blame(file, lines)
        notes.extend(result.notes)
        found.update({(file, b.line): b for b in result.lines})
    return found, notes


def _suspect(host: BlameHost, sha: str, hits: list[tuple[int, BlamedLine, str]], landing: Landing,
             landed: datetime | None, first_seen: datetime | None, fixes: set[tuple[str, int]]) -> SuspectCommit:
    weight = sum(1.0 / (1 + depth) for depth, _, _ in hits)
    hours = (first_seen - landed).total_seconds() / 3600 if first_seen and landed else None
    recency = 1 + 1 / (1 + max(hours, 0.0) / 24) if hours is not None else 1.0
    top = any(depth == 0 for depth, _, _ in hits)
    likely = top and hours is not None and hours <= LIKELY_WITHIN.total_seconds() / 3600
    first = hits[0][1]
    lines = [f"{file}:{b.line}" for _, b, file in hits]
    why = _why(hits, fixes)
    return SuspectCommit(
        sha=sha, subject=redact(first.summary)[:200], author=redact(first.author)[:80], landed_at=landed,
        pr_number=landing.pr_number, pr_url=host.pull_url(landing.pr_number) if landing.pr_number else "",
        lines=lines, hunk=redact(host.hunk(sha, hits[0][1].path or hits[0][2]))[:4_000],
        hours_before_first_seen=round(hours, 1) if hours is not None else None, score=round(weight * recency, 3),
        confidence="likely" if likely else "possible", why=why)
