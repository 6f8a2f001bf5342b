"""Captured payloads of the Python agent (`tests/captured/newrelic_python/*.json`) as the fake NerdGraph serves them.

The payloads are captured, not written: `scripts/capture_newrelic_python.py` runs the real `newrelic` agent in
developer mode against small Django, Flask, FastAPI and Celery applications and keeps what it would have sent.
`nightwatch.sources.agent_capture` turns them into the events New Relic stores. Timestamps move as one, so the
newest error lands an hour before `now`; nothing else is touched.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from nightwatch.sources import agent_capture
from tests.fakes.nerdgraph import NerdGraphDataset

CAPTURED = Path(__file__).resolve().parents[1] / "captured" / "newrelic_python"


def load_capture(name: str) -> dict:
    return json.loads((CAPTURED / f"{name}.json").read_text(encoding="utf-8"))


def captures() -> list[str]:
    return sorted(p.stem for p in CAPTURED.glob("*.json"))


def transaction_errors(capture: dict) -> list[dict]:
    return agent_capture.transaction_errors(capture["payloads"]["error_event_data"], capture["app_name"])


def error_traces(capture: dict) -> list[dict]:
    return agent_capture.error_traces(capture["payloads"]["error_data"], capture["app_name"])


def dataset(capture: dict, now: datetime) -> NerdGraphDataset:
    """The account as NerdGraph would answer for it, the newest error an hour before `now`."""
    events, traces = transaction_errors(capture), error_traces(capture)
    newest = max(e["timestamp"] for e in events)
    shift = int((now - timedelta(hours=1)).timestamp() * 1000) - newest
    return NerdGraphDataset.from_events(capture["app_name"], _shifted(events, shift), _shifted(traces, shift))


def _shifted(rows: list[dict[str, Any]], shift_ms: int) -> list[dict[str, Any]]:
    return [{**row, "timestamp": row["timestamp"] + shift_ms} for row in rows]
