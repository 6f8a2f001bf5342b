"""Why now: the commits that last changed the lines of an error's stack, ranked as the commit that introduced it.

Every in-app frame's line is blamed at the commit the night reads (top frame first). A commit is a candidate however
old it is (a bug can sleep until the input that wakes it arrives) and scores by

- the frames whose line it last changed, the top frame weighing most (1, 1/2, 1/3, ...);
- how close it reached production before the error was first seen: the deploy marker that first shipped it, where New
  Relic's change tracking has one (its commit contains the suspect), else when it landed; the same day counts up to
  twice, two weeks before hardly more than once; a commit that landed after the error was first seen cannot have
  introduced it and is left out.

It is "likely" when it last changed the top frame's line and reached production (was deployed, else landed) within
three days before the error was first seen, else "possible". Nothing is named when blame finds nothing (no history, a file not in the repository, a shallow clone
whose history stops before the lines changed, lines unchanged since the repository's first commit, which imported
them): fewer suspects with the reason, never a failed step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from nightwatch.codehosts.blame import Blame, BlamedLine, Landing
from nightwatch.models import Deploy, SuspectCommit, TraceData
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
                    limit: int = MAX_SUSPECTS, fix_lines: Iterable[tuple[str, int]] = (),
                    deploys: Sequence[Deploy] = ()) -> tuple[list[SuspectCommit], list[str]]:
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
        shipped = shipped_by(host, sha, landed, first_seen, deploys)
        suspects.append(_suspect(host, sha, hits, landing, (landed, shipped), first_seen, set(fixes)))
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


def shipped_by(host: object, sha: str, landed: datetime | None, first_seen: datetime | None,
               deploys: Sequence[Deploy]) -> Deploy | None:
    """The first deploy (oldest first) at or after the commit landed, and not after the error was first seen, that
    shipped it: one whose commit contains `sha` where the marker names a commit and the host can tell (a marker's
    commit the host does not know is taken by its time), by its time alone otherwise. None for a commit that landed
    before the oldest marker read: the deploy that first shipped it is not among them."""
    if not deploys or landed is None or landed < deploys[0].at:
        return None
    contains = getattr(host, "contains", None)
    for deploy in deploys:
        if deploy.at < landed - LANDED_AFTER_GRACE:
            continue
        if first_seen and deploy.at > first_seen + LANDED_AFTER_GRACE:
            return None
        if deploy.commit and callable(contains) and contains(deploy.commit, sha) is False:
            continue
        return deploy
    return None


def _suspect(host: BlameHost, sha: str, hits: list[tuple[int, BlamedLine, str]], landing: Landing,
             when: tuple[datetime | None, Deploy | None], first_seen: datetime | None,
             fixes: set[tuple[str, int]]) -> SuspectCommit:
    """Scored by its lines and by how close the change reached production before the error was first seen: the deploy
    that shipped it where one is known, else when it landed."""
    landed, shipped = when
    weight = sum(1.0 / (1 + depth) for depth, _, _ in hits)
    reached = shipped.at if shipped else landed
    hours = (first_seen - reached).total_seconds() / 3600 if first_seen and reached else None
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
        deploy=redact(shipped.label)[:80] if shipped else "", deployed_at=shipped.at if shipped else None,
        confidence="likely" if likely else "possible", why=why)
