"""Parquet metrics: the system of record for runs, errors, analyses, model calls, tool calls and outcomes.

Where the files live and why is knowledge_store/layout.py: each analysis writes its part to the night's
staging ledger the moment it ends; when the night closes its parts become one file per table, and a
closed month one file per table. What this module adds:
- Each file is written under a temporary name and swapped in with `os.replace`, so an analyst's
  query scanning the folder never meets a half-written file.
- A (table, run, part) has exactly one file. Writing it again replaces it, in whichever date folder
  it was, so a rerun from the Prefect UI never duplicates a row.
- Run ids may hold characters that are unsafe in paths (`:` `+` `/`); the folder name is a
  sanitised form (with a short hash when it differs) and the real id stays in the `run_id` column.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from nightwatch.knowledge_store import layout
from nightwatch.knowledge_store.layout import STAGING, conform, storage_schema
from nightwatch.knowledge_store.schema import SCHEMA_VERSION, schema_for

from nightwatch import clock
from nightwatch.atomic import atomic_target
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, ModelCall, RunReport, TokenUsage, ToolCall
from nightwatch.outcomes import OutcomeChange
from nightwatch.redact import clean

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
MESSAGE_LIMIT = 2_000
RunDate = date | datetime | str


class MetricsWriteError(RuntimeError):
    """Rows could not be converted to the table's schema; nothing was written for that part."""


def safe_name(value: str, limit: int = 80) -> str:
    """A path-safe, collision-free folder or file name for `value` (run ids, part names)."""
    cleaned = _UNSAFE.sub("_", value).strip("._")[:limit] or "x"
    if cleaned == value:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]}"


def as_date(value: date | datetime | str) -> date:
    """Accept a date, a datetime (its UTC date) or an ISO string; the partition is a calendar day."""
    if isinstance(value, datetime):
        return utc(value).date()
    if isinstance(value, date):
        return value
    return as_date(datetime.fromisoformat(value)) if "T" in value else date.fromisoformat(value)


def utc(moment: datetime | None) -> datetime | None:
    """Naive datetimes are taken as UTC, aware ones converted: the columns are all UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def token_columns(usage: TokenUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input,
        "output_tokens": usage.output,
        "cache_write_tokens": usage.cache_write,
        "cache_read_tokens": usage.cache_read,
        "thinking_tokens": usage.thinking,
        "cache_write_1h_tokens": usage.cache_write_1h,
    }


def usage_of_row(row: dict[str, Any]) -> TokenUsage:
    """A `model_calls` (or `analyses`, `runs`) row's token columns back as a TokenUsage; files written before a
    column existed read as 0."""
    return TokenUsage(input=row.get("input_tokens") or 0, output=row.get("output_tokens") or 0,
                      cache_write=row.get("cache_write_tokens") or 0, cache_read=row.get("cache_read_tokens") or 0,
                      thinking=row.get("thinking_tokens") or 0, cache_write_1h=row.get("cache_write_1h_tokens") or 0)


def model_call_row(call: ModelCall) -> dict[str, Any]:
    row = call.model_dump(exclude={"usage"})
    row.update(token_columns(call.usage), started_at=utc(call.started_at))
    return row


def tool_call_row(call: ToolCall, part: str, seq: int) -> dict[str, Any]:
    return {**call.model_dump(), "part": part, "seq": seq}


def analysis_row(run_id: str, result: ErrorAnalysisResult, analysed_at: datetime) -> dict[str, Any]:
    verdict, analysis = result.verdict, result.analysis
    return {
        "run_id": run_id,
        "fingerprint": result.fingerprint,
        "error_class": result.error.error_class,
        "transaction": result.error.transaction,
        "occurrences": result.error.occurrences,
        "route": verdict.route if verdict else None,
        "severity": verdict.severity if verdict else None,
        "source": result.source,
        "agent": result.agent,
        "model": result.model,
        "confidence": analysis.confidence if analysis else None,
        "has_fix": bool(analysis and analysis.has_fix),
        "iterations": result.iterations,
        **token_columns(result.tokens),
        "cost_usd": result.cost_usd,
        "model_calls": len(result.model_calls),
        "tool_calls": len(result.tool_calls),
        "files_examined": len(set(result.files_examined)),
        "prior_analyses": len(result.prior_analyses),
        "duration_s": result.duration_s,
        "failure": clean(result.failure, MESSAGE_LIMIT)[0] if result.failure else None,
        "analysed_at": analysed_at,
        "regression": result.regression or None,
        "verification": result.verification.status if result.verification else None,
        "verification_reason": result.verification.reason or None if result.verification else None,
    }


def error_row(run_id: str, error: ErrorGroup, selected: set[str], ignored: dict[str, str]) -> dict[str, Any]:
    row = error.model_dump(exclude={"fingerprint"})
    row.update(
        run_id=run_id,
        fingerprint=error.fingerprint,
        message=clean(error.message, MESSAGE_LIMIT)[0],
        first_seen=utc(error.first_seen),
        last_seen=utc(error.last_seen),
        selected=error.fingerprint in selected,
        ignored_by=ignored.get(error.fingerprint),
        first_release=error.first_release or None,
        tracker_status=error.tracker_status or None,
    )
    return row


_RUN_FIELDS = {
    *("run_id", "mode", "dry_run", "demo_data", "offline_model", "agent", "model"),
    *("errors_found", "errors_ignored", "errors_selected"),
}


def run_row(report: RunReport, night: "NightSpend | None" = None, attempts: int = 1) -> dict[str, Any]:
    """The night's one row. With `night` (what the ledger holds for every attempt), tokens, cost and calls
    are the night's, so a rerun that answered from the cache does not hide what the first attempt spent."""
    analysed = sum(1 for r in report.results if r.analysis is not None and not r.failed)
    spend = night or NightSpend(report.totals.tokens, report.totals.cost_usd, report.totals.model_calls)
    return {
        **report.model_dump(include=_RUN_FIELDS),
        "started_at": utc(report.started_at),
        "finished_at": utc(report.finished_at),
        "window_start": utc(report.window.start),
        "window_end": utc(report.window.end),
        "errors_analysed": analysed,
        "source": report.error_source or None,
        "from_cache": report.count_source("cache"),
        "from_knowledge": report.count_source("knowledge"),
        "issues_created": sum(1 for i in report.issues if i.action == "created" or i.opened_by_night),
        "pr_created": bool(report.pr and report.pr.action == "created"),
        **token_columns(spend.tokens),
        "cost_usd": spend.cost_usd,
        "model_calls": spend.calls,
        "iterations": report.totals.iterations,
        "errors_failed": report.errors_failed,
        "attempts": attempts,
    }


@dataclass(frozen=True)
class NightSpend:
    tokens: TokenUsage
    cost_usd: float
    calls: int


def analyses_part(attempt: str) -> str:
    """The `analyses` part of one attempt of a night (each attempt adds its own)."""
    return f"analyses-{attempt}" if attempt else "analyses"


class MetricsStore:
    """Writes the metrics tables as Parquet under `<home>/metrics`; every write is atomic and idempotent."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.root = self.home / "metrics"
        self._versioned = False  # the folder's schema mark was seen or written (checked once, not at every write)

    def write_model_calls(self, run_id: str, run_date: RunDate, part: str, calls: list[ModelCall]) -> Path:
        """One file per analysis part (e.g. `<fingerprint>-investigate`), written as soon as it ends."""
        return self._write_run_part("model_calls", run_id, run_date, part, [model_call_row(c) for c in calls])

    def night_calls(self, run_id: str, run_date: RunDate, columns: list[str] | None = None,
                    part: str = "") -> list[dict[str, Any]]:
        """Every row of the night's model-call ledger, whichever attempt wrote it (only `columns`, and only the parts
        of analysis `part`, if given)."""
        identity = columns and list(dict.fromkeys([*columns, "call_id", "started_at"]))  # what counts a call once
        rows = self._night_rows("model_calls", run_id, run_date, identity or None, prefix=part)
        seen: set[tuple[Any, Any]] = set()  # a part still staged after its month's compaction (a crash between) counts once
        return [row for row in rows if _first_time(seen, (row["call_id"], row["started_at"]))]

    def _night_rows(self, table: str, run_id: str, run_date: RunDate, columns: list[str] | None, prefix: str = "",
                    but: str = "") -> list[dict[str, Any]]:
        """The night's rows of `table`: those its month's compaction holds (a night rerun after its month closed), then
        its staged parts whose names start with `prefix`, except the part `but` (an attempt's own)."""
        folder = self.run_folder(table, run_id, run_date)
        pattern, mine = f"{_UNSAFE.sub('_', prefix).strip('._')[:40]}*.parquet", f"{safe_name(but)}.parquet"
        parts = [p for p in sorted(folder.glob(pattern)) if not but or p.name != mine] if folder.is_dir() else []
        return self._compacted(table, run_id, run_date, columns) + [
            row for path in parts for row in pq.read_table(path, columns=columns).to_pylist()]

    def _compacted(self, table: str, run_id: str, run_date: RunDate, columns: list[str] | None) -> list[dict[str, Any]]:
        """The night's rows its month's compaction holds: the ledger of a night rerun after its month closed."""
        rows = layout.compacted_rows(self.root, table, as_date(run_date), run_id, columns)
        return [{k: v for k, v in row.items() if k != "date"} for row in rows]

    def recorded_calls(self, run_id: str, run_date: RunDate, part: str = "") -> set[tuple[str, datetime]]:
        """(call_id, started_at) of every model call the night's ledger already holds (of analysis `part`, if given),
        whichever attempt wrote it."""
        rows = self.night_calls(run_id, run_date, columns=["call_id", "started_at"], part=part)
        return {(row["call_id"], utc(row["started_at"])) for row in rows}

    def record_new_calls(self, run_id: str, run_date: RunDate, part: str, calls: list[ModelCall]) -> list[ModelCall]:
        """Write the calls the ledger does not hold yet, as a part of their own; return them.

        A retry or rerun of the night (another attempt, another worker) resumes a checkpoint whose calls
        an earlier attempt may or may not have written (a kill leaves them unwritten): each call is
        written exactly once, and nothing an earlier attempt wrote is overwritten. Only the analysis's own parts
        are read (its calls are never written under another name): a night's ledger is not read once per error.
        """
        known = self.recorded_calls(run_id, run_date, part)
        fresh = [c for c in calls if (c.call_id, utc(c.started_at)) not in known]
        if fresh:
            stamp = min(utc(c.started_at) for c in fresh)
            self.write_model_calls(run_id, run_date, f"{part}-{stamp:%Y%m%dT%H%M%S%f}", fresh)
        return fresh

    def write_tool_calls(self, run_id: str, run_date: RunDate, part: str, calls: list[ToolCall]) -> Path:
        rows = [tool_call_row(c, part, seq) for seq, c in enumerate(calls)]
        return self._write_run_part("tool_calls", run_id, run_date, part, rows)

    def write_analyses(
        self,
        run_id: str,
        run_date: RunDate,
        results: list[ErrorAnalysisResult],
        analysed_at: datetime | None = None,
        attempt: str = "",
    ) -> Path:
        """One part per attempt of the night: a rerun adds its rows (answers from cache at no cost, say
        `source = cache`) instead of replacing what an earlier attempt paid for."""
        moment = utc(analysed_at) or clock.now()
        rows = [analysis_row(run_id, r, moment) for r in results]
        return self._write_run_part("analyses", run_id, run_date, analyses_part(attempt), rows)

    def finished_by_other_attempts(self, run_id: str, run_date: RunDate, attempt: str) -> set[str]:
        """Fingerprints another attempt of the night analysed to the end (its `analyses` part, no failure)."""
        rows = self._night_rows("analyses", run_id, run_date, ["fingerprint", "failure"], prefix="analyses",
                                but=analyses_part(attempt))  # the part write_analyses names for this attempt
        return {row["fingerprint"] for row in rows if row["failure"] is None}

    def write_outcomes(self, run_id: str, run_date: RunDate, attempt: str, changes: list[OutcomeChange],
                       source: str = "outcomes") -> Path | None:
        """The outcome changes an attempt of the night applied (a part per attempt and source, the sync's `outcomes`
        or the `regressions` the night flagged: a rerun that finds nothing new writes nothing, and never replaces what
        an earlier attempt found)."""
        part = f"{source}-{attempt}" if attempt else source
        recorded = self._recorded_outcomes(run_id, run_date, part)
        changes = [c for c in changes if c.judged and (c.fingerprint, c.kind, c.number, c.state) not in recorded]
        if not changes:
            return None
        rows = [{"run_id": run_id, "fingerprint": c.fingerprint, "kind": c.kind, "number": c.number, "state": c.state,
                 "previous_state": c.previous, "fix_state": c.fix_state, "trust": c.trust, "note": c.note,
                 "changed_at": utc(c.at or clock.now()), "url": c.url}  # undated by the tracker: seen now
                for c in changes]
        return self._write_run_part("outcomes", run_id, run_date, part, rows)

    def _recorded_outcomes(self, run_id: str, run_date: RunDate, part: str) -> set[tuple[Any, ...]]:
        """Outcome changes another attempt of the night recorded (one that crashed before the documents took them)."""
        columns = ["fingerprint", "kind", "number", "state"]
        rows = self._night_rows("outcomes", run_id, run_date, columns, but=part)
        return {tuple(row[c] for c in columns) for row in rows}

    def write_errors(
        self,
        run_id: str,
        run_date: RunDate,
        errors: list[ErrorGroup],
        selected: set[str],
        ignored: dict[str, str],
    ) -> Path:
        """Every error the source returned, with whether it was selected and which rule ignored it."""
        rows = [error_row(run_id, e, selected, ignored) for e in errors]
        return self._write_run_part("errors", run_id, run_date, "errors", rows)

    def write_run(self, report: RunReport, run_date: RunDate | None = None) -> Path:
        """The night's row, replaced by each attempt: the night's spend from the ledger; its attempts are the flow
        runs that wrote an `analyses` part (step 12 runs before this).

        `run_date` is the night's partition (the date its window ends, as for every other table of the
        night); without it, the day the report started."""
        day = run_date or report.started_at
        earlier = sum(row["attempts"] or 0 for row in self._compacted("runs", report.run_id, day, ["attempts"]))
        attempts = max(earlier + len(list(self.run_folder("analyses", report.run_id, day).glob("analyses-*.parquet"))), 1)
        night = self.night_spend(report.run_id, day)
        row = run_row(report, night if night.calls else None, attempts)
        return self._write_run_part("runs", report.run_id, day, "run", [row])

    def night_spend(self, run_id: str, run_date: RunDate) -> NightSpend:
        """Every call the night's ledger holds, whichever attempt made it."""
        rows = self.night_calls(run_id, run_date)
        tokens = sum((usage_of_row(row) for row in rows), TokenUsage())
        return NightSpend(tokens, round(sum(row["cost_usd"] or 0.0 for row in rows), 6), len(rows))

    def write_knowledge_index(self, snapshot: pa.Table) -> Path:
        """The knowledge index as analysts see it (KnowledgeIndex.snapshot()), replaced when the index changed."""
        schema = storage_schema("knowledge_index")
        version = pa.array([SCHEMA_VERSION] * snapshot.num_rows, pa.int32())
        try:
            arrow = snapshot.append_column("schema_version", version).select(schema.names).cast(schema)
        except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise MetricsWriteError(f"knowledge_index: the snapshot does not fit the schema: {exc}") from exc
        return layout.write_arrow(arrow, self.root / "knowledge_index" / "current.parquet")

    # ------------------------------------------------------------------ nights and months

    def close_night(self, run_id: str, run_date: RunDate) -> list[Path]:
        """The night's parts, one file per table (replaced by each attempt that closes the night)."""
        day = as_date(run_date)
        with layout.exclusive(self.root):
            closed = [layout.close_night(self.root, t, self.run_folder(t, run_id, day), day) for t in layout.RUN_TABLES]
        return [p for p in closed if p is not None]

    def close_pending(self) -> list[Path]:
        """Nights whose parts are newer than their file (a night that crashed before closing): closed now."""
        closed = []
        with layout.exclusive(self.root):
            for table in layout.RUN_TABLES:
                closed += self._close_pending(table)
        return closed

    def _close_pending(self, table: str) -> list[Path]:
        closed = []
        for staged in sorted((self.root / STAGING / table).glob("date=*/run=*")):
            day = date.fromisoformat(staged.parent.name.removeprefix("date="))
            target = layout.night_file(self.root, table, day, staged.name)
            newest = max((p.stat().st_mtime_ns for p in staged.glob("*.parquet")), default=None)
            if newest is not None and (not target.exists() or target.stat().st_mtime_ns < newest):
                closed += [p for p in [layout.close_night(self.root, table, staged, day)] if p]
        return closed

    def compact(self, today: RunDate, month: str | None = None) -> list[Path]:
        """Every closed month (before `today`'s) that still holds night files, or only `month`: one file per table."""
        current = layout.month_of(as_date(today))
        written = []
        with layout.exclusive(self.root):
            for table in layout.RUN_TABLES:
                months = [month] if month else [m for m in layout.months_with_nights(self.root, table) if m < current]
                written += [p for p in (layout.compact_month(self.root, table, m) for m in months) if p]
        return written

    def migrate(self) -> int:
        """Files written by an older schema or layout, rewritten in the current one (once per upgrade): parts of the old
        per-run layout become staged parts and their nights are closed; every file gets the current columns."""
        if layout.written_version(self.root) == SCHEMA_VERSION:
            return 0
        moved = 0
        for table in layout.RUN_TABLES:
            for old in sorted((self.root / table).glob("date=*/run=*/*.parquet")):
                target = self.root / STAGING / old.relative_to(self.root)
                target.parent.mkdir(parents=True, exist_ok=True)
                old.replace(target)
                moved += 1
            for folder in sorted((self.root / table).glob("date=*")):
                shutil.rmtree(folder, ignore_errors=True)
        self.close_pending()
        for table in layout.TABLES:
            for path in layout.view_files(self.root, table):
                layout.write_arrow(conform(pq.read_table(path), storage_schema(table)), path)
                moved += 1
        layout.ensure_schema_files(self.root)
        layout.mark_version(self.root)
        return moved

    def run_folder(self, table: str, run_id: str, run_date: RunDate) -> Path:
        """The night's staged parts of `table` (its ledger until the night's month is compacted)."""
        return self.root / STAGING / table / f"date={as_date(run_date).isoformat()}" / f"run={safe_name(run_id)}"

    def files(self, table: str) -> list[Path]:
        """The table's files analysts see: a file per closed night, per compacted month (temporary files never match)."""
        return layout.view_files(self.root, table)

    def parts(self, table: str) -> list[Path]:
        """The table's staged parts, night by night."""
        return sorted((self.root / STAGING / table).glob("date=*/run=*/*.parquet"))

    def _write_run_part(self, table: str, run_id: str, run_date: RunDate, part: str, rows: list[dict]) -> Path:
        target = self.run_folder(table, run_id, run_date) / f"{safe_name(part)}.parquet"
        path = self._write_file(table, target, rows)
        self._drop_other_dates(table, path)
        return path

    def _write_file(self, table: str, target: Path, rows: Iterable[dict[str, Any]]) -> Path:
        self._mark_if_new()
        arrow = to_table(table, list(rows))
        with atomic_target(target) as tmp:
            pq.write_table(arrow, tmp)
        return target

    def _mark_if_new(self) -> None:
        """A metrics folder this release starts is of the current schema from its first file: marked so, migrate() has
        nothing to rewrite (it rewrote a new home's first files every time: each eval case, each restored empty home).
        A folder with files and no mark is an older release's, left for migrate()."""
        if self._versioned:
            return
        if layout.written_version(self.root) is None and not any(self.root.rglob("*.parquet")):
            self.root.mkdir(parents=True, exist_ok=True)
            layout.mark_version(self.root)
        self._versioned = True

    def _drop_other_dates(self, table: str, written: Path) -> None:
        """A rerun whose date moved must not leave the earlier copy of the same run part behind."""
        pattern = f"date=*/{written.parent.name}/{written.name}"
        for stale in (self.root / STAGING / table).glob(pattern):
            if stale != written:
                stale.unlink(missing_ok=True)


def _first_time(seen: set[tuple[Any, Any]], key: tuple[Any, Any]) -> bool:
    fresh = key not in seen
    seen.add(key)
    return fresh


def to_table(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows -> an Arrow table of exactly the table's schema (without the descriptions: SCHEMA.md has them); extra keys
    are refused, missing ones null."""
    full = schema_for(table)
    schema = pa.schema([f.remove_metadata() for f in full], metadata=full.metadata)
    names = set(schema.names)
    for row in rows:
        row.setdefault("schema_version", SCHEMA_VERSION)
        extra = set(row) - names
        if extra:
            raise MetricsWriteError(f"{table}: columns {sorted(extra)} are not in the schema (add a migration)")
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise MetricsWriteError(f"{table}: rows do not fit the schema: {exc}") from exc
