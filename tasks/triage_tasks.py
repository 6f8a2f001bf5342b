"""Step 4a, triage: one error directly (cached), or a night's errors through Message Batches.

The batch tasks are not cached by Prefect: the batch ledger under NIGHTWATCH_HOME is what makes
them safe to retry or rerun (one submission per night, ever; answers collected and paid for once).
"""

from __future__ import annotations

from datetime import timedelta

from nightwatch.knowledge_store.metrics import MetricsStore
from nightwatch.tasks._prefect import key, nightwatch_task, raised
from nightwatch.tasks.api_limits import api_call
from nightwatch.tasks.context import RunContext, home, model_id, runtime, settings_for
from pydantic import Field

from nightwatch.agent.client import configuration_problem
from nightwatch.models import ErrorGroup, Model, ModelCall, TraceData
from nightwatch.night import current
from nightwatch.redact import clean
from nightwatch.research import ResearchContext
from nightwatch.triage.backends import BatchBackend, BatchRefused
from nightwatch.triage.batch import PollPolicy, collect, submit_or_resume, wait_for_batches
from nightwatch.triage.ledger import BatchLedger, LedgerStore, ledger_key
from nightwatch.triage.plan import TriagePlan, plan_night
from nightwatch.triage.verdict import TriageOutcome, known_prior, route, triage_direct, triage_params

__all__ = ["TriageOutcome", "TriageRun", "triage_error", "plan_triage", "submit_triage_batches", "await_triage_batches",
           "collect_triage_batches"]


class TriageRun(Model):
    """What the triage subflow hands back: a verdict per error, or a night still waiting on its batch."""

    outcomes: list[TriageOutcome] = Field(default_factory=list)
    pending: str | None = None
    notes: list[str] = Field(default_factory=list)


def _triage_key(_c, p) -> str:
    ctx: RunContext = p["ctx"]
    return key("triage", p["error"].fingerprint, ctx.run_id, model_id(ctx, settings_for(ctx).triage_model),
               sorted(p["research"].file_digests.items()))


class TriageFailed(RuntimeError):
    """A triage call that gave no verdict: only its reason (a string) travels, never the SDK's exception or request."""

    def __init__(self, reason: str, configuration: bool = False) -> None:
        super().__init__(reason)
        self.configuration = configuration

    def __reduce__(self):
        return (type(self), (str(self), self.configuration))


def _retry_unless_configuration(_task, _run, state) -> bool:
    """A refused key or an unknown model will not get better by trying again."""
    cause = raised(state)
    return not (isinstance(cause, TriageFailed) and cause.configuration)


@nightwatch_task(name="triage_error", step="4", retries=2, retry_delay_seconds=10, retry_condition_fn=_retry_unless_configuration,
                 cache_key_fn=_triage_key, cache_expiration=timedelta(days=2))
def triage_error(ctx: RunContext, error: ErrorGroup, traces: TraceData, research: ResearchContext) -> TriageOutcome:
    """Known answers skip the model; everything else gets one cheap triage call within the API's limit.

    Every billed request is metered (answered, or `unconfirmed` when its answer was lost), even when the
    call then fails; a failure is raised as TriageFailed, so it is neither cached nor stored with secrets.
    """
    known, why = known_prior(research.prior_analyses, research.file_digests, research.regression)
    if known is not None:
        return TriageOutcome(run_id=ctx.run_id, verdict=route(error.fingerprint, None, "knowledge", known, why))
    params = triage_params(error, traces, research.prior_analyses, settings_for(ctx).triage_model)
    rows: list[ModelCall] = []
    try:
        with api_call(current(ctx.attempt_key)):
            answer, call = triage_direct(runtime(ctx).model_client, params, ctx.run_id, error.fingerprint, calls=rows)
    except Exception as exc:
        problem = configuration_problem(exc)
        raise TriageFailed(problem or f"{type(exc).__name__}: {clean(str(exc), 300)[0]}", configuration=bool(problem)) from None
    finally:
        MetricsStore(home(ctx)).record_new_calls(ctx.run_id, ctx.run_date, f"{error.fingerprint}-triage", rows)
    return TriageOutcome(run_id=ctx.run_id, verdict=route(error.fingerprint, answer, call.mode), call=call,
                         extra_calls=[r for r in rows if r is not call])


def batch_backend(ctx: RunContext) -> BatchBackend:
    return runtime(ctx).model_client.batch_backend(home(ctx))


def ledger_store(ctx: RunContext) -> LedgerStore:
    return LedgerStore(home(ctx) / "batches")


def night_key(ctx: RunContext) -> str:
    """One ledger per night (its window and scope) and triage model, whichever flow run asks."""
    return ledger_key(ctx.run_id, model_id(ctx, settings_for(ctx).triage_model))


def poll_policy(ctx: RunContext, hold_s: float | None) -> PollPolicy:
    s = settings_for(ctx)
    initial, ceiling = runtime(ctx).model_client.poll_interval(s.batch_poll_initial_s, s.batch_poll_max_s)
    return PollPolicy(initial_s=initial, max_s=ceiling, hold_s=hold_s, deadline_s=s.batch_deadline_s)


@nightwatch_task(name="plan_triage", step="4")
def plan_triage(ctx: RunContext, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext]) -> TriagePlan:
    """Known answers, then every other error's request, estimated and split by cost (nightwatch/triage/plan.py)."""
    s = settings_for(ctx)
    return plan_night(ctx.run_id, list(zip(errors, traces, research)), s.triage_model, s.batch_token_budget)


def _retry_unless_refused(_task, _task_run, state) -> bool:
    """An outage is worth another try; a batch the API refused as a bad request is not."""
    return not isinstance(raised(state), BatchRefused)


@nightwatch_task(name="submit_triage_batches", step="4", retries=2, retry_delay_seconds=5, retry_condition_fn=_retry_unless_refused)
def submit_triage_batches(ctx: RunContext, plan: TriagePlan) -> BatchLedger:
    """Create the night's batches, or resume the ones already on the ledger."""
    return submit_or_resume(batch_backend(ctx), ledger_store(ctx), night_key(ctx), ctx.run_id, plan.batches)


@nightwatch_task(name="await_triage_batches", step="4", retries=2, retry_delay_seconds=10)
def await_triage_batches(ctx: RunContext, ledger: BatchLedger, hold_s: float | None) -> BatchLedger:
    """Poll with backoff until the batches end, or until `hold_s` is spent (then the night is handed off)."""
    return wait_for_batches(batch_backend(ctx), ledger_store(ctx), ledger, poll_policy(ctx, hold_s))


@nightwatch_task(name="collect_triage_batches", step="4", retries=2, retry_delay_seconds=10)
def collect_triage_batches(ctx: RunContext, ledger: BatchLedger) -> BatchLedger:
    """Verdicts by custom_id; metered once, at the batch price, for the run that collected them."""
    ledger = collect(batch_backend(ctx), ledger_store(ctx), ledger.key, ctx.run_id, settings_for(ctx).triage_model)
    calls = [o.call for o in ledger.outcomes.values() if o.call] + [f.wasted for f in ledger.fallbacks.values() if f.wasted]
    MetricsStore(home(ctx)).write_model_calls(ledger.collected_by or ctx.run_id, ctx.run_date, "triage-batch", calls)
    return ledger
