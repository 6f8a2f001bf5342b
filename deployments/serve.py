"""Serve the nightly, manual and collect deployments from this process (`make ui` runs this).

Ctrl-C (SIGINT) or SIGTERM stops serving; Prefect's shutdown can then linger for a minute in background
threads, so the process ends at most STOP_GRACE_S after the signal, whatever is still winding down (a night
that was running is resumed by its next attempt: nights are idempotent).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from nightwatch import environment

STOP_GRACE_S = 4.0
_STOPPING = threading.Event()


def _stop(signum: int, _frame: object) -> None:
    if _STOPPING.is_set():  # a second signal (make ui's script follows Ctrl-C with INT) ends the process at once
        os._exit(0)
    _STOPPING.set()
    timer = threading.Timer(STOP_GRACE_S, os._exit, args=(0,))
    timer.daemon = True  # a daemon timer still fires while the main thread waits for Prefect's threads
    timer.start()
    raise KeyboardInterrupt


def _unraisable(event: sys.UnraisableHookArgs) -> None:
    """A stop signal that landed inside a finalizer (a weakref callback, a __del__) is swallowed there and printed as
    "Exception ignored ... KeyboardInterrupt": serving would go on until the grace timer. End now, quietly."""
    if _STOPPING.is_set() and isinstance(event.exc_value, KeyboardInterrupt):
        os._exit(0)
    sys.__unraisablehook__(event)


def main() -> None:
    environment.configure(Path(os.environ.get("NIGHTWATCH_HOME", ".nightwatch")).resolve(), log_level="INFO")
    from nightwatch.deployments.definitions import build_collect_deployment, build_deployments
    from prefect import serve

    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    block = os.environ.get("NIGHTWATCH_SETTINGS_BLOCK")
    try:
        serve(*build_deployments(block), build_collect_deployment(block))
    except KeyboardInterrupt:  # the signal: nothing to report
        pass
    os._exit(0)  # served until a signal: do not wait for Prefect's background threads


if __name__ == "__main__":
    main()
