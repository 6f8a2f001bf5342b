"""One error's deep investigation: research in, agent loop, ErrorAnalysisResult out.

The run's budget is checked before anything is spent (past it, the error keeps its triage verdict);
the iteration limit and thinking budget follow the triage complexity; the loop resumes from the
error's last checkpoint when an earlier attempt was interrupted, and its checkpoints are removed once
it ends. An interruption can be raised (with everything metered so far) so the caller may retry.
"""

from __future__ import annotations

import time

from nightwatch.agent.budgets import RunBudget, iteration_limit
from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import ModelClient
from nightwatch.agent.definitions import AgentDefinition
from nightwatch.agent.loop import LoopConfig, LoopOutcome, run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TraceData, TriageVerdict
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext
from nightwatch.tokens import TokenCounter


class InvestigationInterrupted(Exception):
    """A model call failed mid-investigation; `result` holds what was metered, a checkpoint the rest.

    It carries only data NightWatch built (the result and its reason string), never an SDK exception
    or request, so a task runner that persists it stores no credentials and no prompt.
    """

    def __init__(self, result: ErrorAnalysisResult) -> None:
        super().__init__(result.failure or "investigation interrupted")
        self.result = result

    def __reduce__(self):  # pickled without __cause__/__context__ or any traceback
        return (type(self), (self.result,))


class AnalysisFailed(InvestigationInterrupted):
    """The investigation ended without an analysis; never an answer to cache. `result.failure` says why."""


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
    policy: ContextPolicy | None = None,
    run_budget: RunBudget | None = None,
    checkpoints: CheckpointStore | None = None,
    counter: TokenCounter | None = None,
    raise_on_interrupt: bool = False,
) -> ErrorAnalysisResult:
    if run_budget is not None:
        run_budget.require(error.label)  # raises RunBudgetSpent: the error keeps its triage verdict
    started = time.monotonic()
    runner = ToolRunner(cache=cache, traces=traces, events=events, run_id=run_id, fingerprint=error.fingerprint, allowed=definition.tools,
                        lean=(policy or ContextPolicy()).lean_tool_results)
    complexity = verdict.complexity if verdict else "moderate"
    config = LoopConfig(
        model=definition.model or model,
        system_prompt=definition.system_prompt,
        tools=definition.tools,
        max_iterations=iteration_limit(definition.max_iterations, complexity, max_iterations),
        max_tokens=definition.max_tokens,
        thinking_budget=definition.thinking_budget,
        token_budget=token_budget,
        cache_ttl=cache_ttl,
        policy=policy or ContextPolicy(cache_ttl=cache_ttl),
        complexity=complexity,
        agent=definition.name,
        focus=_focus(error, traces),
    )
    first = investigation_message(error, traces, research, cross_error, config.policy.cache_ttl)  # type: ignore[union-attr]
    outcome = run_agent(client, runner, config, first, counter=counter, run_budget=run_budget, checkpoints=checkpoints)
    result = _result(run_id, error, verdict, definition, client, config, outcome, runner, research, started)
    if outcome.interrupted and raise_on_interrupt:
        raise InvestigationInterrupted(result)
    if checkpoints is not None and not outcome.interrupted:
        checkpoints.clear()
    return result


def _focus(error: ErrorGroup, traces: TraceData) -> str:
    """The error's own words: what makes a section of the conversation relevant to it."""
    frames = " ".join(f"{f.file} {f.method}" for f in traces.in_app_frames[:5])
    return f"{error.error_class} {error.message[:300]} {frames}"


def _result(run_id: str, error: ErrorGroup, verdict: TriageVerdict | None, definition: AgentDefinition, client: ModelClient,
            config: LoopConfig, outcome: LoopOutcome, runner: ToolRunner, research: ResearchContext, started: float) -> ErrorAnalysisResult:
    failure = outcome.failure
    if failure and outcome.wrap_reason:
        failure += f" (final turn forced: {outcome.wrap_reason})"
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
        failure=failure,
    )
