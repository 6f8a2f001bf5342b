"""A fault-injecting HTTP proxy for the Messages API: the real SDK on one side, a fake (or any) server on the other.

    with FakeAnthropic() as upstream, FaultProxy(upstream.url) as proxy:
        proxy.schedule(2, "429")      # the 2nd Messages request gets a 429, never reaches the upstream
        proxy.schedule(4, "stall")    # the 4th reaches it, is answered, and the answer arrives too late
        client(base_url=proxy.url)

POST /v1/messages and /v1/messages/count_tokens are forwarded to the upstream with httpx, headers
(authorization, x-api-key, anthropic-beta, anthropic-version, ...) and body as they came. A fault is
scheduled by the 1-based index of a request among the /v1/messages requests the proxy received:

- `429`, `529`, `500`: answered by the proxy with that error; the request is not forwarded.
- `stall`: forwarded and answered upstream; the answer is held `stall_s` before it is sent (set it
  longer than the client's timeout, and the client gives up waiting).
- `reset`: forwarded and answered upstream; the connection is reset part-way through the answer.
- `garbled`: forwarded and answered upstream; the client gets a 200 whose body is cut in half.

`upstream_answered` counts the /v1/messages requests the upstream answered with a 200 (each one a
request the API would have billed); `injected` lists the faults actually injected, in order.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

import httpx

from tests.fakes.anthropic import overloaded, rate_limited, server_error
from tests.fakes.http import FakeHTTPServer, Reply, Request

Fault = Literal["429", "529", "500", "stall", "reset", "garbled"]
REFUSALS: dict[str, Reply] = {"429": rate_limited("0"), "529": overloaded("0"), "500": server_error()}
FORWARDED_FAULTS = frozenset({"stall", "reset", "garbled"})  # the upstream sees these requests and answers them
LOST_ON_THE_WAY = FORWARDED_FAULTS
HOP_BY_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                        "upgrade", "proxy-authorization", "proxy-connection", "accept-encoding"})


@dataclass(frozen=True)
class Injected:
    """One fault the proxy injected: on which Messages request, and what the upstream answered (None: not forwarded)."""

    index: int
    kind: str
    upstream_status: int | None = None

    @property
    def answered_upstream(self) -> bool:
        return self.upstream_status == 200


class FaultProxy(FakeHTTPServer):
    def __init__(self, upstream_url: str, faults: dict[int, Fault] | None = None, stall_s: float = 3.0,
                 upstream_timeout_s: float = 60.0) -> None:
        super().__init__()
        self.upstream_url = upstream_url.rstrip("/")
        self.stall_s = stall_s
        self.upstream_answered = 0
        self.messages_seen = 0
        self.injected: list[Injected] = []
        self._scheduled: dict[int, Fault] = {}
        self._count = threading.Lock()
        self._http = httpx.Client(timeout=upstream_timeout_s)
        for index, kind in (faults or {}).items():
            self.schedule(index, kind)
        self.route("POST", "/v1/messages", self._messages)
        self.route("POST", "/v1/messages/count_tokens", self._forward_reply)

    def schedule(self, index: int, kind: Fault) -> None:
        """The `index`-th Messages request (1-based, counted since the proxy started) gets this fault."""
        if kind not in REFUSALS and kind not in FORWARDED_FAULTS:
            raise ValueError(f"unknown fault {kind!r}")
        self._scheduled[index] = kind

    @property
    def pending(self) -> dict[int, Fault]:
        """Faults scheduled for requests that never came."""
        return dict(self._scheduled)

    def stop(self) -> None:
        super().stop()
        self._http.close()

    # forwarding ------------------------------------------------------------------------------
    def _forward(self, req: Request) -> httpx.Response:
        headers = {k: v for k, v in req.headers.items() if k not in HOP_BY_HOP}
        query = "&".join(f"{k}={v}" for k, values in req.query.items() for v in values)
        url = f"{self.upstream_url}{req.path}" + (f"?{query}" if query else "")
        return self._http.request(req.method, url, headers=headers, content=req.body)

    @staticmethod
    def _reply(answer: httpx.Response, **changes) -> Reply:
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP | {"content-encoding", "date", "server"}}
        return Reply(answer.status_code, headers=headers, raw=answer.content, **changes)

    def _forward_reply(self, req: Request) -> Reply:
        return self._reply(self._forward(req))

    def _messages(self, req: Request) -> Reply:
        with self._count:
            self.messages_seen += 1
            index = self.messages_seen
            kind = self._scheduled.pop(index, None)
            if kind in REFUSALS:
                self.injected.append(Injected(index, kind))
        if kind in REFUSALS:
            return REFUSALS[kind]
        answer = self._forward(req)
        with self._count:
            if answer.status_code == 200:
                self.upstream_answered += 1
            if kind is not None:
                self.injected.append(Injected(index, kind, answer.status_code))
        if kind == "stall":
            return self._reply(answer, delay_s=self.stall_s)
        if kind == "reset":
            return self._reply(answer).reset_after_answer()
        if kind == "garbled":
            body = answer.content
            return Reply(200, headers={"content-type": "application/json"}, raw=body[: len(body) // 2])
        return self._reply(answer)
