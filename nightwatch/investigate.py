"""One error's deep investigation: research in, agent loop, ErrorAnalysisResult out."""

from __future__ import annotations

import time

from nightwatch.agent.client import ModelClient
from nightwatch.agent.definitions import AgentDefinition
from nightwatch.agent.loop import LoopConfig, run_agent
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TraceData, TriageVerdict
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext

COMPLEXITY_ITERATIONS = {"simple": 0.6, "moderate": 0.85, "complex": 1.0}


def iteration_limit(definition: AgentDefinition, verdict: TriageVerdict | None, cap: int) -> int:
    """Adaptive iteration limit: simple errors get fewer turns than complex ones (seed 000, layer 4)."""
    base = min(definition.max_iterations, cap)
    scale = COMPLEXITY_ITERATIONS.get(verdict.complexity if verdict else "moderate", 0.85)
    return max(4, round(base * scale))


def investigate_error(
    *,
    run_id: str,
    error: ErrorGroup,
    traces: TraceData,
    research: ResearchContext,
    verdict: TriageVerdict | None,
    definition: AgentDefinition,
    model: str,
    client: ModelClient,
    cache: CodeCache,
    events: EventLog,
    max_iterations: int,
    token_budget: int,
    cross_error: list[str] | None = None,
    cache_ttl: str = "5m",
) -> ErrorAnalysisResult:
    started = time.monotonic()
    runner = ToolRunner(cache=cache, traces=traces, events=events, run_id=run_id, fingerprint=error.fingerprint, allowed=definition.tools)
    config = LoopConfig(
        model=definition.model or model,
        system_prompt=definition.system_prompt,
        tools=definition.tools,
        max_iterations=iteration_limit(definition, verdict, max_iterations),
        max_tokens=definition.max_tokens,
        thinking_budget=definition.thinking_budget,
        token_budget=token_budget,
        cache_ttl=cache_ttl,
    )
    outcome = run_agent(client, runner, config, investigation_message(error, traces, research, cross_error, cache_ttl))
    return ErrorAnalysisResult(
        run_id=run_id,
        error=error,
        verdict=verdict,
        analysis=outcome.analysis,
        source="model",
        agent=definition.name,
        model="offline" if client.offline else config.model,
        iterations=outcome.iterations,
        tokens=outcome.usage,
        cost_usd=round(sum(c.cost_usd for c in outcome.calls), 6),
        model_calls=outcome.calls,
        tool_calls=runner.calls,
        files_examined=runner.files_examined,
        prior_analyses=research.prior_analyses,
        correlated_prs=research.correlated_prs,
        duration_s=round(time.monotonic() - started, 3),
        failure=outcome.failure,
    )
