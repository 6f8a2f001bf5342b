"""Parquet metrics: partition layout, explicit schemas, atomic files, idempotent per run."""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from nightwatch.knowledge_store.documents import write_error_doc
from nightwatch.knowledge_store.index import open_index
from nightwatch.knowledge_store.metrics import MetricsStore, MetricsWriteError, safe_name, to_table
from nightwatch.knowledge_store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    Column,
    SchemaError,
    apply_migrations,
    render_schema_doc,
    schema_for,
)

from nightwatch.atomic import atomic_target, atomic_write_bytes, atomic_write_text
from nightwatch.models import (
    CreatedIssueResult,
    CreatedPRResult,
    ErrorAnalysisResult,
    ErrorGroup,
    ModelCall,
    RunReport,
    RunTotals,
    TokenUsage,
    ToolCall,
    TriageVerdict,
    Window,
)
from tests.builders import analysis as build_analysis

RUN_ID = "2026-11-01T06:00:00+00:00/manual"
STARTED = datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc)


def make_calls(n: int, fingerprint: str = "a1b2c3d4e5f60718", run_id: str = RUN_ID) -> list[ModelCall]:
    return [
        ModelCall(call_id=f"{fingerprint}-{i}", run_id=run_id, fingerprint=fingerprint, phase="investigate",
                  iteration=i, model="claude-sonnet-4-6", usage=TokenUsage(input=1000, output=200, cache_read=4000,
                  cache_write=500, thinking=50), cost_usd=0.01, price_table="2026-11", edits_applied=i % 2,
                  started_at=STARTED + timedelta(seconds=i))
        for i in range(n)
    ]


def make_result(error_class: str = "NoMethodError", source: str = "model", with_analysis: bool = True,
                run_id: str = RUN_ID) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction="Controller/orders/update", message="undefined",
                       occurrences=9)
    analysis = build_analysis(has_fix=True, confidence="high")
    return ErrorAnalysisResult(
        run_id=run_id, error=error, verdict=TriageVerdict(fingerprint=error.fingerprint, route="deep"),
        analysis=analysis if with_analysis else None, source=source,  # type: ignore[arg-type]
        iterations=4, tokens=TokenUsage(input=3000, output=600), cost_usd=0.05,
        model_calls=make_calls(2, error.fingerprint), failure=None if with_analysis else "budget spent",
        tool_calls=[ToolCall(run_id=run_id, fingerprint=error.fingerprint, iteration=1, name="read_file", ok=True)],
    )


def make_report(results: list[ErrorAnalysisResult]) -> RunReport:
    return RunReport(
        run_id=RUN_ID, started_at=STARTED, finished_at=STARTED + timedelta(minutes=9),
        window=Window.ending_at(STARTED, timedelta(hours=24)), errors_found=12, errors_ignored=3, errors_selected=3,
        results=results, issues=[CreatedIssueResult(fingerprint="f", action="created", issue_number=5),
                                 CreatedIssueResult(fingerprint="g", action="commented", issue_number=6)],
        pr=CreatedPRResult(fingerprint="f", action="created", pr_number=9),
        totals=RunTotals(tokens=TokenUsage(input=9000, output=1000, cache_read=20000), cost_usd=0.12, model_calls=6),
    )


def rows(store: MetricsStore, table: str) -> list[dict]:
    """What the night's ledger (its staged parts) holds."""
    return [row for path in store.parts(table) for row in pq.read_table(path).to_pylist()]


def test_model_calls_land_in_date_and_run_partitions(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    path = store.write_model_calls(RUN_ID, "2026-11-01", "a1b2c3d4e5f60718-investigate", make_calls(3))

    relative = path.relative_to(nightwatch_home)
    assert relative.parts[:4] == ("metrics", ".staging", "model_calls", "date=2026-11-01")
    assert relative.parts[4].startswith("run=2026-11-01T06_00_00_00_00_manual-")
    assert relative.parts[5] == "a1b2c3d4e5f60718-investigate.parquet"
    table = pq.read_table(path)
    assert table.schema.equals(schema_for("model_calls"), check_metadata=False)
    assert table.schema.metadata[b"nightwatch.schema_version"] == str(SCHEMA_VERSION).encode()
    first = table.to_pylist()[0]
    assert first["run_id"] == RUN_ID and first["schema_version"] == SCHEMA_VERSION
    assert (first["input_tokens"], first["cache_read_tokens"], first["cache_write_tokens"]) == (1000, 4000, 500)
    assert first["thinking_tokens"] == 50 and first["price_table"] == "2026-11"
    assert first["started_at"] == STARTED


def test_rewriting_a_run_replaces_its_files_instead_of_duplicating(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    result = make_result()
    for _ in range(2):
        store.write_model_calls(RUN_ID, STARTED, "fp-investigate", make_calls(3))
        store.write_model_calls(RUN_ID, STARTED, "fp2-triage", make_calls(2, "ffffffffffffffff"))
        store.write_tool_calls(RUN_ID, STARTED, "fp-investigate", result.tool_calls * 4)
        store.write_analyses(RUN_ID, STARTED, [result, make_result("KeyError")])
        store.write_errors(RUN_ID, STARTED, [result.error], {result.fingerprint}, {})
        store.write_run(make_report([result]))
    counts = {t: len(rows(store, t)) for t in ("model_calls", "tool_calls", "analyses", "errors", "runs")}
    assert counts == {"model_calls": 5, "tool_calls": 4, "analyses": 2, "errors": 1, "runs": 1}
    store.write_model_calls(RUN_ID, STARTED, "fp-investigate", make_calls(1))
    assert len(rows(store, "model_calls")) == 3


def test_a_rerun_on_another_date_moves_the_part_rather_than_copying_it(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    store.write_model_calls(RUN_ID, date(2026, 11, 1), "part", make_calls(2))
    moved = store.write_model_calls(RUN_ID, date(2026, 11, 2), "part", make_calls(2))
    assert store.parts("model_calls") == [moved] and "date=2026-11-02" in str(moved)
    store.write_model_calls("another-run", date(2026, 11, 1), "part", make_calls(1, run_id="another-run"))
    assert len(store.parts("model_calls")) == 2


def test_unsafe_run_ids_and_parts_get_distinct_safe_names() -> None:
    assert safe_name("run-1") == "run-1"
    assert safe_name("a/b") != safe_name("a_b") and "/" not in safe_name("a/b")
    assert safe_name("../../etc") not in ("..", "") and "/" not in safe_name("../../etc")
    assert safe_name("x" * 300).startswith("x" * 80) and len(safe_name("x" * 300)) == 89


def test_errors_rows_record_selection_ignores_and_redacted_messages(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    leaky = ErrorGroup(error_class="Stripe::AuthenticationError", transaction="Controller/pay/create",
                       message="Invalid API Key provided: sk_live_abcdefghijklmnop1234", occurrences=4,
                       first_seen=datetime(2026, 10, 31, 7, 0), last_seen=STARTED)
    noisy = ErrorGroup(error_class="ActionController::RoutingError", transaction="Controller/x", occurrences=99)
    store.write_errors(RUN_ID, STARTED, [leaky, noisy], {leaky.fingerprint}, {noisy.fingerprint: "routing noise"})

    by_class = {r["error_class"]: r for r in rows(store, "errors")}
    assert "sk_live_" not in by_class["Stripe::AuthenticationError"]["message"]
    assert by_class["Stripe::AuthenticationError"]["selected"] is True
    assert by_class["Stripe::AuthenticationError"]["ignored_by"] is None
    assert by_class["Stripe::AuthenticationError"]["first_seen"] == datetime(2026, 10, 31, 7, 0, tzinfo=timezone.utc)
    assert by_class["ActionController::RoutingError"]["ignored_by"] == "routing noise"
    assert by_class["ActionController::RoutingError"]["selected"] is False


def test_analysis_and_run_rows_summarise_the_models(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    results = [make_result(), make_result("KeyError", source="cache"), make_result("IOError", with_analysis=False)]
    store.write_analyses(RUN_ID, STARTED, results)
    store.write_run(make_report(results))

    analyses = {r["error_class"]: r for r in rows(store, "analyses")}
    assert analyses["NoMethodError"]["confidence"] == "high" and analyses["NoMethodError"]["has_fix"] is True
    assert analyses["NoMethodError"]["model_calls"] == 2 and analyses["NoMethodError"]["tool_calls"] == 1
    assert analyses["NoMethodError"]["route"] == "deep" and analyses["NoMethodError"]["input_tokens"] == 3000
    assert analyses["IOError"]["confidence"] is None and analyses["IOError"]["failure"] == "budget spent"
    (run,) = rows(store, "runs")
    assert run["run_id"] == RUN_ID and run["errors_found"] == 12 and run["errors_analysed"] == 2
    assert run["from_cache"] == 1 and run["issues_created"] == 1 and run["pr_created"] is True
    assert run["cache_read_tokens"] == 20000 and run["window_end"] == STARTED
    assert Path(store.parts("runs")[0]).parts[-3] == "date=2026-11-01"


def test_knowledge_index_snapshot_is_replaced(nightwatch_home: Path, tmp_path: Path) -> None:
    knowledge = tmp_path / "knowledge"
    write_error_doc(make_result(), knowledge, file_hashes={"app/a.rb": "1" * 64})
    store = MetricsStore(nightwatch_home)
    with open_index(knowledge) as index:
        store.write_knowledge_index(index.snapshot())
    write_error_doc(make_result("KeyError"), knowledge)
    with open_index(knowledge) as index:
        index.sync()
        path = store.write_knowledge_index(index.snapshot())

    assert store.files("knowledge_index") == [path]
    snapshot = pq.read_table(path).to_pylist()
    assert sorted(r["error_class"] for r in snapshot) == ["KeyError", "NoMethodError"]
    no_method = next(r for r in snapshot if r["error_class"] == "NoMethodError")
    assert no_method["file_hashes"] == [("app/a.rb", "1" * 64)] and no_method["kind"] == "solution"
    assert (no_method["fix_state"], no_method["trust"], no_method["schema_version"]) == ("none", 0.5, SCHEMA_VERSION)


def test_rows_that_do_not_fit_the_schema_are_refused() -> None:
    with pytest.raises(MetricsWriteError, match="not in the schema"):
        to_table("runs", [{"run_id": "r", "started_at": STARTED, "surprise": 1}])
    with pytest.raises(MetricsWriteError, match="do not fit"):
        to_table("runs", [{"run_id": "r", "started_at": STARTED, "errors_found": "many"}])


def test_atomic_write_replaces_whole_files_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "doc.md"
    atomic_write_text(target, "first")
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    with pytest.raises(RuntimeError), atomic_target(target) as tmp:
        tmp.write_text("half a fi")
        raise RuntimeError("crash while writing")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["doc.md"]


def test_readers_never_see_a_partial_parquet_file(nightwatch_home: Path) -> None:
    store = MetricsStore(nightwatch_home)
    path = store.write_model_calls(RUN_ID, STARTED, "hot", make_calls(200))
    failures: list[Exception] = []
    done = threading.Event()

    def read_continuously() -> None:
        while not done.is_set():
            try:
                assert pq.read_table(path).num_rows == 200
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                failures.append(exc)

    reader = threading.Thread(target=read_continuously)
    reader.start()
    for _ in range(40):
        store.write_model_calls(RUN_ID, STARTED, "hot", make_calls(200))
    done.set()
    reader.join()
    assert failures == []
    assert not [p for p in path.parent.iterdir() if p.suffix != ".parquet"]


def test_schema_doc_is_generated_from_the_code() -> None:
    committed = (Path(__file__).parents[2] / "knowledge_store" / "SCHEMA.md").read_text(encoding="utf-8")
    assert committed == render_schema_doc(), "regenerate knowledge_store/SCHEMA.md with render_schema_doc()"


def test_migrations_may_only_add_nullable_columns() -> None:
    import pyarrow as pa

    assert SCHEMA_VERSION == len(MIGRATIONS) and MIGRATIONS[0][0] == "m001_initial"
    assert "edits_applied" in schema_for("model_calls").names
    redefine = MIGRATIONS + [("m999_bad", {"runs": [Column("cost_usd", pa.string(), "retyped")]})]
    with pytest.raises(SchemaError, match="redefines runs.cost_usd"):
        apply_migrations(redefine)
    not_null = MIGRATIONS + [("m999_bad", {"runs": [Column("owner", pa.string(), "x", nullable=False)]})]
    with pytest.raises(SchemaError, match="NOT NULL"):
        apply_migrations(not_null)
    with pytest.raises(SchemaError, match="unknown metrics table"):
        schema_for("nope")
