"""The knowledge index in DuckDB and search over it: candidates by indexed lookup, seed weights plus text
relevance, hand edits picked up by hash, malformed documents skipped and reported, a damaged index rebuilt."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nightwatch.knowledge_store.documents import update_doc_metadata, write_error_doc, write_pattern_doc
from nightwatch.knowledge_store.index import INDEX_FILE, KnowledgeIndexError, open_index
from nightwatch.knowledge_store.search import ranked_candidates, search_prior_knowledge
from nightwatch.knowledge_store.text_relevance import terms_of

from nightwatch.models import Analysis, DetectedPattern, ErrorAnalysisResult, ErrorGroup

NOW = datetime(2026, 2, 7, 6, 15, tzinfo=timezone.utc)


def make_result(error_class: str, transaction: str, message: str = "boom", run_id: str = "run-1",
                reasoning: str = "Because of a race.", has_fix: bool = False, root_cause: str = "") -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction=transaction, message=message, occurrences=10)
    analysis = Analysis(title=f"{error_class} in {transaction}", reasoning=reasoning,
                        root_cause=root_cause or f"Root cause of {error_class}", has_fix=has_fix, confidence="medium")
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


def scores(knowledge: Path, error: ErrorGroup, files: list[str] | None = None) -> dict[tuple[str, str], float]:
    with open_index(knowledge) as index:
        rows = ranked_candidates(index, error, files, limit=50)
        by_path = {r["path"]: r for r in index.query("SELECT path, error_class, \"transaction\" FROM documents")}
    return {(by_path[r["path"]]["error_class"], by_path[r["path"]]["transaction"]): r["score"] for r in rows}


def test_the_index_holds_every_document_and_reports_the_malformed_ones(knowledge: Path) -> None:
    (knowledge / "errors" / "2026-01-01_broken_deadbeef.md").write_text("---\nerror_class: [oops\n---\n")
    (knowledge / "errors" / "2026-01-01_nofields_cafebabe.md").write_text("---\nrun_id: x\n---\n\nbody\n")
    write_pattern_doc(DetectedPattern(title="Errors cluster in orders", description="d", pattern_type="systemic_issue",
                                      error_classes=["NoMethodError"], modules=["orders"], occurrences=3), knowledge)

    with open_index(knowledge) as index:
        assert index.counts() == {"solutions": 5, "patterns": 1, "skipped": 2}
        skipped = index.skipped()
        row = index.query("SELECT * FROM documents WHERE \"transaction\" = 'Controller/orders/update' "
                          "AND error_class LIKE 'ActiveRecord%'")[0]
        pattern = index.query("SELECT path, title, modules FROM documents WHERE kind = 'pattern'")[0]
    assert [s["file"] for s in skipped] == ["errors/2026-01-01_broken_deadbeef.md", "errors/2026-01-01_nofields_cafebabe.md"]
    assert "invalid YAML" in skipped[0]["reason"] and "'error_class'" in skipped[1]["reason"]
    assert row["path"].startswith("errors/2026-02-07_activerecord-recordnotfound")
    assert row["tags"] == ["activerecord", "orders", "recordnotfound", "update"]
    assert row["transaction_key"] == "Controller/orders/update" and row["module"] == "orders"
    assert (row["fix_confidence"], row["has_fix"], row["fix_confirmed"], row["fix_state"], row["trust"]) == (
        "medium", False, False, "none", 0.5)
    assert row["first_detected"] == "2026-02-07" and row["last_run_id"] == "run-1" and row["run_count"] == 1
    assert row["root_cause"] == "Root cause of ActiveRecord::RecordNotFound" and len(row["content_hash"]) == 64
    assert pattern == {"path": "patterns/errors-cluster-in-orders.md", "title": "Errors cluster in orders", "modules": ["orders"]}


def test_a_fresh_machine_has_an_empty_index(tmp_path: Path) -> None:
    with open_index(tmp_path / "nothing-yet") as index:
        assert index.counts() == {"solutions": 0, "patterns": 0, "skipped": 0}
        assert index.state().generation == 0
    assert (tmp_path / "nothing-yet" / INDEX_FILE).is_file()


def test_a_damaged_index_is_moved_aside_and_rebuilt_and_the_old_yaml_index_goes(knowledge: Path) -> None:
    (knowledge / INDEX_FILE).write_bytes(b"this is not a database" * 100)
    (knowledge / "index.yml").write_text("solutions: []\n")
    with open_index(knowledge) as index:
        assert index.counts()["solutions"] == 5
    assert [p.name.split("-")[0] for p in knowledge.glob(f"{INDEX_FILE}.damaged-*")] == [f"{INDEX_FILE}.damaged"]
    assert not (knowledge / "index.yml").exists()


def test_scores_follow_the_seed_weights(knowledge: Path) -> None:
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update",
                       message="Couldn't find Order 2")
    assert scores(knowledge, error) == {
        ("ActiveRecord::RecordNotFound", "Controller/orders/update"): 1.0,  # same fingerprint
        ("ActiveRecord::RecordNotFound", "Controller/users/show"): 0.7,  # class 0.5 + 2 tags
        ("NoMethodError", "Controller/orders/update"): 0.5,  # transaction 0.3 + 2 tags
        ("Redis::TimeoutError", "Controller/orders/show"): 0.1,  # one tag
    }  # Net::ReadTimeout shares nothing: not even a candidate


def test_transactions_match_with_ids_masked(tmp_path: Path) -> None:
    write(tmp_path, "KeyError", "Controller/orders/123/edit")
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/orders/456/edit")
    assert scores(tmp_path, error) == {("KeyError", "Controller/orders/123/edit"): 0.5}  # transaction 0.3 + orders, edit


def test_text_relevance_ranks_the_document_that_shares_rare_words(tmp_path: Path) -> None:
    write(tmp_path, "NoMethodError", "Controller/carts/show", "undefined method `total' for nil",
          root_cause="The discount coupon is expired before checkout recomputes the total")
    write(tmp_path, "NoMethodError", "Controller/carts/edit", "undefined method `name' for nil",
          root_cause="The session user is gone after logout")
    for i in range(8):  # the corpus BM25 needs: words that are rare in it
        write(tmp_path, "KeyError", f"Controller/things{i}/show", f"key {i} missing", root_cause=f"Thing {i} lost its key")
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/carts/index",
                       message="undefined method `amount' for nil: expired coupon at checkout")
    ranked = scores(tmp_path, error)
    carts = [ranked[("NoMethodError", "Controller/carts/show")], ranked[("NoMethodError", "Controller/carts/edit")]]
    assert carts[1] == 0.7  # class 0.5 + 2 tags (nomethoderror, carts): no shared rare word
    assert 0.7 < carts[0] <= 0.9  # plus text relevance, at most 0.2
    assert terms_of("undefined method `amount' for nil in OrderItem #4711 0xdeadbeef") == ["amount", "order", "item"]


def test_search_passes_over_deleted_documents_and_the_next_sync_drops_broken_ones(knowledge: Path) -> None:
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update")
    with open_index(knowledge) as index:
        paths = {(r["error_class"], r["transaction"]): knowledge / r["path"]
                 for r in index.query("SELECT path, error_class, \"transaction\" FROM documents")}
        paths[("NoMethodError", "Controller/orders/update")].write_text("not a document any more")
        paths[("ActiveRecord::RecordNotFound", "Controller/users/show")].unlink()
        assert [p.transaction for p in search_prior_knowledge(error, index, max_results=1)] == ["Controller/orders/update"]
        assert [p.error_class for p in search_prior_knowledge(error, index)] == ["ActiveRecord::RecordNotFound", "NoMethodError"]
        synced = index.sync()
        assert (synced.upserted, synced.removed, [s["file"] for s in synced.skipped]) == (
            0, 1, [paths[("NoMethodError", "Controller/orders/update")].relative_to(knowledge).as_posix()])
        assert [p.error_class for p in search_prior_knowledge(error, index)] == ["ActiveRecord::RecordNotFound"]
        assert len(search_prior_knowledge(error, index, min_score=0.0)) == 2  # Redis::TimeoutError (0.1) too


def test_an_exact_match_carries_hashes_fix_state_and_outcome(tmp_path: Path) -> None:
    result = make_result("PG::UniqueViolation", "Controller/carts/create", reasoning="x" * 900, has_fix=True)
    write_error_doc(result, tmp_path, file_hashes={"app/models/cart.rb": "f" * 64})
    update_doc_metadata(tmp_path, result.fingerprint, fix_confirmed=True, fix_state="rejected", trust=0.2,
                        outcome="PR #12 closed without merging")
    with open_index(tmp_path) as index:
        prior = search_prior_knowledge(result.error, index)[0]
    assert prior.fingerprint == result.fingerprint and prior.match_score == 1.0
    assert prior.file_hashes == {"app/models/cart.rb": "f" * 64}
    assert prior.fix_confirmed is True and prior.has_fix is True and prior.fix_confidence == "medium"
    assert (prior.fix_state, prior.trust, prior.outcome) == ("rejected", 0.2, "PR #12 closed without merging")
    assert prior.summary == "x" * 500


def test_ties_prefer_the_more_trusted_analysis(tmp_path: Path) -> None:
    a, b, c = (make_result("NoMethodError", f"Controller/carts/{action}") for action in ("show", "edit", "new"))
    for result in (a, b, c):
        write_error_doc(result, tmp_path, detected_at=NOW)
    update_doc_metadata(tmp_path, b.fingerprint, fix_confirmed=True, trust=0.9)
    update_doc_metadata(tmp_path, c.fingerprint, trust=0.1)
    error = ErrorGroup(error_class="NoMethodError", transaction="Controller/carts/index")
    with open_index(tmp_path) as index:
        priors = search_prior_knowledge(error, index)
    assert [p.fingerprint for p in priors] == [b.fingerprint, a.fingerprint, c.fingerprint]
    assert priors[0].match_score == priors[1].match_score == priors[2].match_score == 0.7


def test_sync_picks_up_hand_edits_by_hash_and_forgets_deleted_documents(knowledge: Path) -> None:
    with open_index(knowledge) as index:
        generation = index.generation()
    docs = sorted((knowledge / "errors").glob("*.md"))
    edited = docs[0].read_text().replace("Root cause of", "Hand-corrected root cause of")
    docs[0].write_text(edited)
    docs[1].write_text(docs[1].read_text())  # saved again, unchanged
    os.utime(docs[1], ns=(1, 1))
    docs[2].unlink()
    write(knowledge, "Added::ByHand", "Controller/x/y")
    with open_index(knowledge) as index:
        synced = index.sync()
        assert (synced.upserted, synced.removed) == (2, 1)
        assert index.generation() == generation + 1
        assert index.sync().line() == "0 document(s) indexed, 0 removed"
        causes = {r["root_cause"] for r in index.query("SELECT root_cause FROM documents")}
        assert index.counts()["solutions"] == 5
    assert any(c.startswith("Hand-corrected") for c in causes)


def test_upsert_rewrites_only_the_documents_it_is_given(knowledge: Path) -> None:
    with open_index(knowledge) as index:
        before = {r["path"]: r["indexed_at"] for r in index.query("SELECT path, indexed_at FROM documents")}
        result = make_result("NoMethodError", "Controller/orders/update", reasoning="Now we know better.")
        path = write_error_doc(result, knowledge, existing=index.paths_of([result.fingerprint])[result.fingerprint])
        index.upsert([path])  # type: ignore[list-item]
        after = {r["path"]: r["indexed_at"] for r in index.query("SELECT path, indexed_at FROM documents")}
    changed = [p for p in after if after[p] != before[p]]
    assert changed == [path.relative_to(knowledge).as_posix()]  # type: ignore[union-attr]


def test_history_is_tonights_classes_and_modules_only(knowledge: Path) -> None:
    with open_index(knowledge) as index:
        rows = index.history({"NoMethodError"}, {"users"})
    assert sorted((r["error_class"], r["transaction"]) for r in rows) == [
        ("ActiveRecord::RecordNotFound", "Controller/users/show"), ("NoMethodError", "Controller/orders/update")]


def test_only_documents_inside_the_knowledge_folder_are_indexed(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("---\nerror_class: X\ntransaction: Y\n---\n\n## Analysis\n\nleak\n")
    with open_index(tmp_path / "knowledge") as index:
        with pytest.raises(ValueError):
            index.upsert([tmp_path / "knowledge" / ".." / "secret.md"])
        assert index.counts()["solutions"] == 0


def test_a_linked_document_is_skipped_and_the_night_goes_on(knowledge: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("---\nerror_class: X\ntransaction: Y\n---\n\n## Analysis\n\nnot ours\n")
    (knowledge / "errors" / "linked.md").symlink_to(outside)
    with open_index(knowledge) as index:
        assert index.counts()["solutions"] == 5
        assert [s["file"] for s in index.skipped()] == ["errors/linked.md"]
        assert "symbolic link" in index.skipped()[0]["reason"]
        assert index.sync().upserted == 0  # not read again until it changes


def test_patterns_are_never_returned_as_prior_analyses(knowledge: Path) -> None:
    pattern = DetectedPattern(title="Orders keep failing", description="d", error_classes=["Timeout::Error"],
                              modules=["orders", "payments", "checkout"], occurrences=9, pattern_type="systemic_issue")
    with open_index(knowledge) as index:
        index.upsert([write_pattern_doc(pattern, knowledge)])
        error = ErrorGroup(error_class="Timeout::Error", transaction="Controller/payments/create", message="x")
        assert all(p.error_class != "" for p in search_prior_knowledge(error, index))
        kinds = index.query("SELECT kind FROM documents WHERE doc_id IN (SELECT unnest($ids))",
                            {"ids": list(index.candidates(error.fingerprint, "Timeout::Error", "payments",
                                                          [t["tag_id"] for t in index.query("SELECT tag_id FROM doc_tags")]))})
        assert {k["kind"] for k in kinds} <= {"solution"}


def test_threads_share_the_index_and_another_process_is_waited_for(knowledge: Path) -> None:
    error = ErrorGroup(error_class="ActiveRecord::RecordNotFound", transaction="Controller/orders/update")
    found: list[int] = []
    with open_index(knowledge) as index:
        threads = [threading.Thread(target=lambda: found.append(len(search_prior_knowledge(error, index)))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert found == [3, 3, 3, 3]
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(30)", str(knowledge / INDEX_FILE)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(KnowledgeIndexError, match="held by another process"):
            with open_index(knowledge, wait_s=0.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    with open_index(knowledge) as index:  # free again
        assert index.counts()["solutions"] == 5
