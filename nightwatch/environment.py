"""Process environment for a run: where Prefect keeps its state, and quiet offline defaults.

Set before Prefect is imported. Values already in the environment win, so a platform team's
PREFECT_API_URL (a real server) is never overridden.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

# What a throwaway local API (the eval's, the tests') keeps besides the runs themselves and nobody reads there: the
# flow-run logs (each night's report and run log hold them; sending them was a sixth of the eval's CPU), the event log,
# and the automations' triggers over it. Task runs are still recorded from their events here; where nobody reads them
# either, TASK_RUN_RECORDER is turned off too (the eval's API below; the tests' except where a test reads them).
UNREAD_ON_A_THROWAWAY_API = ("PREFECT_LOGGING_TO_API_ENABLED", "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED",
                             "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED")
# The eval's API does not record task runs either: its nights start from empty homes, so none is answered from the
# cache (the one thing a night reads back from its task runs), and it scores reports, not run pages. Recording them
# from their events was the API's largest cost: measured side by side on the 29 cases, two rounds each, 51 s -> 41 s
# of wall time and 87 -> 73 s of CPU.
TASK_RUN_RECORDER = "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED"
UNREAD_ON_THE_EVAL_API = (*UNREAD_ON_A_THROWAWAY_API, TASK_RUN_RECORDER)


def configure(home: Path, log_level: str = "WARNING") -> None:
    """Prefect's folders under `home`, and its log level: NIGHTWATCH_LOG_LEVEL, else `log_level` (the CLI keeps its
    console quiet; a served or worker run sends INFO to the run's Logs tab)."""
    home.mkdir(parents=True, exist_ok=True)
    defaults = {
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": os.environ.get("NIGHTWATCH_LOG_LEVEL", log_level),
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)


@contextlib.contextmanager
def sole_local_run(home: Path) -> Iterator[bool]:
    """Hold this home's run lock while a night runs; True when this process is the only night on a local
    (ephemeral) Prefect database here, so anything the database says is held was left by a killed run."""
    if os.environ.get("PREFECT_API_URL"):  # a real server: other workers may hold slots right now
        yield False
        return
    path = Path(os.environ.get("PREFECT_HOME", home / "prefect")) / ".nightwatch-run.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another night runs on this home
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
