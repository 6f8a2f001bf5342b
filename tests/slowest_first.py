"""The suite's order: the slowest tests first, by what earlier runs measured (tests/durations.json).

The workers take tests from one list (`--dist loadgroup`). A long test that starts last keeps one worker busy while
the others have nothing left to do, so the longest start first (longest-processing-time order); tests the file does
not know run after them, in collection order. A module whose tests share an expensive module-scoped fixture (a real
Prefect server) marks itself `xdist_group` so that one worker runs it whole.

`make test-durations` runs the suite and merges what it measured into the file (a partial run updates only the tests
it ran). The order changes how long the suite takes, never what passes.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
RECORD_ENV = "NIGHTWATCH_RECORD_DURATIONS"
SHORTEST_KEPT_S = 0.5  # shorter tests keep their collection order; listing them would only grow the file
_GROUP_SUFFIX = re.compile(r"@[\w.\-]+$")  # pytest-xdist appends `@<group>` to a grouped test's id


def known_durations(path: Path | None = None) -> dict[str, float]:
    """Test id -> seconds (of `path`, default tests/durations.json); an unreadable or missing file is no order at all,
    never an error."""
    path = path or DURATIONS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)} if isinstance(data, dict) else {}


def slowest_first(items: list[pytest.Item], known: dict[str, float]) -> None:
    """Sort in place, longest known first; a stable sort keeps the rest in collection order."""
    items.sort(key=lambda item: -known.get(item.nodeid, 0.0))


def merged(known: dict[str, float], measured: dict[str, float]) -> dict[str, float]:
    """The file's new contents: this run's figures over the old ones, the short tests left out, longest first."""
    out = {**known, **{test: round(seconds, 1) for test, seconds in measured.items()}}
    return dict(sorted(((k, v) for k, v in out.items() if v >= SHORTEST_KEPT_S), key=lambda kv: (-kv[1], kv[0])))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slowest_first(items, known_durations())


class Recorder:
    """Sums each test's setup, call and teardown as the reports reach this process (the controller under xdist)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_GROUP_SUFFIX.sub("", report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.seconds:
            DURATIONS.write_text(json.dumps(merged(known_durations(DURATIONS), self.seconds), indent=1) + "\n",
                                 encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(RECORD_ENV) and not hasattr(config, "workerinput"):  # the controller alone writes the file
        config.pluginmanager.register(Recorder(), "nightwatch-durations-recorder")
