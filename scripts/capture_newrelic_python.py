"""Capture what the real New Relic Python agent reports, as test fixtures (`tests/captured/newrelic_python/`).

    python scripts/capture_newrelic_python.py            # about a minute; needs the package registry

Installs the `newrelic` agent and the frameworks (pinned below) from the registry into a throwaway
environment, runs small Django (with Django REST framework), Flask, FastAPI and Celery applications
(`scripts/newrelic_capture/apps/`) under the agent in developer mode, and keeps, verbatim, the error
payloads the agent would have sent (`error_event_data`: one TransactionError event per error;
`error_data`: the error traces with their stack traces), read from the agent's own audit log.
Nothing is sent anywhere: developer mode answers the agent with canned collector replies.

The applications live under a fixed folder (WORK below), so regenerated fixtures differ only where the
agent or the frameworks changed what they report.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "scripts" / "newrelic_capture"
OUT = ROOT / "tests" / "captured" / "newrelic_python"
WORK = Path("/tmp/nightwatch-newrelic-capture")
PACKAGES = ["django==5.2.19", "djangorestframework==3.16.1", "flask==3.1.3", "fastapi==0.165.0", "celery==5.7.0",
            "gunicorn==23.0.0"]
AGENT = "14.1.0"
APPS = {"django": "shop-production", "flask": "blog-production", "fastapi": "events-production", "celery": "jobs-production"}
# (fixture, framework, agent): every framework under today's agent, and Django under the oldest agent still seen
# in production (8.x to 12.x report a request's status only as `response.status`)
CAPTURES = [*((name, name, AGENT) for name in sorted(APPS)), ("django-agent8", "django", "8.11.0"),
            ("gunicorn-timeout", "gunicorn", AGENT)]
APPS["gunicorn"] = "blog-production"  # the Flask blog's slow export, served by gunicorn with a 2 s worker timeout
# The Python demo (nightwatch/demo_python/app) on the FastAPI it pins, deployed as /srv/bookshop with its venv inside
DEMO = ROOT / "nightwatch" / "demo_python"
DEMO_APP_NAME = "bookshop-production"
DEMO_PACKAGES = ["fastapi==0.150.0"]
KEPT = ("error_event_data", "error_data")
INI = """[newrelic]
app_name = {app_name}
developer_mode = true
startup_timeout = 10.0
audit_log_file = {audit}
log_file = {log}
log_level = info
monitor_mode = true
error_collector.enabled = true
distributed_tracing.enabled = true
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", choices=[c[0] for c in CAPTURES], action="append")
    parser.add_argument("--demo", action="store_true", help="capture the Python demo's night into its NerdGraph export")
    args = parser.parse_args()
    if WORK.exists():
        shutil.rmtree(WORK)
    shutil.copytree(HERE / "apps", WORK)
    if args.demo:
        return capture_demo()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, framework, agent in CAPTURES:
        if args.only and name not in args.only:
            continue
        capture = run_framework(make_environment(agent, WORK / _venv_name(agent), PACKAGES), framework, name, agent)
        (args.out / f"{name}.json").write_text(json.dumps(capture, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        counts = {k: sum(len(p[2] if k == "error_event_data" else p[1]) for p in v) for k, v in capture["payloads"].items()}
        print(f"{name}: newrelic {agent}, {counts} -> {args.out / (name + '.json')}")
    return 0


def _venv_name(agent: str) -> str:
    return "venv" if agent == AGENT else f"venv-{agent.split('.')[0]}"


def make_environment(agent: str, venv: Path, packages: list[str]) -> Path:
    """A venv with the agent and `packages`, and the driver where a WSGI/ASGI server's own code would be
    (site-packages), so its frames in a stack trace are a library's, as gunicorn's or uvicorn's are."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    uv = shutil.which("uv") or str(ROOT / ".tools" / "uv" / "bin" / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), f"newrelic=={agent}", *packages], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    server = Path(site) / "capture_server"
    server.mkdir()
    shutil.copy(HERE / "drive.py", server / "drive.py")
    shutil.copy(ROOT / "scripts" / "app_traffic.py", server / "app_traffic.py")
    return python


def run_framework(python: Path, framework: str, name: str, agent: str, app_name: str = "") -> dict:
    audit, log = WORK / f"audit-{name}.log", WORK / f"agent-{name}.log"
    ini = WORK / f"newrelic-{framework}.ini"
    app_name = app_name or APPS[framework]
    ini.write_text(INI.format(app_name=app_name, audit=audit, log=log), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEW_RELIC_", "NIGHTWATCH_", "ANTHROPIC_"))}
    command = [str(python), "-m", "capture_server.drive", framework, str(WORK)]
    if framework == "gunicorn":
        command = [str(python), "-m", "capture_server.drive", "gunicorn", str(WORK), str(ini)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=WORK, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the driver failed:\n{proc.stderr[-3000:]}")
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True)
    installed = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout or "[]")} if listed.returncode == 0 else {}
    wanted = [f"newrelic=={agent}", *PACKAGES]
    return {
        "about": "payloads the New Relic Python agent sent in developer mode, read from its audit log; regenerate "
                 "with scripts/capture_newrelic_python.py",
        "framework": framework, "app_name": app_name, "work_root": str(WORK),
        "versions": {w.split("==")[0]: installed.get(w.split("==")[0], w.split("==")[1]) for w in wanted},
        "requests": proc.stdout.splitlines(),
        "payloads": read_audit_log(audit),
    }


def read_audit_log(path: Path) -> dict[str, list]:
    """The agent's audit log holds one entry per request it would send: PARAMS (with the collector method) and
    DATA (the decoded JSON payload, pretty-printed as a Python literal)."""
    kept: dict[str, list] = {name: [] for name in KEPT}
    for entry in path.read_text(encoding="utf-8").split("\n" + "=" * 78 + "\n"):
        if "PARAMS: " not in entry or "DATA: " not in entry:
            continue
        params = ast.literal_eval(entry.split("PARAMS: ", 1)[1].split("\n", 1)[0])
        method = (params or {}).get("method")
        if method in kept:
            data = ast.literal_eval(entry.split("DATA: ", 1)[1].strip())
            kept[method].append(data)
    return kept


def capture_demo() -> int:
    """The demo's night: its application deployed under WORK/srv/bookshop (venv inside), driven under the agent,
    and the payloads written as the NerdGraph export the demo night reads (`nerdgraph_export.json`)."""
    sys.path.insert(0, str(ROOT))
    from nightwatch.sources.agent_capture import export_of

    root = WORK / "srv" / "bookshop"
    shutil.copytree(DEMO / "app", root, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.sqlite3"))
    capture = run_framework(make_environment(AGENT, root / "venv", DEMO_PACKAGES), "bookshop", "bookshop", AGENT,
                            DEMO_APP_NAME)
    export = export_of(capture["payloads"], DEMO_APP_NAME, account_id=1234567)
    export["captured"] = {"versions": capture["versions"], "requests": capture["requests"], "deployed_at": str(root)}
    out = DEMO / "nerdgraph_export.json"
    out.write_text(json.dumps(export, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"bookshop: {len(export['details'])} error groups -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
