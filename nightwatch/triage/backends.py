"""Message Batches behind one small interface, so the live API and the offline backend are interchangeable.

A backend creates a batch, reports its status, finds a batch by when it was created (to adopt one
whose id a crashed run never saved), streams its results and cancels it. The live backend is the
anthropic SDK's `messages.batches`; `nightwatch.offline.batches` is the offline one. Results are
read line by line: one unreadable line costs one entry (which then falls back), never the file.

Creating a batch is not idempotent: the live `create` sends its POST once, with the SDK's retries off,
because a retry after a reset or a 5xx that came after the server had made the batch makes a second,
orphaned one (paid twice). Any failure but a refusal may therefore have created the batch;
`nightwatch.triage.batch` looks for it through `find` before it creates again (at most twice).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, cast

import anthropic
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from anthropic.types.messages.batch_create_params import Request
from pydantic import Field, ValidationError

from nightwatch.models import Model, TokenUsage

MAX_REQUESTS = 100_000
MAX_BYTES = 256_000_000  # the API says 256 MB; decimal megabytes keep us on the safe side
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EntryKind = Literal["succeeded", "errored", "canceled", "expired", "unreadable"]


class BatchError(RuntimeError):
    """The Batches API refused or failed a call; the message says which batch and why."""


class BatchRefused(BatchError):
    """The API refused the request itself (a bad request, not an outage): sending it again will not help."""


class BatchStatus(Model):
    batch_id: str
    processing_status: Literal["in_progress", "canceling", "ended"]
    counts: dict[str, int] = Field(default_factory=dict)
    created_at: datetime
    ended_at: datetime | None = None
    expires_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.processing_status == "ended"

    @property
    def size(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.counts.items() if n)
        return f"{self.batch_id} {self.processing_status.replace('_', ' ')} ({counts or 'empty'})"


class BatchEntry(Model):
    """One line of a batch's results, whatever its type."""

    custom_id: str
    kind: EntryKind
    content: list[dict[str, Any]] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    stop_reason: str = ""
    model: str = ""
    error: str = ""


class BatchBackend(Protocol):
    offline: bool

    def recorded_model(self, model: str) -> str:
        """The model name the rows of this backend's answers are recorded and priced as."""
        ...

    def create(self, requests: list[dict[str, Any]]) -> BatchStatus: ...
    def retrieve(self, batch_id: str) -> BatchStatus: ...
    def find(self, created_after: datetime, size: int, exclude: set[str]) -> BatchStatus | None: ...
    def results(self, batch_id: str) -> Iterator[BatchEntry]: ...
    def cancel(self, batch_id: str) -> BatchStatus: ...


def status_of(batch: MessageBatch) -> BatchStatus:
    return BatchStatus(batch_id=batch.id, processing_status=batch.processing_status, counts=batch.request_counts.model_dump(),
                       created_at=batch.created_at, ended_at=batch.ended_at, expires_at=batch.expires_at)


def usage_from(usage: Any) -> TokenUsage:
    get = usage.get if isinstance(usage, dict) else lambda k, d=None: getattr(usage, k, d)
    return TokenUsage(input=get("input_tokens", 0) or 0, output=get("output_tokens", 0) or 0,
                      cache_write=get("cache_creation_input_tokens", 0) or 0, cache_read=get("cache_read_input_tokens", 0) or 0)


def entry_from_line(line: str | bytes) -> BatchEntry:
    """Parse one JSONL line with the SDK's own type; a line that does not parse becomes `unreadable`."""
    try:
        raw = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, and the rest: an integer past Python's digit limit, bytes not UTF-8
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:200]
        return BatchEntry(custom_id="", kind="unreadable", error=f"results line is not JSON ({why})")
    custom_id = raw.get("custom_id", "") if isinstance(raw, dict) else ""
    try:
        response = MessageBatchIndividualResponse.model_validate(raw)
    except ValidationError as exc:
        return BatchEntry(custom_id=str(custom_id), kind="unreadable", error=f"results line does not match the API schema ({exc.errors()[0]['msg']})")
    return entry_from_response(response)


def entry_from_response(response: MessageBatchIndividualResponse) -> BatchEntry:
    result = response.result
    if result.type == "succeeded":
        message = result.message
        return BatchEntry(custom_id=response.custom_id, kind="succeeded", content=[b.to_dict(mode="json") for b in message.content],
                          usage=usage_from(message.usage), stop_reason=message.stop_reason or "", model=message.model)
    if result.type == "errored":
        error = result.error.error
        return BatchEntry(custom_id=response.custom_id, kind="errored", error=f"{error.type}: {error.message}")
    return BatchEntry(custom_id=response.custom_id, kind=result.type)


class AnthropicBatches:
    """The Message Batches API through the anthropic SDK (its retries, timeouts and auth)."""

    offline = False

    def recorded_model(self, model: str) -> str:
        return model

    def __init__(self, sdk: anthropic.Anthropic) -> None:
        self.sdk = sdk

    def create(self, requests: list[dict[str, Any]]) -> BatchStatus:
        """One POST, never retried here or by the SDK. A refusal (a 4xx other than 408/409/429) is `BatchRefused`;
        anything else (timeout, reset, 5xx, 429, an answer that is not a batch) is `BatchError`, and the batch may
        exist all the same."""
        once = self.sdk.with_options(max_retries=0)
        sent = cast("list[Request]", requests)  # plain JSON dicts of the API's Request shape (TriageRequest.batch_request)
        try:
            return status_of(self._call("create", lambda: once.messages.batches.create(requests=sent)))
        except BatchError:
            raise
        except Exception as exc:  # a body that is not JSON, or JSON that is not a batch: the SDK does not say which
            raise BatchError(f"Message Batches create failed: its answer could not be read ({type(exc).__name__}: {exc})") from exc

    def retrieve(self, batch_id: str) -> BatchStatus:
        return status_of(self._call(f"retrieve {batch_id}", lambda: self.sdk.messages.batches.retrieve(batch_id)))

    def cancel(self, batch_id: str) -> BatchStatus:
        return status_of(self._call(f"cancel {batch_id}", lambda: self.sdk.messages.batches.cancel(batch_id)))

    def find(self, created_after: datetime, size: int, exclude: set[str]) -> BatchStatus | None:
        """The earliest batch of `size` requests created after `created_after`, not in `exclude` (the list is newest first)."""
        found = None
        for batch in self._call("list", lambda: self.sdk.messages.batches.list(limit=100)):
            if batch.created_at < created_after:
                break
            status = status_of(batch)
            if status.size == size and status.batch_id not in exclude:
                found = status
        return found

    def results(self, batch_id: str) -> Iterator[BatchEntry]:
        """Streamed line by line; the SDK fetches the batch first and refuses one that has not ended."""
        try:
            with self.sdk.messages.batches.with_streaming_response.results(batch_id) as response:
                for line in response.iter_lines():
                    if line.strip():
                        yield entry_from_line(line)
        except anthropic.AnthropicError as exc:
            raise BatchError(f"Message Batches results {batch_id} failed: {getattr(exc, 'message', exc)}") from exc

    @staticmethod
    def _call(what: str, call: Any) -> Any:
        try:
            return call()
        except anthropic.APIStatusError as exc:
            refused = 400 <= exc.status_code < 500 and exc.status_code not in (408, 409, 429)
            raise (BatchRefused if refused else BatchError)(f"Message Batches {what} failed: {exc.message}") from exc
        except anthropic.AnthropicError as exc:
            raise BatchError(f"Message Batches {what} failed: {getattr(exc, 'message', exc)}") from exc


def adoption_window(intent_at: datetime, skew: timedelta = timedelta(minutes=5)) -> datetime:
    """How far before our own clock's intent a batch may say it was created (clock skew)."""
    return intent_at - skew
