"""DuckDB views over the Parquet metrics: real files, empty tables, readers open during writes."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from nightwatch.knowledge_store.documents import write_error_doc
from nightwatch.knowledge_store.duck import (
    ANALYST_QUERIES,
    CONVENIENCE_VIEWS,
    DB_FILE,
    ViewsLockedError,
    connect_readonly,
    refresh_views,
    replace_with_retry,
)
from nightwatch.knowledge_store.index import open_index
from nightwatch.knowledge_store.metrics import MetricsStore
from nightwatch.knowledge_store.schema import MIGRATIONS, TABLES, apply_migrations, schema_for

from nightwatch.models import (
    ErrorAnalysisResult,
    ErrorGroup,
    ModelCall,
    RunReport,
    TokenUsage,
    ToolCall,
    Window,
)
from tests.builders import analysis as build_analysis

STARTED = datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc)


def make_calls(
    n: int, run_id: str = "run-1", fingerprint: str = "0123456789abcdef", mode: str = "direct"
) -> list[ModelCall]:
    return [
        ModelCall(call_id=f"{run_id}-{fingerprint}-{i}", run_id=run_id, fingerprint=fingerprint, phase="investigate",
                  iteration=i, model="claude-sonnet-4-6", mode=mode,  # type: ignore[arg-type]
                  usage=TokenUsage(input=100, output=10, cache_read=300, cache_write=100), cost_usd=0.002,
                  tokens_cleared=50, started_at=STARTED)
        for i in range(n)
    ]


def make_result(run_id: str, error_class: str, iterations: int) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction="Controller/orders/update", message="m", occurrences=3)
    analysis = build_analysis(has_fix=False, confidence="low")
    return ErrorAnalysisResult(
        run_id=run_id, error=error, analysis=analysis, iterations=iterations, tokens=TokenUsage(input=1000),
        tool_calls=[ToolCall(run_id=run_id, fingerprint=error.fingerprint, iteration=1, name="read_file", ok=False)],
    )


def populate(home: Path) -> None:
    """Two runs on two days: every table gets files."""
    store = MetricsStore(home)
    for day, run_id in enumerate(("run-1", "run-2")):
        started = STARTED + timedelta(days=day)
        results = [make_result(run_id, "NoMethodError", 4), make_result(run_id, "KeyError", 2)]
        store.write_model_calls(run_id, started, "a-investigate", make_calls(3, run_id))
        store.write_model_calls(run_id, started, "b-triage", make_calls(2, run_id, "fedcba9876543210", "batch"))
        store.write_tool_calls(run_id, started, "a-investigate", results[0].tool_calls)
        store.write_analyses(run_id, started, results)
        store.write_errors(run_id, started, [r.error for r in results], {results[0].fingerprint}, {})
        window = Window.ending_at(started, timedelta(days=1))
        store.write_run(RunReport(run_id=run_id, started_at=started, window=window, results=results))
        store.close_night(run_id, started)
    knowledge = home / "knowledge"
    write_error_doc(make_result("run-1", "NoMethodError", 4), knowledge)
    with open_index(knowledge) as index:
        store.write_knowledge_index(index.snapshot())


def columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    return [row[0] for row in con.execute(f'DESCRIBE "{view}"').fetchall()]


def test_views_of_empty_tables_have_the_schema_columns_and_no_rows(nightwatch_home: Path) -> None:
    path = refresh_views(nightwatch_home)
    assert path == nightwatch_home / DB_FILE
    with connect_readonly(nightwatch_home) as con:
        for table in TABLES:
            expected = schema_for(table).names + ([] if table == "knowledge_index" else ["date", "month"])
            assert columns(con, table) == expected
            assert con.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (0,)
        types = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'model_calls'")
                     .fetchall())
        assert types["started_at"] == "TIMESTAMP WITH TIME ZONE" and types["input_tokens"] == "BIGINT"


def test_views_count_the_rows_written(nightwatch_home: Path) -> None:
    populate(nightwatch_home)
    refresh_views(nightwatch_home)
    with connect_readonly(nightwatch_home) as con:
        assert con.execute("SELECT count(*) FROM model_calls").fetchone() == (10,)
        assert con.execute("SELECT count(DISTINCT run_id), min(date) FROM runs").fetchone() == (
            2, datetime(2026, 11, 1).date())
        assert con.execute("SELECT count(*) FROM analyses WHERE error_class = 'KeyError'").fetchone() == (2,)
        assert con.execute("SELECT count(*) FROM knowledge_index").fetchone() == (1,)
        assert "run" not in columns(con, "model_calls")
        hit_rate = con.execute("SELECT DISTINCT cache_hit_rate FROM cache_hit_rate").fetchall()
        assert hit_rate == [(0.6,)]  # 300 / (100 + 300 + 100)
        by_class = con.execute("SELECT error_class, avg_iterations FROM iterations_by_error_class").fetchall()
        assert by_class == [("NoMethodError", 4.0), ("KeyError", 2.0)]
        assert con.execute("SELECT sum(calls) FROM cost_by_day").fetchone() == (10,)


def test_run_ids_are_the_real_ones_not_the_folder_names(nightwatch_home: Path) -> None:
    run_id = "2026-11-01T06:00:00+00:00"
    store = MetricsStore(nightwatch_home)
    store.write_model_calls(run_id, STARTED, "x", make_calls(2, run_id))
    store.close_night(run_id, STARTED)
    refresh_views(nightwatch_home)
    with connect_readonly(nightwatch_home) as con:
        assert con.execute("SELECT DISTINCT run_id FROM model_calls").fetchall() == [(run_id,)]


def test_files_from_an_older_schema_and_layout_are_rewritten_into_the_current_one(nightwatch_home: Path) -> None:
    old_columns = apply_migrations(MIGRATIONS[:1])["model_calls"]
    old_schema = pa.schema([pa.field(c.name, c.type) for c in old_columns])
    folder = nightwatch_home / "metrics" / "model_calls" / "date=2026-10-01" / "run=old"
    folder.mkdir(parents=True)
    row = {c.name: None for c in old_columns} | {"call_id": "old-1", "run_id": "old", "fingerprint": "f",
                                                 "input_tokens": 7, "schema_version": 1}
    pq.write_table(pa.Table.from_pylist([row], schema=old_schema), folder / "calls.parquet")
    store = MetricsStore(nightwatch_home)
    assert store.migrate() == 2  # the old part moved to the ledger, and the night's file written in the current schema
    assert store.migrate() == 0  # once per upgrade
    (night,) = store.files("model_calls")
    assert night.relative_to(nightwatch_home / "metrics").as_posix() == "model_calls/month=2026-10/2026-10-01_old.parquet"
    refresh_views(nightwatch_home)
    with connect_readonly(nightwatch_home) as con:
        assert con.execute("SELECT input_tokens, edits_applied, schema_version, date FROM model_calls").fetchall() == [
            (7, None, 1, datetime(2026, 10, 1).date())]


def test_a_reader_stays_open_while_metrics_are_written_and_views_refreshed(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    store.write_model_calls("run-1", STARTED, "first", make_calls(2))
    store.close_night("run-1", STARTED)
    refresh_views(nightwatch_home)
    reader = connect_readonly(nightwatch_home)
    try:
        store.write_model_calls("run-1", STARTED, "second", make_calls(3))
        store.close_night("run-1", STARTED)
        assert reader.execute("SELECT count(*) FROM model_calls").fetchone() == (5,)  # views re-scan the folder
        store.write_analyses("run-1", STARTED, [make_result("run-1", "KeyError", 1)])
        store.close_night("run-1", STARTED)
        refresh_views(nightwatch_home)  # the reader holds the file: no error
        assert reader.execute("SELECT count(*) FROM model_calls").fetchone() == (5,)
    finally:
        reader.close()
    with connect_readonly(nightwatch_home) as con:
        assert con.execute("SELECT count(*) FROM analyses").fetchone() == (1,)
    assert sorted(p.name for p in nightwatch_home.iterdir()) == sorted([DB_FILE, "metrics"])


def test_a_reader_in_another_process_does_not_block_a_refresh(nightwatch_home: Path) -> None:
    MetricsStore(nightwatch_home).write_model_calls("run-1", STARTED, "p", make_calls(4))
    MetricsStore(nightwatch_home).close_night("run-1", STARTED)
    db = refresh_views(nightwatch_home)
    script = (
        "import duckdb, sys\n"
        f"con = duckdb.connect({str(db)!r}, read_only=True)\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "print(con.execute('SELECT count(*) FROM model_calls').fetchone()[0], flush=True)\n"
    )
    analyst = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert analyst.stdout.readline().strip() == "ready"
        MetricsStore(nightwatch_home).write_model_calls("run-1", STARTED, "q", make_calls(1))
        MetricsStore(nightwatch_home).close_night("run-1", STARTED)
        refresh_views(nightwatch_home)
        out, _ = analyst.communicate("go\n", timeout=30)
    finally:
        analyst.kill()
    assert out.strip() == "5" and analyst.returncode == 0
    with connect_readonly(nightwatch_home) as con:
        assert con.execute("SELECT count(*) FROM model_calls").fetchone() == (5,)


def test_replacing_a_held_file_is_retried_then_reported(tmp_path: Path) -> None:
    src, dst = tmp_path / "new.duckdb", tmp_path / "nightwatch.duckdb"
    src.write_text("new")
    attempts: list[int] = []

    def held_twice(a: Path, b: Path) -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise PermissionError("in use")
        a.replace(b)

    replace_with_retry(src, dst, attempts=5, wait_s=0.001, replace=held_twice)
    assert len(attempts) == 3 and dst.read_text() == "new"

    def always_held(a: Path, b: Path) -> None:
        raise PermissionError("in use")

    with pytest.raises(ViewsLockedError, match="held open by another program"):
        replace_with_retry(src, dst, attempts=3, wait_s=0.001, replace=always_held)


@pytest.mark.parametrize("name", sorted(ANALYST_QUERIES))
def test_every_analyst_query_runs_on_empty_and_populated_stores(nightwatch_home: Path, name: str) -> None:
    refresh_views(nightwatch_home)
    with connect_readonly(nightwatch_home) as con:
        assert con.execute(ANALYST_QUERIES[name]).fetchall() == []
    populate(nightwatch_home)
    refresh_views(nightwatch_home)
    with connect_readonly(nightwatch_home) as con:
        result = con.execute(ANALYST_QUERIES[name]).fetchall()
    assert result, f"{name} returned no rows on a populated store"


def test_convenience_views_exist() -> None:
    assert set(CONVENIENCE_VIEWS) == {"cost_by_day", "iterations_by_error_class", "cache_hit_rate"}


def test_a_home_copied_elsewhere_reads_its_own_rows_and_doctor_says_the_views_pointed_elsewhere(tmp_path: Path) -> None:
    """A NIGHTWATCH_HOME copied, moved or restored from a backup: its views file still names the old home's folders.
    The views are rebuilt on first use, and `nightwatch doctor --check` says what was wrong before anything does."""
    import shutil

    from nightwatch.knowledge_store.doctor import check_views_file
    from nightwatch.knowledge_store.duck import ensure_views, views_problem

    old, new = tmp_path / "old-home", tmp_path / "restored" / "home"
    populate(old)
    refresh_views(old)
    shutil.copytree(old, new)
    MetricsStore(old).write_model_calls("run-3", STARTED + timedelta(days=2), "c-investigate", make_calls(7, "run-3"))
    MetricsStore(old).close_night("run-3", STARTED + timedelta(days=2))  # the old home moves on: 17 calls there

    assert "the home was copied or moved" in views_problem(new)
    assert [f.problem for f in check_views_file(new, repair=False)] == [views_problem(new)]  # --check: said, not done
    ensure_views(new)
    with connect_readonly(new) as con:  # its own 10 calls, not the old home's 17
        assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM model_calls").fetchone() == (10, 2)
    assert views_problem(new) == "" and check_views_file(new, repair=False) == []
    with connect_readonly(old) as con:  # the old home is still itself
        assert con.execute("SELECT count(*) FROM model_calls").fetchone() == (17,)
