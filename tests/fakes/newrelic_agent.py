"""What New Relic stores from the Python agent's payloads, as the fake NerdGraph serves it.

The payloads are captured, not written: `scripts/capture_newrelic_python.py` runs the real `newrelic` agent
in developer mode against small Django, Flask, FastAPI and Celery applications and keeps what it would have
sent (`tests/captured/newrelic_python/*.json`). Here they become the events NRQL returns:
- `error_event_data` is `[run id, sampling info, [[intrinsics, user attributes, agent attributes], ...]]`; each
  error is one TransactionError event carrying all three sets of attributes, plus the account's `appName`;
- `error_data` is `[run id, [[time (s), transaction, message, class, params], ...]]`; each error trace keeps the
  stack trace the agent sent (`params.stack_trace`, a list of lines) under `stackTrace`, beside its attributes.
Timestamps move as one, so the newest error lands an hour before `now`; nothing else is touched.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.nerdgraph import NerdGraphDataset

CAPTURED = Path(__file__).resolve().parents[1] / "captured" / "newrelic_python"


def load_capture(name: str) -> dict:
    return json.loads((CAPTURED / f"{name}.json").read_text(encoding="utf-8"))


def captures() -> list[str]:
    return sorted(p.stem for p in CAPTURED.glob("*.json"))


def transaction_errors(capture: dict) -> list[dict]:
    events = []
    for payload in capture["payloads"]["error_event_data"]:
        for intrinsics, user, agent in payload[2]:
            events.append({**agent, **user, **intrinsics, "appName": capture["app_name"]})
    return events


def error_traces(capture: dict) -> list[dict]:
    traces = []
    for payload in capture["payloads"]["error_data"]:
        for seconds, transaction, message, error_class, params in payload[1]:
            traces.append({
                **params.get("agentAttributes", {}), **params.get("userAttributes", {}), **params.get("intrinsics", {}),
                "timestamp": int(seconds * 1000), "transactionName": transaction, "error.message": message,
                "error.class": error_class, "stackTrace": params.get("stack_trace"), "appName": capture["app_name"],
            })
    return traces


def dataset(capture: dict, now: datetime) -> NerdGraphDataset:
    """The account as NerdGraph would answer for it, the newest error an hour before `now`."""
    events, traces = transaction_errors(capture), error_traces(capture)
    newest = max(e["timestamp"] for e in events)
    shift = int((now - timedelta(hours=1)).timestamp() * 1000) - newest
    return NerdGraphDataset.from_events(capture["app_name"], _shifted(events, shift), _shifted(traces, shift))


def _shifted(rows: list[dict[str, Any]], shift_ms: int) -> list[dict[str, Any]]:
    return [{**row, "timestamp": row["timestamp"] + shift_ms} for row in rows]
