"""GitHub as the code host, over PyGithub: contents, code search and merged pull requests.

`github_client()` and `github_errors()` are shared with the issue and pull-request publishers so
retries, pacing and error messages are the same wherever NightWatch talks to GitHub. Retries cover
reads and idempotent writes (GET, PUT, …) on 429/5xx; POSTs are not retried at the HTTP level because
a retried "create issue" could create two issues; the publishers are idempotent by fingerprint instead,
so the task-level retry is safe.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from itertools import islice
from typing import Any, Callable, Iterator, TypedDict

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.GithubException import (
    BadAttributeException,
    BadCredentialsException,
    RateLimitExceededException,
    UnknownObjectException,
)
from github.Repository import Repository
from pydantic import SecretStr
from urllib3 import Retry

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
from nightwatch.codehosts.blame import Blame, Landing
from nightwatch.codehosts.github_blame import blame_via_graphql, hunk_of_patch, landing_via_graphql
from nightwatch.models import CorrelatedPR

REPO_SLUG = re.compile(r"^[\w.-]+/[\w.-]+$")
MAX_PRS_SCANNED = 200  # closed PRs looked at per call, newest update first
MAX_FILES_PER_PR = 300
FILES_KEPT = 256  # files a night keeps once read (the contents API serves at most 1 MB each)
RATE_LIMIT_MAX_WAIT_S = 60  # wait out a short rate-limit reset; a longer one fails the call with a clear message
# Paginated lists are cut with itertools.islice, never sliced: PyGithub 2.x raises IndexError when a
# slice of an empty result is iterated.


PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 410, 422})  # a rate limit's 403 is RateLimitExceededException


class GitHubError(CodeHostError):
    """A GitHub API call failed; `status` is the HTTP status when there was one. `permanent`: trying again cannot
    help (a rejected token, a missing repository, permissions, a refused body), as a rate limit or a 5xx can."""

    def __init__(self, message: str, status: int | None = None, permanent: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.permanent = permanent


@dataclass(frozen=True)
class Pacing:
    """How a GitHub client waits and retries: per-request timeout, retries on 429/5xx with backoff, and polite pacing."""

    timeout: int = 15
    retries: int = 3
    backoff_factor: float = 0.5
    seconds_between_requests: float | None = 0.25
    seconds_between_writes: float | None = 1.0


def github_client(token: SecretStr | str, base_url: str = "https://api.github.com", pacing: Pacing = Pacing()) -> Github:
    """A PyGithub client with bounded retries on 429/5xx for idempotent methods and polite pacing."""
    secret = token.get_secret_value() if isinstance(token, SecretStr) else token
    if not secret:
        raise GitHubError("no GitHub token: set GITHUB_TOKEN (or NIGHTWATCH_GITHUB_TOKEN)")
    retry = GithubRetry(
        total=pacing.retries, backoff_factor=pacing.backoff_factor, status_forcelist=[429, *range(500, 600)],
        allowed_methods=Retry.DEFAULT_ALLOWED_METHODS, max_rate_limit_wait=RATE_LIMIT_MAX_WAIT_S,
    )
    return Github(
        base_url=base_url.rstrip("/"), auth=Auth.Token(secret), timeout=pacing.timeout, retry=retry, per_page=100,
        seconds_between_requests=pacing.seconds_between_requests, seconds_between_writes=pacing.seconds_between_writes,
    )


@contextmanager
def github_errors(doing: str, not_found: str | None = None) -> Iterator[None]:
    """Turn PyGithub and transport exceptions into one GitHubError with a message a person can act on."""
    try:
        yield
    except UnknownObjectException as exc:
        raise GitHubError(not_found or f"not found on GitHub while {doing}", 404, permanent=True) from exc
    except BadCredentialsException as exc:
        raise GitHubError(f"GitHub rejected the token (401) while {doing}: check GITHUB_TOKEN", 401, permanent=True) from exc
    except RateLimitExceededException as exc:
        raise GitHubError(f"GitHub rate limit reached while {doing}; try again later", exc.status) from exc
    except GithubException as exc:
        if exc.status == 404:
            raise GitHubError(not_found or f"not found on GitHub while {doing}", 404, permanent=True) from exc
        hint = " (check the token's permissions)" if exc.status == 403 else ""
        raise GitHubError(f"GitHub API error {exc.status} while {doing}: {_message(exc)}{hint}", exc.status,
                          permanent=exc.status in PERMANENT_STATUSES) from exc
    except requests.exceptions.RetryError as exc:
        raise GitHubError(f"GitHub kept failing while {doing}; gave up after retries ({_reason(exc)})") from exc
    except requests.exceptions.RequestException as exc:
        what = "did not answer in time" if "timed out" in str(exc).lower() else "was unreachable"
        raise GitHubError(f"GitHub {what} while {doing}") from exc
    except (ValueError, BadAttributeException) as exc:
        raise GitHubError(f"GitHub sent a malformed reply while {doing}") from exc


def _reason(exc: Exception) -> str:
    found = re.search(r"too many \d+ error responses", str(exc))
    return found.group(0) if found else type(exc).__name__


def open_repository(gh: Github, repo: str) -> Repository:
    """The repository object (one GET), or a GitHubError saying it is missing or invisible to the token."""
    with github_errors(f"opening {repo}", not_found=f"GitHub repository not found or not visible: {repo}"):
        return gh.get_repo(repo)


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    details = "; ".join(str(e.get("message", e)) for e in data.get("errors", []) if isinstance(e, dict))
    text = str(data.get("message") or exc.message or "no message")
    return f"{text} ({details})" if details else text


class GitHubRepoAdapter:
    """What every GitHub adapter shares: a configured client and the repository, opened on first use."""

    def __init__(self, repo: str, token: SecretStr, base_url: str = "https://api.github.com", *, label: str = "nightwatch",
                 **pacing: Any) -> None:
        """`pacing`: the fields of `Pacing` to change (timeout, retries, backoff_factor, seconds_between_*)."""
        if not REPO_SLUG.match(repo or ""):
            raise CodeHostError(f"GitHub repository must look like owner/name, got {repo!r}")
        self.repo_name, self.label = repo, label
        self._gh = github_client(token, base_url, Pacing(**pacing))

    @cached_property
    def repository(self) -> Repository:
        return open_repository(self._gh, self.repo_name)

    def close(self) -> None:
        """Close the client's connection pool (the night is over)."""
        self._gh.close()


class GitHubHost(GitHubRepoAdapter):
    """One GitHub repository's default branch, read through the REST API.

    A host serves one night: each file is fetched once and kept (up to FILES_KEPT, least recently read first out),
    so its digest, its preview, its suspects' lines and every range the agent reads come from one request and agree
    with each other, even if the branch moves during the night."""

    search_is_exhaustive = False  # code search ranks files; the lines are read from the first max_search_files

    def __init__(self, repo: str, token: SecretStr, *args: Any, max_search_files: int = 10, **kwargs: Any) -> None:
        super().__init__(repo, token, *args, **kwargs)
        self.name = f"github:{repo}"
        self.max_search_files = max_search_files
        self._kept: OrderedDict[str, bytes] = OrderedDict()
        self._kept_lock = threading.Lock()
        self._history: dict[tuple[str, ...], Any] = {}  # what GitHub said about past commits: blames, files, parents

    # reading ------------------------------------------------------------------------------------
    def _contents(self, rel: str, missing: str) -> Any:
        with github_errors(f"reading {rel or '/'}", not_found=missing):
            return self.repository.get_contents(rel)

    def _file_bytes(self, path: str) -> tuple[str, bytes]:
        rel = safe_relative_path(path)
        with self._kept_lock:
            if rel in self._kept:
                self._kept.move_to_end(rel)
                return rel, self._kept[rel]
        rel, data = self._fetch_file(rel)
        with self._kept_lock:
            self._kept[rel] = data
            while len(self._kept) > FILES_KEPT:
                self._kept.popitem(last=False)
        return rel, data

    def _fetch_file(self, rel: str) -> tuple[str, bytes]:
        content = self._contents(rel, f"no such file: {rel} (list_directory or search_code can find the right path)")
        if isinstance(content, list):
            raise CodeHostError(f"{rel} is a directory; use list_directory")
        if content.type is None:
            raise GitHubError(f"GitHub sent a malformed reply while reading {rel}")
        if content.type != "file":
            raise CodeHostError(f"{rel} is a {content.type}, not a file")
        if content.encoding != "base64":
            raise CodeHostError(f"file too large to read through the GitHub API: {rel} ({content.size:,} bytes)")
        return rel, content.decoded_content

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None, numbered: bool = False
    ) -> str:
        rel = safe_relative_path(path)
        reason = secret_file_reason(rel)
        if reason:  # refused before anything is fetched
            raise withheld(rel, reason)
        rel, data = self._file_bytes(rel)
        text = decode_text(rel, data)
        reason = secret_text_reason(text)
        if reason:
            raise withheld(rel, reason)
        return render_file(rel, text, start_line, end_line, numbered)

    def read_text(self, path: str) -> str:
        rel, data = self._file_bytes(path)
        if len(data) > SEARCH_MAX_FILE_BYTES:
            raise CodeHostError(f"file too large to read whole: {rel} ({len(data):,} bytes)")
        return decode_text(rel, data)

    def file_digest(self, path: str) -> str | None:
        """sha256 of the file as this night first read it; None when it is not a file of this repository."""
        return self._digest(self._file_bytes, path)

    def current_digest(self, path: str) -> str | None:
        """sha256 of the file on the default branch now, asked anew (what a fix is committed over)."""
        return self._digest(lambda p: self._fetch_file(safe_relative_path(p)), path)

    @staticmethod
    def _digest(read: Callable[[str], tuple[str, bytes]], path: str) -> str | None:
        try:
            return digest_bytes(read(path)[1])
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        except CodeHostError:
            return None

    def list_directory(self, path: str = "") -> list[str]:
        """Repository-relative paths of a folder's entries, folders ending with '/'."""
        rel = safe_relative_path(path, allow_root=True)
        contents = self._contents(rel, f"no such directory: {rel}")
        if not isinstance(contents, list):
            raise CodeHostError(f"{rel} is a file; use read_file")
        return sorted(c.path + "/" if c.type == "dir" else c.path for c in contents if not secret_file_reason(c.path))

    @cached_property
    def _tree(self) -> frozenset[str]:
        with github_errors("listing the repository's files"):
            tree = self.repository.get_git_tree(self.default_branch(), recursive=True)
        return frozenset(item.path for item in tree.tree if item.type == "blob" and item.path)

    def tracked_files(self) -> frozenset[str]:
        """The default branch's files, from one recursive git tree request (a truncated tree maps what it lists)."""
        return self._tree

    # search -------------------------------------------------------------------------------------
    def search_code(
        self, query: str, path_glob: str | None = None, limit: int = 20, regex: bool = False
    ) -> list[SearchHit]:
        """GitHub code search narrows the files; the lines are then found in each file's text."""
        matches = line_matcher(query, regex)
        qualifiers: _Qualifiers = {"repo": self.repo_name, **_glob_qualifiers(path_glob)}
        hits: list[SearchHit] = []
        with github_errors(f"searching code for {query!r}"):
            results = self._gh.search_code(_search_terms(query, regex), **qualifiers)
            for item in islice(results, self.max_search_files):
                if glob_matches(item.path, path_glob):
                    hits.extend(self._hits_in(item.path, matches, fallback=not regex)[: limit - len(hits)])
                if len(hits) >= limit:
                    break
        return hits

    def _hits_in(self, path: str, matches: Any, fallback: bool) -> list[SearchHit]:
        """The matching lines of one file; with `fallback`, a line-0 hit when GitHub's words span lines."""
        if secret_file_reason(path):
            return []
        try:
            _, data = self._file_bytes(path)
        except CodeHostError:
            data = b""
        if looks_binary(data) or len(data) > SEARCH_MAX_FILE_BYTES:
            return []
        text = data.decode("utf-8", errors="replace")
        if secret_text_reason(text):
            return []
        lines = text.splitlines()
        found = [SearchHit(path=path, line=n, text=hit_text(line)) for n, line in enumerate(lines, 1) if matches(line)]
        if found or not fallback:
            return found
        return [SearchHit(path=path, line=0, text="matched by GitHub code search (not on a single line)")]

    # repository facts ---------------------------------------------------------------------------
    def default_branch(self) -> str:
        with github_errors(f"reading the default branch of {self.repo_name}"):
            return self.repository.default_branch

    def recent_merged_prs(self, since: datetime, limit: int = 30) -> list[CorrelatedPR]:
        """PRs merged into the default branch since `since`, newest update first, with their files."""
        since = since if since.tzinfo else since.replace(tzinfo=timezone.utc)
        base = self.default_branch()
        found: list[CorrelatedPR] = []
        with github_errors("listing merged pull requests"):
            for pr in islice(self.repository.get_pulls(state="closed", sort="updated", direction="desc"), MAX_PRS_SCANNED):
                if pr.updated_at and pr.updated_at < since:
                    break
                if pr.merged_at is None or pr.merged_at < since or pr.base.ref != base:
                    continue
                files = [f.filename for f in islice(pr.get_files(), MAX_FILES_PER_PR)]
                author = pr.user.login if pr.user else ""
                found.append(CorrelatedPR(number=pr.number, title=pr.title, url=pr.html_url, author=author,
                                          merged_at=pr.merged_at, files=files))
                if len(found) >= limit:
                    break
        return found

    # who changed what: the evidence for suspect commits (nightwatch.suspects) --------------------------------

    def blame(self, path: str, lines: list[int]) -> Blame:
        rel = safe_relative_path(path)
        return blame_via_graphql(self._graphql, self.repo_name, self.default_branch(), rel, lines, cache=self._history)

    def landing(self, sha: str) -> Landing:
        return landing_via_graphql(self._graphql, self.repo_name, sha, self.default_branch())

    def hunk(self, sha: str, path: str, texts: Sequence[str] = ()) -> str:
        try:
            with github_errors(f"reading commit {sha[:12]}"):
                return hunk_of_patch(list(islice(self.repository.get_commit(sha).files, 300)), path, texts=texts)
        except CodeHostError:
            return ""

    def contains(self, release: str, sha: str) -> bool | None:
        """Whether the commit `release` (a deploy marker's) includes `sha`, by GitHub's compare of the two; None when
        GitHub cannot tell (a commit it does not have)."""
        if not are_commit_ids(release, sha):
            return None
        try:
            with github_errors(f"comparing {sha[:12]} with {release[:12]}"):
                status = self.repository.compare(sha, release).status
        except CodeHostError:
            return None
        return {"ahead": True, "identical": True, "behind": False, "diverged": False}.get(status)

    def commits_between(self, older: str, newer: str, limit: int = 20) -> tuple[int, list[str]] | None:
        """(how many commits `newer` has that `older` has not, the newest `limit` as "<sha> <subject>"), by GitHub's
        compare (its first page lists up to 250, oldest first); None when GitHub cannot tell."""
        if not are_commit_ids(older, newer):
            return None
        try:
            with github_errors(f"comparing {older[:12]} with {newer[:12]}"):
                comparison = self.repository.compare(older, newer)
                if comparison.status not in ("ahead", "identical"):
                    return None
                listed = list(islice(comparison.commits, 250))[-max(limit, 0):] if limit > 0 else []
                return comparison.total_commits, [f"{c.sha} {(c.commit.message or '').partition(chr(10))[0]}"
                                                  for c in reversed(listed)]
        except CodeHostError:
            return None

    def pull_url(self, number: int) -> str:
        try:
            return f"{self.repository.html_url}/pull/{number}"
        except Exception:  # noqa: BLE001 - only a link
            return ""

    def _graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        with github_errors("querying GitHub's GraphQL API"):
            return self._gh.requester.graphql_query(query, variables)[1].get("data") or {}


def _search_terms(query: str, regex: bool) -> str:
    """GitHub code search has no regex: search the regex's literal words and filter lines locally."""
    if not regex:
        return query.replace('"', " ").strip()
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", query)
    if not words:
        raise CodeHostError(f"regex {query!r} has no literal word GitHub can search for; add one")
    return " ".join(words)


class _Qualifiers(TypedDict, total=False):
    """The code search qualifiers NightWatch sets: `repo:`, and those of a path glob."""

    repo: str
    path: str
    filename: str
    extension: str


def _glob_qualifiers(path_glob: str | None) -> _Qualifiers:
    """`app/models/*.rb` -> path:app/models extension:rb; results are still checked against the glob."""
    if not path_glob:
        return {}
    pattern = path_glob.strip().removeprefix("./")
    qualifiers: _Qualifiers = {}
    wildcard = any(c in pattern for c in "*?[")
    literal = _literal_folder(pattern) if wildcard else pattern.rstrip("/")
    if not wildcard and "." in posixpath.basename(literal):  # a file name, not a folder
        literal, qualifiers["filename"] = posixpath.dirname(literal), posixpath.basename(literal)
    if literal:
        qualifiers["path"] = literal
    ext = re.fullmatch(r"\*\.(\w+)", posixpath.basename(pattern))
    if ext:
        qualifiers["extension"] = ext.group(1)
    return qualifiers


def _literal_folder(pattern: str) -> str:
    """The folder part of a glob before its first wildcard, cut at a whole path segment."""
    head = re.split(r"[*?\[]", pattern)[0]
    return head.rstrip("/") if head.endswith("/") else posixpath.dirname(head)
