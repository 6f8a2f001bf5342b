"""Errors from Sentry's web API (sentry.io, a self-hosted Sentry, GlitchTip) and from Bugsink's canonical API.

`TrackerAPI` owns the transport: a bearer token, retries (429 after Retry-After, 5xx and timeouts with backoff), every
page of a list (Sentry's `Link: <...>; rel="next"; results="true"` header, Bugsink's `next` URL), and turning every
failure into a `SourceError` a user can act on. The token is never put in a message.

The two sources answer the same three questions and hand the same models on:

- `SentrySource`: `GET /api/0/organizations/{org}/issues/?project=…&start=…&end=…&query=…` lists the issues seen in
  the window with their counts for it (events, users affected); for each selected one,
  `GET …/issues/{id}/events/?full=true&start=…&end=…&per_page=N` reads its newest N events in full, one request.
- `BugsinkSource`: Bugsink's `GET /api/canonical/0/issues/?project=…&sort=last_seen&order=desc` until the issues were
  last seen before the window; it dates first/last seen by when it received the events, so each candidate's events
  (`/events/?issue=…`) are counted by their own timestamps, its newest read in full (`/events/{id}/`: the level and
  whether it was handled, which Bugsink's issue does not carry), and the selected ones' newest N.

Both also read the project's releases as deploys (one request per 100 or 250 releases, back to the first release
before the lookback), and, at the outcome step, the verdict on each error-tracker issue an analysis came from (one
request each, at most MAX_VERDICTS a night): nightwatch.sources.sentry_verdicts.

Requests a night makes (`benchmarks/sentry_requests.py` prints them): Sentry, one per 100 issues listed plus one per
selected error; Bugsink, one per 250 issues listed, two per candidate issue (its events, its newest in full), N - 1
per selected error and one for the project's name; both, the releases and verdicts above.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urljoin

import httpx
from pydantic import SecretStr

from nightwatch.models import Deploy, ErrorGroup, TraceData, Window
from nightwatch.outcomes import Observed, numeric_id
from nightwatch.sources import http_retry
from nightwatch.sources.base import ErrorBatch, SourceError
from nightwatch.sources.sentry_event import (
    exceptions_of,
    handled_of,
    moment,
    object_at,
    text,
    timestamp_or_none,
    trace_of,
)
from nightwatch.sources.sentry_verdicts import (
    bugsink_deploy,
    bugsink_observed,
    bugsink_status,
    sentry_deploy,
    sentry_observed,
    sentry_status,
)

MAX_PAGES = 200  # of one list: 20,000 Sentry issues, 50,000 Bugsink ones, far past what a night selects from
MAX_RELEASES = 500  # read of a project's releases, newest first
MAX_VERDICTS = 200  # error-tracker issues asked for their verdict a night (past it, in turns: tasks/steps_fetch.py)


class TrackerAPI:
    """GET JSON from a Sentry-protocol tracker's web API."""

    def __init__(self, token: SecretStr, base_url: str, service: str = "Sentry", timeout_s: float = 30,
                 max_retries: int = 3, backoff_s: float = 1.0, transport: httpx.BaseTransport | None = None) -> None:
        if not base_url.startswith(("https://", "http://")):
            raise SourceError(f"{service} URL {base_url!r} is not an http(s) URL")
        self.base_url = base_url.rstrip("/") + "/"
        self.service = service
        self.max_retries = max(0, max_retries)
        self.backoff_s = backoff_s
        self.requests = 0  # sent, retries included: what a night costs the tracker
        self._token = token
        self._http = httpx.Client(timeout=timeout_s, transport=transport, follow_redirects=True,
                                  event_hooks={"request": [self._counted]})

    def __repr__(self) -> str:
        return f"TrackerAPI({self.service}, {self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def get(self, path_or_url: str, params: dict[str, Any] | None, what: str) -> tuple[Any, str | None]:
        """The decoded body of one GET and the next page's URL, if the answer says there is one."""
        url = path_or_url if path_or_url.startswith(("http://", "https://")) else urljoin(self.base_url, path_or_url)
        request = self._http.build_request("GET", url, params=params,
                                           headers={"Authorization": f"Bearer {self._token.get_secret_value()}"})
        response = http_retry.send(self._http, request, self.service, what, self.max_retries, self.backoff_s)
        body = self._decode(response, what)
        return body, _next_page(response, body)

    def _counted(self, request: httpx.Request) -> None:
        self.requests += 1

    def pages(self, path: str, params: dict[str, Any], what: str) -> Any:
        """Every item of a paginated list, page after page, as they arrive (a caller may stop early)."""
        url: str | None = path
        for page in range(MAX_PAGES):
            body, url = self.get(url, params if page == 0 else None, f"{what} (page {page + 1})")  # type: ignore[arg-type]
            items = body.get("results") if isinstance(body, dict) else body
            if not isinstance(items, list):
                raise SourceError(f"{self.service} returned a malformed {what}: a {type(items).__name__}, not a list")
            yield from items
            if not url:
                return

    def _decode(self, response: httpx.Response, what: str) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise SourceError(f"{self.service} refused the auth token (HTTP {status}) for the {what}: set a token that may "
                              "read the project's issues and events in SENTRY_AUTH_TOKEN or NIGHTWATCH_SENTRY_AUTH_TOKEN",
                              "rejected")
        if status == 404:
            raise SourceError(f"{self.service} answered 404 for the {what} ({response.request.url.copy_with(query=None)}): "
                              "check the organization and project (NIGHTWATCH_SENTRY_ORG, NIGHTWATCH_SENTRY_PROJECT) and "
                              "NIGHTWATCH_SENTRY_URL", "not_found")
        return http_retry.json_body(response, self.service, what)


def _next_page(response: httpx.Response, body: Any) -> str | None:
    if isinstance(body, dict) and "results" in body:  # Bugsink (Django REST framework's cursor pagination)
        return body.get("next") if isinstance(body.get("next"), str) else None
    link = response.links.get("next") or {}
    return link.get("url") if link.get("url") and link.get("results", "true") == "true" else None


@contextmanager
def kept_so_far(batch: ErrorBatch) -> Iterator[None]:
    """A list that fails after its first page (a malformed page, a tracker gone busy) keeps what was read, with a
    warning the report shows; one that fails at once is the night's failure, as before."""
    try:
        yield
    except SourceError as exc:
        if batch.rows_seen == 0:
            raise
        batch.warnings.append(f"the issues list stopped after {batch.rows_seen} issue(s): {exc}; the night goes on with "
                              f"the {len(batch.errors)} error(s) read")


def releases_in(listed: Iterator[Any], window: Window, parse: Any) -> list[Deploy]:
    """The releases (newest first, as both trackers list them) that reached production in `window`, and the last one
    before it (the release before an error's first release is the last without it), oldest first."""
    found: list[Deploy] = []
    for index, item in enumerate(listed):
        if index >= MAX_RELEASES:
            break
        deploy = parse(item)
        if deploy is None or deploy.at >= window.end:
            continue
        found.append(deploy)
        if deploy.at < window.start:
            break
    return sorted(found, key=lambda d: d.at)


def read_verdicts(ids: list[str], read: Any, service: str) -> tuple[dict[tuple[str, int | str], Observed], list[str]]:
    """Each issue's verdict (`read(id)`), keyed ("tracker", id); an issue the tracker no longer has is `missing`; a
    failure of the tracker stops the reading with a warning and keeps what was read."""
    found: dict[tuple[str, int | str], Observed] = {}
    refused: list[str] = []
    for ident in ids[:MAX_VERDICTS]:
        try:
            found[("tracker", ident)] = read(ident)
        except SourceError as exc:
            found[("tracker", ident)] = Observed(kind="tracker", number=0, state="missing")
            if exc.kind == "not_found":
                continue
            if exc.kind not in ("busy", "unreachable"):  # this issue only (a refusal, a bad body): the next may be readable
                refused.append(f"{ident[:64]} ({str(exc)[:160]})")
                continue
            return found, [f"{service} verdicts: stopped after {len(found)} of {len(ids)} issue(s): {exc}"]
    notes = [f"{service} verdicts: {len(refused)} issue(s) could not be read: {'; '.join(refused[:3])}"] if refused else []
    left = len(ids) - MAX_VERDICTS
    return found, notes + ([f"{service} verdicts: {left} issue(s) past the {MAX_VERDICTS} a night wait"] if left > 0 else [])


def iso(moment_: datetime) -> str:
    return moment_.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _count(value: Any) -> int:
    try:
        return max(int(float(value)), 0)
    except (TypeError, ValueError, OverflowError):
        return 0


class SentrySource:
    """Errors of one Sentry project, live (sentry.io or a self-hosted Sentry)."""

    name = "sentry"
    demo = False

    def __init__(self, api: TrackerAPI, org: str, project: str, query: str = "is:unresolved",
                 environment: str | None = None, events_per_issue: int = 3) -> None:
        self.api, self.org, self.project = api, org, project
        self.query, self.environment, self.events_per_issue = query, environment, events_per_issue

    def close(self) -> None:
        self.api.close()

    def _window(self, window: Window) -> dict[str, Any]:
        params: dict[str, Any] = {"start": iso(window.start), "end": iso(window.end)}
        return params | ({"environment": self.environment} if self.environment else {})

    def check(self) -> str:
        """One cheap request that proves the token, the organization and the project (preflight)."""
        body, _ = self.api.get(f"api/0/projects/{self.org}/{self.project}/", None, "project lookup")
        name = body.get("slug") if isinstance(body, dict) else None
        return f"project {self.org}/{name or self.project}"

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        params = {"project": self.project, "query": self.query, "sort": "freq", "limit": 100} | self._window(window)
        batch = ErrorBatch()
        with kept_so_far(batch):
            for index, issue in enumerate(self.api.pages(f"api/0/organizations/{self.org}/issues/", params, "issues list")):
                batch.rows_seen += 1
                group = sentry_group(issue, self.project)
                if group is None:
                    batch.warnings.append(f"skipped issue {index} of the issues list: it has no id")
                elif len(batch.errors) < limit:
                    batch.errors.append(group)
        return batch

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        params = {"full": "true", "per_page": self.events_per_issue} | self._window(window)
        path = f"api/0/organizations/{self.org}/issues/{error.issue_id}/events/"
        body, _ = self.api.get(path, params, f"events of issue {error.issue_id}")
        if not isinstance(body, list):
            raise SourceError(f"Sentry returned a malformed events list for issue {error.issue_id}: a "
                              f"{type(body).__name__}, not a list")
        return trace_of(error.fingerprint, body[: self.events_per_issue])

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        """The project's releases as deploys; none, with the reason, where the tracker refuses or fails."""
        try:
            params = {"per_page": 100} | ({"environment": self.environment} if self.environment else {})
            listed = self.api.pages(f"api/0/projects/{self.org}/{self.project}/releases/", params, "releases list")
            return releases_in(listed, window, sentry_deploy), []
        except SourceError as exc:
            return [], [f"releases: {exc}"]

    def observe_verdicts(self, ids: list[str]) -> tuple[dict[tuple[str, int | str], Observed], list[str]]:
        """What the team did with each issue in Sentry (its status, substatus and activity)."""
        def read(ident: str) -> Observed:
            if not numeric_id(ident):  # not a Sentry issue's id (a document edited by hand, another tracker's)
                return Observed(kind="tracker", number=0, state="missing")
            body, _ = self.api.get(f"api/0/organizations/{self.org}/issues/{quote(ident, safe='')}/", None, f"issue {ident}")
            return sentry_observed(body, int(ident))
        return read_verdicts(ids, read, "Sentry")


def sentry_group(issue: Any, app: str) -> ErrorGroup | None:
    """An issue of Sentry's issues list as an ErrorGroup: its type as the class (a message event has none), its
    culprit (the transaction, where the SDK named one) as the transaction, its counts for the window."""
    if not isinstance(issue, dict) or not issue.get("id"):
        return None
    metadata = object_at(issue, "metadata")
    message_event = not metadata.get("type")
    return ErrorGroup(
        error_class="" if message_event else text(metadata.get("type"), 300),
        transaction=text(issue.get("culprit"), 500),
        message=text(metadata.get("title") or issue.get("title") if message_event else metadata.get("value")),
        occurrences=_count(issue.get("count")), users=_count(issue.get("userCount")),
        first_seen=timestamp_or_none(issue.get("firstSeen")), last_seen=timestamp_or_none(issue.get("lastSeen")), app_name=app,
        level=text(issue.get("level"), 20), handled=not issue["isUnhandled"] if isinstance(issue.get("isUnhandled"), bool) else None,
        issue_id=text(str(issue["id"]), 64), url=text(issue.get("permalink"), 500),
        first_release=text(object_at(issue, "firstRelease").get("version"), 200), tracker_status=sentry_status(issue))


class BugsinkSource:
    """Errors of one Bugsink project, live.

    Bugsink's issue list carries no level and no handled flag, and dates an issue by when it received its events; so
    each candidate's events are counted by their own timestamps and its newest event in the window is read in full
    (its level, whether anything handled it, the module of its class). Its events list is in the order Bugsink
    digested them, not by their timestamps: the count stops after a page's worth of events older than the window.
    """

    name = "bugsink"
    demo = False
    PAGE = 250  # Bugsink's page of issues and of events

    def __init__(self, api: TrackerAPI, project: str, query: str = "is:unresolved", events_per_issue: int = 3,
                 environment: str | None = None) -> None:
        self.api, self.project, self.events_per_issue = api, project, events_per_issue
        self.state = "open" if query.strip() == "is:unresolved" else "all"
        words = [] if query.strip() in ("", "is:unresolved") else [query.strip()]
        self.tags = f'environment:"{environment}"' if environment else ""  # Bugsink's tag filter
        self.search = " ".join(words + ([self.tags] if self.tags else []))
        self._in_window: dict[str, list[dict]] = {}
        self._full: dict[str, dict] = {}  # event id -> the event in full, read once
        self._name: str | None = None

    def close(self) -> None:
        self.api.close()

    def check(self) -> str:
        return f"project {self._project_name()}"

    def _project_name(self) -> str:
        if self._name is None:
            body, _ = self.api.get(f"api/canonical/0/projects/{self.project}/", None, "project lookup")
            self._name = text(body.get("name") if isinstance(body, dict) else "", 200) or self.project
        return self._name

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        params = {"project": self.project, "sort": "last_seen", "order": "desc", "state": self.state}
        params |= {"q": self.search} if self.search else {}
        batch = ErrorBatch()
        with kept_so_far(batch):
            for issue in self.api.pages("api/canonical/0/issues/", params, "issues list"):
                batch.rows_seen += 1
                last = timestamp_or_none(issue.get("last_seen")) if isinstance(issue, dict) else None
                if last is not None and last < window.start:
                    break  # by receipt, newest first: every issue after this one was last seen before the window
                group = self._group(issue, window) if isinstance(issue, dict) and issue.get("id") else None
                if group is not None:
                    batch.errors.append(group)
        batch.errors.sort(key=lambda g: (-g.occurrences, g.fingerprint))
        return ErrorBatch(errors=batch.errors[:limit], warnings=batch.warnings, rows_seen=batch.rows_seen)

    def _events(self, issue_id: str, window: Window) -> list[dict]:
        """The issue's events whose own timestamps fall in the window, newest first (kept for fetch_traces)."""
        params = {"issue": issue_id} | ({"q": self.tags} if self.tags else {})
        events, older = [], 0
        for event in self.api.pages("api/canonical/0/events/", params, f"events of issue {issue_id}"):
            when = moment(event) if isinstance(event, dict) else None
            older = older + 1 if when is not None and when < window.start else 0
            if older >= self.PAGE:
                break  # a page's worth in a row from before the window: the rest is older still
            if when is not None and window.start <= when < window.end:
                events.append(event)
        events.sort(key=lambda e: -(moment(e) or window.start).timestamp())
        self._in_window[issue_id] = events
        return events

    def _event(self, listed: dict) -> dict:
        """An event of the list in full (its `data` as the SDK sent it), read once a night."""
        if listed["id"] not in self._full:
            body, _ = self.api.get(f"api/canonical/0/events/{listed['id']}/", None, f"event {listed['id']}")
            self._full[listed["id"]] = object_at(body, "data") if isinstance(body, dict) else {}
        return self._full[listed["id"]]

    def _group(self, issue: dict, window: Window) -> ErrorGroup | None:
        """The issue with its events counted in the window by their own timestamps; None if none falls in it."""
        events = self._events(str(issue["id"]), window)
        if not events:
            return None
        newest = self._event(events[0]) if events[0].get("id") else {}
        chain = exceptions_of(newest)
        times = [t for t in map(moment, events) if t]
        received = timestamp_or_none(issue.get("first_seen"))  # by receipt: an event may be older than that
        return ErrorGroup(
            error_class=text(issue.get("calculated_type"), 300), transaction=text(issue.get("transaction"), 500),
            message=text(issue.get("calculated_value")), occurrences=len(events),
            first_seen=min([t for t in (received, *times) if t]), last_seen=max(times),
            app_name=self._project_name(), level=text(newest.get("level") or ("error" if chain else ""), 20),
            handled=handled_of(chain[-1]) if chain else None, issue_id=text(str(issue["id"]), 64),
            url=urljoin(self.api.base_url, f"issues/issue/{issue['id']}/event/last/"),
            first_release=_first_release(issue), tracker_status=bugsink_status(issue))

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        listed = self._in_window.get(error.issue_id)
        if listed is None:  # listed by another process (a retried task): list this issue's events again
            listed = self._events(error.issue_id, window)
        events = [self._event(e) for e in listed[: self.events_per_issue] if isinstance(e, dict) and e.get("id")]
        return trace_of(error.fingerprint, events)

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        """The project's releases as deploys (the token needs `releases:read`); none, with the reason, otherwise."""
        try:
            listed = self.api.pages("api/canonical/0/releases/", {"project": self.project}, "releases list")
            return releases_in(listed, window, bugsink_deploy), []
        except SourceError as exc:
            return [], [f"releases: {exc}"]

    def observe_verdicts(self, ids: list[str]) -> tuple[dict[tuple[str, int | str], Observed], list[str]]:
        """What the team did with each issue in Bugsink: the newest turning point of its history."""
        def read(ident: str) -> Observed:
            body, _ = self.api.get("api/canonical/0/issue-history/", {"issue": ident, "order": "desc"}, f"history of issue {ident}")
            history = body.get("results") if isinstance(body, dict) else None
            if not isinstance(history, list):
                raise SourceError(f"Bugsink returned a malformed history of issue {ident}")
            return bugsink_observed(history, urljoin(self.api.base_url, f"issues/issue/{ident}/event/last/"))
        return read_verdicts(ids, read, "Bugsink")


def _first_release(issue: dict[str, Any]) -> str:
    """The first release Bugsink received an event of the issue in (its `events_at`, in the order they came)."""
    seen = issue.get("events_at")  # "" first: its first events named no release, so none is named here
    return text(seen[0], 200) if isinstance(seen, list) and seen and isinstance(seen[0], str) else ""
