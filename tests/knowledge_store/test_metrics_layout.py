"""Metrics that stay fast for years: one file per table per night, a closed month compacted into one file per table,
no per-column descriptions in the footers, views made once."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from nightwatch.knowledge_store.duck import DB_FILE, connect_readonly, ensure_views
from nightwatch.knowledge_store.metrics import MetricsStore

from nightwatch.models import RunReport, Window
from tests.knowledge_store.test_duck import make_calls, make_result


def night(store: MetricsStore, run_id: str, day: date, calls: int = 3, parts: int = 4) -> None:
    """A night as the flow writes it: a part per analysis as it ends, the night's row, then the night closes."""
    started = datetime(day.year, day.month, day.day, 6, tzinfo=timezone.utc)
    for part in range(parts):
        store.write_model_calls(run_id, started, f"p{part}", make_calls(calls, run_id, f"{part:016x}"))
    store.write_analyses(run_id, started, [make_result(run_id, "KeyError", 2)])
    store.write_run(RunReport(run_id=run_id, started_at=started, window=Window.ending_at(started, timedelta(days=1))), day)
    store.close_night(run_id, day)


def count(home: Path, sql: str) -> int:
    ensure_views(home)
    with connect_readonly(home) as con:
        return con.execute(sql).fetchone()[0]


def test_a_night_is_one_file_per_table_without_column_descriptions(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    night(store, "night-1", date(2026, 11, 3))
    files = {t: store.files(t) for t in ("model_calls", "analyses", "runs")}
    assert {t: len(f) for t, f in files.items()} == {"model_calls": 1, "analyses": 1, "runs": 1}
    (calls,) = files["model_calls"]
    assert calls.relative_to(nightwatch_home / "metrics").as_posix() == "model_calls/month=2026-11/2026-11-03_night-1.parquet"
    schema = pq.read_schema(calls)
    assert all(not field.metadata for field in schema) and schema.field("date").type == "date32[day]"
    assert pq.read_table(calls).num_rows == 12
    store.close_night("night-1", date(2026, 11, 3))  # a retry closes it again: replaced, never doubled
    assert count(nightwatch_home, "SELECT count(*) FROM model_calls") == 12


def test_a_closed_month_is_compacted_and_queries_answer_the_same(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    for day in range(1, 31):
        night(store, f"night-10-{day:02d}", date(2026, 10, day), calls=2, parts=2)
    night(store, "night-11-01", date(2026, 11, 1), calls=2, parts=2)
    before = count(nightwatch_home, "SELECT count(*) FROM model_calls"), count(nightwatch_home, "SELECT count(*) FROM runs")
    assert len(store.files("model_calls")) == 31

    written = store.compact(today=date(2026, 11, 1))
    assert sorted(p.parent.parent.name for p in written) == ["analyses", "model_calls", "runs"]  # one file per table
    assert [p.name for p in store.files("model_calls")] == ["compacted.parquet", "2026-11-01_night-11-01.parquet"]
    assert not list((nightwatch_home / "metrics" / ".staging" / "model_calls").glob("date=2026-10-*"))
    after = count(nightwatch_home, "SELECT count(*) FROM model_calls"), count(nightwatch_home, "SELECT count(*) FROM runs")
    assert before == after == (124, 31)
    assert count(nightwatch_home, "SELECT count(*) FROM model_calls WHERE month = '2026-10'") == 120
    assert store.compact(today=date(2026, 11, 2)) == []  # nothing new to compact


def test_a_rerun_of_a_night_in_a_compacted_month_replaces_its_row(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    night(store, "night-a", date(2026, 10, 5))
    night(store, "night-b", date(2026, 10, 6))
    store.compact(today=date(2026, 11, 1))
    night(store, "night-a", date(2026, 10, 5), calls=1, parts=1)  # the window run again a month later
    store.compact(today=date(2026, 11, 2))
    assert count(nightwatch_home, "SELECT count(*) FROM runs") == 2
    assert count(nightwatch_home, "SELECT count(*) FROM runs WHERE run_id = 'night-a'") == 1


def test_a_rerun_after_its_month_was_compacted_reads_its_ledger_and_counts_once(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    day = date(2026, 10, 5)
    night(store, "night-a", day, calls=2, parts=2)
    store.write_analyses("night-a", day, [make_result("night-a", "KeyError", 2)], attempt="first")
    store.close_night("night-a", day)
    store.compact(today=date(2026, 11, 1))
    assert not store.parts("model_calls")  # the staged ledger is gone: the compacted month holds it
    assert len(store.recorded_calls("night-a", day)) == 4  # a rerun repeats no call the night already made
    assert store.finished_by_other_attempts("night-a", day, "second") == {make_result("night-a", "KeyError", 2).fingerprint}

    store.write_model_calls("night-a", day, "p-new", make_calls(1, "night-a", "f" * 16))  # the rerun's own call
    store.write_analyses("night-a", day, [make_result("night-a", "KeyError", 2)], attempt="second")
    store.write_run(RunReport(run_id="night-a", started_at=datetime(2026, 11, 20, tzinfo=timezone.utc),
                              window=Window.ending_at(datetime(2026, 10, 5, tzinfo=timezone.utc), timedelta(days=1))), day)
    store.close_night("night-a", day)
    store.compact(today=date(2026, 11, 20))
    assert count(nightwatch_home, "SELECT count(*) FROM runs") == 1
    assert count(nightwatch_home, "SELECT count(*) FROM model_calls") == 5
    assert count(nightwatch_home, "SELECT attempts FROM runs") == 2
    assert count(nightwatch_home, "SELECT model_calls FROM runs") == 5
    assert [p.name for p in store.files("model_calls")] == ["compacted.parquet"]


def test_compacting_by_hand_closes_every_night_first_and_removes_only_what_it_merged(nightwatch_home: Path) -> None:
    from typer.testing import CliRunner

    from nightwatch.cli import app

    store = MetricsStore(nightwatch_home)
    night(store, "closed", date(2026, 10, 3), calls=2, parts=1)
    store.write_model_calls("crashed", date(2026, 10, 4), "p", make_calls(3, "crashed"))  # never closed
    result = CliRunner().invoke(app, ["metrics", "compact"])
    assert result.exit_code == 0, result.output
    assert count(nightwatch_home, "SELECT count(*) FROM model_calls WHERE run_id = 'crashed'") == 3
    assert count(nightwatch_home, "SELECT count(*) FROM model_calls") == 5
    assert not list((nightwatch_home / "metrics" / ".staging" / "model_calls").glob("date=2026-10-*"))


def test_an_analysts_query_reads_the_views_and_nothing_else(nightwatch_home: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from nightwatch.cli import app

    night(MetricsStore(nightwatch_home), "night-1", date(2026, 11, 3))
    outside = tmp_path / "outside.csv"
    outside.write_text("secret\nhunter2\n")
    written = tmp_path / "written.txt"
    runner = CliRunner()
    for sql in (f"EXPLAIN ANALYZE COPY (SELECT 'x' AS line) TO '{written}'",
                f"SELECT * FROM read_csv('{outside}')", f"SELECT * FROM read_text('{outside}')",
                f"SELECT * FROM read_parquet('{outside}')", "SELECT 1; SET enable_external_access = true"):
        result = runner.invoke(app, ["metrics", "--sql", sql])
        assert result.exit_code == 2 and "hunter2" not in result.stdout, (sql, result.output)
    assert not written.exists()
    with connect_readonly(nightwatch_home) as con:
        for statement in (f"COPY (SELECT 1) TO '{written}'", "SET enable_external_access = true",
                          f"ATTACH '{tmp_path / 'x.db'}'"):
            with pytest.raises(duckdb.Error):
                con.execute(statement)
    assert not written.exists()
    assert runner.invoke(app, ["metrics", "--sql", "SELECT count(*) AS n FROM model_calls"]).exit_code == 0


def test_a_night_that_crashed_before_closing_is_closed_by_the_next(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    store.write_model_calls("crashed", date(2026, 11, 2), "p", make_calls(2, "crashed"))
    assert store.files("model_calls") == []
    night(store, "next", date(2026, 11, 3))
    assert [p.name for p in store.close_pending()] == ["2026-11-02_crashed.parquet"]
    assert store.close_pending() == []


def test_views_are_made_once_and_again_only_for_a_new_schema(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    night(store, "night-1", date(2026, 11, 3))
    path = ensure_views(nightwatch_home)
    made = path.stat().st_mtime_ns
    night(store, "night-2", date(2026, 11, 4))
    assert ensure_views(nightwatch_home).stat().st_mtime_ns == made  # a new night needs no refresh
    assert count(nightwatch_home, "SELECT count(DISTINCT run_id) FROM model_calls") == 2
    (nightwatch_home / DB_FILE).write_bytes(b"not a database")
    assert count(nightwatch_home, "SELECT count(*) FROM runs") == 2  # remade


def test_nightwatch_metrics_summarises_queries_and_draws(nightwatch_home: Path, tmp_path: Path) -> None:
    import json
    import xml.etree.ElementTree as ET

    from typer.testing import CliRunner

    from nightwatch.cli import app
    from nightwatch.outcomes import OutcomeChange

    store = MetricsStore(nightwatch_home)
    for day in (3, 4):
        night(store, f"night-{day}", date(2026, 11, day), calls=2, parts=2)
    fixed = make_result("night-4", "NoMethodError", 5).model_copy(update={"model": "claude-sonnet-4-6", "agent": "default"})
    fixed.analysis.has_fix = True  # type: ignore[union-attr]
    store.write_analyses("night-4", date(2026, 11, 4), [fixed], attempt="b")
    store.write_outcomes("night-4", date(2026, 11, 4), "b", [OutcomeChange(
        fingerprint=fixed.fingerprint, path="errors/x.md", kind="pr", number=7, state="merged", previous="open",
        fix_state="merged", trust=0.9, note="PR #7 merged", at=datetime(2026, 11, 4, 9, tzinfo=timezone.utc))])
    store.close_night("night-4", date(2026, 11, 4))
    runner = CliRunner()

    table = runner.invoke(app, ["metrics", "--nights", "5"])
    assert table.exit_code == 0, table.output
    assert "cache_hit_rate" in table.stdout and "claude-sonnet-4-6" in table.stdout
    data = json.loads(runner.invoke(app, ["metrics", "--format", "json"]).stdout)
    assert data["summary"]["nights"] == 2 and data["summary"]["model_calls"] == 8
    assert data["fix_acceptance"] == [{"model": "claude-sonnet-4-6", "agent": "default", "fixes_judged": 1, "merged": 1,
                                       "rejected": 0, "reverted": 0, "acceptance_rate": 1.0}]
    csv_out = runner.invoke(app, ["metrics", "--format", "csv"]).stdout.splitlines()
    assert csv_out[0] == "section,key,value" and csv_out[1] == "summary,nights,2"
    sql = runner.invoke(app, ["metrics", "--sql", "select count(*) as n from runs", "--format", "csv"])
    assert sql.exit_code == 0 and sql.stdout == "n\n2\n"
    refused = runner.invoke(app, ["metrics", "--sql", "delete from runs"])
    assert refused.exit_code == 2 and "one SELECT" in refused.stderr

    picture = tmp_path / "trend.svg"
    assert runner.invoke(app, ["metrics", "trend", "--out", str(picture)]).exit_code == 0
    root = ET.fromstring(picture.read_text())
    bars = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.find("{http://www.w3.org/2000/svg}title") is not None]
    assert len(bars) == 2

    compacted = runner.invoke(app, ["metrics", "compact", "--month", "2026-11"])
    assert compacted.exit_code == 0 and "file(s) written" in compacted.stdout
    assert [p.name for p in store.files("runs")] == ["compacted.parquet"]
    assert json.loads(runner.invoke(app, ["metrics", "--format", "json"]).stdout)["summary"]["model_calls"] == 8
    assert runner.invoke(app, ["metrics", "compact", "--month", "last"]).exit_code == 2


def test_an_outcome_another_attempt_recorded_is_not_recorded_again(nightwatch_home: Path) -> None:
    from nightwatch.outcomes import OutcomeChange

    store, day = MetricsStore(nightwatch_home), date(2026, 11, 4)
    change = OutcomeChange(fingerprint="f" * 16, path="errors/x.md", kind="pr", number=7, state="merged", previous="open",
                           fix_state="merged", trust=0.9, note="PR #7 merged")
    assert store.write_outcomes("night-4", day, "a", [change]) is not None  # then the attempt crashed
    assert store.write_outcomes("night-4", day, "b", [change]) is None  # the rerun sees the same change
    assert store.write_outcomes("night-4", day, "a", [change]) is not None  # a retry of the attempt rewrites its own part
    store.close_night("night-4", day)
    assert count(nightwatch_home, "SELECT count(*) FROM outcomes") == 1


def test_a_linked_home_is_queried_through_its_link(tmp_path: Path, monkeypatch) -> None:
    real = tmp_path / "real-home"
    real.mkdir()
    linked = tmp_path / "linked-home"
    linked.symlink_to(real)
    night(MetricsStore(linked), "night-1", date(2026, 11, 3))
    assert count(linked, "SELECT count(*) FROM model_calls") == 12
