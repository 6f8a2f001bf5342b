"""The price table: one versioned place for what a token costs.

Prices are USD per million tokens. Cache writes cost 1.25x the input price (5-minute TTL) or 2x
(1-hour TTL), cache reads 0.1x, and the Message Batches API halves everything. Model names change:
a name is matched by its family prefix, so `claude-sonnet-4-6-20260101` prices as Sonnet 4.x.
"""

from __future__ import annotations

from dataclasses import dataclass

from nightwatch.models import TokenUsage

PRICE_TABLE_VERSION = "2026-11-01"
BATCH_DISCOUNT = 0.5
CACHE_WRITE_MULTIPLIER = {"5m": 1.25, "1h": 2.0}
CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}  # how long a cached prefix lives after it was last read or written
CACHE_READ_MULTIPLIER = 0.1


@dataclass(frozen=True)
class Price:
    input: float
    output: float


_PRICES: list[tuple[str, Price]] = [
    ("claude-opus-4-1", Price(15.0, 75.0)),
    ("claude-opus-4-0", Price(15.0, 75.0)),
    ("claude-opus-4-2", Price(15.0, 75.0)),
    ("claude-opus-4", Price(5.0, 25.0)),  # Opus 4.5 and later
    ("claude-sonnet-4", Price(3.0, 15.0)),
    ("claude-3-7-sonnet", Price(3.0, 15.0)),
    ("claude-haiku-4", Price(1.0, 5.0)),
    ("claude-3-5-haiku", Price(0.8, 4.0)),
    ("offline", Price(0.0, 0.0)),
    ("nightwatch-offline", Price(0.0, 0.0)),  # the offline model's responses name it so
]
_UNKNOWN = Price(3.0, 15.0)  # priced as Sonnet so an unknown model is never reported as free


def price_for(model: str) -> Price:
    name = model.lower()
    for prefix, price in _PRICES:
        if name.startswith(prefix):
            return price
    return _UNKNOWN


def cache_write_units(usage: TokenUsage, cache_ttl: str = "5m") -> float:
    """Cache writes in units of uncached input tokens, each priced by its TTL: `usage.cache_write_1h` at the
    1-hour rate when the response said how its writes split; otherwise every write at `cache_ttl`'s rate."""
    hour = min(usage.cache_write_1h, usage.cache_write)
    rest_rate = CACHE_WRITE_MULTIPLIER["5m"] if hour else CACHE_WRITE_MULTIPLIER.get(cache_ttl, 1.25)
    return (usage.cache_write - hour) * rest_rate + hour * CACHE_WRITE_MULTIPLIER["1h"]


def cost_usd(model: str, usage: TokenUsage, *, batch: bool = False, cache_ttl: str = "5m") -> float:
    """Cost of one call. `usage.input` excludes cached tokens, as the API reports it; cache writes are priced
    by their TTL (`cache_write_units`)."""
    price = price_for(model)
    per_token_in = price.input / 1_000_000
    cost = (
        usage.input * per_token_in
        + cache_write_units(usage, cache_ttl) * per_token_in
        + usage.cache_read * per_token_in * CACHE_READ_MULTIPLIER
        + usage.output * price.output / 1_000_000
    )
    return round(cost * (BATCH_DISCOUNT if batch else 1.0), 8)
