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
- tool-result clearing is armed from 20% of the model's window (40k tokens of 200k) and clears only what
  pays: every clearing invalidates the prompt cache after the cleared block, so each request asks the
  server to clear at least the break-even amount for the calls still to come (agent/break_even.py); once
  the server cleared, later requests clear exactly as far again (the cache after the boundary holds) and
  move the boundary to the last tool uses only when what that newly clears pays for rewriting the rest
  (moving it every turn, as a fixed `keep` does, rewrote the kept results every turn: on the marathon
  corpus clearing then cost as much as it saved); `recall_context` results are never cleared (they are
  the way back to cleared content);
- thinking: all thinking turns are kept, because clearing them invalidates the cache as well;
- compaction from 25% of the window (50k tokens, the API's minimum) and only when the summary pays for
  itself over the calls still to come; paused so a checkpoint is written and the budget checked before
  the investigation goes on;
- the watcher keeps 15% headroom in a working context of 40% of the window (80k), well below the window
  itself, because long contexts cost more and focus worse.

A token setting (NIGHTWATCH_CLEAR_TOOL_USES_TRIGGER, ...) overrides its share of the window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from nightwatch.agent.break_even import DEFAULT_WINDOW

SCHEDULED_TTL = "1h"
INTERACTIVE_TTL = "5m"
CLEAR_SHARE, COMPACTION_SHARE, BUDGET_SHARE = 0.20, 0.25, 0.40  # of the model's context window
COMPACTION_MINIMUM = 50_000  # the API's least compaction trigger


@dataclass(frozen=True)
class ContextPolicy:
    prompt_caching: bool = True
    cache_ttl: str = INTERACTIVE_TTL  # research block and conversation turns
    shared_cache_ttl: str = INTERACTIVE_TTL  # tools and system prompt, shared by the night's investigations
    context_editing: bool = True
    clear_tool_uses_trigger: int | None = None  # None: CLEAR_SHARE of the model's window
    clear_tool_uses_keep: int = 4
    clear_tool_uses_at_least: int | None = None  # None: the break-even of each request
    clear_exclude_tools: tuple[str, ...] = ("recall_context",)
    clear_thinking_keep: int | str = "all"
    compaction: bool = True
    when_it_pays: bool = True  # clearing and compaction only past their break-even (agent/break_even.py); False: at the thresholds
    compaction_trigger: int | None = None  # None: COMPACTION_SHARE of the window, at least the API's minimum
    summary_model: str | None = None
    summary_keep_messages: int = 4
    watcher: bool = True
    context_budget: int | None = None  # None: BUDGET_SHARE of the window
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

    def for_window(self, window: int) -> "ContextPolicy":
        """The thresholds left to the window as token counts for a model with a `window`-token context."""
        return replace(
            self,
            clear_tool_uses_trigger=self.clear_tool_uses_trigger or int(window * CLEAR_SHARE),
            compaction_trigger=self.compaction_trigger or max(COMPACTION_MINIMUM, int(window * COMPACTION_SHARE)),
            context_budget=self.context_budget or int(window * BUDGET_SHARE),
        )

    def with_(self, **changes: Any) -> "ContextPolicy":
        return replace(self, **changes)

    @property
    def watcher_limit(self) -> int:
        """The most tokens a request may hold: the working budget minus the reserve."""
        budget = self.context_budget or int(DEFAULT_WINDOW * BUDGET_SHARE)
        return int(budget * (1 - self.reserve_ratio))
