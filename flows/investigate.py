"""Investigate subflow: the errors triage routed deep, investigated concurrently.

Concurrency is bounded by the Prefect global concurrency limit each task holds (tasks/investigate_tasks.py).
One failing investigation never fails the others: its result carries the failure and the night goes
on. An error the night's token budget could not pay for comes back as None: it keeps its triage
verdict, and the report says so.
"""

from __future__ import annotations

from nightwatch.tasks._prefect import from_cache, raised
from nightwatch.tasks.context import RunContext, settings_for
from nightwatch.tasks.investigate_tasks import at_once, ensure_limit, investigate_error_task
from nightwatch.tasks.night_inputs import load, stash
from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from nightwatch.agent.budgets import RunBudgetSpent
from nightwatch.investigate import InvestigationInterrupted
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TokenUsage, TraceData, TriageVerdict
from nightwatch.research import ResearchContext


def investigate_flow(ctx: RunContext, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext],
                     verdicts: list[TriageVerdict]) -> list[ErrorAnalysisResult | None]:
    """Step 4b: the investigate subflow over these errors (inputs go by reference: see tasks/night_inputs.py), as
    many at once as the investigations' concurrency limit has slots (tasks.investigate_tasks.at_once)."""
    runner = ThreadPoolTaskRunner(max_workers=at_once(ensure_limit(settings_for(ctx)), len(errors)))
    return investigate_subflow.with_options(task_runner=runner)(ctx, stash(ctx, "investigate", errors, traces, research), verdicts)


@flow(name="investigate", log_prints=True)
def investigate_subflow(ctx: RunContext, inputs: str, verdicts: list[TriageVerdict]) -> list[ErrorAnalysisResult | None]:
    night = load(inputs)
    errors, traces, research = night.errors, night.traces, night.research
    settings = settings_for(ctx)
    get_run_logger().info("%d investigations under the concurrency limit %r (shared prefix cached %s)",
                          len(errors), settings.investigation_concurrency_limit, settings.shared_cache_ttl)
    futures = [investigate_error_task.submit(ctx, *args) for args in zip(errors, traces, research, verdicts)]
    return [_outcome(ctx, future, error, verdict) for future, error, verdict in zip(futures, errors, verdicts)]


def _outcome(ctx: RunContext, future, error: ErrorGroup, verdict: TriageVerdict) -> ErrorAnalysisResult | None:
    state = future.wait() or future.state
    if state.is_completed():
        result = future.result()
        return answered_from_cache(result) if from_cache(state) else result
    cause = raised(state)
    if isinstance(cause, RunBudgetSpent) or "RunBudgetSpent" in (state.message or ""):
        return None
    if isinstance(cause, InvestigationInterrupted):  # AnalysisFailed too: the result with its reason and its spend
        return cause.result
    return ErrorAnalysisResult(run_id=ctx.run_id, error=error, verdict=verdict, source="model",
                               failure=f"investigation task {state.name}: {state.message or 'no detail'}")


def answered_from_cache(result: ErrorAnalysisResult) -> ErrorAnalysisResult:
    """An earlier attempt of this night paid for this answer: tonight it costs nothing and says so."""
    return result.model_copy(update={"source": "cache", "model_calls": [], "tool_calls": [], "tokens": TokenUsage(),
                                     "cost_usd": 0.0, "iterations": 0})



def budget_note(kept: list[ErrorGroup], limit: int) -> str:
    """The report's line for the errors the run budget left with their triage verdict."""
    names = ", ".join(e.label for e in kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    return (f"run token budget of {limit:,} input-equivalent tokens spent: {len(kept)} deep error(s) kept their triage "
            f"verdict without investigation: {names}")
