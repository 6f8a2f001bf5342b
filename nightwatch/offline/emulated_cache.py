"""Prompt caching as the Messages API documents it, for the offline model and the test server.

The prompt is read as one sequence of blocks in the API's cache order: tools, then system, then each
message's content blocks. A block carrying `cache_control` is a breakpoint. For each breakpoint the
cache is looked up at every block boundary up to 20 blocks back; the longest cached prefix is read
(0.1x), and the prefix up to the breakpoint is written (1.25x for 5 minutes, 2x for one hour) when
it is long enough to cache. Entries are per model, shared by every conversation (as the API shares
them within an organisation), and live for their TTL after their last use.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from nightwatch.pricing import CACHE_TTL_SECONDS
from nightwatch.tokens import PER_MESSAGE_OVERHEAD, PER_TOOL_OVERHEAD, _text_of, estimate_text

LOOKBACK_BLOCKS = 20
# Minimum cacheable prompt length by model family; shorter prefixes are neither written nor read.
MIN_CACHEABLE = (("claude-haiku-4-5", 4096), ("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096),
                 ("claude-opus-4-7", 4096), ("claude-opus-4-8", 4096), ("claude-3-5-haiku", 2048))
DEFAULT_MIN_CACHEABLE = 1024


@dataclass(frozen=True)
class Block:
    """One cacheable unit of the prompt: its tokens, the digest of the prefix ending here, its TTL."""

    tokens: int
    digest: str
    ttl: str | None


@dataclass
class CacheUsage:
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    write_5m: int = 0
    write_1h: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_write + self.cache_read


def min_cacheable(model: str) -> int:
    return next((n for prefix, n in MIN_CACHEABLE if model.startswith(prefix)), DEFAULT_MIN_CACHEABLE)


def prompt_blocks(tools: list[dict] | None, system: Any, messages: list[dict]) -> list[Block]:
    """The prompt as blocks in cache order, each with the running digest of everything before it."""
    out: list[Block] = []
    digest = hashlib.sha256()
    for kind, tokens, block in _units(tools, system, messages):
        digest.update(kind.encode() + _canonical(block))
        ttl = (block.get("cache_control") or {}).get("ttl", "5m") if isinstance(block, dict) and block.get("cache_control") else None
        out.append(Block(tokens, digest.copy().hexdigest(), ttl))
    return out


def _units(tools: list[dict] | None, system: Any, messages: list[dict]):
    for tool in tools or []:
        yield "tool", PER_TOOL_OVERHEAD + estimate_text(json.dumps(_bare(tool))), tool
    for block in ([{"type": "text", "text": system}] if isinstance(system, str) else system or []):
        yield "system", estimate_text(_text_of(block)), block
    for message in messages:
        content = message.get("content", "")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        for i, block in enumerate(blocks):
            overhead = PER_MESSAGE_OVERHEAD if i == 0 else 0
            yield f"{message['role']}{i}", overhead + estimate_text(_text_of(block)), block


def _bare(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def _canonical(block: Any) -> bytes:
    return json.dumps(_bare(block), sort_keys=True, default=str).encode()


class PromptCache:
    """Thread-safe cache of prefix digests with expiry; `account` meters one request."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, float]] = {}  # (model, digest) -> (expiry, ttl seconds)
        self._lock = threading.Lock()

    def account(self, model: str, blocks: list[Block], write: bool = True) -> CacheUsage:
        """Meter one request; `write=False` only reads (a compaction pass reads the cached prefix)."""
        prefix = _prefix_sums(blocks)
        with self._lock:
            now = self._clock()
            read_end = self._read_end(model, blocks, now)
            usage = CacheUsage(cache_read=prefix[read_end])
            written_end = read_end
            for i, block in enumerate(blocks):
                if not write or not block.ttl or prefix[i + 1] < min_cacheable(model):
                    continue  # too short to cache: neither written nor read
                self._touch(model, block, now)
                if i + 1 > written_end:
                    segment = prefix[i + 1] - prefix[written_end]
                    usage.cache_write += segment
                    if block.ttl == "1h":
                        usage.write_1h += segment
                    else:
                        usage.write_5m += segment
                    written_end = i + 1
        usage.input = prefix[-1] - usage.cache_read - usage.cache_write
        return usage

    def _read_end(self, model: str, blocks: list[Block], now: float) -> int:
        """Blocks covered by the longest cached prefix found in any breakpoint's lookback window."""
        best = 0
        for i, block in enumerate(blocks):
            if not block.ttl:
                continue
            for j in range(i, max(-1, i - LOOKBACK_BLOCKS - 1), -1):
                entry = self._entries.get((model, blocks[j].digest))
                if entry is not None and entry[0] > now:
                    best = max(best, j + 1)
                    self._entries[(model, blocks[j].digest)] = (now + entry[1], entry[1])  # a hit refreshes the TTL
                    break
        return best

    def _touch(self, model: str, block: Block, now: float) -> None:
        seconds = CACHE_TTL_SECONDS.get(block.ttl or "5m", CACHE_TTL_SECONDS["5m"])
        self._entries[(model, block.digest)] = (now + seconds, seconds)


def _prefix_sums(blocks: list[Block]) -> list[int]:
    sums = [0]
    for block in blocks:
        sums.append(sums[-1] + block.tokens)
    return sums
