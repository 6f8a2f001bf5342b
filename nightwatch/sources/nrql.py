"""The NRQL NightWatch sends, with every string value escaped.

NRQL string literals are single-quoted and use backslash escapes. The original NightWatch escaped
only single quotes, so a value ending in a backslash (`C:\\`) swallowed the closing quote and a
value such as `x' OR error.class LIKE '%` could rewrite the query. Here the backslash is escaped
first, then the quote, then control characters, and a NUL byte is refused outright: whatever an
error class or transaction name contains, it stays one literal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone

from nightwatch.models import ErrorGroup, Window

MAX_LIMIT = 5000  # NerdGraph's ceiling for a NRQL LIMIT

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def escape_nrql_string(value: str) -> str:
    """Escape `value` for use between single quotes in NRQL. Raises ValueError on a NUL byte."""
    if "\x00" in value:
        raise ValueError("NRQL string values cannot contain a NUL byte")
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return "".join(_escape_control(ch) for ch in escaped)


def _escape_control(ch: str) -> str:
    if ch in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[ch]
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"\\u{ord(ch):04x}"
    return ch


def nrql_literal(value: str | int | float | bool) -> str:
    """A NRQL literal: strings quoted and escaped, numbers and booleans as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"NRQL has no literal for {value!r}")
        return repr(value)
    if isinstance(value, str):
        return f"'{escape_nrql_string(value)}'"
    raise TypeError(f"no NRQL literal for a {type(value).__name__}")


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"NRQL LIMIT must be a positive integer, got {limit!r}")
    return min(limit, MAX_LIMIT)


def _window_clause(window: Window) -> str:
    return f"SINCE {epoch_ms(window.start)} UNTIL {epoch_ms(window.end)}"


# A web request's status under the names agents have reported it by: `http.statusCode` (today's agents),
# `response.status` (a string, "500": the Python agent 8.x-12.x, and beside http.statusCode since), and
# `httpResponseCode` (older agents). An attribute an account never received comes back null.
STATUS_ALIASES = ("http_status", "response_status", "http_response_code")  # in ERRORS_SELECT below


# What the errors query asks of each (error class, transaction) facet: (function, attribute, alias).
ERRORS_SELECT = (
    ("count", "*", "occurrences"), ("latest", "error.message", "message"), ("earliest", "timestamp", "first_seen"),
    ("latest", "timestamp", "last_seen"), ("latest", "http.statusCode", "http_status"),
    ("latest", "response.status", "response_status"), ("latest", "httpResponseCode", "http_response_code"),
)
ERRORS_FACETS = ("error.class", "transactionName")


def errors_query(app_name: str, window: Window, limit: int = 200) -> str:
    """Error groups of the window: one facet per (error class, transaction)."""
    select = ", ".join(f"{function}({attribute}) AS '{alias}'" for function, attribute, alias in ERRORS_SELECT)
    return (
        f"SELECT {select} FROM TransactionError WHERE appName = {nrql_literal(app_name)} "
        f"{_window_clause(window)} FACET {', '.join(ERRORS_FACETS)} LIMIT {_limit(limit)}"
    )


def probe_query(app_name: str, now: datetime) -> str:
    """The cheapest query that proves the key, the account and the endpoint: errors of the last hour, counted."""
    return (f"SELECT count(*) AS 'errors' FROM TransactionError WHERE appName = {nrql_literal(app_name)} "
            f"SINCE {epoch_ms(now) - 3_600_000} UNTIL {epoch_ms(now)} LIMIT 1")


def _error_filter(app_name: str, error: ErrorGroup, transactions: Sequence[str] | None) -> str:
    names = list(dict.fromkeys(transactions or [error.transaction]))
    if len(names) == 1:
        tx_clause = f"transactionName = {nrql_literal(names[0])}"
    else:
        tx_clause = f"transactionName IN ({', '.join(nrql_literal(n) for n in names)})"
    return f"appName = {nrql_literal(app_name)} AND error.class = {nrql_literal(error.error_class)} AND {tx_clause}"


def transaction_errors_query(
    app_name: str, error: ErrorGroup, window: Window, limit: int = 5, transactions: Sequence[str] | None = None
) -> str:
    """Recent occurrences of one error group, every attribute. `transactions` covers merged groups."""
    return (
        f"SELECT * FROM TransactionError WHERE {_error_filter(app_name, error, transactions)} "
        f"{_window_clause(window)} LIMIT {_limit(limit)}"
    )


def error_traces_query(
    app_name: str, error: ErrorGroup, window: Window, limit: int = 3, transactions: Sequence[str] | None = None
) -> str:
    """Error traces (with stack traces) of one error group."""
    return (
        f"SELECT * FROM ErrorTrace WHERE {_error_filter(app_name, error, transactions)} "
        f"{_window_clause(window)} LIMIT {_limit(limit)}"
    )


def deploys_query(app_name: str, window: Window, limit: int = 100) -> str:
    """The application's deploy markers in `window` (change tracking's `Deployment` events: timestamp, commit,
    version, deploymentId, user, description, as NerdGraph's ChangeTrackingDeployment names them), every attribute;
    the entity is named as its APM application."""
    return (f"SELECT * FROM Deployment WHERE entity.name = {nrql_literal(app_name)} "
            f"{_window_clause(window)} LIMIT {_limit(limit)}")
