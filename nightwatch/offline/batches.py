"""Message Batches without the network: the API's lifecycle, answered by the offline model.

A batch is a JSON file under NIGHTWATCH_HOME, so a crashed or rerun night finds it again, exactly
as it would find a real batch. It is `in_progress` for a short processing time, its requests finish
in an order of their own, results come back in that order (not the request order, as the API
warns), and a cancel ends it with the unfinished requests `canceled`. Answers are the offline
model's, so a batch night runs the same routing as a direct one, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from nightwatch.atomic import atomic_write_text
from nightwatch.triage.backends import (
    CUSTOM_ID,
    MAX_BYTES,
    MAX_REQUESTS,
    BatchEntry,
    BatchError,
    BatchRefused,
    BatchStatus,
    usage_from,
)

EXPIRY = timedelta(hours=24)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def check_requests(requests: list[dict[str, Any]]) -> None:
    """What the API refuses at creation: bad or repeated custom_ids, too many requests, too many bytes."""
    if not requests:
        raise BatchRefused("a batch needs at least one request")
    if len(requests) > MAX_REQUESTS:
        raise BatchRefused(f"a batch holds at most {MAX_REQUESTS:,} requests, not {len(requests):,}")
    if len(json.dumps({"requests": requests})) > MAX_BYTES:
        raise BatchRefused(f"a batch body is limited to {MAX_BYTES:,} bytes")
    seen: set[str] = set()
    for i, request in enumerate(requests):
        custom_id = request.get("custom_id", "")
        if not CUSTOM_ID.match(custom_id):
            raise BatchRefused(f"requests.{i}.custom_id {custom_id!r} must match {CUSTOM_ID.pattern}")
        if custom_id in seen:
            raise BatchRefused(f"requests.{i}.custom_id {custom_id!r} is used twice")
        seen.add(custom_id)


class OfflineBatches:
    offline = True

    def recorded_model(self, model: str) -> str:
        return "offline"

    def __init__(self, root: Path, model: Any, processing_s: float = 1.0, clock: Callable[[], datetime] = utcnow) -> None:
        self.root = root
        self.processing = timedelta(seconds=processing_s)
        self.clock = clock
        self._model = model  # what answers each request: the offline model, which hands itself over

    # the API -------------------------------------------------------------------------------
    def create(self, requests: list[dict[str, Any]]) -> BatchStatus:
        check_requests(requests)
        record = {"id": f"msgbatch_offline_{uuid.uuid4().hex[:20]}", "created_at": self.clock().isoformat(),
                  "cancel_at": None, "requests": requests}
        self._save(record)
        return self._status(record)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return self._status(self._load(batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        record = self._load(batch_id)
        if not self._status(record).ended and record["cancel_at"] is None:
            record["cancel_at"] = self.clock().isoformat()
            self._save(record)
        return self._status(record)

    def find(self, created_after: datetime, size: int, exclude: set[str]) -> BatchStatus | None:
        found = [self._status(r) for r in self._records() if len(r["requests"]) == size and r["id"] not in exclude]
        found = [s for s in found if s.created_at >= created_after]
        return min(found, key=lambda s: s.created_at) if found else None

    def results(self, batch_id: str) -> Iterator[BatchEntry]:
        record = self._load(batch_id)
        if not self._status(record).ended:
            raise BatchError(f"batch {batch_id} has not ended: its results are not available yet")
        finished = self._finish_times(record)
        stop = _at(record["cancel_at"]) or _created(record) + EXPIRY
        for request in sorted(record["requests"], key=lambda r: finished[r["custom_id"]]):
            done = finished[request["custom_id"]] <= stop
            yield self._answer(request) if done else BatchEntry(custom_id=request["custom_id"], kind="canceled" if record["cancel_at"] else "expired")

    # lifecycle -------------------------------------------------------------------------------
    def _finish_times(self, record: dict[str, Any]) -> dict[str, datetime]:
        """Requests finish spread over the processing time, in an order that is not the request order."""
        ids = sorted((r["custom_id"] for r in record["requests"]), key=lambda c: hashlib.sha256(c.encode()).hexdigest())
        start = _created(record)
        return {c: start + self.processing * (i + 1) / len(ids) for i, c in enumerate(ids)}

    def _status(self, record: dict[str, Any]) -> BatchStatus:
        created, cancel_at = _created(record), _at(record["cancel_at"])
        ended_at = min(t for t in (created + self.processing, cancel_at) if t is not None)
        ended = self.clock() >= ended_at
        counts = {"processing": 0 if ended else len(record["requests"]), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            for entry_kind in self._kinds(record):
                counts[entry_kind] += 1
        state = "ended" if ended else ("canceling" if cancel_at else "in_progress")
        return BatchStatus(batch_id=record["id"], processing_status=state, counts=counts, created_at=created,
                           ended_at=ended_at if ended else None, expires_at=created + EXPIRY)

    def _kinds(self, record: dict[str, Any]) -> list[str]:
        stop = _at(record["cancel_at"]) or _created(record) + EXPIRY
        return ["succeeded" if t <= stop else ("canceled" if record["cancel_at"] else "expired") for t in self._finish_times(record).values()]

    def _answer(self, request: dict[str, Any]) -> BatchEntry:
        message = self._model.create(**request["params"])
        return BatchEntry(custom_id=request["custom_id"], kind="succeeded", content=[b.to_dict(mode="json") for b in message.content],
                          usage=usage_from(message.usage), stop_reason=message.stop_reason or "", model=message.model)

    # storage ---------------------------------------------------------------------------------
    def _path(self, batch_id: str) -> Path:
        if not CUSTOM_ID.match(batch_id):
            raise BatchError(f"{batch_id!r} is not a batch id")
        return self.root / f"{batch_id}.json"

    def _load(self, batch_id: str) -> dict[str, Any]:
        path = self._path(batch_id)
        if not path.is_file():
            raise BatchError(f"batch {batch_id} not found under {self.root}")
        return json.loads(path.read_text())

    def _save(self, record: dict[str, Any]) -> None:
        path = self._path(record["id"])
        atomic_write_text(path, json.dumps(record))

    def _records(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.root.glob("msgbatch_*.json"))] if self.root.is_dir() else []


def _at(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _created(record: dict[str, Any]) -> datetime:
    """When a batch was created: `create` always records it."""
    return datetime.fromisoformat(record["created_at"])
