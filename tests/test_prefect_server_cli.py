"""The Prefect CLI of the lockfile against a real `prefect server` (not the ephemeral one): list commands and
`prefect deploy --all --no-prompt` from prefect.yaml into a process work pool.

A FastAPI release once turned every one of these into HTTP 422 (null limit/offset); pyproject.toml pins it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PREFECT = str(Path(sys.executable).parent / "prefect")
PROJECT_FILES = ("prefect.yaml", "pyproject.toml", "flows", "tasks", "nightwatch", "blocks", "knowledge_store", "deployments",
                 "scripts")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, str]]:
    port = _free_port()
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_LOGGING_LEVEL": "WARNING"}
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prefect server did not start:\n" + (tmp_path / "server.log").read_text()[-3000:])
            time.sleep(1)
        yield env
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _prefect(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PREFECT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180)


def test_make_deploy_registers_every_deployment_and_the_locked_cli_lists_them(server: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__", "app"))
        else:
            shutil.copy2(source, project / name)
    env = {**server, "NIGHTWATCH_CHECKOUT": str(project), "PREFECT": PREFECT}
    deployed = subprocess.run(["bash", "scripts/deploy.sh"], env=env, cwd=project, capture_output=True, text=True, timeout=300)
    assert deployed.returncode == 0, deployed.stdout[-2000:] + deployed.stderr[-2000:]
    assert "prefect worker start --pool nightwatch" in deployed.stdout
    for command in (["work-pool", "ls"], ["deployment", "ls"], ["flow-run", "ls"], ["artifact", "ls"], ["block", "ls"]):
        listed = _prefect(env, *command)
        assert listed.returncode == 0 and "422" not in listed.stdout + listed.stderr, f"prefect {' '.join(command)}: {listed.stderr[-1500:]}"
    listed = _prefect(env, "deployment", "ls")
    assert all(f"nightwatch/{name}" in listed.stdout for name in ("nightly", "manual", "collect")), listed.stdout
    again = subprocess.run(["bash", "scripts/deploy.sh"], env=env, cwd=project, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]  # a second deploy updates in place


def test_make_deploy_refuses_without_a_real_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    refused = subprocess.run(["bash", str(ROOT / "scripts" / "deploy.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "set PREFECT_API_URL" in refused.stderr


def test_ctrl_c_on_make_ui_ends_every_process_within_seconds(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"NIGHTWATCH_HOME": str(tmp_path / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    log = tmp_path / "ui.log"
    with log.open("w") as out:
        ui = subprocess.Popen(["bash", str(ROOT / "scripts" / "serve-ui.sh"), str(_free_port())], env=env, stdout=out,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 150
        while "being served" not in log.read_text() and time.monotonic() < deadline and ui.poll() is None:
            time.sleep(1)
        assert "being served" in log.read_text(), log.read_text()[-3000:]
        started = time.monotonic()
        os.killpg(ui.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends to the foreground group
        while (ui.poll() is None or _group_alive(ui.pid)) and time.monotonic() - started < 30:  # poll reaps the script
            time.sleep(0.25)
        stopped_after = time.monotonic() - started
    finally:
        if _group_alive(ui.pid):
            os.killpg(ui.pid, signal.SIGKILL)
    assert stopped_after < 8, f"make ui took {stopped_after:.1f} s to stop"
    assert "Traceback" not in log.read_text()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
