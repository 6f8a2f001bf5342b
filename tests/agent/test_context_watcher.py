"""The proactive watcher keeps headroom, compacts the least useful first, and never touches Critical sections."""

from __future__ import annotations

import copy

from nightwatch.agent.break_even import least_clearing
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.loop import run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.watcher import COMPACTED, Watcher
from nightwatch.tokens import EstimatingCounter
from tests.agent.test_context_compaction import _setup
from tests.agent.test_context_live_path import _config
from tests.fakes.anthropic import FakeAnthropic

FOCUS = "NoMethodError email nil orders_controller show"
FILLER = "value = compute(value)\n" * 120  # ~700 tokens, nothing about the error


def _history() -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "## Error\nNoMethodError in orders#show " + FILLER}]}]
    results = ["orders_controller show: @order.user.email\n" + FILLER, "directory listing\n" + FILLER,
               "search email nil\n" + FILLER, "latest result\n" + FILLER]
    names = ["read_file", "list_directory", "search_code", "read_file"]
    for i, (name, text) in enumerate(zip(names, results)):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Step {i}: checking more. " + FILLER},
                                                          {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"n": i}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": text}]})
    return messages


def _watcher(limit: int, events: EventLog | None = None) -> Watcher:
    return Watcher(limit, EstimatingCounter(), FOCUS, events if events is not None else EventLog(), "fp")


def test_nothing_is_compacted_while_there_is_headroom():
    messages = _history()
    before = copy.deepcopy(messages)
    actions, _ = _watcher(100_000).keep_headroom(messages, "system", [], now=5)
    assert actions == 0 and messages == before


def test_lowest_score_goes_first_and_critical_sections_never():
    messages = _history()
    watcher = _watcher(0)  # no budget at all: everything that may go, goes
    order = [s.label for s in sorted(watcher.sections(messages), key=lambda s: s.score(5)) if s.priority != "critical"]
    assert order[0].startswith("list_directory")  # low priority, irrelevant, old
    actions, _ = watcher.keep_headroom(messages, "system", [], now=5)
    assert actions == len(order)
    assert COMPACTED not in str(messages[0]) and COMPACTED not in str(messages[-2:])  # the error, the turn in progress
    assert all(b["tool_use_id"] for m in messages if m["role"] == "user" for b in m["content"] if b.get("type") == "tool_result")


def test_relevant_sections_outlive_irrelevant_ones_of_the_same_age():
    watcher = _watcher(0)
    scores = {s.label: s.score(5) for s in watcher.sections(_history())}
    relevant = next(v for k, v in scores.items() if k.startswith("read_file {'n': 0}"))
    irrelevant = next(v for k, v in scores.items() if k.startswith("search_code"))
    assert relevant > irrelevant * 0.9


def test_compacted_text_stays_recallable():
    events = EventLog()
    messages = _history()
    _watcher(0, events).keep_headroom(messages, "system", [], now=5)
    assert any(e.kind == "compacted" and "Step 0" in e.text for e in events._events)


def test_the_watcher_keeps_every_request_under_the_budget_minus_the_reserve(tmp_path):
    runner, first, script = _setup(tmp_path, 6)
    policy = ContextPolicy(context_editing=False, compaction=False, context_budget=24_000, reserve_ratio=0.15)
    with FakeAnthropic() as fake:
        fake.script(*script)
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner,
                            _config(policy=policy, token_budget=500_000), first)
        prompts = [r.json() for r in fake.message_requests()]
    assert outcome.failure is None and sum(c.watcher_actions for c in outcome.calls) > 0
    counter = EstimatingCounter()
    sizes = [counter.count(system=p["system"], messages=p["messages"], tools=p["tools"]) for p in prompts]
    assert max(sizes) <= policy.watcher_limit


def _count(messages: list[dict]) -> int:
    return EstimatingCounter().count(system="system", messages=messages, tools=[])


def test_an_act_compacts_at_least_its_break_even_not_just_the_overflow():
    just_fits, pays = _history(), _history()
    limit = _count(just_fits) - 50  # 50 tokens over
    _, fits_count = _watcher(limit).keep_headroom(just_fits, "system", [], now=5)
    actions, count = _watcher(limit).keep_headroom(pays, "system", [], now=5, to_come=10)
    before = _count(_history())
    assert before - fits_count < least_clearing(before, 10)  # the overflow alone is less than what pays
    assert before - _count(pays) >= 0.99 * least_clearing(before, 10) and abs(count - _count(pays)) <= actions and actions > 1
    assert _watcher(limit).keep_headroom(pays, "system", [], now=6, to_come=10)[0] == 0  # the next call: room to grow


def test_a_growing_investigation_rewrites_its_cache_less_often_with_the_break_even(tmp_path):
    def acting_calls(when_it_pays: bool) -> tuple[int, int]:
        runner, first, script = _setup(tmp_path / str(when_it_pays), 6)
        policy = ContextPolicy(context_editing=False, compaction=False, context_budget=24_000, reserve_ratio=0.15,
                               when_it_pays=when_it_pays)
        with FakeAnthropic() as fake:
            fake.script(*script)
            outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner,
                                _config(policy=policy, token_budget=500_000), first)
        assert outcome.failure is None
        return sum(1 for c in outcome.calls if c.watcher_actions), len(outcome.calls)

    (at_threshold, calls), (with_break_even, same_calls) = acting_calls(False), acting_calls(True)
    assert calls == same_calls and at_threshold > 1
    assert 0 < with_break_even < at_threshold


def test_with_few_calls_to_come_an_act_never_compacts_more_than_half_the_prompt_for_the_cache():
    messages = _history()
    before = _count(messages)
    watcher = _watcher(before - 50)
    largest = max(s.tokens for s in watcher.sections(messages))
    assert least_clearing(before, 2) > before * 0.75  # what would pay back a rewrite with two calls to come
    actions, _ = watcher.keep_headroom(messages, "system", [], now=5, to_come=2)
    assert actions >= 1 and before - _count(messages) <= before // 2 + largest  # half, to within the last section
