"""A case's reproduction under the real Sentry SDK: what `ctfd.py --sentry` and `healthchecks.py --sentry` share.

The case is deployed as for the New Relic capture (the parent's tree at its production path, its pinned
requirements in its venv), with today's 2.x `sentry-sdk` in place of the agent; its driver runs the same steps with
the SDK started as the deployment would start it (`capture_server.sentry_drive.start_sdk`: DSN, release = the
deployed commit, environment, server name, default integrations) and a transport that keeps each event. Every event
is written, verbatim, to the case's `sentry_events.json` (the format of the demo's: `nightwatch.sentry-sdk-events/1`),
after checking that the case's error is there with its crash frame where the case says.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from capture_sentry_python import DSN, FORMAT, SDK2, clean_environment, dump, installed, site_packages
from capture_sentry_python import make_environment as make_sentry_environment

HERE = Path(__file__).resolve().parent


def environment(venv: Path, requirements: Path, driver: str, extra: str) -> Path:
    """The case's venv: its requirements and sentry-sdk with the framework's extra (`sentry-sdk[flask]`, as Sentry's
    setup page says: without blinker, which Flask 2.1 does not require, the Flask integration stays off and an
    error reaches Sentry only as Flask's log record), with the case's driver and `monitors.py` beside the capture's
    own driver in site-packages/capture_server/."""
    python = make_sentry_environment(SDK2, venv, ["-r", str(requirements)], extra)
    server = site_packages(python) / "capture_server"
    for name in (driver, "monitors.py"):
        shutil.copy(HERE / name, server / name)
    return python


def run(python: Path, module: str, case: dict, spec: dict, work: Path, server_name: str,
        drop: tuple[str, ...] = ()) -> tuple[list[str], list[dict]]:
    """The case's driver under the SDK: what it printed, and every event the SDK sent."""
    work.mkdir(parents=True, exist_ok=True)
    events_file = work / f"{case['slug']}.sentry-events.jsonl"
    events_file.unlink(missing_ok=True)
    init = {"dsn": DSN, "release": case["parent"], "environment": "production", "server_name": server_name}
    env = {**{k: v for k, v in clean_environment().items() if not k.startswith(drop)},
           "CAPTURE_SENTRY_EVENTS_TO": str(events_file), "CAPTURE_SENTRY_OPTIONS": json.dumps(init)}
    proc = subprocess.run([str(python), "-m", module, case["root"], "sentry", json.dumps(spec)],
                          capture_output=True, text=True, env=env, cwd=case["root"], timeout=900)
    print(proc.stdout, end="")
    if proc.returncode != 0:
        raise SystemExit(f"{case['slug']}: the driver failed under sentry-sdk:\n{proc.stderr[-4000:]}")
    lines = events_file.read_text(encoding="utf-8").splitlines() if events_file.exists() else []
    return proc.stdout.splitlines(), [json.loads(line) for line in lines]


def app_frames(event: dict, case: dict) -> list[tuple[str, int]]:
    """The raised exception's frames of the deployed tree (not the venv), outermost first, repository-relative.
    Code a library compiled from a string (SQLAlchemy's generated methods) has the file name `<string>`, which the
    SDK makes absolute against the working directory, so it seems to lie in the tree: it is no file of it."""
    root, venv = case["root"].rstrip("/") + "/", case["venv"].rstrip("/") + "/"
    frames = event["exception"]["values"][-1].get("stacktrace", {}).get("frames", [])
    return [(f["abs_path"][len(root):], f["lineno"]) for f in frames
            if f.get("abs_path", "").startswith(root) and not f["abs_path"].startswith(venv)
            and not f.get("filename", "").startswith("<")]


def check(events: list[dict], case: dict, error_class: str, crash: tuple[str, int | None]) -> None:
    """The case's error (New Relic's `module:Class` naming) is among the events, crashing where the case says."""
    module, _, name = error_class.partition(":")
    seen = []
    for event in events:
        raised = event.get("exception", {}).get("values", [{}])[-1]
        if raised.get("type") != name or (raised.get("module") or "builtins") != module:
            continue
        frames = app_frames(event, case)
        seen.append(frames[-1] if frames else None)
        if frames and frames[-1][0] == crash[0] and crash[1] in (None, frames[-1][1]):
            return
    raise SystemExit(f"{case['slug']}: no {error_class} event crashing at {crash} under sentry-sdk; crash frames "
                     f"seen {seen}; events {[e.get('exception', {}).get('values', [{}])[-1].get('type') for e in events]}")


def write(folder: Path, python: Path, case: dict, requests: list[str], events: list[dict], keys: tuple[str, ...]) -> Path:
    """`folder/sentry_events.json`: every event, verbatim, and what produced them."""
    versions = installed(python)
    document = {
        "format": FORMAT,
        "about": "the case's reproduction as the real sentry-sdk reported it: every error event verbatim, as its "
                 "transport received it; regenerate with the case's builder in scripts/python_evals/ and --sentry",
        "captured": {"versions": {k: versions[k] for k in ("sentry-sdk", *keys) if k in versions},
                     "requests": requests, "deployed_at": case["root"], "venv": case["venv"]},
        "events": events,
    }
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "sentry_events.json"
    out.write_text(dump(document), encoding="utf-8")
    return out
