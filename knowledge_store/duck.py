"""DuckDB views over the Parquet metrics, for analysts and for the example queries of docs/analysts.md.

`<home>/nightwatch.duckdb` holds only views: Parquet stays the system of record. Each table view reads
`<home>/metrics/<table>/month=*/*.parquet` (knowledge_store/layout.py) with hive partitioning on `month`,
so `WHERE month = '2026-11'` opens one folder; every file carries the current schema and a zero-row file
per table is always there, so the views need neither `union_by_name` nor a refresh when files arrive.
They are created once, and again only when the schema version changes (`ensure_views`).

Analysts keep the file open read-only while a flow runs. A DuckDB writer cannot open a file that
readers hold, so the views are built in a new file beside it and swapped in with `os.replace`:
open read-only connections keep the previous file and never block the night. Where the platform
refuses to replace a file that is open (Windows), the swap is retried briefly, then a clear
error says which program to close.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
from nightwatch.knowledge_store.layout import SNAPSHOT_TABLES, ensure_schema_files
from nightwatch.knowledge_store.schema import SCHEMA_VERSION, TABLES

from nightwatch.atomic import temp_path_for

DB_FILE = "nightwatch.duckdb"
VERSION_VIEW = "nightwatch_schema"
ROOT_VIEW = "nightwatch_metrics_root"  # the folder the views read: a home copied, moved or restored elsewhere rebuilds them


class ViewsLockedError(RuntimeError):
    """The DuckDB views file is held by another program and could not be refreshed or opened."""


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def table_view_sql(table: str, metrics_root: Path) -> str:
    """CREATE VIEW for one table over its files (layout.ensure_schema_files makes sure there is at least one)."""
    folder = (metrics_root / table).resolve().as_posix()
    if table in SNAPSHOT_TABLES:
        return f"CREATE OR REPLACE VIEW {_quote(table)} AS SELECT * FROM read_parquet({_literal(folder + '/current.parquet')})"
    return (f"CREATE OR REPLACE VIEW {_quote(table)} AS SELECT * FROM read_parquet({_literal(folder + '/month=*/*.parquet')}, "
            "hive_partitioning = true, hive_types = {'month': 'VARCHAR'})")


CONVENIENCE_VIEWS: dict[str, str] = {
    "cost_by_day": """
        SELECT date, model, mode, count(*) AS calls,
               sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
               sum(cache_write_tokens) AS cache_write_tokens, sum(cache_read_tokens) AS cache_read_tokens,
               sum(thinking_tokens) AS thinking_tokens, round(sum(cost_usd), 6) AS cost_usd
        FROM model_calls GROUP BY ALL ORDER BY date, model, mode""",
    "iterations_by_error_class": """
        SELECT error_class, count(*) AS analyses, count(DISTINCT fingerprint) AS errors,
               round(avg(iterations), 2) AS avg_iterations, max(iterations) AS max_iterations,
               round(avg(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens)) AS avg_tokens,
               round(sum(cost_usd), 6) AS cost_usd
        FROM analyses WHERE source = 'model' GROUP BY error_class ORDER BY avg_iterations DESC, error_class""",
    "cache_hit_rate": """
        SELECT date, model, sum(cache_read_tokens) AS cache_read_tokens,
               sum(input_tokens + cache_read_tokens + cache_write_tokens) AS prompt_tokens,
               round(sum(cache_read_tokens)
                     / nullif(sum(input_tokens + cache_read_tokens + cache_write_tokens), 0), 4) AS cache_hit_rate
        FROM model_calls GROUP BY ALL ORDER BY date, model""",
}

ANALYST_QUERIES: dict[str, str] = {
    "cost_per_run": """
        SELECT run_id, started_at, mode, errors_analysed, model_calls, round(cost_usd, 4) AS cost_usd,
               round(cost_usd / nullif(errors_analysed, 0), 4) AS cost_per_error
        FROM runs ORDER BY started_at DESC LIMIT 30""",
    "tokens_and_iterations_per_error": """
        SELECT date, count(*) AS investigations,
               round(avg(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens)) AS avg_tokens,
               round(avg(iterations), 2) AS avg_iterations
        FROM analyses WHERE source = 'model' GROUP BY date ORDER BY date""",
    "cost_by_day": "SELECT * FROM cost_by_day",
    "cache_hit_rate": "SELECT * FROM cache_hit_rate",
    "iterations_by_error_class": "SELECT * FROM iterations_by_error_class LIMIT 20",
    "most_expensive_errors": """
        SELECT fingerprint, any_value(error_class) AS error_class, any_value("transaction") AS "transaction",
               count(DISTINCT run_id) AS runs, round(sum(cost_usd), 4) AS cost_usd,
               sum(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens) AS tokens
        FROM analyses GROUP BY fingerprint ORDER BY cost_usd DESC LIMIT 10""",
    "context_management": """
        SELECT date, phase, count(*) AS calls, sum(edits_applied) AS edits_applied,
               sum(tokens_cleared) AS tokens_cleared, sum(compactions) AS compactions,
               sum(watcher_actions) AS watcher_actions, count(checkpoint_id) AS checkpoints
        FROM model_calls GROUP BY ALL ORDER BY date, phase""",
    "batch_vs_direct": """
        SELECT phase, mode, count(*) AS calls, round(avg(latency_ms)) AS avg_latency_ms,
               round(sum(cost_usd), 6) AS cost_usd
        FROM model_calls GROUP BY ALL ORDER BY phase, mode""",
    "tool_usage": """
        SELECT name, count(*) AS calls, round(avg(CASE WHEN ok THEN 0 ELSE 1 END), 3) AS failure_rate,
               round(avg(result_chars)) AS avg_result_chars,
               round(1 - sum(result_chars) / nullif(sum(coalesce(full_chars, result_chars)), 0), 3) AS withheld_by_diet,
               round(avg(CASE WHEN cached THEN 1 ELSE 0 END), 3) AS cached
        FROM tool_calls GROUP BY name ORDER BY calls DESC""",
    "knowledge_reuse": """
        SELECT date, sum(errors_analysed) AS analysed, sum(from_knowledge) AS from_knowledge,
               sum(from_cache) AS from_cache,
               round(sum(from_knowledge + from_cache) / nullif(sum(errors_analysed), 0), 3) AS reuse_rate
        FROM runs GROUP BY date ORDER BY date""",
    "recurring_errors": """
        SELECT fingerprint, any_value(error_class) AS error_class, any_value("transaction") AS "transaction",
               count(DISTINCT run_id) AS runs, sum(occurrences) AS occurrences,
               count(ignored_by) AS times_ignored
        FROM errors GROUP BY fingerprint HAVING count(DISTINCT run_id) > 1 ORDER BY runs DESC, occurrences DESC""",
    "knowledge_without_confirmed_fix": """
        SELECT file, error_class, "transaction", fix_confidence, has_fix, run_count, occurrences, issue_number
        FROM knowledge_index WHERE kind = 'solution' AND NOT coalesce(fix_confirmed, false)
        ORDER BY occurrences DESC""",
}


def create_views(con: duckdb.DuckDBPyConnection, metrics_root: Path) -> None:
    ensure_schema_files(metrics_root)
    con.execute(f"CREATE OR REPLACE VIEW {VERSION_VIEW} AS SELECT {int(SCHEMA_VERSION)} AS schema_version")
    con.execute(f"CREATE OR REPLACE VIEW {ROOT_VIEW} AS SELECT {_literal(metrics_root.resolve().as_posix())} AS metrics_root")
    for table in TABLES:
        con.execute(table_view_sql(table, metrics_root))
    for name, sql in CONVENIENCE_VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {_quote(name)} AS {sql}")


def refresh_views(home: Path, attempts: int = 5, wait_s: float = 0.2) -> Path:
    """Build the views in a fresh file and swap it in; returns the path of nightwatch.duckdb."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    target = home / DB_FILE
    tmp = temp_path_for(target)
    try:
        con = duckdb.connect(str(tmp))
        try:
            create_views(con, home / "metrics")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        replace_with_retry(tmp, target, attempts, wait_s)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
    return target


def ensure_views(home: Path) -> Path:
    """The views file, created when missing, written for another schema version or over another home's metrics (a
    home copied, moved or restored from a backup); otherwise left alone (the views read the folders at query time,
    so a new night needs no refresh)."""
    path = Path(home) / DB_FILE
    try:
        problem = views_problem(home)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():  # held by a writer (another night refreshing it): it is being made
            return path
        problem = str(exc)
    return refresh_views(home) if problem else path


def views_problem(home: Path) -> str:
    """Why `<home>/nightwatch.duckdb` cannot serve this home as it is ("" when it can): missing, another schema
    version, or views over another folder's metrics. Raises duckdb.IOException when another process holds it."""
    path = Path(home) / DB_FILE
    if not path.exists():
        return "missing"
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.IOException:
        raise
    except duckdb.Error as exc:
        return f"does not open ({str(exc)[:160]})"
    try:
        version = con.execute(f"SELECT schema_version FROM {VERSION_VIEW}").fetchone()[0]
        root = con.execute(f"SELECT metrics_root FROM {ROOT_VIEW}").fetchone()[0]
    except duckdb.Error:
        return "written before the views named their folder"
    finally:
        con.close()
    here = (Path(home) / "metrics").resolve().as_posix()
    if version != SCHEMA_VERSION:
        return f"views of schema {version}, not {SCHEMA_VERSION}"
    return f"views read {root}, not this home's {here} (the home was copied or moved)" if root != here else ""


def replace_with_retry(
    src: Path, dst: Path, attempts: int, wait_s: float, replace: Callable[[Path, Path], None] = os.replace
) -> None:
    """os.replace, retried while another program holds `dst` open (PermissionError on Windows)."""
    for attempt in range(1, attempts + 1):
        try:
            replace(src, dst)
            return
        except PermissionError as exc:
            if attempt == attempts:
                raise ViewsLockedError(
                    f"{dst} is held open by another program (a DuckDB session?) and could not be replaced "
                    f"after {attempts} attempts; close it and refresh the views again"
                ) from exc
            time.sleep(wait_s * attempt)


def connect_readonly(home: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the views (created first if they do not exist yet), confined to the metrics folder."""
    path = ensure_views(home)
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise ViewsLockedError(f"cannot open {path} read-only: {exc}") from exc
    return confine(con, Path(home) / "metrics")


def confine(con: duckdb.DuckDBPyConnection, folder: Path) -> duckdb.DuckDBPyConnection:
    """No file outside `folder` can be read or written through `con`, and the setting cannot be changed back: an
    analyst's query (`nightwatch metrics --sql`) reads the views and nothing else on the machine."""
    allowed = str(Path(folder).resolve()).replace("'", "''") + "/"
    con.execute(f"SET allowed_directories = ['{allowed}']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con
