"""Step 4b: investigate one error with the agent. Cached by (fingerprint, window, agent definition, model)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from knowledge_store.metrics import MetricsStore
from nightwatch.agent.definitions import load_definition
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache
from nightwatch.investigate import investigate_error
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TraceData, TriageVerdict
from nightwatch.research import ResearchContext
from tasks._prefect import key, nightwatch_task
from tasks.context import RunContext, home, model_id, runtime, settings_for


_CACHES: dict[str, CodeCache] = {}
_LOGS: dict[str, EventLog] = {}


def code_cache(ctx: RunContext) -> CodeCache:
    return _CACHES.setdefault(ctx.run_id, CodeCache(runtime(ctx).host))


def event_log(ctx: RunContext) -> EventLog:
    return _LOGS.setdefault(ctx.run_id, EventLog(home(ctx) / "events" / f"{ctx.run_id}.jsonl"))


def _investigate_key(_c, p) -> str:
    ctx: RunContext = p["ctx"]
    definition = load_definition(ctx.agent)
    return key("investigate", p["error"].fingerprint, ctx.window.key, definition.name,
               hashlib.sha256(definition.model_dump_json().encode()).hexdigest()[:12], model_id(ctx, definition.model or settings_for(ctx).model))


@nightwatch_task(name="investigate_error", retries=1, retry_delay_seconds=10, cache_key_fn=_investigate_key,
                 cache_expiration=timedelta(days=2))
def investigate_error_task(ctx: RunContext, error: ErrorGroup, traces: TraceData, research: ResearchContext,
                           verdict: TriageVerdict) -> ErrorAnalysisResult:
    """The agent reads the code; model and tool calls are metered as soon as it finishes."""
    settings = settings_for(ctx)
    result = investigate_error(
        run_id=ctx.run_id, error=error, traces=traces, research=research, verdict=verdict,
        definition=load_definition(ctx.agent), model=settings.model, client=runtime(ctx).model_client,
        cache=code_cache(ctx), events=event_log(ctx), max_iterations=settings.max_iterations,
        token_budget=settings.token_budget_per_error, cache_ttl="1h" if ctx.mode == "batch" else "5m",
    )
    store = MetricsStore(home(ctx))
    store.write_model_calls(ctx.run_id, ctx.run_date, f"{error.fingerprint}-investigate", result.model_calls)
    store.write_tool_calls(ctx.run_id, ctx.run_date, f"{error.fingerprint}-investigate", result.tool_calls)
    return result
