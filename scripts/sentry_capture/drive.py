"""Run one small application under the real Sentry Python SDK and drive requests at it, keeping every event it sends.

Runs inside the throwaway environment `scripts/capture_sentry_python.py` makes (copied there as
`capture_server/sentry_drive.py`, beside `capture_server/app_traffic.py`); never imported by NightWatch:

    CAPTURE_SENTRY_EVENTS_TO=events.jsonl CAPTURE_SENTRY_OPTIONS='{"dsn": ...}' \\
        python -m capture_server.sentry_drive FRAMEWORK WORK

The SDK is started as a production team starts it (`sentry_sdk.init` with a DSN, release, environment, server name
and its default integrations, which enable the framework's own), except for its transport: `CapturingTransport`
takes the place of the HTTP one, so nothing is sent anywhere and each event's payload is written, as the bytes the
HTTP transport would have posted, one JSON line per event to CAPTURE_SENTRY_EVENTS_TO. The requests are
`capture_server.app_traffic`'s (`scripts/app_traffic.py`), the same the New Relic capture drives.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import sentry_sdk
from sentry_sdk.transport import Transport

EVENTS_TO = "CAPTURE_SENTRY_EVENTS_TO"
OPTIONS = "CAPTURE_SENTRY_OPTIONS"


def keep(payload: bytes) -> None:
    """One event's JSON payload, appended as a line (gunicorn's worker and the driver may both write)."""
    line = json.dumps(json.loads(payload), sort_keys=True)
    with open(os.environ[EVENTS_TO], "a", encoding="utf-8") as out:
        out.write(line + "\n")


class CapturingTransport(Transport):
    """The SDK's transport, writing instead of sending. Keeps the items of type "event" (errors); transactions,
    sessions and client reports are left out."""

    def capture_envelope(self, envelope) -> None:  # 2.x and 3.x send every event as an envelope item
        for item in envelope.items:
            if item.type == "event":
                keep(item.payload.get_bytes())

    def capture_event(self, event) -> None:  # 1.x posts an error event alone, as json_dumps(event)
        from sentry_sdk.utils import json_dumps

        keep(json_dumps(event))


def integration(name: str, settings: dict):
    """An integration as CAPTURE_SENTRY_OPTIONS names it, JSON having no classes: `"logging": {"event_level":
    "WARNING"}` is `LoggingIntegration(event_level=logging.WARNING)`."""
    if name == "logging":
        from sentry_sdk.integrations.logging import LoggingIntegration

        return LoggingIntegration(**{k: getattr(logging, v) if k.endswith("level") and isinstance(v, str) else v
                                     for k, v in settings.items()})
    raise SystemExit(f"sentry_drive: no integration {name!r}")


def start_sdk() -> None:
    """`sentry_sdk.init` with the options the capture script chose (CAPTURE_SENTRY_OPTIONS) and the capturing
    transport; `integrations`, if given, is a mapping of integration name to its settings (`integration`), which
    the SDK adds to its default integrations as a team's own list would."""
    options = json.loads(os.environ[OPTIONS])
    if "integrations" in options:
        options["integrations"] = [integration(name, settings) for name, settings in options["integrations"].items()]
    sentry_sdk.init(transport=CapturingTransport, **options)


GUNICORN_CONF = """# What a deployment's gunicorn.conf.py does so that each worker reports its errors to Sentry
def post_fork(server, worker):
    from capture_server.sentry_drive import start_sdk

    start_sdk()
"""


def serve_gunicorn(work: Path) -> None:
    """The real gunicorn, whose workers start the SDK as they fork (`post_fork` in its config file), serving the
    blog's slow export with a 2 s worker timeout (`app_traffic.drive_gunicorn`)."""
    from capture_server.app_traffic import drive_gunicorn

    conf = work / "gunicorn-sentry.conf.py"
    conf.write_text(GUNICORN_CONF, encoding="utf-8")
    drive_gunicorn(work, [str(Path(sys.executable).parent / "gunicorn"), "--config", str(conf)], dict(os.environ))


def main() -> None:
    framework, work = sys.argv[1], Path(sys.argv[2])
    if framework == "gunicorn":  # the SDK runs inside gunicorn's worker, not in this process
        serve_gunicorn(work)
        return
    start_sdk()
    from capture_server.app_traffic import DRIVERS

    DRIVERS[framework](work)
    sentry_sdk.flush(timeout=10)


if __name__ == "__main__":
    main()
