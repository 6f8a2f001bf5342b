"""The live path: the real anthropic SDK against the fake Messages API, through the same loop."""

from __future__ import annotations

from nightwatch.agent.client import AnthropicModelClient, build_model_client
from nightwatch.agent.loop import run_agent
from nightwatch.settings import Settings
from tests.agent.test_agent_loop import VALID, _case, _config, _use
from tests.fakes.anthropic import FakeAnthropic, overloaded, rate_limited, server_error


def test_key_switches_to_the_live_client(monkeypatch):
    assert build_model_client(Settings()).offline
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    client = build_model_client(Settings())
    assert isinstance(client, AnthropicModelClient) and str(client.sdk.base_url).startswith("http://127.0.0.1:9")


def test_investigation_through_the_sdk_with_faults(tmp_path):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        fake.fail_next("POST", "/v1/messages", rate_limited(), overloaded(), server_error())
        client = AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=3)
        outcome = run_agent(client, runner, _config(), first)
        bodies = fake.message_bodies()
    assert outcome.failure is None and outcome.analysis.has_fix
    assert len(bodies) == 4 + 3  # four turns, three of them first refused and retried by the SDK
    assert bodies[0]["system"][0]["cache_control"]["type"] == "ephemeral"
    assert bodies[0]["tools"][-1]["cache_control"]["type"] == "ephemeral"
    assert all(c.model == "claude-sonnet-4-6" for c in outcome.calls)


def test_persistent_overload_is_a_failure_not_a_crash(tmp_path):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        fake.fail_next("POST", "/v1/messages", *[overloaded() for _ in range(5)])
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=1), runner, _config(), first)
    assert outcome.analysis is None and "model call failed" in outcome.failure


def test_thinking_round_trip_over_http(tmp_path):
    _, runner, first = _case(tmp_path)
    thinking = {"type": "thinking", "thinking": "Check the controller.", "signature": "c2lnbmF0dXJl"}
    with FakeAnthropic() as fake:
        fake.script([thinking, _use("list_directory", {"path": "app"})], [_use("submit_analysis", VALID, 2)])
        run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, _config(thinking_budget=2048), first)
        second = fake.message_bodies()[1]
    assert second["messages"][1]["content"][0] == thinking
