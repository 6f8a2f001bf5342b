"""One model call becomes one `model_calls` row: tokens by kind, cost, and what context management did.

A server-side compaction is billed as its own iteration in `usage.iterations` and is not part of
the top-level usage, so it is added here: the ledger shows what was paid.

Answers that were lost. A request the server may have completed, and billed, but whose answer never
arrived readable (a timeout while waiting for it, the connection lost after the request went out, a
200 whose body is not JSON or not a Message) becomes a row with `status='unconfirmed'`: its input
tokens estimated from the request (nightwatch.tokens' estimator over system, messages and tools),
priced as uncached input, and no output. `AttemptWatch` sees every HTTP attempt of one call, the
SDK's own retries included, and notes each lost one in the innermost `lost_attempts()` block; the
call sites (agent/layers.py, triage.triage_direct) meter those notes whether the call then succeeds
or raises. The SDK raises a garbled 200's JSON error at once and never retries it; `AttemptWatch`
raises the SDK's `RetryableError` instead, so it is retried like any transient error, within the
client's `max_retries`.

Refusals get no row (`status='failed'` is never written for them): an answer with an error status
(429, 5xx, 4xx) was not billed, and neither was a request that never left (connection refused, or
the connection failed while the request was still being written). The refusal shows where the call
failed (the analysis's `failure`, the triage verdict's reason).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anthropic
from anthropic.types.beta import BetaUsage
from pydantic import ValidationError

from nightwatch import clock
from nightwatch.models import ModelCall, TokenUsage
from nightwatch.pricing import PRICE_TABLE_VERSION, cost_usd
from nightwatch.tokens import EstimatingCounter, estimate_text


@dataclass
class CallContext:
    """What the row needs besides the response: who called, in which turn, and what the layers did."""

    run_id: str
    fingerprint: str
    model: str
    mode: str
    cache_ttl: str
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
        cache_write_1h=getattr(getattr(u, "cache_creation", None), "ephemeral_1h_input_tokens", 0) or 0,
    )
    for step in getattr(u, "iterations", None) or []:
        if step.type == "compaction":
            usage = usage + TokenUsage(input=step.input_tokens, output=step.output_tokens,
                                       cache_write=step.cache_creation_input_tokens, cache_read=step.cache_read_input_tokens)
    return usage


def compactions_in(response: Any) -> int:
    return sum(1 for b in response.content if b.type == "compaction")


def _call_id(ctx: CallContext) -> str:
    return f"{ctx.run_id}:{ctx.fingerprint}:{ctx.phase}:{ctx.iteration}" + (f".{ctx.seq}" if ctx.seq else "")


def record(response: Any, ctx: CallContext) -> ModelCall:
    """The row of an answered call (`ctx.model` and `ctx.mode` as the client records them), priced by the model that
    answered (`response.model`)."""
    usage = usage_of(response)
    return ModelCall(
        call_id=_call_id(ctx),
        run_id=ctx.run_id, fingerprint=ctx.fingerprint, phase=ctx.phase, iteration=ctx.iteration,
        model=ctx.model, mode=ctx.mode, usage=usage,
        cost_usd=cost_usd(getattr(response, "model", None) or ctx.model, usage, batch=ctx.mode == "batch", cache_ttl=ctx.cache_ttl),
        price_table=PRICE_TABLE_VERSION, latency_ms=ctx.latency_ms, stop_reason=response.stop_reason or "",
        edits_applied=ctx.edits_applied, tokens_cleared=ctx.tokens_cleared,
        compactions=ctx.compactions + compactions_in(response), watcher_actions=ctx.watcher_actions,
        checkpoint_id=ctx.checkpoint_id,
    )


# answers that were lost ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LostAttempt:
    """One HTTP attempt that reached the server but whose answer did not come back readable."""

    reason: str
    started_at: datetime
    latency_ms: int


_LOST: ContextVar[list[LostAttempt] | None] = ContextVar("nightwatch_lost_attempts", default=None)
# transport failures while connecting or writing the request: it never reached the server whole
_NEVER_SENT = {"ConnectError", "ConnectTimeout", "PoolTimeout", "WriteError", "WriteTimeout", "UnsupportedProtocol",
               "LocalProtocolError", "ProxyError"}


@contextmanager
def lost_attempts() -> Iterator[list[LostAttempt]]:
    """Collect the lost attempts of the model calls made inside the block (in this thread only)."""
    lost: list[LostAttempt] = []
    token = _LOST.set(lost)
    try:
        yield lost
    finally:
        _LOST.reset(token)


def estimated_usage(params: dict[str, Any]) -> TokenUsage:
    """What a request's input would cost, estimated: its whole prompt as uncached input, no output."""
    tokens = EstimatingCounter().count(system=params.get("system"), messages=params.get("messages") or [], tools=params.get("tools"))
    return TokenUsage(input=tokens)


def unconfirmed(params: dict[str, Any], lost: LostAttempt, ctx: CallContext) -> ModelCall:
    """The row of an attempt whose answer was lost: estimated input, no output, `status='unconfirmed'`."""
    usage = estimated_usage(params)
    return ModelCall(
        call_id=_call_id(ctx), run_id=ctx.run_id, fingerprint=ctx.fingerprint, phase=ctx.phase, iteration=ctx.iteration,
        model=ctx.model, mode=ctx.mode, usage=usage,
        cost_usd=cost_usd(ctx.model, usage, batch=ctx.mode == "batch", cache_ttl=ctx.cache_ttl), price_table=PRICE_TABLE_VERSION,
        latency_ms=lost.latency_ms, started_at=lost.started_at, status="unconfirmed",
    )


def never_sent(exc: BaseException) -> bool:
    """The transport failed before the whole request was out (so the server cannot have answered, nor billed, it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(kind.__name__ in _NEVER_SENT for kind in type(current).__mro__):
            return True
        current = current.__cause__
    return False


def unreadable(body: bytes | str) -> str | None:
    """Why a 200 body is not a usable Message, or None. Checks what metering and the loop read, no more: a content
    block of a type this SDK does not know yet is still a billed, usable answer, not a reason to pay again."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        return f"the body is not JSON ({exc})"
    if not isinstance(data, dict) or data.get("type") != "message":
        return "the body is not a Message"
    content = data.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
        return "the Message has no readable content"
    try:
        BetaUsage.model_validate(data.get("usage"))
    except ValidationError:
        return "the Message has no readable usage"
    return None


class AttemptWatch(anthropic.Middleware):
    """Sees each HTTP attempt of one Messages call (AnthropicModelClient.create installs one per call).

    An attempt whose answer was lost is noted in the caller's `lost_attempts()` block and re-raised, so the SDK
    retries it or gives up as it would anyway; a garbled 200 is noted and raised as `RetryableError`.
    """

    def __init__(self) -> None:
        self.lost = _LOST.get()

    def handle(self, request: anthropic.APIRequest, call_next: anthropic.CallNext) -> anthropic.APIResponse[Any]:
        at, started = clock.now(), time.monotonic()
        try:
            response = call_next(request)
        except anthropic.APIConnectionError as exc:
            if not never_sent(exc):
                cause = exc.__cause__
                why = "timed out waiting for the answer" if isinstance(exc, anthropic.APITimeoutError) else \
                    f"connection lost before the answer was read ({type(cause).__name__ if cause else type(exc).__name__})"
                self._note(why, at, started)
            raise
        if request.stream or not response.http_response.is_success:
            return response
        problem = unreadable(response.http_response.content)
        if problem is not None:
            self._note(f"unreadable answer: {problem}", at, started)
            raise anthropic.RetryableError(f"the Messages API answered 200 with an unreadable body: {problem}")
        return response

    def _note(self, reason: str, at: datetime, started: float) -> None:
        if self.lost is not None:
            self.lost.append(LostAttempt(reason=reason, started_at=at, latency_ms=int((time.monotonic() - started) * 1000)))
