"""When clearing and compaction pay: the break-even against the documented cache prices, and the layers acting on it."""

from __future__ import annotations

import pytest

from nightwatch.agent.break_even import cache_expired, calls_to_come, compaction_pays, context_window, least_clearing
from nightwatch.agent.policy import ContextPolicy
from nightwatch.pricing import CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER


def billed(prompt: int, cleared: int, to_come: int, ttl: str = "5m") -> tuple[float, float]:
    """Input-equivalent tokens of the next `to_come` + 1 requests of a fully cached `prompt`, kept and cleared
    (the clearing rewrites what follows the cleared block; here, conservatively, all that is left)."""
    write, read = CACHE_WRITE_MULTIPLIER[ttl], CACHE_READ_MULTIPLIER
    kept = prompt * read * (to_come + 1)
    cleared_cost = (prompt - cleared) * write + (prompt - cleared) * read * to_come
    return kept, cleared_cost


@pytest.mark.parametrize("to_come", [1, 3, 10, 20, 40])
@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_the_least_clearing_is_where_clearing_stops_costing_more(to_come, ttl):
    prompt = 60_000
    least = least_clearing(prompt, to_come, ttl)
    kept, at_least = billed(prompt, least, to_come, ttl)
    _, just_short = billed(prompt, least - 200, to_come, ttl)
    assert at_least <= kept + 1 and just_short > kept  # pays at the break-even, not 200 tokens below it


def test_a_clearing_needs_more_of_the_prompt_the_fewer_calls_are_left():
    shares = [least_clearing(100_000, n) / 100_000 for n in (2, 5, 10, 20, 40)]
    assert shares == sorted(shares, reverse=True)
    assert 0.51 < shares[2] < 0.52 and 0.35 < shares[3] < 0.36  # 1.15 / (0.1 (n + 1) + 1.15)
    assert least_clearing(100_000, 0) == 92_000  # with nothing to come, only a clearing of almost everything pays


def test_calls_to_come_are_as_many_as_so_far_within_the_limit():
    assert [calls_to_come(i, 24) for i in (1, 5, 12, 20, 24)] == [1, 5, 12, 4, 0]


def test_a_summary_pays_only_for_a_long_history_with_calls_to_come():
    assert not compaction_pays(50_000, 2_048, 1, "claude-sonnet-4-6")
    assert compaction_pays(50_000, 2_048, 10, "claude-sonnet-4-6")
    assert not compaction_pays(8_000, 2_048, 10, "claude-sonnet-4-6")  # the summary's output costs more than it saves


def test_thresholds_are_shares_of_the_window_unless_set_in_tokens():
    assert context_window("claude-sonnet-4-6") == 200_000
    policy = ContextPolicy().for_window(200_000)
    assert (policy.clear_tool_uses_trigger, policy.compaction_trigger, policy.context_budget) == (40_000, 50_000, 80_000)
    small = ContextPolicy().for_window(100_000)
    assert (small.clear_tool_uses_trigger, small.compaction_trigger, small.context_budget) == (20_000, 50_000, 40_000)
    assert ContextPolicy(clear_tool_uses_trigger=9_000).for_window(200_000).clear_tool_uses_trigger == 9_000


def test_an_own_summary_reads_the_history_uncached_so_it_needs_more_calls_to_come():
    paying = [n for n in range(1, 30) if compaction_pays(50_000, 2_048, n, "claude-sonnet-4-5", history_cached=False)]
    assert paying[0] > min(n for n in range(1, 30) if compaction_pays(50_000, 2_048, n, "claude-sonnet-4-5")) and paying[0] >= 10


def test_a_task_of_a_night_that_is_over_fails_instead_of_going_on_with_other_clients():
    import contextvars
    from datetime import datetime, timezone

    from nightwatch.night import Night, NightOver, current, scope
    from nightwatch.settings import Settings

    with scope(Night(Settings(), datetime(2026, 11, 21, tzinfo=timezone.utc), "night/a1")) as night:
        assert current("night/a1") is night and current("night/other") is None
        task_context = contextvars.copy_context()  # what Prefect gives a task thread
    assert night.closed and current("night/a1") is None  # the flow's own context is reset
    with pytest.raises(NightOver, match="night night/a1 is over"):
        task_context.run(current, "night/a1")


def test_the_cache_is_gone_once_its_ttl_passed_since_the_last_answer():
    assert not cache_expired(None, 10_000.0)  # nothing was cached yet
    assert not cache_expired(1_000.0, 1_299.0) and cache_expired(1_000.0, 1_301.0)
    assert not cache_expired(1_000.0, 4_500.0, "1h") and cache_expired(1_000.0, 4_601.0, "1h")
