"""A fake Slack Web API on FakeHTTPServer: chat.postMessage, chat.update and auth.test.

It answers like Slack does: HTTP 200 with `{"ok": false, "error": ...}` for API errors
(not_authed, invalid_auth, channel_not_found, message_not_found, invalid_blocks), and it enforces
the Block Kit limits Slack enforces, so a renderer that breaks them fails here as it would live.

    with FakeSlack() as slack:
        client = WebClient(token=slack.token, base_url=slack.url + "/api/")
        slack.rate_limit_next("chat.postMessage", retry_after=1)   # 429, slack_sdk retries
        slack.fail_next("chat.update", status=500)
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import FakeHTTPServer, Reply, Request

DEFAULT_TOKEN = "xoxb-fake-0000000000-secrettokenvalue"
DEFAULT_CHANNELS = {"C0NIGHTWATCH": "nightwatch"}
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150


@dataclass
class SlackMessage:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None
    edits: int = 0
    history: list[str] = field(default_factory=list)


class FakeSlack:
    def __init__(self, token: str = DEFAULT_TOKEN, channels: dict[str, str] | None = None) -> None:
        self.token = token
        self.channels = dict(channels or DEFAULT_CHANNELS)  # id -> name
        self.messages: dict[str, SlackMessage] = {}  # by ts, in posting order
        self.refuse_replies: str | None = None  # while set, a reply in a thread gets this error (a follow-up that fails)
        self.server = FakeHTTPServer()
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        self.server.route("POST", "/api/auth.test", self._auth_test)
        self.server.route("POST", "/api/chat.postMessage", self._post_message)
        self.server.route("POST", "/api/chat.update", self._update)

    # lifecycle and fault injection ------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> "FakeSlack":
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        # shutdown() waits out the server's 0.5 s poll; do it off the test's clock
        threading.Thread(target=self.server.stop, daemon=True).start()

    def rate_limit_next(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        reply = Reply(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)})
        self.server.fail_next("POST", f"/api/{method}", *[reply] * times)

    def fail_next(self, method: str, status: int = 500, times: int = 1) -> None:
        reply = Reply(status, {"ok": False, "error": "fatal_error"})
        self.server.fail_next("POST", f"/api/{method}", *[reply] * times)

    # inspection -------------------------------------------------------------------------------
    def calls(self, method: str) -> list[Request]:
        return self.server.calls("POST", f"/api/{method}")

    def top_level(self) -> list[SlackMessage]:
        return [m for m in self.messages.values() if m.thread_ts is None]

    def thread(self, ts: str) -> list[SlackMessage]:
        return [m for m in self.messages.values() if m.thread_ts == ts]

    # handlers ---------------------------------------------------------------------------------
    def _auth_test(self, req: Request) -> Reply:
        args, error = self._authorised(req)
        if error:
            return error
        return _ok({"url": "https://fake.slack.com/", "team": "Fake Team", "user": "nightwatch", "user_id": "U0NIGHT"})

    def _post_message(self, req: Request) -> Reply:
        args, error = self._authorised(req)
        if error:
            return error
        channel = self._channel_id(str(args.get("channel", "")))
        if channel is None:
            return _error("channel_not_found")
        blocks, problem = _blocks_of(args)
        if problem:
            return _error(problem)
        if args.get("thread_ts") and self.refuse_replies:
            return _error(self.refuse_replies)
        with self._lock:
            n = next(self._ts)
            message = SlackMessage(channel, f"{1_700_000_000 + n}.{n:06d}", str(args.get("text", "")), blocks,
                                   args.get("thread_ts"))
            if message.thread_ts and message.thread_ts not in self.messages:
                return _error("thread_not_found")
            self.messages[message.ts] = message
        return _ok({"channel": channel, "ts": message.ts, "message": {"text": message.text, "blocks": blocks}})

    def _update(self, req: Request) -> Reply:
        args, error = self._authorised(req)
        if error:
            return error
        channel, ts = self._channel_id(str(args.get("channel", ""))), str(args.get("ts", ""))
        if channel is None:
            return _error("channel_not_found")
        blocks, problem = _blocks_of(args)
        if problem:
            return _error(problem)
        with self._lock:
            message = self.messages.get(ts)
            if message is None or message.channel != channel:
                return _error("message_not_found")
            message.history.append(message.text)
            message.text, message.blocks, message.edits = str(args.get("text", "")), blocks, message.edits + 1
        return _ok({"channel": channel, "ts": ts, "text": message.text})

    # helpers ----------------------------------------------------------------------------------
    def _authorised(self, req: Request) -> tuple[dict[str, Any], Reply | None]:
        args = _arguments(req)
        header = req.headers.get("authorization", "")
        token = header.removeprefix("Bearer ").strip() if header else str(args.get("token", ""))
        if not token:
            return args, _error("not_authed")
        return args, None if token == self.token else _error("invalid_auth")

    def _channel_id(self, channel: str) -> str | None:
        name = channel.removeprefix("#")
        if name in self.channels:
            return name
        return next((cid for cid, cname in self.channels.items() if cname == name), None)


def _arguments(req: Request) -> dict[str, Any]:
    """slack_sdk sends JSON for methods with blocks and a form for the rest."""
    if req.headers.get("content-type", "").startswith("application/json"):
        return req.json() or {}
    return req.form()


def _blocks_of(args: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    blocks = args.get("blocks") or []
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    if not blocks and not args.get("text"):
        return [], "no_text"
    return blocks, _block_problem(blocks)


def _block_problem(blocks: list[dict[str, Any]]) -> str | None:
    """The limits Slack enforces on a message: a violation rejects the whole message."""
    if len(blocks) > MAX_BLOCKS:
        return "invalid_blocks"
    for block in blocks:
        text = (block.get("text") or {}).get("text", "")
        if block.get("type") == "header" and len(text) > MAX_HEADER_TEXT:
            return "invalid_blocks"
        if block.get("type") == "section" and len(text) > MAX_SECTION_TEXT:
            return "invalid_blocks"
        if block.get("type") == "context" and not 1 <= len(block.get("elements", [])) <= 10:
            return "invalid_blocks"
    return None


def _ok(body: dict[str, Any]) -> Reply:
    return Reply(200, {"ok": True, **body})


def _error(code: str) -> Reply:
    return Reply(200, {"ok": False, "error": code})
