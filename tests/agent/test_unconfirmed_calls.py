"""Every request the server may have billed is metered: an answer lost on the way is an `unconfirmed` row.

The real anthropic SDK against the fake Messages API: garbled 200 bodies, stalls past the client's
timeout and connections reset inside the answer; refusals and requests that never left get no row.
"""

from __future__ import annotations

from datetime import date

import anthropic
import pyarrow.parquet as pq
import pytest
from nightwatch.knowledge_store.metrics import MetricsStore

from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.loop import run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.models import TokenUsage
from nightwatch.offline.model import SUMMARY_TOOL
from nightwatch.pricing import cost_usd
from nightwatch.tokens import EstimatingCounter
from nightwatch.triage.verdict import triage_direct, triage_params
from tests.agent.test_agent_loop import _case, _config
from tests.agent.test_context_compaction import _setup
from tests.agent.test_context_live_path import _config as _config_for
from tests.fakes.anthropic import FakeAnthropic, malformed, overloaded, slow
from tests.fakes.http import Reply
from tests.triage.test_triage import _error, _traces

MESSAGE = {"id": "msg_lost", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "stop_reason": "end_turn",
           "stop_sequence": None, "content": [{"type": "text", "text": "an answer nobody reads"}],
           "usage": {"input_tokens": 1200, "output_tokens": 40}}
GARBLED = {
    "not JSON": malformed(),
    "JSON, not a Message": Reply(200, {"id": "msg_x", "type": "message"}),
    "a Message without usage": Reply(200, {**MESSAGE, "usage": None}),
}


def _client(fake: FakeAnthropic, retries: int, timeout_s: float = 30.0) -> AnthropicModelClient:
    return AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=retries, timeout_s=timeout_s)


def _estimate(body: dict) -> int:
    return EstimatingCounter().count(system=body.get("system"), messages=body["messages"], tools=body.get("tools"))


def _investigate(tmp_path, fake: FakeAnthropic, retries: int, timeout_s: float = 30.0):
    _, runner, first = _case(tmp_path)
    return run_agent(_client(fake, retries, timeout_s), runner, _config(), first)


def _assert_unconfirmed(call, body: dict, model: str = "claude-sonnet-4-6") -> None:
    assert call.status == "unconfirmed" and call.mode == "direct" and call.model == model
    assert call.usage == TokenUsage(input=_estimate(body)) and call.usage.input > 0  # the request's prompt, no output
    assert call.cost_usd == pytest.approx(cost_usd(model, call.usage)) and call.cost_usd > 0


@pytest.mark.parametrize("garble", GARBLED.values(), ids=GARBLED.keys())
def test_a_garbled_answer_is_retried_and_metered_as_unconfirmed(tmp_path, garble):
    with FakeAnthropic() as fake:
        fake.fail_at(2, garble)
        outcome = _investigate(tmp_path, fake, retries=2)
        bodies = fake.message_bodies()
    assert outcome.failure is None and outcome.analysis is not None  # the SDK sent the request again
    assert [c.status for c in outcome.calls] == ["ok", "unconfirmed"] + ["ok"] * (len(bodies) - 2)
    assert len(bodies) == len(outcome.calls)  # every request the server answered has its row
    lost, answered = outcome.calls[1], outcome.calls[2]
    _assert_unconfirmed(lost, bodies[1])
    assert bodies[1] == bodies[2] and lost.iteration == answered.iteration == 2
    assert len({c.call_id for c in outcome.calls}) == len(outcome.calls)
    assert answered.usage.output > 0 and answered.stop_reason


def test_the_unconfirmed_row_reaches_the_model_calls_table(tmp_path):
    with FakeAnthropic() as fake:
        fake.fail_at(1, malformed())
        outcome = _investigate(tmp_path, fake, retries=1)
    path = MetricsStore(tmp_path / "home").write_model_calls("r1", date(2026, 11, 21), "investigate", outcome.calls)
    table = pq.read_table(path).to_pylist()
    assert [r["status"] for r in table] == ["unconfirmed"] + ["ok"] * (len(table) - 1)
    assert table[0]["output_tokens"] == 0 and table[0]["input_tokens"] == outcome.calls[0].usage.input


def test_a_garbled_answer_with_no_retry_left_fails_the_call_and_keeps_the_row(tmp_path):
    with FakeAnthropic() as fake:
        fake.fail_at(2, malformed())
        outcome = _investigate(tmp_path, fake, retries=0)
        bodies = fake.message_bodies()
    assert outcome.interrupted and "RetryableError" in outcome.failure and "unreadable body" in outcome.failure
    assert [c.status for c in outcome.calls] == ["ok", "unconfirmed"] and len(bodies) == 2
    _assert_unconfirmed(outcome.calls[1], bodies[1])


def test_a_stall_past_the_client_timeout_is_an_unconfirmed_row(tmp_path):
    with FakeAnthropic() as fake:
        # a 2 s timeout so that a loaded machine still sends the request before it runs out; the stall outlasts it 5x
        fake.fail_next("POST", "/v1/messages", slow(10))
        outcome = _investigate(tmp_path, fake, retries=0, timeout_s=2.0)
        bodies = fake.message_bodies()
    assert outcome.interrupted and outcome.failure.startswith("model call failed at iteration 1: APITimeoutError")
    assert len(outcome.calls) == 1 and len(bodies) == 1
    _assert_unconfirmed(outcome.calls[0], bodies[0])
    assert outcome.calls[0].latency_ms >= 2000 and outcome.calls[0].phase == "investigate"


def test_a_stall_the_sdk_retries_is_metered_too(tmp_path):
    # The retried calls must answer within the timeout on a loaded machine: a 2 s timeout, a 6 s stall
    with FakeAnthropic() as fake:
        fake.fail_next("POST", "/v1/messages", slow(6))
        outcome = _investigate(tmp_path, fake, retries=2, timeout_s=2.0)
        bodies = fake.message_bodies()
    assert outcome.failure is None and len(bodies) == len(outcome.calls)
    assert [c.status for c in outcome.calls] == ["unconfirmed"] + ["ok"] * (len(bodies) - 1)
    assert outcome.calls[0].call_id == "r1:" + outcome.calls[0].fingerprint + ":investigate:1"
    assert outcome.calls[1].call_id == outcome.calls[0].call_id + ".1"


@pytest.mark.parametrize("cut", ["inside the body", "before any byte"])
def test_a_connection_reset_after_the_request_went_out_is_an_unconfirmed_row(tmp_path, cut):
    answer = Reply(200, MESSAGE)
    with FakeAnthropic() as fake:
        fake.fail_at(1, answer.reset_after_answer() if cut == "inside the body" else Reply(200, MESSAGE, reset_after=0))
        outcome = _investigate(tmp_path, fake, retries=1)
        bodies = fake.message_bodies()
    assert outcome.failure is None and [c.status for c in outcome.calls][:2] == ["unconfirmed", "ok"]
    _assert_unconfirmed(outcome.calls[0], bodies[0])


def test_refusals_and_requests_that_never_left_get_no_row(tmp_path):
    with FakeAnthropic() as fake:
        fake.fail_next("POST", "/v1/messages", overloaded())  # refused with an error body, retried by the SDK
        outcome = _investigate(tmp_path, fake, retries=1)
        bad = Reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}})
        fake.fail_next("POST", "/v1/messages", bad)
        refused = _investigate(tmp_path / "again", fake, retries=1)
    assert outcome.failure is None and all(c.status == "ok" for c in outcome.calls)
    assert refused.failure and "BadRequestError" in refused.failure and refused.calls == []
    _, runner, first = _case(tmp_path / "nowhere")
    nowhere = AnthropicModelClient("sk-ant-x", base_url="http://127.0.0.1:9", max_retries=0, timeout_s=2)
    unreachable = run_agent(nowhere, runner, _config(), first)
    assert "APIConnectionError" in unreachable.failure and unreachable.calls == []  # connection refused: never sent


ERROR = _error("NoMethodError", "undefined method `email' for nil:NilClass")


def _triage(fake: FakeAnthropic, retries: int, timeout_s: float = 30.0):
    params = triage_params(ERROR, _traces(ERROR), [], "claude-haiku-4-5")
    rows: list = []
    answer, call = triage_direct(_client(fake, retries, timeout_s), params, "r1", ERROR.fingerprint, rows)
    return params, rows, answer, call


def test_triage_meters_a_garbled_answer_before_the_answer_it_was_retried_for():
    with FakeAnthropic() as fake:
        fake.fail_at(1, malformed())
        params, rows, answer, call = _triage(fake, retries=1)
    assert answer.severity and rows[-1] is call and [r.status for r in rows] == ["unconfirmed", "ok"]
    _assert_unconfirmed(rows[0], params, model="claude-haiku-4-5")
    assert rows[0].phase == "triage" and rows[0].call_id == f"r1:{ERROR.fingerprint}:triage:direct.lost1"


def test_triage_records_the_lost_call_before_the_error_goes_up():
    params = triage_params(ERROR, _traces(ERROR), [], "claude-haiku-4-5")
    rows: list = []
    with FakeAnthropic() as fake:
        fake.fail_next("POST", "/v1/messages", slow(10))  # as above: the request is sure to arrive, the answer never
        with pytest.raises(anthropic.APITimeoutError):
            triage_direct(_client(fake, retries=0, timeout_s=2.0), params, "r1", ERROR.fingerprint, rows)
    assert [r.status for r in rows] == ["unconfirmed"]
    _assert_unconfirmed(rows[0], params, model="claude-haiku-4-5")


class GarblesASummary(FakeAnthropic):
    """The first summary request (NightWatch's own compaction) is answered with a body that is not JSON."""

    garbled = 0

    def _messages(self, req):
        if not self.garbled and any(t.get("name") == SUMMARY_TOOL for t in (req.json() or {}).get("tools", [])):
            self.garbled += 1
            return malformed()
        return super()._messages(req)


def test_a_lost_summary_answer_is_metered_and_the_investigation_goes_on(tmp_path):
    runner, first, script = _setup(tmp_path, 5)
    policy = ContextPolicy(context_editing=False, watcher=False, compaction_trigger=20_000, summary_keep_messages=2, when_it_pays=False)
    with GarblesASummary() as fake:
        fake.script(*script)
        outcome = run_agent(_client(fake, retries=0), runner, _config_for(model="claude-haiku-4-5", policy=policy), first)
        bodies = fake.message_bodies()
    summaries = [b for b in bodies if b["tools"][0]["name"] == SUMMARY_TOOL]
    lost = [c for c in outcome.calls if c.status == "unconfirmed"]
    assert outcome.failure is None and fake.garbled == 1 and any("summary failed (RetryableError)" in d for d in outcome.decisions)
    assert len(lost) == 1 and lost[0].phase == "summarise" and lost[0].model == "claude-haiku-4-5"
    _assert_unconfirmed(lost[0], summaries[0], model="claude-haiku-4-5")
    assert len(bodies) == len(outcome.calls)
