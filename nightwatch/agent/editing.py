"""Server-side context editing: the edits sent with each call and what the response says they did.

`clear_thinking_20251015` goes first (the API requires it) and only when thinking is on;
`clear_tool_uses_20250919` replaces old tool results by a placeholder once the prompt is large.
Both need the `context-management-2025-06-27` beta. The server edits a copy; the loop keeps the full
history, and every result it produced is already in the run's event log, so a cleared result is one
`recall_context` away. What the server cleared is logged too, so recall can say what left the context.

The server clears every result but the last `keep` tool uses', so with a fixed `keep` the cleared
boundary moves with every turn, and each move rewrites the cache from the boundary on (the results kept
after it included). Paying clearings hold it instead: the loop remembers the last tool use cleared and
sends the `keep` that clears exactly as far again, until moving the boundary to the last `keep` uses
pays by the break-even (agent/break_even.py) for what it newly clears.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from anthropic.types.beta import (
    BetaClearThinking20251015EditParam,
    BetaClearToolUses20250919EditParam,
    BetaThinkingTurnsParam,
)

from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"


@dataclass
class AppliedEdits:
    count: int = 0
    tokens_cleared: int = 0
    tool_uses_cleared: int = 0
    thinking_turns_cleared: int = 0


def edits(policy: ContextPolicy, thinking_on: bool, clear_at_least: int | None = None, keep: int | None = None,
          trigger: int | None = None) -> list[BetaClearThinking20251015EditParam | BetaClearToolUses20250919EditParam]:
    """The editing strategies for one call, in the order the API wants them; `clear_at_least` (default: the policy's)
    is the least a tool-result clearing must remove to be applied, `keep` (default: the policy's) the tool uses it
    keeps, `trigger` (default: the policy's) the prompt size from which it applies."""
    if not policy.context_editing:
        return []
    out: list[Any] = []
    if thinking_on:
        turns = policy.clear_thinking_keep
        out.append(BetaClearThinking20251015EditParam(
            type="clear_thinking_20251015",
            keep="all" if turns == "all" else BetaThinkingTurnsParam(type="thinking_turns", value=int(turns)),
        ))
    clear = BetaClearToolUses20250919EditParam(
        type="clear_tool_uses_20250919",
        trigger={"type": "input_tokens", "value": trigger if trigger is not None else policy.clear_tool_uses_trigger or 0},
        keep={"type": "tool_uses", "value": policy.clear_tool_uses_keep if keep is None else keep},
        clear_at_least={"type": "input_tokens", "value": clear_at_least if clear_at_least is not None
                        else policy.clear_tool_uses_at_least or 0},
    )
    if policy.clear_exclude_tools:
        clear["exclude_tools"] = list(policy.clear_exclude_tools)
    out.append(clear)
    return out


def tool_uses(messages: list[dict]) -> list[dict]:
    """Every tool_use block of the history, oldest first (the API's `keep` counts them all)."""
    return [b for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"]


def held(uses: list[dict], cleared_through: str) -> int:
    """How many of `uses` lie at or before the last tool use the server clears (0: none, or it left the history)."""
    ids = [u["id"] for u in uses]
    return ids.index(cleared_through) + 1 if cleared_through in ids else 0


def cleared_ids(uses: list[dict], boundary: int, policy: ContextPolicy) -> frozenset[str]:
    """The tool uses whose results the server clears when it clears through `boundary`."""
    return frozenset(u["id"] for u in uses[:boundary] if u["name"] not in policy.clear_exclude_tools)


def cleared_view(messages: list[dict], cleared: frozenset[str]) -> list[dict]:
    """The history as the model is shown it once the server cleared the results of `cleared`."""
    if not cleared:
        return messages
    out = []
    for message in messages:
        if message["role"] == "user" and isinstance(message["content"], list) and \
                any(b.get("type") == "tool_result" and b.get("tool_use_id") in cleared for b in message["content"]):
            message = {**message, "content": [{**b, "content": CLEARED} if b.get("type") == "tool_result" and b.get("tool_use_id") in cleared
                                               else b for b in message["content"]]}
        out.append(message)
    return out


CLEARED = "[tool result cleared]"  # what a cleared result is counted as (the server's placeholder is of this size)


def applied(response: Any) -> AppliedEdits:
    """The response's `context_management.applied_edits`, summed."""
    management = getattr(response, "context_management", None)
    result = AppliedEdits()
    for edit in (management.applied_edits if management else []) or []:
        result.count += 1
        result.tokens_cleared += getattr(edit, "cleared_input_tokens", 0) or 0
        result.tool_uses_cleared += getattr(edit, "cleared_tool_uses", 0) or 0
        result.thinking_turns_cleared += getattr(edit, "cleared_thinking_turns", 0) or 0
    return result


def log_cleared(events: EventLog, fingerprint: str, history: list[dict], done: AppliedEdits, policy: ContextPolicy,
                logged: list[str], iteration: int) -> None:
    """Log what the server cleared: a note per cleared tool result (its full text is already logged),
    and the text of cleared thinking, which nothing else keeps."""
    assistant = [m for m in history if m["role"] == "assistant" and isinstance(m["content"], list)]
    uses = [b for m in assistant for b in m["content"] if b.get("type") == "tool_use" and b["name"] not in policy.clear_exclude_tools]
    for use in uses[: done.tool_uses_cleared]:
        _once(events, fingerprint, logged, use["id"], "note", f"cleared {use['name']} {use.get('input') or {}}",
              f"Cleared from the model's context at iteration {iteration}.", iteration)
    thinking = [m for m in assistant if any(b.get("type") == "thinking" for b in m["content"])]
    for message in thinking[: done.thinking_turns_cleared]:
        text = "\n".join(b["thinking"] for b in message["content"] if b.get("type") == "thinking")
        _once(events, fingerprint, logged, "thinking-" + hashlib.sha256(text.encode()).hexdigest()[:16], "cleared", "cleared thinking", text, iteration)


def _once(events: EventLog, fingerprint: str, logged: list[str], key: str, kind: str, label: str, text: str, iteration: int) -> None:
    if key not in logged:
        logged.append(key)
        events.append(fingerprint, kind, label, text, iteration)
