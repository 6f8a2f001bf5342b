"""Test tiers share two guarantees: no network beyond loopback, and a private NIGHTWATCH_HOME."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from nightwatch import clock

pytest_plugins = ("tests.bugsink_server",)  # the `bugsink_server` fixture: a real Bugsink, one per session

# pytest keeps each test module with its asserts rewritten in tests/__pycache__, unless bytecode may not be written
# (PYTHONDONTWRITEBYTECODE, set in many CI images): then each of the five workers rewrote all of them on every run,
# about 3.6 s of CPU each. This process writes them; the processes tests start still inherit the variable.
sys.dont_write_bytecode = False

# The calendar the suite runs at: the real one, unless NIGHTWATCH_TEST_NOW names another (`make test-calendar` runs
# the suite a month and a year on). A test whose assertions hang on a date names it with the `calendar` fixture.
# It is in this process's environment from the start, so every process any fixture starts inherits it.
SUITE_NOW = clock.anchored(os.environ["NIGHTWATCH_TEST_NOW"]) if os.environ.get("NIGHTWATCH_TEST_NOW") else None
if SUITE_NOW:
    os.environ[clock.VARIABLE] = SUITE_NOW
else:
    os.environ.pop(clock.VARIABLE, None)

_LOOPBACK = ("127.", "::1", "localhost")
_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else str(address)
    if self.family == socket.AF_UNIX or str(host).startswith(_LOOPBACK):
        return _real_connect(self, address)
    raise RuntimeError(f"tests must not reach the network: connect to {address!r} refused")


_MODULE_MARKS = re.compile(r"^pytestmark = (.*)$", re.M)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not flow and not slow"` (make test-fast), a module whose every test is a flow or slow test (its
    module-level `pytestmark` says so) is not even imported: importing the flows and Prefect costs seconds per worker."""
    expression = config.getoption("markexpr") or ""
    if not collection_path.name.startswith("test_") or collection_path.suffix != ".py":
        return None
    marks = _MODULE_MARKS.search(collection_path.read_text(encoding="utf-8"))
    if marks is None:
        return None
    left_out = [m for m in ("flow", "slow") if f"not {m}" in expression and f"mark.{m}" in marks.group(1)]
    return True if left_out else None


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(autouse=True)
def nightwatch_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test writes under its own NIGHTWATCH_HOME; no credentials leak in from the machine."""
    home = tmp_path / "nightwatch-home"
    monkeypatch.setenv("NIGHTWATCH_HOME", str(home))
    for name in list(os.environ):
        if name.startswith(("NIGHTWATCH_", "ANTHROPIC_", "NEW_RELIC_", "SLACK_", "SENTRY_")) and name not in ("NIGHTWATCH_HOME", clock.VARIABLE):
            monkeypatch.delenv(name, raising=False)
    for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def calendar(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`calendar("2026-11-21T06:00:00Z")`: NightWatch's clock reads that instant now and runs on from it, here and in
    every process the test starts with this environment; returns the variable's value for an env of its own."""

    def at(instant: str) -> str:
        value = clock.anchored(instant)
        monkeypatch.setenv(clock.VARIABLE, value)
        return value

    return at


@pytest.fixture(scope="session")
def prefect_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated Prefect database, made once per test session and shared by its workers: every Prefect the tests
    start (the harness, a CLI night in a subprocess, a real server) starts from a copy instead of migrating."""
    from tests.prefect_processes import migrated_database

    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every xdist worker of this session
    template = shared / "prefect-template" / "prefect.db"
    template.parent.mkdir(parents=True, exist_ok=True)
    with open(shared / "prefect-template.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if not template.exists():
                migrated_database(template)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return template


@pytest.fixture(scope="session")
def prefect_harness(prefect_db_template: Path):
    """One temporary Prefect API for every flow test of the session, on a copy of the migrated database."""
    with seeded_harness(prefect_db_template, record_task_runs=False), quick_retries(), no_heartbeats():
        yield


@pytest.fixture(scope="module")
def recorded_task_runs(prefect_harness, prefect_db_template: Path):
    """A Prefect API of the module's own that records task runs from their events, as a night's run page shows them,
    for the tests that read them back (the session's API does not record them); it starts inside the session's one and
    stops before it."""
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()  # its client was made for the session's API; the next event makes one for this module's
    with seeded_harness(prefect_db_template, record_task_runs=True):
        yield


@contextlib.contextmanager
def seeded_harness(template: Path, record_task_runs: bool):
    """Prefect's test harness (a temporary API in a subprocess) on a copy of the migrated database `template`."""
    from unittest import mock

    import prefect.testing.utilities as harness

    from tests.prefect_processes import PROCESS_GUARD_S

    def seeded_tempdir() -> str:  # the harness keeps its database in a fresh temporary folder: seed it there
        folder = tempfile.mkdtemp()
        shutil.copyfile(template, Path(folder) / "prefect-test.db")
        return folder

    with mock.patch.object(harness, "mkdtemp", seeded_tempdir), unread_records(record_task_runs), \
            harness.prefect_test_harness(server_startup_timeout=PROCESS_GUARD_S):  # a server coming up: a hang guard
        yield


@contextlib.contextmanager
def unread_records(record_task_runs: bool):
    """The test API skips what no test reads (nightwatch.environment.UNREAD_ON_A_THROWAWAY_API: flow-run logs, the
    event log, the triggers) and keeps the rest (flow runs, their states, artifacts, concurrency limits). The harness's
    server inherits these settings. Measured on six nights of three errors, side by side: 10% less CPU, 15% less wall
    time. Tests that start a real server, a worker or a CLI night keep Prefect's defaults.

    Task runs are recorded only where `record_task_runs` (the `recorded_task_runs` fixture): on a SQLite-backed API
    the recorder's writes hold up the night's own (each subflow's stand-in task run waited about a second for the
    database), so the ten-nights outcomes test alone took 105 s of wall time with them and 48-72 s without (62 s of
    CPU and 50-56 s)."""
    import prefect.settings

    from nightwatch.environment import TASK_RUN_RECORDER, UNREAD_ON_A_THROWAWAY_API

    updates = {getattr(prefect.settings, name): False for name in UNREAD_ON_A_THROWAWAY_API}
    updates[getattr(prefect.settings, TASK_RUN_RECORDER)] = record_task_runs
    with prefect.settings.temporary_settings(updates=updates):
        yield


@contextlib.contextmanager
def no_heartbeats():
    """Flow runs in the tests send no heartbeats: the heartbeat thread sleeps in one-second steps and every flow run
    and subflow joins it when it ends (about half a second each, three or more per night). Nothing here tests
    Prefect's crash detection; production keeps Prefect's default."""
    import prefect.settings
    from prefect.settings import temporary_settings

    with temporary_settings(updates={prefect.settings.PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@contextlib.contextmanager
def quick_retries(scale: float = 0.001):
    """Every NightWatch task keeps its retries, in the same order and through the same AwaitingRetry state, but
    waits a thousandth of its production delay (5 s -> 5 ms): a flow test that retries measures what the retry
    does, not how long it sleeps. Nights run in a subprocess keep the production delays."""
    import importlib
    import pkgutil

    from prefect import Task

    from nightwatch import tasks

    found = {}
    for module in pkgutil.iter_modules(tasks.__path__, "nightwatch.tasks."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, Task) and value.retry_delay_seconds:
                found[id(value)] = (value, value.retry_delay_seconds)
    for value, delay in found.values():
        value.retry_delay_seconds = [d * scale for d in delay] if isinstance(delay, list) else delay * scale
    try:
        yield
    finally:
        for value, delay in found.values():
            value.retry_delay_seconds = delay


@pytest.fixture
def flow_results(tmp_path: Path):
    """Task results of this test only: the harness replaces the database, not the result storage."""
    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, temporary_settings

    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: tmp_path / "results"}):
        yield tmp_path / "results"
