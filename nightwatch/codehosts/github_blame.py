"""Who last changed a line, from GitHub: the GraphQL API's blame of a file at the default branch, the pull request
that brought a commit there (`associatedPullRequests`), and a commit's patch of one file (REST).

GitHub blames the whole file (its ranges cannot be narrowed), without git's -w and -M: a whitespace-only commit names
itself where local git would look through it. Every failure is an answer with fewer lines and the reason, never an
exception, as for local git (nightwatch/codehosts/blame.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Callable

from nightwatch.codehosts.blame import Blame, BlamedLine, Landing, hunks_writing

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

Query = Callable[[str, dict[str, Any]], dict[str, Any]]  # (query, variables) -> the response's `data`


def blame_via_graphql(query: Query, slug: str, ref: str, path: str, lines: list[int]) -> Blame:
    """The commit that last changed each of `lines` of `path` at `ref`."""
    wanted = sorted({n for n in lines if n > 0})
    if not wanted:
        return Blame()
    owner, name = slug.split("/", 1)
    try:
        data = query(BLAME_QUERY, {"owner": owner, "name": name, "ref": ref, "path": path})
        ranges = ((data.get("repository") or {}).get("object") or {}).get("blame", {}).get("ranges") or []
    except Exception as exc:  # noqa: BLE001 - the GraphQL API refused or is unreachable: fewer suspects, with why
        return Blame(notes=[f"no blame for {path} from GitHub: {str(exc)[:200]}"])
    out = []
    for line in wanted:
        found = next((r for r in ranges if r.get("startingLine", 0) <= line <= r.get("endingLine", 0)), None)
        commit = (found or {}).get("commit") or {}
        if commit.get("oid"):
            out.append(BlamedLine(line=line, sha=commit["oid"], author=((commit.get("author") or {}).get("name") or ""),
                                  committed_at=_when(commit.get("committedDate")), summary=commit.get("messageHeadline") or "",
                                  path=path))
    missing = len(wanted) - len(out)
    return Blame(lines=out, notes=[f"{path}: GitHub's blame has no range for {missing} line(s)"] if missing else [])


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
