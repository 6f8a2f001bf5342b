"""A small threaded HTTP server for service fakes: routes, a request log, and fault injection.

    server = FakeHTTPServer()
    server.route("POST", "/graphql", handler)      # handler(request) -> Reply
    server.fail_next("POST", "/graphql", Reply(429, {"error": "slow down"}, {"retry-after": "0"}))
    server.fail_next("POST", "/graphql", Reply(200, {"data": 1}, reset_after=0))  # the connection drops, no answer
    with server:  # starts on 127.0.0.1:<free port>
        client(base_url=server.url)
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def form(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(self.body.decode()).items()}


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None
    reset_after: int | None = None  # send this many bytes of the whole response (negative: all but so many), then reset

    def reset_after_answer(self, fraction: float = 0.5) -> Reply:
        """This reply cut off part-way: the status line and headers go out, the connection resets inside the body."""
        return replace(self, reset_after=-max(1, round(len(self.encode()) * (1 - fraction))))

    def encode(self) -> bytes:
        if self.raw is not None:
            return self.raw
        if self.body is None:
            return b""
        if isinstance(self.body, (bytes, str)):
            return self.body.encode() if isinstance(self.body, str) else self.body
        return json.dumps(self.body, default=str).encode()


Handler = Callable[[Request], Reply]


class FakeHTTPServer:
    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._faults: dict[tuple[str, str], deque[Reply]] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # configuration -------------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Register a handler; `pattern` is a path with `{name}` placeholders."""
        regex = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "$")
        self._routes.append((method.upper(), regex, handler))

    def fail_next(self, method: str, path: str, *replies: Reply) -> None:
        """The next requests to exactly this method + path get these replies instead of the handler."""
        with self._lock:
            self._faults.setdefault((method.upper(), path), deque()).extend(replies)

    def calls(self, method: str | None = None, path_prefix: str = "") -> list[Request]:
        return [r for r in self.requests if (method is None or r.method == method) and r.path.startswith(path_prefix)]

    # lifecycle -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeHTTPServer":
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                req = Request(self.command, parts.path, parse_qs(parts.query), {k.lower(): v for k, v in self.headers.items()}, body)
                reply = fake._dispatch(req)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.encode()
                if reply.reset_after is not None:
                    self._reset(reply, payload)
                    return
                self.send_response(reply.status)
                headers = {"content-type": "application/json", **{k.lower(): v for k, v in reply.headers.items()}}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _reset(self, reply: Reply, payload: bytes) -> None:
                """Write the first `reset_after` bytes of the response (negative: all but that many), then reset."""
                headers = {"content-type": "application/json", **{k.lower(): v for k, v in reply.headers.items()},
                           "content-length": str(len(payload))}
                head = f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}\r\n"
                raw = (head + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() + payload
                self.close_connection = True
                try:
                    self.wfile.write(raw[:reply.reset_after])
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()  # SO_LINGER 0: the peer sees a reset, not an orderly close
                except OSError:
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeHTTPServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # dispatch ----------------------------------------------------------------------------------
    def _dispatch(self, req: Request) -> Reply:
        with self._lock:
            self.requests.append(req)
            queue = self._faults.get((req.method, req.path))
            if queue:
                return queue.popleft()
        for method, regex, handler in self._routes:
            match = regex.match(req.path)
            if method == req.method and match:
                req.params = match.groupdict()
                try:
                    return handler(req)
                except Exception as exc:  # a broken fake must be loud in the test, not a hang
                    return Reply(500, {"error": f"fake handler failed: {exc!r}"})
        return Reply(404, {"message": f"no fake route for {req.method} {req.path}"})
