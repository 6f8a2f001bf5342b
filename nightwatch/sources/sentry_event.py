"""Sentry events into NightWatch's models: the frames, the exception chain, the request and the tags of each.

One event reaches NightWatch in one of two shapes, and both are read here:

- as an SDK sent it (Sentry's event payload: `exception.values`, `request`, a `tags` object, `breadcrumbs.values`,
  snake_case frames with `pre_context`/`context_line`/`post_context` and `vars`): Bugsink and GlitchTip serve it so;
- as Sentry's web API serves it (`/api/0/.../events/`): the same content as `entries` (`exception`, `request`,
  `breadcrumbs`, `message`), camelCase frames with `context` as `[line, text]` pairs, `tags` as a list of
  `{key, value}`, `dateCreated`.

`canonical` turns the second into the first, so everything after it reads one shape. Every text is production data:
redacted (`redact.clean`), a secret-named variable, header or cookie loses its value whatever it holds, and every size
is bounded, so one event's megabytes cost a note, not the night.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from nightwatch.models import Breadcrumb, ChainedException, RequestFacts, StackFrame, TraceData
from nightwatch.redact import REDACTED, clean, key_strength
from nightwatch.sources.parse import MAX_FRAMES, is_app_path, parse_timestamp, stack_text, status_code

MAX_EXCEPTIONS = 10  # of a chain; Python's own limit on a printed chain is far higher, a real one rarely passes 3
MAX_VARIABLES = 40  # per frame
VALUE_LIMIT = 300  # characters of one variable's value
CONTEXT_LINES = 5  # each side of the line
MAX_TAGS = 40
TEXT_LIMIT = 2_000
MAX_BREADCRUMBS = 50  # the newest of an event's (the SDKs keep 100)
MAX_KEYS = 30  # of a query or a body


# -- the API's shape into the SDK's --------------------------------------------------------------------------------

def canonical(event: Any) -> dict[str, Any]:
    """The event in the SDK's shape, whichever of the two it came in; {} for what is not an event."""
    if not isinstance(event, dict):
        return {}
    if not isinstance(event.get("entries"), list):
        return event
    out: dict[str, Any] = {key: event.get(key) for key in ("platform", "contexts", "user", "sdk", "dist", "culprit")}
    out["event_id"] = event.get("eventID") or event.get("id")
    out["timestamp"] = event.get("dateCreated") or event.get("dateReceived")
    out["tags"] = {t.get("key"): t.get("value") for t in event.get("tags") or [] if isinstance(t, dict)}
    release = event.get("release")
    out["release"] = release.get("version") if isinstance(release, dict) else release
    out["environment"] = out["tags"].get("environment")
    out["server_name"] = out["tags"].get("server_name")
    out["level"] = out["tags"].get("level")
    out["transaction"] = out["tags"].get("transaction") or event.get("culprit")
    out["extra"] = event.get("context")
    for entry in event["entries"]:
        if isinstance(entry, dict) and isinstance(entry.get("data"), dict):
            _from_entry(out, str(entry.get("type")), entry["data"])
    if "logentry" not in out and event.get("message"):
        out["logentry"] = {"formatted": event["message"]}
    return out


def _from_entry(out: dict[str, Any], kind: str, data: dict[str, Any]) -> None:
    if kind == "exception":
        out["exception"] = {"values": [_api_exception(v) for v in data.get("values") or [] if isinstance(v, dict)]}
    elif kind == "request":
        out["request"] = {**data, "query_string": data.get("query"), "headers": data.get("headers"),
                          "cookies": data.get("cookies")}
    elif kind == "breadcrumbs":
        out["breadcrumbs"] = {"values": data.get("values") or []}
    elif kind == "message":
        out["logentry"] = {"formatted": data.get("formatted") or data.get("message"), "message": data.get("message")}


def _api_exception(value: dict[str, Any]) -> dict[str, Any]:
    trace = object_at(value, "stacktrace")
    frames = [_api_frame(f) for f in trace.get("frames") or [] if isinstance(f, dict)]
    return {"type": value.get("type"), "value": value.get("value"), "module": value.get("module"),
            "mechanism": value.get("mechanism"), "stacktrace": {"frames": frames}}


def _api_frame(frame: dict[str, Any]) -> dict[str, Any]:
    line = frame.get("lineNo")
    context = [pair for pair in frame.get("context") or [] if isinstance(pair, (list, tuple)) and len(pair) == 2]
    return {"filename": frame.get("filename"), "abs_path": frame.get("absPath"), "module": frame.get("module"),
            "function": frame.get("function"), "lineno": line, "in_app": frame.get("inApp"), "vars": frame.get("vars"),
            "pre_context": [text for n, text in context if isinstance(n, int) and line is not None and n < line],
            "context_line": next((text for n, text in context if n == line), None),
            "post_context": [text for n, text in context if isinstance(n, int) and line is not None and n > line]}


# -- values -------------------------------------------------------------------------------------------------------

def text(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Any value of an event as redacted text of at most `limit` characters."""
    if value is None:
        return ""
    if not isinstance(value, (str, bytes)):
        value = json.dumps(value, default=str, ensure_ascii=False)
    return clean(value, limit=limit)[0]


def object_at(value: dict[str, Any], key: str) -> dict[str, Any]:
    """`value[key]` when it is an object (a dict), else {}: events hold whatever their SDK sent."""
    found = value.get(key)
    return found if isinstance(found, dict) else {}


def variable(name: str, value: Any) -> str:
    """A frame variable as the model may read it: a secret-named one loses its value, a container is summarised
    (its size and first keys), any value is redacted and capped."""
    if key_strength(name):
        return REDACTED
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in list(value)[:8])
        summary = f"{{{len(value)} keys: {keys}{', ...' if len(value) > 8 else ''}}}"
        return text(summary if len(json.dumps(value, default=str)) > VALUE_LIMIT else value, VALUE_LIMIT)
    if isinstance(value, list) and len(json.dumps(value, default=str)) > VALUE_LIMIT:
        return text(f"[{len(value)} items: {json.dumps(value[:3], default=str)[:VALUE_LIMIT // 2]} ...]", VALUE_LIMIT)
    return text(value, VALUE_LIMIT)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("yes", "no", "true", "false"):
        return value.lower() in ("yes", "true")
    return None


def timestamp_or_none(value: Any) -> datetime | None:
    """A tracker's API timestamp (ISO 8601, or epoch milliseconds), or None where it is missing or not one."""
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError, OSError):
        return None


def moment(event: dict[str, Any]) -> datetime | None:
    """When it happened: the SDK's `timestamp` (seconds since the epoch, or ISO 8601)."""
    value = event.get("timestamp")
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return datetime.fromtimestamp(value, tz=timezone.utc)
        return parse_timestamp(value) if isinstance(value, str) else None
    except (ValueError, OverflowError, OSError):
        return None


# -- frames and the chain -----------------------------------------------------------------------------------------

def exceptions_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The exception chain of an event in the SDK's shape, oldest first; the last one is the error."""
    values = (event.get("exception") or {}).get("values") if isinstance(event.get("exception"), dict) else event.get("exception")
    return [v for v in values or [] if isinstance(v, dict)][-MAX_EXCEPTIONS:]


def class_of(exception: dict[str, Any], qualified: bool = True) -> str:
    """`module:Type`, as New Relic's Python agent names a class (builtins for Python's own), or the type alone."""
    name = text(exception.get("type"), 300) or "Error"
    module = text(exception.get("module"), 200)
    return f"{module}:{name}" if qualified and module else name


def handled_of(exception: dict[str, Any]) -> bool | None:
    mechanism = object_at(exception, "mechanism")
    return _flag(mechanism.get("handled"))


def frames_of(exception: dict[str, Any]) -> list[StackFrame]:
    """An exception's frames, the raising frame first (the SDKs send the outermost first), at most MAX_FRAMES."""
    trace = object_at(exception, "stacktrace")
    raw = [f for f in trace.get("frames") or [] if isinstance(f, dict)]
    return [_frame(f) for f in reversed(raw[-MAX_FRAMES:])]


def _frame(frame: dict[str, Any]) -> StackFrame:
    filename = str(frame.get("filename") or "")
    generated = filename.startswith("<")  # code a library compiled from a string: `<string>`, under the cwd's abs_path
    path = text(filename if generated else frame.get("abs_path") or filename or frame.get("module") or "<unknown>", 500)
    line = frame.get("lineno")
    number = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    # An SDK's in_app=False is believed; its True is checked, as old SDKs marked every frame, libraries included
    in_app = frame.get("in_app") is not False and not generated and is_app_path(path)
    variables = object_at(frame, "vars")
    return StackFrame(file=path, line=number, method=text(frame.get("function"), 300), in_app=in_app,
                      module=text(frame.get("module"), 300), context=_context(frame, number),
                      variables={text(k, 100): variable(str(k), v) for k, v in list(variables.items())[:MAX_VARIABLES]})


def _context(frame: dict[str, Any], line: int | None) -> list[tuple[int, str]]:
    if line is None or not isinstance(frame.get("context_line"), str):
        return []
    before = [t for t in frame.get("pre_context") or [] if isinstance(t, str)][-CONTEXT_LINES:]
    after = [t for t in frame.get("post_context") or [] if isinstance(t, str)][:CONTEXT_LINES]
    lines = [*before, frame["context_line"], *after]
    redacted = clean("\n".join(t[:500] for t in lines), limit=20_000)[0].split("\n")
    if len(redacted) != len(lines):  # redaction joined or split lines: keep the line itself only
        return [(line, text(frame["context_line"], 500))]
    first = line - len(before)
    return [(first + i, t) for i, t in enumerate(redacted)]


def chain_of(exceptions: list[dict[str, Any]]) -> list[ChainedException]:
    out = []
    for i, exc in enumerate(exceptions):
        following = exceptions[i + 1] if i + 1 < len(exceptions) else {}
        source = str((following.get("mechanism") or {}).get("source", "")) if isinstance(following.get("mechanism"), dict) else ""
        # sentry-sdk 3.x says which (mechanism.source); 1.x and 2.x repeat the outer mechanism on every cause
        relation = ("cause" if source == "__cause__" else "context" if source == "__context__" else "chained") if following else ""
        mechanism = object_at(exc, "mechanism")
        out.append(ChainedException(error_class=class_of(exc), message=text(exc.get("value")), handled=handled_of(exc),
                                    mechanism=text(mechanism.get("type"), 100), relation=relation))
    return out


def traceback_text(exceptions: list[dict[str, Any]], chain: list[ChainedException]) -> str:
    """The chain as Python prints it (oldest first, each with its frames), so it reads as the traceback a person
    would see in the log; frames of other platforms read as `at function (file:line)`."""
    parts = []
    for exc, link in zip(exceptions, chain):
        frames = list(reversed(frames_of(exc)))
        lines = ["Traceback (most recent call last):"] if frames else []
        for frame in frames:
            lines.append(f'  File "{frame.file}", line {frame.line or 0}, in {frame.method or "<module>"}')
            here = next((t for n, t in frame.context if n == frame.line), "")
            if here.strip():
                lines.append(f"    {here.strip()}")
        lines.append(f"{link.error_class}: {link.message}" if link.message else link.error_class)
        parts.append("\n".join(lines))
        if link.relation:
            parts.append(_LINKS[link.relation])
    return "\n\n".join(parts)


_LINKS = {"cause": "The above exception was the direct cause of the following exception:",
          "context": "During handling of the above exception, another exception occurred:",
          "chained": "The above exception is chained to the following exception (raised from it or while handling it):"}


# -- one event's facts as occurrence attributes ------------------------------------------------------------------

def attributes(event: dict[str, Any]) -> dict[str, Any]:
    """What one occurrence says besides its stack, under the names New Relic gives the same facts where it has them
    (`request.uri`, `request.method`, `http.statusCode`, `error.class`, `transactionName`, `host`), so the steps
    after step 1 read both sources alike; Sentry's own facts (release, environment, level, handled) beside them."""
    chain = exceptions_of(event)
    error = chain[-1] if chain else {}
    request = object_at(event, "request")
    tags = _tags(event)
    contexts = object_at(event, "contexts")
    response = object_at(contexts, "response")
    when = moment(event)
    out: dict[str, Any] = {
        "timestamp": when.isoformat() if when else None,
        "error.class": class_of(error) if error else "",
        "error.message": text(error.get("value")) if error else message_of(event),
        "transactionName": text(event.get("transaction") or tags.get("transaction"), 500),
        "request.method": text(request.get("method"), 20),
        "request.uri": text(urlsplit(str(request.get("url") or "")).path, 500) if request.get("url") else "",
        "request.query": _query(request.get("query_string")),
        "http.statusCode": status_code(response.get("status_code")) or status_code(tags.get("http.status_code")),
        "host": text(event.get("server_name") or tags.get("server_name"), 200),
        "release": text(event.get("release") or tags.get("release"), 200),
        "environment": text(event.get("environment") or tags.get("environment"), 100),
        "level": text(event.get("level") or tags.get("level"), 20),
        "handled": handled_of(error) if error else _flag(tags.get("handled")),
        "mechanism": text((error.get("mechanism") or {}).get("type"), 100) if isinstance(error.get("mechanism"), dict) else "",
        "event_id": text(event.get("event_id"), 64),
    }
    out.update({f"tag.{key}": value for key, value in tags.items() if key not in _MAPPED_TAGS})
    return {k: v for k, v in out.items() if v not in (None, "")}


_MAPPED_TAGS = {"transaction", "server_name", "release", "environment", "level", "handled", "mechanism", "url"}


def _tags(event: dict[str, Any]) -> dict[str, str]:
    raw = event.get("tags")
    pairs = raw.items() if isinstance(raw, dict) else (
        [(t[0], t[1]) for t in raw if isinstance(t, (list, tuple)) and len(t) == 2] if isinstance(raw, list) else [])
    out: dict[str, str] = {}
    for key, value in list(pairs)[:MAX_TAGS]:
        name = text(key, 100)
        out[name] = REDACTED if key_strength(name) else text(value, 300)
    return out


def _query_pairs(value: Any) -> list[tuple[Any, Any]]:
    """A request's query as (name, value) pairs, whichever way the SDK or the API wrote it: a string (decoded), an
    object, a list of pairs."""
    if isinstance(value, str):
        return parse_qsl(value[:4_000], keep_blank_values=True)
    if isinstance(value, dict):
        return list(value.items())
    return [(p[0], p[1]) for p in value if isinstance(p, (list, tuple)) and len(p) == 2] if isinstance(value, list) else []


def _query(value: Any) -> str:
    """The query string, decoded, each secret-named parameter's value redacted (`token=[REDACTED]`)."""
    shown = [f"{name}={REDACTED if key_strength(str(name)) else v}" for name, v in _query_pairs(value)[:50]]
    return text("&".join(shown), 500)


def breadcrumbs_of(event: dict[str, Any]) -> list[Breadcrumb]:
    """The event's breadcrumbs, oldest first, the newest MAX_BREADCRUMBS of them, each redacted and capped."""
    crumbs = event.get("breadcrumbs")
    values = crumbs.get("values") if isinstance(crumbs, dict) else crumbs
    out = []
    for crumb in [c for c in values or [] if isinstance(c, dict)][-MAX_BREADCRUMBS:]:
        data = object_at(crumb, "data")
        shown = {str(k): REDACTED if key_strength(str(k)) else v for k, v in data.items()}
        out.append(Breadcrumb(at=moment(crumb), category=text(crumb.get("category") or crumb.get("type"), 100),
                              level=text(crumb.get("level"), 20), message=_short(crumb.get("message")),
                              data=_short(shown) if shown else ""))
    return out


def _short(value: Any, limit: int = 300) -> str:
    """A breadcrumb's text on one line: redacted whole, then cut (a query's column list is long and says little)."""
    line = " ".join(text(value, 20_000).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def request_of(event: dict[str, Any], attrs: dict[str, Any]) -> RequestFacts | None:
    """The failing request's shape: method, path, route, the names of its query and body fields, the status (`attrs`:
    the event's attributes, already made)."""
    request = event.get("request") if isinstance(event.get("request"), dict) else None
    if request is None:
        return None
    query = [str(name) for name, _ in _query_pairs(request.get("query_string"))]
    body = request.get("data")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = None
    return RequestFacts(method=attrs.get("request.method", ""), path=attrs.get("request.uri", ""),
                        route=attrs.get("transactionName", ""), query_keys=[text(k, 100) for k in query[:MAX_KEYS]],
                        body_keys=[text(k, 100) for k in list(body)[:MAX_KEYS]] if isinstance(body, dict) else [],
                        status=attrs.get("http.statusCode"))


def message_of(event: dict[str, Any]) -> str:
    """A message event's text (logentry, or the legacy `message`)."""
    entry = object_at(event, "logentry")
    return text(entry.get("formatted") or entry.get("message") or event.get("message"))


# -- the events of one error into TraceData ----------------------------------------------------------------------

def trace_of(fingerprint: str, events: list[Any], trace_char_limit: int = 20_000) -> TraceData:
    """TraceData of one error from its recent events (any order, either shape): every occurrence's attributes, newest
    first; the newest event's frames, its chain and its traceback."""
    canonical_events = sorted((c for c in map(canonical, events) if c), key=lambda e: -(moment(e) or _EPOCH).timestamp())
    data = TraceData(fingerprint=fingerprint, transaction_errors=[attributes(e) for e in canonical_events])
    newest = next((e for e in canonical_events if exceptions_of(e)), None)
    if canonical_events:
        latest = newest or canonical_events[0]
        attrs = data.transaction_errors[canonical_events.index(latest)]
        data.breadcrumbs, data.request = breadcrumbs_of(latest), request_of(latest, attrs)
    if newest is None:
        data.notes.append("no stack trace in the events" if canonical_events else "no events found")
        return data
    chain = exceptions_of(newest)
    data.exceptions = chain_of(chain)
    data.stack_frames = frames_of(chain[-1])
    data.stack_trace, notes = stack_text(traceback_text(chain, data.exceptions), trace_char_limit)
    data.notes.extend(f"stack trace: {note}" for note in notes)
    data.truncated = any("truncated" in note for note in notes)
    if not data.stack_frames:
        data.notes.append("the newest event's exception has no stack frames")
    return data


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
