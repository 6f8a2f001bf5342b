"""A fake NerdGraph: POST /graphql answering the NRQL NightWatch sends from a small dataset.

It understands exactly the NRQL shapes of `nightwatch.sources.nrql` and parses string literals the
way NRQL does (backslash escapes), so a badly escaped value turns into a syntax error or a different
filter here just as it would in New Relic. Every NRQL string received is kept in `queries`.

    fake = FakeNerdGraph(NerdGraphDataset.from_export(export), api_key="NRAK-...")
    with fake:
        client = NerdGraphClient(SecretStr("NRAK-..."), fake.account_id, fake.url)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from nightwatch.sources.agent_capture import facet_rows
from tests.fakes.http import FakeHTTPServer, Reply, Request

FAKE_API_KEY = "NRAK-FAKEKEY0123456789ABCDEFGH"
_KEYWORDS = {"SELECT", "FROM", "WHERE", "SINCE", "UNTIL", "FACET", "LIMIT", "AND", "IN", "AS"}
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "\\": "\\", "'": "'"}
_TOKEN = re.compile(r"(?P<num>-?\d+(?:\.\d+)?)|(?P<word>[A-Za-z_][\w.]*|\*)|(?P<op>[=(),])")


class NrqlSyntaxError(ValueError):
    pass


@dataclass
class NerdGraphDataset:
    """What the fake account holds: facet rows of the errors query and event rows of the details."""

    app_name: str
    facets: list[dict] = field(default_factory=list)
    transaction_errors: list[dict] = field(default_factory=list)
    error_traces: list[dict] = field(default_factory=list)
    aggregate: bool = False  # facet queries computed from the TransactionError events, as NRQL does
    deploys: list[dict] = field(default_factory=list)  # Deployment events (change tracking's deploy markers)

    @classmethod
    def from_events(cls, app_name: str, transaction_errors: list[dict], error_traces: list[dict]) -> NerdGraphDataset:
        """An account holding raw events (as an agent reported them); the errors query aggregates them."""
        return cls(app_name=app_name, transaction_errors=transaction_errors, error_traces=error_traces, aggregate=True)

    @classmethod
    def from_export(cls, export: dict) -> NerdGraphDataset:
        data = cls(app_name=export["app_name"], facets=list(_results(export["errors"])), deploys=list(_results(export.get("deploys"))))
        for detail in export.get("details", []):
            tags = {"error.class": detail["error_class"], "transactionName": detail["transaction"]}
            data.transaction_errors += [{**tags, **row} for row in _results(detail.get("transaction_errors"))]
            data.error_traces += [{**tags, **row} for row in _results(detail.get("error_traces"))]
        return data


def _results(response: dict | None) -> list[dict]:
    return response["data"]["actor"]["account"]["nrql"]["results"] if response else []


def nerdgraph_response(rows: list[dict], errors: list[str] | None = None) -> dict:
    """The envelope NerdGraph wraps NRQL results in."""
    body: dict[str, Any] = {"data": {"actor": {"account": {"nrql": {"results": rows}}}}}
    if errors:
        body["errors"] = [{"message": message} for message in errors]
    return body


# --- a small export used across the tests -------------------------------------------------------

SAMPLE_EXPORTED_AT = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
WEIRD_CLASS = "Weird'Error\\"
WEIRD_TRANSACTION = "Controller/it's\\here"
RUBY_TRACE = "\n".join(
    [
        "app/models/order.rb:42:in 'Order#total'",
        "app/controllers/orders_controller.rb:12:in `show'",
        "/usr/local/bundle/gems/actionpack-7.1.3/lib/action_controller/metal/implicit_render.rb:6:in `send_action'",
    ]
)


def _ms(hours_before: float) -> int:
    return int((SAMPLE_EXPORTED_AT - timedelta(hours=hours_before)).timestamp() * 1000)


def _facet(
    error_class: str,
    transaction: str,
    occurrences: int,
    message: str,
    first_h: float,
    last_h: float,
    status: int | None,
) -> dict:
    return {
        "facet": [error_class, transaction],
        "error.class": error_class,
        "transactionName": transaction,
        "occurrences": occurrences,
        "message": message,
        "first_seen": _ms(first_h),
        "last_seen": _ms(last_h),
        "http_status": status,
    }


def _detail(error_class: str, transaction: str, hours: list[float], trace: str | list | None) -> dict:
    occurrences = [
        {
            "timestamp": _ms(h),
            "error.class": error_class,
            "error.message": f"boom at {h}h",
            "request.uri": f"/{transaction.lower()}",
            "host": "web-1",
        }
        for h in hours
    ]
    traces = (
        [{"timestamp": _ms(hours[0]), "error.class": error_class, "stackTrace": trace}] if trace is not None else []
    )
    return {
        "error_class": error_class,
        "transaction": transaction,
        "transaction_errors": nerdgraph_response(occurrences),
        "error_traces": nerdgraph_response(traces),
    }


def sample_export() -> dict:
    """Four raw facets: a crash, a not-found split over two ids (one group), an old timeout, a weird name."""
    facets = [
        _facet("NoMethodError", "Controller/orders/show", 87, "undefined method `total' for nil:NilClass", 20, 1, 500),
        _facet(
            "ActiveRecord::RecordNotFound",
            "Controller/products/123/edit",
            30,
            "Couldn't find Product with id=123",
            10,
            3,
            404,
        ),
        _facet(
            "ActiveRecord::RecordNotFound",
            "Controller/products/456/edit",
            12,
            "Couldn't find Product with id=456",
            22,
            2,
            404,
        ),
        _facet("Net::ReadTimeout", "OtherTransaction/Sidekiq/ImportJob", 5, "Net::ReadTimeout", 40, 30, None),
        _facet(WEIRD_CLASS, WEIRD_TRANSACTION, 3, "quote ' and backslash \\", 5, 4, 500),
    ]
    details = [
        _detail("NoMethodError", "Controller/orders/show", [1, 2, 30], RUBY_TRACE),
        _detail(
            "ActiveRecord::RecordNotFound",
            "Controller/products/123/edit",
            [3],
            ["app/controllers/products_controller.rb:8:in `edit'"],
        ),
        _detail("ActiveRecord::RecordNotFound", "Controller/products/456/edit", [2], None),
        _detail(WEIRD_CLASS, WEIRD_TRANSACTION, [4], RUBY_TRACE),
    ]
    return {
        "format": "nightwatch.nerdgraph-export/1",
        "account_id": 1234567,
        "app_name": "storefront-production",
        "exported_at": "2026-11-21T06:00:00Z",
        "errors": nerdgraph_response(facets),
        "details": details,
    }


# --- NRQL -----------------------------------------------------------------------------------------


def tokenize(nrql: str) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(nrql):
        if nrql[pos].isspace():
            pos += 1
        elif nrql[pos] == "'":
            value, pos = _read_string(nrql, pos + 1)
            tokens.append(("str", value))
        else:
            match = _TOKEN.match(nrql, pos)
            if not match:
                raise NrqlSyntaxError(f"unexpected character {nrql[pos]!r} at {pos}")
            tokens.append((match.lastgroup or "", match.group()))
            pos = match.end()
    return tokens


def _read_string(nrql: str, pos: int) -> tuple[str, int]:
    out: list[str] = []
    while pos < len(nrql):
        ch = nrql[pos]
        if ch == "'":
            return "".join(out), pos + 1
        if ch == "\\":
            escape = nrql[pos + 1 : pos + 2]
            if escape == "u":
                out.append(chr(int(nrql[pos + 2 : pos + 6], 16)))
                pos += 6
                continue
            if escape not in _ESCAPES:
                raise NrqlSyntaxError(f"unknown escape \\{escape} at {pos}")
            out.append(_ESCAPES[escape])
            pos += 2
            continue
        out.append(ch)
        pos += 1
    raise NrqlSyntaxError("unterminated string literal")


@dataclass
class Query:
    event_type: str
    conditions: dict[str, list[str]]
    since_ms: int
    until_ms: int
    facets: list[str]
    limit: int
    select: list[tuple[str, str, str]] = field(default_factory=list)  # (function, attribute, alias)


_AGGREGATES = ("count", "latest", "earliest")


def _is_select_item(function, opening, attribute, closing, as_, alias) -> bool:
    return (function[0] == "word" and function[1].lower() in _AGGREGATES and opening == ("op", "(")
            and attribute[0] == "word" and closing == ("op", ")") and as_[0] == "word" and as_[1].upper() == "AS"
            and alias[0] == "str")


def _select_items(tokens: list[tuple[str, Any]]) -> list[tuple[str, str, str]]:
    """`count(*) AS 'n', latest(attr) AS 'x'`; a bare `*` selects every attribute (no items)."""
    if tokens == [("word", "*")]:
        return []
    items, pos = [], 0
    while pos < len(tokens):
        item = tokens[pos:pos + 6]  # function ( attribute ) AS 'alias'
        if len(item) < 6 or not _is_select_item(*item):
            raise NrqlSyntaxError(f"unsupported SELECT item at {' '.join(str(v) for _, v in item)!r}")
        items.append((item[0][1].lower(), item[2][1], item[5][1]))
        pos += 6
        if pos < len(tokens) and tokens[pos] != ("op", ","):
            raise NrqlSyntaxError(f"expected a comma after a SELECT item, got {tokens[pos][1]!r}")
        pos += 1
    return items


def parse_nrql(nrql: str) -> Query:
    """The NRQL shapes NightWatch sends; anything else is a syntax error."""
    tokens = tokenize(nrql)
    words = [(v.upper() if k == "word" else None) for k, v in tokens]
    for required in ("SELECT", "FROM", "WHERE", "SINCE", "UNTIL", "LIMIT"):
        if required not in words:
            raise NrqlSyntaxError(f"missing {required}")
    at = {w: words.index(w) for w in _KEYWORDS if w in words}
    where_end = min(at[k] for k in ("SINCE", "UNTIL", "FACET", "LIMIT") if k in at)
    facet_end = at["LIMIT"]
    return Query(
        event_type=tokens[at["FROM"] + 1][1],
        conditions=_conditions(tokens[at["WHERE"] + 1 : where_end]),
        since_ms=int(tokens[at["SINCE"] + 1][1]),
        until_ms=int(tokens[at["UNTIL"] + 1][1]),
        facets=[v for k, v in tokens[at["FACET"] + 1 : facet_end] if k == "word"] if "FACET" in at else [],
        limit=_trailing_limit(tokens, facet_end),
        select=_select_items(tokens[at["SELECT"] + 1 : at["FROM"]]),
    )


def _trailing_limit(tokens: list[tuple[str, Any]], at: int) -> int:
    rest = tokens[at + 1 :]
    if len(rest) != 1 or rest[0][0] != "num":
        raise NrqlSyntaxError(f"LIMIT must be followed by exactly one number, got {rest!r}")
    return int(rest[0][1])


def _conditions(tokens: list[tuple[str, Any]]) -> dict[str, list[str]]:
    """`attr = 'v' AND attr IN ('a', 'b') ...`; OR, LIKE and anything else are refused."""
    conditions: dict[str, list[str]] = {}
    pos = 0
    while pos < len(tokens):
        (kind, name), (_, op) = tokens[pos], tokens[pos + 1] if pos + 1 < len(tokens) else ("", "")
        if kind != "word" or name.upper() in _KEYWORDS:
            raise NrqlSyntaxError(f"expected an attribute, got {name!r}")
        if op == "=" and pos + 2 < len(tokens) and tokens[pos + 2][0] == "str":
            conditions[name], pos = [tokens[pos + 2][1]], pos + 3
        elif str(op).upper() == "IN":
            values, pos = _in_list(tokens, pos + 2)
            conditions[name] = values
        else:
            raise NrqlSyntaxError(f"unsupported condition on {name!r}: {op!r}")
        if pos < len(tokens):
            if tokens[pos] != ("word", "AND"):
                raise NrqlSyntaxError(f"expected AND, got {tokens[pos][1]!r}")
            pos += 1
    return conditions


def _in_list(tokens: list[tuple[str, Any]], pos: int) -> tuple[list[str], int]:
    if pos >= len(tokens) or tokens[pos] != ("op", "("):
        raise NrqlSyntaxError("IN needs a parenthesised list")
    values, pos = [], pos + 1
    while pos < len(tokens) and tokens[pos][0] == "str":
        values.append(tokens[pos][1])
        pos += 1
        if pos < len(tokens) and tokens[pos] == ("op", ","):
            pos += 1
    if pos >= len(tokens) or tokens[pos] != ("op", ")"):
        raise NrqlSyntaxError("IN list not closed")
    return values, pos + 1


# --- the server -----------------------------------------------------------------------------------


class FakeNerdGraph:
    """POST /graphql with API-Key auth, answering from a `NerdGraphDataset`."""

    def __init__(self, dataset: NerdGraphDataset, api_key: str = FAKE_API_KEY, account_id: int = 1234567) -> None:
        self.dataset = dataset
        self.api_key = api_key
        self.account_id = account_id
        self.queries: list[str] = []
        self.server = FakeHTTPServer()
        self.server.route("POST", "/graphql", self._handle)

    @property
    def url(self) -> str:
        return f"{self.server.url}/graphql"

    def fail_next(self, *replies: Reply) -> None:
        self.server.fail_next("POST", "/graphql", *replies)

    def __enter__(self) -> FakeNerdGraph:
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()

    def _handle(self, request: Request) -> Reply:
        if request.headers.get("api-key") != self.api_key:
            return Reply(401, {"errors": [{"message": "Invalid credentials"}]})
        body = request.json()
        variables = body.get("variables") or {}
        if "nrql(query: $nrql" not in body.get("query", ""):
            return Reply(400, {"errors": [{"message": "unsupported GraphQL query"}]})
        self.queries.append(variables.get("nrql", ""))
        if variables.get("accountId") != self.account_id:
            return Reply(
                200, _graphql_error(f"Account {variables.get('accountId')} not found or not authorized", account=None)
            )
        try:
            query = parse_nrql(variables.get("nrql", ""))
        except (NrqlSyntaxError, IndexError, ValueError) as exc:
            return Reply(200, _graphql_error(f"NRQL Syntax Error: {exc}"))
        return Reply(200, {"data": {"actor": {"account": {"nrql": {"results": self._answer(query)}}}}})

    def _answer(self, query: Query) -> list[dict]:
        if query.facets and self.dataset.aggregate:
            return self._aggregate(query)
        if query.facets:
            rows = [r for r in self.dataset.facets if self._facet_matches(r, query)]
            return sorted(rows, key=lambda r: -r.get("occurrences", 0))[: query.limit]
        events = {"ErrorTrace": self.dataset.error_traces, "Deployment": self.dataset.deploys}.get(
            query.event_type, self.dataset.transaction_errors)
        rows = [r for r in events if self._event_matches(r, query)]
        return sorted(rows, key=lambda r: -r.get("timestamp", 0))[: query.limit]

    def _aggregate(self, query: Query) -> list[dict]:
        """FACET over the matching TransactionError events, as NRQL aggregates them."""
        events = [{"appName": self.dataset.app_name, **e} for e in self.dataset.transaction_errors
                  if self._event_matches(e, query)]
        return facet_rows(events, query.facets, query.select, query.limit)

    def _attribute(self, row: dict, name: str) -> Any:
        return row.get(name, self.dataset.app_name if name == "appName" else None)

    def _conditions_hold(self, row: dict, query: Query) -> bool:
        return all(self._attribute(row, name) in values for name, values in query.conditions.items())

    def _facet_matches(self, row: dict, query: Query) -> bool:
        overlaps = row.get("last_seen", 0) >= query.since_ms and row.get("first_seen", 0) < query.until_ms
        return overlaps and self._conditions_hold(row, query)

    def _event_matches(self, row: dict, query: Query) -> bool:
        return query.since_ms <= row.get("timestamp", 0) < query.until_ms and self._conditions_hold(row, query)


def _graphql_error(message: str, account: Any = ...) -> dict:
    account_value = {"nrql": None} if account is ... else account
    return {"data": {"actor": {"account": account_value}}, "errors": [{"message": message}]}
