"""Knowledge index and search: index-first scoring, malformed documents skipped, not fatal."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from knowledge_store.documents import update_doc_metadata, write_error_doc, write_pattern_doc
from knowledge_store.index import KnowledgeIndexError, load_index, rebuild_index
from knowledge_store.search import extract_tags, score_entry, search_prior_knowledge
from nightwatch.models import Analysis, DetectedPattern, ErrorAnalysisResult, ErrorGroup

NOW = datetime(2026, 2, 7, 6, 15, tzinfo=timezone.utc)


def make_result(error_class: str, transaction: str, message: str = "boom", run_id: str = "run-1",
                reasoning: str = "Because of a race.", has_fix: bool = False) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction=transaction, message=message, occurrences=10)
    analysis = Analysis(title=f"{error_class} in {transaction}", reasoning=reasoning,
                        root_cause=f"Root cause of {error_class}", has_fix=has_fix, confidence="medium")
    return ErrorAnalysisResult(run_id=run_id, error=error, analysis=analysis)


def write(knowledge: Path, *args: str, **kwargs) -> Path:  # type: ignore[no-untyped-def]
    path = write_error_doc(make_result(*args, **kwargs), knowledge, detected_at=NOW)
    assert path is not None
    return path


@pytest.fixture
def knowledge(tmp_path: Path) -> Path:
    root = tmp_path / "knowledge"
    write(root, "ActiveRecord::RecordNotFound", "Controller/orders/update", "Couldn't find Order 1")
    write(root, "ActiveRecord::RecordNotFound", "Controller/users/show")
    write(root, "NoMethodError", "Controller/orders/update")
    write(root, "Net::ReadTimeout", "OtherTransaction/SidekiqJob/MailerJob/perform")
    write(root, "Redis::TimeoutError", "Controller/orders/show")
    return root


def test_extract_tags_splits_lowercases_and_drops_noise() -> None:
    assert extract_tags("ActiveRecord::RecordNotFound", "Controller/orders/update") == {
        "activerecord", "recordnotfound", "orders", "update"}
    assert extract_tags("Net::ReadTimeout", "OtherTransaction/SidekiqJob/Order_Sync#perform") == {
        "net", "readtimeout", "order", "sync"}


def test_rebuild_index_lists_documents_and_skips_malformed_ones(knowledge: Path) -> None:
    (knowledge / "errors" / "2026-01-01_broken_deadbeef.md").write_text("---\nerror_class: [oops\n---\n")
    (knowledge / "errors" / "2026-01-01_nofields_cafebabe.md").write_text("---\nrun_id: x\n---\n\nbody\n")
    write_pattern_doc(DetectedPattern(title="Errors cluster in orders", description="d", pattern_type="systemic_issue",
                                      error_classes=["NoMethodError"], modules=["orders"], occurrences=3), knowledge)

    index = rebuild_index(knowledge, now=NOW)

    assert index["total_solutions"] == 5 and index["total_patterns"] == 1
    assert index["last_updated"] == "2026-02-07T06:15:00+00:00"
    assert sorted(s["file"] for s in index["skipped"]) == [
        "errors/2026-01-01_broken_deadbeef.md", "errors/2026-01-01_nofields_cafebabe.md"]
    assert "invalid YAML" in index["skipped"][0]["reason"]
    assert "'error_class'" in index["skipped"][1]["reason"]
    first = next(s for s in index["solutions"] if s["transaction"] == "Controller/orders/update"
                 and s["error_class"].startswith("ActiveRecord"))
    assert first["file"].startswith("errors/2026-02-07_activerecord-recordnotfound")
    assert first["tags"] == ["activerecord", "orders", "recordnotfound", "update"]
    assert first["fix_confidence"] == "medium" and first["has_fix"] is False and first["fix_confirmed"] is False
    assert first["first_detected"] == "2026-02-07" and first["last_run_id"] == "run-1" and first["run_count"] == 1
    assert first["root_cause"] == "Root cause of ActiveRecord::RecordNotFound"
    assert index["patterns"][0]["file"] == "patterns/errors-cluster-in-orders.md"
    assert yaml.safe_load((knowledge / "index.yml").read_text()) == index
    assert load_index(knowledge) == index


def test_load_index_of_a_fresh_machine_is_empty(tmp_path: Path) -> None:
    index = load_index(tmp_path / "nothing-yet")
    assert index["solutions"] == [] and index["patterns"] == [] and index["total_solutions"] == 0


def test_load_index_refuses_a_corrupt_index(tmp_path: Path) -> None:
    (tmp_path / "index.yml").write_text("solutions: [unclosed\n")
    with pytest.raises(KnowledgeIndexError, match="rebuild_index"):
        load_index(tmp_path)


def test_scores_follow_the_seed_weights(knowledge: Path) -> None:
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update",
                       message="Couldn't find Order 2")
    by_key = {(s["error_class"], s["transaction"]): s for s in rebuild_index(knowledge)["solutions"]}
    score = lambda cls, txn: score_entry(error, by_key[(cls, txn)])  # noqa: E731
    assert score("ActiveRecord::RecordNotFound", "Controller/orders/update") == 1.0  # same fingerprint
    assert score("ActiveRecord::RecordNotFound", "Controller/users/show") == 0.7  # class 0.5 + 2 tags
    assert score("NoMethodError", "Controller/orders/update") == 0.5  # transaction 0.3 + 2 tags
    assert score("Redis::TimeoutError", "Controller/orders/show") == 0.1  # one tag
    assert score("Net::ReadTimeout", "OtherTransaction/SidekiqJob/MailerJob/perform") == 0.0
    other = {**by_key[("NoMethodError", "Controller/orders/update")], "error_class": error.error_class}
    assert score_entry(error, other) == 1.0  # 0.5 + 0.3 + 4 tags, capped


def test_search_returns_the_best_matches_above_the_threshold(knowledge: Path) -> None:
    index = rebuild_index(knowledge)
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update",
                       message="Couldn't find Order with uuid")
    priors = search_prior_knowledge(error, index, knowledge)

    assert [(p.error_class, p.transaction, p.match_score) for p in priors] == [
        ("ActiveRecord::RecordNotFound", "Controller/orders/update", 1.0),
        ("ActiveRecord::RecordNotFound", "Controller/users/show", 0.7),
        ("NoMethodError", "Controller/orders/update", 0.5),
    ]
    assert priors[0].summary == "Because of a race."
    assert priors[0].root_cause == "Root cause of ActiveRecord::RecordNotFound"
    assert priors[0].first_detected == "2026-02-07" and Path(priors[0].source_file).is_file()
    assert len(search_prior_knowledge(error, index, knowledge, max_results=1)) == 1
    assert len(search_prior_knowledge(error, index, knowledge, min_score=0.6)) == 2


def test_transactions_match_with_ids_masked() -> None:
    entry = {"error_class": "KeyError", "transaction": "Controller/orders/123/edit", "tags": ["orders", "edit"]}
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/orders/456/edit")
    assert score_entry(error, entry) == 0.5  # transaction 0.3 + orders, edit


def test_search_opens_only_the_top_documents_and_skips_vanished_ones(knowledge: Path) -> None:
    index = rebuild_index(knowledge)
    files = {(s["error_class"], s["transaction"]): knowledge / s["file"] for s in index["solutions"]}
    files[("NoMethodError", "Controller/orders/update")].write_text("not a document any more")
    files[("ActiveRecord::RecordNotFound", "Controller/users/show")].unlink()
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update")

    priors = search_prior_knowledge(error, index, knowledge, max_results=1)
    assert [p.transaction for p in priors] == ["Controller/orders/update"]
    assert [p.error_class for p in search_prior_knowledge(error, index, knowledge)] == ["ActiveRecord::RecordNotFound"]


def test_exact_fingerprint_match_carries_hashes_and_fix_state(tmp_path: Path) -> None:
    knowledge = tmp_path / "k"
    result = make_result("PG::UniqueViolation", "Controller/carts/create", reasoning="x" * 900, has_fix=True)
    write_error_doc(result, knowledge, file_hashes={"app/models/cart.rb": "f" * 64})
    update_doc_metadata(knowledge, result.fingerprint, fix_confirmed=True)
    prior = search_prior_knowledge(result.error, rebuild_index(knowledge), knowledge)[0]
    assert prior.fingerprint == result.fingerprint and prior.match_score == 1.0
    assert prior.file_hashes == {"app/models/cart.rb": "f" * 64}
    assert prior.fix_confirmed is True and prior.has_fix is True and prior.fix_confidence == "medium"
    assert prior.summary == "x" * 500


def test_ties_prefer_confirmed_fixes(tmp_path: Path) -> None:
    knowledge = tmp_path / "k"
    a = make_result("NoMethodError", "Controller/carts/show")
    b = make_result("NoMethodError", "Controller/carts/edit")
    write(knowledge, "NoMethodError", "Controller/carts/show")
    write(knowledge, "NoMethodError", "Controller/carts/edit")
    update_doc_metadata(knowledge, b.fingerprint, fix_confirmed=True)
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/carts/index")
    priors = search_prior_knowledge(error, rebuild_index(knowledge), knowledge)
    assert [p.fingerprint for p in priors] == [b.fingerprint, a.fingerprint]
    assert priors[0].match_score == priors[1].match_score == 0.7


def test_index_entries_cannot_point_outside_the_knowledge_folder(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("---\nerror_class: X\ntransaction: Y\n---\n\n## Analysis\n\nleak\n")
    index = {"solutions": [{"file": "../secret.md", "error_class": "X", "transaction": "Y", "tags": []}]}
    error = ErrorGroup(error_class="X", transaction="Y")
    assert search_prior_knowledge(error, index, tmp_path / "knowledge") == []
