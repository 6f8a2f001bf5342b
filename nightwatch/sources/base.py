"""What every error source provides, and the one exception a source raises.

A source is anything that yields production errors for a window: New Relic over NerdGraph, or a
NerdGraph export file (the bundled demo is one). The flow talks to the `ErrorSource` protocol only,
so the live API, an export file and a test fake are interchangeable.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from nightwatch.models import Deploy, ErrorGroup, TraceData, Window


class SourceError(Exception):
    """A source could not deliver: the message says what failed and what the user can do about it. `kind` says
    which way, where it is known: "unreachable" (nothing answered), "rejected" (the key was refused), "busy"
    (429 or 5xx after every retry)."""

    def __init__(self, message: str, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


def hour_after(moment: datetime) -> datetime:
    """The first whole hour after `moment`: where a night's window ending must fall for a capture to hold it whole."""
    return moment.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)


def read_errors_file(path: Path) -> Any:
    """The decoded JSON of an errors file; a missing, unreadable or malformed one is a SourceError naming the place."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError(f"errors file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"errors file {path} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"errors file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


class ErrorBatch(BaseModel):
    """The errors of one window, with the warnings met on the way (skipped rows, partial results)."""

    model_config = ConfigDict(extra="forbid")

    errors: list[ErrorGroup] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    rows_seen: int = 0


@runtime_checkable
class ErrorSource(Protocol):
    """A provider of production errors and their traces."""

    name: str
    demo: bool

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        """Error groups seen in the window, at most `limit` raw facets."""
        ...

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        """Recent occurrences and a stack trace of one error group, redacted and size-capped."""
        ...

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        """The application's deploy markers in `window` (change tracking), oldest first, with notes on what was not
        read; none where the account has none."""
        ...
