"""The live path against a model that knows nothing of NightWatch: it answers from the tool schemas alone.

The fake's default brain is NightWatch's own offline analyst, which knows what an Analysis holds; a
schema that does not say so goes unnoticed there. `FakeAnthropic(generic=True)` fills each tool's input
from the schema offered in the request, as a model that follows the schema exactly would, and the fake
refuses what the real API refuses (an invalid tool schema, an unknown field, ...) with a 400.
"""

from __future__ import annotations

import anthropic
import httpx
import pytest

from nightwatch.agent.client import build_model_client
from nightwatch.agent.definitions import list_definitions
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SUBMIT_TOOL, CodeCache
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.investigate import AgentKit, Investigation, investigate_error
from nightwatch.models import Analysis
from nightwatch.research import ResearchContext
from nightwatch.runtime import DEMO_APP
from nightwatch.settings import Settings
from nightwatch.triage.verdict import TRIAGE_TOOL, route, triage_direct, triage_params
from tests.builders import app_frame, gem_frame, nil_error, traces_for
from tests.fakes.anthropic import FakeAnthropic, anthropic_env

ERROR = nil_error()
TRACES = traces_for(ERROR, app_frame(line=13), gem_frame())
VALID_REQUEST = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
ECHO = {"name": "echo", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


@pytest.fixture
def generic(monkeypatch):
    """A generic-model fake, and the model client NightWatch builds for it from the environment."""
    with FakeAnthropic(generic=True) as fake:
        for key, value in anthropic_env(fake).items():
            monkeypatch.setenv(key, value)
        yield fake, build_model_client(Settings())


@pytest.mark.parametrize("definition", list_definitions(), ids=lambda d: d.name)
def test_an_investigation_ends_with_a_validated_analysis(generic, definition):
    fake, client = generic
    result = investigate_error(
        Investigation("r1", ERROR, TRACES, ResearchContext(fingerprint=ERROR.fingerprint)),
        AgentKit(definition=definition, model="claude-sonnet-4-6", client=client, cache=CodeCache(LocalRepoHost(DEMO_APP)),
                 events=EventLog(), max_iterations=12, token_budget=200_000),
    )
    assert not client.offline and result.failure is None
    assert isinstance(result.analysis, Analysis) and Analysis.model_validate(result.analysis.model_dump()) == result.analysis
    offered = [t["name"] for t in fake.message_bodies()[0]["tools"]]
    assert [c.name for c in result.tool_calls] == [n for n in offered if n != SUBMIT_TOOL]  # every tool called once, in turn
    assert len(result.model_calls) == len(offered)


def test_a_triage_call_ends_with_a_valid_verdict(generic):
    fake, client = generic
    answer, call = triage_direct(client, triage_params(ERROR, TRACES, [], "claude-haiku-4-5"), "r1", ERROR.fingerprint)
    verdict = route(ERROR.fingerprint, answer, call.mode)
    assert call.mode == "direct" and call.usage.input > 0
    assert verdict.route in ("transient", "simple", "deep") and verdict.severity == answer.severity
    assert fake.message_bodies()[0]["tool_choice"] == {"type": "tool", "name": TRIAGE_TOOL}


def test_a_broken_tool_schema_is_refused_with_a_400(generic):
    _, client = generic
    broken = {"name": "broken", "description": "x", "input_schema": {"type": "objekt"}}
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.create(**VALID_REQUEST, tools=[broken])
    assert refused.value.status_code == 400 and refused.value.body["error"]["type"] == "invalid_request_error"
    assert "tools.0.custom.input_schema" in refused.value.body["error"]["message"]


@pytest.mark.parametrize(("change", "expected"), [
    ({"tools": [{**ECHO, "input_schema": {"type": "string"}}]}, "input_schema.type"),
    ({"tools": [{**ECHO, "input_schema": {"type": "object", "required": "text"}}]}, "JSON schema is invalid"),
    ({"tools": [{**ECHO, "name": "echo tool"}]}, "name: String should match pattern"),
    ({"tools": [{**ECHO, "name": "e" * 65}]}, "name: String should match pattern"),
    ({"tools": [ECHO, ECHO]}, "Tool names must be unique"),
    ({"tools": [ECHO], "tool_choice": {"type": "tool", "name": "shout"}}, "'shout' is not among the tools offered"),
    ({"model": None}, "model: Field required"),
    ({"max_tokens": None}, "max_tokens: Field required"),
    ({"max_tokens": 0}, "max_tokens: Input should be greater than or equal to 1"),
    ({"betas": ["context-management-2025-06-27"]}, "betas: Extra inputs are not permitted"),
    ({"messages": [{"role": "assistant", "content": "hi"}]}, "first message must use the user role"),
], ids=["type-not-object", "invalid-schema", "name-with-space", "name-too-long", "duplicate-names", "forced-tool-not-offered",
        "no-model", "no-max-tokens", "max-tokens-zero", "unknown-field", "assistant-first"])
def test_the_fake_refuses_what_the_api_refuses(change, expected):
    body = {k: v for k, v in {**VALID_REQUEST, **change}.items() if v is not None}
    with FakeAnthropic(generic=True) as fake:
        reply = httpx.post(f"{fake.url}/v1/messages", json=body, headers={"x-api-key": fake.api_key})
    assert reply.status_code == 400 and reply.json()["error"]["type"] == "invalid_request_error"
    assert expected in reply.json()["error"]["message"]


def test_a_valid_request_is_answered_with_a_tool_use_from_the_schema():
    with FakeAnthropic(generic=True) as fake:
        reply = httpx.post(f"{fake.url}/v1/messages", json={**VALID_REQUEST, "tools": [ECHO]}, headers={"x-api-key": fake.api_key})
    assert reply.status_code == 200
    (block,) = reply.json()["content"]
    assert block["type"] == "tool_use" and block["name"] == "echo" and block["input"] == {"text": ""}
    assert reply.json()["usage"]["input_tokens"] > 0


def test_run_test_is_offered_where_tests_can_run_and_a_schema_valid_call_is_answered(generic):
    """The run_test schema passes the API's rules; a call filled from it alone (an empty path) gets an answer the
    model can act on, and the investigation still ends with a validated analysis."""
    fake, client = generic
    ran: list[str] = []
    definition = next(d for d in list_definitions() if d.name == "base-analyzer")
    result = investigate_error(
        Investigation("r1", ERROR, TRACES, ResearchContext(fingerprint=ERROR.fingerprint)),
        AgentKit(definition=definition, model="claude-sonnet-4-6", client=client, cache=CodeCache(LocalRepoHost(DEMO_APP)),
                 events=EventLog(), max_iterations=12, token_budget=200_000,
                 tester=lambda path, content, test: ran.append(path) or "does not reproduce the production error"),
    )
    offered = [t["name"] for t in fake.message_bodies()[0]["tools"]]
    assert "run_test" in offered and result.failure is None
    call = next(c for c in result.tool_calls if c.name == "run_test")
    assert not call.ok and ran == []  # "" is not a test file path: refused before anything runs
