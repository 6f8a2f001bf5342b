"""A fake Anthropic Messages API over HTTP, behaving as the API documents, answered by a brain.

The real anthropic SDK talks to it (base_url), so tests cover the live path: headers, beta flags,
retries on 429/529/500, and bodies. Every request goes through the emulated server side
(nightwatch/agent/emulated_api.py): the `anthropic-beta` header and `context_management` shapes
are validated (a 400 `invalid_request_error` otherwise), context edits and compaction are applied
to the history the brain sees, and usage carries cache writes and reads. The brain is the offline
analyst, or scripted replies queued with `script()`. Requests are recorded as received.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from nightwatch.agent.emulated_api import EmulatedAPIError, EmulatedMessagesAPI
from nightwatch.agent.offline import SUMMARY_TOOL, OfflineAnalyst
from nightwatch.tokens import EstimatingCounter
from tests.fakes.http import FakeHTTPServer, Reply, Request

API_KEY = "sk-ant-test-0000000000"


class _Brain:
    """Scripted content first, then the offline analyst (which also writes every summary)."""

    def __init__(self) -> None:
        self.scripted: deque[list[dict]] = deque()
        self.analyst = OfflineAnalyst()
        self.seen: list[dict] = []  # requests as the model saw them, after edits and compaction

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.seen.append(request)
        summary = any(t["name"] == SUMMARY_TOOL for t in request.get("tools", []))
        return self.scripted.popleft() if self.scripted and not summary else self.analyst.respond(request)

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return self.analyst.summarise(request, instructions)


class FakeAnthropic(FakeHTTPServer):
    def __init__(self, api_key: str = API_KEY, model_name: str | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.model_name = model_name
        self.brain = _Brain()
        self.api = EmulatedMessagesAPI(self.brain)
        self.summary_faults = 0  # the next N summary requests (record_summary) fail with a 500
        self._faults_at: dict[int, Reply] = {}
        self._seen = 0
        self.route("POST", "/v1/messages", self._messages)
        self.route("POST", "/v1/messages/count_tokens", self._count)

    @property
    def scripted(self) -> deque[list[dict]]:
        return self.brain.scripted

    def script(self, *contents: list[dict]) -> None:
        """Answer the next requests with these content lists instead of the offline analyst."""
        self.brain.scripted.extend(contents)

    def fail_at(self, n: int, reply: Reply) -> None:
        """The n-th Messages request from now on (1 = the next one) gets this reply instead of an answer."""
        self._faults_at[self._seen + n] = reply

    def message_requests(self) -> list[Request]:
        return [r for r in self.calls("POST", "/v1/messages") if r.path == "/v1/messages"]

    def message_bodies(self) -> list[dict]:
        return [r.json() for r in self.message_requests()]

    def betas(self) -> list[list[str]]:
        """The anthropic-beta header of each Messages request, split, as the server received it."""
        return [_betas(r) for r in self.message_requests()]

    def _authorised(self, req: Request) -> bool:
        return req.headers.get("x-api-key") == self.api_key or req.headers.get("authorization") == f"Bearer {self.api_key}"

    def _messages(self, req: Request) -> Reply:
        if not self._authorised(req):
            return Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        self._seen += 1
        if self._seen in self._faults_at:
            return self._faults_at.pop(self._seen)
        body = req.json()
        if self.summary_faults and any(t.get("name") == SUMMARY_TOOL for t in body.get("tools", [])):
            self.summary_faults -= 1
            return server_error()
        try:
            message = self.api.create(**body, betas=_betas(req)).to_dict(mode="json")
        except EmulatedAPIError as exc:
            return Reply(exc.status, exc.body(), {"request-id": "req_fake"})
        if self.model_name:
            message["model"] = self.model_name
        return Reply(200, message, {"request-id": "req_fake"})

    def _count(self, req: Request) -> Reply:
        body = req.json()
        return Reply(200, {"input_tokens": EstimatingCounter().count(system=body.get("system"), messages=body["messages"],
                                                                     tools=body.get("tools"))})


def _betas(req: Request) -> list[str]:
    header = req.headers.get("anthropic-beta", "")
    return [b.strip() for b in header.split(",") if b.strip()]


def overloaded(retry_after: str = "0") -> Reply:
    return Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def rate_limited(retry_after: str = "0") -> Reply:
    return Reply(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def server_error() -> Reply:
    return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "internal"}})


def malformed() -> Reply:
    return Reply(200, raw=b'{"id": "msg_broken", "type": "message", "content": [', headers={"content-type": "application/json"})


def slow(seconds: float) -> Reply:
    """A reply that arrives too late for a client with a shorter timeout (the SDK retries it)."""
    return Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "slow"}}, delay_s=seconds)


def anthropic_env(server: FakeAnthropic) -> dict[str, Any]:
    return {"ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url}
