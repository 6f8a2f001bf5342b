"""The batch path of triage: submit a night's requests once, poll with backoff, collect by custom_id.

    ledger = submit_or_resume(backend, store, key, run_id, batches)   # persisted before any polling
    ledger = wait_for_batches(backend, store, ledger, policy)          # may return before the end
    ledger = collect(backend, store, key, run_id, model)               # verdicts + fallbacks, once

Every entry that is not a usable answer (errored, expired, canceled, an answer that does not
validate, a line that does not parse, a request with no result at all) becomes a `Fallback` with
its reason; the caller answers those with direct calls. Nothing is dropped. Answers are metered at
the batch price; an answer that was billed but unusable is kept as the fallback's `wasted` call.

Creating is made safe to repeat here, with the ledger at hand. Before each create the batches of
the same size already listed are noted (none of them can be the one about to be made); after a
create that failed other than by refusal, the list is searched for a batch of the same size that
appeared since, and that batch is adopted. Only when none did is the batch created once more: two
creates per planned batch at most, counted in the ledger across crashes and retries. A batch adopted
by mistake is caught at collection, when its results hold requests that are not ours: all of its
entries then fall back, and nothing in it is metered as ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from nightwatch.redact import clean
from nightwatch.triage.backends import BatchBackend, BatchEntry, BatchError, BatchRefused, BatchStatus, adoption_window
from nightwatch.triage.ledger import BatchLedger, Fallback, LedgerBatch, LedgerError, LedgerStore
from nightwatch.triage.plan import TriageRequest
from nightwatch.triage.verdict import TriageOutcome, TriageParseError, parse_answer, route, triage_call_record

Clock = Callable[[], datetime]
MAX_CREATES = 2  # create calls per planned batch, ever: a third could only double a batch we failed to see
REASONS = {
    "errored": "the batch entry errored ({error})",
    "expired": "the batch expired before this request was processed",
    "canceled": "the batch was canceled before this request was processed",
    "unreadable": "its result line could not be read ({error})",
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class PollPolicy:
    """Backoff between status checks; `hold_s` None waits for the end, else returns after about that long."""

    initial_s: float
    max_s: float
    hold_s: float | None
    deadline_s: float

    def delays(self) -> Iterator[float]:
        delay = self.initial_s
        while True:
            yield delay
            delay = min(delay * 2, self.max_s)

    def next_check(self, handoffs: int) -> float:
        """Seconds until a handed-off night looks again: grows with every hand-off, at most two hours."""
        return min(max(self.hold_s or 0.0, self.max_s) * 2 ** handoffs, 7200.0)


# submit ----------------------------------------------------------------------------------------
def new_ledger(key: str, run_id: str, batches: list[list[TriageRequest]], at: datetime) -> BatchLedger:
    planned = [LedgerBatch(index=i, custom_ids={r.custom_id: r.fingerprint for r in batch}, intent_at=at)
               for i, batch in enumerate(batches)]
    return BatchLedger(key=key, run_id=run_id, created_at=at, batches=planned)


def submit_or_resume(backend: BatchBackend, store: LedgerStore, key: str, run_id: str, batches: list[list[TriageRequest]],
                     now: Clock = utcnow) -> BatchLedger:
    """The night's batches, created at most once: the plan is on disk before the first create."""
    requests = {r.custom_id: r for batch in batches for r in batch}
    with store.lock(key):
        ledger = store.load(key)
        resumed = ledger is not None
        if ledger is None:
            ledger = store.save(new_ledger(key, run_id, batches, now()))
        for batch in [b for b in ledger.batches if b.batch_id is None]:
            _submit(backend, store, ledger, batch, requests, adopt=resumed, now=now)
        ledger.batches = [b for b in ledger.batches if b.custom_ids]
        return store.save(ledger)


def _submit(backend: BatchBackend, store: LedgerStore, ledger: BatchLedger, batch: LedgerBatch,
            requests: dict[str, TriageRequest], adopt: bool, now: Clock = utcnow) -> None:
    """Adopt a batch a crashed run created but never recorded, else create it; record the id at once."""
    batch.custom_ids = {c: fp for c, fp in batch.custom_ids.items() if c in requests}
    if not batch.custom_ids:
        return
    size = len(batch.custom_ids)
    found = backend.find(adoption_window(batch.intent_at), size, set(ledger.batch_ids())) if adopt else None
    if found is not None:
        _record(store, ledger, batch, found, "found through the list when the night resumed")
        return
    failures: list[str] = []
    while batch.creates < MAX_CREATES:
        listed = _same_size(backend, adoption_window(now()), size, set(ledger.batch_ids()))
        batch.creates += 1
        store.save(ledger)
        sent_at = now()
        try:
            _record(store, ledger, batch, backend.create([requests[c].batch_request() for c in batch.custom_ids]))
            return
        except BatchRefused:
            raise
        except BatchError as exc:
            failures.append(str(exc))
        found = _made_anyway(backend, batch, ledger, sent_at, listed, failures[-1])
        if found is not None:
            _record(store, ledger, batch, found, f"create failed ({failures[-1]}), but the batch was made: found through the list")
            return
    tried = "; ".join(failures) or "every attempt of earlier runs failed"
    raise BatchError(f"batch {batch.index} of the night was not created: {batch.creates} create call(s) made, none left a batch "
                     f"the list shows ({tried}); not creating it again")


def _record(store: LedgerStore, ledger: BatchLedger, batch: LedgerBatch, status: BatchStatus, adopted: str | None = None) -> None:
    batch.batch_id, batch.status, batch.adopted = status.batch_id, status, adopted
    store.save(ledger)


def _same_size(backend: BatchBackend, after: datetime, size: int, exclude: set[str], most: int = 50) -> set[str] | None:
    """Ids of the listed batches of `size` requests created after `after`; None if the list cannot be read."""
    seen: set[str] = set()
    try:
        while len(seen) < most and (found := backend.find(after, size, exclude | seen)) is not None:
            seen.add(found.batch_id)
    except BatchError:
        return None
    return seen


def _made_anyway(backend: BatchBackend, batch: LedgerBatch, ledger: BatchLedger, sent_at: datetime, listed: set[str] | None,
                 failure: str) -> BatchStatus | None:
    """The batch a failed create may have made: of our size, created since the create was sent, not listed before it."""
    exclude = set(ledger.batch_ids()) | (listed or set())
    try:
        return backend.find(adoption_window(sent_at), len(batch.custom_ids), exclude)
    except BatchError as exc:
        raise BatchError(f"batch {batch.index}: create failed ({failure}) and the list that would show whether it made the "
                         f"batch failed too ({exc}); a rerun looks again before creating") from exc


# poll ------------------------------------------------------------------------------------------
def refresh(backend: BatchBackend, ledger: BatchLedger, deadline_s: float, now: Clock = utcnow) -> None:
    """Every unfinished batch's status; a batch past the deadline is canceled (its rest then falls back)."""
    for batch in ledger.batches:
        if batch.ended or batch.batch_id is None:
            continue
        overdue = (now() - ledger.created_at).total_seconds() > deadline_s
        if overdue and batch.cancel_requested_at is None:
            batch.status, batch.cancel_requested_at = backend.cancel(batch.batch_id), now()
        else:
            batch.status = backend.retrieve(batch.batch_id)


def wait_for_batches(backend: BatchBackend, store: LedgerStore, ledger: BatchLedger, policy: PollPolicy,
                     sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                     now: Clock = utcnow) -> BatchLedger:
    """Poll with exponential backoff until every batch ended, or until the hold is used up."""
    started = clock()
    for delay in policy.delays():
        refresh(backend, ledger, policy.deadline_s, now)
        ledger = _record_poll(store, ledger)
        if ledger.ended or ledger.collected:
            return ledger
        if policy.hold_s is not None and clock() - started + delay > policy.hold_s:
            return ledger
        sleep(delay)
    return ledger  # pragma: no cover - delays() never ends


def _record_poll(store: LedgerStore, polled: BatchLedger) -> BatchLedger:
    """Save the statuses without overwriting what another process collected meanwhile."""
    with store.lock(polled.key):
        current = store.load(polled.key) or polled
        if not current.collected:
            by_id = {b.batch_id: b for b in polled.batches}
            for batch in current.batches:
                seen = by_id.get(batch.batch_id)
                if seen is not None:
                    batch.status, batch.cancel_requested_at = seen.status, seen.cancel_requested_at
            current.polls += 1
            store.save(current)
        return current


def record_handoff(store: LedgerStore, key: str) -> BatchLedger:
    with store.lock(key):
        ledger = _required(store, key)
        ledger.handoffs += 1
        return store.save(ledger)


# collect ---------------------------------------------------------------------------------------
def collect(backend: BatchBackend, store: LedgerStore, key: str, run_id: str, model: str) -> BatchLedger:
    """Read every batch's results once; the first run to collect owns (and pays for) the answers."""
    with store.lock(key):
        ledger = _required(store, key)
        if ledger.collected:
            return ledger
        if not ledger.ended:
            raise LedgerError(f"batch ledger {key}: {ledger.describe()}; it cannot be collected before every batch ended")
        for batch in ledger.batches:
            outcomes, fallbacks = read_batch(backend, batch, run_id, model)
            ledger.outcomes |= outcomes
            ledger.fallbacks |= fallbacks
        ledger.collected_by = run_id
        return store.save(ledger)


def read_batch(backend: BatchBackend, batch: LedgerBatch, run_id: str, model: str) -> tuple[dict[str, TriageOutcome], dict[str, Fallback]]:
    """Match results to fingerprints by custom_id, in whatever order they come."""
    if batch.batch_id is None:
        raise LedgerError(f"batch {batch.index} of the ledger was never submitted")
    latency = _processing_ms(batch)
    outcomes: dict[str, TriageOutcome] = {}
    fallbacks: dict[str, Fallback] = {}
    unreadable = 0
    foreign: list[str] = []
    for entry in backend.results(batch.batch_id):
        fingerprint = batch.custom_ids.get(entry.custom_id)
        if fingerprint is None and entry.custom_id:
            foreign.append(entry.custom_id)
            continue
        if fingerprint is None or fingerprint in outcomes or fingerprint in fallbacks:
            unreadable += entry.kind == "unreadable"
            continue
        outcome, fallback = judge(entry, fingerprint, run_id, backend.recorded_model(model), latency)
        if outcome is not None:
            outcomes[fingerprint] = outcome
        else:
            fallbacks[fingerprint] = fallback  # type: ignore[assignment]
    if foreign:
        return {}, _not_ours(batch, foreign)
    missing = "no result for this request in the batch's results" + (f" ({unreadable} line(s) unreadable)" if unreadable else "")
    for fingerprint in set(batch.custom_ids.values()) - outcomes.keys() - fallbacks.keys():
        fallbacks[fingerprint] = Fallback(reason=missing)
    return outcomes, fallbacks


def _not_ours(batch: LedgerBatch, foreign: list[str]) -> dict[str, Fallback]:
    """A batch whose results are other requests' was never ours: undo it, every entry falls back, nothing is metered."""
    batch.mismatch = (f"its results hold {len(foreign)} request(s) that are not in this batch of the ledger "
                      f"(e.g. {', '.join(sorted(foreign)[:3])})")
    reason = f"{'adopted batch' if batch.adopted else 'batch'} {batch.batch_id} holds other requests' results"
    return {fingerprint: Fallback(reason=reason) for fingerprint in batch.custom_ids.values()}


def judge(entry: BatchEntry, fingerprint: str, run_id: str, model: str, latency_ms: int) -> tuple[TriageOutcome | None, Fallback | None]:
    """A usable verdict, or the reason this entry falls back to a direct call."""
    if entry.kind != "succeeded":
        return None, Fallback(reason=REASONS[entry.kind].format(error=clean(entry.error, 300)[0]))
    call = triage_call_record(run_id, fingerprint, model, entry.usage, "batch", latency_ms, entry.stop_reason)
    try:
        answer = parse_answer(entry.content)
    except TriageParseError as exc:
        return None, Fallback(reason=f"the batch answer did not validate: {clean(str(exc), 300)[0]}", wasted=call)
    return TriageOutcome(run_id=run_id, verdict=route(fingerprint, answer, "batch"), call=call), None


def _required(store: LedgerStore, key: str) -> BatchLedger:
    ledger = store.load(key)
    if ledger is None:
        raise LedgerError(f"no batch ledger {store.path(key)}: the night's batches were never planned")
    return ledger


def _processing_ms(batch: LedgerBatch) -> int:
    status = batch.status
    if status is None or status.ended_at is None:
        return 0
    return max(0, int((status.ended_at - status.created_at) / timedelta(milliseconds=1)))
