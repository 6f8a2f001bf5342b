"""NRQL building: every string value stays one literal, whatever it contains."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from nightwatch.models import ErrorGroup, Window
from nightwatch.sources.nrql import (
    error_traces_query,
    errors_query,
    escape_nrql_string,
    nrql_literal,
    transaction_errors_query,
)
from tests.fakes.nerdgraph import NrqlSyntaxError, parse_nrql, tokenize

WINDOW = Window.ending_at(datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc), timedelta(hours=24))
START_MS, END_MS = 1795154400000, 1795240800000  # 2026-11-20T06:00Z, 2026-11-21T06:00Z
INJECTION = "x' OR error.class LIKE '%"
NASTY = [
    "plain",
    "it's",
    "C:\\path\\",
    "\\",
    "\\'",
    INJECTION,
    "x\\' OR error.class LIKE '%",
    "line1\nline2\r\n\ttabbed",
    "bell\x07 escape\x1b del\x7f",
    "unicode ✓ Ünïcödé",
]


def test_backslash_is_escaped_before_the_quote() -> None:
    assert escape_nrql_string("it's") == "it\\'s"
    assert escape_nrql_string("a\\b") == "a\\\\b"
    assert escape_nrql_string("\\'") == "\\\\\\'"  # backslash first, so the quote stays escaped


def test_control_characters_and_newlines_are_escaped() -> None:
    escaped = escape_nrql_string("a\nb\rc\td\x01")
    assert escaped == "a\\nb\\rc\\td\\u0001"
    assert not any(ord(ch) < 0x20 for ch in escaped)


def test_nul_is_refused() -> None:
    with pytest.raises(ValueError, match="NUL"):
        escape_nrql_string("bad\x00value")


@pytest.mark.parametrize("value", NASTY)
def test_every_value_stays_one_literal(value: str) -> None:
    assert tokenize(nrql_literal(value)) == [("str", value)]


def test_injection_attempt_becomes_a_plain_filter_value() -> None:
    error = ErrorGroup(error_class=INJECTION, transaction="Controller/a")
    query = parse_nrql(transaction_errors_query("shop", error, WINDOW))
    assert query.conditions == {"appName": ["shop"], "error.class": [INJECTION], "transactionName": ["Controller/a"]}


def test_quote_only_escaping_would_have_been_injectable() -> None:
    """The original escaping (quotes only) lets `\\'` close the literal; the fake parser notices."""
    naive = "x\\' AND error.class = 'y".replace("'", "\\'")
    with pytest.raises(NrqlSyntaxError):
        parse_nrql(f"SELECT * FROM TransactionError WHERE appName = '{naive}' SINCE 1 UNTIL 2 LIMIT 5")


def test_literals_of_other_types() -> None:
    assert nrql_literal(5) == "5"
    assert nrql_literal(True) == "true"
    assert nrql_literal(1.5) == "1.5"
    with pytest.raises(ValueError):
        nrql_literal(float("nan"))
    with pytest.raises(TypeError):
        nrql_literal(None)  # type: ignore[arg-type]


def test_errors_query_is_the_facet_query_over_the_window() -> None:
    assert errors_query("storefront-production", WINDOW, 50) == (
        "SELECT count(*) AS 'occurrences', latest(error.message) AS 'message', earliest(timestamp) AS 'first_seen', "
        "latest(timestamp) AS 'last_seen', latest(http.statusCode) AS 'http_status', "
        "latest(response.status) AS 'response_status', latest(httpResponseCode) AS 'http_response_code' FROM TransactionError "
        f"WHERE appName = 'storefront-production' SINCE {START_MS} UNTIL {END_MS} "
        "FACET error.class, transactionName LIMIT 50"
    )


def test_detail_queries_filter_by_class_and_transaction() -> None:
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/orders/show")
    assert transaction_errors_query("shop", error, WINDOW) == (
        "SELECT * FROM TransactionError WHERE appName = 'shop' AND error.class = 'NoMethodError' "
        f"AND transactionName = 'Controller/orders/show' SINCE {START_MS} UNTIL {END_MS} LIMIT 5"
    )
    traces = parse_nrql(error_traces_query("shop", error, WINDOW))
    assert (traces.event_type, traces.limit) == ("ErrorTrace", 3)


def test_merged_transactions_become_an_in_list() -> None:
    error = ErrorGroup(error_class="E", transaction="Controller/p/1")
    query = parse_nrql(error_traces_query("shop", error, WINDOW, transactions=["Controller/p/1", "Controller/p/'2'"]))
    assert query.conditions["transactionName"] == ["Controller/p/1", "Controller/p/'2'"]


def test_limit_must_be_positive_and_is_capped() -> None:
    with pytest.raises(ValueError, match="LIMIT"):
        errors_query("shop", WINDOW, 0)
    assert errors_query("shop", WINDOW, 10**6).endswith("LIMIT 5000")


def test_naive_window_is_taken_as_utc() -> None:
    naive = Window(start=datetime(2026, 11, 20, 6, 0), end=datetime(2026, 11, 21, 6, 0))
    assert f"SINCE {START_MS} UNTIL {END_MS}" in errors_query("shop", naive, 5)
