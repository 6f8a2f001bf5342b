"""Step 5: assemble the RunReport from what the steps produced."""

from __future__ import annotations

from nightwatch.models import ErrorAnalysisResult, RunTotals, TokenUsage


def run_totals(run_id: str, results: list[ErrorAnalysisResult]) -> RunTotals:
    """What this attempt of the night spent: answers from cache carry no calls, so nothing counts twice."""
    tokens, cost, calls, iterations = TokenUsage(), 0.0, 0, 0
    for result in results:
        own = [c for c in result.model_calls if c.run_id == run_id]
        for call in own:
            tokens = tokens + call.usage
            cost += call.cost_usd
        calls += len(own)
        iterations += result.iterations if result.source != "cache" else 0
    return RunTotals(tokens=tokens, cost_usd=round(cost, 6), model_calls=calls, iterations=iterations)
