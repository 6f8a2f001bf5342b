"""Budgets per error and per run (forced wrap-up, triage verdict kept), iteration and thinking by complexity."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

from nightwatch.agent.budgets import (
    RunBudget,
    RunBudgetSpent,
    iteration_limit,
    thinking_budget,
    weighted_tokens,
)
from nightwatch.agent.definitions import load_definition
from nightwatch.agent.loop import run_agent
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SUBMIT_TOOL, CodeCache
from nightwatch.investigate import AgentKit, Investigation, investigate_error
from nightwatch.models import TokenUsage, TriageVerdict
from nightwatch.night import Night
from nightwatch.offline.model import OfflineModel
from nightwatch.research import ResearchContext
from nightwatch.settings import Settings
from tests.agent.test_agent_loop import VALID, Scripted, _case, _repo, _use
from tests.agent.test_context_live_path import _config


def test_weighted_tokens_price_every_kind_as_input_tokens():
    assert weighted_tokens(TokenUsage(input=1000), "claude-sonnet-4-6") == 1000
    assert weighted_tokens(TokenUsage(cache_read=1000), "claude-sonnet-4-6") == pytest.approx(100)
    assert weighted_tokens(TokenUsage(cache_write=1000), "claude-sonnet-4-6") == pytest.approx(1250)
    assert weighted_tokens(TokenUsage(cache_write=1000), "claude-sonnet-4-6", cache_ttl="1h") == pytest.approx(2000)
    assert weighted_tokens(TokenUsage(output=100), "claude-haiku-4-5") == pytest.approx(500)
    assert weighted_tokens(TokenUsage(input=100), "offline") == 100  # metered as Sonnet, never free


def test_iterations_and_thinking_follow_complexity():
    assert iteration_limit(12, "simple", 12) < iteration_limit(12, "moderate", 12) < iteration_limit(12, "complex", 12) == 12
    assert iteration_limit(12, "simple", 3) == 4  # never below four turns
    assert thinking_budget(0, "complex", 1, 10, 8192) == 0
    steps = [thinking_budget(4096, "moderate", i, 10, 8192) for i in range(1, 11)]
    assert steps[0] == 4096 and len(set(steps)) == 3 and steps == sorted(steps, reverse=True)  # at most two cache breaks
    assert min(steps) >= 1024 and thinking_budget(8000, "complex", 1, 10, 8192) == 8191
    assert thinking_budget(4096, "simple", 1, 10, 8192) < thinking_budget(4096, "complex", 1, 10, 8192)


def test_the_error_budget_forces_a_metered_wrap_up(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use("list_directory", {}, 1)], [_use("list_directory", {"path": "app"}, 2)], [_use(SUBMIT_TOOL, VALID, 3)])
    outcome = run_agent(client, runner, _config(token_budget=200), first)  # one call costs 100 input + 10 output x5
    assert outcome.analysis is not None and outcome.wrapped_up and "this error" in outcome.wrap_reason
    assert [c.phase for c in outcome.calls] == ["investigate", "investigate", "wrapup"]
    last = client.requests[-1]
    assert [t["name"] for t in last["tools"]] == [SUBMIT_TOOL] and "final turn" in last["messages"][-1]["content"][-1]["text"]


def test_a_spent_run_budget_wraps_up_a_running_investigation(tmp_path):
    _, runner, first = _case(tmp_path)
    night = RunBudget(limit=120)
    client = Scripted([_use("list_directory", {}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    outcome = run_agent(client, runner, _config(), first, run_budget=night)
    assert outcome.wrapped_up and "of the run" in outcome.wrap_reason and night.exhausted


def test_no_investigation_starts_once_the_run_budget_is_spent(tmp_path):
    error, runner, _ = _case(tmp_path)
    night = RunBudget(limit=1000, spent=1000)
    with pytest.raises(RunBudgetSpent, match="keeps its triage verdict"):
        investigate_error(Investigation("r1", error, runner.traces, ResearchContext(fingerprint=error.fingerprint),
                                        TriageVerdict(fingerprint=error.fingerprint)),
                          AgentKit(definition=load_definition("base-analyzer"), model="claude-sonnet-4-6", client=OfflineModel(),
                                   cache=CodeCache(_repo(tmp_path / "b")), events=EventLog(), max_iterations=12,
                                   token_budget=60_000, run_budget=night))


def test_the_run_budget_is_one_per_night_and_thread_safe():
    seeded = []
    night = Night(Settings(token_budget_per_run=10_000), datetime(2026, 11, 21, tzinfo=timezone.utc), "night-x")
    first = night.budget(lambda: seeded.append(1) or 500.0)
    assert night.budget(lambda: seeded.append(1) or 0.0) is first and seeded == [1] and first.spent == 500
    threads = [threading.Thread(target=lambda: [first.charge(1) for _ in range(1000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert first.spent == 8500 and not first.exhausted


def test_the_budgets_benchmark_measures_the_profiles_the_settings_define() -> None:
    from benchmarks.default_budgets import PROFILES, limits

    assert PROFILES == ("standard", "deep")
    assert limits("standard") == (12, 60_000) and limits("deep") == (60, 500_000)
