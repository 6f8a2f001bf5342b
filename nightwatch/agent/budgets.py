"""Budgets: tokens per error and per run, iteration limits and thinking budgets by complexity.

Budgets count input-equivalent tokens: what a call cost divided by the model's input price, so a
cache read counts a tenth of a token, a 5-minute cache write 1.25, an output token five (at today's
prices). A budget then buys the same spend however well the cache hits, which raw token totals,
inflated by cheap cache reads, would not.

The run budget is shared by every investigation of a night in one process (thread-safe) and seeded
from the night's `model_calls` ledger, so triage spending and a resumed run's earlier spending count.
"""

from __future__ import annotations

import threading

from nightwatch.models import TokenUsage
from nightwatch.pricing import BATCH_DISCOUNT, CACHE_READ_MULTIPLIER, cache_write_units, price_for

COMPLEXITY_ITERATIONS = {"simple": 0.6, "moderate": 0.85, "complex": 1.0}
COMPLEXITY_THINKING = {"simple": 0.5, "moderate": 1.0, "complex": 1.5}
MIN_ITERATIONS = 4
MIN_THINKING = 1024
PRICED_AS = "claude-sonnet-4"  # the offline model bills nothing; its budget is metered at Sonnet's ratios


class RunBudgetSpent(Exception):
    """The night's token budget is spent: this error keeps its triage verdict."""


def iteration_limit(definition_max: int | None, complexity: str | None, cap: int) -> int:
    """Adaptive iteration limit: simple errors get fewer turns than complex ones. `cap` is the settings' (the
    profile's); a definition that names its own maximum keeps to it."""
    base = min(definition_max, cap) if definition_max else cap
    return max(MIN_ITERATIONS, round(base * COMPLEXITY_ITERATIONS.get(complexity or "moderate", 0.85)))


def thinking_budget(base: int, complexity: str | None, iteration: int, max_iterations: int, max_tokens: int) -> int:
    """Thinking scaled by complexity, front-loaded, in three steps.

    Steps, not a smooth decay: a change of thinking budget invalidates the cached messages, so it
    changes at most twice per investigation (full, half after 40% of the turns, a quarter after 75%).
    """
    if base <= 0:
        return 0
    progress = (iteration - 1) / max(max_iterations - 1, 1)
    step = 1.0 if progress < 0.4 else 0.5 if progress < 0.75 else 0.25
    scaled = int(base * COMPLEXITY_THINKING.get(complexity or "moderate", 1.0) * step)
    return max(MIN_THINKING, min(scaled, max_tokens - 1))


def weighted_tokens(usage: TokenUsage, model: str, cache_ttl: str = "5m", batch: bool = False) -> float:
    """The call's cost in units of uncached input tokens."""
    price = price_for(model) if price_for(model).input else price_for(PRICED_AS)
    tokens = (usage.input + cache_write_units(usage, cache_ttl)
              + usage.cache_read * CACHE_READ_MULTIPLIER + usage.output * price.output / price.input)
    return tokens * (BATCH_DISCOUNT if batch else 1.0)


class RunBudget:
    """Tokens a night may spend on investigations; charged after every call, from any thread."""

    def __init__(self, limit: float, spent: float = 0.0) -> None:
        self.limit = limit
        self._spent = spent
        self._lock = threading.Lock()

    def charge(self, tokens: float) -> None:
        with self._lock:
            self._spent += tokens

    @property
    def spent(self) -> float:
        with self._lock:
            return self._spent

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit

    def require(self, label: str) -> None:
        """Refuse to start an investigation once the night's budget is gone."""
        if self.exhausted:
            raise RunBudgetSpent(f"run token budget spent ({self.spent:,.0f} of {self.limit:,.0f} tokens): "
                                 f"{label} keeps its triage verdict")
