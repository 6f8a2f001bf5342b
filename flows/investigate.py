"""Investigate subflow: the errors triage routed deep, investigated concurrently.

One failing investigation never fails the others: its result carries the failure and the night
goes on with the triage verdict for that error.
"""

from __future__ import annotations

from prefect import flow

from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TraceData, TriageVerdict
from nightwatch.research import ResearchContext
from tasks.context import RunContext
from tasks.investigate_tasks import investigate_error_task


@flow(name="investigate", log_prints=True)
def investigate_flow(ctx: RunContext, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext],
                     verdicts: list[TriageVerdict]) -> list[ErrorAnalysisResult]:
    futures = [investigate_error_task.submit(ctx, *args) for args in zip(errors, traces, research, verdicts)]
    results = []
    for future, error, verdict in zip(futures, errors, verdicts):
        state = future.wait() or future.state
        if state.is_completed():
            results.append(future.result())
        else:
            results.append(ErrorAnalysisResult(run_id=ctx.run_id, error=error, verdict=verdict, source="model",
                                               failure=f"investigation task {state.name}: {state.message or 'no detail'}"))
    return results
