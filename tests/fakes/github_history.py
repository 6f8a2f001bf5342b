"""What the fake GitHub answers about history, from a real git repository: GraphQL `blame` ranges and a commit's
`associatedPullRequests`, and the REST commit with its files' patches, in the shapes GitHub's API documents.

GitHub's blame is git's, of the whole file at a branch or a commit, without -w or -M; a file at a revision is a
`Blob` (`text`, null when binary); a commit's pull request is the one whose merge brought it to the default branch: GitHub records a merge as "Merge pull request #N from ...", a squash as "Title (#N)". The
fake reads both from git itself. The GraphQL queries it answers are recognised by the fields they ask for; anything
else is a GraphQL error, as GitHub answers an unknown field.
"""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

_MERGE = re.compile(r"^Merge pull request #(\d+) from ")
_SQUASH = re.compile(r"\(#(\d+)\)$")
_HEADER = re.compile(r"^([0-9a-f]{40}) \d+ (\d+)(?: (\d+))?$")


def _committed(meta: dict[str, str]) -> str:
    """The committer date blame's porcelain gives (`committer-time`, `committer-tz`), as `git log --format=%cI` prints it."""
    tz = meta["committer-tz"]
    offset = timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * (-1 if tz[0] == "-" else 1)
    return datetime.fromtimestamp(int(meta["committer-time"]), timezone(offset)).isoformat()


class GitHistory:
    def __init__(self, repo: Path, branch: str = "HEAD", base: str = "main") -> None:
        self.repo, self.branch, self.base = repo, branch, base  # base: the default branch's name on GitHub

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], capture_output=True, text=True, check=True,
                              timeout=60).stdout

    def blob(self, path: str) -> bytes | None:
        """The file's bytes on the branch, as the contents API serves the default branch; None when it has none."""
        done = subprocess.run(["git", "-C", str(self.repo), "show", f"{self.branch}:{path}"], capture_output=True, timeout=60)
        return done.stdout if done.returncode == 0 and path else None

    def graphql(self, body: dict[str, Any]) -> dict[str, Any]:
        query, variables = body.get("query", ""), body.get("variables") or {}
        try:
            if "blame(path:" in query:
                ranges = self.ranges(variables["path"], self._rev(variables["ref"]))
                return {"data": {"repository": {"object": {"blame": {"ranges": ranges}}}}}
            if "... on Blob" in query:  # aliased: c<n> the commit, f<n> the file, for each rev<n>
                answer: dict[str, Any] = {}
                for n in range(sum(1 for key in variables if key.startswith("rev"))):
                    commit, blob = self.revision(variables[f"rev{n}"], variables[f"file{n}"])
                    answer |= {f"c{n}": commit, f"f{n}": blob}
                return {"data": {"repository": answer}}
            if "associatedPullRequests" in query:
                return {"data": {"repository": {"object": self.commit(variables["oid"])}}}
        except subprocess.CalledProcessError as exc:
            return {"data": {"repository": {"object": None}},
                    "errors": [{"type": "NOT_FOUND", "message": exc.stderr.strip()[:200]}]}
        return {"errors": [{"message": "the fake answers blame, Blob and associatedPullRequests queries only"}]}

    def _rev(self, expression: str) -> str:
        """A revision as git here names it: the default branch's name on GitHub is this repository's branch."""
        return self.branch if expression == self.base else expression

    def revision(self, rev: str, file: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """`object(expression: rev) { ... on Commit { parents } }` and `object(expression: "rev:path") { ... on Blob }`:
        null for what the repository does not have."""
        known = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "--verify", "--quiet", f"{self._rev(rev)}^{{commit}}"],
                               capture_output=True, text=True, check=False)
        commit = None
        if known.returncode == 0:
            parents = self._git("log", "-1", "--format=%P", known.stdout.strip()).split()
            commit = {"parents": {"nodes": [{"oid": p} for p in parents[:2]]}}
        at, _, path = file.partition(":")
        shown = subprocess.run(["git", "-C", str(self.repo), "show", f"{self._rev(at)}:{path}"], capture_output=True,
                               timeout=60, check=False)
        blob = None
        if shown.returncode == 0 and path:
            try:
                blob = {"text": shown.stdout.decode(), "isBinary": False, "isTruncated": False}
            except UnicodeDecodeError:
                blob = {"text": None, "isBinary": True, "isTruncated": False}
        return commit, blob

    def ranges(self, path: str, rev: str | None = None) -> list[dict[str, Any]]:
        """Blame of the whole file at the branch (or at `rev`), as consecutive ranges of one commit each."""
        text = self._git("blame", "--porcelain", rev or self.branch, "--", path)
        info: dict[str, dict[str, str]] = {}
        lines: list[tuple[int, str]] = []
        sha = ""
        for raw in text.splitlines():
            head = _HEADER.match(raw)
            if head:
                sha = head[1]
                lines.append((int(head[2]), sha))
                info.setdefault(sha, {})
            elif not raw.startswith("\t") and sha:
                key, _, value = raw.partition(" ")
                info[sha].setdefault(key, value)
        ranges: list[dict[str, Any]] = []
        for number, sha in sorted(lines):
            if ranges and ranges[-1]["commit"]["oid"] == sha and ranges[-1]["endingLine"] == number - 1:
                ranges[-1]["endingLine"] = number
                continue
            ranges.append({"startingLine": number, "endingLine": number, "age": 1, "commit": self._commit_node(sha, info[sha])})
        return ranges

    def _commit_node(self, sha: str, meta: dict[str, str]) -> dict[str, Any]:
        return {"oid": sha, "committedDate": _committed(meta), "messageHeadline": meta.get("summary", ""),
                "author": {"name": meta.get("author", "")}}

    def commit(self, sha: str) -> dict[str, Any]:
        when, subject, parents = self._git("log", "-1", "--format=%cI%x1f%s%x1f%P", sha).strip("\n").split("\x1f")
        return {"committedDate": when, "messageHeadline": subject,
                "parents": {"totalCount": len(parents.split())},
                "associatedPullRequests": {"nodes": self._pulls_of(sha, when, subject)}}

    def _pulls_of(self, sha: str, when: str, subject: str) -> list[dict[str, Any]]:
        # the pull request whose merge brought the commit to the base branch: the oldest merge of the branch's own line
        # that descends from it, unless the commit was on that line already (pushed, or a squash)
        merges = self._git("log", "--merges", "--first-parent", "--ancestry-path", "--reverse", "--format=%H%x1f%cI%x1f%s",
                           f"{sha}..{self.branch}").splitlines()
        if merges:
            merge, merged_at, title = merges[0].split("\x1f", 2)
            if not self._ancestor(sha, f"{merge}^1") and (m := _MERGE.match(title)):
                return [{"number": int(m[1]), "mergedAt": merged_at, "baseRefName": self.base}]
        if m := _SQUASH.search(subject):
            return [{"number": int(m[1]), "mergedAt": when, "baseRefName": self.base}]
        return []

    def compare(self, base: str, head: str) -> str | None:
        """GitHub's compare status of `head` against `base`: identical, ahead, behind or diverged; None for an unknown
        commit."""
        known = [subprocess.run(["git", "-C", str(self.repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                                capture_output=True, text=True, check=False) for ref in (base, head)]
        if any(k.returncode != 0 for k in known):
            return None
        if known[0].stdout == known[1].stdout:
            return "identical"
        return "ahead" if self._ancestor(base, head) else "behind" if self._ancestor(head, base) else "diverged"

    def _ancestor(self, ancestor: str, descendant: str) -> bool:
        return subprocess.run(["git", "-C", str(self.repo), "merge-base", "--is-ancestor", ancestor, descendant],
                              capture_output=True, check=False).returncode == 0

    def rest_commit(self, sha: str) -> dict[str, Any]:
        """GET /repos/{owner}/{repo}/commits/{sha}: the commit with each file's status and patch."""
        full = self._git("rev-parse", sha).strip()
        names = self._git("show", "--format=", "-M", "--name-status", full).splitlines()
        files = []
        for row in names:
            parts = row.split("\t")
            status, path = parts[0], parts[-1]
            patch = self._git("show", "--format=", "--no-color", "-M", "--unified=2", full, "--", *parts[1:])
            lines = patch.splitlines()
            body = "\n".join(lines[next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines)):])
            entry = {"sha": full, "filename": path, "status": {"A": "added", "D": "removed"}.get(status[0], "modified"),
                     "additions": 0, "deletions": 0, "changes": 0, "patch": body}
            if status.startswith("R"):
                entry |= {"status": "renamed", "previous_filename": parts[1]}
            files.append(entry)
        return {"sha": full, "files": files, "commit": {"message": self._git("log", "-1", "--format=%B", full)}}
