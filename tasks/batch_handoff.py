"""A long batch wait does not hold a worker: the night hands itself to the `collect` deployment.

A night running from a deployment waits on its batch for at most `batch_hold_s`; if the batch is
still processing, it schedules a run of `nightwatch/collect` later (the same night: same window,
same parameters) and ends. The collect run finds the finished steps in the task cache and the
batch on the ledger, polls it again, and either finishes the night or hands off once more, each
time a little later. A run outside a deployment (the CLI, a test) has no worker to free and no
deployment to hand to: it waits for the batch itself.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from nightwatch.tasks.context import RunContext
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.runtime import deployment

from nightwatch.triage.ledger import BatchLedger

COLLECT_DEPLOYMENT = "nightwatch/collect"


def can_hand_off() -> bool:
    """True in a deployment run when the `collect` deployment exists to hand the night to."""
    if deployment.id is None:
        return False
    with get_client(sync_client=True) as client:
        try:
            client.read_deployment_by_name(COLLECT_DEPLOYMENT)
        except ObjectNotFound:
            return False
    return True


def collect_parameters(ctx: RunContext) -> dict:
    """The same night again: the anchored window, the same limits and settings, batch mode."""
    return {"since_hours": ctx.window.hours, "until": ctx.anchor.isoformat(), "mode": "batch", "dry_run": ctx.dry_run,
            "agent": ctx.agent, "max_errors": ctx.max_errors, "max_issues": ctx.max_issues,
            "settings_block": ctx.settings_block, "overrides": ctx.overrides}


def schedule_collect(ctx: RunContext, ledger: BatchLedger, delay_s: float) -> str:
    """Schedule the collect run (once per hand-off, even if this is retried); say when and why."""
    when = datetime.now(timezone.utc) + timedelta(seconds=delay_s)
    run = run_deployment(COLLECT_DEPLOYMENT, parameters=collect_parameters(ctx), scheduled_time=when, timeout=0, as_subflow=False,
                         idempotency_key=f"{ledger.key}:handoff-{ledger.handoffs}", tags=["nightwatch", "collect"])
    return (f"triage batch still processing ({ledger.describe()}); the night resumes in flow run {run.name} "
            f"of {COLLECT_DEPLOYMENT} at {when:%Y-%m-%d %H:%M:%S} UTC")
