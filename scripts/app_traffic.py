"""The request traffic both production-error captures drive at the small applications (`apps/` beside the New Relic
capture, and the Python demo): the same requests, whichever agent or SDK watches them.

Copied into each throwaway environment as `capture_server/app_traffic.py` (site-packages, where a WSGI or ASGI
server's own code lives, so its frames in a stack trace are a library's) and imported by the capture's driver
(`scripts/newrelic_capture/drive.py`, `scripts/sentry_capture/drive.py`), which first starts its agent or SDK.
Requests reach each application through its real server interface (WSGI, ASGI, Celery's task call), as gunicorn,
uvicorn or a worker would call it; where a server itself produces the condition (a client that disconnects
mid-upload), the input stream fails the way uWSGI's and Starlette's do. Each request prints one line (what was
asked, what was answered): the captures keep those lines beside what was reported.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path


class FailingInput(io.RawIOBase):
    """wsgi.input of a client that went away mid-upload: uWSGI and gunicorn raise OSError on read."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        raise OSError("request data read error")


def wsgi_call(app, method: str, path: str, host: str, body: bytes = b"", stream=None, cookie: str = "") -> str:
    """One request through the WSGI interface, as gunicorn calls it; its status line, or what it raised."""
    from wsgiref.util import setup_testing_defaults

    query = path.partition("?")[2]
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path.partition("?")[0], "QUERY_STRING": query,
               "HTTP_HOST": host, "SERVER_NAME": host, "CONTENT_LENGTH": str(len(body) or (4096 if stream else 0)),
               "CONTENT_TYPE": "application/octet-stream", "wsgi.input": stream or io.BytesIO(body),
               "HTTP_USER_AGENT": "Mozilla/5.0 (capture)", "REMOTE_ADDR": "203.0.113.7"}
    if cookie:
        environ["HTTP_COOKIE"] = cookie
    setup_testing_defaults(environ)
    status: list[str] = []
    try:
        for _ in app(environ, lambda s, headers, exc_info=None: status.append(s)):
            pass
    except Exception as exc:  # a server logs it and answers 500; the agent or SDK has recorded it already
        return f"raised {type(exc).__name__}"
    return status[0] if status else "no status"


def drive_django(work: Path) -> None:
    sys.path.insert(0, str(work / "django_shop"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "shop.settings"
    os.environ["SHOP_DB"] = str(work / "shop.sqlite3")
    Path(os.environ["SHOP_DB"]).unlink(missing_ok=True)
    import django
    from django.core.wsgi import get_wsgi_application

    django.setup()
    from shop.views import ensure_tables

    ensure_tables()
    app = get_wsgi_application()
    host = "shop.example.com"
    cookie = "sessionid=8m2kq1v0x7c4d9s3; csrftoken=QdX2pL8rT4vY6wZ0; django_language=en-gb"  # a signed-in browser's
    for method, path in [("GET", "/orders/7/"), ("GET", "/orders/7/"), ("GET", "/invoices/1/"), ("GET", "/report/?order=latest"),
                         ("GET", "/api/products/3/?limit=ten"), ("GET", "/no-such-page/"), ("GET", "/wp-login.php")]:
        print(method, path, wsgi_call(app, method, path, host, cookie=cookie))
    print("bad host", wsgi_call(app, "GET", "/orders/7/", "203.0.113.50"))
    print("upload", wsgi_call(app, "POST", "/upload/", host, stream=io.BufferedReader(FailingInput())))
    locker = sqlite3.connect(os.environ["SHOP_DB"])
    locker.execute("BEGIN EXCLUSIVE")
    print("locked", wsgi_call(app, "POST", "/stock/", host))
    locker.rollback()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released): a connection to it is refused."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


EMPTY_FEED = b'<?xml version="1.0"?><rss version="2.0"><channel><title>Friends</title></channel></rss>'


def drive_flask(work: Path) -> None:
    """The blog's crashes, then its two outside calls that fail without crashing: the newsletter's SMTP relay is down
    (a refused connection; the blog logs a warning with the exception and answers 202) and a feed on its blogroll,
    served here, has no entries (the blog logs an error message, no exception, and answers 200)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Feed(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/rss+xml")
            self.send_header("Content-Length", str(len(EMPTY_FEED)))
            self.end_headers()
            self.wfile.write(EMPTY_FEED)

        def log_message(self, format: str, *args) -> None:  # the driver's stdout is the request log
            pass

    feeds = ThreadingHTTPServer(("127.0.0.1", 0), Feed)
    threading.Thread(target=feeds.serve_forever, daemon=True).start()
    os.environ["BLOG_SMTP_PORT"] = str(closed_port())
    os.environ["BLOG_FEEDS"] = f"http://127.0.0.1:{feeds.server_port}/feed.xml"
    sys.path.insert(0, str(work / "flask_blog"))
    from blog import app

    try:
        for path in ["/posts/1/reading-time?wpm=0", "/posts/1/reading-time", "/archive?since=last-week"]:
            print(path, wsgi_call(app, "GET", path, "blog.example.com"))
        for path in ["/newsletter/send", "/blogroll/refresh"]:
            print("POST", path, wsgi_call(app, "POST", path, "blog.example.com"))
    finally:
        feeds.shutdown()


async def asgi_call(app, method: str, path: str, disconnect: bool = False, body: bytes | None = None) -> str:
    path_only, _, query = path.partition("?")
    length = str(len(body) if body is not None else 4096).encode()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "https",
             "path": path_only, "raw_path": path_only.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"events.example.com"), (b"content-length", length), (b"user-agent", b"capture"),
                         (b"content-type", b"application/json")],
             "client": ("203.0.113.7", 51000), "server": ("10.0.0.5", 8000)}
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": b"x" * 1024, "more_body": True}, {"type": "http.disconnect"}] if disconnect \
        else [{"type": "http.request", "body": body or b"", "more_body": False}]

    async def receive() -> dict:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    try:
        await app(scope, receive, send)
    except Exception as exc:
        return f"raised {type(exc).__name__}"
    return str(next((m["status"] for m in sent if m["type"] == "http.response.start"), "no status"))


def drive_fastapi(work: Path) -> None:
    sys.path.insert(0, str(work / "fastapi_events"))
    from events_api import app

    async def run() -> None:
        for path in ["/events/launch", "/events/concert"]:
            print(path, await asgi_call(app, "GET", path))
        print("upload", await asgi_call(app, "POST", "/events/launch/photos", disconnect=True))

    asyncio.run(run())


def drive_celery(work: Path) -> None:
    sys.path.insert(0, str(work / "celery_jobs"))
    from jobs import send_digest

    try:
        send_digest.delay("weekly")
    except Exception as exc:
        print("task raised", type(exc).__name__)


def drive_bookshop(work: Path, after_each: Callable[[], None] = lambda: None) -> None:
    """NightWatch's Python demo (nightwatch/demo_python/app), deployed at `work/srv/bookshop`: a night of traffic
    with every planted bug hit a different number of times, healthy requests, and noise. `after_each` runs after
    each kind of request (the New Relic driver runs one of the agent's harvest cycles there)."""
    root = work / "srv" / "bookshop"
    sys.path.insert(0, str(root))
    os.environ["BOOKSHOP_DB"] = str(root / "bookshop.sqlite3")
    Path(os.environ["BOOKSHOP_DB"]).unlink(missing_ok=True)
    from bookshop import storage
    from bookshop.app import app

    storage.initialise()
    zero = {"lines": [{"isbn": "9780553418026", "unit_price": 12.0, "quantity": 0}]}
    waiting = {"lines": [{"isbn": "9780553418026", "unit_price": 12.0, "quantity": 1}], "backordered": ["9780553418026"]}
    sales = b"isbn,week,quantity\n9780553418026,2026-W47,3\n9780141439518,2026-W47,1\n"
    traffic = [("GET", "/books/9780553418026/price?currency=GBP", None, 14), ("GET", "/books/new", None, 9),
               ("GET", "/books/new?since=2014-01-01", None, 6), ("GET", "/authors/terry-pratchett/debut", None, 3),
               ("POST", "/orders/total", json.dumps(zero).encode(), 5), ("POST", "/orders/shipping", json.dumps(waiting).encode(), 4),
               ("POST", "/coupons/check", b"{}", 11), ("POST", "/reports/weekly", sales, 2),
               ("GET", "/books/9780553418026/price?currency=USD", None, 30), ("POST", "/coupons/check", b'{"code": "bookworm"}', 12),
               ("GET", "/wp-login.php", None, 20)]

    async def run() -> None:
        for method, path, body, times in traffic:
            answers = {await asgi_call(app, method, path, body=body) for _ in range(times)}
            print(method, path, times, sorted(answers))
            after_each()
        for _ in range(7):
            await asgi_call(app, "POST", "/covers/9780553418026", disconnect=True)
        print("POST /covers (client gone) 7")

    asyncio.run(run())
    locker = sqlite3.connect(os.environ["BOOKSHOP_DB"])
    locker.execute("BEGIN EXCLUSIVE")
    print("POST /stock (locked) 3", {asyncio.run(asgi_call(app, "POST", "/stock/9780553418026/reserve")) for _ in range(3)})
    locker.rollback()


def drive_gunicorn(work: Path, launch: list[str], env: dict[str, str]) -> None:
    """The real gunicorn, started by `launch` (gunicorn's path and options, or a wrapper that runs it) with a 2 s
    worker timeout and `env`; one request to the blog's export that takes 10 s, so the master aborts the worker mid-request
    (WORKER TIMEOUT)."""
    import signal
    import socket
    import subprocess
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([*launch, "--timeout", "2", "--workers", "1", "--bind", f"127.0.0.1:{port}",
                               "exports:app"], cwd=work / "flask_blog", env=env, start_new_session=True)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        try:
            print("GET /export", urllib.request.urlopen(f"http://127.0.0.1:{port}/export", timeout=30).status)
        except urllib.error.HTTPError as exc:
            print("GET /export", exc.code)
        time.sleep(3)  # the aborted worker's agent or SDK sends what it kept as the worker exits
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:  # a worker that does not exit (sentry-sdk 3.0's, measured): stop them all
            print("gunicorn did not stop on SIGINT within 15 s; killed", file=sys.stderr)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)


DRIVERS: dict[str, Callable[..., None]] = {"django": drive_django, "flask": drive_flask, "fastapi": drive_fastapi,
                                           "celery": drive_celery, "bookshop": drive_bookshop}
