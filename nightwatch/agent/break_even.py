"""When clearing or compacting the context pays, from the prices and the calls still to come.

Every request re-reads its cached prefix at 0.1x the input price. Clearing old tool results (or
compacting the history into a summary) makes each later request smaller, but it changes the prompt
at the first cleared block, so the request after it writes everything from there on into the cache
again at 1.25x (2x for a 1-hour cache) instead of reading it at 0.1x:

    a clearing of C tokens, in a request of T tokens followed by R more, pays when
        C x 0.1 x (R + 1)  >  (T - C) x (1.25 - 0.1)    i.e.  C > T x 1.15 / (0.1 (R + 1) + 1.15)

so with 10 requests to come a clearing must remove more than half of the prompt, with 20 more than a
third, and with 2 more than three quarters (79%). A compaction also pays for its summary
(written as output at 5x, then cached). The calls still to come are not known: the estimate is as
many as the investigation has made so far, capped by its iteration limit, a rule that errs early
(when nothing pays anyway) and is close in the middle of a long investigation, where it matters.

The thresholds that arm these layers scale with the model's context window rather than being fixed
token counts: a layer is considered from a share of the window on (see ContextPolicy.for_window).
"""

from __future__ import annotations

import math

from nightwatch.pricing import CACHE_READ_MULTIPLIER, CACHE_TTL_SECONDS, CACHE_WRITE_MULTIPLIER, price_for

DEFAULT_WINDOW = 200_000


def context_window(model: str) -> int:
    """The model's context window in tokens: 200K for every current Claude model without the long-context beta (and
    for the offline model, which plays one); the one place to change when a model's window differs."""
    return DEFAULT_WINDOW


def calls_to_come(iteration: int, max_iterations: int) -> int:
    """The requests an investigation is expected to make after this one: as many as it made so far, within its limit."""
    return max(0, min(max_iterations - iteration, iteration))


def least_clearing(prompt_tokens: int, to_come: int, cache_ttl: str = "5m") -> int:
    """The fewest tokens a clearing of a `prompt_tokens` request must remove to pay back its new cache write over
    `to_come` later requests (and the request it applies to)."""
    write, read = CACHE_WRITE_MULTIPLIER.get(cache_ttl, 1.25), CACHE_READ_MULTIPLIER
    return math.ceil(prompt_tokens * (write - read) / (read * (max(0, to_come) + 1) + (write - read)))


def compaction_pays(prompt_tokens: int, summary_tokens: int, to_come: int, model: str, cache_ttl: str = "5m",
                    history_cached: bool = True) -> bool:
    """Whether summarising a `prompt_tokens` history into `summary_tokens` costs less than re-reading it: the
    summary request reads the history once (from the cache when the server compacts; uncached, at 1x, for
    NightWatch's own summary request, whose system prompt and tools differ) and writes the summary as output, the
    next request writes it to the cache."""
    price = price_for(model)
    output_ratio = price.output / price.input if price.input else 5.0
    write, read = CACHE_WRITE_MULTIPLIER.get(cache_ttl, 1.25), CACHE_READ_MULTIPLIER
    saved = (prompt_tokens - summary_tokens) * read * to_come
    spent = prompt_tokens * (read if history_cached else 1.0) + summary_tokens * (output_ratio + write)
    return saved > spent


def cache_expired(answered_at: float | None, now: float, cache_ttl: str = "5m") -> bool:
    """Whether the cached prompt is gone: the last request was answered longer ago than the cache's TTL (a resume after
    a restart, a long tool run). The next request writes the whole prompt again whatever is cleared, so a clearing
    then costs no rewrite of its own: it pays from its first token."""
    return answered_at is not None and now - answered_at > CACHE_TTL_SECONDS.get(cache_ttl, CACHE_TTL_SECONDS["5m"])
