"""The context-management policy of an investigation: every layer a switch with its parameters.

Defaults are the product's: they come from Settings (NIGHTWATCH_ variables), and `ContextPolicy.off()`
is the naive agent the benchmark compares against. Why the defaults are what they are:

- caching: a 5-minute TTL for everything an investigation writes (its research block and its turns:
  no other investigation reads them, and every call of its own re-reads and so refreshes them); the
  prefix every investigation of the night shares (tools and system prompt) gets 5 minutes too
  (NIGHTWATCH_SHARED_CACHE_TTL=1h to change it). Measured (benchmarks/token_efficiency.py, simulated 8 s
  per call): investigations back to back keep a 5-minute prefix warm, since every read refreshes it, and
  the hour's 2x write costs 1-4% more; the hour pays only when investigations sit more than five minutes
  apart (14% cheaper at 6-minute gaps). A night's investigations run back to back under the concurrency
  limit, however long the night. Earlier: a batch night that cached its investigations for 1 hour paid
  2x instead of 1.25x on every write and 52% more in all for the same tokens;
- tool-result clearing fires late (40k tokens) and clears a lot at once (10k at least): every clearing
  invalidates the prompt cache after the cleared block, so small frequent clearings cost more than
  they save; `recall_context` results are never cleared (they are the way back to cleared content);
- thinking: all thinking turns are kept, because clearing them invalidates the cache as well;
- compaction at 50k tokens (the API's minimum), paused so a checkpoint is written and the budget
  checked before the investigation goes on;
- the watcher keeps 15% headroom in an 80k working context, well below the model's window, because
  long contexts cost more and focus worse.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SCHEDULED_TTL = "1h"
INTERACTIVE_TTL = "5m"


@dataclass(frozen=True)
class ContextPolicy:
    prompt_caching: bool = True
    cache_ttl: str = INTERACTIVE_TTL  # research block and conversation turns
    shared_cache_ttl: str = INTERACTIVE_TTL  # tools and system prompt, shared by the night's investigations
    context_editing: bool = True
    clear_tool_uses_trigger: int = 40_000
    clear_tool_uses_keep: int = 4
    clear_tool_uses_at_least: int = 10_000
    clear_exclude_tools: tuple[str, ...] = ("recall_context",)
    clear_thinking_keep: int | str = "all"
    compaction: bool = True
    compaction_trigger: int = 50_000
    summary_model: str | None = None
    summary_keep_messages: int = 4
    watcher: bool = True
    context_budget: int = 80_000
    reserve_ratio: float = 0.15
    checkpoints: bool = True
    lean_tool_results: bool = True  # long files as a window and an outline (agent/file_view.py)

    @classmethod
    def off(cls) -> "ContextPolicy":
        """No layer at all: the full history, uncached, whole files (the benchmark's naive strategy)."""
        return cls(prompt_caching=False, context_editing=False, compaction=False, watcher=False, checkpoints=False,
                   lean_tool_results=False)

    @classmethod
    def from_settings(cls, settings: Any) -> "ContextPolicy":
        """The settings' layers."""
        keep = settings.clear_thinking_keep
        return cls(
            prompt_caching=settings.prompt_caching,
            cache_ttl=INTERACTIVE_TTL,
            shared_cache_ttl=settings.shared_cache_ttl,
            context_editing=settings.context_editing,
            clear_tool_uses_trigger=settings.clear_tool_uses_trigger,
            clear_tool_uses_keep=settings.clear_tool_uses_keep,
            clear_tool_uses_at_least=settings.clear_tool_uses_at_least,
            clear_thinking_keep=int(keep) if str(keep).isdigit() else "all",
            compaction=settings.compaction,
            compaction_trigger=settings.compaction_trigger,
            summary_model=settings.summary_model,
            watcher=settings.context_watcher,
            context_budget=settings.context_budget_tokens,
            reserve_ratio=settings.context_reserve_ratio,
            checkpoints=settings.checkpoints,
            lean_tool_results=settings.lean_tool_results,
        )

    def with_(self, **changes: Any) -> "ContextPolicy":
        return replace(self, **changes)

    @property
    def watcher_limit(self) -> int:
        """The most tokens a request may hold: the working budget minus the reserve."""
        return int(self.context_budget * (1 - self.reserve_ratio))
