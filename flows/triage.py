"""Triage subflow: one verdict per error, concurrently; known answers skip the model."""

from __future__ import annotations

from prefect import flow

from nightwatch.models import ErrorGroup, TraceData
from nightwatch.research import ResearchContext
from tasks.context import RunContext
from tasks.triage_tasks import TriageOutcome, triage_error


@flow(name="triage", log_prints=True)
def triage_flow(ctx: RunContext, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext]) -> list[TriageOutcome]:
    futures = [triage_error.submit(ctx, e, t, r) for e, t, r in zip(errors, traces, research)]
    return [f.result() for f in futures]
