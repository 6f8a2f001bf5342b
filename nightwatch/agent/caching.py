"""Prompt caching: where the breakpoints go, and how well the cache did.

The API caches prefixes in the order tools, system, messages, and allows four breakpoints. An
investigation uses them so that every call re-reads what the previous one wrote:

1. the last tool definition (tools change only on a forced final turn),
2. the system prompt (the agent definition); these two are the night's shared prefix, whose TTL
   (`shared_cache_ttl`) may be an hour when the night's investigations span more than five minutes,
3. the research block of the first message (prompts.py puts it there),
4. the last block of the newest message, moving each turn, so the whole conversation so far is
   read from the cache by the next call and only the new turn is written.

The history kept by the loop never carries the moving marker: it is added to a copy per request.
"""

from __future__ import annotations

import copy
from typing import Any

from nightwatch.agent.policy import ContextPolicy
from nightwatch.models import TokenUsage


def marker(ttl: str) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": ttl}


def system_blocks(prompt: str, policy: ContextPolicy) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": prompt}
    if policy.prompt_caching:
        block["cache_control"] = marker(policy.shared_cache_ttl)
    return [block]


def tools_with_breakpoint(tools: list[dict[str, Any]], policy: ContextPolicy) -> list[dict[str, Any]]:
    if not policy.prompt_caching or not tools:
        return tools
    return [*tools[:-1], {**tools[-1], "cache_control": marker(policy.shared_cache_ttl)}]


def request_messages(history: list[dict[str, Any]], policy: ContextPolicy) -> list[dict[str, Any]]:
    """The history as sent: the moving breakpoint on the newest block, or no marker at all when off."""
    messages = copy.deepcopy(history)
    if not policy.prompt_caching:
        return [_unmarked(m) for m in messages]
    last = messages[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    if last["content"] and not last["content"][-1].get("cache_control"):
        last["content"][-1]["cache_control"] = marker(policy.cache_ttl)
    return messages


def _unmarked(message: dict[str, Any]) -> dict[str, Any]:
    if isinstance(message["content"], list):
        message["content"] = [{k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]]
    return message


def hit_rate(usage: TokenUsage) -> float:
    """Share of the prompt tokens read from the cache."""
    prompt = usage.input + usage.cache_write + usage.cache_read
    return usage.cache_read / prompt if prompt else 0.0
