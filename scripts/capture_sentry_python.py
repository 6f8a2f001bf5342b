"""Capture what the real Sentry Python SDK sends, as test fixtures (`tests/captured/sentry_python/`).

    python scripts/capture_sentry_python.py            # a few minutes; needs the package registry
    python scripts/capture_sentry_python.py --demo     # the Python demo's night (nightwatch/demo_python/sentry_events.json)

The Sentry twin of `capture_newrelic_python.py`: installs `sentry-sdk` (today's 2.x and 3.x, and a 1.x for Django)
and the same framework pins into throwaway environments made with uv from this Python, runs the same small
applications (`scripts/newrelic_capture/apps/`) with the same requests (`scripts/app_traffic.py`), and keeps,
verbatim, every error event the SDK would have sent: the driver (`scripts/sentry_capture/drive.py`) starts the SDK as
a production team does (DSN, release, environment, server name, default integrations) with a transport that writes
each event's payload instead of sending it. Nothing is sent anywhere; the DSN's host is never contacted.

The applications live under a fixed folder (WORK below), so regenerated fixtures differ only where the SDK or the
frameworks changed what they report (and in event ids, timestamps and the like, which change every run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from capture_newrelic_python import DEMO, DEMO_PACKAGES, PACKAGES

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "scripts" / "newrelic_capture" / "apps"
DRIVER = ROOT / "scripts" / "sentry_capture" / "drive.py"
TRAFFIC = ROOT / "scripts" / "app_traffic.py"
OUT = ROOT / "tests" / "captured" / "sentry_python"
WORK = Path("/tmp/nightwatch-sentry-capture")
# today's 2.x and 3.x; the last 1.x, and the last 1.x that flags every frame in_app when no frame matches
# in_app_include (1.16.0 started to flag site-packages frames not in_app)
SDK1, SDK1_OLD, SDK2, SDK3 = "1.45.1", "1.15.0", "2.76.0", "3.0.0"
DSN = "https://4f0c2b9a7d3e41c8b5a6e9d1f2c3b4a5@o1234567.ingest.sentry.example.com/7654321"
RELEASE = "8c1f4e2b9d7a3c5e6f0b1a2d3e4f5a6b7c8d9e0f"  # what a deploy sets: the git commit it shipped
SERVERS = {"django": "shop-web-1", "flask": "blog-web-1", "fastapi": "events-api-1", "celery": "jobs-worker-1",
           "gunicorn": "blog-web-2", "bookshop": "bookshop-web-1"}
FRAMEWORKS = ("celery", "django", "fastapi", "flask", "gunicorn")
# (fixture, framework, sentry-sdk version, init options beyond the common ones): every framework under 2.x and 3.x
# with the SDK's defaults (the gunicorn one is the Flask blog's export aborted by gunicorn's worker timeout); Django
# under 2.x with send_default_pii (teams set it: cookies, user, unfiltered headers), and under two 1.x, still in
# production in many places; Flask under 2.x with the logging integration's event_level lowered to WARNING (what a
# team sets to get its logged warnings into Sentry: by default a warning is only a breadcrumb), which the driver
# reads as LoggingIntegration(event_level=logging.WARNING)
CAPTURES = [*((f"{fw}-timeout-sdk{sdk[0]}" if fw == "gunicorn" else f"{fw}-sdk{sdk[0]}", fw, sdk, {})
              for sdk in (SDK2, SDK3) for fw in FRAMEWORKS),
            ("django-sdk2-pii", "django", SDK2, {"send_default_pii": True}), ("django-sdk1", "django", SDK1, {}),
            ("flask-sdk1-15", "flask", SDK1_OLD, {}),
            ("flask-sdk2-logging", "flask", SDK2, {"integrations": {"logging": {"event_level": "WARNING"}}})]
DEMO_OUT = DEMO / "sentry_events.json"
FORMAT = "nightwatch.sentry-sdk-events/1"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", choices=[c[0] for c in CAPTURES], action="append")
    parser.add_argument("--demo", action="store_true", help="capture the Python demo's night into sentry_events.json")
    args = parser.parse_args()
    if WORK.exists():
        shutil.rmtree(WORK)
    shutil.copytree(APPS, WORK)
    if args.demo:
        return capture_demo()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, framework, sdk, extra in CAPTURES:
        if args.only and name not in args.only:
            continue
        python = make_environment(sdk, WORK / f"venv-sdk{sdk}", PACKAGES)
        capture = run_framework(python, framework, name, options(framework, extra), cwd=WORK)
        out = args.out / f"{name}.json"
        out.write_text(dump(capture), encoding="utf-8")
        print(f"{name}: sentry-sdk {capture['sdk_version']}, {len(capture['events'])} events -> {out}")
    return 0


def options(framework: str, extra: dict) -> dict:
    """The `sentry_sdk.init` options a production deployment passes (the transport aside)."""
    return {"dsn": DSN, "release": RELEASE, "environment": "production", "server_name": SERVERS[framework], **extra}


def make_environment(sdk: str, venv: Path, packages: list[str], extra: str = "") -> Path:
    """A venv with sentry-sdk (with its `extra`, as Sentry's setup page for a framework says to install it) and
    `packages`, and the driver where a WSGI/ASGI server's own code would be (site-packages), so its frames in a
    stack trace are a library's, as gunicorn's or uvicorn's are."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    uv = shutil.which("uv") or str(ROOT / ".tools" / "uv" / "bin" / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), f"sentry-sdk{f'[{extra}]' if extra else ''}=={sdk}", *packages],
                   check=True)
    server = site_packages(python) / "capture_server"
    server.mkdir(exist_ok=True)
    shutil.copy(DRIVER, server / "sentry_drive.py")
    shutil.copy(TRAFFIC, server / "app_traffic.py")
    return python


def site_packages(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def installed(python: Path) -> dict[str, str]:
    """Every distribution in the venv, by lower-case name (uv's venvs have no pip to list them)."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))")
    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)


def clean_environment() -> dict[str, str]:
    """This process's environment without what an SDK or agent would read from it (SENTRY_DSN, SENTRY_RELEASE...)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SENTRY_", "NEW_RELIC_", "NIGHTWATCH_", "ANTHROPIC_", "CAPTURE_SENTRY_"))}


def run_framework(python: Path, framework: str, name: str, init: dict, cwd: Path) -> dict:
    """Drive `framework`'s application under the SDK; the events it sent, verbatim, with what was asked of it."""
    events_file = WORK / f"events-{name}.jsonl"
    events_file.unlink(missing_ok=True)
    env = {**clean_environment(), "CAPTURE_SENTRY_EVENTS_TO": str(events_file),
           "CAPTURE_SENTRY_OPTIONS": json.dumps(init)}
    proc = subprocess.run([str(python), "-m", "capture_server.sentry_drive", framework, str(WORK)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the driver failed:\n{proc.stderr[-3000:]}")
    versions = installed(python)
    wanted = ["sentry-sdk", *(p.split("==")[0] for p in PACKAGES), "starlette", "werkzeug"]
    events = [json.loads(line) for line in events_file.read_text(encoding="utf-8").splitlines()] \
        if events_file.exists() else []
    return {
        "about": "error events the real sentry-sdk sent, each payload verbatim as its transport received it; "
                 "regenerate with scripts/capture_sentry_python.py",
        "framework": framework, "sdk_version": versions["sentry-sdk"], "work_root": str(WORK),
        "init_options": init,
        "versions": {w: versions[w] for w in wanted if w in versions},
        "requests": proc.stdout.splitlines(),
        "events": events,
    }


def dump(document: dict) -> str:
    """The document as JSON, each event on one line of its own (an event with every frame's locals is tens of
    kilobytes: indented, the demo's night would be half as large again, and a diff would be unreadable)."""
    head = json.dumps({k: v for k, v in document.items() if k != "events"}, indent=1, sort_keys=True)
    events = ",\n".join(json.dumps(event, sort_keys=True) for event in document["events"])
    return head[:-2] + ',\n "events": [\n' + events + "\n ]\n}\n"


def capture_demo() -> int:
    """The demo's night: its application deployed under WORK/srv/bookshop (venv inside, the service's working
    directory), driven under today's 2.x SDK, and every event written to the demo's `sentry_events.json`."""
    root = WORK / "srv" / "bookshop"
    shutil.copytree(DEMO / "app", root, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.sqlite3"))
    python = make_environment(SDK2, root / "venv", DEMO_PACKAGES)
    capture = run_framework(python, "bookshop", "bookshop", options("bookshop", {}), cwd=root)
    versions = {k: v for k, v in capture["versions"].items() if k in ("sentry-sdk", "fastapi", "starlette")}
    export = {
        "format": FORMAT,
        "about": "the Python demo's night as the real sentry-sdk reported it: every error event verbatim, as its "
                 "transport received it; regenerate with scripts/capture_sentry_python.py --demo",
        "captured": {"versions": versions, "requests": capture["requests"], "deployed_at": str(root),
                     "init_options": capture["init_options"]},
        "events": capture["events"],
    }
    DEMO_OUT.write_text(dump(export), encoding="utf-8")
    print(f"bookshop: sentry-sdk {capture['sdk_version']}, {len(export['events'])} events -> {DEMO_OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
