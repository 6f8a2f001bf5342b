"""Step 4b: investigate one error with the agent. Cached by (fingerprint, window, agent definition, model).

- Investigations hold a slot of a Prefect global concurrency limit (created with
  `analysis_concurrency` slots if missing: an absent limit would silently not limit).
- The night's token budget is checked once the slot is held; when it is spent the task fails with
  RunBudgetSpent, is not retried nor cached, and the error keeps its triage verdict.
- A model call that fails mid-loop raises InvestigationInterrupted on the first attempt: Prefect
  retries the task and the loop resumes from the error's last checkpoint. An investigation that ends
  without an analysis raises AnalysisFailed (carrying the result and its reason): a failed state is
  never cached, so the next run of the same window investigates again.
- Model and tool calls are written to the metrics store as soon as an attempt ends, each call once
  across attempts (a resumed checkpoint's calls are not written twice).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from datetime import timedelta
from typing import Iterator

from nightwatch.knowledge_store.metrics import MetricsStore, usage_of_row
from nightwatch.tasks._prefect import key, nightwatch_task, raised
from nightwatch.tasks.api_limits import limit_named
from nightwatch.tasks.context import RunContext, home, model_id, night_of, runtime, settings_for
from prefect.client.schemas.responses import GlobalConcurrencyLimitResponse
from prefect.concurrency.sync import concurrency
from prefect.runtime import task_run

from nightwatch.agent.budgets import RunBudget, RunBudgetSpent, weighted_tokens
from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.cross_error import CrossErrorNotes
from nightwatch.agent.definitions import AgentDefinition, load_definition
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache
from nightwatch.investigate import AgentKit, AnalysisFailed, Investigation, InvestigationInterrupted, investigate_error
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TokenUsage, TraceData, TriageVerdict
from nightwatch.research import ResearchContext
from nightwatch.settings import Settings
from nightwatch.tokens import AnthropicCounter, TokenCounter
from nightwatch.verify.step import tester_for

RETRIES = 1
SLOT_TIMEOUT_S = 3600.0


def code_cache(ctx: RunContext) -> CodeCache:
    return night_of(ctx).code_cache


def event_log(ctx: RunContext) -> EventLog:
    return night_of(ctx).event_log(home(ctx) / "events" / f"{ctx.run_id}.jsonl")


def cross_error_notes(ctx: RunContext) -> CrossErrorNotes:
    return night_of(ctx).notes


def night_budget(ctx: RunContext) -> RunBudget:
    """The run's budget, seeded from what the night's ledger already holds (triage, earlier attempts)."""
    return night_of(ctx).budget(lambda: ledger_spent(ctx, settings_for(ctx).model))


def ledger_spent(ctx: RunContext, model: str) -> float:
    """What the night's ledger already holds (triage, earlier attempts), in input-equivalent tokens."""
    rows = MetricsStore(home(ctx)).night_calls(ctx.run_id, ctx.run_date)
    return sum(weighted_tokens(usage_of_row(row), row["model"] or model, batch=row["mode"] == "batch") for row in rows)


def ensure_limit(settings: Settings) -> GlobalConcurrencyLimitResponse:
    """The investigations' global concurrency limit as the server has it, created with analysis_concurrency slots if
    it does not exist (tasks.api_limits.limit_named)."""
    return limit_named(settings.investigation_concurrency_limit, settings.analysis_concurrency)


def at_once(limit: GlobalConcurrencyLimitResponse, investigations: int) -> int:
    """How many of a night's investigations to start together: as many as the limit has slots (all of them when
    the limit is inactive), never none. The rest wait in the night's own queue and start the moment one ends;
    started all at once, they would ask the server for a slot and, refused, sleep the Retry-After it computes
    from the slots' average occupancy (two seconds for a new limit, up to 30), however soon a slot frees."""
    slots = limit.limit if limit.active else investigations
    return max(1, min(slots, investigations))


@contextmanager
def investigation_slot(settings: Settings) -> Iterator[None]:
    with concurrency(ensure_limit(settings).name, occupy=1, strict=True, timeout_seconds=SLOT_TIMEOUT_S):
        yield


def _investigate_key(_c, p) -> str:
    ctx: RunContext = p["ctx"]
    definition = load_definition(ctx.agent)
    return key("investigate", p["error"].fingerprint, ctx.run_id, definition.name,
               hashlib.sha256(definition.model_dump_json().encode()).hexdigest()[:12], model_id(ctx, definition.model or settings_for(ctx).model))


def _retryable(_task, _run, state) -> bool:
    """Retry an interruption; never a spent run budget, nor an analysis that ended without an answer."""
    if isinstance(raised(state), (RunBudgetSpent, AnalysisFailed)):
        return False
    return not any(name in (state.message or "") for name in ("RunBudgetSpent", "AnalysisFailed"))


def _counter(ctx: RunContext, model: str) -> TokenCounter | None:
    client = runtime(ctx).model_client
    return AnthropicCounter(client.sdk, model) if isinstance(client, AnthropicModelClient) else None


def _kit(ctx: RunContext, settings: Settings, definition: AgentDefinition, error: ErrorGroup, traces: TraceData) -> AgentKit:
    """The night's agent kit for one error: the shared client, code cache and event log, its own checkpoints, and
    run_test where the night can run the application's tests."""
    return AgentKit(tester=tester_for(runtime(ctx).verifier, error, traces), test_limit=settings.run_test_limit,definition=definition, model=settings.model, client=runtime(ctx).model_client, cache=code_cache(ctx),
                    events=event_log(ctx), max_iterations=settings.max_iterations, token_budget=settings.token_budget_per_error,
                    policy=ContextPolicy.from_settings(settings), run_budget=night_budget(ctx),
                    checkpoints=CheckpointStore.for_error(home(ctx), ctx.run_id, error.fingerprint),
                    counter=_counter(ctx, definition.model or settings.model))


@nightwatch_task(name="investigate_error", step="4", retries=RETRIES, retry_delay_seconds=10, retry_condition_fn=_retryable,
                 cache_key_fn=_investigate_key, cache_expiration=timedelta(days=2))
def investigate_error_task(ctx: RunContext, error: ErrorGroup, traces: TraceData, research: ResearchContext,
                           verdict: TriageVerdict) -> ErrorAnalysisResult:
    """The agent reads the code; model and tool calls are metered as soon as an attempt ends."""
    settings = settings_for(ctx)
    definition = load_definition(ctx.agent)
    notes = cross_error_notes(ctx)
    with investigation_slot(settings):
        try:
            subject = Investigation(ctx.run_id, error, traces, research, verdict,
                                    notes.recent(error.fingerprint) if settings.cross_error_context else None)
            result = investigate_error(subject, _kit(ctx, settings, definition, error, traces), raise_on_interrupt=task_run.run_count <= RETRIES)
        except InvestigationInterrupted as exc:
            raise InvestigationInterrupted(_metered(ctx, exc.result)) from None
    result = _metered(ctx, result)
    if result.failed:  # a failed state: Prefect caches no failure as an answer, the next run of the window retries
        raise AnalysisFailed(result)
    notes.add(result)
    return result


def _metered(ctx: RunContext, result: ErrorAnalysisResult) -> ErrorAnalysisResult:
    """Write the calls the night's ledger does not hold yet; the result then counts only those.

    A resumed investigation carries its checkpoint's calls: an earlier attempt wrote them (then they
    are not this attempt's spend) or was killed first (then they are written and counted now).
    """
    store = MetricsStore(home(ctx))
    fresh = store.record_new_calls(ctx.run_id, ctx.run_date, f"{result.fingerprint}-investigate", result.model_calls)
    old = [c for c in result.model_calls if c not in fresh]
    upto = max((c.iteration for c in old), default=0)
    tools = [t for t in result.tool_calls if t.iteration > upto]  # tools answer model calls: new ones follow a fresh call
    if tools:
        store.write_tool_calls(ctx.run_id, ctx.run_date, f"{result.fingerprint}-investigate-{fresh[0].started_at:%H%M%S%f}", tools)
    return result.model_copy(update={"model_calls": fresh, "tool_calls": tools, "tokens": sum((c.usage for c in fresh), TokenUsage()),
                                     "cost_usd": round(sum(c.cost_usd for c in fresh), 6)})
