"""A fake Anthropic Messages API over HTTP, answered by the offline model or by scripted replies.

The real anthropic SDK talks to it (base_url), so tests cover the live path: headers, beta flags,
retries on 429/529/500, and bodies. Requests are recorded as the server received them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from nightwatch.agent.offline import OfflineModel
from nightwatch.tokens import EstimatingCounter
from tests.fakes.http import FakeHTTPServer, Reply, Request

API_KEY = "sk-ant-test-0000000000"


class FakeAnthropic(FakeHTTPServer):
    def __init__(self, api_key: str = API_KEY, model_name: str | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.model_name = model_name
        self.offline = OfflineModel()
        self.scripted: deque[list[dict]] = deque()
        self.route("POST", "/v1/messages", self._messages)
        self.route("POST", "/v1/messages/count_tokens", self._count)

    def script(self, *contents: list[dict]) -> None:
        """Answer the next requests with these content lists instead of the offline model."""
        self.scripted.extend(contents)

    def message_bodies(self) -> list[dict]:
        return [r.json() for r in self.calls("POST", "/v1/messages") if r.path == "/v1/messages"]

    def _authorised(self, req: Request) -> bool:
        return req.headers.get("x-api-key") == self.api_key or req.headers.get("authorization") == f"Bearer {self.api_key}"

    def _messages(self, req: Request) -> Reply:
        if not self._authorised(req):
            return Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        body = req.json()
        if self.scripted:
            content = self.scripted.popleft()
            stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
            usage = {"input_tokens": EstimatingCounter().count(system=body.get("system"), messages=body["messages"]), "output_tokens": 20}
            message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": body["model"], "content": content,
                       "stop_reason": stop, "usage": usage}
        else:
            message = self.offline.create(**body).to_dict(mode="json")
            message["model"] = self.model_name or body["model"]
        return Reply(200, message, {"request-id": "req_fake"})

    def _count(self, req: Request) -> Reply:
        body = req.json()
        return Reply(200, {"input_tokens": EstimatingCounter().count(system=body.get("system"), messages=body["messages"],
                                                                     tools=body.get("tools"))})


def overloaded(retry_after: str = "0") -> Reply:
    return Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def rate_limited(retry_after: str = "0") -> Reply:
    return Reply(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def server_error() -> Reply:
    return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "internal"}})


def anthropic_env(server: FakeAnthropic) -> dict[str, Any]:
    return {"ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url}
