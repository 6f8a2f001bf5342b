"""Where the metrics live, so that a year of nights stays fast to query.

    <home>/metrics/.staging/<table>/date=D/run=R/<part>.parquet   the night's ledger, written as it goes
    <home>/metrics/<table>/month=YYYY-MM/<D>_<R>.parquet            one file per table per night (its parts merged)
    <home>/metrics/<table>/month=YYYY-MM/compacted.parquet          a closed month, all its nights in one file
    <home>/metrics/<table>/month=0000-00/schema.parquet             no rows: the table's columns, always present
    <home>/metrics/knowledge_index/current.parquet                  the knowledge index, replaced when it changes
    <home>/metrics/SCHEMA_VERSION                                   the schema every file above is written in

Why: a query reads the footer of every file it scans; a night used to leave dozens of small files per
table (a 1-row file is 10 KB, 8 KB of it footer), a year 24,000 of them. Parts are still written the
moment an analysis ends (a crash loses nothing, and a retry reads what an earlier attempt spent), but
analysts see a night only as one file per table, written when the night closes, and a closed month
as one. Every file carries the current schema (`migrate` rewrites older ones), without per-column
descriptions (SCHEMA.md has them), so the views read them without `union_by_name` and prune by `month`.
"""

from __future__ import annotations

import contextlib
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from nightwatch.knowledge_store.schema import SCHEMA_VERSION, TABLES, schema_for

from nightwatch.atomic import atomic_target, atomic_write_text, exclusive_lock

STAGING = ".staging"
SNAPSHOT_TABLES = frozenset({"knowledge_index"})  # one current file, not a file per night
RUN_TABLES = tuple(t for t in TABLES if t not in SNAPSHOT_TABLES)
EMPTY_MONTH = "0000-00"
COMPACTED = "compacted.parquet"
VERSION_FILE = "SCHEMA_VERSION"
# One row per night in `runs` and per (night, error) in `errors`: a rerun's row replaces an earlier attempt's.
KEYS = {"runs": ("run_id",), "errors": ("run_id", "fingerprint")}


def storage_schema(table: str) -> pa.Schema:
    """What a night or month file holds: the table's columns without descriptions, and the night's `date`."""
    fields = [field.remove_metadata() for field in schema_for(table)]
    if table not in SNAPSHOT_TABLES:
        fields.append(pa.field("date", pa.date32()))
    return pa.schema(fields, metadata={"nightwatch.table": table, "nightwatch.schema_version": str(SCHEMA_VERSION)})


def month_of(day: date) -> str:
    return f"{day:%Y-%m}"


def month_folder(root: Path, table: str, month: str) -> Path:
    return root / table / f"month={month}"


def night_file(root: Path, table: str, day: date, run_folder_name: str) -> Path:
    return month_folder(root, table, month_of(day)) / f"{day.isoformat()}_{run_folder_name.removeprefix('run=')}.parquet"


def view_files(root: Path, table: str) -> list[Path]:
    """The files analysts' views read for `table` (the empty schema file aside)."""
    if table in SNAPSHOT_TABLES:
        return [p for p in [root / table / "current.parquet"] if p.exists()]
    return sorted(p for p in (root / table).glob("month=*/*.parquet") if p.parent.name != f"month={EMPTY_MONTH}")


def write_arrow(table: pa.Table, target: Path) -> Path:
    with atomic_target(target) as tmp:
        pq.write_table(table, tmp)
    return target


def conform(table: pa.Table, schema: pa.Schema, day: date | None = None) -> pa.Table:
    """A table in exactly `schema`: columns it lacks (written before a migration) as nulls, the night's `date` filled."""
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        elif field.name == "date" and day is not None:
            columns.append(pa.array([day] * table.num_rows, pa.date32()))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def close_night(root: Path, table: str, staged: Path, day: date) -> Path | None:
    """Merge the night's parts of `table` (the folder `staged`) into its one file; None when it has none."""
    return close_parts(root, table, sorted(staged.glob("*.parquet")) if staged.is_dir() else [], day)


def close_parts(root: Path, table: str, parts: list[Path], day: date) -> Path | None:
    """`parts` (all of one night's run folder) merged into the night's file."""
    if not parts:
        return None
    schema = storage_schema(table)
    merged = pa.concat_tables([conform(pq.read_table(p), schema, day) for p in parts])
    return write_arrow(merged, night_file(root, table, day, parts[0].parent.name))


def exclusive(root: Path) -> contextlib.AbstractContextManager[None]:
    """Closing nights and compacting months one process at a time (the OS releases the lock if the process dies)."""
    return exclusive_lock(root / ".lock")


def ensure_schema_files(root: Path) -> None:
    """A zero-row file per table, so every view has its columns before the first night and no glob is ever empty."""
    for table in TABLES:
        target = root / table / "current.parquet" if table in SNAPSHOT_TABLES else \
            month_folder(root, table, EMPTY_MONTH) / "schema.parquet"
        if not target.exists():
            schema = storage_schema(table)
            write_arrow(schema.empty_table(), target)


def compact_month(root: Path, table: str, month: str) -> Path | None:
    """Every night of `month` (and an earlier compaction of it) into one file; the nights' files and the parts merged
    go. Staged parts are closed first, so a night that never closed (it crashed, or it is still running) loses
    nothing: only the parts listed here are removed, a part written meanwhile stays for its night to close."""
    staged = sorted((root / STAGING / table).glob(f"date={month}-*/run=*/*.parquet"))
    by_night: dict[Path, list[Path]] = {}
    for part in staged:
        by_night.setdefault(part.parent, []).append(part)
    for folder, parts in by_night.items():
        close_parts(root, table, parts, date.fromisoformat(folder.parent.name.removeprefix("date=")))
    folder = month_folder(root, table, month)
    files = sorted(folder.glob("*.parquet"))
    if not files or files == [folder / COMPACTED]:
        return None
    listed = ", ".join("'" + p.as_posix().replace("'", "''") + "'" for p in files)
    keys = KEYS.get(table)
    # a night's own file beats the month's earlier compaction (a rerun replaced its row), the newest night first
    newest_last = "QUALIFY row_number() OVER (PARTITION BY {k} ORDER BY filename LIKE '%/compacted.parquet', filename DESC) = 1"
    query = (f"SELECT * EXCLUDE (filename) FROM read_parquet([{listed}], filename = true) "
             + (newest_last.format(k=", ".join(keys)) if keys else ""))
    con = duckdb.connect()
    try:
        rows = con.sql(query).to_arrow_table()
    finally:
        con.close()
    if not keys:  # a night closed twice (a crash between writing its file and removing its parts) counts once
        rows = _distinct(rows)
    target = write_arrow(conform(rows, storage_schema(table)), folder / COMPACTED)
    for path in files + staged:
        if path != target:
            path.unlink(missing_ok=True)
    for night in by_night:
        _remove_empty(night)
    return target


def _remove_empty(folder: Path) -> None:
    for empty in (folder, folder.parent):
        try:
            empty.rmdir()
        except OSError:  # not empty (a part written meanwhile) or gone
            return


def compacted_rows(root: Path, table: str, day: date, run_id: str, columns: list[str] | None = None) -> list[dict]:
    """The rows of night `run_id` that its month's compaction holds (their staged parts are gone by then)."""
    path = month_folder(root, table, month_of(day)) / COMPACTED
    if not path.exists():
        return []
    return pq.read_table(path, columns=columns, filters=[("run_id", "=", run_id), ("date", "=", day)]).to_pylist()


def _distinct(rows: pa.Table) -> pa.Table:
    """Whole-row duplicates dropped (rows of one night's parts are unique; a part merged twice is not)."""
    con = duckdb.connect()
    try:
        con.register("rows_in", rows)
        return con.sql("SELECT DISTINCT * FROM rows_in").to_arrow_table()
    finally:
        con.close()


def months_with_nights(root: Path, table: str) -> list[str]:
    """Months of `table` that hold night files (not only a compacted file)."""
    found = {p.parent.name.removeprefix("month=") for p in (root / table).glob("month=*/*.parquet")
             if p.name not in (COMPACTED, "schema.parquet")}
    return sorted(found - {EMPTY_MONTH})


def written_version(root: Path) -> int | None:
    path = root / VERSION_FILE
    return int(path.read_text().strip()) if path.exists() else None


def mark_version(root: Path) -> None:
    atomic_write_text(root / VERSION_FILE, f"{SCHEMA_VERSION}\n")
