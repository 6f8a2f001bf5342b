"""The emulated Messages API behaves as the documentation says: validation, edits, compaction, caching."""

from __future__ import annotations

from typing import Any

import pytest

from nightwatch.offline.emulated_api import EmulatedAPIError, EmulatedMessagesAPI
from nightwatch.offline.emulated_cache import PromptCache, prompt_blocks
from nightwatch.offline.emulated_edits import CLEARED_TOOL_RESULT

BIG = "x = 1  # filler line of code\n" * 400  # ~3,000 tokens


class Echo:
    """A brain that records what it saw and answers with a fixed text."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def respond(self, request: dict[str, Any]) -> list[dict]:
        self.seen.append(request)
        return [{"type": "text", "text": "ok"}]

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return f"summary of {len(request['messages'])} messages"


def _history(rounds: int, size: str = BIG) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "Investigate."}]}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"f{i}.rb"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"file {i}\n{size}"}]})
    return messages


def _create(api: EmulatedMessagesAPI, messages: list[dict], betas: list[str] | None = None, **extra: Any):
    params = {"model": "claude-sonnet-4-6", "max_tokens": 4000, "system": "You investigate.", "messages": messages, **extra}
    return api.create(**params, betas=betas or [])


def _clear(**kw: Any) -> dict:
    return {"edits": [{"type": "clear_tool_uses_20250919", **kw}]}


def test_context_management_requires_its_beta_header():
    api = EmulatedMessagesAPI(Echo())
    with pytest.raises(EmulatedAPIError, match="context-management-2025-06-27"):
        _create(api, _history(1), context_management=_clear())
    with pytest.raises(EmulatedAPIError, match="compact-2026-01-12"):
        _create(api, _history(1), betas=["context-management-2025-06-27"],
                context_management={"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 60_000}}]})


@pytest.mark.parametrize("config, problem", [
    ({"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "tokens", "value": 5}}]}, "trigger"),
    ({"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": "3"}}]}, "keep"),
    ({"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 10_000}}]}, "at least 50000"),
    ({"edits": [{"type": "clear_thinking_20251015"}]}, "requires thinking"),
    ({"edits": [{"type": "clear_everything"}]}, "unknown edit type"),
])
def test_malformed_edits_are_refused_like_the_api(config, problem):
    with pytest.raises(EmulatedAPIError, match=problem):
        _create(EmulatedMessagesAPI(Echo()), _history(1), betas=["context-management-2025-06-27", "compact-2026-01-12"],
                context_management=config)


def test_clear_thinking_must_come_first_and_compaction_needs_a_capable_model():
    thinking = {"type": "enabled", "budget_tokens": 1024}
    edits = [{"type": "clear_tool_uses_20250919"}, {"type": "clear_thinking_20251015", "keep": "all"}]
    with pytest.raises(EmulatedAPIError, match="must be the first edit"):
        _create(EmulatedMessagesAPI(Echo()), _history(1), betas=["context-management-2025-06-27"], thinking=thinking,
                context_management={"edits": edits})
    with pytest.raises(EmulatedAPIError, match="not supported for model"):
        EmulatedMessagesAPI(Echo()).create(model="claude-haiku-4-5", max_tokens=100, messages=_history(1), betas=["compact-2026-01-12"],
                                           context_management={"edits": [{"type": "compact_20260112"}]})


def test_a_tool_use_without_its_result_is_refused():
    messages = _history(2)
    del messages[2]  # the first tool_result disappears: the pair is split
    with pytest.raises(EmulatedAPIError, match="without `tool_result`"):
        _create(EmulatedMessagesAPI(Echo()), messages)


def test_clearing_keeps_the_last_tool_uses_and_reports_what_it_cleared():
    brain = Echo()
    response = _create(EmulatedMessagesAPI(brain), _history(5), betas=["context-management-2025-06-27"],
                       context_management=_clear(trigger={"type": "input_tokens", "value": 5_000}, keep={"type": "tool_uses", "value": 2}))
    results = [b["content"] for m in brain.seen[0]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    assert results[:3] == [CLEARED_TOOL_RESULT] * 3 and all(r.startswith("file") for r in results[3:])
    edit = response.context_management.applied_edits[0]
    assert edit.type == "clear_tool_uses_20250919" and edit.cleared_tool_uses == 3 and edit.cleared_input_tokens > 8_000


def test_clearing_respects_trigger_clear_at_least_and_exclusions():
    def run(**kw: Any):
        brain = Echo()
        response = _create(EmulatedMessagesAPI(brain), _history(5), betas=["context-management-2025-06-27"], context_management=_clear(**kw))
        return response.context_management.applied_edits, brain.seen[0]
    assert run(trigger={"type": "input_tokens", "value": 100_000})[0] == []
    assert run(keep={"type": "tool_uses", "value": 4}, trigger={"type": "input_tokens", "value": 1_000},
               clear_at_least={"type": "input_tokens", "value": 50_000})[0] == []
    applied, _ = run(trigger={"type": "tool_uses", "value": 3}, keep={"type": "tool_uses", "value": 1}, exclude_tools=["read_file"])
    assert applied == []  # every tool use is excluded


def test_thinking_is_kept_for_the_last_turn_only_unless_told_otherwise():
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "s"}
    messages = _history(3, size="short")
    for m in messages[1::2]:
        m["content"].insert(0, dict(thinking))
    brain = Echo()
    _create(EmulatedMessagesAPI(brain), messages, thinking={"type": "enabled", "budget_tokens": 1024})
    kept = [m for m in brain.seen[0]["messages"] if any(b.get("type") == "thinking" for b in m["content"])]
    assert len(kept) == 1
    brain = Echo()
    response = _create(EmulatedMessagesAPI(brain), messages, betas=["context-management-2025-06-27"],
                       thinking={"type": "enabled", "budget_tokens": 1024},
                       context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]})
    assert sum(1 for m in brain.seen[0]["messages"] for b in m["content"] if b.get("type") == "thinking") == 3
    assert response.context_management.applied_edits == []


def test_compaction_pauses_with_a_block_then_drops_what_it_replaced():
    brain = Echo()
    api = EmulatedMessagesAPI(brain)
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}, "pause_after_compaction": True}
    messages = _history(20)
    paused = _create(api, messages, betas=["compact-2026-01-12"], context_management={"edits": [edit]})
    assert paused.stop_reason == "compaction" and paused.content[0].type == "compaction" and not brain.seen
    assert paused.usage.input_tokens == 0 and paused.usage.iterations[0].type == "compaction"
    assert paused.usage.iterations[0].input_tokens > 50_000
    messages.append({"role": "assistant", "content": [b.to_dict() for b in paused.content]})
    again = _create(api, messages, betas=["compact-2026-01-12"], context_management={"edits": [edit]})
    assert again.stop_reason == "end_turn" and len(brain.seen[0]["messages"]) == 1
    assert again.usage.input_tokens < 1_000  # the model sees the summary only


def test_prompt_cache_writes_then_reads_the_growing_prefix():
    cache = PromptCache()
    mark = {"type": "ephemeral", "ttl": "5m"}
    system = [{"type": "text", "text": BIG, "cache_control": mark}]
    first = [{"role": "user", "content": [{"type": "text", "text": "q1", "cache_control": mark}]}]
    one = cache.account("claude-sonnet-4-6", prompt_blocks(None, system, first))
    assert one.cache_read == 0 and one.cache_write == one.prompt and one.write_5m == one.cache_write
    grown = [{"role": "user", "content": [{"type": "text", "text": "q1"}]}, {"role": "assistant", "content": "a1"},
             {"role": "user", "content": [{"type": "text", "text": "q2", "cache_control": mark}]}]
    two = cache.account("claude-sonnet-4-6", prompt_blocks(None, system, grown))
    assert two.cache_read == one.prompt and two.cache_write == two.prompt - one.prompt and two.input == 0
    other_model = cache.account("claude-opus-4-6", prompt_blocks(None, system, grown))
    assert other_model.cache_read == 0  # caches are per model


def test_prompt_cache_entries_expire_and_short_prefixes_are_not_cached():
    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    blocks = prompt_blocks(None, [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral", "ttl": "5m"}}], [{"role": "user", "content": "q"}])
    cache.account("claude-sonnet-4-6", blocks)
    now[0] = 299.0
    assert cache.account("claude-sonnet-4-6", blocks).cache_read > 0  # a hit refreshes the 5 minutes
    now[0] = 299.0 + 301.0
    assert cache.account("claude-sonnet-4-6", blocks).cache_read == 0
    tiny = prompt_blocks(None, [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}], [{"role": "user", "content": "q"}])
    assert cache.account("claude-sonnet-4-6", tiny).cache_write == 0


def test_more_than_four_breakpoints_are_refused():
    mark = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"s{i}", "cache_control": mark} for i in range(5)]
    with pytest.raises(EmulatedAPIError, match="maximum of 4"):
        EmulatedMessagesAPI(Echo()).create(model="claude-sonnet-4-6", max_tokens=10, system=system, messages=[{"role": "user", "content": "q"}])


def test_the_thinking_keep_never_becomes_the_tool_result_keep():
    """With thinking on, each edit keeps what its own setting says (a held boundary's keep included)."""
    from nightwatch.agent import editing
    from nightwatch.agent.policy import ContextPolicy

    for keep in (None, 7):
        thinking, tools = editing.edits(ContextPolicy(), True, 0, keep)
        assert thinking["keep"] == "all"
        assert tools["keep"] == {"type": "tool_uses", "value": ContextPolicy().clear_tool_uses_keep if keep is None else keep}
