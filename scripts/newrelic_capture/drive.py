"""Run one small application under the real New Relic Python agent (developer mode) and drive requests at it.

Runs inside the throwaway environment `scripts/capture_newrelic_python.py` makes; never imported by NightWatch.
The agent sends nothing anywhere in developer mode: it writes each payload it would send to its audit log,
which the capture script reads. The requests are `capture_server.app_traffic`'s (`scripts/app_traffic.py`),
the same the Sentry capture drives.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import newrelic.agent
from capture_server.app_traffic import DRIVERS, drive_bookshop, drive_gunicorn


def harvest_cycle() -> None:
    """One of the agent's own harvest cycles, as the passing of a minute would run it. The agent keeps a few error
    traces per cycle (the rest of the cycle's errors are events only), so a night's errors spread over many cycles
    each keep traces; driven in one burst, only the first groups would."""
    from newrelic.core.agent import agent_instance

    agent = agent_instance()
    agent._harvest_flexible()
    agent._harvest_default()


def serve_gunicorn(work: Path, ini: str) -> None:
    """The real gunicorn, under `newrelic-admin run-program` as a deployment runs it (`app_traffic.drive_gunicorn`)."""
    bin_dir = Path(sys.executable).parent
    drive_gunicorn(work, [str(bin_dir / "newrelic-admin"), "run-program", str(bin_dir / "gunicorn")],
                   {**os.environ, "NEW_RELIC_CONFIG_FILE": ini})


if __name__ == "__main__":
    framework, work = sys.argv[1], Path(sys.argv[2])
    if framework == "gunicorn":  # the agent runs inside gunicorn's worker, not in this process
        serve_gunicorn(work, sys.argv[3])
        sys.exit(0)
    newrelic.agent.initialize(str(work / f"newrelic-{framework}.ini"))
    newrelic.agent.register_application(timeout=10.0)
    drivers = {**DRIVERS, "bookshop": functools.partial(drive_bookshop, after_each=harvest_cycle)}
    drivers[framework](work)
    newrelic.agent.shutdown_agent(timeout=10.0)
