"""New Relic errors over NerdGraph (GraphQL), with httpx.

`NerdGraphClient` sends one NRQL query per call and owns the transport concerns: the API key
header, retries with exponential backoff on 429 (honouring Retry-After), 5xx and timeouts, and
turning every failure into a `SourceError` a user can act on. The key is never put in a message.
`NerdGraphSource` builds the queries of a night and parses the answers.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import SecretStr

from nightwatch.models import Deploy, ErrorGroup, TraceData, Window
from nightwatch.sources import http_retry, nrql
from nightwatch.sources.base import ErrorBatch, SourceError
from nightwatch.sources.parse import collect_error_groups, parse_deploys, parse_traces, unwrap_results

NRQL_GRAPHQL = (
    "query($accountId: Int!, $nrql: Nrql!) "
    "{ actor { account(id: $accountId) { nrql(query: $nrql, timeout: 60) { results } } } }"
)


class NerdGraphClient:
    """Runs NRQL through NerdGraph for one account."""

    def __init__(
        self,
        api_key: SecretStr,
        account_id: int,
        endpoint: str,
        timeout_s: float = 30,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not endpoint.startswith(("https://", "http://")):
            raise SourceError(f"NerdGraph endpoint {endpoint!r} is not an http(s) URL")
        self.endpoint = endpoint
        self.account_id = int(account_id)
        self.max_retries = max(0, max_retries)
        self.backoff_s = backoff_s
        self._api_key = api_key
        self._http = httpx.Client(timeout=timeout_s, transport=transport)

    def __repr__(self) -> str:
        return f"NerdGraphClient(account_id={self.account_id}, endpoint={self.endpoint!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> NerdGraphClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def nrql(self, query: str, what: str) -> tuple[list[dict], list[str]]:
        """Rows and warnings of one NRQL query; `what` names the query in error messages."""
        payload = {"query": NRQL_GRAPHQL, "variables": {"accountId": self.account_id, "nrql": query}}
        return unwrap_results(self._post(payload, what), what)

    def _post(self, payload: dict, what: str) -> Any:
        request = self._http.build_request("POST", self.endpoint, json=payload, headers=self._headers())
        return self._decode(http_retry.send(self._http, request, "NerdGraph", what, self.max_retries, self.backoff_s), what)

    def _headers(self) -> dict[str, str]:
        return {"API-Key": self._api_key.get_secret_value(), "Content-Type": "application/json"}

    def _decode(self, response: httpx.Response, what: str) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise SourceError(
                f"NerdGraph rejected the API key (HTTP {status}) for the {what}: use a New Relic User key "
                f"(NRAK-...) with access to account {self.account_id} "
                "in NEW_RELIC_API_KEY or NIGHTWATCH_NEWRELIC_API_KEY", "rejected"
            )
        return http_retry.json_body(response, "NerdGraph", what)


class NerdGraphSource:
    """Errors of one New Relic application, live."""

    name = "newrelic"
    demo = False

    def __init__(self, client: NerdGraphClient, app_name: str) -> None:
        self.client = client
        self.app_name = app_name
        self._members: dict[str, list[tuple[str, str]]] = {}

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        rows, warnings = self.client.nrql(nrql.errors_query(self.app_name, window, limit), "errors query")
        parsed = collect_error_groups(rows, self.app_name)
        self._members.update(parsed.members)
        return ErrorBatch(errors=parsed.errors, warnings=warnings + parsed.warnings, rows_seen=len(rows))

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        """Occurrences and traces; one query failing leaves a note, both failing raise SourceError."""
        transactions = [tx for _, tx in self._members.get(error.fingerprint, [])] or None
        notes: list[str] = []
        tx_query = nrql.transaction_errors_query(self.app_name, error, window, transactions=transactions)
        trace_query = nrql.error_traces_query(self.app_name, error, window, transactions=transactions)
        tx_rows = self._rows(tx_query, f"transaction errors query for {error.label}", notes)
        trace_rows = self._rows(trace_query, f"error traces query for {error.label}", notes)
        if tx_rows is None and trace_rows is None:
            raise SourceError("; ".join(notes))
        data = parse_traces(error.fingerprint, tx_rows or [], trace_rows or [])
        data.notes[:0] = notes
        return data

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        """Deploy markers of change tracking in `window`; none, with the reason, where the query fails."""
        notes: list[str] = []
        rows = self._rows(nrql.deploys_query(self.app_name, window), "deploy markers query", notes)
        deploys, skipped = parse_deploys(rows or [])
        return deploys, notes + skipped

    def _rows(self, query: str, what: str, notes: list[str]) -> list[dict] | None:
        try:
            rows, warnings = self.client.nrql(query, what)
        except SourceError as exc:
            notes.append(str(exc))
            return None
        notes.extend(warnings)
        return rows
