"""The live Batches backend: the real anthropic SDK against the fake Message Batches API."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import anthropic
import pytest

from nightwatch.offline.batches import OfflineBatches
from nightwatch.triage.backends import AnthropicBatches, BatchError, BatchRefused, entry_from_line
from tests.fakes.anthropic import rate_limited, server_error
from tests.fakes.anthropic_batches import FakeAnthropicBatches

TOOL = {"name": "submit_triage", "input_schema": {"type": "object"}}


def _requests(n: int) -> list[dict]:
    text = "Error class: NoMethodError\nTransaction: Controller/orders/show\n\nTop in-app frame: app/a.rb:3 in `show`"
    return [{"custom_id": f"req-{i}", "params": {"model": "claude-haiku-4-5", "max_tokens": 256, "tools": [TOOL],
                                                 "messages": [{"role": "user", "content": f"{text}\n#{i}"}]}} for i in range(n)]


def _backend(fake: FakeAnthropicBatches, retries: int = 0) -> AnthropicBatches:
    return AnthropicBatches(anthropic.Anthropic(api_key=fake.api_key, base_url=fake.url, max_retries=retries))


def _until_ended(backend: AnthropicBatches, batch_id: str) -> None:
    deadline = time.monotonic() + 5
    while not backend.retrieve(batch_id).ended:
        assert time.monotonic() < deadline, "the fake batch never ended"
        time.sleep(0.02)


def test_lifecycle_counts_and_results_out_of_request_order():
    with FakeAnthropicBatches(processing_s=0.2) as fake:
        backend = _backend(fake)
        status = backend.create(_requests(8))
        assert status.processing_status == "in_progress" and status.counts["processing"] == 8 and status.counts["succeeded"] == 0
        sent = fake.calls("POST", "/v1/messages/batches")[0].headers
        assert fake.api_key in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))
        with pytest.raises(BatchError, match="results"):
            list(backend.results(status.batch_id))  # the SDK refuses: no results_url before the end
        _until_ended(backend, status.batch_id)
        ended = backend.retrieve(status.batch_id)
        entries = list(backend.results(status.batch_id))
    assert ended.counts == {"canceled": 0, "errored": 0, "expired": 0, "processing": 0, "succeeded": 8} and ended.ended_at
    ids = [e.custom_id for e in entries]
    assert sorted(ids) == sorted(f"req-{i}" for i in range(8)) and ids != [f"req-{i}" for i in range(8)]
    first = entries[0]
    assert first.kind == "succeeded" and first.model == "claude-haiku-4-5" and first.usage.input > 0
    assert first.content[0]["type"] == "tool_use" and first.content[0]["name"] == "submit_triage"


def test_every_result_type_becomes_an_entry_and_a_broken_line_costs_one_entry():
    with FakeAnthropicBatches(processing_s=0.05) as fake:
        fake.script_outcomes({"req-1": "errored", "req-2": "expired", "req-3": "canceled", "req-4": "invalid", "req-5": "garbled"})
        backend = _backend(fake)
        status = backend.create(_requests(6))
        _until_ended(backend, status.batch_id)
        counts = backend.retrieve(status.batch_id).counts
        entries = {e.custom_id: e for e in backend.results(status.batch_id)}
    assert counts == {"canceled": 1, "errored": 1, "expired": 1, "processing": 0, "succeeded": 3}
    assert entries["req-0"].kind == "succeeded"
    assert entries["req-1"].kind == "errored" and entries["req-1"].error.startswith("invalid_request_error: max_tokens")
    assert entries["req-2"].kind == "expired" and entries["req-3"].kind == "canceled"
    assert entries["req-4"].kind == "succeeded" and entries["req-4"].content[0]["input"]["severity"] == "apocalyptic"
    assert entries[""].kind == "unreadable" and "not JSON" in entries[""].error


@pytest.mark.parametrize("line", ['{"custom_id": "req-1", "n": ' + "9" * 5000 + "}", b'{"custom_id": "r\xff"}', "{not json"],
                         ids=["an integer past the digit limit", "bytes not UTF-8", "not JSON"])
def test_a_results_line_python_cannot_read_is_unreadable_not_a_crash(line):
    entry = entry_from_line(line)
    assert entry.kind == "unreadable" and entry.error.startswith("results line is not JSON (")


def test_line_that_is_json_but_not_a_result():
    entry = entry_from_line('{"custom_id": "req-9", "result": {"type": "succeeded"}}')
    assert entry.kind == "unreadable" and entry.custom_id == "req-9" and "schema" in entry.error


def test_cancel_ends_the_batch_with_unfinished_requests_canceled():
    with FakeAnthropicBatches(processing_s=None) as fake:
        backend = _backend(fake)
        status = backend.create(_requests(3))
        assert backend.cancel(status.batch_id).processing_status == "canceling"
        _until_ended(backend, status.batch_id)
        kinds = {e.kind for e in backend.results(status.batch_id)}
    assert kinds == {"canceled"}


def test_expiry_keeps_what_finished_and_expires_the_rest():
    with FakeAnthropicBatches(processing_s=None) as fake:
        backend = _backend(fake)
        status = backend.create(_requests(4))
        fake.expire(status.batch_id, after_fraction=0.5)
        kinds = sorted(e.kind for e in backend.results(status.batch_id))
    assert kinds == ["expired", "expired", "succeeded", "succeeded"]


def test_find_adopts_by_size_and_time_and_skips_known_ids():
    with FakeAnthropicBatches(processing_s=None) as fake:
        backend = _backend(fake)
        before = datetime.now(timezone.utc) - timedelta(seconds=1)
        first, second = backend.create(_requests(3)), backend.create(_requests(3))
        backend.create(_requests(2))
        assert backend.find(before, 3, set()).batch_id == first.batch_id
        assert backend.find(before, 3, {first.batch_id}).batch_id == second.batch_id
        assert backend.find(before, 5, set()) is None
        assert backend.find(datetime.now(timezone.utc) + timedelta(minutes=1), 3, set()) is None
        listed = fake.calls("GET", "/v1/messages/batches")
    assert listed and listed[0].query.get("limit") == ["100"]


def test_the_api_refuses_bad_custom_ids_and_duplicates():
    with FakeAnthropicBatches() as fake:
        backend = _backend(fake)
        bad = _requests(2)
        bad[1]["custom_id"] = "has space"
        with pytest.raises(BatchError, match="custom_id"):
            backend.create(bad)
        twice = _requests(2)
        twice[1]["custom_id"] = twice[0]["custom_id"]
        with pytest.raises(BatchRefused, match="duplicate"):
            backend.create(twice)
        assert fake.creates == 0


def test_create_is_never_retried_by_the_sdk_even_when_the_client_retries():
    """A retried POST after a 5xx or a reset that came after the batch was made would make a second batch."""
    with FakeAnthropicBatches() as fake:
        backend = _backend(fake, retries=3)
        fake.fail_next("POST", "/v1/messages/batches", rate_limited())
        with pytest.raises(BatchError, match="create failed: .*429.*slow down") as limited:
            backend.create(_requests(1))
        fake.fail_creates("error_after_create")
        with pytest.raises(BatchError, match="create failed"):
            backend.create(_requests(1))
        posts = len(fake.calls("POST", "/v1/messages/batches"))
        assert backend.retrieve(fake.batch_ids()[0]).size == 1  # other calls keep the client's retries
    assert not isinstance(limited.value, BatchRefused)
    assert posts == 2 and fake.creates == 1  # one POST each; the second made its batch before the 500


@pytest.mark.parametrize("fault, says", [("reset_after_create", "Connection error"), ("reset_before_create", "Connection error"),
                                         ("garbage_after_create", "its answer could not be read")])
def test_a_lost_or_unreadable_create_answer_is_a_batch_error_not_a_crash(fault, says):
    with FakeAnthropicBatches() as fake:
        fake.fail_creates(fault)
        with pytest.raises(BatchError, match=says) as failure:
            _backend(fake, retries=2).create(_requests(2))
        posts = len(fake.calls("POST", "/v1/messages/batches"))
    assert not isinstance(failure.value, BatchRefused) and posts == 1
    assert fake.creates == (0 if fault == "reset_before_create" else 1)


def test_an_outage_is_not_a_refusal():
    with FakeAnthropicBatches() as fake:
        fake.fail_next("POST", "/v1/messages/batches", server_error())
        with pytest.raises(BatchError) as failure:
            _backend(fake).create(_requests(1))
    assert not isinstance(failure.value, BatchRefused) and "create failed" in str(failure.value)


def test_unreachable_api_is_a_named_error():
    backend = AnthropicBatches(anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=0, timeout=1))
    with pytest.raises(BatchError, match="retrieve msgbatch_x failed"):
        backend.retrieve("msgbatch_x")


def test_each_model_client_owns_its_batch_backend_poll_interval_and_recorded_name(tmp_path):
    from nightwatch.agent.client import AnthropicModelClient
    from nightwatch.offline.model import OfflineModel

    claude = AnthropicModelClient("sk-ant-x", base_url="http://127.0.0.1:9")
    live = claude.batch_backend(tmp_path)
    assert isinstance(live, AnthropicBatches) and live.recorded_model("claude-haiku-4-5") == "claude-haiku-4-5"
    assert claude.recorded_as("claude-haiku-4-5", "batch") == ("claude-haiku-4-5", "batch")
    assert claude.poll_interval(15, 300) == (15, 300)
    model = OfflineModel()
    offline = model.batch_backend(tmp_path)
    assert isinstance(offline, OfflineBatches) and offline.root == tmp_path / "batches" / "offline"
    assert offline.recorded_model("claude-haiku-4-5") == "offline" == model.recorded_as("claude-haiku-4-5", "direct")[0]
    assert model.poll_interval(15, 300) == (0.2, 1.0)
