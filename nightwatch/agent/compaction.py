"""Compaction: the API's `compact_20260112` where the model has it, NightWatch's own summary otherwise.

Server side: the edit is sent with the `compact-2026-01-12` beta and `pause_after_compaction`, so the
loop checkpoints and checks its budget before going on. The `compaction` block comes back first in
the response; it is kept unchanged in the history, the summary goes to the event log, and the local
history before it is dropped (the API ignores it from then on anyway).

Own summary: the oldest turns are summarised by a model call with a forced
`record_summary` tool, and the summary joins the first message (the error and the instructions stay
as they were). The cut always falls before an assistant turn, so a tool_use is never separated from
its tool_result. A summary that fails leaves the history untouched; the next one starts from the
same place and so catches up everything since the last summary that worked.
"""

from __future__ import annotations

import copy
from typing import Any

from anthropic.types.beta import BetaCompact20260112EditParam

from nightwatch.agent.conversation import LoopState
from nightwatch.agent.policy import COMPACTION_MINIMUM, ContextPolicy
from nightwatch.agent.recall import EventLog

COMPACTION_BETA = "compact-2026-01-12"
SERVER_COMPACTION_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-4-8")
SUMMARY_TOOL = "record_summary"
SUMMARY_TOKENS = 2048  # the most a summary may take (its max_tokens): what the break-even assumes it costs
SUMMARY_HEADING = "## Summary of the investigation so far"
INSTRUCTIONS = (
    "This conversation investigates one production error. Preserve: the error (class, transaction, message, top "
    "in-app frame); every file and line examined, with the exact code lines that matter; the hypotheses and what "
    "confirmed or refuted them; what remains to check. Drop: directory listings, searches that found nothing, dead ends."
)
SUMMARY_SYSTEM = "You keep an investigation's notes. Summarise the conversation so far by calling record_summary. " + INSTRUCTIONS


def server_side(model: str) -> bool:
    """Whether the API compacts for this model (Opus 4.6 / Sonnet 4.6 class)."""
    return model.startswith(SERVER_COMPACTION_MODELS)


def compact_edit(policy: ContextPolicy) -> BetaCompact20260112EditParam:
    return BetaCompact20260112EditParam(
        type="compact_20260112",
        trigger={"type": "input_tokens", "value": policy.compaction_trigger or COMPACTION_MINIMUM},
        pause_after_compaction=True,
        instructions=INSTRUCTIONS,
    )


def absorb(state: LoopState, events: EventLog, fingerprint: str, iteration: int) -> bool:
    """After a response joined the history: if it holds a compaction block, log it and drop what it replaced."""
    for index in range(len(state.messages) - 1, -1, -1):
        blocks = state.messages[index]["content"] if isinstance(state.messages[index]["content"], list) else []
        at = next((i for i, b in enumerate(blocks) if b.get("type") == "compaction"), None)
        if at is None:
            continue
        summary = blocks[at].get("content")
        if not summary:  # a failed compaction is a no-op for the API: keep the history, the next one catches up
            state.decide(iteration, "server compaction returned no summary; history kept")
            return False
        events.append(fingerprint, "summary", f"server compaction at iteration {iteration}", summary, iteration)
        state.messages = [{"role": "assistant", "content": blocks[at:]}] + state.messages[index + 1 :]
        state.compactions += 1
        state.decide(iteration, "server compaction replaced the history before it")
        return True
    return False


def summary_tool() -> dict[str, Any]:
    return {
        "name": SUMMARY_TOOL,
        "description": "Record the summary of the investigation so far.",
        "input_schema": {"type": "object", "properties": {"summary": {"type": "string", "minLength": 1}}, "required": ["summary"]},
    }


def cut_point(messages: list[dict], keep: int) -> int | None:
    """Index of the first kept message: an assistant turn, so every tool_use keeps its tool_result."""
    cut = len(messages) - keep
    while cut > 1 and messages[cut]["role"] != "assistant":
        cut -= 1
    return cut if cut >= 3 else None


def summary_request(messages: list[dict], cut: int, model: str) -> dict[str, Any]:
    """The messages to summarise (the first one with any earlier summary, then the turns up to the cut)."""
    segment = copy.deepcopy(messages[:cut])
    for message in segment:
        if isinstance(message["content"], list):
            message["content"] = [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]
    segment[-1]["content"] = [*segment[-1]["content"], {"type": "text", "text": "Summarise the investigation so far with record_summary."}]
    return {
        "model": model,
        "max_tokens": SUMMARY_TOKENS,
        "system": [{"type": "text", "text": SUMMARY_SYSTEM}],
        "tools": [summary_tool()],
        "tool_choice": {"type": "tool", "name": SUMMARY_TOOL},
        "messages": segment,
    }


def summary_text(response: Any) -> str | None:
    use = next((b for b in response.content if b.type == "tool_use" and b.name == SUMMARY_TOOL), None)
    text = (use.input or {}).get("summary") if use is not None else None
    return text.strip() if isinstance(text, str) and text.strip() else None


def fold(state: LoopState, cut: int, summary: str, events: EventLog, fingerprint: str, iteration: int) -> None:
    """Replace the turns before the cut by the summary, appended to the first message."""
    first = copy.deepcopy(state.messages[0])
    blocks = [b for b in first["content"] if not (b.get("type") == "text" and b["text"].startswith(SUMMARY_HEADING))]
    first["content"] = [*blocks, {"type": "text", "text": f"{SUMMARY_HEADING} (up to iteration {iteration - 1})\n{summary}"}]
    events.append(fingerprint, "summary", f"summary up to iteration {iteration - 1}", summary, iteration)
    state.messages = [first] + state.messages[cut:]
    state.summaries += 1
    state.decide(iteration, f"summarised the history before message {cut}")
