"""Where a `nightwatch run` speaks: short progress lines on stderr, everything else in a log file.

    log = start(home)             # NIGHTWATCH_HOME/logs/run-<UTC time>.log
    say("starting Prefect…")      # one line on stderr (and in the log)
    quiet_prefect_console(log)    # Prefect's console handler writes to the log file instead of stderr
    record_traceback(exc)         # the full traceback, in the log file only

An expected failure is one clear line on stderr; the traceback a developer needs is in the file the
line names. Nothing here formats secrets: log records carry what their callers pass.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from nightwatch import clock

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
_state: dict[str, logging.Handler] = {}


def start(home: Path) -> Path:
    """Open this run's log file and send NightWatch's progress to stderr; returns the file's path."""
    folder = home / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"run-{clock.now():%Y%m%dT%H%M%S}.log"
    file_handler = logging.FileHandler(path, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter(FORMAT))
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter("nightwatch: %(message)s"))
    _reset("file", file_handler, logging.getLogger("nightwatch"))
    _reset("stderr", stderr, logging.getLogger("nightwatch.progress"))
    for name in ("nightwatch", "nightwatch.progress"):
        logging.getLogger(name).setLevel(logging.INFO)
    logging.getLogger("nightwatch").propagate = False  # its own file; the root's console is Prefect's
    return path


def _reset(slot: str, handler: logging.Handler, logger: logging.Logger) -> None:
    """One handler per slot, even when a process runs several nights (tests, a long-lived worker)."""
    old = _state.pop(slot, None)
    if old is not None:
        for each in [logger, logging.getLogger(), *_prefect_loggers()]:
            each.removeHandler(old)
        old.close()
    logger.addHandler(handler)
    _state[slot] = handler


def say(message: str) -> None:
    logging.getLogger("nightwatch.progress").info(message)


def record_traceback(exc: BaseException) -> None:
    """The whole story for whoever reads the log file; stderr gets one line from the caller."""
    handler = _state.get("file")
    if handler is None:
        return
    record = logging.getLogger("nightwatch.trace").makeRecord(
        "nightwatch.trace", logging.ERROR, __file__, 0, "night ended with %s: %s", (type(exc).__name__, exc),
        (type(exc), exc, exc.__traceback__))
    handler.handle(record)


def quiet_prefect_console(log: Path) -> None:
    """Prefect's console handler (root and its own loggers) writes to the run's log file instead of stderr."""
    handler = _state.get("file")
    if handler is None:
        return
    for logger in [logging.getLogger(), *_prefect_loggers()]:
        consoles = [h for h in logger.handlers if type(h).__name__ in ("PrefectConsoleHandler", "_SafeStreamHandler")]
        for console in consoles:
            logger.removeHandler(console)
        if consoles and handler not in logger.handlers:
            logger.addHandler(handler)


def _prefect_loggers() -> list[logging.Logger]:
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in ("prefect", "uvicorn", "fastapi")]
    return [logging.getLogger(n) for n in names]
