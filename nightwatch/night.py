"""One attempt of one night in this process: its scope, built once and closed when the night ends.

A night's tasks share its settings, its clients (the Runtime), its run budget, the code cache, the
event log, the cross-error notes and the API gate of a direct pass. They live on a `Night`, not in
module-level dicts: the flow opens the night with `scope(...)` and every task, subflow and thread it
starts finds it with `current()` (a context variable: Prefect copies the context into each task's
thread), and the `finally` of the scope closes the clients and lets the whole night go. A long-lived
`serve` process therefore keeps nothing of a night once it is over.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path

from nightwatch.agent.budgets import RunBudget
from nightwatch.agent.cross_error import CrossErrorNotes
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache
from nightwatch.runtime import Runtime, build_runtime
from nightwatch.settings import Settings

_CURRENT: ContextVar[Night | None] = ContextVar("nightwatch_night", default=None)


class Night:
    """What one attempt of a night shares across its tasks; each part is built on first use, under a lock."""

    def __init__(self, settings: Settings, anchor: datetime, key: str = "") -> None:
        self.settings, self.anchor, self.key = settings, anchor, key
        self._lock = threading.RLock()
        self._runtime: Runtime | None = None
        self._budget: RunBudget | None = None
        self._code: CodeCache | None = None
        self._events: EventLog | None = None
        self._notes: CrossErrorNotes | None = None
        self._gates: dict[str, threading.BoundedSemaphore] = {}
        self.closed = False

    @property
    def runtime(self) -> Runtime:
        """The night's clients, built from its settings once."""
        with self._lock:
            if self._runtime is None:
                self._runtime = build_runtime(self.settings, self.anchor)
            return self._runtime

    def budget(self, seed: Callable[[], float]) -> RunBudget:
        """The night's token budget, seeded once with what earlier calls of the night already spent."""
        with self._lock:
            if self._budget is None:
                self._budget = RunBudget(self.settings.token_budget_per_run, seed())
            return self._budget

    @property
    def code_cache(self) -> CodeCache:
        with self._lock:
            if self._code is None:
                self._code = CodeCache(self.runtime.host, self.runtime.paths)
            return self._code

    def event_log(self, path: Path) -> EventLog:
        with self._lock:
            if self._events is None:
                self._events = EventLog(path)
            return self._events

    @property
    def notes(self) -> CrossErrorNotes:
        with self._lock:
            if self._notes is None:
                self._notes = CrossErrorNotes()
            return self._notes

    @contextlib.contextmanager
    def gate(self, name: str, slots: int) -> Iterator[None]:
        """Open a gate of `slots` concurrent calls for the duration of the block (a direct pass holding API slots)."""
        with self._lock:
            self._gates[name] = threading.BoundedSemaphore(slots)
        try:
            yield
        finally:
            with self._lock:
                self._gates.pop(name, None)

    def open_gate(self, name: str) -> threading.BoundedSemaphore | None:
        with self._lock:
            return self._gates.get(name)

    def close(self) -> None:
        """Close the clients and drop everything the night held."""
        with self._lock:
            runtime, self._runtime = self._runtime, None
            self._budget = self._code = self._events = self._notes = None
            self._gates.clear()
            self.closed = True
        if runtime is not None:
            runtime.close()


@contextlib.contextmanager
def scope(night: Night) -> Iterator[Night]:
    """The night is `current()` inside the block (and in every task and thread started from it); closed after it."""
    token = _CURRENT.set(night)
    try:
        yield night
    finally:
        _CURRENT.reset(token)
        night.close()


class NightOver(RuntimeError):
    """A task of a night ran after the night's scope closed (its flow ended): it must not go on with other clients."""


def current(key: str | None = None) -> Night | None:
    """The night open in this context; with `key`, only if it is that attempt's."""
    night = _CURRENT.get()
    if night is None or (key is not None and night.key != key):
        return None
    if night.closed:
        raise NightOver(f"night {night.key} is over: a task of it ran after its flow ended")
    return night
