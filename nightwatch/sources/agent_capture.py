"""What New Relic stores from an APM agent's payloads, as NerdGraph returns it: used to build export files and test
accounts from payloads captured from the real Python agent (`scripts/capture_newrelic_python.py`).

- `error_event_data` is `[run id, sampling info, [[intrinsics, user attributes, agent attributes], ...]]`: each
  error is one TransactionError event carrying all three sets of attributes, plus the account's `appName`;
- `error_data` is `[run id, [[time (s), transaction, message, class, params], ...]]`: each error trace keeps the
  stack trace the agent sent (`params.stack_trace`, a list of lines) under `stackTrace`, beside its attributes;
- `facet_rows` answers a `SELECT count(*), latest(x), earliest(y) ... FACET a, b` over events as NRQL does:
  latest/earliest of an attribute come from the newest/oldest event that has it, null when none has.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from nightwatch.sources.base import hour_after
from nightwatch.sources.export_file import ERROR_TRACES_LIMIT, EXPORT_FORMAT, TRANSACTION_ERRORS_LIMIT
from nightwatch.sources.nrql import ERRORS_FACETS, ERRORS_SELECT, MAX_LIMIT


def transaction_errors(payloads: list, app_name: str) -> list[dict[str, Any]]:
    """TransactionError events of the agent's `error_event_data` payloads."""
    return [{**agent, **user, **intrinsics, "appName": app_name}
            for payload in payloads for intrinsics, user, agent in payload[2]]


def error_traces(payloads: list, app_name: str) -> list[dict[str, Any]]:
    """Error traces of the agent's `error_data` payloads, with their stack traces."""
    return [{**params.get("agentAttributes", {}), **params.get("userAttributes", {}), **params.get("intrinsics", {}),
             "timestamp": int(seconds * 1000), "transactionName": transaction, "error.message": message,
             "error.class": error_class, "stackTrace": params.get("stack_trace"), "appName": app_name}
            for payload in payloads for seconds, transaction, message, error_class, params in payload[1]]


def facet_rows(events: list[dict], facets: Sequence[str], select: Sequence[tuple[str, str, str]],
               limit: int) -> list[dict]:
    """FACET over `events`; `select` holds (function, attribute, alias) with count, latest or earliest."""
    groups: dict[tuple, list[dict]] = {}
    for event in sorted(events, key=lambda e: e.get("timestamp", 0)):
        groups.setdefault(tuple(event.get(f) for f in facets), []).append(event)
    rows = []
    for key, members in sorted(groups.items(), key=lambda group: -len(group[1]))[:limit]:
        row: dict[str, Any] = {"facet": list(key), **dict(zip(facets, key))}
        for function, attribute, alias in select:
            having = [e for e in members if attribute == "*" or e.get(attribute) is not None]
            if function == "count":
                row[alias] = len(having)
            elif having:
                row[alias] = (having[-1] if function == "latest" else having[0]).get(attribute)
            else:
                row[alias] = None
        rows.append(row)
    return rows


def export_of(payloads: dict[str, list], app_name: str, account_id: int) -> dict:
    """A NerdGraph export file (`nightwatch.sources.export_file`) of captured payloads: the errors query's facet rows,
    and per facet its newest TransactionError rows and error traces, as the live queries would ask for them."""
    events = transaction_errors(payloads.get("error_event_data", []), app_name)
    traces = error_traces(payloads.get("error_data", []), app_name)
    facets = facet_rows(events, ERRORS_FACETS, ERRORS_SELECT, MAX_LIMIT)
    newest = max((e["timestamp"] for e in events), default=0)

    def of(rows: list[dict], key: tuple, limit: int) -> dict:
        chosen = sorted((r for r in rows if (r.get("error.class"), r.get("transactionName")) == key),
                        key=lambda r: -r.get("timestamp", 0))[:limit]
        return {"data": {"actor": {"account": {"nrql": {"results": chosen}}}}}

    details = [{"error_class": row["facet"][0], "transaction": row["facet"][1],
                "transaction_errors": of(events, tuple(row["facet"]), TRANSACTION_ERRORS_LIMIT),
                "error_traces": of(traces, tuple(row["facet"]), ERROR_TRACES_LIMIT)} for row in facets]
    # A night's window ends on a whole hour: the export is taken at the first one after the newest error, so a night
    # replaying it (until=exported_at) sees every captured error
    taken = hour_after(datetime.fromtimestamp(newest / 1000, tz=timezone.utc))
    return {"format": EXPORT_FORMAT, "account_id": account_id, "app_name": app_name,
            "exported_at": taken.isoformat(timespec="seconds"),
            "errors": {"data": {"actor": {"account": {"nrql": {"results": facets}}}}}, "details": details}
