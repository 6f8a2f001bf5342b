"""The batch path's core: submit once (even across crashes), poll with backoff, collect and fall back."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import anthropic
import pytest

from nightwatch.pricing import cost_usd
from nightwatch.research import ResearchContext
from nightwatch.triage.backends import AnthropicBatches, BatchError, BatchRefused
from nightwatch.triage.batch import PollPolicy, collect, new_ledger, submit_or_resume, wait_for_batches
from nightwatch.triage.ledger import LedgerError, LedgerStore, ledger_key
from nightwatch.triage.plan import plan_night
from tests.fakes.anthropic import server_error
from tests.fakes.anthropic_batches import FakeAnthropicBatches
from tests.fakes.http import Reply
from tests.triage.test_triage import _error, _traces

KEY = ledger_key("20261120T0600-20261121T0600", "claude-haiku-4-5")
FAST = PollPolicy(initial_s=0.02, max_s=0.05, hold_s=None, deadline_s=3600)
ERRORS = [
    _error("NoMethodError", "undefined method `email' for nil:NilClass"),
    _error("KeyError", "key not found: :order_id", "Controller/webhooks/stripe"),
    _error("Net::ReadTimeout", "Net::ReadTimeout with #<TCPSocket:(closed)>", "OtherTransaction/SidekiqJob/SyncJob/perform", None),
    _error("Stripe::AuthenticationError", "Invalid API Key provided", "Controller/checkout/create"),
    _error("ZeroDivisionError", "divided by 0", "Controller/checkout/show"),
    _error("TypeError", "nil can't be coerced into Integer", "Controller/products/index"),
]


def _plan(budget: int = 10**7):
    return plan_night("run-1", [(e, _traces(e), ResearchContext(fingerprint=e.fingerprint)) for e in ERRORS], "claude-haiku-4-5", budget)


def _backend(fake: FakeAnthropicBatches) -> AnthropicBatches:
    return AnthropicBatches(anthropic.Anthropic(api_key=fake.api_key, base_url=fake.url, max_retries=0))


def test_the_ledger_is_on_disk_before_polling_and_a_rerun_submits_nothing(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        first = submit_or_resume(_backend(fake), store, KEY, "run-1", _plan().batches)
        on_disk = store.load(KEY)
        assert on_disk is not None and on_disk.batch_ids() == first.batch_ids() and len(first.batch_ids()) == 1
        assert set(on_disk.batches[0].custom_ids.values()) == {e.fingerprint for e in ERRORS}
        # the run dies here; a retried task, a rerun flow and another process all resume the same batch
        for run_id in ("run-1", "run-2", "run-3"):
            again = submit_or_resume(_backend(fake), LedgerStore(tmp_path), KEY, run_id, _plan().batches)
            assert again.batch_ids() == first.batch_ids() and again.run_id == "run-1"
        assert fake.creates == 1


def test_a_batch_created_but_never_recorded_is_adopted_not_created_again(tmp_path):
    store = LedgerStore(tmp_path)
    plan = _plan()
    with FakeAnthropicBatches(processing_s=None) as fake:
        store.save(new_ledger(KEY, "run-1", plan.batches, datetime.now(timezone.utc)))  # the plan was saved ...
        orphan = _backend(fake).create([r.batch_request() for r in plan.requests])  # ... the create went through, then the crash
        resumed = submit_or_resume(_backend(fake), store, KEY, "run-2", plan.batches)
        assert resumed.batch_ids() == [orphan.batch_id] and fake.creates == 1
        assert fake.calls("GET", "/v1/messages/batches")  # found through the list endpoint


def test_a_plan_over_budget_is_several_batches_each_recorded(tmp_path):
    plan = _plan(budget=2 * _plan().requests[0].est_tokens + 1)
    assert len(plan.batches) >= 3
    with FakeAnthropicBatches(processing_s=0.05) as fake:
        ledger = submit_or_resume(_backend(fake), LedgerStore(tmp_path), KEY, "run-1", plan.batches)
        ledger = wait_for_batches(_backend(fake), LedgerStore(tmp_path), ledger, FAST)
        ledger = collect(_backend(fake), LedgerStore(tmp_path), KEY, "run-1", "claude-haiku-4-5")
    assert fake.creates == len(plan.batches) == len(ledger.batch_ids())
    assert set(ledger.outcomes) == {e.fingerprint for e in ERRORS} and not ledger.fallbacks


class FakeTime:
    def __init__(self) -> None:
        self.t, self.sleeps = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    def clock(self) -> float:
        return self.t


def test_polling_backs_off_and_returns_when_the_hold_is_spent(tmp_path):
    store, time_ = LedgerStore(tmp_path), FakeTime()
    with FakeAnthropicBatches(processing_s=None) as fake:
        ledger = submit_or_resume(_backend(fake), store, KEY, "run-1", _plan().batches)
        policy = PollPolicy(initial_s=1, max_s=4, hold_s=20, deadline_s=3600)
        waited = wait_for_batches(_backend(fake), store, ledger, policy, sleep=time_.sleep, clock=time_.clock)
    assert time_.sleeps == [1, 2, 4, 4, 4, 4] and not waited.ended  # 19 s waited; one more wait would pass the 20 s hold
    assert store.load(KEY).polls == 7 and store.load(KEY).batches[0].status.processing_status == "in_progress"
    assert [policy.next_check(n) for n in range(4)] == [20, 40, 80, 160]


def test_a_batch_past_the_deadline_is_canceled_and_its_rest_falls_back(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        ledger = submit_or_resume(_backend(fake), store, KEY, "run-1", _plan().batches)
        later = lambda: datetime.now(timezone.utc) + timedelta(hours=7)  # noqa: E731
        policy = PollPolicy(initial_s=0.02, max_s=0.05, hold_s=None, deadline_s=6 * 3600)
        ledger = wait_for_batches(_backend(fake), store, ledger, policy, now=later)
        assert fake.calls("POST", f"/v1/messages/batches/{ledger.batch_ids()[0]}/cancel")
        ledger = collect(_backend(fake), store, KEY, "run-1", "claude-haiku-4-5")
    assert ledger.ended and not ledger.outcomes and len(ledger.fallbacks) == len(ERRORS)
    assert {f.reason for f in ledger.fallbacks.values()} == {"the batch was canceled before this request was processed"}


def test_mixed_results_every_error_ends_answered_or_with_a_reason(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=0.05) as fake:
        fake.script_outcomes(matching={"NoMethodError": "errored", "KeyError": "expired", "ZeroDivisionError": "invalid",
                                       "TypeError": "garbled"})
        ledger = submit_or_resume(_backend(fake), store, KEY, "run-1", _plan().batches)
        ledger = wait_for_batches(_backend(fake), store, ledger, FAST)
        ledger = collect(_backend(fake), store, KEY, "run-1", "claude-haiku-4-5")
        again = collect(_backend(fake), store, KEY, "run-2", "claude-haiku-4-5")
        downloads = [r for r in fake.calls("GET") if r.path.endswith("/results")]
    by_class = {e.error_class: e.fingerprint for e in ERRORS}
    reasons = {cls: ledger.fallbacks[fp].reason for cls, fp in by_class.items() if fp in ledger.fallbacks}
    assert set(ledger.outcomes) | set(ledger.fallbacks) == set(by_class.values())
    assert reasons["NoMethodError"].startswith("the batch entry errored (invalid_request_error")
    assert reasons["KeyError"] == "the batch expired before this request was processed"
    assert reasons["ZeroDivisionError"].startswith("the batch answer did not validate")
    assert reasons["TypeError"].startswith("no result for this request") and "1 line(s) unreadable" in reasons["TypeError"]
    routes = {cls: ledger.outcomes[by_class[cls]].verdict for cls in ("Net::ReadTimeout", "Stripe::AuthenticationError")}
    assert routes["Net::ReadTimeout"].route == "transient" and routes["Stripe::AuthenticationError"].route == "simple"
    assert all(v.via == "batch" for v in routes.values())
    call = ledger.outcomes[by_class["Net::ReadTimeout"]].call
    assert call.mode == "batch" and call.model == "claude-haiku-4-5" and call.phase == "triage"
    assert call.cost_usd == pytest.approx(cost_usd("claude-haiku-4-5", call.usage) / 2) and call.cost_usd > 0
    wasted = ledger.fallbacks[by_class["ZeroDivisionError"]].wasted
    assert wasted is not None and wasted.mode == "batch" and wasted.cost_usd > 0  # billed even though unusable
    assert again.collected_by == "run-1" and len(downloads) == 1  # collected and paid for once


def test_collecting_before_the_end_or_without_a_ledger_is_a_named_error(tmp_path):
    store = LedgerStore(tmp_path)
    with pytest.raises(LedgerError, match="never planned"):
        collect(None, store, KEY, "run-1", "claude-haiku-4-5")  # type: ignore[arg-type]
    with FakeAnthropicBatches(processing_s=None) as fake:
        submit_or_resume(_backend(fake), store, KEY, "run-1", _plan().batches)
        with pytest.raises(LedgerError, match="before every batch ended"):
            collect(_backend(fake), store, KEY, "run-1", "claude-haiku-4-5")
        assert not [r for r in fake.calls("GET") if r.path.endswith("/results")]


def test_a_corrupt_ledger_names_its_file(tmp_path):
    store = LedgerStore(tmp_path)
    store.path(KEY).parent.mkdir(parents=True, exist_ok=True)
    store.path(KEY).write_text("{not json")
    with pytest.raises(LedgerError, match=KEY):
        store.load(KEY)


# creating safely: no blind retries, adoption after a failed create, mistaken adoption undone ------------
def _submit(fake: FakeAnthropicBatches, store: LedgerStore, run_id: str = "run-1"):
    return submit_or_resume(_backend(fake), store, KEY, run_id, _plan().batches)


def _posts(fake: FakeAnthropicBatches) -> int:
    return len(fake.calls("POST", "/v1/messages/batches"))


@pytest.mark.parametrize("fault", ["reset_after_create", "error_after_create", "garbage_after_create"])
def test_a_create_that_made_its_batch_and_then_failed_is_adopted_not_repeated(tmp_path, fault):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=0.05) as fake:
        fake.fail_creates(fault)
        ledger = _submit(fake, store)
        on_disk = store.load(KEY)
        ledger = wait_for_batches(_backend(fake), store, ledger, FAST)
        ledger = collect(_backend(fake), store, KEY, "run-1", "claude-haiku-4-5")
        batches, posts = fake.batch_ids(), _posts(fake)
    assert posts == 1 and fake.creates == 1 and batches == on_disk.batch_ids() == ledger.batch_ids()
    planned = on_disk.batches[0]
    assert planned.creates == 1 and planned.adopted.startswith("create failed (Message Batches create failed")
    assert set(ledger.outcomes) == {e.fingerprint for e in ERRORS} and not ledger.fallbacks and planned.mismatch is None


@pytest.mark.parametrize("fault", ["error_before_create", "reset_before_create"])
def test_a_create_that_made_nothing_is_sent_once_more(tmp_path, fault):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        fake.fail_creates(fault)
        ledger = _submit(fake, store)
        batches, posts = fake.batch_ids(), _posts(fake)
    assert posts == 2 and fake.creates == 1 and batches == ledger.batch_ids()
    assert ledger.batches[0].creates == 2 and ledger.batches[0].adopted is None


def test_two_failed_creates_are_a_clear_error_and_no_run_creates_a_third(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        fake.fail_creates("error_before_create", "reset_before_create")
        with pytest.raises(BatchError, match=r"batch 0 of the night was not created: 2 create call\(s\) made") as failure:
            _submit(fake, store)
        for run_id in ("run-1", "run-2"):  # the task's retry, then a rerun: they look, they do not create
            with pytest.raises(BatchError, match="not creating it again"):
                _submit(fake, store, run_id)
        posts = _posts(fake)
    assert not isinstance(failure.value, BatchRefused) and "Internal server error" in str(failure.value)
    assert posts == 2 and fake.creates == 0 and not fake.batch_ids() and store.load(KEY).batches[0].creates == 2


def test_a_refused_create_is_not_sent_again(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        fake.fail_next("POST", "/v1/messages/batches", Reply(413, {"type": "error", "error": {"type": "request_too_large",
                                                                                                "message": "too large"}}))
        with pytest.raises(BatchRefused, match="too large"):
            _submit(fake, store)
        posts = _posts(fake)
    assert posts == 1 and fake.creates == 0


def test_a_failed_create_whose_fate_cannot_be_listed_stops_and_the_rerun_adopts(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=None) as fake:
        fake.fail_creates("error_after_create")
        fake.fail_next("GET", "/v1/messages/batches", server_error(), server_error())  # the list before and after the create
        with pytest.raises(BatchError, match="a rerun looks again before creating"):
            _submit(fake, store)
        ledger = _submit(fake, store, "run-2")
        batches, posts = fake.batch_ids(), _posts(fake)
    assert posts == 1 and fake.creates == 1 and ledger.batch_ids() == batches
    assert ledger.batches[0].adopted == "found through the list when the night resumed"


def test_a_batch_of_the_same_size_listed_before_the_create_is_never_adopted(tmp_path):
    store = LedgerStore(tmp_path)
    plan = _plan()
    with FakeAnthropicBatches(processing_s=None) as fake:
        theirs = fake.someone_elses_batch([r.batch_request() for r in plan.requests])
        fake.fail_creates("error_before_create")
        ledger = _submit(fake, store)
        posts = _posts(fake)
    assert ledger.batch_ids() != [theirs] and ledger.batch_ids()[0] in fake.batch_ids()
    assert posts == 2 and fake.creates == 1


def test_a_mistaken_adoption_is_caught_at_collection_and_falls_back_unmetered(tmp_path):
    store = LedgerStore(tmp_path)
    with FakeAnthropicBatches(processing_s=0.05) as fake:
        fake.fail_creates("foreign_then_error")  # someone else's batch of our size appears while our create fails
        ledger = _submit(fake, store)
        adopted = ledger.batch_ids()[0]
        assert adopted in fake.foreign and fake.creates == 0 and _posts(fake) == 1
        ledger = wait_for_batches(_backend(fake), store, ledger, FAST)
        ledger = collect(_backend(fake), store, KEY, "run-1", "claude-haiku-4-5")
    assert not ledger.outcomes and set(ledger.fallbacks) == {e.fingerprint for e in ERRORS}
    assert {f.reason for f in ledger.fallbacks.values()} == {f"adopted batch {adopted} holds other requests' results"}
    assert all(f.wasted is None for f in ledger.fallbacks.values())  # nothing of their batch is metered as ours
    saved = store.load(KEY).batches[0]
    assert saved.mismatch.startswith(f"its results hold {len(ERRORS)} request(s) that are not in this batch")
    assert "not ours" in store.load(KEY).describe()
