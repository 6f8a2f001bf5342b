"""Who last changed a line, from GitHub: the GraphQL API's blame of a file at the default branch, the pull request
that brought a commit there (`associatedPullRequests`), and a commit's patch of one file (REST).

GitHub blames the whole file (its ranges cannot be narrowed), without git's -w: a whitespace-only commit names
itself where local git would look through it. It has no --ignore-rev either, so a commit that only reformatted a
Python file (nightwatch.codehosts.formatting) is looked through here: each of its lines is followed into the commit's
parent by the syntax tree, which the two versions share, and blamed there, a few rounds deep as local git does. Every
failure is an answer with fewer lines and the reason, never an exception, as for local git
(nightwatch/codehosts/blame.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Callable

from nightwatch.codehosts.blame import (
    FORMATTING_CHECKS,
    FORMATTING_MAX_BYTES,
    FORMATTING_ROUNDS,
    Blame,
    BlamedLine,
    Landing,
    formatting_notes,
    hunks_writing,
)
from nightwatch.codehosts.formatting import formatting_only, judged, lines_before

BLAME_QUERY = """
query($owner: String!, $name: String!, $ref: String!, $path: String!) {
  repository(owner: $owner, name: $name) {
    object(expression: $ref) {
      ... on Commit {
        blame(path: $path) {
          ranges {
            startingLine
            endingLine
            commit { oid committedDate messageHeadline author { name } }
          }
        }
      }
    }
  }
}
"""

LANDING_QUERY = """
query($owner: String!, $name: String!, $oid: GitObjectID!) {
  repository(owner: $owner, name: $name) {
    object(oid: $oid) {
      ... on Commit {
        committedDate
        messageHeadline
        parents(first: 1) { totalCount }
        associatedPullRequests(first: 5) { nodes { number mergedAt baseRefName } }
      }
    }
  }
}
"""

REVISION_FIELDS = """
    c{n}: object(expression: $rev{n}) {{
      ... on Commit {{
        parents(first: 2) {{ nodes {{ oid }} }}
      }}
    }}
    f{n}: object(expression: $file{n}) {{
      ... on Blob {{ text isBinary isTruncated }}
    }}"""


def revisions_query(count: int) -> str:
    """One query for `count` revisions of a file: each commit's parents (`c<n>`) and the file there (`f<n>`)."""
    variables = ", ".join(f"$rev{n}: String!, $file{n}: String!" for n in range(count))
    fields = "".join(REVISION_FIELDS.format(n=n) for n in range(count))
    return f"query($owner: String!, $name: String!, {variables}) {{\n  repository(owner: $owner, name: $name) {{{fields}\n  }}\n}}\n"


Query = Callable[[str, dict[str, Any]], dict[str, Any]]  # (query, variables) -> the response's `data`


def blame_via_graphql(query: Query, slug: str, ref: str, path: str, lines: list[int],
                      cache: dict[tuple[str, ...], Any] | None = None) -> Blame:
    """The commit that last changed each of `lines` of `path` at `ref`, looking through commits that only
    reformatted a Python file. `cache` keeps what GitHub answered about history (it does not change) for the next
    blame of the night."""
    wanted = sorted({n for n in lines if n > 0})
    if not wanted:
        return Blame()
    history = _History(query, slug, path, cache if cache is not None else {})
    try:
        out = history.blame(ref, wanted)
    except Exception as exc:  # noqa: BLE001 - the GraphQL API refused or is unreachable: fewer suspects, with why
        return Blame(notes=[f"no blame for {path} from GitHub: {str(exc)[:200]}"])
    missing = len(wanted) - len(out)
    notes = [f"{path}: GitHub's blame has no range for {missing} line(s)"] if missing else []
    out, looked, stopped = history.look_through(ref, out)
    return Blame(lines=out, notes=notes + formatting_notes(path, looked, stopped))


class _History:
    """One file's history as GitHub's GraphQL API tells it: blames at any commit, the file at a commit, a commit's
    parent. Blames and the verdict on each commit checked are asked once per night (`cache`); the files' texts only
    for this blame (a formatting commit's own, which following a line needs, aside)."""

    def __init__(self, query: Query, slug: str, path: str, cache: dict[tuple[str, ...], Any]) -> None:
        self.query, self.path, self.cache = query, path, cache
        self.owner, self.name = slug.split("/", 1)
        self.texts: dict[str, tuple[list[str], str | None]] = {}

    def _asked(self, key: tuple[str, ...], ask: Callable[[], Any]) -> Any:
        if key not in self.cache:
            self.cache[key] = ask()
        return self.cache[key]

    def blame(self, rev: str, lines: Sequence[int]) -> list[BlamedLine]:
        """Who last changed each of `lines` of the file at `rev` (a branch or a commit)."""
        ranges = self._asked(("blame", rev, self.path), lambda: self._ranges(rev))
        return [b for b in (_blamed_line(ranges, line, self.path) for line in lines) if b is not None]

    def _ranges(self, rev: str) -> list[dict[str, Any]]:
        data = self.query(BLAME_QUERY, {"owner": self.owner, "name": self.name, "ref": rev, "path": self.path})
        return ((data.get("repository") or {}).get("object") or {}).get("blame", {}).get("ranges") or []

    def revisions(self, revs: Sequence[str]) -> dict[str, tuple[list[str], str | None]]:
        """Each of `revs` (an oid, or a branch): (its parents, the file's text there: None for a file it does not have,
        binary or too large). Those not asked yet are asked in one query."""
        wanted = [rev for rev in dict.fromkeys(revs) if rev not in self.texts]
        if wanted:
            variables: dict[str, Any] = {"owner": self.owner, "name": self.name}
            for n, rev in enumerate(wanted):
                variables |= {f"rev{n}": rev, f"file{n}": f"{rev}:{self.path}"}
            data = self.query(revisions_query(len(wanted)), variables).get("repository") or {}
            for n, rev in enumerate(wanted):
                self.texts[rev] = _revision(data.get(f"c{n}"), data.get(f"f{n}"))
        return {rev: self.texts[rev] for rev in revs}

    def reformatted(self, shas: Sequence[str]) -> dict[str, tuple[str, dict[int, int], str]]:
        """(parent, where each line came from there, the file after) of each of `shas` that only reformatted the file,
        against its one parent: two queries, one for the commits and one for their parents, the first time."""
        unknown = [sha for sha in shas if ("verdict", sha, self.path) not in self.cache]
        changed = {sha: (parents[0], after) for sha, (parents, after) in self.revisions(unknown).items()
                   if len(parents) == 1 and after is not None} if unknown else {}
        before = self.revisions([parent for parent, _ in changed.values()]) if changed else {}
        for sha in unknown:
            parent, after = changed.get(sha, ("", None))
            old = before[parent][1] if parent else None
            if old is not None and after is not None and formatting_only(old, after, self.path):
                self.cache[("verdict", sha, self.path)] = (parent, lines_before(old, after, self.path), after)
            else:
                self.cache[("verdict", sha, self.path)] = None
        return {sha: verdict for sha in shas if (verdict := self.cache[("verdict", sha, self.path)]) is not None}

    def look_through(self, ref: str, blamed: list[BlamedLine]) -> tuple[list[BlamedLine], list[str], str]:
        """`blamed` (lines of the file at `ref`) with each line a formatting commit last changed blamed again at that
        commit's parent, a few rounds deep; the commits looked through; why it stopped early ("" when it did not). A
        failure keeps the blame that stands."""
        if not judged(self.path):
            return blamed, [], ""
        current = {b.line: b for b in blamed}
        where = {b.line: (ref, b.line) for b in blamed}  # each line, as the revision last blamed numbers it
        looked: list[str] = []
        checked: set[str] = set()
        try:
            for _ in range(FORMATTING_ROUNDS - 1):
                shas = [sha for sha in dict.fromkeys(b.sha for b in current.values()) if sha not in checked][:FORMATTING_CHECKS]
                checked.update(shas)
                found = self.reformatted(shas)
                for sha, change in found.items():
                    if self._follow(sha, change, [line for line, b in current.items() if b.sha == sha], current, where):
                        looked.append(sha)
                if not found:
                    break
        except Exception as exc:  # noqa: BLE001 - GitHub stopped answering: the blame so far stands, and says so
            return sorted(current.values(), key=lambda b: b.line), looked, str(exc) or type(exc).__name__
        return sorted(current.values(), key=lambda b: b.line), looked, ""

    def _follow(self, sha: str, change: tuple[str, dict[int, int], str], lines: list[int],
                current: dict[int, BlamedLine], where: dict[int, tuple[str, int]]) -> int:
        """Blame `lines` again at the parent of formatting commit `sha`: each line as the revision that blamed it
        numbers it, then as `sha` numbers it (the line is unchanged since), then as the parent does (the tree). How
        many lines were blamed again."""
        parent, back, after = change
        moved: dict[int, int] = {}
        texts = self.revisions([where[line][0] for line in lines])
        for rev in texts:
            text = texts[rev][1]
            here = [n for n in lines if where[n][0] == rev]
            same = _same_lines(text, after, [where[n][1] for n in here]) if text is not None else {}
            for line in here:
                in_commit = same.get(where[line][1])
                if in_commit in back:
                    moved[line] = back[in_commit]
        again = {b.line: b for b in self.blame(parent, sorted(set(moved.values())))}
        followed = [line for line, at in moved.items() if at in again]
        for line in followed:
            current[line] = again[moved[line]].model_copy(update={"line": line})
            where[line] = (parent, moved[line])
        return len(followed)


def _revision(commit: Any, blob: Any) -> tuple[list[str], str | None]:
    parents = [(p or {}).get("oid") for p in ((((commit or {}).get("parents") or {}).get("nodes")) or [])]
    blob = blob or {}
    text = blob.get("text")
    usable = isinstance(text, str) and not blob.get("isBinary") and not blob.get("isTruncated")
    return [p for p in parents if isinstance(p, str) and p], \
        text if usable and len(text.encode(errors="replace")) <= FORMATTING_MAX_BYTES else None


def _blamed_line(ranges: list[dict[str, Any]], line: int, path: str) -> BlamedLine | None:
    try:
        return _line_of(ranges, line, path)
    except (ValueError, TypeError, AttributeError):  # a malformed range names nothing; the others still do
        return None


def _line_of(ranges: list[dict[str, Any]], line: int, path: str) -> BlamedLine | None:
    found = next((r for r in ranges if isinstance(r, dict) and r.get("startingLine", 0) <= line <= r.get("endingLine", 0)),
                 None)
    commit = (found or {}).get("commit") or {}
    if not commit.get("oid"):
        return None
    return BlamedLine(line=line, sha=commit["oid"], author=((commit.get("author") or {}).get("name") or ""),
                      committed_at=_when(commit.get("committedDate")), summary=commit.get("messageHeadline") or "",
                      path=path)


def _same_lines(text: str, other: str, lines: Iterable[int]) -> dict[int, int]:
    """For each of `lines` of `text` that `other` has unchanged, its line in `other`. A line blamed on `other`'s
    commit is in `other` as it is: where it is there once, that is it; where it is there several times, the one
    nearest to where the lines around it moved (the nearest line above that both files hold once). Linear in the
    files' size: no alignment of the two, which a large file with many repeated lines makes quadratic."""
    new, old = text.split("\n"), other.split("\n")
    if new == old:
        return {n: n for n in lines if 0 < n <= len(new)}
    where: dict[str, list[int]] = {}
    for number, line in enumerate(old, 1):
        where.setdefault(line, []).append(number)
    seen = Counter(new)
    shift, shifts = 0, []
    for number, line in enumerate(new, 1):
        if seen[line] == 1 and len(where.get(line, ())) == 1:
            shift = where[line][0] - number
        shifts.append(shift)
    found: dict[int, int] = {}
    for number in lines:
        places = where.get(new[number - 1], []) if 0 < number <= len(new) else []
        if places:
            found[number] = min(places, key=lambda p: abs(p - (number + shifts[number - 1])))
    return found


def landing_via_graphql(query: Query, slug: str, sha: str, default_branch: str) -> Landing:
    """The merge of the pull request that brought `sha` to the default branch, or the commit itself."""
    owner, name = slug.split("/", 1)
    try:
        data = query(LANDING_QUERY, {"owner": owner, "name": name, "oid": sha})
        commit = (data.get("repository") or {}).get("object") or {}
    except Exception:  # noqa: BLE001 - no landing known: the suspect keeps its commit time
        return Landing()
    if not commit:
        return Landing()
    merged = sorted((p for p in (commit.get("associatedPullRequests") or {}).get("nodes") or []
                     if p.get("mergedAt") and p.get("baseRefName") == default_branch), key=lambda p: p["mergedAt"])
    if merged:
        return Landing(landed_at=_when(merged[0]["mergedAt"]), pr_number=int(merged[0]["number"]))
    root = (commit.get("parents") or {}).get("totalCount") == 0
    return Landing(landed_at=_when(commit.get("committedDate")), root=root)


def hunk_of_patch(files: list[Any], path: str, limit_lines: int = 40, texts: Sequence[str] = ()) -> str:
    """A commit's patch of `path` (or of the file it was renamed from), as git shows it, capped: the hunks that wrote
    one of `texts` where there are any (nightwatch.codehosts.blame.hunks_writing)."""
    patch = next((getattr(f, "patch", None) or "" for f in files
                  if path in (getattr(f, "filename", None), getattr(f, "previous_filename", None))), "")
    return hunks_writing([line for line in patch.split("\n") if not line.startswith(("--- ", "+++ "))], texts, limit_lines)


def _when(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
