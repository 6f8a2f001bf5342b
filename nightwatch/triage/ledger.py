"""The batch ledger: what a night submitted to Message Batches, kept on disk before anyone polls.

One ledger per night (its window and triage model), at `NIGHTWATCH_HOME/batches/<key>.json`. The
whole plan (each batch's custom_id -> fingerprint mapping) is written before the first create;
each batch id is written as soon as the API returns it. A crashed, retried or rerun night loads the
ledger and polls the same batches instead of submitting again. Once collected, the verdicts stay
in the ledger, so a later rerun neither downloads nor pays for them twice.

Each planned batch counts its create calls (saved before each POST, so a crash mid-call counts) and
says why its batch was adopted rather than created, if it was. A batch adopted by mistake (someone
else's of the same size, found in the same minutes) shows at collection: its results hold requests
that are not ours. `mismatch` records that, and none of its results are used or metered.

Writes are atomic (temporary file, fsync, rename); submission holds an exclusive lock on
`<key>.lock`, so two processes resuming the same night cannot both create a batch.
"""

from __future__ import annotations

import contextlib
import re
from datetime import datetime
from pathlib import Path

from pydantic import Field, ValidationError

from nightwatch.atomic import atomic_write_text, exclusive_lock
from nightwatch.models import Model, ModelCall
from nightwatch.triage.backends import BatchStatus
from nightwatch.triage.verdict import TriageOutcome

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class LedgerError(RuntimeError):
    """A ledger file that cannot be read; the message names the file so it can be inspected or removed."""


class LedgerBatch(Model):
    index: int
    custom_ids: dict[str, str] = Field(description="custom_id -> error fingerprint")
    intent_at: datetime = Field(description="When creation was decided; a batch created after it may be adopted.")
    batch_id: str | None = None
    status: BatchStatus | None = None
    cancel_requested_at: datetime | None = None
    creates: int = Field(default=0, description="Create calls made for this batch, counted before each is sent.")
    adopted: str | None = Field(default=None, description="Why the batch was found through the list instead of created.")
    mismatch: str | None = Field(default=None, description="The batch's results hold other requests': it was not ours.")

    @property
    def ended(self) -> bool:
        return self.status is not None and self.status.ended

    def describe(self) -> str:
        if self.status is None:
            return f"batch {self.index} not submitted"
        return self.status.describe() + (f" (not ours: {self.mismatch})" if self.mismatch else "")


class Fallback(Model):
    reason: str
    wasted: ModelCall | None = Field(default=None, description="A billed batch answer that could not be used.")


class BatchLedger(Model):
    key: str
    run_id: str
    created_at: datetime
    batches: list[LedgerBatch]
    polls: int = 0
    handoffs: int = 0
    collected_by: str | None = None
    outcomes: dict[str, TriageOutcome] = Field(default_factory=dict)
    fallbacks: dict[str, Fallback] = Field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return all(b.ended for b in self.batches)

    @property
    def collected(self) -> bool:
        return self.collected_by is not None

    def fingerprints(self) -> set[str]:
        return {fp for b in self.batches for fp in b.custom_ids.values()}

    def batch_ids(self) -> list[str]:
        return [b.batch_id for b in self.batches if b.batch_id]

    def describe(self) -> str:
        states = "; ".join(b.describe() for b in self.batches)
        return f"{len(self.fingerprints())} triage requests in {len(self.batches)} batch(es): {states}"


def ledger_key(night: str, model: str) -> str:
    return _UNSAFE.sub("_", f"triage-{night}-{model}")


class LedgerStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def load(self, key: str) -> BatchLedger | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return BatchLedger.model_validate_json(path.read_text())
        except (ValidationError, ValueError) as exc:
            raise LedgerError(f"batch ledger {path} cannot be read ({exc}); move it aside to submit this night again") from exc

    def save(self, ledger: BatchLedger) -> BatchLedger:
        path = self.path(ledger.key)
        atomic_write_text(path, ledger.model_dump_json(indent=1))
        return ledger

    def lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        """An exclusive lock on the night's ledger; the OS releases it if the process dies."""
        return exclusive_lock(self.root / f"{key}.lock")
