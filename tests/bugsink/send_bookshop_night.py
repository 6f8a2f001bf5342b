"""Send one night of the Python demo's traffic to a Bugsink through the real sentry-sdk, the application called
through its ASGI interface in this process (as scripts/capture_sentry_python.py captures it): `drive_bookshop` of
scripts/app_traffic.py, every planted bug and the noise.

    BOOKSHOP_SENTRY_DSN=... BOOKSHOP_RELEASE=bookshop@1.1 BOOKSHOP_EVENTS_AT=2026-11-22T03:00:00+00:00 \\
    BOOKSHOP_FIXED='/orders/shipping' python send_bookshop_night.py WORK    # deployed at WORK/srv/bookshop

The night is the test's, not the calendar's: the SDK's `before_send` hook dates each event BOOKSHOP_EVENTS_AT (a
second apart, in the order they were raised). BOOKSHOP_FIXED lists routes (`/books/{isbn}/price`, comma-separated)
that this release no longer fails on: their requests are not made, as after a fix was deployed; BOOKSHOP_ONLY, the
routes whose requests are the only ones made (a quieter night). BOOKSHOP_ONCE=1 makes each distinct request once.
"""

import os
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

import sentry_sdk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import app_traffic  # noqa: E402

AT = datetime.fromisoformat(os.environ["BOOKSHOP_EVENTS_AT"])


def routes(variable: str) -> list[re.Pattern]:
    return [re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(route)) + "$")
            for route in os.environ.get(variable, "").split(",") if route]


FIXED, ONLY = routes("BOOKSHOP_FIXED"), routes("BOOKSHOP_ONLY")
sent = 0


def dated(event: dict, hint: dict) -> dict:
    global sent
    event["timestamp"] = (AT + timedelta(seconds=sent)).isoformat()
    sent += 1
    return event


sentry_sdk.init(dsn=os.environ["BOOKSHOP_SENTRY_DSN"], release=os.environ["BOOKSHOP_RELEASE"], environment="production",
                server_name="bookshop-web-1", before_send=dated, shutdown_timeout=60)
calling = app_traffic.asgi_call
ONCE = os.environ.get("BOOKSHOP_ONCE") == "1"
made: dict[tuple, str] = {}


async def unless_fixed(app, method: str, path: str, disconnect: bool = False, body: bytes | None = None) -> str:
    if any(route.match(path.partition("?")[0]) for route in FIXED):
        return "fixed"
    if ONLY and not any(route.match(path.partition("?")[0]) for route in ONLY):
        return "not made"
    request = (method, path, disconnect, body)
    if ONCE and request in made:
        return made[request]
    made[request] = await calling(app, method, path, disconnect=disconnect, body=body)
    return made[request]


app_traffic.asgi_call = unless_fixed
app_traffic.drive_bookshop(Path(sys.argv[1]))
sentry_sdk.flush(timeout=60)
print(f"sent {sent} event(s)", flush=True)
