"""A real Bugsink for the tests that send it errors through the real sentry-sdk: the version tests/bugsink/requirements.txt
locks (hashed), installed in .tools/bugsink by `make bugsink`, which `make test` runs first.

`bugsink_server` (session-scoped; tests/conftest.py registers this module as a plugin) makes a configuration from
Bugsink's own `local` template in a temporary folder, with its SQLite databases and ingestion store there and
phoning home off. The template runs snappea, Bugsink's task queue, eagerly (TASK_ALWAYS_EAGER): an event is digested
inside the request that delivered it, so no worker process is needed and an event is in the API once the SDK's POST
is answered. The databases start as copies of the ones `make bugsink` migrated (.tools/bugsink/template/);
tests/bugsink/provision.py checks they are migrated and makes a user, a team, a project and an API token bound to the
project that may read it; `bugsink-manage runserver` then serves it on a free loopback port, in a process group of
its own that is stopped and reaped when the session ends.

One server per test session, per xdist worker that asks for it: the Bugsink tests live in one module, so `--dist
loadfile` runs them on one worker.

Measured on two cores: provisioning 1.3 s (6.7 s more when it migrated the databases itself), the server answering
0.7-1.0 s after it starts; with the machine's load at 10, or on one core shared with a busy loop (`taskset -c 0`), up
to 7.4 s and 2.6 s.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.prefect_processes import free_port, stop_group

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / ".tools" / "bugsink"
INSTALLED = INSTALL / ".installed"  # the stamp `make bugsink` writes once the lock is installed
TEMPLATE = INSTALL / "template"  # Bugsink's two databases, migrated by `make bugsink`
DATABASES = ("db.sqlite3", "snappea.sqlite3")
LOCK = ROOT / "tests" / "bugsink" / "requirements.txt"
PROVISION = ROOT / "tests" / "bugsink" / "provision.py"
# Hang guards, five times (or more) the slowest seen on one loaded core (above), never speed tests.
PROVISION_GUARD_S = 40
STARTUP_GUARD_S = 15
STOP_GUARD_S = 10  # runserver stops on SIGTERM at once


@dataclass(frozen=True)
class Bugsink:
    url: str  # http://127.0.0.1:<port>, what NIGHTWATCH_SENTRY_URL names
    token: str  # bound to the project: may read it, its issues and its events
    project_id: int
    dsn: str  # the project's DSN, as Bugsink shows it: http://<key>@127.0.0.1:<port>/<project id>
    user: str  # who administers the project, and the password that signs them in to the web UI
    password: str
    folder: Path  # the configuration, the databases and the server's log
    timings: dict[str, float]  # seconds: provision (the configuration, the user, team, project and token), startup
    nights: dict[str, Any]  # a second project for the tests of many nights: project, dsn, token, team_token (triage, releases)

    @property
    def log(self) -> Path:
        return self.folder / "server.log"


def require_install() -> Path:
    """Bugsink's interpreter in .tools/bugsink, installed from the current lock; a failure that says how if not."""
    stale = not INSTALLED.is_file() or INSTALLED.stat().st_mtime < LOCK.stat().st_mtime
    if stale or not all((TEMPLATE / name).is_file() for name in DATABASES):
        pytest.fail(f"Bugsink is not installed from {LOCK.relative_to(ROOT)} in {INSTALL.relative_to(ROOT)}: run "
                    "`make bugsink` (`make test` runs it)", pytrace=False)
    return INSTALL / "bin" / "python"


def bugsink_env(folder: Path) -> dict[str, str]:
    """This machine's environment for Bugsink's processes, with nothing a Sentry SDK, NightWatch, Django or Prefect
    would read from it, and the configuration of `folder`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SENTRY_", "NIGHTWATCH_", "DJANGO_", "PREFECT_"))}
    return env | {"DJANGO_SETTINGS_MODULE": "bugsink_conf", "PYTHONPATH": str(folder)}


def configure(folder: Path, port: int) -> None:
    """bugsink_conf.py in `folder`: Bugsink's `local` template for 127.0.0.1:`port`, with everything it writes in
    `folder` and nothing sent anywhere (no phoning home; mail goes to the console, as the template sets it)."""
    done = subprocess.run([str(INSTALL / "bin" / "bugsink-create-conf"), "--template=local", "--host=127.0.0.1",
                           f"--port={port}", "--output-file", str(folder / "bugsink_conf.py")],
                          env=bugsink_env(folder), cwd=folder, capture_output=True, text=True, timeout=PROVISION_GUARD_S)
    assert done.returncode == 0, f"bugsink-create-conf failed:\n{done.stdout}{done.stderr}"
    with (folder / "bugsink_conf.py").open("a", encoding="utf-8") as conf:
        conf.write(f"""
# the tests' own: everything under this folder, nothing sent anywhere
DATABASES["default"]["NAME"] = {str(folder / "db.sqlite3")!r}
DATABASES["snappea"]["NAME"] = {str(folder / "snappea.sqlite3")!r}
BUGSINK["INGEST_STORE_BASE_DIR"] = {str(folder / "ingestion")!r}
BUGSINK["PHONEHOME"] = False
""")


def provision(python: Path, folder: Path, password: str) -> dict:
    done = subprocess.run([str(python), str(PROVISION)], env=bugsink_env(folder) | {"BUGSINK_TEST_PASSWORD": password},
                          cwd=folder, capture_output=True, text=True, timeout=PROVISION_GUARD_S)
    assert done.returncode == 0, f"provisioning Bugsink failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def answers(url: str, token: str, project_id: int) -> bool:
    try:
        return httpx.get(f"{url}/api/canonical/0/projects/{project_id}/", headers={"Authorization": f"Bearer {token}"},
                         timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # not inherited as ignored (a suite run as a background job)


@pytest.fixture(scope="session")
def bugsink_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bugsink]:
    """A provisioned Bugsink serving on loopback, for the whole session."""
    python = require_install()
    folder = tmp_path_factory.mktemp("bugsink")
    port = free_port()
    password = secrets.token_urlsafe(16)
    started = time.monotonic()
    configure(folder, port)
    for name in DATABASES:
        shutil.copyfile(TEMPLATE / name, folder / name)
    made = provision(python, folder, password)
    provisioned = time.monotonic()
    url = f"http://127.0.0.1:{port}"
    with (folder / "server.log").open("w") as log:
        server = subprocess.Popen([str(INSTALL / "bin" / "bugsink-manage"), "runserver", f"127.0.0.1:{port}", "--noreload"],
                                  env=bugsink_env(folder), cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_interruptible)
    try:
        deadline = time.monotonic() + STARTUP_GUARD_S
        while not answers(url, made["token"], made["project"]):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Bugsink did not answer within {STARTUP_GUARD_S} s (exit {server.poll()}):\n"
                            + (folder / "server.log").read_text()[-3000:], pytrace=False)
            time.sleep(0.1)
        timings = {"provision": provisioned - started, "startup": time.monotonic() - provisioned}
        print(f"Bugsink: provisioned in {timings['provision']:.1f} s, answering {timings['startup']:.1f} s after it started")
        yield Bugsink(url=url, token=made["token"], project_id=made["project"], dsn=made["dsn"], user=made["user"],
                      password=password, folder=folder, timings=timings, nights=made["nights"])
    finally:
        stop_group(server, STOP_GUARD_S)
