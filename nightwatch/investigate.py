"""One error's deep investigation: research in, agent loop, ErrorAnalysisResult out.

The run's budget is checked before anything is spent (past it, the error keeps its triage verdict);
the iteration limit and thinking budget follow the triage complexity; the loop resumes from the
error's last checkpoint when an earlier attempt was interrupted, and its checkpoints are removed once
it ends. An interruption can be raised (with everything metered so far) so the caller may retry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from nightwatch.agent.budgets import RunBudget, iteration_limit
from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import ModelClient
from nightwatch.agent.definitions import AgentDefinition
from nightwatch.agent.loop import LoopConfig, LoopOutcome, run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner, offered_tools
from nightwatch.fix import lines_it_changes
from nightwatch.models import ErrorAnalysisResult, ErrorGroup, TraceData, TriageVerdict
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext
from nightwatch.suspects import blamable_frames, can_blame, suspect_commits
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


@dataclass(frozen=True)
class Investigation:
    """What one deep investigation is about: the error, what steps 3 and 3.5 found on it, triage's word, and
    what the night's other investigations have learnt (cross-error notes)."""

    run_id: str
    error: ErrorGroup
    traces: TraceData
    research: ResearchContext
    verdict: TriageVerdict | None = None
    cross_error: list[str] | None = None


@dataclass
class AgentKit:
    """What investigates: the agent definition, its model and client, the code and the event log, the limits
    (the policy carries the context layers and the cache TTL), and where it checkpoints."""

    definition: AgentDefinition
    model: str
    client: ModelClient
    cache: CodeCache
    events: EventLog
    max_iterations: int
    token_budget: int
    policy: ContextPolicy = field(default_factory=ContextPolicy)
    run_budget: RunBudget | None = None
    checkpoints: CheckpointStore | None = None
    counter: TokenCounter | None = None
    tester: Callable[[str, str, str], str] | None = None  # the run_test tool, where fixes can be verified
    test_limit: int = 3


def investigate_error(subject: Investigation, kit: AgentKit, *, raise_on_interrupt: bool = False) -> ErrorAnalysisResult:
    """Run the agent on one error; raise InvestigationInterrupted (everything metered so far) when asked to and
    a model call failed, so the caller may retry from the checkpoint."""
    if kit.run_budget is not None:
        kit.run_budget.require(subject.error.label)  # raises RunBudgetSpent: the error keeps its triage verdict
    started = time.monotonic()
    runner = ToolRunner(cache=kit.cache, traces=subject.traces, events=kit.events, run_id=subject.run_id,
                        fingerprint=subject.error.fingerprint, allowed=_tools(kit), lean=kit.policy.lean_tool_results,
                        tester=kit.tester, test_limit=kit.test_limit)
    config = _loop_config(subject, kit)
    first = investigation_message(subject.error, subject.traces, subject.research, subject.cross_error, kit.policy.cache_ttl)
    outcome = run_agent(kit.client, runner, config, first, counter=kit.counter, run_budget=kit.run_budget,
                        checkpoints=kit.checkpoints)
    result = _with_fix_suspects(_result(subject, kit, config, outcome, runner, started), subject, kit.cache.host)
    if outcome.interrupted and raise_on_interrupt:
        raise InvestigationInterrupted(result)
    if kit.checkpoints is not None and not outcome.interrupted:
        kit.checkpoints.clear()
    return result


def _with_fix_suspects(result: ErrorAnalysisResult, subject: Investigation, host: object) -> ErrorAnalysisResult:
    """Suspects ranked again once the analysis says where the error starts and what its fix changes: the commit that
    wrote those lines may not be in the stack at all (a value built in a caller, a URL pattern). Blame only: no model
    call."""
    analysis = result.analysis
    if analysis is None or not can_blame(host):
        return result
    origin = [(analysis.origin.file, analysis.origin.line)] if analysis.origin and analysis.origin.line else []
    fix_lines = origin + (lines_it_changes(analysis, host) if analysis.has_fix else [])  # type: ignore[arg-type]
    if not fix_lines:
        return result
    suspects, _ = suspect_commits(host, blamable_frames(subject.traces), subject.error.first_seen,
                                  fix_lines=fix_lines, deploys=subject.research.deploys, origin=origin[0] if origin else None,
                                  window=subject.research.release_window)
    return result.model_copy(update={"suspect_commits": suspects}) if suspects else result


def _loop_config(subject: Investigation, kit: AgentKit) -> LoopConfig:
    """The loop's limits: the iteration limit follows triage's complexity; the cache TTL is the policy's."""
    definition = kit.definition
    complexity = subject.verdict.complexity if subject.verdict else "moderate"
    return LoopConfig(
        model=definition.model or kit.model,
        system_prompt=definition.system_prompt,
        tools=_tools(kit),
        max_iterations=iteration_limit(definition.max_iterations, complexity, kit.max_iterations),
        max_tokens=definition.max_tokens,
        thinking_budget=definition.thinking_budget,
        token_budget=kit.token_budget,
        cache_ttl=kit.policy.cache_ttl,
        policy=kit.policy,
        complexity=complexity,
        agent=definition.name,
        focus=_focus(subject.error, subject.traces),
    )


def _tools(kit: AgentKit) -> list[str]:
    """The definition's tools the night can offer: run_test (which needs "tests") where it can run the application's."""
    return offered_tools(kit.definition.tools, {"tests"} if kit.tester is not None and kit.test_limit > 0 else set())


def _focus(error: ErrorGroup, traces: TraceData) -> str:
    """The error's own words: what makes a section of the conversation relevant to it."""
    frames = " ".join(f"{f.file} {f.method}" for f in traces.in_app_frames[:5])
    return f"{error.error_class} {error.message[:300]} {frames}"


def _result(subject: Investigation, kit: AgentKit, config: LoopConfig, outcome: LoopOutcome, runner: ToolRunner,
            started: float) -> ErrorAnalysisResult:
    failure = outcome.failure
    if failure and outcome.wrap_reason:
        failure += f" (final turn forced: {outcome.wrap_reason})"
    return ErrorAnalysisResult(
        run_id=subject.run_id,
        error=subject.error,
        verdict=subject.verdict,
        analysis=outcome.analysis,
        source="model",
        agent=kit.definition.name,
        model=kit.client.recorded_as(config.model, config.mode)[0],
        iterations=outcome.iterations,
        tokens=outcome.usage,
        cost_usd=round(sum(c.cost_usd for c in outcome.calls), 6),
        model_calls=outcome.calls,
        tool_calls=runner.calls,
        files_examined=runner.files_examined,
        prior_analyses=subject.research.prior_analyses,
        correlated_prs=subject.research.correlated_prs,
        suspect_commits=subject.research.suspect_commits,
        release_window=subject.research.release_window,
        duration_s=round(time.monotonic() - started, 3),
        failure=failure,
    )
