"""Errors from a file of Sentry events as an SDK sent them: the offline Python demo, a replay, an air-gapped night.

Format `nightwatch.sentry-sdk-events/1`: `{"format": ..., "events": [<event payload>, ...]}`, each event verbatim as
the `sentry-sdk` sent it (`scripts/capture_sentry_python.py` writes them). The file plays the tracker: it groups the
events into issues as Sentry does for an exception (its type and module and the in-app frames' modules and functions,
not their line numbers; a message event by its message template), counts each issue's events in the night's window
by their own timestamps, and hands the newest of them on. `rebase_to` moves every timestamp by (rebase_to - the first
whole hour after the newest event), so a bundled demo always falls in the last night.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from nightwatch.models import Deploy, ErrorGroup, TraceData, Window
from nightwatch.sources.base import ErrorBatch, SourceError, hour_after, read_errors_file
from nightwatch.sources.sentry_event import exceptions_of, handled_of, message_of, moment, object_at, text, trace_of

EVENTS_FORMAT = "nightwatch.sentry-sdk-events/1"


def group_key(event: dict[str, Any]) -> str:
    """The issue an event belongs to, as Sentry groups: an exception by its type, module and in-app call path; a
    message by its template (`logentry.message`, before its parameters are filled in)."""
    chain = exceptions_of(event)
    if chain:
        error = chain[-1]
        frames = (error.get("stacktrace") or {}).get("frames") or [] if isinstance(error.get("stacktrace"), dict) else []
        path = [(f.get("module") or f.get("filename"), f.get("function")) for f in frames
                if isinstance(f, dict) and f.get("in_app") is True]
        basis: Any = ["exception", error.get("type"), error.get("module"), path]
    else:
        entry = object_at(event, "logentry")
        basis = ["message", entry.get("message") or entry.get("formatted") or event.get("message")]
    return hashlib.sha256(json.dumps(basis, default=str).encode()).hexdigest()[:32]


class SentryEventsFileSource:
    """An `ErrorSource` over a file of SDK events; the file is read and checked on construction."""

    def __init__(self, path: Path, rebase_to: datetime | None = None, demo: bool = False, events_per_issue: int = 3) -> None:
        self.path = Path(path)
        self.demo = demo
        self.name = "demo" if demo else f"file:{self.path.name}"
        self.events_per_issue = events_per_issue
        self.events, self.warnings = _load(self.path)
        times = [t for t in map(moment, self.events) if t]
        if not times:
            raise SourceError(f"errors file {self.path}: no event has a readable timestamp")
        self.exported_at = hour_after(max(times))
        self.shift = (rebase_to - self.exported_at) if rebase_to else timedelta(0)
        self.app_name = text(self.events[0].get("server_name") or self.path.stem, 200)
        self._grouped: dict[tuple[datetime, datetime], dict[str, list[dict[str, Any]]]] = {}  # a window -> its events by issue

    def _when(self, event: dict[str, Any]) -> datetime | None:
        at = moment(event)
        return at + self.shift if at else None

    def _issues(self, window: Window) -> dict[str, list[dict[str, Any]]]:
        """The window's events by issue, newest first; grouped once a window (every selected error's traces ask)."""
        key = (window.start, window.end)
        if key not in self._grouped:
            issues: dict[str, list[dict[str, Any]]] = {}
            for event in sorted(self.events, key=lambda e: -(self._when(e) or window.start).timestamp()):
                at = self._when(event)
                if at is not None and window.start <= at < window.end:
                    issues.setdefault(group_key(event), []).append(event)
            self._grouped[key] = issues
        return self._grouped[key]

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        groups = [self._group(key, events) for key, events in self._issues(window).items()]
        groups.sort(key=lambda g: (-g.occurrences, g.fingerprint))
        return ErrorBatch(errors=groups[:limit], warnings=list(self.warnings), rows_seen=len(self.events))

    def _group(self, key: str, events: list[dict[str, Any]]) -> ErrorGroup:
        """One issue: the newest event names it (type, transaction, message, level, handled)."""
        newest = events[0]
        chain = exceptions_of(newest)
        times = [t for t in map(self._when, events) if t]
        users = {json.dumps(e.get("user"), sort_keys=True) for e in events if e.get("user")}
        return ErrorGroup(
            error_class=text(chain[-1].get("type"), 300) if chain else "", transaction=text(newest.get("transaction"), 500),
            message=text(chain[-1].get("value")) if chain else message_of(newest), occurrences=len(events),
            users=len(users) or None, first_seen=min(times, default=None), last_seen=max(times, default=None),
            app_name=self.app_name, level=text(newest.get("level") or "error", 20),
            handled=handled_of(chain[-1]) if chain else None, issue_id=key)

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        events = self._issues(window).get(error.issue_id, [])[: self.events_per_issue]
        moved = [{**e, "timestamp": at.timestamp()} if (at := self._when(e)) else e for e in events]
        data = trace_of(error.fingerprint, moved)
        if not events:
            data.notes.insert(0, f"{self.path.name} holds no events of {error.label} in the window {window.key}")
        return data

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        return [], []


def _load(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    document = read_errors_file(path)
    if not isinstance(document, dict) or document.get("format") != EVENTS_FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise SourceError(f"errors file {path} is not a file of Sentry events: format {found!r} (expected {EVENTS_FORMAT!r})")
    raw = document.get("events")
    if not isinstance(raw, list):
        raise SourceError(f"errors file {path}: 'events' must be a list of Sentry event payloads")
    events = [e for e in raw if isinstance(e, dict)]
    warnings = [f"ignored {len(raw) - len(events)} entr(ies) of {path.name} that are not events"] if len(events) < len(raw) else []
    if not events:
        raise SourceError(f"errors file {path} holds no events")
    return events, warnings
