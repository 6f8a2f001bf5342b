"""The offline Batches backend behaves like the API: lifecycle, order, cancel, limits, persistence."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from nightwatch.offline.batches import OfflineBatches
from nightwatch.offline.model import OfflineModel
from nightwatch.triage.backends import BatchError
from nightwatch.triage.verdict import parse_answer, route, triage_direct
from tests.triage.test_batches_api import _requests
from tests.triage.test_triage import _error, _traces

T0 = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def test_processing_then_results_in_finishing_order(tmp_path):
    clock = Clock()
    backend = OfflineBatches(tmp_path, OfflineModel(), processing_s=2.0, clock=clock)
    status = backend.create(_requests(6))
    assert status.processing_status == "in_progress" and status.counts["processing"] == 6
    assert status.expires_at == T0 + timedelta(hours=24)
    with pytest.raises(BatchError, match="not ended"):
        list(backend.results(status.batch_id))
    clock.advance(2.0)
    ended = backend.retrieve(status.batch_id)
    assert ended.ended and ended.counts["succeeded"] == 6 and ended.ended_at == T0 + timedelta(seconds=2)
    ids = [e.custom_id for e in backend.results(status.batch_id)]
    assert sorted(ids) == sorted(r["custom_id"] for r in _requests(6)) and ids != [r["custom_id"] for r in _requests(6)]


def test_a_new_process_finds_the_batch_on_disk(tmp_path):
    clock = Clock()
    status = OfflineBatches(tmp_path, OfflineModel(), clock=clock).create(_requests(2))
    clock.advance(5)
    again = OfflineBatches(tmp_path, OfflineModel(), clock=clock)
    assert again.retrieve(status.batch_id).ended
    assert again.find(T0 - timedelta(minutes=5), 2, set()).batch_id == status.batch_id
    assert again.find(T0 - timedelta(minutes=5), 2, {status.batch_id}) is None
    with pytest.raises(BatchError, match="not found"):
        again.retrieve("msgbatch_missing")


def test_cancel_keeps_finished_requests_and_cancels_the_rest(tmp_path):
    clock = Clock()
    backend = OfflineBatches(tmp_path, OfflineModel(), processing_s=4.0, clock=clock)
    status = backend.create(_requests(4))
    clock.advance(2.0)  # half of the requests have finished
    canceled = backend.cancel(status.batch_id)
    assert canceled.ended and canceled.counts == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 2, "expired": 0}
    assert sorted(e.kind for e in backend.results(status.batch_id)) == ["canceled", "canceled", "succeeded", "succeeded"]


def test_creation_refuses_what_the_api_refuses(tmp_path):
    backend = OfflineBatches(tmp_path, OfflineModel())
    bad = _requests(2)
    bad[0]["custom_id"] = "x" * 65
    with pytest.raises(BatchError, match="must match"):
        backend.create(bad)
    twice = _requests(2)
    twice[1]["custom_id"] = twice[0]["custom_id"]
    with pytest.raises(BatchError, match="used twice"):
        backend.create(twice)
    with pytest.raises(BatchError, match="at least one"):
        backend.create([])


def test_offline_batch_answers_route_like_direct_calls(tmp_path):
    from nightwatch.offline.model import OfflineModel
    from nightwatch.triage.verdict import triage_params

    clock = Clock()
    backend = OfflineBatches(tmp_path, OfflineModel(), processing_s=0.5, clock=clock)
    errors = [_error("NoMethodError", "undefined method `email' for nil:NilClass"),
              _error("Net::ReadTimeout", "Net::ReadTimeout", "OtherTransaction/SidekiqJob/SyncJob/perform", None),
              _error("Stripe::AuthenticationError", "Invalid API Key provided")]
    params = {e.fingerprint: triage_params(e, _traces(e), [], "claude-haiku-4-5") for e in errors}
    status = backend.create([{"custom_id": fp, "params": p} for fp, p in params.items()])
    clock.advance(1)
    batch = {e.custom_id: route(e.custom_id, parse_answer(e.content), "batch").route for e in backend.results(status.batch_id)}
    direct = {fp: route(fp, triage_direct(OfflineModel(), p, "r", fp)[0], "offline").route for fp, p in params.items()}
    assert batch == direct and set(batch.values()) == {"deep", "transient", "simple"}
