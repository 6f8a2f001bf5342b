"""Step 5: assemble the RunReport from what the steps produced."""

from __future__ import annotations

from nightwatch.models import ErrorAnalysisResult, RunTotals, TokenUsage


def as_seen_by(run_id: str, results: list[ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    """Results computed by an earlier run (a task cache hit) are marked `cache` for this run."""
    return [r if r.run_id == run_id or r.source != "model" else r.model_copy(update={"source": "cache"}) for r in results]


def run_totals(run_id: str, results: list[ErrorAnalysisResult]) -> RunTotals:
    """What this run spent: calls made by this run only, so cached answers cost nothing twice."""
    tokens, cost, calls, iterations = TokenUsage(), 0.0, 0, 0
    for result in results:
        own = [c for c in result.model_calls if c.run_id == run_id]
        for call in own:
            tokens = tokens + call.usage
            cost += call.cost_usd
        calls += len(own)
        iterations += result.iterations if result.run_id == run_id else 0
    return RunTotals(tokens=tokens, cost_usd=round(cost, 6), model_calls=calls, iterations=iterations)
