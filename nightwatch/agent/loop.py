"""The agent loop: one short function over a model client, a tool runner and a token counter.

- The final answer is the `submit_analysis` tool call, validated against the Analysis schema; an
  invalid answer gets one retry with the validation error, then a clear failure.
- Assistant content goes back unmodified (thinking blocks and their signatures included).
- A tool error returns as an `is_error` tool_result; it never leaves the loop.
- On the last allowed step (iteration limit or token budget) only `submit_analysis` is offered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from nightwatch.agent.client import ModelClient, assistant_content
from nightwatch.agent.tools import SUBMIT_TOOL, ToolRunner, tool_schemas
from nightwatch.models import Analysis, ModelCall, TokenUsage
from nightwatch.pricing import PRICE_TABLE_VERSION, cost_usd
from nightwatch.tokens import estimate_text

FINAL_TURN_NOTE = (
    "This is your final turn: no more tools. Call submit_analysis now with your best analysis of "
    "what you have found; lower the confidence if the evidence is incomplete."
)
NUDGE = "Answer by calling the submit_analysis tool; plain text is not read."


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


@dataclass
class LoopOutcome:
    analysis: Analysis | None
    failure: str | None
    iterations: int
    calls: list[ModelCall] = field(default_factory=list)
    wrapped_up: bool = False

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for call in self.calls:
            total = total + call.usage
        return total


def run_agent(client: ModelClient, runner: ToolRunner, config: LoopConfig, first_message: list[dict]) -> LoopOutcome:
    """Run the loop; a failing model call ends it with a failure, keeping the calls already metered."""
    outcome = LoopOutcome(analysis=None, failure=None, iterations=0)
    try:
        return _loop(client, runner, config, first_message, outcome)
    except Exception as exc:  # after the SDK's own retries: record, never raise past the error
        outcome.failure = f"model call failed at iteration {outcome.iterations + 1}: {type(exc).__name__}: {exc}"
        return outcome


def _loop(client: ModelClient, runner: ToolRunner, config: LoopConfig, first_message: list[dict], outcome: LoopOutcome) -> LoopOutcome:
    messages: list[dict[str, Any]] = [{"role": "user", "content": first_message}]
    retried = nudged = noted = False
    for iteration in range(1, config.max_iterations + 3):  # +2: one schema retry, one nudge
        final = iteration >= config.max_iterations or outcome.usage.total >= config.token_budget
        if final and iteration > 1 and not noted:
            _append_text(messages, FINAL_TURN_NOTE)
            noted, outcome.wrapped_up = True, outcome.usage.total >= config.token_budget
        response = _call(client, config, messages, final, outcome, iteration, runner)
        outcome.iterations = iteration
        messages.append({"role": "assistant", "content": assistant_content(response)})
        uses = [b for b in response.content if b.type == "tool_use"]
        submit = next((b for b in uses if b.name == SUBMIT_TOOL), None)
        if submit is not None:
            try:
                outcome.analysis = Analysis.model_validate(submit.input)
                return outcome
            except ValidationError as exc:
                if retried:
                    outcome.failure = f"the model's analysis failed validation twice: {_brief(exc)}"
                    return outcome
                retried = True
                messages.append({"role": "user", "content": _answer_all(uses, runner, iteration, invalid=(submit.id, exc))})
                continue
        if not uses:
            if nudged:
                outcome.failure = f"the model stopped ({response.stop_reason}) without calling {SUBMIT_TOOL}"
                return outcome
            nudged = True
            messages.append({"role": "user", "content": [{"type": "text", "text": NUDGE}]})
            continue
        if final:
            outcome.failure = "the model asked for more tools after its final turn"
            return outcome
        messages.append({"role": "user", "content": _answer_all(uses, runner, iteration)})
    outcome.failure = "no analysis within the iteration limit"
    return outcome


def _call(client: ModelClient, config: LoopConfig, messages: list, final: bool, outcome: LoopOutcome, iteration: int, runner: ToolRunner):
    tools = tool_schemas([] if final else config.tools)
    tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral", "ttl": config.cache_ttl}}
    params: dict[str, Any] = {
        "model": config.model,
        "max_tokens": config.max_tokens,
        "system": [{"type": "text", "text": config.system_prompt, "cache_control": {"type": "ephemeral", "ttl": config.cache_ttl}}],
        "tools": tools,
        "messages": messages,
    }
    if config.thinking_budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": config.thinking_budget}
    elif final:
        params["tool_choice"] = {"type": "tool", "name": SUBMIT_TOOL}
    started = time.monotonic()
    response = client.create(**params)
    outcome.calls.append(_record(response, config, runner, iteration, int((time.monotonic() - started) * 1000), client.offline))
    return response


def _record(response, config: LoopConfig, runner: ToolRunner, iteration: int, latency_ms: int, offline: bool) -> ModelCall:
    u = response.usage
    usage = TokenUsage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_write=u.cache_creation_input_tokens or 0,
        cache_read=u.cache_read_input_tokens or 0,
        thinking=sum(estimate_text(b.thinking) for b in response.content if b.type == "thinking"),
    )
    edits = response.context_management.applied_edits if getattr(response, "context_management", None) else []
    model = "offline" if offline else config.model
    return ModelCall(
        call_id=f"{runner.run_id}:{runner.fingerprint}:investigate:{iteration}",
        run_id=runner.run_id, fingerprint=runner.fingerprint, phase="investigate", iteration=iteration,
        model=model, mode="offline" if offline else config.mode, usage=usage,
        cost_usd=cost_usd(model, usage, batch=config.mode == "batch", cache_ttl=config.cache_ttl),
        price_table=PRICE_TABLE_VERSION, latency_ms=latency_ms, stop_reason=response.stop_reason or "",
        edits_applied=len(edits), tokens_cleared=sum(getattr(e, "cleared_input_tokens", 0) or 0 for e in edits),
    )


def _answer_all(uses, runner: ToolRunner, iteration: int, invalid: tuple[str, ValidationError] | None = None) -> list[dict]:
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


def _append_text(messages: list[dict], text: str) -> None:
    last = messages[-1]
    if last["role"] == "user" and isinstance(last["content"], list):
        last["content"] = [*last["content"], {"type": "text", "text": text}]
    else:
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})


def _brief(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:6])
