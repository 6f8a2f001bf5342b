"""One model call becomes one `model_calls` row: tokens by kind, cost, and what context management did.

A server-side compaction is billed as its own iteration in `usage.iterations` and is not part of
the top-level usage, so it is added here: the ledger shows what was paid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nightwatch.models import ModelCall, TokenUsage
from nightwatch.pricing import PRICE_TABLE_VERSION, cost_usd
from nightwatch.tokens import estimate_text


@dataclass
class CallContext:
    """What the row needs besides the response: who called, in which turn, and what the layers did."""

    run_id: str
    fingerprint: str
    model: str
    mode: str
    cache_ttl: str
    offline: bool
    iteration: int
    seq: int
    phase: str = "investigate"
    latency_ms: int = 0
    edits_applied: int = 0
    tokens_cleared: int = 0
    compactions: int = 0
    watcher_actions: int = 0
    checkpoint_id: str | None = None


def usage_of(response: Any) -> TokenUsage:
    u = response.usage
    usage = TokenUsage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_write=u.cache_creation_input_tokens or 0,
        cache_read=u.cache_read_input_tokens or 0,
        thinking=sum(estimate_text(b.thinking) for b in response.content if b.type == "thinking"),
    )
    for step in getattr(u, "iterations", None) or []:
        if step.type == "compaction":
            usage = usage + TokenUsage(input=step.input_tokens, output=step.output_tokens,
                                       cache_write=step.cache_creation_input_tokens, cache_read=step.cache_read_input_tokens)
    return usage


def compactions_in(response: Any) -> int:
    return sum(1 for b in response.content if b.type == "compaction")


def record(response: Any, ctx: CallContext) -> ModelCall:
    usage = usage_of(response)
    model = "offline" if ctx.offline else ctx.model
    return ModelCall(
        call_id=f"{ctx.run_id}:{ctx.fingerprint}:{ctx.phase}:{ctx.iteration}" + (f".{ctx.seq}" if ctx.seq else ""),
        run_id=ctx.run_id, fingerprint=ctx.fingerprint, phase=ctx.phase, iteration=ctx.iteration,  # type: ignore[arg-type]
        model=model, mode="offline" if ctx.offline else ctx.mode, usage=usage,  # type: ignore[arg-type]
        cost_usd=cost_usd(model, usage, batch=ctx.mode == "batch", cache_ttl=ctx.cache_ttl),
        price_table=PRICE_TABLE_VERSION, latency_ms=ctx.latency_ms, stop_reason=response.stop_reason or "",
        edits_applied=ctx.edits_applied, tokens_cleared=ctx.tokens_cleared,
        compactions=ctx.compactions + compactions_in(response), watcher_actions=ctx.watcher_actions,
        checkpoint_id=ctx.checkpoint_id,
    )
