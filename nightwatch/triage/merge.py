"""Merging a night's answers: batch, known and direct verdicts into one per error, then verdicts and
investigations into one ErrorAnalysisResult per error.

The triage subflow decides who calls what; what the answers add up to is decided here, so the rules
(an error the batch did not answer is answered directly, with the reason; a known answer costs
nothing; an investigation carries its triage call's cost) have one home and their own tests.
"""

from __future__ import annotations

from collections import Counter

from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, TokenUsage
from nightwatch.research import ResearchContext
from nightwatch.triage.ledger import BatchLedger
from nightwatch.triage.verdict import TriageOutcome, mark_fallback

MAX_LISTED = 20


def needs_direct(errors: list[ErrorGroup], known: dict[str, TriageOutcome], ledger: BatchLedger) -> dict[str, str]:
    """The errors a batch night must answer by direct calls, each with the reason (fingerprint -> reason)."""
    answered = known | ledger.outcomes
    reasons = {fp: f.reason for fp, f in ledger.fallbacks.items() if fp not in answered}
    for error in errors:
        if error.fingerprint not in answered and error.fingerprint not in reasons:
            reasons[error.fingerprint] = f"not in this night's batch (submitted by run {ledger.run_id})"
    return reasons


def batch_outcomes(errors: list[ErrorGroup], known: dict[str, TriageOutcome], ledger: BatchLedger,
                   direct: dict[str, TriageOutcome], reasons: dict[str, str]) -> list[TriageOutcome]:
    """One verdict per error, in order: known and batch answers as they are, direct ones marked with why they fell back
    (and what the batch spent on them, if anything)."""
    answered = known | ledger.outcomes
    wasted = {fp: f.wasted for fp, f in ledger.fallbacks.items()}
    return [answered.get(e.fingerprint) or mark_fallback(direct[e.fingerprint], reasons[e.fingerprint], wasted.get(e.fingerprint))
            for e in errors]


def all_direct_outcomes(errors: list[ErrorGroup], known: dict[str, TriageOutcome], direct: dict[str, TriageOutcome],
                        reason: str) -> list[TriageOutcome]:
    """One verdict per error when no batch could be used: known answers, and direct ones marked with the reason."""
    return [known.get(e.fingerprint) or mark_fallback(direct[e.fingerprint], reason) for e in errors]


def batch_notes(ledger: BatchLedger, fell_back: list[tuple[ErrorGroup, str]]) -> list[str]:
    """A warning for the report when errors fell back to direct calls: which, and why."""
    if not fell_back:
        return []
    answered = Counter(o.verdict.via for o in ledger.outcomes.values()).get("batch", 0)
    head = f"triage batch {', '.join(ledger.batch_ids())}: {answered} answered by the batch"
    listed = "; ".join(f"{error.label}: {reason}" for error, reason in fell_back[:MAX_LISTED])
    more = f"; and {len(fell_back) - MAX_LISTED} more" if len(fell_back) > MAX_LISTED else ""
    return [f"{head}, {len(fell_back)} fell back to direct calls ({listed}{more})"]


def combine_results(run_id: str, agent: str, errors: list[ErrorGroup], research: list[ResearchContext],
                    triaged: list[TriageOutcome], investigated: dict[int, ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    """One result per error: its investigation (carrying the triage call's cost), else what triage or knowledge said."""
    return [_result(run_id, agent, e, r, t, investigated.get(i)) for i, (e, r, t) in enumerate(zip(errors, research, triaged))]


def _result(run_id: str, agent: str, error: ErrorGroup, research: ResearchContext, triage: TriageOutcome,
            deep: ErrorAnalysisResult | None) -> ErrorAnalysisResult:
    verdict, calls = triage.verdict, triage.all_calls
    if deep is not None:
        return deep.model_copy(update={"error": error, "verdict": verdict, "model_calls": calls + deep.model_calls,
                                       "tokens": sum((c.usage for c in calls), deep.tokens),
                                       "cost_usd": round(deep.cost_usd + sum(c.cost_usd for c in calls), 6),
                                       "regression": research.regression, "still_regressing": research.still_regressing})
    analysis, source = None, "cache" if triage.cached else "triage"
    if verdict.route == "known":
        prior = research.prior_analyses[0]
        analysis = Analysis(title=f"{error.error_class} in {error.transaction} (known)", reasoning=prior.summary,
                            root_cause=prior.root_cause, has_fix=False, confidence=prior.fix_confidence,
                            suggested_next_steps=[f"A confirmed fix exists in the knowledge base: {prior.source_file}"])
        source = "knowledge"
    elif verdict.route == "simple":
        analysis = Analysis(title=f"{error.error_class} in {error.transaction}", reasoning=f"Triage verdict ({verdict.category}, "
                            f"{verdict.complexity}): {verdict.likely_root_cause}", root_cause=verdict.likely_root_cause,
                            has_fix=False, confidence=verdict.confidence)
    return ErrorAnalysisResult(run_id=run_id, error=error, verdict=verdict, analysis=analysis, source=source, agent=agent,
                               model=calls[0].model if calls else "", tokens=sum((c.usage for c in calls), TokenUsage()),
                               cost_usd=round(sum(c.cost_usd for c in calls), 6), model_calls=calls,
                               prior_analyses=research.prior_analyses, correlated_prs=research.correlated_prs,
                               suspect_commits=research.suspect_commits, release_window=research.release_window,
                               regression=research.regression, still_regressing=research.still_regressing)
