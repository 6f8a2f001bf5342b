"""The agent loop: one short function over a model client, a tool runner and a token counter.

- The final answer is the `submit_analysis` tool call, validated against the Analysis schema; an
  invalid answer gets one retry with the validation error, then a clear failure.
- Assistant content goes back unmodified (thinking blocks and their signatures included).
- A tool error returns as an `is_error` tool_result; it never leaves the loop.
- On the last allowed step (iteration limit, or the error's or the run's token budget) only
  `submit_analysis` is offered: the forced wrap-up.
- Context management (caching, editing, compaction, the watcher, budgets, checkpoints) lives in
  layers.py and its modules; a checkpoint after every iteration lets a retry resume where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import ValidationError

from nightwatch.agent.budgets import RunBudget
from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import ModelClient, configuration_problem
from nightwatch.agent.conversation import LoopState
from nightwatch.agent.layers import ContextLayers
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.tools import SUBMIT_TOOL, ToolRunner
from nightwatch.models import Analysis, ModelCall, TokenUsage
from nightwatch.prompts import previews_in
from nightwatch.tokens import TokenCounter

FINAL_TURN_NOTE = (
    "This is your final turn: no more tools. Call submit_analysis now with your best analysis of "
    "what you have found; lower the confidence if the evidence is incomplete."
)
NUDGE = "Answer by calling the submit_analysis tool; plain text is not read."
MAX_COMPACTION_PAUSES = 2


@dataclass
class LoopConfig:
    model: str
    system_prompt: str
    tools: list[str]
    max_iterations: int = 12
    max_tokens: int = 8192
    thinking_budget: int = 0
    token_budget: int = 60_000
    cache_ttl: str = "5m"
    mode: str = "direct"
    policy: ContextPolicy | None = None
    complexity: str = "moderate"
    agent: str = ""
    focus: str = ""  # the error's own words, for the watcher's relevance score
    clock: Callable[[], float] = time.time  # seconds: how old the cached prompt is (a benchmark's is simulated)

    def __post_init__(self) -> None:
        if self.policy is None:
            self.policy = ContextPolicy(cache_ttl=self.cache_ttl)


@dataclass
class LoopOutcome:
    analysis: Analysis | None
    failure: str | None
    iterations: int
    calls: list[ModelCall] = field(default_factory=list)
    wrapped_up: bool = False
    wrap_reason: str = ""
    interrupted: bool = False  # a model call failed: a retry can resume from the last checkpoint
    resumed_at: int | None = None  # the iteration a retry resumed after
    checkpoint_id: str | None = None
    decisions: list[str] = field(default_factory=list)

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for call in self.calls:
            total = total + call.usage
        return total


def run_agent(client: ModelClient, runner: ToolRunner, config: LoopConfig, first_message: list[dict], *,
              counter: TokenCounter | None = None, run_budget: RunBudget | None = None,
              checkpoints: CheckpointStore | None = None) -> LoopOutcome:
    """Run (or resume) the loop; a failing model call ends it with a failure, keeping what was metered."""
    layers = ContextLayers(client, runner, config, counter, run_budget, checkpoints)
    for path, preview in previews_in(first_message).items():
        runner.note_shown(path, preview, 0)
    outcome = LoopOutcome(analysis=None, failure=None, iterations=0)
    state, outcome.resumed_at = layers.start(first_message, outcome.calls)
    outcome.iterations = state.iteration
    try:
        _loop(layers, runner, config, state, outcome)
    except Exception as exc:  # after the SDK's own retries: record the reason (a string), never raise past the error
        problem = configuration_problem(exc)
        outcome.failure = f"model call failed at iteration {state.iteration + 1}: " + (problem or f"{type(exc).__name__}: {exc}")
        outcome.interrupted = problem is None  # a configuration error is not worth resuming
    outcome.wrap_reason, outcome.wrapped_up = state.wrap_reason, "budget" in state.wrap_reason
    outcome.checkpoint_id, outcome.decisions = layers.last_checkpoint, state.decisions
    return outcome


def _loop(layers: ContextLayers, runner: ToolRunner, config: LoopConfig, state: LoopState, outcome: LoopOutcome) -> None:
    pauses = 0
    while state.iteration < config.max_iterations + 2:  # +2: one schema retry, one nudge
        iteration = state.iteration + 1
        final = _final_turn(layers, state, iteration)
        response = layers.call(state, iteration, final, outcome.calls)
        if response.stop_reason == "compaction" and pauses < MAX_COMPACTION_PAUSES:
            pauses += 1  # the server compacted and paused: go on from the summary, same iteration
            continue
        pauses, state.iteration, outcome.iterations = 0, iteration, iteration
        if _handle(response, runner, state, outcome, final, iteration):
            return
        layers.checkpoint(state, outcome.calls)
    outcome.failure = "no analysis within the iteration limit"


def _final_turn(layers: ContextLayers, state: LoopState, iteration: int) -> bool:
    """Whether tools are withheld this turn; the first time, the model is told why."""
    reason = layers.wrap_reason(iteration)
    if reason and not state.noted and iteration > 1:
        state.append_text(FINAL_TURN_NOTE)
        state.noted, state.wrap_reason = True, reason
        state.decide(iteration, f"final turn: {reason}")
    return bool(reason)


def _handle(response: Any, runner: ToolRunner, state: LoopState, outcome: LoopOutcome, final: bool, iteration: int) -> bool:
    """Act on one answer; True when the loop is over (an analysis, or a clear failure)."""
    uses = [b for b in response.content if b.type == "tool_use"]
    submit = next((b for b in uses if b.name == SUBMIT_TOOL), None)
    if submit is not None:
        try:
            outcome.analysis = Analysis.model_validate(submit.input)
            return True
        except ValidationError as exc:
            if state.retried:
                outcome.failure = f"the model's analysis failed validation twice: {_brief(exc)}"
                return True
            state.retried = True
            state.messages.append({"role": "user", "content": _answer_all(uses, runner, iteration, invalid=(submit.id, exc))})
            return False
    if not uses:
        if state.nudged:
            outcome.failure = f"the model stopped ({response.stop_reason}) without calling {SUBMIT_TOOL}"
            return True
        state.nudged = True
        state.messages.append({"role": "user", "content": [{"type": "text", "text": NUDGE}]})
        return False
    if final:
        outcome.failure = "the model asked for more tools after its final turn"
        return True
    runner.context_intact = not any(c.edits_applied or c.compactions or c.watcher_actions for c in outcome.calls)
    state.messages.append({"role": "user", "content": _answer_all(uses, runner, iteration)})
    return False


def _answer_all(uses: list, runner: ToolRunner, iteration: int, invalid: tuple[str, ValidationError] | None = None) -> list[dict]:
    """One tool_result per tool_use id, in order; errors come back flagged, never raised."""
    results = []
    for use in uses:
        if invalid and use.id == invalid[0]:
            text = f"Your analysis does not match the schema: {_brief(invalid[1])}. Call {SUBMIT_TOOL} again, corrected."
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": text, "is_error": True})
        elif use.name == SUBMIT_TOOL:
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": "Not needed.", "is_error": True})
        else:
            out = runner.run(use.name, dict(use.input or {}), iteration)
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": out.text, "is_error": out.is_error})
    return results


def _brief(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:6])
