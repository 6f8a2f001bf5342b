"""Run one small application under the real New Relic Python agent (developer mode) and drive requests at it.

Runs inside the throwaway environment `scripts/capture_newrelic_python.py` makes; never imported by NightWatch.
The agent sends nothing anywhere in developer mode: it writes each payload it would send to its audit log,
which the capture script reads. Requests reach each application through its real server interface (WSGI,
ASGI, Celery's task call), as gunicorn, uvicorn or a worker would call it; where a server itself produces
the condition (a client that disconnects mid-upload), the input stream fails the way uWSGI's and Starlette's do.
"""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
import sys
from pathlib import Path

import newrelic.agent


class FailingInput(io.RawIOBase):
    """wsgi.input of a client that went away mid-upload: uWSGI and gunicorn raise OSError on read."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        raise OSError("request data read error")


def wsgi_call(app, method: str, path: str, host: str, body: bytes = b"", stream=None) -> str:
    from wsgiref.util import setup_testing_defaults

    query = path.partition("?")[2]
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path.partition("?")[0], "QUERY_STRING": query,
               "HTTP_HOST": host, "SERVER_NAME": host, "CONTENT_LENGTH": str(len(body) or (4096 if stream else 0)),
               "CONTENT_TYPE": "application/octet-stream", "wsgi.input": stream or io.BytesIO(body),
               "HTTP_USER_AGENT": "Mozilla/5.0 (capture)", "REMOTE_ADDR": "203.0.113.7"}
    setup_testing_defaults(environ)
    status: list[str] = []
    try:
        for _ in app(environ, lambda s, headers, exc_info=None: status.append(s)):
            pass
    except Exception as exc:  # a server logs it and answers 500; the agent has recorded it already
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
    for method, path in [("GET", "/orders/7/"), ("GET", "/orders/7/"), ("GET", "/invoices/1/"), ("GET", "/report/?order=latest"),
                         ("GET", "/api/products/3/?limit=ten"), ("GET", "/no-such-page/"), ("GET", "/wp-login.php")]:
        print(method, path, wsgi_call(app, method, path, host))
    print("bad host", wsgi_call(app, "GET", "/orders/7/", "203.0.113.50"))
    print("upload", wsgi_call(app, "POST", "/upload/", host, stream=io.BufferedReader(FailingInput())))
    locker = sqlite3.connect(os.environ["SHOP_DB"])
    locker.execute("BEGIN EXCLUSIVE")
    print("locked", wsgi_call(app, "POST", "/stock/", host))
    locker.rollback()


def drive_flask(work: Path) -> None:
    sys.path.insert(0, str(work / "flask_blog"))
    from blog import app

    for path in ["/posts/1/reading-time?wpm=0", "/posts/1/reading-time", "/archive?since=last-week"]:
        print(path, wsgi_call(app, "GET", path, "blog.example.com"))


async def asgi_call(app, method: str, path: str, disconnect: bool = False) -> str:
    path_only, _, query = path.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "https",
             "path": path_only, "raw_path": path_only.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"events.example.com"), (b"content-length", b"4096"), (b"user-agent", b"capture")],
             "client": ("203.0.113.7", 51000), "server": ("10.0.0.5", 8000)}
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": b"x" * 1024, "more_body": True}, {"type": "http.disconnect"}] if disconnect \
        else [{"type": "http.request", "body": b"", "more_body": False}]

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


DRIVERS = {"django": drive_django, "flask": drive_flask, "fastapi": drive_fastapi, "celery": drive_celery}

if __name__ == "__main__":
    framework, work = sys.argv[1], Path(sys.argv[2])
    newrelic.agent.initialize(str(work / f"newrelic-{framework}.ini"))
    newrelic.agent.register_application(timeout=10.0)
    DRIVERS[framework](work)
    newrelic.agent.shutdown_agent(timeout=10.0)
