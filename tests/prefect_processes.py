"""A real Prefect server, `make deploy`, and process workers, as a platform team runs them: for the tests that
exercise deployments end to end and for benchmarks/scale_out.py. Loopback only."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PREFECT = str(Path(sys.executable).parent / "prefect")
PROJECT_FILES = ("prefect.yaml", "pyproject.toml", "flows", "tasks", "nightwatch", "blocks", "knowledge_store", "deployments",
                 "scripts")
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


class ProcessFailed(AssertionError):
    """A server, deploy or worker did not do what it should; the message carries its log's tail."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def migrated_database(target: Path) -> Path:
    """A Prefect database with every migration applied (`prefect server database upgrade`): a server, or a CLI's
    local Prefect, finds it and starts in ~4 s instead of ~9 (it would migrate a fresh one first)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(target.name + ".building")
    env = {**os.environ, "PREFECT_HOME": str(target.parent / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{building}", "DO_NOT_TRACK": "1"}
    done = subprocess.run([PREFECT, "server", "database", "upgrade", "-y"], env=env, capture_output=True, text=True,
                          timeout=PROCESS_GUARD_S)
    if done.returncode != 0:
        raise ProcessFailed(f"prefect server database upgrade failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    os.replace(building, target)
    return target


# How long any one process a test starts (a CLI night, `prefect deploy`, a server coming up) may take before it counts
# as hung: a hang guard, five times the slowest seen on one loaded core of two (about 180 s), never a speed test.
PROCESS_GUARD_S = 900


def seed_database(prefect_home: Path, template: Path | None) -> None:
    """A copy of the migrated `template` where a Prefect with this PREFECT_HOME keeps its database (if it has none)."""
    target = prefect_home / "prefect.db"
    if template is not None and not target.exists():
        prefect_home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, target)


@contextlib.contextmanager
def prefect_server(workdir: Path, database: Path | None = None) -> Iterator[dict[str, str]]:
    """`prefect server start` on a free loopback port (on a copy of `database`, if given); yields the environment that
    points at it."""
    port = free_port()
    seed_database(workdir / "prefect", database)
    env = {**os.environ, "PREFECT_HOME": str(workdir / "prefect"), "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_LOGGING_LEVEL": "WARNING"}
    log_path = workdir / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + PROCESS_GUARD_S
        while not _healthy(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ProcessFailed("prefect server did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(1)
        yield env
    finally:
        stop_group(proc, 15)


def deploy(env: dict[str, str], workdir: Path) -> dict[str, str]:
    """`make deploy`'s script from a copy of the checkout; the environment with NIGHTWATCH_CHECKOUT and its output."""
    project = workdir / "project"
    project.mkdir(parents=True)
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, project / name)
    env = {**env, "NIGHTWATCH_CHECKOUT": str(project), "PREFECT": PREFECT}
    done = subprocess.run(["bash", "scripts/deploy.sh"], env=env, cwd=project, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    if done.returncode != 0:
        raise ProcessFailed(f"deploy failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return {**env, "DEPLOY_OUTPUT": done.stdout}


# How long a worker may take to stop on SIGTERM before it counts as not stopping: a hang guard. An idle worker stops in
# under a second (wait_terminal waits for its flow-run process to exit first); 30 s is thirty times that. A worker that
# does not stop prints its threads' stacks (PYTHONFAULTHANDLER, SIGABRT) into its log before it is killed.
WORKER_STOP_GUARD_S = 30


@contextlib.contextmanager
def worker(env: dict[str, str], prefect_home: Path, pool: str = "nightwatch") -> Iterator[subprocess.Popen]:
    """A process worker on the pool with its own Prefect home (its local disk); stopped with SIGTERM as a service
    manager would. Its returncode is -1 if it had to be killed."""
    log = prefect_home.with_suffix(".log")
    prefect_home.mkdir(parents=True)
    with log.open("w") as out:  # PYTHONFAULTHANDLER: a worker that does not stop prints its threads' stacks on SIGABRT
        proc = subprocess.Popen([PREFECT, "worker", "start", "--pool", pool, "--name", prefect_home.name],
                                env={**env, "PREFECT_HOME": str(prefect_home), "PREFECT_LOGGING_LEVEL": "INFO",
                                     "PYTHONFAULTHANDLER": "1"},
                                cwd=env["NIGHTWATCH_CHECKOUT"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_interruptible)
    proc.log = log  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        if not stop_group(proc, WORKER_STOP_GUARD_S, dump_first=True):
            proc.returncode = -1


def _interruptible() -> None:
    """SIGINT as a service starts a worker: Prefect's worker stops on SIGTERM by sending itself SIGINT, and one that
    inherits SIGINT ignored (a suite started as a background job of a non-interactive shell, which ignores it) never
    stops: the signal is lost and its event loop idles on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_process_group(command: list[str], *, env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """`subprocess.run` with text output, in a session of its own that is killed whole when `timeout` passes or the
    test is stopped (pytest's timeout): a CLI's own Prefect API is its child, and would otherwise outlive it and keep
    taking CPU from every test after it."""
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        stop_group(proc, 5)
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def stop_group(proc: subprocess.Popen, grace_s: float, dump_first: bool = False) -> bool:
    """SIGTERM the process group, SIGKILL it after `grace_s`; True when it stopped on SIGTERM. `dump_first`: SIGABRT
    the process before the kill, so one started with PYTHONFAULTHANDLER prints where each of its threads waits."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
        return True
    except subprocess.TimeoutExpired:
        if dump_first:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        return False


def prefect(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PREFECT, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=PROCESS_GUARD_S)


def run_deployment(env: dict[str, str], name: str, *params: str) -> str:
    """`prefect deployment run NAME --param k=v …`; the new flow run's id."""
    args = [a for p in params for a in ("--param", p)]
    started = prefect(env, "deployment", "run", name, *args)
    match = re.search(r"UUID:\s*([0-9a-f-]{36})", started.stdout)
    if started.returncode != 0 or not match:
        raise ProcessFailed(f"deployment run {name} failed:\n{started.stdout[-1500:]}{started.stderr[-1500:]}")
    return match.group(1)


def flow_run(env: dict[str, str], run_id: str) -> dict:
    with urllib.request.urlopen(f"{env['PREFECT_API_URL']}/flow_runs/{run_id}", timeout=10) as answer:
        return json.loads(answer.read())


def wait_terminal(env: dict[str, str], run_id: str, workers: list[subprocess.Popen], after_runs: int = 0,
                  timeout_s: float = PROCESS_GUARD_S) -> dict:
    """The flow run once it is in a terminal state after more than `after_runs` runs and the workers' flow-run
    processes have exited; fails if a worker dies. The API has the final state a moment before the run's process ends
    (it still logs and reports), and a worker stopped in that moment waits on a process that is itself being stopped."""
    deadline = time.monotonic() + timeout_s
    run: dict = {}
    while time.monotonic() < deadline:
        run = flow_run(env, run_id)
        if run["state"]["type"] in TERMINAL and run["run_count"] > after_runs and not any(map(_children, workers)):
            return run
        for proc in workers:
            if proc.poll() is not None:
                raise ProcessFailed("a worker died:\n" + proc.log.read_text()[-3000:])  # type: ignore[attr-defined]
        time.sleep(1)
    logs = "\n".join(proc.log.read_text()[-2000:] for proc in workers)  # type: ignore[attr-defined]
    raise ProcessFailed(f"flow run {run_id} did not finish: {run.get('state')}\n{logs}")


def _children(proc: subprocess.Popen) -> list[str]:
    """The process ids `proc` (any of its threads) has started and that still run (Linux's /proc); none once it has
    exited."""
    found = []
    for children in Path(f"/proc/{proc.pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            found += children.read_text().split()
    return found


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False
