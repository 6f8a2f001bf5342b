"""Why now: the commits that last changed the lines of an error's stack, ranked as the commit that introduced it.

Every in-app frame's line is blamed at the commit the night reads (top frame first). A commit is a candidate however
old it is (a bug can sleep until the input that wakes it arrives) and scores by

- the frames whose line it last changed, the top frame weighing most (1, 1/2, 1/3, ...);
- the statements above the top frame's line, in its function, that built the values that line uses (its backward
  slice, nightwatch.value_lines): an error on a value is often written where the value was made; half the top
  frame's weight, once per commit;
- how close it reached production before the error was first seen: the deploy marker that first shipped it, where New
  Relic's change tracking has one (its commit contains the suspect), else when it landed; the same day counts up to
  twice, two weeks before hardly more than once; a commit that landed after the error was first seen cannot have
  introduced it and is left out.

Where the release the error was first seen in is known with the one before it (nightwatch.release_window: New Relic's
deploy markers, Sentry's and Bugsink's releases alike), the commits that release brought rank first, whatever their
score: the error was not there before that deploy.

It is "likely" when it last changed the top frame's line and reached production (was deployed, else landed) within
three days before the error was first seen, else "possible". Nothing is named when blame finds nothing (no history, a file not in the repository, a shallow clone
whose history stops before the lines changed, lines unchanged since the repository's first commit, which imported
them): fewer suspects with the reason, never a failed step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol, TypeGuard

from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.blame import Blame, BlamedLine, Landing
from nightwatch.models import Deploy, ReleaseWindow, SuspectCommit, TraceData
from nightwatch.redact import clean, redact_diff
from nightwatch.release_window import shipped_in
from nightwatch.value_lines import deciding_lines, value_lines

LIKELY_WITHIN = timedelta(hours=72)
LANDED_AFTER_GRACE = timedelta(minutes=5)  # clocks of a deploy and of New Relic differ a little
MAX_FRAMES = 8
MAX_SUSPECTS = 3
MAX_FIX_LINES = 40
BUILDER_WEIGHT = 0.5


class BlameHost(Protocol):
    def blame(self, path: str, lines: list[int]) -> Blame: ...
    def landing(self, sha: str) -> Landing: ...
    def hunk(self, sha: str, path: str, texts: Sequence[str] = ()) -> str: ...
    def pull_url(self, number: int) -> str: ...


def can_blame(host: object) -> TypeGuard[BlameHost]:
    return all(callable(getattr(host, name, None)) for name in ("blame", "landing", "hunk", "pull_url"))


def blamable_frames(traces: TraceData) -> list[tuple[str, int]]:
    """(file, line) of the in-app frames found in the repository, top frame first."""
    return [(f.file, f.line) for f in traces.in_app_frames if f.located and f.line]


def suspect_commits(host: BlameHost, frames: Iterable[tuple[str, int]], first_seen: datetime | None,
                    limit: int = MAX_SUSPECTS, fix_lines: Iterable[tuple[str, int]] = (),
                    deploys: Sequence[Deploy] = (), origin: tuple[str, int] | None = None,
                    window: ReleaseWindow | None = None) -> tuple[list[SuspectCommit], list[str]]:
    """(suspects, best first; notes on what could not be blamed) for in-app `frames` (file, line), top frame first,
    and the lines an analysis would change (`fix_lines`: where it says the error starts, the lines its fix removes or
    changes), which weigh as the top frame; the conditions that decide on what the `origin` line computes weigh as
    the statements that built the top frame's values. Those the release `window` brought come first."""
    stack = _distinct(frames)[:MAX_FRAMES]
    fixes = _distinct(fix_lines)[:MAX_FIX_LINES]
    read = _reader(host)
    builders = (_slice_lines(read, stack[0], value_lines) if stack else []) + \
        (_slice_lines(read, origin, deciding_lines) if origin else [])
    blamed, notes = _blame_stack(host, list(dict.fromkeys(stack + fixes + builders)))
    by_sha: dict[str, list[Hit]] = {}
    for kind, depth, (file, line) in _weighed(stack, fixes, builders):
        found = blamed.get((file, line))
        if found is not None:
            by_sha.setdefault(found.sha, []).append(Hit(kind, depth, file, line, found))
    suspects: list[SuspectCommit] = []
    late = imported = 0
    for sha, hits in by_sha.items():
        landing = host.landing(sha)
        if landing.root:
            imported += 1
            continue
        landed = landing.landed_at or hits[0].blamed.committed_at
        if first_seen and landed and landed > first_seen + LANDED_AFTER_GRACE:
            late += 1
            continue
        shipped = shipped_by(host, sha, landed, first_seen, deploys)
        suspects.append(_released(host, _suspect(host, sha, hits, landing, (landed, shipped), first_seen, read),
                                  window, landed))
    if imported:
        notes.append("lines unchanged since the repository's first commit (an import, not a change) name no suspect")
    if late:
        notes.append(f"{late} commit(s) that last changed these lines landed after the error was first seen")
    suspects.sort(key=lambda s: (not s.in_release, -s.score, -(s.landed_at.timestamp() if s.landed_at else 0), s.sha))
    return suspects[:limit], notes


def _released(host: object, suspect: SuspectCommit, window: ReleaseWindow | None,
              landed: datetime | None) -> SuspectCommit:
    """The suspect, saying whether the release the error was first seen in brought it (nightwatch.release_window)."""
    brought = shipped_in(host, window, suspect.sha, landed)
    if brought and window is not None:
        return suspect.model_copy(update={"in_release": True,
                                          "why": f"{suspect.why}; brought by the release the error was first seen in"})
    return suspect.model_copy(update={"in_release": False}) if brought is False else suspect


class Hit(NamedTuple):
    """One blamed line and why it counts: a line the analysis' fix changes (`fix`), a frame of the stack at `depth`
    (`frame`), or a statement that built a value the top frame's line uses (`builder`)."""

    kind: str
    depth: int
    file: str
    line: int
    blamed: BlamedLine


def _weighed(stack: list[tuple[str, int]], fixes: list[tuple[str, int]],
             builders: list[tuple[str, int]]) -> list[tuple[str, int, tuple[str, int]]]:
    """(kind, depth, line) of every line to blame, once, under its strongest reason: a stack line the analysis also
    names counts as a fix line (the top frame's weight), a builder that is also in the stack as a frame."""
    taken = set(fixes)
    reasons = [("fix", 0, f) for f in fixes]
    reasons += [("frame", d, f) for d, f in enumerate(stack) if f not in taken]
    taken |= set(stack)
    return reasons + [("builder", 0, f) for f in builders if f not in taken]


def _reader(host: object) -> Callable[[str], str]:
    """A file's text as it reads now, each file read once; "" where the host cannot read it (a local host or GitHub
    can; a file gone or binary reads as nothing): what is blamed never depends on it."""
    read_text = getattr(host, "read_text", None)
    cache: dict[str, str] = {}

    def read(file: str) -> str:
        if file not in cache:
            try:
                cache[file] = read_text(file) if callable(read_text) else ""
            except Exception:  # noqa: BLE001 - unreadable: no slice and no narrowing, never a failed step
                cache[file] = ""
        return cache[file]

    return read


def _slice_lines(read: Callable[[str], str], at: tuple[str, int],
                 slicer: Callable[[str, str, int], list[tuple[int, int]]]) -> list[tuple[str, int]]:
    """The lines `slicer` (nightwatch.value_lines) finds around line `at`: the statements that built the values the
    top frame's line uses (value_lines), or the conditions that decide on what the origin line computes
    (deciding_lines)."""
    file, line = at
    try:
        spans = slicer(file, read(file), line)
    except Exception:  # noqa: BLE001 - a file unreadable as code slices to nothing: never a failed step
        return []
    return [(file, n) for first, last in spans for n in range(first, last + 1)][:MAX_FIX_LINES]


def _weight(hits: list[Hit]) -> float:
    """Fix lines and frames by depth (1, 1/2, 1/3, ...); the statements that built the top frame's values count once
    per commit, at half the top frame's weight: they are on the error's data path, not on its stack."""
    weight = sum(1.0 / (1 + h.depth) for h in hits if h.kind != "builder")
    return weight + (BUILDER_WEIGHT if any(h.kind == "builder" for h in hits) else 0.0)


def _why(hits: list[Hit]) -> str:
    if any(h.kind == "fix" for h in hits):
        return "last changed a line the analysis says the error starts at or its fix changes"
    if any(h.kind == "frame" and h.depth == 0 for h in hits):
        return "last changed the top frame's line"
    frames = [h for h in hits if h.kind == "frame"]
    if frames:
        return f"last changed {len(frames)} line(s) deeper in the stack"
    return "last changed a statement that built a value the top frame's line uses, or a condition that decides on one"


def _texts(read: Callable[[str], str], hits: list[Hit]) -> list[str]:
    """How the blamed lines of the suspect's first file read now (what its diff wrote, whitespace aside), numbered as
    git numbers them."""
    source = read(hits[0].file).split("\n")
    return [source[h.line - 1] for h in hits if h.file == hits[0].file and 0 < h.line <= len(source)]


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
        try:
            result = host.blame(file, lines)
        except CodeHostError as exc:  # a path the host refuses (the analysis's origin is the model's text)
            notes.append(f"no blame for {file[:200]}: {str(exc)[:200]}")
            continue
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


def _printable(text: str, limit: int) -> str:
    """A committer's or deployer's text as stored: printable (no terminal escapes), redacted, one line, capped."""
    return " ".join(clean(text, limit)[0].split())[:limit]


def _suspect(host: BlameHost, sha: str, hits: list[Hit], landing: Landing,
             when: tuple[datetime | None, Deploy | None], first_seen: datetime | None,
             read: Callable[[str], str]) -> SuspectCommit:
    """Scored by its lines and by how close the change reached production before the error was first seen: the deploy
    that shipped it where one is known, else when it landed. Its diff shows the hunks that wrote its blamed lines."""
    landed, shipped = when
    weight = _weight(hits)
    reached = shipped.at if shipped else landed
    hours = (first_seen - reached).total_seconds() / 3600 if first_seen and reached else None
    recency = 1 + 1 / (1 + max(hours, 0.0) / 24) if hours is not None else 1.0
    top = any(h.kind != "builder" and h.depth == 0 for h in hits)
    likely = top and hours is not None and hours <= LIKELY_WITHIN.total_seconds() / 3600
    first = hits[0].blamed
    lines = [f"{h.file}:{h.line}" for h in hits]
    why = _why(hits)
    return SuspectCommit(
        sha=sha, subject=_printable(first.summary, 200), author=_printable(first.author, 80), landed_at=landed,
        pr_number=landing.pr_number, pr_url=host.pull_url(landing.pr_number) if landing.pr_number else "",
        lines=lines, hunk=redact_diff(host.hunk(sha, first.path or hits[0].file, _texts(read, hits)))[:4_000],
        hours_before_first_seen=round(hours, 1) if hours is not None else None, score=round(weight * recency, 3),
        deploy=_printable(shipped.label, 80) if shipped else "", deployed_at=shipped.at if shipped else None,
        confidence="likely" if likely else "possible", why=why)
