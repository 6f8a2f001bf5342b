"""A fake Sentry web API (`/api/0/`) serving the events a real `sentry-sdk` sent, in the shapes Sentry publishes.

What it stores is what an SDK sends (the events of `tests/captured/sentry_python/`, verbatim); what it answers is
what Sentry's API answers, built by the mapping below and checked, answer by answer, against Sentry's published
OpenAPI document (`tests/contracts/sentry_api.json`, from getsentry/sentry-api-schema: `scripts/sentry_api_schema.py`).
Every answer that does not validate is kept in `violations`, and the tests assert there are none.

The mapping from an SDK event to an API event (Sentry's event serializer, as its published example shows it):

- the event's `exception`, `request`, `breadcrumbs` and `logentry` become `entries` of type `exception`, `request`,
  `breadcrumbs` and `message`; frames go camelCase (`abs_path` -> `absPath`, `lineno` -> `lineNo`, `in_app` ->
  `inApp`), and `pre_context`/`context_line`/`post_context` become `context`, a list of `[line number, text]`;
  the request's `query_string`, `headers` and `cookies` become lists of `[name, value]` pairs;
- `tags` (an object in the SDK) become a list of `{key, value}`, with the tags Sentry adds itself (level,
  environment, release, server_name, transaction, handled, mechanism, url);
- `timestamp` becomes `dateCreated`; `event_id` becomes `id` and `eventID`; the issue's id becomes `groupID`.

Issues group events as Sentry does (`nightwatch.sources.sentry_file.group_key`); each issue's numbers (`count`,
`userCount`) are those of the queried period, `lifetime` the totals, as Sentry answers a query with `start`/`end`.
Lists page with Sentry's `Link` header and cursors. Faults are injected through `server.fail_next`.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jsonschema import Draft202012Validator

from nightwatch.sources.sentry_event import exceptions_of, moment
from nightwatch.sources.sentry_file import group_key
from tests.fakes.http import FakeHTTPServer, Reply, Request

CONTRACT = json.loads((Path(__file__).resolve().parents[1] / "contracts" / "sentry_api.json").read_text(encoding="utf-8"))
FAKE_TOKEN = "sntryu_fake0123456789abcdef0123456789abcdef0123456789abcdef01234567"
ORG, PROJECT, PROJECT_ID = "acme", "bookshop", "4509"
SENTRY_TAGS = ("level", "environment", "release", "server_name", "transaction")
VALIDATORS = {name: Draft202012Validator(e["schema"]) for name, e in CONTRACT["endpoints"].items()}


def _iso(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pairs(value: Any) -> list[list[str]]:
    if isinstance(value, dict):
        return [[str(k), str(v)] for k, v in value.items()]
    if isinstance(value, str):
        return [list(p.split("=", 1)) + [""] * (1 - p.count("=")) for p in value.split("&") if p]
    return [[str(p[0]), str(p[1])] for p in value or [] if isinstance(p, (list, tuple)) and len(p) == 2]


def api_frame(frame: dict[str, Any]) -> dict[str, Any]:
    line = frame.get("lineno")
    before, after = frame.get("pre_context") or [], frame.get("post_context") or []
    context = []
    if isinstance(line, int) and frame.get("context_line") is not None:
        context = [[line - len(before) + i, t] for i, t in enumerate(before)] + [[line, frame["context_line"]]]
        context += [[line + 1 + i, t] for i, t in enumerate(after)]
    return {"filename": frame.get("filename"), "absPath": frame.get("abs_path"), "module": frame.get("module"),
            "package": None, "platform": None, "instructionAddr": None, "symbolAddr": None, "function": frame.get("function"),
            "rawFunction": None, "symbol": None, "context": context, "lineNo": line, "colNo": frame.get("colno"),
            "inApp": bool(frame.get("in_app")), "trust": None, "errors": None, "lock": None, "sourceLink": None,
            "vars": frame.get("vars")}


def api_entries(event: dict[str, Any]) -> list[dict[str, Any]]:
    entries = []
    chain = exceptions_of(event)
    if chain:
        values = [{"type": e.get("type"), "value": e.get("value"), "module": e.get("module"), "mechanism": e.get("mechanism"),
                   "threadId": None, "rawStacktrace": None,
                   "stacktrace": {"frames": [api_frame(f) for f in (e.get("stacktrace") or {}).get("frames") or []],
                                  "framesOmitted": None, "registers": None, "hasSystemFrames": True}} for e in chain]
        entries.append({"type": "exception", "data": {"values": values, "hasSystemFrames": True, "excOmitted": None}})
    request = event.get("request")
    if isinstance(request, dict):
        entries.append({"type": "request", "data": {
            "apiTarget": None, "method": request.get("method"), "url": request.get("url"),
            "query": _pairs(request.get("query_string")), "fragment": "", "data": request.get("data"),
            "headers": _pairs(request.get("headers")), "cookies": _pairs(request.get("cookies")),
            "env": request.get("env"), "inferredContentType": None}})
    crumbs = (event.get("breadcrumbs") or {}).get("values") if isinstance(event.get("breadcrumbs"), dict) else None
    if crumbs:
        entries.append({"type": "breadcrumbs", "data": {"values": [
            {**c, "timestamp": _iso(moment(c) or datetime.now(timezone.utc)), "event_id": None} for c in crumbs]}})
    if isinstance(event.get("logentry"), dict):
        entries.append({"type": "message", "data": {"formatted": event["logentry"].get("formatted") or event["logentry"].get("message"),
                                                    "message": event["logentry"].get("message"), "params": event["logentry"].get("params")}})
    return entries


def _metadata(event: dict[str, Any]) -> dict[str, Any]:
    chain = exceptions_of(event)
    if not chain:
        entry = event.get("logentry") or {}
        return {"title": entry.get("formatted") or entry.get("message") or "<unlabeled event>"}
    error = chain[-1]
    frames = [f for f in (error.get("stacktrace") or {}).get("frames") or [] if f.get("in_app")]
    top = frames[-1] if frames else {}
    return {"type": error.get("type"), "value": error.get("value") or "", "filename": top.get("filename"),
            "function": top.get("function"), "in_app_frame_mix": "mixed"}


def _title(metadata: dict[str, Any]) -> str:
    return metadata.get("title") or (f"{metadata['type']}: {metadata['value']}" if metadata.get("value") else metadata["type"])


def _tags(event: dict[str, Any]) -> list[dict[str, str]]:
    tags = {k: str(v) for k, v in (event.get("tags") or {}).items()}
    tags |= {k: str(event[k]) for k in SENTRY_TAGS if event.get(k)}
    chain = exceptions_of(event)
    mechanism = (chain[-1].get("mechanism") or {}) if chain else {}
    if mechanism:
        tags |= {"handled": "yes" if mechanism.get("handled", True) else "no", "mechanism": str(mechanism.get("type"))}
    if isinstance(event.get("request"), dict) and event["request"].get("url"):
        tags["url"] = event["request"]["url"]
    return [{"key": k, "value": v} for k, v in sorted(tags.items())]


def api_event(event: dict[str, Any], issue_id: str) -> dict[str, Any]:
    """An SDK event as `GET .../issues/{id}/events/?full=true` answers it."""
    metadata = _metadata(event)
    chain = exceptions_of(event)
    frames = [f for f in ((chain[-1].get("stacktrace") or {}).get("frames") or [] if chain else []) if f.get("in_app")]
    at = _iso(moment(event) or datetime.now(timezone.utc))
    release = event.get("release")
    return {"id": event["event_id"], "eventID": event["event_id"], "groupID": issue_id, "projectID": PROJECT_ID,
            "event.type": "error" if chain else "default", "type": "error" if chain else "default",
            "title": _title(metadata), "message": (event.get("logentry") or {}).get("formatted") or "",
            "location": frames[-1].get("filename") if frames else None, "culprit": event.get("transaction"),
            "user": event.get("user"), "tags": _tags(event), "platform": event.get("platform") or "python",
            "dateCreated": at, "dateReceived": at, "crashFile": None, "metadata": metadata, "entries": api_entries(event),
            "contexts": event.get("contexts") or {}, "context": event.get("extra") or {}, "size": len(json.dumps(event)),
            "dist": event.get("dist"), "sdk": {"name": (event.get("sdk") or {}).get("name"), "version": (event.get("sdk") or {}).get("version")},
            "packages": event.get("modules") or {}, "errors": [], "occurrence": None, "_meta": event.get("_meta") or {},
            "fingerprints": [group_key(event)], "groupingConfig": {"id": "newstyle:2023-01-11", "enhancements": ""},
            "release": {"version": release, "shortVersion": release[:12], "dateCreated": at, "dateReleased": None,
                        "data": {}, "ref": None, "url": None, "status": "open"} if release else None,
            "userReport": None, "previousEventID": None, "nextEventID": None, "resolvedWith": [], "sdkUpdates": []}


class FakeSentry:
    """Sentry's web API over the events it was given; `events` are SDK payloads (their timestamps as the SDK sent them)."""

    def __init__(self, events: list[dict[str, Any]], token: str = FAKE_TOKEN, page_size: int = 100) -> None:
        self.server = FakeHTTPServer()
        self.token, self.page_size = token, page_size
        self.events = list(events)
        self.violations: list[str] = []
        self.issue_state: dict[str, str] = {}  # issue id -> status ("unresolved" unless a test says otherwise)
        self.issue_details: dict[str, dict[str, Any]] = {}  # issue id -> substatus, statusDetails, activity set by a test
        self.releases: list[dict[str, Any]] = []  # (version, dateCreated, dateReleased, lastCommit) as a test made them
        self.later_pages: list[Reply] = []  # faults for the requests of a list's second page and after, in turn
        keys = [group_key(e) for e in self.events]
        self._ids = {key: str(9000 + i) for i, key in enumerate(dict.fromkeys(keys))}
        self._issue_of = [self._ids[k] for k in keys]  # each event's issue, in the order of `events`
        base = "/api/0/organizations/{org}"
        self.server.route("GET", "/api/0/projects/{org}/{project}/", self._project)
        self.server.route("GET", base + "/issues/", self._issues)
        self.server.route("GET", base + "/issues/{issue}/events/", self._issue_events)
        self.server.route("GET", base + "/issues/{issue}/", self._issue_detail)
        self.server.route("GET", "/api/0/projects/{org}/{project}/releases/", self._releases)

    def __enter__(self) -> FakeSentry:
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url

    def api_requests(self) -> list[Request]:
        return [r for r in self.server.requests if r.path.startswith("/api/0/")]

    # answers ------------------------------------------------------------------------------------------------
    def _checked(self, name: str, body: Any, request: Request, headers: dict[str, str] | None = None) -> Reply:
        errors = list(VALIDATORS[name].iter_errors(body))
        self.violations += [f"{request.path}: {'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:5]]
        return Reply(200, body, headers or {})

    def _refused(self, request: Request) -> Reply | None:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(401, {"detail": "Invalid token"})
        if request.params.get("org") != ORG:
            return Reply(404, {"detail": "The requested resource does not exist"})
        return None

    def _project(self, request: Request) -> Reply:
        if refused := self._refused(request):
            return refused
        if request.params["project"] != PROJECT:
            return Reply(404, {"detail": "The requested resource does not exist"})
        body = copy.deepcopy(next(iter(CONTRACT["endpoints"]["project"]["examples"].values())))
        body |= {"id": PROJECT_ID, "slug": PROJECT, "name": PROJECT, "platform": "python"}
        return self._checked("project", body, request)

    def _in_period(self, request: Request) -> tuple[datetime | None, datetime | None]:
        def at(name: str) -> datetime | None:
            value = request.query.get(name, [None])[-1]
            return datetime.fromisoformat(value).replace(tzinfo=timezone.utc) if value else None
        return at("start"), at("end")

    def _grouped(self, request: Request) -> dict[str, list[dict[str, Any]]]:
        start, end = self._in_period(request)
        environment = request.query.get("environment", [None])[-1]
        groups: dict[str, list[dict[str, Any]]] = {}
        newest_first = sorted(zip(self.events, self._issue_of),
                              key=lambda pair: -(moment(pair[0]) or datetime.min.replace(tzinfo=timezone.utc)).timestamp())
        for event, issue_id in newest_first:
            at = moment(event)
            if (start and at and at < start) or (end and at and at >= end) or (environment and event.get("environment") != environment):
                continue
            groups.setdefault(issue_id, []).append(event)
        return groups

    def _issues(self, request: Request) -> Reply:
        if refused := self._refused(request):
            return refused
        if request.query.get("project", [PROJECT])[-1] not in (PROJECT, PROJECT_ID):
            return Reply(400, {"detail": "Invalid project parameter"})
        query = request.query.get("query", ["is:unresolved"])[-1]
        groups = [(i, evs) for i, evs in self._grouped(request).items()
                  if "is:unresolved" not in query or self.issue_state.get(i, "unresolved") == "unresolved"]
        groups.sort(key=lambda g: (-len(g[1]), g[0]))  # sort=freq
        size = min(int(request.query.get("limit", ["100"])[-1]), self.page_size)
        offset = self._offset(request)
        items = [self._issue(issue_id, events) if offset <= i < offset + size else {} for i, (issue_id, events) in enumerate(groups)]
        return self._page(request, "issues", items, size)

    def _issue(self, issue_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        body = copy.deepcopy(CONTRACT["endpoints"]["issues"]["examples"]["ReturnAListOfIssuesForAnOrganization"][0])
        every = [e for e, i in zip(self.events, self._issue_of) if i == issue_id]
        newest, times = events[0], sorted(t for t in map(moment, every) if t)
        metadata, chain = _metadata(newest), exceptions_of(newest)
        users = len({json.dumps(e.get("user"), sort_keys=True) for e in events if e.get("user")})
        body |= {"id": issue_id, "shortId": f"BOOKSHOP-{issue_id}", "title": _title(metadata), "culprit": newest.get("transaction"),
                 "permalink": f"{self.url}/organizations/{ORG}/issues/{issue_id}/", "level": newest.get("level") or "error",
                 "status": self.issue_state.get(issue_id, "unresolved"), "substatus": "ongoing", "statusDetails": {},
                 "project": {"id": PROJECT_ID, "name": PROJECT, "slug": PROJECT, "platform": "python"},
                 "type": "error" if chain else "default", "metadata": metadata, "count": str(len(events)), "userCount": users,
                 "firstSeen": _iso(times[0]), "lastSeen": _iso(times[-1]), "issueType": "error", "issueCategory": "error",
                 "isUnhandled": bool(chain) and (chain[-1].get("mechanism") or {}).get("handled") is False,
                 "lifetime": {"count": str(len(every)), "userCount": users, "firstSeen": _iso(times[0]), "lastSeen": _iso(times[-1])},
                 "platform": "python", "stats": {"24h": []}}
        return body

    def _issue_detail(self, request: Request) -> Reply:
        """GET …/issues/{id}/: the issue with its status, substatus, statusDetails and activity (what a person did)."""
        if refused := self._refused(request):
            return refused
        issue_id = request.params["issue"]
        every = [e for e, i in zip(self.events, self._issue_of) if i == issue_id]
        if not every:
            return Reply(404, {"detail": "The requested resource does not exist"})
        listed = self._issue(issue_id, every)
        body = copy.deepcopy(next(iter(CONTRACT["endpoints"]["issue"]["examples"].values())))
        body |= {k: v for k, v in listed.items() if k in body or k in ("substatus", "statusDetails")}
        body |= {"activity": [], "firstRelease": None, "lastRelease": None} | self.issue_details.get(issue_id, {})
        return self._checked("issue", body, request)

    def _releases(self, request: Request) -> Reply:
        """GET /api/0/projects/{org}/{project}/releases/: newest first (by dateCreated), paged, in Sentry's shape."""
        if refused := self._refused(request):
            return refused
        example = next(iter(CONTRACT["endpoints"]["project_releases"]["examples"].values()))[0]
        items = [copy.deepcopy(example) | {"id": 100 + i, "shortVersion": r["version"][:12], "projects": [], "authors": [],
                                           "versionInfo": None} | r
                 for i, r in enumerate(sorted(self.releases, key=lambda r: r["dateCreated"], reverse=True))]
        return self._page(request, "project_releases", items, min(int(request.query.get("per_page", ["100"])[-1]), self.page_size))

    def _issue_events(self, request: Request) -> Reply:
        if refused := self._refused(request):
            return refused
        issue_id = request.params["issue"]
        if issue_id not in self._ids.values():
            return Reply(404, {"detail": "The requested resource does not exist"})
        events = self._grouped(request).get(issue_id, [])
        full = request.query.get("full", ["false"])[-1] == "true"
        items = [api_event(e, issue_id) if full else {k: v for k, v in api_event(e, issue_id).items()
                                                       if k in CONTRACT["endpoints"]["issue_events"]["schema"]["items"]["required"]}
                 for e in events]
        return self._page(request, "issue_events", items, min(int(request.query.get("per_page", ["100"])[-1]), self.page_size))

    @staticmethod
    def _offset(request: Request) -> int:
        return int(request.query.get("cursor", ["0:0:0"])[-1].split(":")[1])

    def _page(self, request: Request, name: str, items: list[dict[str, Any]], size: int) -> Reply:
        """One page and Sentry's Link header: `<url>; rel="next"; results="true"; cursor="0:100:0"`."""
        offset = self._offset(request)
        if offset and self.later_pages:
            return self.later_pages.pop(0)
        page, more = items[offset: offset + size], offset + size < len(items)
        query = {k: v[-1] for k, v in request.query.items() if k != "cursor"}

        def link(rel: str, at: int, results: bool) -> str:
            cursor = f"0:{at}:{0 if rel == 'next' else 1}"
            url = f"{self.url}{urlsplit(request.path).path}?{urlencode({**query, 'cursor': cursor})}"
            return f'<{url}>; rel="{rel}"; results="{str(results).lower()}"; cursor="{cursor}"'

        headers = {"Link": ", ".join([link("previous", max(offset - size, 0), offset > 0), link("next", offset + size, more)])}
        return self._checked(name, page, request, headers)
