"""The context-management layers around each model call of one investigation.

Before a call: the watcher keeps headroom, a checkpoint is written when a compaction is due and
NightWatch's own summariser runs when the server cannot compact; the request gets its cache
breakpoints, its thinking budget and its `context_management` edits with their beta headers.
After a call: applied edits are read back and logged, the call is metered into `model_calls` and
charged to the budgets, a compaction block replaces the history it summarised. After an iteration:
a checkpoint. Each layer is a switch of `ContextPolicy`.

An attempt whose answer was lost (see agent/metering.py) is metered as an `unconfirmed` row and
charged to the budgets too, before the answer's own row or before the call's error goes up.
"""

from __future__ import annotations

import time
from typing import Any

from anthropic.types.beta import BetaContextManagementConfigParam

from nightwatch.agent import break_even, budgets, caching, compaction, editing, metering
from nightwatch.agent.budgets import RunBudget
from nightwatch.agent.checkpoints import Checkpoint, CheckpointError, CheckpointStore
from nightwatch.agent.client import ModelClient, assistant_content
from nightwatch.agent.conversation import LoopState
from nightwatch.agent.tools import SUBMIT_TOOL, ToolRunner, tool_schemas
from nightwatch.agent.watcher import Watcher
from nightwatch.models import ModelCall
from nightwatch.tokens import EstimatingCounter, TokenCounter, _text_of, estimate_text

ANY_PROMPT = 1  # a clearing trigger every prompt passes (in tokens; positive, as a trigger's value surely may be)


class ContextLayers:
    """One investigation's context management; the loop asks it for each call and each checkpoint."""

    def __init__(self, client: ModelClient, runner: ToolRunner, config: Any, counter: TokenCounter | None = None,
                 run_budget: RunBudget | None = None, checkpoints: CheckpointStore | None = None) -> None:
        self.client, self.runner, self.config = client, runner, config
        self.policy = config.policy.for_window(break_even.context_window(config.model))
        self.counter = counter if counter is not None else EstimatingCounter()
        self.run_budget = run_budget if run_budget is not None else RunBudget(float("inf"))
        self.checkpoints = checkpoints if self.policy.checkpoints else None
        self.server_compaction = self.policy.compaction and compaction.server_side(config.model)
        self.watcher = Watcher(self.policy.watcher_limit, self.counter, config.focus, runner.events, runner.fingerprint,
                               self.policy.cache_ttl) if self.policy.watcher else None
        self.spent = 0.0  # this error's budget, in input-equivalent tokens
        self.last_checkpoint: str | None = None
        self.pending_checkpoint: str | None = None  # written since the last call: recorded on the next one
        self.sent_clearing: tuple[list[str], int] | None = None  # the last request's tool uses and the `keep` it sent

    # start and resume ------------------------------------------------------------------------
    def start(self, first_message: list[dict], calls: list[ModelCall]) -> tuple[LoopState, int | None]:
        """A fresh conversation, or the one the newest verified checkpoint saved (then: its iteration)."""
        saved = self.checkpoints.latest() if self.checkpoints else None
        if saved is None or (saved.agent, saved.model) != (self.config.agent, self.config.model):
            return LoopState(messages=[{"role": "user", "content": first_message}]), None
        calls.extend(saved.calls)  # the cleared boundary is in the saved state: a clearing before the restart goes on
        self.runner.calls[:] = saved.tool_calls
        self.runner.files_examined[:] = saved.files_examined
        self.spent = sum(self._weighted(c) for c in saved.calls)
        self.last_checkpoint = saved.checkpoint_id
        state = LoopState.from_dict(saved.state)
        state.decide(state.iteration + 1, f"resumed from checkpoint {saved.checkpoint_id}")
        return state, state.iteration

    # budgets -------------------------------------------------------------------------------
    def wrap_reason(self, iteration: int) -> str:
        """Why this turn must be the last one, or '' if it need not be."""
        if self.spent >= self.config.token_budget:
            return f"token budget of this error spent ({self.spent:,.0f} of {self.config.token_budget:,})"
        if self.run_budget.exhausted:
            return f"token budget of the run spent ({self.run_budget.spent:,.0f} of {self.run_budget.limit:,.0f})"
        if iteration >= self.config.max_iterations:
            return f"iteration limit {self.config.max_iterations} reached"
        return ""

    # one call ----------------------------------------------------------------------------------
    def call(self, state: LoopState, iteration: int, final: bool, calls: list[ModelCall]) -> Any:
        system = caching.system_blocks(self.config.system_prompt, self.policy)
        tools = caching.tools_with_breakpoint(tool_schemas([] if final else self.config.tools), self.policy)
        watcher_actions, count = self._headroom(state, system, tools, iteration)
        self._before_compaction(state, iteration, count, calls)
        params = self._params(state, iteration, final, system, tools, count)
        checkpoint_id, self.pending_checkpoint = self.pending_checkpoint, None
        phase = "wrapup" if final and "budget" in state.wrap_reason else "investigate"
        started = time.monotonic()
        with metering.lost_attempts() as lost:
            try:
                response = self.client.create(**params)
            finally:
                self._meter_lost(params, lost, iteration, calls, phase)
        state.answered_at = self.config.clock()
        done = editing.applied(response)
        if done.tool_uses_cleared and self.sent_clearing and self.sent_clearing[1] < len(self.sent_clearing[0]):
            ids, keep = self.sent_clearing
            state.cleared_through = ids[len(ids) - keep - 1]  # the server cleared through here: later requests hold it
        editing.log_cleared(self.runner.events, self.runner.fingerprint, state.messages, done, self.policy, state.logged, iteration)
        calls.append(self._meter(response, self._context(
            calls, iteration, phase, latency_ms=int((time.monotonic() - started) * 1000), edits_applied=done.count,
            tokens_cleared=done.tokens_cleared, watcher_actions=watcher_actions, checkpoint_id=checkpoint_id)))
        state.append_assistant(assistant_content(response))
        compaction.absorb(state, self.runner.events, self.runner.fingerprint, iteration)
        return response

    def _headroom(self, state: LoopState, system: list, tools: list, iteration: int) -> tuple[int, int]:
        """The watcher's work, and the tokens of the request as the model will be shown it (what is cleared, cleared)."""
        uses = editing.tool_uses(state.messages)
        cleared = editing.cleared_ids(uses, editing.held(uses, state.cleared_through), self.policy)
        if self.watcher:
            to_come = self._to_come(iteration) if self.policy.when_it_pays else None
            actions, count = self.watcher.keep_headroom(state.messages, system, tools, iteration, cleared, to_come)
            if actions:
                state.decide(iteration, f"watcher compacted {actions} section(s) to keep {self.policy.reserve_ratio:.0%} headroom")
            return actions, count
        counted = self.policy.compaction or self.policy.context_editing
        return 0, self.counter.count(system=system, messages=editing.cleared_view(state.messages, cleared), tools=tools) if counted else 0

    def _to_come(self, iteration: int) -> int:
        return break_even.calls_to_come(iteration, self.config.max_iterations)

    def _clearing(self, state: LoopState, count: int, iteration: int) -> tuple[int, int, int | None]:
        """(keep, clear_at_least, trigger; None: the policy's) of this request's tool-result clearing. With a set least
        amount, or layers acting at their thresholds: the policy's keep (the boundary moves every turn). Else, before
        the server cleared anything, the policy's keep and the break-even for the server to check; after, the boundary
        is held until moving it to the last `keep` tool uses pays for what that clears: the same results cleared again
        at any size of prompt (a summary may have made it smaller than the trigger it was cleared at), so the cache
        holds and the server clears exactly what the watcher and the compaction trigger count as cleared; a move, once
        decided past the trigger, is sent at any size too."""
        keep = self.policy.clear_tool_uses_keep
        if self.policy.clear_tool_uses_at_least is not None:
            return keep, self.policy.clear_tool_uses_at_least, None
        if not self.policy.when_it_pays:
            return keep, 0, None
        if break_even.cache_expired(state.answered_at, self.config.clock(), self.policy.cache_ttl):
            # the whole prompt is written again whatever is cleared: every token cleared is saved now and on every
            # later call, and nothing is rewritten for it, so the clearing pays at any size of prompt
            state.decide(iteration, "the cached prompt expired: this request writes all of it anyway, so it asks to clear "
                                    f"to the last {keep} tool uses at any size, which then costs no rewrite")
            return keep, 0, ANY_PROMPT
        uses = editing.tool_uses(state.messages)
        boundary = editing.held(uses, state.cleared_through)
        if not boundary:
            prompt = max(count, self.policy.clear_tool_uses_trigger or 0)
            return keep, break_even.least_clearing(prompt, self._to_come(iteration), self.policy.cache_ttl), None
        if count >= (self.policy.clear_tool_uses_trigger or 0) and self._move_pays(state.messages, uses, boundary, iteration):
            return keep, 0, ANY_PROMPT  # decided here, past the trigger; a summary this call folded must not undo it
        return len(uses) - boundary, 0, ANY_PROMPT

    def _move_pays(self, messages: list[dict], uses: list[dict], boundary: int, iteration: int) -> bool:
        """Whether clearing the results between the held boundary and the last `keep` tool uses pays: they are the
        tokens saved on every later call, and everything after the boundary is written to the cache again."""
        if len(uses) - self.policy.clear_tool_uses_keep <= boundary:
            return False
        view = editing.cleared_view(messages, editing.cleared_ids(uses, boundary, self.policy))
        newly = editing.cleared_ids(uses, len(uses) - self.policy.clear_tool_uses_keep, self.policy) - \
            editing.cleared_ids(uses, boundary, self.policy)
        gain = sum(estimate_text(_text_of(b.get("content", ""))) for m in view if m["role"] == "user" and isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result" and b.get("tool_use_id") in newly)
        first = next(i for i, m in enumerate(view) if m["role"] == "assistant" and isinstance(m["content"], list)
                     and any(b.get("id") == uses[boundary]["id"] for b in m["content"]))
        tail = EstimatingCounter().count(system=None, messages=view[first:], tools=None)
        return gain > 0 and gain >= break_even.least_clearing(tail, self._to_come(iteration), self.policy.cache_ttl)

    def _compaction_pays(self, count: int, iteration: int) -> bool:
        return not self.policy.when_it_pays or break_even.compaction_pays(
            count, compaction.SUMMARY_TOKENS, self._to_come(iteration), self.config.model, self.policy.cache_ttl,
            history_cached=self.server_compaction)

    def _before_compaction(self, state: LoopState, iteration: int, count: int, calls: list[ModelCall]) -> None:
        """A compaction is due: checkpoint first, then summarise ourselves if the server cannot."""
        if not self.policy.compaction or count < (self.policy.compaction_trigger or 0) or not self._compaction_pays(count, iteration):
            return
        self.checkpoint(state, calls, "compaction")
        if not self.server_compaction:
            self._summarise(state, iteration, calls)

    def _summarise(self, state: LoopState, iteration: int, calls: list[ModelCall]) -> None:
        cut = compaction.cut_point(state.messages, self.policy.summary_keep_messages)
        if cut is None:
            return
        request = compaction.summary_request(state.messages, cut, self.policy.summary_model or self.config.model)
        started = time.monotonic()
        try:
            with metering.lost_attempts() as lost:
                try:
                    response = self.client.create(**request)
                finally:
                    self._meter_lost(request, lost, iteration, calls, "summarise", model=request["model"])
        except Exception as exc:  # a failed summary must not end the investigation: the next one catches up
            state.summary_failures += 1
            state.decide(iteration, f"summary failed ({type(exc).__name__}); the next one covers this gap")
            return
        calls.append(self._meter(response, self._context(calls, iteration, "summarise", model=request["model"],
                                                         latency_ms=int((time.monotonic() - started) * 1000))))
        text = compaction.summary_text(response)
        if text is None:
            state.summary_failures += 1
            state.decide(iteration, "summary came back empty; the next one covers this gap")
            return
        compaction.fold(state, cut, text, self.runner.events, self.runner.fingerprint, iteration)

    def _params(self, state: LoopState, iteration: int, final: bool, system: list, tools: list, count: int) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.config.model, "max_tokens": self.config.max_tokens, "system": system,
                                  "tools": tools, "messages": caching.request_messages(state.messages, self.policy)}
        thinking = budgets.thinking_budget(self.config.thinking_budget, self.config.complexity, iteration,
                                           self.config.max_iterations, self.config.max_tokens)
        if thinking:
            params["thinking"] = {"type": "enabled", "budget_tokens": thinking}
        elif final:
            params["tool_choice"] = {"type": "tool", "name": SUBMIT_TOOL}
        betas, management = self._management(state, bool(thinking), count, iteration)
        if management:
            params["betas"], params["context_management"] = betas, management
        return params

    def _management(self, state: LoopState, thinking_on: bool, count: int, iteration: int
                    ) -> tuple[list[str], BetaContextManagementConfigParam | None]:
        """The edits of this request: tool-result clearing asks for its break-even (and then holds its boundary until
        moving it pays), the server's compaction is offered only when a summary at its trigger would pay."""
        keep, least, trigger = self._clearing(state, count, iteration) if self.policy.context_editing else (None, None, None)
        self.sent_clearing = ([u["id"] for u in editing.tool_uses(state.messages)], keep) if keep is not None else None
        chosen: list[Any] = editing.edits(self.policy, thinking_on, least, keep, trigger)
        betas = [editing.CONTEXT_MANAGEMENT_BETA] if chosen else []
        if self.server_compaction and self._compaction_pays(max(count, self.policy.compaction_trigger or 0), iteration):
            chosen.append(compaction.compact_edit(self.policy))
            betas.append(compaction.COMPACTION_BETA)
        return betas, (BetaContextManagementConfigParam(edits=chosen) if chosen else None)

    def _context(self, calls: list[ModelCall], iteration: int, phase: str, model: str | None = None,
                 **acted: Any) -> metering.CallContext:
        """The row context of this investigation's next call; `acted` is what the layers did (edits, watcher, checkpoint)."""
        recorded_model, mode = self.client.recorded_as(model or self.config.model, self.config.mode)
        return metering.CallContext(
            run_id=self.runner.run_id, fingerprint=self.runner.fingerprint, model=recorded_model, mode=mode,
            cache_ttl=self.policy.cache_ttl, iteration=iteration, seq=sum(1 for c in calls if c.iteration == iteration),
            phase=phase, **acted)

    def _meter(self, response: Any, context: metering.CallContext) -> ModelCall:
        call = metering.record(response, context)
        self._charge(call)
        return call

    def _meter_lost(self, params: dict[str, Any], lost: list[metering.LostAttempt], iteration: int, calls: list[ModelCall],
                    phase: str, model: str | None = None) -> None:
        """An `unconfirmed` row for each attempt of this call whose answer was lost, charged like any call."""
        for attempt in lost:
            call = metering.unconfirmed(params, attempt, self._context(calls, iteration, phase, model))
            self._charge(call)
            calls.append(call)

    def _charge(self, call: ModelCall) -> None:
        tokens = self._weighted(call)
        self.spent += tokens
        self.run_budget.charge(tokens)

    def _weighted(self, call: ModelCall) -> float:
        return budgets.weighted_tokens(call.usage, self.config.model, self.policy.cache_ttl, batch=call.mode == "batch")

    # checkpoints -------------------------------------------------------------------------------
    def checkpoint(self, state: LoopState, calls: list[ModelCall], trigger: str = "iteration") -> str | None:
        """Write and verify a checkpoint; a failure is recorded as a decision, never raised."""
        if self.checkpoints is None:
            return None
        checkpoint = Checkpoint(
            run_id=self.runner.run_id, fingerprint=self.runner.fingerprint, agent=self.config.agent, model=self.config.model,
            iteration=state.iteration, trigger=trigger,
            examined=list(self.runner.files_examined) + [f"{c.name} (iteration {c.iteration})" for c in self.runner.calls],
            hypotheses=state.hypotheses(), decisions=state.decisions[-20:], next_steps=state.pending_calls(),
            state=state.to_dict(), calls=list(calls), tool_calls=list(self.runner.calls), files_examined=list(self.runner.files_examined),
        )
        try:
            self.last_checkpoint = self.pending_checkpoint = self.checkpoints.save(checkpoint).checkpoint_id
        except CheckpointError as exc:
            state.decide(state.iteration, f"checkpoint not written: {exc}")
            return None
        return self.last_checkpoint
