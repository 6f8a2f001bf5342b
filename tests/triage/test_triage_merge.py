"""Merging a night's answers (nightwatch/triage/merge.py): one verdict per error, then one result per error."""

from __future__ import annotations

from datetime import datetime, timezone

from nightwatch.models import PriorAnalysis, TokenUsage, TriageVerdict
from nightwatch.research import ResearchContext
from nightwatch.triage import merge
from nightwatch.triage.ledger import BatchLedger, Fallback
from nightwatch.triage.verdict import TriageOutcome, triage_call_record
from tests.builders import error_group, result_for

ERRORS = [error_group(f"E{i}", f"Controller/x/{i}") for i in range(4)]
KNOWN, BATCHED, FELL_BACK, MISSING = (e.fingerprint for e in ERRORS)


def outcome(fingerprint: str, route: str = "simple", via: str = "direct", cost_tokens: int = 0) -> TriageOutcome:
    call = triage_call_record("night", fingerprint, "claude-haiku-4-5", TokenUsage(input=cost_tokens), "direct", 10, "end_turn") \
        if cost_tokens else None
    return TriageOutcome(run_id="night", verdict=TriageVerdict(fingerprint=fingerprint, route=route, via=via, likely_root_cause="a nil cart"), call=call)  # type: ignore[arg-type]


def ledger() -> BatchLedger:
    wasted = triage_call_record("night", FELL_BACK, "claude-haiku-4-5", TokenUsage(input=500), "batch", 0, "max_tokens")
    return BatchLedger(key="k", run_id="night-attempt-1", created_at=datetime(2026, 11, 21, tzinfo=timezone.utc), batches=[],
                       outcomes={BATCHED: outcome(BATCHED, via="batch")},
                       fallbacks={FELL_BACK: Fallback(reason="the answer did not validate", wasted=wasted)})


def test_a_batch_night_answers_directly_what_the_batch_did_not_and_says_why():
    known = {KNOWN: outcome(KNOWN, route="known", via="knowledge")}
    reasons = merge.needs_direct(ERRORS, known, ledger())
    assert reasons == {FELL_BACK: "the answer did not validate",
                       MISSING: "not in this night's batch (submitted by run night-attempt-1)"}
    direct = {fp: outcome(fp) for fp in reasons}
    merged = merge.batch_outcomes(ERRORS, known, ledger(), direct, reasons)
    assert [o.verdict.via for o in merged] == ["knowledge", "batch", "fallback", "fallback"]
    assert merged[2].verdict.fallback_reason == "the answer did not validate"
    assert [c.usage.input for c in merged[2].all_calls] == [500]  # the billed, unusable batch answer is still counted
    notes = merge.batch_notes(ledger(), [(ERRORS[2], reasons[FELL_BACK]), (ERRORS[3], reasons[MISSING])])
    assert notes == ["triage batch : 1 answered by the batch, 2 fell back to direct calls "
                     f"({ERRORS[2].label}: the answer did not validate; {ERRORS[3].label}: not in this night's batch "
                     "(submitted by run night-attempt-1))"]
    assert merge.batch_notes(ledger(), []) == []


def test_without_a_batch_every_unknown_error_is_answered_directly_with_the_reason():
    known = {KNOWN: outcome(KNOWN, route="known", via="knowledge")}
    direct = {e.fingerprint: outcome(e.fingerprint) for e in ERRORS[1:]}
    merged = merge.all_direct_outcomes(ERRORS, known, direct, "the batch could not be submitted")
    assert [o.verdict.via for o in merged] == ["knowledge", "fallback", "fallback", "fallback"]
    assert {o.verdict.fallback_reason for o in merged[1:]} == {"the batch could not be submitted"}


def test_one_result_per_error_from_knowledge_triage_or_its_investigation():
    prior = PriorAnalysis(error_class="E0", transaction="Controller/x/0", root_cause="stale cart", fix_confidence="high",
                          has_fix=True, summary="s", match_score=9.0, source_file="knowledge/e0.md", first_detected="2026-10-01")
    research = [ResearchContext(fingerprint=e.fingerprint, prior_analyses=[prior] if i == 0 else []) for i, e in enumerate(ERRORS)]
    triaged = [outcome(KNOWN, route="known", via="knowledge"), outcome(BATCHED, cost_tokens=1_000),
               outcome(FELL_BACK, route="transient", cost_tokens=1_000), outcome(MISSING, route="deep", cost_tokens=1_000)]
    deep = result_for(ERRORS[3], run_id="night", cost_usd=0.5, tokens=TokenUsage(input=20_000), source="model")
    results = merge.combine_results("night", "base-analyzer", ERRORS, research, triaged, {3: deep})
    assert [r.source for r in results] == ["knowledge", "triage", "triage", "model"]
    assert results[0].analysis is not None and results[0].analysis.root_cause == "stale cart" and results[0].cost_usd == 0
    assert results[1].analysis is not None and results[2].analysis is None  # a transient error is reported, not analysed
    triage_cost = triaged[3].call.cost_usd  # type: ignore[union-attr]
    assert results[3].cost_usd == round(0.5 + triage_cost, 6) and results[3].tokens.input == 21_000
    assert [c.phase for c in results[3].model_calls] == ["triage"]
