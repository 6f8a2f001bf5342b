"""The fake Anthropic API plus Message Batches: create, retrieve, list, results (JSONL), cancel, delete.

It behaves like the service: a batch is `in_progress` for a processing time while its requests
finish in an order of their own; `request_counts` stay `processing` until the batch ends; results
stream as JSONL in finishing order, not request order; a batch can expire (unfinished requests
`expired`) or be canceled (`canceled`, after a short `canceling`). Outcomes can be scripted per
custom_id: errored, expired, canceled, invalid (an answer whose tool input does not validate) and
garbled (a results line that is not JSON). Other entries are answered by the offline model, as the
fake's /v1/messages is. `latency_s` delays every /v1/messages answer, for wall-time measurements.

Creation can fail the ways that make a client unsure whether the batch exists (`fail_creates`): the
batch is made and then the connection drops, a 500 comes back, or a body that is not JSON; or no
batch is made and a 500 or a dropped connection comes back; or someone else's batch of the same size
appears and a 500 comes back. `creates` counts the batches our POSTs made, `create_posts` the POSTs.

    with FakeAnthropicBatches(processing_s=0.3) as fake:
        fake.script_outcomes({"3f2a...": "expired", "9bc1...": "invalid"})
        ...point the anthropic SDK at fake.url...
        assert fake.creates == 1
        fake.fail_creates("reset_after_create")  # the next create makes the batch, then drops the connection
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from nightwatch.offline.model import OfflineModel
from tests.fakes.anthropic import API_KEY, FakeAnthropic
from tests.fakes.http import Reply, Request

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_REQUESTS = 100_000
MAX_BODY = 256 * 1024 * 1024
CANCEL_S = 0.05
SCRIPTABLE = {"succeeded", "errored", "expired", "canceled", "invalid", "garbled"}
CREATE_FAULTS = {"reset_after_create", "error_after_create", "garbage_after_create", "error_before_create",
                 "reset_before_create", "foreign_then_error"}


def _error(status: int, kind: str, message: str) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"})


@dataclass
class FakeBatch:
    id: str
    requests: list[dict[str, Any]]
    started: float
    created_at: datetime
    finish_at: dict[str, float]
    ends_at: float | None
    cancel_at: float | None = None
    expire_at: float | None = None
    answers: dict[str, str] = field(default_factory=dict)

    def end_time(self) -> float | None:
        candidates = [t for t in (self.ends_at, self.expire_at, self.cancel_at and self.cancel_at + CANCEL_S) if t is not None]
        return min(candidates) if candidates else None

    def ended(self, now: float) -> bool:
        end = self.end_time()
        return end is not None and now >= end

    def fate(self, custom_id: str, scripted: str | None) -> str:
        """What became of one request when the batch ended."""
        finished = self.finish_at[custom_id]
        if self.cancel_at is not None and finished > self.cancel_at:
            return "canceled"
        if self.expire_at is not None and finished > self.expire_at:
            return "expired"
        return scripted or "succeeded"


class FakeAnthropicBatches(FakeAnthropic):
    def __init__(self, api_key: str = API_KEY, *, processing_s: float | None = 0.2, latency_s: float = 0.0, seed: int = 7) -> None:
        super().__init__(api_key)
        self.processing_s = processing_s
        self.latency_s = latency_s
        self.rng = random.Random(seed)
        self.answerer = OfflineModel()
        self.batches: dict[str, FakeBatch] = {}
        self.outcomes: dict[str, str] = {}
        self.text_outcomes: dict[str, str] = {}
        self.creates = 0  # batches made by our POSTs
        self.create_posts = 0  # POST /v1/messages/batches that passed validation, whatever became of them
        self.create_faults: deque[str] = deque()
        self.foreign: set[str] = set()  # batches someone else made
        self.in_flight = self.max_in_flight = 0
        self.spans: list[tuple[float, float, dict]] = []  # (start, end, body) of every /v1/messages answer
        self._batch_lock = threading.Lock()
        self.route("POST", "/v1/messages/batches", self._create)
        self.route("GET", "/v1/messages/batches", self._list)
        self.route("GET", "/v1/messages/batches/{batch_id}", self._retrieve)
        self.route("DELETE", "/v1/messages/batches/{batch_id}", self._delete)
        self.route("GET", "/v1/messages/batches/{batch_id}/results", self._results)
        self.route("POST", "/v1/messages/batches/{batch_id}/cancel", self._cancel)

    # test controls -----------------------------------------------------------------------------
    def script_outcomes(self, outcomes: dict[str, str] | None = None, *, matching: dict[str, str] | None = None) -> None:
        """Per custom_id, or for requests whose prompt contains a text: succeeded, errored, expired,
        canceled, invalid or garbled."""
        unknown = (set((outcomes or {}).values()) | set((matching or {}).values())) - SCRIPTABLE
        assert not unknown, f"unknown outcomes {unknown}"
        self.outcomes.update(outcomes or {})
        self.text_outcomes.update(matching or {})

    def scripted(self, request: dict[str, Any]) -> str | None:
        if request["custom_id"] in self.outcomes:
            return self.outcomes[request["custom_id"]]
        prompt = json.dumps(request["params"].get("messages", []))
        return next((outcome for text, outcome in self.text_outcomes.items() if text in prompt), None)

    def fail_creates(self, *faults: str) -> None:
        """The next creates meet these faults, in order: reset_after_create, error_after_create and garbage_after_create
        make the batch first; error_before_create and reset_before_create do not; foreign_then_error makes someone
        else's batch of the same size instead, then answers 500."""
        unknown = set(faults) - CREATE_FAULTS
        assert not unknown, f"unknown create faults {unknown}"
        self.create_faults.extend(faults)

    def someone_elses_batch(self, like: list[dict[str, Any]]) -> str:
        """A batch of as many requests as `like`, made by another client: its custom_ids are not ours."""
        requests = [{**r, "custom_id": f"other-{i}-{uuid.uuid4().hex[:6]}"} for i, r in enumerate(like)]
        with self._batch_lock:
            batch = self._new_batch(requests)
            self.batches[batch.id] = batch
            self.foreign.add(batch.id)
        return batch.id

    def finish(self, batch_id: str | None = None) -> None:
        """End a batch (or every batch) now: whatever has not finished finishes at once."""
        now = time.monotonic()
        for batch in [self.batches[batch_id]] if batch_id else list(self.batches.values()):
            batch.finish_at = {c: min(t, now) for c, t in batch.finish_at.items()}
            batch.ends_at = now if batch.ends_at is None else min(batch.ends_at, now)

    def expire(self, batch_id: str, after_fraction: float = 0.5) -> None:
        """Let the batch expire now: requests not yet finished (the later share) come back `expired`."""
        batch = self.batches[batch_id]
        order = sorted(batch.finish_at, key=batch.finish_at.get)
        now = time.monotonic()
        keep = round(len(order) * after_fraction)
        batch.finish_at = {c: (now - 1 if i < keep else now + 3600) for i, c in enumerate(order)}
        batch.expire_at = now

    def batch_ids(self) -> list[str]:
        return list(self.batches)

    def message_bodies(self) -> list[dict]:
        return [r.json() for r in self.calls("POST", "/v1/messages") if r.path == "/v1/messages"]

    # the API -----------------------------------------------------------------------------------
    def _messages(self, req: Request) -> Reply:
        """The parent's answer, `latency_s` later; counts how many requests are in flight at once."""
        with self._batch_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        started = time.monotonic()
        try:
            reply = super()._messages(req)
            time.sleep(self.latency_s)
            return reply
        finally:
            with self._batch_lock:
                self.in_flight -= 1
                self.spans.append((started, time.monotonic(), req.json()))

    def max_overlap(self, which=lambda body: True) -> int:
        """Most requests (of those `which` selects) in flight at one moment."""
        edges = sorted(e for s, t, body in self.spans if which(body) for e in ((s, 1), (t, -1)))
        most = current = 0
        for _, step in edges:
            current += step
            most = max(most, current)
        return most

    def _authorised(self, req: Request) -> bool:
        return req.headers.get("x-api-key") == self.api_key or req.headers.get("authorization") == f"Bearer {self.api_key}"

    def _create(self, req: Request) -> Reply:
        if not self._authorised(req):
            return _error(401, "authentication_error", "invalid x-api-key")
        if len(req.body) > MAX_BODY:
            return _error(413, "request_too_large", f"Request exceeds the maximum allowed number of bytes ({MAX_BODY})")
        requests = (req.json() or {}).get("requests")
        problem = self._invalid(requests)
        if problem:
            return _error(400, "invalid_request_error", problem)
        with self._batch_lock:
            self.create_posts += 1
            fault = self.create_faults.popleft() if self.create_faults else None
        if fault == "error_before_create":
            return _error(500, "api_error", "Internal server error")
        if fault == "reset_before_create":
            return Reply(200, {}, reset_after=0)
        if fault == "foreign_then_error":
            self.someone_elses_batch(requests)
            return _error(500, "api_error", "Internal server error")
        with self._batch_lock:
            self.creates += 1
            batch = self._new_batch(requests)
            self.batches[batch.id] = batch
        if fault == "reset_after_create":
            return Reply(200, self._batch_json(batch), reset_after=0)
        if fault == "error_after_create":
            return _error(500, "api_error", "Internal server error")
        if fault == "garbage_after_create":
            return Reply(200, raw=b'{"id": "' + batch.id.encode() + b'", "type": "message_ba', headers={"content-type": "application/json"})
        return Reply(200, self._batch_json(batch))

    def _invalid(self, requests: Any) -> str | None:
        if not isinstance(requests, list) or not requests:
            return "requests: must be a non-empty list"
        if len(requests) > MAX_REQUESTS:
            return f"requests: at most {MAX_REQUESTS} requests per batch"
        seen: set[str] = set()
        for i, request in enumerate(requests):
            custom_id = request.get("custom_id", "")
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return f"requests.{i}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'"
            if custom_id in seen:
                return f"requests.{i}.custom_id: duplicate custom_id {custom_id!r}"
            seen.add(custom_id)
            params = request.get("params") or {}
            missing = [k for k in ("model", "max_tokens", "messages") if k not in params]
            if missing:
                return f"requests.{i}.params.{missing[0]}: Field required"
        return None

    def _new_batch(self, requests: list[dict[str, Any]]) -> FakeBatch:
        started = time.monotonic()
        order = [r["custom_id"] for r in requests]
        self.rng.shuffle(order)
        span = self.processing_s if self.processing_s is not None else 3600.0
        finish_at = {c: started + span * (i + 1) / len(order) for i, c in enumerate(order)}
        ends_at = started + self.processing_s if self.processing_s is not None else None
        return FakeBatch(id=f"msgbatch_{uuid.uuid4().hex[:24]}", requests=requests, started=started, created_at=datetime.now(timezone.utc),
                         finish_at=finish_at, ends_at=ends_at)

    def _retrieve(self, req: Request) -> Reply:
        batch = self.batches.get(req.params["batch_id"])
        if not self._authorised(req):
            return _error(401, "authentication_error", "invalid x-api-key")
        return Reply(200, self._batch_json(batch)) if batch else _error(404, "not_found_error", "batch not found")

    def _list(self, req: Request) -> Reply:
        if not self._authorised(req):
            return _error(401, "authentication_error", "invalid x-api-key")
        newest_first = list(reversed(self.batches.values()))
        ids = [b.id for b in newest_first]
        after, before = req.query.get("after_id", [None])[0], req.query.get("before_id", [None])[0]
        limit = int(req.query.get("limit", ["20"])[0])
        start = ids.index(after) + 1 if after in ids else 0
        stop = ids.index(before) if before in ids else len(ids)
        page = newest_first[start:stop][:limit] if not before else newest_first[start:stop][-limit:]
        data = [self._batch_json(b) for b in page]
        more = (start + len(page) < stop) if not before else (stop - len(page) > start)
        return Reply(200, {"data": data, "has_more": more, "first_id": data[0]["id"] if data else None,
                           "last_id": data[-1]["id"] if data else None})

    def _cancel(self, req: Request) -> Reply:
        batch = self.batches.get(req.params["batch_id"])
        if batch is None:
            return _error(404, "not_found_error", "batch not found")
        if not batch.ended(time.monotonic()) and batch.cancel_at is None:
            batch.cancel_at = time.monotonic()
        return Reply(200, self._batch_json(batch))

    def _delete(self, req: Request) -> Reply:
        batch = self.batches.get(req.params["batch_id"])
        if batch is None:
            return _error(404, "not_found_error", "batch not found")
        if not batch.ended(time.monotonic()):
            return _error(400, "invalid_request_error", "a batch must end (or be canceled) before it is deleted")
        del self.batches[batch.id]
        return Reply(200, {"id": batch.id, "type": "message_batch_deleted"})

    def _results(self, req: Request) -> Reply:
        batch = self.batches.get(req.params["batch_id"])
        if batch is None:
            return _error(404, "not_found_error", "batch not found")
        if not batch.ended(time.monotonic()):
            return _error(400, "invalid_request_error", f"batch {batch.id} is still {self._state(batch)}: no results yet")
        order = sorted(batch.requests, key=lambda r: batch.finish_at[r["custom_id"]])
        lines = [self._result_line(batch, r) for r in order]
        return Reply(200, raw=("\n".join(lines) + "\n").encode(), headers={"content-type": "application/binary"})

    # rendering -----------------------------------------------------------------------------------
    def _state(self, batch: FakeBatch) -> str:
        now = time.monotonic()
        if batch.ended(now):
            return "ended"
        return "canceling" if batch.cancel_at is not None else "in_progress"

    def _batch_json(self, batch: FakeBatch) -> dict[str, Any]:
        state = self._state(batch)
        counts = {"processing": len(batch.requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if state == "ended":
            counts["processing"] = 0
            for request in batch.requests:
                fate = batch.fate(request["custom_id"], self.scripted(request))
                counts["succeeded" if fate in ("invalid", "garbled") else fate] += 1
        end = batch.end_time()
        at = lambda moment: (batch.created_at + timedelta(seconds=moment - batch.started)).isoformat()  # noqa: E731
        return {
            "id": batch.id, "type": "message_batch", "processing_status": state, "request_counts": counts,
            "created_at": batch.created_at.isoformat(), "expires_at": (batch.created_at + timedelta(hours=24)).isoformat(),
            "ended_at": at(end) if state == "ended" and end is not None else None, "archived_at": None,
            "cancel_initiated_at": at(batch.cancel_at) if batch.cancel_at is not None else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if state == "ended" else None,
        }

    def _result_line(self, batch: FakeBatch, request: dict[str, Any]) -> str:
        custom_id = request["custom_id"]
        fate = batch.fate(custom_id, self.scripted(request))
        if fate == "garbled":
            return '{"custom_id": "' + custom_id + '", "result": {"type": "succ'
        if fate == "errored":
            result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": "max_tokens: 999999 > 64000, the maximum for this model"}}}
        elif fate in ("expired", "canceled"):
            result = {"type": fate}
        else:
            result = {"type": "succeeded", "message": self._answer(batch, request, invalid=fate == "invalid")}
        return json.dumps({"custom_id": custom_id, "result": result})

    def _answer(self, batch: FakeBatch, request: dict[str, Any], invalid: bool) -> dict[str, Any]:
        if request["custom_id"] not in batch.answers:
            message = self.answerer.create(**request["params"]).to_dict(mode="json")
            message["model"] = request["params"]["model"]
            batch.answers[request["custom_id"]] = json.dumps(message)
        message = json.loads(batch.answers[request["custom_id"]])
        if invalid:
            for block in message["content"]:
                if block["type"] == "tool_use":
                    block["input"] = {"severity": "apocalyptic", "complexity": "simple"}
        return message
