"""Step 4a: triage one error. Cached, so a rerun spends no tokens twice."""

from __future__ import annotations

from datetime import timedelta

from knowledge_store.metrics import MetricsStore
from nightwatch.models import ErrorGroup, Model, ModelCall, TraceData, TriageVerdict
from nightwatch.research import ResearchContext
from nightwatch.triage import known_prior, route, triage_direct, triage_params
from tasks._prefect import key, nightwatch_task
from tasks.context import RunContext, home, model_id, runtime, settings_for


class TriageOutcome(Model):
    run_id: str
    verdict: TriageVerdict
    call: ModelCall | None = None


def _triage_key(_c, p) -> str:
    ctx: RunContext = p["ctx"]
    return key("triage", p["error"].fingerprint, ctx.window.key, model_id(ctx, settings_for(ctx).triage_model),
               sorted(p["research"].file_digests.items()))


@nightwatch_task(name="triage_error", retries=2, retry_delay_seconds=10, cache_key_fn=_triage_key, cache_expiration=timedelta(days=2))
def triage_error(ctx: RunContext, error: ErrorGroup, traces: TraceData, research: ResearchContext) -> TriageOutcome:
    """Known answers skip the model; everything else gets one cheap triage call."""
    known, why = known_prior(research.prior_analyses, research.file_digests)
    if known is not None:
        return TriageOutcome(run_id=ctx.run_id, verdict=route(error.fingerprint, None, "knowledge", known, why))
    rt = runtime(ctx)
    params = triage_params(error, traces, research.prior_analyses, settings_for(ctx).triage_model)
    answer, call = triage_direct(rt.model_client, params, ctx.run_id, error.fingerprint)
    MetricsStore(home(ctx)).write_model_calls(ctx.run_id, ctx.run_date, f"{error.fingerprint}-triage", [call])
    return TriageOutcome(run_id=ctx.run_id, verdict=route(error.fingerprint, answer, call.mode), call=call)


