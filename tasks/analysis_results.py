"""Turn triage outcomes and investigations into one ErrorAnalysisResult per error."""

from __future__ import annotations

from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, TokenUsage
from nightwatch.research import ResearchContext
from tasks.context import RunContext
from tasks.triage_tasks import TriageOutcome


def combine_results(ctx: RunContext, errors: list[ErrorGroup], research: list[ResearchContext], triaged: list[TriageOutcome],
                    investigated: dict[int, ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    return [_result(ctx, e, r, t, investigated.get(i)) for i, (e, r, t) in enumerate(zip(errors, research, triaged))]


def _result(ctx: RunContext, error: ErrorGroup, research: ResearchContext, triage: TriageOutcome,
            deep: ErrorAnalysisResult | None) -> ErrorAnalysisResult:
    verdict = triage.verdict
    calls = triage.all_calls
    if deep is not None:
        return deep.model_copy(update={"error": error, "verdict": verdict, "model_calls": calls + deep.model_calls,
                                       "tokens": sum((c.usage for c in calls), deep.tokens),
                                       "cost_usd": round(deep.cost_usd + sum(c.cost_usd for c in calls), 6)})
    analysis = None
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
        source = "cache" if triage.cached else "triage"
    else:
        source = "cache" if triage.cached else "triage"
    return ErrorAnalysisResult(run_id=ctx.run_id, error=error, verdict=verdict, analysis=analysis, source=source, agent=ctx.agent,
                               model=calls[0].model if calls else "", tokens=sum((c.usage for c in calls), TokenUsage()),
                               cost_usd=round(sum(c.cost_usd for c in calls), 6), model_calls=calls,
                               prior_analyses=research.prior_analyses, correlated_prs=research.correlated_prs)

