"""Drive the Python demo's night at a served bookshop over real HTTP: the traffic of `drive_bookshop` in
scripts/app_traffic.py (the requests the New Relic and Sentry captures made), each request sent to the server at
BOOKSHOP_URL instead of through the ASGI interface in this process.

    BOOKSHOP_URL=http://127.0.0.1:<port> python drive_bookshop.py WORK    # the application deployed at WORK/srv/bookshop

`drive_bookshop` itself makes the application's database (WORK/srv/bookshop/bookshop.sqlite3, the server's
BOOKSHOP_DB) and, for the locked-database noise, holds an exclusive lock on it while the requests are answered, so
the server's own write waits for it and fails as it would in production. A client that goes away mid-upload is a
real connection that sends the headers and part of the body, then closes.
"""

import asyncio
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import app_traffic  # noqa: E402

BASE = os.environ["BOOKSHOP_URL"].rstrip("/")
# as app_traffic.asgi_call sends them; one connection per request, as uvicorn closes a connection whose request
# raised after the 500 went out (without saying so in the response), and the next request on it would be reset
HEADERS = {"user-agent": "capture", "content-type": "application/json", "connection": "close"}
CLIENT = httpx.Client(timeout=60)  # a hang guard per request; every request is answered in milliseconds


async def http_call(app, method: str, path: str, disconnect: bool = False, body: bytes | None = None) -> str:
    """`app_traffic.asgi_call` over HTTP: the status the server answered (`app` is not used)."""
    if disconnect:
        return await gone_mid_upload(method, path)
    return str(CLIENT.request(method, BASE + path, content=body, headers=HEADERS).status_code)


async def gone_mid_upload(method: str, path: str) -> str:
    """A client that announces 4096 bytes, sends 1024 and closes the connection."""
    where = urlsplit(BASE)
    reader, writer = await asyncio.open_connection(where.hostname, where.port)
    head = f"{method} {path} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/octet-stream\r\nContent-Length: 4096\r\n\r\n"
    writer.write(head.encode() + b"x" * 1024)
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    return "closed"


app_traffic.asgi_call = http_call
app_traffic.drive_bookshop(Path(sys.argv[1]))
