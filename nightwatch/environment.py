"""Process environment for a run: where Prefect keeps its state, and quiet offline defaults.

Set before Prefect is imported. Values already in the environment win, so a platform team's
PREFECT_API_URL (a real server) is never overridden.
"""

from __future__ import annotations

import os
from pathlib import Path


def configure(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    defaults = {
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": os.environ.get("NIGHTWATCH_LOG_LEVEL", "WARNING"),
    }
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
