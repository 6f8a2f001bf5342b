"""Errors from a NerdGraph export file: the offline demo, a replay, or an air-gapped night.

The file holds the very NerdGraph responses the live source would receive, so both sources share
one parser. Format `nightwatch.nerdgraph-export/1`:

    {"format": "nightwatch.nerdgraph-export/1", "account_id": 1234567, "app_name": "storefront-production",
     "exported_at": "2026-11-21T06:00:00Z",
     "errors": <NerdGraph response of the facet query>,
     "details": [{"error_class": "...", "transaction": "...",
                  "transaction_errors": <NerdGraph response>, "error_traces": <NerdGraph response>}]}

`rebase_to` shifts every timestamp by (rebase_to - exported_at), so a bundled demo always falls in
the last night. The window is applied honestly: a group last seen before the window starts, or first
seen after it ends, is dropped, and the batch says how many were.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from nightwatch.fingerprint import normalise_transaction
from nightwatch.models import Deploy, ErrorGroup, TraceData, Window
from nightwatch.sources.base import ErrorBatch, SourceError, read_errors_file
from nightwatch.sources.parse import (
    ParsedErrors,
    collect_error_groups,
    parse_deploys,
    parse_timestamp,
    parse_traces,
    sort_newest_first,
    unwrap_results,
)

EXPORT_FORMAT = "nightwatch.nerdgraph-export/1"
TRANSACTION_ERRORS_LIMIT = 5  # as many rows as the live queries ask for
ERROR_TRACES_LIMIT = 3


class ExportFileSource:
    """An `ErrorSource` over a NerdGraph export file; the file is read and checked on construction."""

    def __init__(self, path: Path, rebase_to: datetime | None = None, demo: bool = False) -> None:
        self.path = Path(path)
        self.demo = demo
        self.name = "demo" if demo else f"file:{self.path.name}"
        export = _load(self.path)
        self.app_name: str = export["app_name"]
        self.account_id: int | None = export.get("account_id")
        self.exported_at = _exported_at(export, self.path)
        self._shift = (_aware(rebase_to) - self.exported_at) if rebase_to else timedelta(0)
        self._rows, self._warnings = unwrap_results(export["errors"], f"errors query in {self.path.name}")
        self._details: list[Any] = export.get("details") or []
        self._deploys: Any = export.get("deploys")  # the deploy markers query's response, where the export has one
        self._parsed: ParsedErrors = collect_error_groups(
            [self._rebased(r, ("first_seen", "last_seen")) for r in self._rows], self.app_name
        )

    # ErrorSource ---------------------------------------------------------------------------------

    def fetch_errors(self, window: Window, limit: int = 200) -> ErrorBatch:
        kept = [g for g in self._parsed.errors if _overlaps(g, window)]
        warnings = self._warnings + self._parsed.warnings
        if dropped := len(self._parsed.errors) - len(kept):
            warnings.append(
                f"{dropped} error group(s) in {self.path.name} fall outside the window {window.key} and were left out"
            )
        kept.sort(key=lambda g: (-g.occurrences, g.fingerprint))
        return ErrorBatch(errors=kept[:limit], warnings=warnings, rows_seen=len(self._rows))

    def fetch_traces(self, error: ErrorGroup, window: Window) -> TraceData:
        """Details of every raw (class, transaction) merged into the error's fingerprint."""
        notes: list[str] = []
        tx_rows, trace_rows = [], []
        for index, detail in self._matching_details(error):
            tx_rows += self._detail_rows(detail, "transaction_errors", index, notes)
            trace_rows += self._detail_rows(detail, "error_traces", index, notes)
        tx_rows = sort_newest_first(_in_window(tx_rows, window, notes, "transaction error"))
        trace_rows = sort_newest_first(_in_window(trace_rows, window, notes, "error trace"))
        data = parse_traces(error.fingerprint, tx_rows[:TRANSACTION_ERRORS_LIMIT], trace_rows[:ERROR_TRACES_LIMIT])
        if not tx_rows and not trace_rows and not notes:
            notes.append(f"{self.path.name} holds no details for {error.label}")
        data.notes[:0] = notes
        return data

    def fetch_deploys(self, window: Window) -> tuple[list[Deploy], list[str]]:
        """The export's deploy markers (a response of the deploy markers query, as `errors` holds one) in `window`."""
        if not self._deploys:
            return [], []
        try:
            rows, notes = unwrap_results(self._deploys, f"deploy markers query in {self.path.name}")
        except SourceError as exc:
            return [], [str(exc)]
        deploys, skipped = parse_deploys([self._rebased(r, ("timestamp",)) for r in rows])
        return [d for d in deploys if window.start <= d.at < window.end], notes + skipped

    # details -----------------------------------------------------------------------------------

    def _matching_details(self, error: ErrorGroup) -> list[tuple[int, dict]]:
        pairs = set(self._parsed.members.get(error.fingerprint, []))
        wanted = (error.error_class, normalise_transaction(error.transaction))
        matches = []
        for index, detail in enumerate(self._details):
            if not isinstance(detail, dict):
                continue
            pair = (detail.get("error_class"), detail.get("transaction"))
            if pair in pairs or (pair[0], normalise_transaction(str(pair[1] or ""))) == wanted:
                matches.append((index, detail))
        return matches

    def _detail_rows(self, detail: dict, key: str, index: int, notes: list[str]) -> list[dict]:
        response = detail.get(key)
        if response is None:
            return []
        try:
            rows, warnings = unwrap_results(response, f"{key} of details[{index}] in {self.path.name}")
        except SourceError as exc:
            notes.append(str(exc))
            return []
        notes.extend(warnings)
        return [self._rebased(row, ("timestamp",)) for row in rows]

    def _rebased(self, row: Any, keys: tuple[str, ...]) -> Any:
        """A copy of the row with its timestamps moved by the rebase shift (epoch milliseconds)."""
        if not self._shift or not isinstance(row, dict):
            return row
        moved = dict(row)
        for key in keys:
            try:
                moment = parse_timestamp(row.get(key))
            except (ValueError, OverflowError, OSError):
                continue  # left for the parser to report
            if moment is not None:
                moved[key] = round((moment + self._shift).timestamp() * 1000)
        return moved


def _load(path: Path) -> dict:
    export = read_errors_file(path)
    _check_format(export, path)
    return export


def _check_format(export: Any, path: Path) -> None:
    if not isinstance(export, dict):
        raise SourceError(
            f"errors file {path} is not a NerdGraph export: the top level is a {type(export).__name__}, not an object"
        )
    if export.get("format") != EXPORT_FORMAT:
        found = f"format {export['format']!r}" if "format" in export else "no 'format' key"
        raise SourceError(f"errors file {path} is not a NerdGraph export: {found} (expected {EXPORT_FORMAT!r})")
    if not isinstance(export.get("app_name"), str) or not export["app_name"].strip():
        raise SourceError(f"errors file {path}: 'app_name' must be a non-empty string")
    if not isinstance(export.get("errors"), dict):
        raise SourceError(
            f"errors file {path}: 'errors' must hold the NerdGraph response of the errors query (an object)"
        )
    if not isinstance(export.get("details", []), (list, type(None))):
        raise SourceError(f"errors file {path}: 'details' must be a list")


def _exported_at(export: dict, path: Path) -> datetime:
    try:
        moment = parse_timestamp(export.get("exported_at"))
    except (ValueError, OverflowError, OSError):
        moment = None
    if moment is None:
        raise SourceError(
            f"errors file {path}: 'exported_at' must be an ISO-8601 time, got {export.get('exported_at')!r}"
        )
    return moment


def _aware(moment: datetime) -> datetime:
    return parse_timestamp(moment)  # type: ignore[return-value]


def _overlaps(group: ErrorGroup, window: Window) -> bool:
    start, end = _aware(window.start), _aware(window.end)
    if group.last_seen is not None and group.last_seen < start:
        return False
    return not (group.first_seen is not None and group.first_seen >= end)


def _in_window(rows: list[dict], window: Window, notes: list[str], kind: str) -> list[dict]:
    kept = [row for row in rows if _row_in_window(row, window)]
    if dropped := len(rows) - len(kept):
        notes.append(f"{dropped} {kind} row(s) outside the window {window.key} left out")
    return kept


def _row_in_window(row: dict, window: Window) -> bool:
    try:
        moment = parse_timestamp(row.get("timestamp"))
    except (ValueError, OverflowError, OSError):
        return True
    return moment is None or _aware(window.start) <= moment < _aware(window.end)
