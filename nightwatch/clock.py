"""The night's calendar: the one place NightWatch reads the date and time it stamps and decides by.

What it decides by: the default window's end, the closed months metrics compacts, a model call's and an analysis's
timestamps (and so the date partition rows land in), documents' dates, checkpoints, log names. What is compared with
another service's own timestamps is not the calendar but that service's clock, and reads the real one: a Retry-After
date, the Batches API's created_at, a time Prefect is asked to schedule a run at.

`NIGHTWATCH_NOW` sets it (unset: the real clock):

- `2027-01-15T06:00:00Z`: the clock reads this instant when the process first looks and runs on in real time from
  there; `anchor_environment()` (the CLI calls it) writes the anchored form back, so processes it starts read the
  same calendar.
- `2027-01-15T06:00:00Z@1765090000.5`: the clock read this instant when the real clock read that Unix time; every
  process that inherits the variable shares one calendar that runs at real speed.

A date alone (`2027-01-15`) is midnight UTC. An instant without a zone is UTC.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import date, datetime, timedelta, timezone

VARIABLE = "NIGHTWATCH_NOW"

_lock = threading.Lock()
_offsets: dict[str, float] = {}  # the variable's value -> seconds the calendar is ahead of the real clock


class ClockError(ValueError):
    """NIGHTWATCH_NOW holds something that is not an instant."""


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant (or a date: its midnight), in UTC; a naive one is read as UTC."""
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ClockError(f"{VARIABLE}={text!r} is not an ISO 8601 instant (for example 2027-01-15T06:00:00Z)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _offset(value: str) -> float:
    """Seconds to add to the real clock for this value of the variable (the first reading anchors an unanchored one)."""
    with _lock:
        if value not in _offsets:
            instant, _, anchor = value.partition("@")
            try:
                real = float(anchor) if anchor.strip() else time.time()
            except ValueError:
                raise ClockError(f"{VARIABLE}={value!r}: after '@' comes the Unix time the instant was read at") from None
            _offsets[value] = parse_instant(instant).timestamp() - real
        return _offsets[value]


def shift() -> timedelta:
    """How far the calendar is from the real clock (zero when NIGHTWATCH_NOW is unset)."""
    value = os.environ.get(VARIABLE, "").strip()
    return timedelta(seconds=_offset(value)) if value else timedelta(0)


def now() -> datetime:
    """The calendar's current instant, in UTC."""
    return datetime.now(timezone.utc) + shift()


def today() -> date:
    """The calendar's date, in UTC."""
    return now().date()


def anchored(instant: datetime | str, real: float | None = None) -> str:
    """The variable's value for a calendar that reads `instant` at real Unix time `real` (now, if not given)."""
    moment = parse_instant(instant) if isinstance(instant, str) else instant.astimezone(timezone.utc)
    return f"{moment.isoformat()}@{time.time() if real is None else real:.6f}"


def anchor_environment() -> None:
    """Anchor an unanchored NIGHTWATCH_NOW at this moment, in this process's environment, so that every process it
    starts (a night's subprocesses, a Prefect worker it runs) reads the same calendar; checks the value at once."""
    value = os.environ.get(VARIABLE, "").strip()
    if value and "@" not in value:
        os.environ[VARIABLE] = anchored(value)
    elif value:
        _offset(value)
