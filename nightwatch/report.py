"""Step 5: assemble the RunReport from what the steps produced."""

from __future__ import annotations

from collections import Counter

from nightwatch.models import ErrorAnalysisResult, RunTotals, TokenUsage, TriageVerdict


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


def spent_again(results: list[ErrorAnalysisResult], run_id: str, ledger: list[dict], finished_before: set[str],
                storage: str) -> list[str]:
    """What this attempt paid for that an earlier attempt of the night had already paid for, and why: one line per
    error. A call is paid again when an earlier attempt's ledger holds the same (error, phase, iteration); a
    resumed investigation continues at later iterations and is not counted. `finished_before` holds the
    fingerprints an earlier attempt analysed to the end: paying for those again means its result was not found."""
    mine = [c for r in results for c in r.model_calls if c.run_id == run_id]  # this attempt's calls
    known = {(c.call_id, c.started_at.timestamp()) for c in mine}  # a call is its id and its start
    earlier = {(row["fingerprint"], row["phase"], row["iteration"]) for row in ledger
               if (row["call_id"], row["started_at"].timestamp()) not in known}
    lines = []
    for result in results:
        again = [c for c in result.model_calls if c.run_id == run_id and (c.fingerprint, c.phase, c.iteration) in earlier]
        if not again:
            continue
        cost = sum(c.cost_usd for c in again)
        why = (f"an earlier attempt finished it, but its result was not in the result storage ({storage}): give every worker "
               "the same NIGHTWATCH_RESULT_STORAGE" if result.fingerprint in finished_before
               else "an earlier attempt did not finish it (failed, or stopped before its next checkpoint)")
        lines.append(f"spent again: {len(again)} model call(s), ${cost:.4f}, on {result.error.label}: {why}")
    return lines


def analyze_detail(verdicts: list[TriageVerdict], results: list[ErrorAnalysisResult]) -> str:
    """Step 4's line: how many errors took each route, how triage answered, and how many analyses failed."""
    routes = {r: sum(1 for v in verdicts if v.route == r) for r in ("known", "transient", "simple", "deep")}
    via = ", ".join(f"{n} {v}" for v, n in Counter(v.via for v in verdicts).items())
    detail = ", ".join(f"{n} {r}" for r, n in routes.items() if n) + (f"; triage via {via}" if via else "")
    failed = sum(1 for r in results if r.failed)
    return detail + (f"; {failed} FAILED" if failed else "")
