"""Step 5: assemble the RunReport from what the steps produced."""

from __future__ import annotations

from nightwatch.models import ErrorAnalysisResult, RunTotals, TokenUsage


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
