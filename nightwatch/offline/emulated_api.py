"""The Messages API's server side, emulated as documented, around a deterministic "brain".

The offline model and the fake HTTP server in the tests both answer through this class, so a night
without credentials and the live path under test exercise the same client code as Claude would:
requests are validated (beta headers, `context_management` shapes, tool_use/tool_result pairing,
cache breakpoints), context edits and compaction are applied to a copy of the history, the brain
answers from what remains, and usage is metered with prompt caching. The facts here come from the
API documentation, not from NightWatch's client modules, so a client that drifts from the docs
fails here.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any, Protocol

from anthropic.types.beta import BetaMessage

from nightwatch.offline import emulated_edits as edits
from nightwatch.offline.emulated_cache import PromptCache, prompt_blocks
from nightwatch.tokens import estimate_text

BETA_CONTEXT_MANAGEMENT = "context-management-2025-06-27"
BETA_COMPACTION = "compact-2026-01-12"
COMPACTION_MODEL_PREFIXES = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8")
MAX_BREAKPOINTS = 4
EDIT_BETAS = {"clear_tool_uses_20250919": BETA_CONTEXT_MANAGEMENT, "clear_thinking_20251015": BETA_CONTEXT_MANAGEMENT,
              "compact_20260112": BETA_COMPACTION}


class EmulatedAPIError(Exception):
    """The error the real API would answer with (HTTP status, error type, message)."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message

    def body(self) -> dict:
        return {"type": "error", "error": {"type": self.kind, "message": self.message}}


class Brain(Protocol):
    """Decides the answer from the request as the model sees it (after edits and compaction)."""

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]: ...

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str: ...


class EmulatedMessagesAPI:
    """A `ModelClient`: `create(**params)` takes what `client.beta.messages.create` takes."""

    name = "emulated"
    offline = True

    def __init__(self, brain: Brain, cache: PromptCache | None = None) -> None:
        self.brain = brain
        self.cache = cache if cache is not None else PromptCache()
        self._ids = itertools.count(1)

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        """An emulation of Claude's API records its calls as Claude's (the offline model says otherwise)."""
        return model, mode

    def create(self, **params: Any) -> BetaMessage:
        betas = list(params.pop("betas", None) or [])
        request = copy.deepcopy(params)
        validate(request, betas)
        request["messages"] = edits.drop_before_compaction(request["messages"])
        config = request.pop("context_management", None)
        applied = _apply_edits(request, (config or {}).get("edits", []))
        compact = next((e for e in (config or {}).get("edits", []) if e["type"] == "compact_20260112"), None)
        if compact and self._prompt_tokens(request) >= (compact.get("trigger") or {}).get("value", edits.DEFAULT_COMPACT_TRIGGER):
            return self._compaction(request, compact, applied, config is not None)
        blocks = self.brain.respond(request)
        usage = self._usage(request, blocks)
        return self._message(request, blocks, usage, applied, config is not None)

    # compaction --------------------------------------------------------------------------------
    def _compaction(self, request: dict, edit: dict, applied: list[dict], managed: bool) -> BetaMessage:
        summary = self.brain.summarise(request, edit.get("instructions"))
        block = {"type": "compaction", "content": summary}
        prompt = self.cache.account(request["model"], _blocks(request), write=False)
        iteration = {"type": "compaction", "input_tokens": prompt.input, "cache_read_input_tokens": prompt.cache_read,
                     "cache_creation_input_tokens": 0, "output_tokens": estimate_text(summary)}
        if edit.get("pause_after_compaction"):
            usage = {"input_tokens": 0, "output_tokens": 0, "iterations": [iteration]}
            return self._message(request, [block], usage, applied, managed, stop="compaction")
        request["messages"] = [{"role": "assistant", "content": [block]}]
        answer = self.brain.respond(request)
        usage = self._usage(request, answer)
        usage["iterations"] = [iteration, {"type": "message", **{k: v for k, v in usage.items() if k != "cache_creation"}}]
        return self._message(request, [block, *answer], usage, applied, managed)

    # metering ----------------------------------------------------------------------------------
    def _prompt_tokens(self, request: dict) -> int:
        return sum(b.tokens for b in _blocks(request))

    def _usage(self, request: dict, answer: list[dict]) -> dict[str, Any]:
        prompt = self.cache.account(request["model"], _blocks(request))
        return {
            "input_tokens": prompt.input,
            "cache_creation_input_tokens": prompt.cache_write,
            "cache_read_input_tokens": prompt.cache_read,
            "cache_creation": {"ephemeral_5m_input_tokens": prompt.write_5m, "ephemeral_1h_input_tokens": prompt.write_1h},
            "output_tokens": sum(estimate_text(json.dumps(b)) for b in answer),
        }

    def _message(self, request: dict, blocks: list[dict], usage: dict, applied: list[dict], managed: bool,
                 stop: str | None = None) -> BetaMessage:
        body: dict[str, Any] = {
            "id": f"msg_emulated_{next(self._ids):06d}", "type": "message", "role": "assistant", "model": request["model"],
            "content": blocks, "usage": usage,
            "stop_reason": stop or ("tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"),
        }
        if managed:
            body["context_management"] = {"applied_edits": applied}
        return BetaMessage.model_validate(body)


def _blocks(request: dict):
    return prompt_blocks(request.get("tools"), request.get("system"), request["messages"])


def _apply_edits(request: dict, configured: list[dict]) -> list[dict]:
    """Edits in the order given; thinking keeps only the last turn when no edit says otherwise."""
    applied: list[dict] = []
    thinking_on = (request.get("thinking") or {}).get("type") == "enabled"
    if thinking_on and not any(e["type"] == "clear_thinking_20251015" for e in configured):
        edits.clear_thinking(request["messages"], {"type": "thinking_turns", "value": 1})
    for edit in configured:
        if edit["type"] == "clear_thinking_20251015":
            done = edits.clear_thinking(request["messages"], edit.get("keep", {"type": "thinking_turns", "value": 1}))
        elif edit["type"] == "clear_tool_uses_20250919":
            tokens = sum(b.tokens for b in _blocks(request))
            done = edits.clear_tool_uses(request["messages"], edit, tokens)
        else:
            continue
        if done:
            applied.append(done)
    return applied


# validation ------------------------------------------------------------------------------------
def validate(request: dict, betas: list[str]) -> None:
    messages = request.get("messages") or []
    if not messages:
        raise EmulatedAPIError("messages: at least one message is required")
    if messages[0]["role"] != "user" and not _starts_with_compaction(messages[0]):
        raise EmulatedAPIError("messages.0.role: the first message must use the user role")
    _check_breakpoints(request)
    _check_tool_pairs(messages)
    _check_thinking(request)
    if request.get("context_management") is not None:
        _check_context_management(request, betas)


def _starts_with_compaction(message: dict) -> bool:
    return any(b.get("type") == "compaction" for b in edits.blocks_of(message))


def _check_breakpoints(request: dict) -> None:
    system = request.get("system")
    blocks = list(request.get("tools") or []) + ([] if isinstance(system, str) else list(system or []))
    blocks += [b for m in request["messages"] for b in edits.blocks_of(m)]
    marked = sum(1 for b in blocks if isinstance(b, dict) and b.get("cache_control"))
    if marked > MAX_BREAKPOINTS:
        raise EmulatedAPIError(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marked}.")


def _check_tool_pairs(messages: list[dict]) -> None:
    for index, message in enumerate(messages):
        uses = [b["id"] for b in edits.blocks_of(message) if b.get("type") == "tool_use"] if message["role"] == "assistant" else []
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = {b.get("tool_use_id") for b in edits.blocks_of(following)} if following and following["role"] == "user" else set()
        missing = [u for u in uses if u not in answered]
        if missing and following is not None:
            raise EmulatedAPIError(f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks immediately after: {', '.join(missing)}")
        if message["role"] == "user":
            before = messages[index - 1] if index else None
            known = {b.get("id") for b in edits.blocks_of(before)} if before and before["role"] == "assistant" else set()
            stray = [b["tool_use_id"] for b in edits.blocks_of(message) if b.get("type") == "tool_result" and b["tool_use_id"] not in known]
            if stray:
                raise EmulatedAPIError(f"messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks: {', '.join(stray)}")


def _check_thinking(request: dict) -> None:
    thinking = request.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens", 0)
    if budget < 1024 or budget >= request.get("max_tokens", 0):
        raise EmulatedAPIError("thinking.budget_tokens: must be at least 1024 and less than max_tokens")
    if (request.get("tool_choice") or {}).get("type") in ("tool", "any"):
        raise EmulatedAPIError("Thinking may not be enabled when tool_choice forces tool use.")


def _check_context_management(request: dict, betas: list[str]) -> None:
    configured = request["context_management"].get("edits") or []
    for position, edit in enumerate(configured):
        kind = edit.get("type")
        if kind not in EDIT_BETAS:
            raise EmulatedAPIError(f"context_management.edits.{position}.type: unknown edit type {kind!r}")
        if EDIT_BETAS[kind] not in betas:
            raise EmulatedAPIError(f"context_management.edits.{position}: {kind} requires the anthropic-beta header '{EDIT_BETAS[kind]}'")
        _check_edit(request, edit, position)


def _check_edit(request: dict, edit: dict, position: int) -> None:
    kind, where = edit["type"], f"context_management.edits.{position}"
    if kind == "clear_thinking_20251015":
        if position != 0:
            raise EmulatedAPIError(f"{where}: clear_thinking_20251015 must be the first edit")
        if (request.get("thinking") or {}).get("type") != "enabled":
            raise EmulatedAPIError(f"{where}: clear_thinking_20251015 requires thinking to be enabled")
        keep = edit.get("keep", {"type": "thinking_turns", "value": 1})
        if not (keep == "all" or (isinstance(keep, dict) and keep.get("type") in ("thinking_turns", "all"))):
            raise EmulatedAPIError(f"{where}.keep: expected {{type: thinking_turns, value}} or 'all'")
    elif kind == "clear_tool_uses_20250919":
        _check_spec(edit.get("trigger"), ("input_tokens", "tool_uses"), f"{where}.trigger")
        _check_spec(edit.get("keep"), ("tool_uses",), f"{where}.keep")
        _check_spec(edit.get("clear_at_least"), ("input_tokens",), f"{where}.clear_at_least")
    else:
        if not request["model"].startswith(COMPACTION_MODEL_PREFIXES):
            raise EmulatedAPIError(f"{where}: compaction is not supported for model {request['model']}")
        _check_spec(edit.get("trigger"), ("input_tokens",), f"{where}.trigger")
        if (edit.get("trigger") or {}).get("value", edits.DEFAULT_COMPACT_TRIGGER) < edits.MIN_COMPACT_TRIGGER:
            raise EmulatedAPIError(f"{where}.trigger.value: must be at least {edits.MIN_COMPACT_TRIGGER}")


def _check_spec(spec: Any, kinds: tuple[str, ...], where: str) -> None:
    if spec is None:
        return
    if not isinstance(spec, dict) or spec.get("type") not in kinds or not isinstance(spec.get("value"), int) or spec["value"] < 0:
        raise EmulatedAPIError(f"{where}: expected {{type: {' | '.join(kinds)}, value: non-negative integer}}")
