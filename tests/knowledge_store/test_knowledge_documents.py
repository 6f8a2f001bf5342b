"""Knowledge documents: the format docs/knowledge.md describes, one document per fingerprint, idempotent per run."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from nightwatch.knowledge_store.documents import (
    KnowledgeDocError,
    find_error_doc,
    read_doc,
    section,
    update_doc_metadata,
    write_error_doc,
    write_pattern_doc,
)

from nightwatch.models import (
    Analysis,
    DetectedPattern,
    ErrorAnalysisResult,
    ErrorGroup,
    FileChange,
    ModelCall,
    TokenUsage,
    TriageVerdict,
)

DAY1 = datetime(2026, 2, 5, 6, 0, tzinfo=timezone.utc)
DAY2 = datetime(2026, 2, 6, 6, 0, tzinfo=timezone.utc)


def make_result(
    run_id: str = "2026-02-05T06:00:00+00:00",
    error_class: str = "ActiveRecord::RecordNotFound",
    transaction: str = "Controller/orders/update",
    message: str = "Couldn't find Order with 'id'=12345",
    occurrences: int = 87,
    source: str = "model",
    root_cause: str = "Race condition between order deletion and status update",
    reasoning: str = "The order is deleted by the cleanup job while the update request is in flight.",
    with_analysis: bool = True,
    started_at: datetime = DAY1,
    iterations: int = 6,
) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction=transaction, message=message, occurrences=occurrences)
    analysis = Analysis(
        title=f"{error_class} in {transaction}",
        reasoning=reasoning,
        root_cause=root_cause,
        has_fix=True,
        confidence="high",
        file_changes=[FileChange(path="app/controllers/orders_controller.rb", description="Replace find with find_by")],
        suggested_next_steps=["Add nil guard on Order.find"],
    )
    call = ModelCall(
        call_id=f"{run_id}-1", run_id=run_id, fingerprint=error.fingerprint, phase="investigate",
        model="claude-sonnet-4-6", started_at=started_at,
    )
    return ErrorAnalysisResult(
        run_id=run_id,
        error=error,
        verdict=TriageVerdict(fingerprint=error.fingerprint, route="deep"),
        analysis=analysis if with_analysis else None,
        source=source,  # type: ignore[arg-type]
        agent="base-analyzer",
        model="claude-sonnet-4-6",
        iterations=iterations,
        tokens=TokenUsage(input=10_000, output=2_000, cache_read=340),
        model_calls=[call],
        failure=None if with_analysis else "model returned no analysis",
    )


@pytest.fixture
def knowledge(tmp_path: Path) -> Path:
    return tmp_path / "knowledge"


def test_document_roundtrip_has_seed_fields_and_sections(knowledge: Path) -> None:
    result = make_result()
    path = write_error_doc(result, knowledge, file_hashes={"app/models/order.rb": "ab" * 32})

    assert path is not None and path.parent == knowledge / "errors"
    assert path.name == f"2026-02-05_activerecord-recordnotfound-controller-orders-update_{result.fingerprint[:8]}.md"
    meta, body = read_doc(path)
    assert meta["error_class"] == "ActiveRecord::RecordNotFound"
    assert meta["transaction"] == "Controller/orders/update"
    assert meta["occurrences"] == 87
    assert meta["fix_confidence"] == "high" and meta["has_fix"] is True
    assert meta["issue_number"] is None and meta["pr_number"] is None
    assert meta["tags"] == ["activerecord", "orders", "recordnotfound", "update"]
    assert meta["first_detected"] == "2026-02-05"
    assert meta["run_id"] == meta["last_run_id"] == result.run_id
    assert meta["runs"] == [result.run_id]
    assert meta["iterations_used"] == 6 and meta["tokens_used"] == 12_340
    assert meta["fingerprint"] == result.fingerprint
    assert meta["file_hashes"] == {"app/models/order.rb": "ab" * 32}
    assert meta["fix_confirmed"] is False and meta["route"] == "deep" and meta["source"] == "model"
    assert meta["agent"] == "base-analyzer" and meta["model"] == "claude-sonnet-4-6"
    assert body.startswith("# ActiveRecord::RecordNotFound in Controller/orders/update\n")
    assert section(body, "Root Cause") == result.analysis.root_cause
    assert section(body, "Analysis") == result.analysis.reasoning
    assert section(body, "Next Steps") == "- Add nil guard on Order.find"
    change = "- `app/controllers/orders_controller.rb`: modify — Replace find with find_by"
    assert section(body, "File Changes") == change


def test_same_fingerprint_in_a_later_run_updates_the_one_document(knowledge: Path) -> None:
    first = write_error_doc(make_result(), knowledge)
    later = make_result(run_id="2026-02-06T06:00:00+00:00", occurrences=13, started_at=DAY2, iterations=3,
                        message="Couldn't find Order with 'id'=999", root_cause="Cleanup job deletes orders early")
    second = write_error_doc(later, knowledge)

    assert second == first
    assert len(list((knowledge / "errors").glob("*.md"))) == 1
    meta, body = read_doc(second)
    assert meta["occurrences"] == 100
    assert meta["runs"] == ["2026-02-05T06:00:00+00:00", "2026-02-06T06:00:00+00:00"]
    assert meta["last_run_id"] == "2026-02-06T06:00:00+00:00" and meta["run_id"] == "2026-02-05T06:00:00+00:00"
    assert meta["first_detected"] == "2026-02-05"
    assert meta["iterations_used"] == 3 and meta["root_cause"] == "Cleanup job deletes orders early"
    assert section(body, "Root Cause") == "Cleanup job deletes orders early"


def test_writing_the_same_run_twice_changes_nothing(knowledge: Path) -> None:
    path = write_error_doc(make_result(), knowledge)
    write_error_doc(make_result(run_id="run-2", started_at=DAY2, occurrences=5), knowledge)
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns

    assert write_error_doc(make_result(run_id="run-2", started_at=DAY2, occurrences=5), knowledge) == path
    assert write_error_doc(make_result(run_id="run-2", started_at=DAY2, occurrences=5), knowledge) == path
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert read_doc(path)[0]["occurrences"] == 92


def test_rerun_of_an_earlier_run_does_not_count_again(knowledge: Path) -> None:
    path = write_error_doc(make_result(), knowledge)
    write_error_doc(make_result(run_id="run-2", occurrences=5), knowledge)
    write_error_doc(make_result(), knowledge)
    meta, _ = read_doc(path)
    assert meta["occurrences"] == 92 and meta["last_run_id"] == "run-2"
    assert meta["runs"] == ["2026-02-05T06:00:00+00:00", "run-2"]


def test_results_without_analysis_are_not_written(knowledge: Path) -> None:
    assert write_error_doc(make_result(with_analysis=False), knowledge) is None
    assert not (knowledge / "errors").exists() or not list((knowledge / "errors").iterdir())


def test_knowledge_or_cache_answers_count_occurrences_but_keep_the_analysis(knowledge: Path) -> None:
    path = write_error_doc(make_result(), knowledge)
    reused = make_result(run_id="run-2", source="knowledge", occurrences=3, root_cause="copied", reasoning="copied")
    write_error_doc(reused, knowledge)
    meta, body = read_doc(path)
    assert meta["occurrences"] == 90 and meta["runs"][-1] == "run-2"
    assert meta["root_cause"].startswith("Race condition") and meta["source"] == "model"
    assert "copied" not in body


def test_secrets_in_messages_and_model_output_are_redacted(knowledge: Path) -> None:
    secret = "sk-ant-api03-" + "x" * 30
    result = make_result(message=f"auth failed password=hunter2hunter2 key {secret}",
                         reasoning=f"The request carried {secret} in a header.")
    path = write_error_doc(result, knowledge)
    text = path.read_text()
    assert secret not in text and "hunter2hunter2" not in text
    assert "[REDACTED]" in read_doc(path)[0]["message"]


def test_frontmatter_survives_hostile_text(knowledge: Path) -> None:
    message = "boom\n---\nerror_class: Injected\n# heading: yes: no"
    path = write_error_doc(make_result(message=message, root_cause="a: b\n---\nc"), knowledge)
    meta, body = read_doc(path)
    assert meta["message"] == message
    assert meta["error_class"] == "ActiveRecord::RecordNotFound"
    assert meta["root_cause"] == "a: b\n---\nc"
    assert body.startswith("# ActiveRecord::RecordNotFound")


def test_update_metadata_backfills_issue_pr_and_confirmation(knowledge: Path) -> None:
    result = make_result()
    path = write_error_doc(result, knowledge)
    assert update_doc_metadata(knowledge, result.fingerprint, issue_number=42) == path
    assert update_doc_metadata(knowledge, result.fingerprint, pr_number=7, fix_confirmed=True) == path
    meta, body = read_doc(path)
    assert (meta["issue_number"], meta["pr_number"], meta["fix_confirmed"]) == (42, 7, True)
    assert section(body, "Root Cause").startswith("Race condition")

    write_error_doc(make_result(run_id="run-2"), knowledge)
    meta, _ = read_doc(path)
    assert (meta["issue_number"], meta["pr_number"], meta["fix_confirmed"]) == (42, 7, True)
    assert update_doc_metadata(knowledge, "0" * 16, issue_number=1) is None


def test_fields_added_by_hand_are_kept_on_update(knowledge: Path) -> None:
    path = write_error_doc(make_result(), knowledge)
    path.write_text(path.read_text().replace("---\n\n#", "owner: payments-team\n---\n\n#", 1))
    write_error_doc(make_result(run_id="run-2"), knowledge)
    assert read_doc(path)[0]["owner"] == "payments-team"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("# no frontmatter\n", "does not start"),
        ("---\nerror_class: X\n# never closed\n", "never closed"),
        ("---\nerror_class: [unclosed\n---\nbody\n", "invalid YAML"),
        ("---\n- a list\n---\nbody\n", "not a mapping"),
    ],
)
def test_malformed_documents_raise_an_error_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.md"
    path.write_text(text)
    with pytest.raises(KnowledgeDocError) as caught:
        read_doc(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)


def test_fingerprint_prefix_collision_is_resolved_by_frontmatter(knowledge: Path) -> None:
    result = make_result()
    decoy = knowledge / "errors" / f"2026-01-01_other_{result.fingerprint[:8]}.md"
    decoy.parent.mkdir(parents=True)
    other = f"{result.fingerprint[:8]}ffffffff"
    decoy.write_text(f"---\nfingerprint: {other}\nerror_class: X\ntransaction: Y\n---\n\nbody\n")
    path = write_error_doc(result, knowledge)
    assert path != decoy and find_error_doc(knowledge, result.fingerprint) == path


def test_pattern_document_is_written_once_per_title(knowledge: Path) -> None:
    pattern = DetectedPattern(
        title="Recurring Net::ReadTimeout", description="Seen in 4 runs.", error_classes=["Net::ReadTimeout"],
        modules=["payments"], occurrences=40, suggestion="Retry with backoff.", pattern_type="recurring_error",
    )
    path = write_pattern_doc(pattern, knowledge)
    assert path == knowledge / "patterns" / "recurring-net-readtimeout.md"
    mtime = path.stat().st_mtime_ns
    assert write_pattern_doc(pattern, knowledge) == path and path.stat().st_mtime_ns == mtime
    meta, body = read_doc(path)
    assert meta["kind"] == "pattern" and meta["occurrences"] == 40 and meta["pattern_type"] == "recurring_error"
    assert "Retry with backoff." in section(body, "Suggestion")
    write_pattern_doc(pattern.model_copy(update={"occurrences": 41}), knowledge)
    assert read_doc(path)[0]["occurrences"] == 41
    assert len(list(path.parent.iterdir())) == 1
