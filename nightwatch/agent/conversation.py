"""The state of one investigation's conversation: what a checkpoint saves and a retry restores.

Everything here is plain JSON (message params as sent, flags, counters), so a checkpoint can hold it
and a resumed loop continues exactly where the interrupted one stopped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class LoopState:
    messages: list[dict[str, Any]]
    iteration: int = 0  # the last completed iteration
    retried: bool = False  # the one schema retry was used
    nudged: bool = False  # the one "answer with the tool" nudge was used
    noted: bool = False  # the final-turn note was added
    wrap_reason: str = ""  # why the final turn was forced, if it was
    summaries: int = 0  # NightWatch's own summaries so far
    summary_failures: int = 0  # failed summaries, caught up by the next one
    compactions: int = 0  # server-side compactions seen
    cleared_through: str = ""  # the last tool use whose result the server clears ("" while nothing is cleared)
    logged: list[str] = field(default_factory=list)  # what the event log already has (cleared notes)
    decisions: list[str] = field(default_factory=list)  # what the loop decided and when, for checkpoints
    answered_at: float | None = None  # when the last model call was answered (the loop's clock): the cache's age

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LoopState":
        """A saved state; a field this version does not keep (a checkpoint another version wrote) is left out, and one
        it does not find takes its default."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def decide(self, iteration: int, text: str) -> None:
        self.decisions.append(f"iteration {iteration}: {text}")

    def append_text(self, text: str) -> None:
        """Add text to the pending user turn (after tool results), or open a user turn for it."""
        last = self.messages[-1]
        if last["role"] == "user" and isinstance(last["content"], list):
            last["content"] = [*last["content"], {"type": "text", "text": text}]
        else:
            self.messages.append({"role": "user", "content": [{"type": "text", "text": text}]})

    def append_assistant(self, content: list[dict[str, Any]]) -> None:
        """A continuation after a compaction pause extends that assistant turn instead of starting another."""
        last = self.messages[-1]
        if last["role"] == "assistant":
            last["content"] = [*last["content"], *content]
        else:
            self.messages.append({"role": "assistant", "content": content})

    def hypotheses(self, limit: int = 3) -> list[str]:
        """The model's latest statements: its current working hypotheses."""
        texts = [b["text"] for m in self.messages if m["role"] == "assistant" and isinstance(m["content"], list)
                 for b in m["content"] if b.get("type") == "text" and b.get("text", "").strip()]
        return texts[-limit:]

    def pending_calls(self) -> list[str]:
        """The tools the model asked for last: its next steps."""
        for message in reversed(self.messages):
            if message["role"] == "assistant" and isinstance(message["content"], list):
                return [f"{b['name']} {b.get('input') or {}}" for b in message["content"] if b.get("type") == "tool_use"]
        return []
