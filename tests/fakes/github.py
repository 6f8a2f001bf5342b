"""A fake of the GitHub REST API subset NightWatch uses, served over HTTP for the real PyGithub client.

    fake = FakeGitHub("acme/shop", default_branch="develop")
    fake.add_file("app/models/order.rb", "class Order\\nend\\n")
    with fake:
        gh = Github(base_url=fake.url, auth=Auth.Token(fake.token), retry=0, seconds_between_requests=0)

State is in memory (branches of files, issues, comments, pull requests, refs); lists paginate with
Link headers like GitHub; `fail_next` injects faults on an exact path (see repo_path()).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import math
import socket
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

from tests.fakes.github_history import GitHistory
from tests.fakes.http import FakeHTTPServer, Reply, Request

T0 = datetime(2026, 11, 20, 3, 0, tzinfo=timezone.utc)


def _iso(when: datetime | None) -> str | None:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


class FakeGitHub:
    def __init__(self, repo: str = "acme/shop", default_branch: str = "main", token: str = "ghp_faketoken1234567890abcdef",
                 history: Path | None = None) -> None:
        self.full_name = repo
        self.owner, self.name = repo.split("/")
        self.default_branch = default_branch
        self.token = token
        self.branches: dict[str, dict[str, bytes]] = {default_branch: {}}
        self.issues: dict[int, dict[str, Any]] = {}  # pull requests are issues too, as on GitHub
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}
        self.commits: list[dict[str, Any]] = []
        self.drafts_supported = True
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1000)
        self._clock = itertools.count(1)
        self.history = GitHistory(history, base=default_branch) if history else None  # blame, commits: from real git
        self.server = FakeHTTPServer()
        self._register_routes()

    # lifecycle ------------------------------------------------------------------------------------
    def __enter__(self) -> "FakeGitHub":
        self.server.start()
        # Replies go out as two writes (headers, then body); without TCP_NODELAY, Nagle plus delayed ACK
        # costs ~40 ms per request. Accepted sockets inherit the option from the listening socket on Linux.
        listener = getattr(self.server, "_server", None)
        if listener is not None:
            listener.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url

    def repo_path(self, suffix: str = "") -> str:
        return f"/repos/{self.full_name}{suffix}"

    def fail_next(self, method: str, path: str, *replies: Reply) -> None:
        self.server.fail_next(method, path, *replies)

    # seeding --------------------------------------------------------------------------------------
    def add_file(self, path: str, text: str | bytes, branch: str | None = None) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.branches.setdefault(branch or self.default_branch, {})[path] = data

    def add_issue(self, title: str, body: str = "", labels: list[str] | None = None, state: str = "open") -> int:
        return self._new_issue(title, body, labels or [], "someone", state)["number"]

    def add_pr(
        self, title: str, files: list[str], author: str = "dana", merged_at: datetime | None = None, head: str | None = None,
        base: str | None = None, body: str = "", state: str = "closed", updated_at: datetime | None = None, draft: bool = False,
    ) -> int:
        issue = self._new_issue(title, body, [], author, state)
        number = issue["number"]
        head = head or f"feature/pr-{number}"
        self.pulls[number] = {
            "number": number, "head": head, "base": base or self.default_branch, "draft": draft, "files": files,
            "merged_at": merged_at, "updated_at": updated_at or merged_at or issue["created_at"],
        }
        issue["pull_request"] = True
        return number

    def close_issue(self, number: int, reason: str = "completed", labels: list[str] | None = None) -> None:
        """What a person does on github.com: close (as completed or not_planned), perhaps with a label."""
        issue = self.issues[number]
        now = self._tick()
        issue.update(state="closed", state_reason=reason, closed_at=now, updated_at=now)
        issue["labels"].extend(label for label in labels or [] if label not in issue["labels"])

    def reopen_issue(self, number: int) -> None:
        now = self._tick()
        self.issues[number].update(state="open", state_reason="reopened", closed_at=None, updated_at=now)

    def merge_pr(self, number: int, at: datetime | None = None) -> None:
        now = at or self._tick()
        self.issues[number].update(state="closed", closed_at=now, updated_at=now)
        self.pulls[number].update(merged_at=now, updated_at=now)

    def close_pr(self, number: int) -> None:
        now = self._tick()
        self.issues[number].update(state="closed", closed_at=now, updated_at=now)
        self.pulls[number]["updated_at"] = now

    # state helpers ---------------------------------------------------------------------------------
    def _tick(self) -> datetime:
        return T0 + timedelta(seconds=next(self._clock))

    def _new_issue(self, title: str, body: str, labels: list[str], author: str, state: str) -> dict[str, Any]:
        number, now = next(self._numbers), self._tick()
        issue = {"number": number, "id": next(self._ids), "title": title, "body": body, "labels": list(labels),
                 "user": author, "state": state, "created_at": now, "updated_at": now, "pull_request": False}
        self.issues[number] = issue
        self.comments[number] = []
        return issue

    def branch_sha(self, branch: str) -> str:
        files = self.branches[branch]
        digest = hashlib.sha1(branch.encode() if not files else b"")
        for path in sorted(files):
            digest.update(path.encode() + b"\x00" + blob_sha(files[path]).encode())
        return digest.hexdigest()

    def _api(self, suffix: str) -> str:
        return f"{self.url}{self.repo_path(suffix)}"

    # JSON shapes ---------------------------------------------------------------------------------
    def _user(self, login: str) -> dict[str, Any]:
        return {"login": login, "id": abs(hash(login)) % 10_000, "type": "User", "url": f"{self.url}/users/{login}"}

    def repo_json(self) -> dict[str, Any]:
        return {"id": 1, "name": self.name, "full_name": self.full_name, "private": False, "owner": self._user(self.owner),
                "default_branch": self.default_branch, "url": self._api(""), "html_url": f"https://github.example/{self.full_name}"}

    def _file_json(self, branch: str, path: str) -> dict[str, Any]:
        data = self.branches[branch][path]
        return {"type": "file", "encoding": "base64", "size": len(data), "name": path.rsplit("/", 1)[-1], "path": path,
                "content": base64.encodebytes(data).decode(), "sha": blob_sha(data),
                "url": self._api(f"/contents/{path}?ref={branch}"), "html_url": f"https://github.example/{self.full_name}/blob/{branch}/{path}"}

    def _entry_json(self, path: str, kind: str, branch: str) -> dict[str, Any]:
        sha = blob_sha(self.branches[branch][path]) if kind == "file" else hashlib.sha1(path.encode()).hexdigest()
        return {"type": kind, "name": path.rsplit("/", 1)[-1], "path": path, "sha": sha, "size": 0,
                "url": self._api(f"/contents/{path}?ref={branch}")}

    def issue_json(self, number: int) -> dict[str, Any]:
        issue = self.issues[number]
        out = {
            "id": issue["id"], "number": number, "title": issue["title"], "body": issue["body"], "state": issue["state"],
            "labels": [{"name": name, "id": abs(hash(name)) % 10_000} for name in issue["labels"]],
            "user": self._user(issue["user"]), "comments": len(self.comments[number]),
            "created_at": _iso(issue["created_at"]), "updated_at": _iso(issue["updated_at"]),
            "closed_at": _iso(issue.get("closed_at")), "state_reason": issue.get("state_reason"),
            "url": self._api(f"/issues/{number}"),
            "html_url": f"https://github.example/{self.full_name}/{'pull' if issue['pull_request'] else 'issues'}/{number}",
        }
        if issue["pull_request"]:
            out["pull_request"] = {"url": self._api(f"/pulls/{number}"), "merged_at": _iso(self.pulls[number]["merged_at"])}
        return out

    def pull_json(self, number: int) -> dict[str, Any]:
        issue, pr = self.issues[number], self.pulls[number]
        def side(ref: str) -> dict[str, Any]:
            sha = self.branch_sha(ref) if ref in self.branches else "0" * 40
            return {"ref": ref, "sha": sha, "label": f"{self.owner}:{ref}"}
        return {
            "id": issue["id"], "number": number, "title": issue["title"], "body": issue["body"], "state": issue["state"],
            "draft": pr["draft"], "merged": pr["merged_at"] is not None, "merged_at": _iso(pr["merged_at"]),
            "created_at": _iso(issue["created_at"]), "updated_at": _iso(pr["updated_at"]),
            "closed_at": _iso(issue.get("closed_at")),
            "user": self._user(issue["user"]), "head": side(pr["head"]), "base": side(pr["base"]),
            "labels": [{"name": name} for name in issue["labels"]],
            "url": self._api(f"/pulls/{number}"), "issue_url": self._api(f"/issues/{number}"),
            "html_url": f"https://github.example/{self.full_name}/pull/{number}",
        }

    def _comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        return {**comment, "user": self._user(comment["user"]), "created_at": _iso(comment["created_at"]),
                "updated_at": _iso(comment["created_at"]), "url": self._api(f"/issues/comments/{comment['id']}")}

    def _ref_json(self, branch: str) -> dict[str, Any]:
        sha = self.branch_sha(branch)
        return {"ref": f"refs/heads/{branch}", "url": self._api(f"/git/refs/heads/{branch}"),
                "object": {"sha": sha, "type": "commit", "url": self._api(f"/git/commits/{sha}")}}

    # routes ----------------------------------------------------------------------------------------
    def _register_routes(self) -> None:
        r = "/repos/{owner}/{repo}"
        routes = [
            ("GET", r, self._get_repo),
            ("GET", r + "/contents(?:/(?P<path>.*))?", self._get_contents),
            ("PUT", r + "/contents/(?P<path>.+)", self._put_contents),
            ("GET", "/search/code", self._search_code),
            ("GET", r + "/pulls", self._list_pulls),
            ("POST", r + "/pulls", self._create_pull),
            ("GET", r + "/pulls/{number}/files", self._pull_files),
            ("GET", r + "/pulls/{number}", self._get_pull),
            ("PATCH", r + "/issues/{number}", self._edit_issue),
            ("GET", r + "/issues", self._list_issues),
            ("POST", r + "/issues", self._create_issue),
            ("GET", r + "/issues/{number}", self._get_issue),
            ("GET", r + "/issues/{number}/comments", self._list_comments),
            ("POST", r + "/issues/{number}/comments", self._create_comment),
            ("POST", r + "/issues/{number}/labels", self._add_labels),
            ("GET", r + "/git/ref/(?P<ref>.+)", self._get_ref),
            ("GET", r + "/git/trees/(?P<tree>.+)", self._get_tree),
            ("POST", r + "/git/refs", self._create_ref),
            ("GET", r + "/commits/{sha}", self._get_commit),
            ("GET", r + "/compare/(?P<base>[^./]+)\\.\\.\\.(?P<head>[^./]+)", self._compare),
            ("POST", "/graphql", self._graphql),
            ("POST", "/api/graphql", self._graphql),
        ]
        for method, pattern, handler in routes:
            self.server.route(method, pattern, self._guarded(handler))

    def _guarded(self, handler: Any) -> Any:
        def run(req: Request) -> Reply:
            auth = req.headers.get("authorization", "")
            if auth not in (f"token {self.token}", f"Bearer {self.token}"):
                return Reply(401, {"message": "Bad credentials"})
            if "owner" in req.params and f"{req.params['owner']}/{req.params['repo']}" != self.full_name:
                return Reply(404, {"message": "Not Found"})
            return handler(req)
        return run

    @staticmethod
    def _q(req: Request, name: str, default: str = "") -> str:
        return req.query.get(name, [default])[-1]

    def _page(self, req: Request, items: list[Any], wrap: dict[str, Any] | None = None) -> Reply:
        per_page, page = int(self._q(req, "per_page", "30")), int(self._q(req, "page", "1"))
        last = max(1, math.ceil(len(items) / per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page < last:
            params = {k: v[-1] for k, v in req.query.items()}
            link = lambda n: f"<{self.url}{req.path}?{urlencode({**params, 'page': n})}>"  # noqa: E731
            headers["Link"] = f'{link(page + 1)}; rel="next", {link(last)}; rel="last"'
        body = {**wrap, "items": chunk} if wrap is not None else chunk
        return Reply(200, body, headers)

    def _graphql(self, req: Request) -> Reply:
        if self.history is None:
            return Reply(200, {"errors": [{"message": "this fake has no history (FakeGitHub(history=...))"}]})
        return Reply(200, self.history.graphql(req.json()))

    def _get_commit(self, req: Request) -> Reply:
        if self.history is None:
            return Reply(404, {"message": "Not Found"})
        try:
            return Reply(200, self.history.rest_commit(req.params["sha"]))
        except subprocess.CalledProcessError:
            return Reply(422, {"message": f"No commit found for SHA: {req.params['sha']}"})

    def _compare(self, req: Request) -> Reply:
        """GET /repos/{owner}/{repo}/compare/{base}...{head}: how head stands to base (the status only)."""
        if self.history is None:
            return Reply(404, {"message": "Not Found"})
        status = self.history.compare(req.params["base"], req.params["head"])
        if status is None:
            return Reply(404, {"message": "Not Found"})
        return Reply(200, {"status": status, "url": self._api(req.path), "ahead_by": 0, "behind_by": 0, "total_commits": 0,
                           "commits": [], "files": []})

    def _get_repo(self, req: Request) -> Reply:
        return Reply(200, self.repo_json())

    def _get_contents(self, req: Request) -> Reply:
        branch = self._q(req, "ref") or self.default_branch
        path = unquote(req.params.get("path") or "").strip("/")
        files = self.branches.get(branch)
        if files is None:
            return Reply(404, {"message": f"No commit found for the ref {branch}"})
        if path not in files and branch == self.default_branch and self.history and (blob := self.history.blob(path)) is not None:
            files[path] = blob  # a fake made from a real history serves that history's files
        if path in files:
            return Reply(200, self._file_json(branch, path))
        prefix = f"{path}/" if path else ""
        children = {p[len(prefix):].split("/", 1)[0]: "/" in p[len(prefix):] for p in files if p.startswith(prefix)}
        if not children:
            return Reply(404, {"message": "Not Found"})
        return Reply(200, [self._entry_json(prefix + name, "dir" if is_dir else "file", branch) for name, is_dir in sorted(children.items())])

    def _put_contents(self, req: Request) -> Reply:
        path, body = unquote(req.params["path"]), req.json()
        branch = body.get("branch") or self.default_branch
        if branch not in self.branches:
            return Reply(404, {"message": f"Branch {branch} not found"})
        files = self.branches[branch]
        if path in files and body.get("sha") != blob_sha(files[path]):
            status, msg = (422, 'Invalid request.\n\n"sha" wasn\'t supplied.') if not body.get("sha") else (409, f"{path} does not match")
            return Reply(status, {"message": msg})
        created = path not in files
        files[path] = base64.b64decode(body["content"])
        self.commits.append({"branch": branch, "path": path, "message": body["message"]})
        commit = {"sha": self.branch_sha(branch), "message": body["message"], "url": self._api(f"/git/commits/{self.branch_sha(branch)}")}
        return Reply(201 if created else 200, {"content": self._file_json(branch, path), "commit": commit})

    def _search_code(self, req: Request) -> Reply:
        terms, quals = [], {}
        for token in self._q(req, "q").split():
            key, sep, value = token.partition(":")
            if sep and key in ("repo", "path", "extension", "filename"):
                quals[key] = value
            else:
                terms.append(token.lower())
        if quals.get("repo") != self.full_name:
            return Reply(422, {"message": "Validation Failed", "errors": [{"message": "repo qualifier required"}]})
        files = self.branches[self.default_branch]
        items = [self._search_item(p) for p in sorted(files) if self._search_match(p, files[p], terms, quals)]
        return self._page(req, items, {"total_count": len(items), "incomplete_results": False})

    @staticmethod
    def _search_match(path: str, data: bytes, terms: list[str], quals: dict[str, str]) -> bool:
        text = data.decode("utf-8", "replace").lower()
        if "path" in quals and not (path + "/").startswith(quals["path"].strip("/") + "/"):
            return False
        if "extension" in quals and not path.endswith("." + quals["extension"]):
            return False
        if "filename" in quals and path.rsplit("/", 1)[-1] != quals["filename"]:
            return False
        return all(t in text for t in terms)

    def _search_item(self, path: str) -> dict[str, Any]:
        data = self.branches[self.default_branch][path]
        return {"name": path.rsplit("/", 1)[-1], "path": path, "sha": blob_sha(data), "score": 1.0,
                "url": self._api(f"/contents/{path}"), "html_url": f"https://github.example/{self.full_name}/blob/x/{path}",
                "repository": self.repo_json()}

    def _list_pulls(self, req: Request) -> Reply:
        state = self._q(req, "state", "open")
        key = "updated_at" if self._q(req, "sort", "created") == "updated" else "created_at"
        numbers = [n for n in self.pulls if state == "all" or self.issues[n]["state"] == state]
        pick = lambda n: self.pulls[n][key] if key == "updated_at" else self.issues[n][key]  # noqa: E731
        numbers.sort(key=lambda n: (pick(n), n), reverse=self._q(req, "direction", "desc") == "desc")
        return self._page(req, [self.pull_json(n) for n in numbers])

    def _create_pull(self, req: Request) -> Reply:
        body = req.json()
        head, base = body["head"].split(":")[-1], body["base"]
        errors = [f"{name} branch {ref} does not exist" for name, ref in (("base", base), ("head", head)) if ref not in self.branches]
        if not errors and self.branches[head] == self.branches[base]:
            errors.append(f"No commits between {base} and {head}")
        if any(p["head"] == head and self.issues[n]["state"] == "open" for n, p in self.pulls.items()):
            errors.append(f"A pull request already exists for {self.owner}:{head}.")
        if body.get("draft") and not self.drafts_supported:
            errors.append("Draft pull requests are not supported in this repository.")
        if errors:
            return Reply(422, {"message": "Validation Failed", "errors": [{"message": e} for e in errors]})
        number = self.add_pr(body["title"], files=self._diff(base, head), author="nightwatch-bot", head=head, base=base,
                             body=body.get("body") or "", state="open", draft=bool(body.get("draft")))
        return Reply(201, self.pull_json(number))

    def _diff(self, base: str, head: str) -> list[str]:
        old, new = self.branches[base], self.branches[head]
        return sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))

    def _get_pull(self, req: Request) -> Reply:
        number = int(req.params["number"])
        return Reply(200, self.pull_json(number)) if number in self.pulls else Reply(404, {"message": "Not Found"})

    def _edit_issue(self, req: Request) -> Reply:
        number = int(req.params["number"])
        if number not in self.issues:
            return Reply(404, {"message": "Not Found"})
        state = req.json().get("state")
        if state == "open":
            self.reopen_issue(number)
        elif state == "closed":
            self.close_issue(number, req.json().get("state_reason") or "completed")
        return Reply(200, self.issue_json(number))

    def _pull_files(self, req: Request) -> Reply:
        number = int(req.params["number"])
        if number not in self.pulls:
            return Reply(404, {"message": "Not Found"})
        files = [{"filename": f, "status": "modified", "additions": 1, "deletions": 1, "changes": 2, "sha": "0" * 40}
                 for f in self.pulls[number]["files"]]
        return self._page(req, files)

    def _list_issues(self, req: Request) -> Reply:
        state = self._q(req, "state", "open")
        wanted = {label for label in self._q(req, "labels").split(",") if label}
        since = self._q(req, "since")
        numbers = [n for n, i in self.issues.items()
                   if (state == "all" or i["state"] == state) and wanted <= set(i["labels"])
                   and (not since or _iso(i["updated_at"]) >= since)]
        key = "updated_at" if self._q(req, "sort", "created") == "updated" else "created_at"
        numbers.sort(key=lambda n: (self.issues[n][key], n), reverse=self._q(req, "direction", "desc") == "desc")
        return self._page(req, [self.issue_json(n) for n in numbers])

    def _create_issue(self, req: Request) -> Reply:
        body = req.json()
        if not body.get("title"):
            return Reply(422, {"message": "Validation Failed", "errors": [{"message": "title is missing"}]})
        issue = self._new_issue(body["title"], body.get("body") or "", body.get("labels") or [], "nightwatch-bot", "open")
        return Reply(201, self.issue_json(issue["number"]))

    def _get_issue(self, req: Request) -> Reply:
        number = int(req.params["number"])
        return Reply(200, self.issue_json(number)) if number in self.issues else Reply(404, {"message": "Not Found"})

    def _list_comments(self, req: Request) -> Reply:
        number = int(req.params["number"])
        if number not in self.issues:
            return Reply(404, {"message": "Not Found"})
        return self._page(req, [self._comment_json(c) for c in self.comments[number]])

    def _create_comment(self, req: Request) -> Reply:
        number = int(req.params["number"])
        if number not in self.issues:
            return Reply(404, {"message": "Not Found"})
        comment = {"id": next(self._ids), "body": req.json()["body"], "user": "nightwatch-bot", "created_at": self._tick(),
                   "html_url": f"https://github.example/{self.full_name}/issues/{number}#comment"}
        self.comments[number].append(comment)
        return Reply(201, self._comment_json(comment))

    def _add_labels(self, req: Request) -> Reply:
        number = int(req.params["number"])
        if number not in self.issues:
            return Reply(404, {"message": "Not Found"})
        labels = self.issues[number]["labels"]
        payload = req.json()
        labels.extend(n for n in (payload.get("labels", []) if isinstance(payload, dict) else payload) if n not in labels)
        return Reply(200, [{"name": n} for n in labels])

    def _get_tree(self, req: Request) -> Reply:
        """GET /git/trees/{sha}: a branch name or its sha; `recursive` lists every blob, else the top level."""
        tree = unquote(req.params["tree"])
        branch = next((b for b in self.branches if tree in (b, self.branch_sha(b))), None)
        if branch is None:
            return Reply(404, {"message": "Not Found"})
        files = self.branches[branch]
        recursive = bool(self._q(req, "recursive"))
        paths = sorted(files) if recursive else sorted({p.split("/", 1)[0] for p in files})
        entries = [{"path": p, "mode": "100644" if p in files else "040000", "type": "blob" if p in files else "tree",
                    "sha": blob_sha(files[p]) if p in files else hashlib.sha1(p.encode()).hexdigest(),
                    "size": len(files[p]) if p in files else None, "url": self._api(f"/git/blobs/{p}")} for p in paths]
        return Reply(200, {"sha": self.branch_sha(branch), "url": self._api(f"/git/trees/{tree}"), "tree": entries,
                           "truncated": False})

    def _get_ref(self, req: Request) -> Reply:
        ref = unquote(req.params["ref"])
        branch = ref.removeprefix("heads/")
        if not ref.startswith("heads/") or branch not in self.branches:
            return Reply(404, {"message": "Not Found"})
        return Reply(200, self._ref_json(branch))

    def _create_ref(self, req: Request) -> Reply:
        body = req.json()
        ref, sha = body.get("ref", ""), body.get("sha", "")
        if not ref.startswith("refs/heads/"):
            return Reply(422, {"message": "Reference name must start with 'refs/' and have at least two slashes."})
        branch = ref.removeprefix("refs/heads/")
        if branch in self.branches:
            return Reply(422, {"message": "Reference already exists"})
        source = next((b for b in self.branches if self.branch_sha(b) == sha), None)
        if source is None:
            return Reply(422, {"message": "Object does not exist"})
        self.branches[branch] = dict(self.branches[source])
        return Reply(201, self._ref_json(branch))
