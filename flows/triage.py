"""Triage subflow: one verdict per error. Batch nights go through Message Batches, interactive ones
call the API directly and concurrently; both stay within the API's Prefect concurrency limit.

Batch: plan (known answers skip the model; the rest estimated and split by cost) -> submit or
resume (the ledger is on disk before any polling) -> await with backoff (in a deployment, at most
`batch_hold_s`, then the night is handed to the `collect` deployment) -> collect by custom_id ->
direct calls for every entry that fell back, each marked with its reason.
"""

from __future__ import annotations

from nightwatch.tasks._prefect import from_cache
from nightwatch.tasks.api_limits import api_slots
from nightwatch.tasks.batch_handoff import can_hand_off, schedule_collect
from nightwatch.tasks.context import RunContext, settings_for
from nightwatch.tasks.night_inputs import load, stash
from nightwatch.tasks.triage_tasks import (
    TriageRun,
    await_triage_batches,
    collect_triage_batches,
    ledger_store,
    plan_triage,
    poll_policy,
    submit_triage_batches,
    triage_error,
)
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from nightwatch.models import ErrorGroup, TraceData
from nightwatch.night import current
from nightwatch.redact import clean
from nightwatch.research import ResearchContext
from nightwatch.triage import merge
from nightwatch.triage.backends import BatchError
from nightwatch.triage.batch import record_handoff
from nightwatch.triage.ledger import BatchLedger
from nightwatch.triage.plan import TriagePlan
from nightwatch.triage.verdict import TriageOutcome, unanswered

Item = tuple[ErrorGroup, TraceData, ResearchContext]


def triage_flow(ctx: RunContext, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext]) -> TriageRun:
    """Step 4a: the triage subflow over these errors (its inputs go by reference: see tasks/night_inputs.py)."""
    return triage_subflow(ctx, stash(ctx, "triage", errors, traces, research))


@flow(name="triage", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def triage_subflow(ctx: RunContext, inputs: str) -> TriageRun:
    """Batch nights through Message Batches, interactive ones by direct calls; `inputs` is a file path."""
    night = load(inputs)
    items = list(zip(night.errors, night.traces, night.research))
    if ctx.mode == "batch":
        return batch_triage(ctx, items)
    return TriageRun(outcomes=direct_triage(ctx, items))


def direct_triage(ctx: RunContext, items: list[Item]) -> list[TriageOutcome]:
    """Concurrent direct calls within the API's limit; an error whose call fails is kept, routed deep."""
    if not items:
        return []
    with api_slots(current(ctx.attempt_key), wanted=len(items), size=settings_for(ctx).api_concurrency):
        futures = [triage_error.submit(ctx, e, t, r) for e, t, r in items]
        return [_outcome(ctx, future, error) for future, (error, _, _) in zip(futures, items)]


def _outcome(ctx: RunContext, future, error: ErrorGroup) -> TriageOutcome:
    try:
        outcome = future.result()
    except Exception as exc:  # one failed call must not cost the night its other verdicts
        return unanswered(ctx.run_id, error.fingerprint, f"triage call failed: {clean(str(exc), 300)[0]}")
    return outcome.from_cache() if from_cache(future.state) else outcome


def batch_triage(ctx: RunContext, items: list[Item]) -> TriageRun:
    errors, traces, research = (list(column) for column in zip(*items)) if items else ([], [], [])
    plan = plan_triage(ctx, errors, traces, research)
    if not plan.requests:
        return TriageRun(outcomes=[plan.known[e.fingerprint] for e, _, _ in items])
    try:
        ledger = submit_triage_batches(ctx, plan)
    except BatchError as exc:  # refused, or the API stayed down through the retries: the night goes on directly
        return all_direct(ctx, items, plan, f"the batch could not be submitted ({clean(str(exc), 300)[0]})")
    handing_off = can_hand_off()
    ledger = await_triage_batches(ctx, ledger, settings_for(ctx).batch_hold_s if handing_off else None)
    if not (ledger.ended or ledger.collected):
        return TriageRun(pending=hand_off(ctx, ledger))
    earlier = ledger.collected  # an earlier attempt of the night collected (and metered) these answers
    collected = collect_triage_batches(ctx, ledger)
    if earlier:
        collected.outcomes = {fp: o.from_cache() for fp, o in collected.outcomes.items()}
    return assemble(ctx, items, plan, collected)


def hand_off(ctx: RunContext, ledger: BatchLedger) -> str:
    message = schedule_collect(ctx, ledger, poll_policy(ctx, settings_for(ctx).batch_hold_s).next_check(ledger.handoffs))
    record_handoff(ledger_store(ctx), ledger.key)
    print(message)
    return message


def assemble(ctx: RunContext, items: list[Item], plan: TriagePlan, ledger: BatchLedger) -> TriageRun:
    """Known and batch verdicts as they are; every other error answered directly, with the reason why."""
    errors = [e for e, _, _ in items]
    reasons = merge.needs_direct(errors, plan.known, ledger)
    direct_items = [item for item in items if item[0].fingerprint in reasons]
    direct = {e.fingerprint: o for (e, _, _), o in zip(direct_items, direct_triage(ctx, direct_items))}
    print(ledger.describe())
    return TriageRun(outcomes=merge.batch_outcomes(errors, plan.known, ledger, direct, reasons),
                     notes=merge.batch_notes(ledger, [(e, reasons[e.fingerprint]) for e, _, _ in direct_items]))


def all_direct(ctx: RunContext, items: list[Item], plan: TriagePlan, reason: str) -> TriageRun:
    todo = [item for item in items if item[0].fingerprint not in plan.known]
    direct = {e.fingerprint: o for (e, _, _), o in zip(todo, direct_triage(ctx, todo))}
    return TriageRun(outcomes=merge.all_direct_outcomes([e for e, _, _ in items], plan.known, direct, reason),
                     notes=[f"triage: {reason}; {len(todo)} error(s) triaged by direct calls instead"])
