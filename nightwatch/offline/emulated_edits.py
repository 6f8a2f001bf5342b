"""What the Messages API does to a request's context before the model sees it, as documented.

- `clear_thinking_20251015`: thinking blocks of all but the last `keep` assistant turns are removed;
  with thinking on and no such edit, only the last turn's thinking is kept (the API's default).
- `clear_tool_uses_20250919`: once the prompt reaches `trigger`, the oldest tool results (all but the
  last `keep` tool uses, minus `exclude_tools`) are replaced by a placeholder, and their inputs too
  with `clear_tool_inputs`; nothing is cleared unless at least `clear_at_least` tokens would go.
- a `compaction` block drops every message block before it.

The client keeps its full history; these functions work on a copy, as the server does.
"""

from __future__ import annotations

from typing import Any

from nightwatch.tokens import _text_of, estimate_text

CLEARED_TOOL_RESULT = "[tool result cleared by context management]"
CLEARED_TOOL_INPUT: dict[str, Any] = {}
DEFAULT_CLEAR_TRIGGER = 100_000
DEFAULT_CLEAR_KEEP = 3
DEFAULT_COMPACT_TRIGGER = 150_000
MIN_COMPACT_TRIGGER = 50_000


def blocks_of(message: dict) -> list[dict]:
    content = message.get("content", "")
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def drop_before_compaction(messages: list[dict]) -> list[dict]:
    """Everything before the last compaction block is replaced by it (the API drops it)."""
    for index in range(len(messages) - 1, -1, -1):
        blocks = blocks_of(messages[index])
        at = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i].get("type") == "compaction"), None)
        if at is not None:
            return [{**messages[index], "content": blocks[at:]}] + messages[index + 1 :]
    return messages


def clear_thinking(messages: list[dict], keep: Any) -> dict | None:
    """Remove thinking from all but the last `keep` assistant turns; the applied edit, or None."""
    if keep == "all" or (isinstance(keep, dict) and keep.get("type") == "all"):
        return None
    turns = keep.get("value", 1) if isinstance(keep, dict) else int(keep)
    assistant = [m for m in messages if m["role"] == "assistant"]
    cleared_turns = cleared_tokens = 0
    for message in assistant[: max(0, len(assistant) - turns)]:
        thinking = [b for b in blocks_of(message) if b.get("type") in ("thinking", "redacted_thinking")]
        if thinking:
            cleared_turns += 1
            cleared_tokens += sum(estimate_text(_text_of(b)) for b in thinking)
            message["content"] = [b for b in blocks_of(message) if b not in thinking]
    if not cleared_turns:
        return None
    return {"type": "clear_thinking_20251015", "cleared_thinking_turns": cleared_turns, "cleared_input_tokens": cleared_tokens}


def clear_tool_uses(messages: list[dict], edit: dict, prompt_tokens: int) -> dict | None:
    """Apply one clear_tool_uses edit in place; the applied edit, or None when it did not fire."""
    uses = _tool_uses(messages)
    if not _triggered(edit.get("trigger"), prompt_tokens, len(uses)):
        return None
    excluded = set(edit.get("exclude_tools") or [])
    keep = _value(edit.get("keep"), DEFAULT_CLEAR_KEEP)
    candidates = [(index, use, result) for index, use, result in uses[: max(0, len(uses) - keep)]
                  if use["name"] not in excluded and result is not None]
    tokens = sum(_result_tokens(result) for _, _, result in candidates)
    if not candidates or tokens < _value(edit.get("clear_at_least"), 0):
        return None
    inputs = edit.get("clear_tool_inputs")
    for _, use, result in candidates:
        result["content"] = CLEARED_TOOL_RESULT
        if inputs is True or (isinstance(inputs, list) and use["name"] in inputs):
            use["input"] = dict(CLEARED_TOOL_INPUT)
    return {"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(candidates), "cleared_input_tokens": tokens}


def _triggered(trigger: dict | None, prompt_tokens: int, uses: int) -> bool:
    if not trigger:
        return prompt_tokens >= DEFAULT_CLEAR_TRIGGER
    return (uses if trigger["type"] == "tool_uses" else prompt_tokens) >= trigger["value"]


def _value(spec: dict | None, default: int) -> int:
    return int(spec["value"]) if spec else default


def _tool_uses(messages: list[dict]) -> list[tuple[int, dict, dict | None]]:
    """(message index, tool_use block, its tool_result block or None), oldest first."""
    results = {b.get("tool_use_id"): b for m in messages if m["role"] == "user" for b in blocks_of(m) if b.get("type") == "tool_result"}
    out: list[tuple[int, dict, dict | None]] = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            out.extend((index, b, results.get(b["id"])) for b in blocks_of(message) if b.get("type") == "tool_use")
    return out


def _result_tokens(result: dict | None) -> int:
    return estimate_text(_text_of(result.get("content", ""))) if result else 0
