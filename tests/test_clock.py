"""The night's calendar (nightwatch.clock): one place reads the date, a test or an operator sets it, and every
process a night starts reads the same one."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from nightwatch import clock

ROOT = Path(__file__).resolve().parents[1]
AT = "2027-01-31T23:59:58Z"  # a second before midnight, the month's and (with the next) the year's end


def test_unset_the_calendar_is_the_real_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(clock.VARIABLE, raising=False)
    before = datetime.now(timezone.utc)
    assert before <= clock.now() <= datetime.now(timezone.utc)
    assert clock.shift() == timedelta(0)


def test_an_anchored_instant_runs_on_at_real_speed(calendar) -> None:
    calendar(AT)
    first = clock.now()
    assert abs(first - datetime(2027, 1, 31, 23, 59, 58, tzinfo=timezone.utc)) < timedelta(seconds=5)
    time.sleep(0.05)
    assert clock.now() - first >= timedelta(seconds=0.05)  # it runs, it is not frozen
    assert clock.today() in (date(2027, 1, 31), date(2027, 2, 1))


def test_a_value_anchored_in_the_past_has_moved_on_since(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clock.VARIABLE, clock.anchored("2027-06-30T12:00:00Z", real=time.time() - 3600))
    assert abs(clock.now() - datetime(2027, 6, 30, 13, 0, tzinfo=timezone.utc)) < timedelta(seconds=5)


@pytest.mark.parametrize(("text", "expected"), [
    ("2027-01-15", datetime(2027, 1, 15, tzinfo=timezone.utc)),  # a date: its midnight, UTC
    ("2027-01-15T06:00:00", datetime(2027, 1, 15, 6, tzinfo=timezone.utc)),  # naive: UTC
    ("2027-01-15T08:00:00+02:00", datetime(2027, 1, 15, 6, tzinfo=timezone.utc)),
    ("2027-01-15T06:00:00z", datetime(2027, 1, 15, 6, tzinfo=timezone.utc)),
])
def test_instants_are_read_in_utc(text: str, expected: datetime) -> None:
    assert clock.parse_instant(text) == expected


@pytest.mark.parametrize("value", ["tomorrow", "2027-13-01", "2027-01-15T06:00:00Z@soon"])
def test_a_bad_value_is_an_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(clock.VARIABLE, value)
    with pytest.raises(clock.ClockError, match="NIGHTWATCH_NOW"):
        clock.now()


def test_the_cli_refuses_a_bad_value_with_exit_2_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, clock.VARIABLE: "next tuesday"}
    done = subprocess.run([sys.executable, "-m", "nightwatch.cli", "metrics", "compact"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "NIGHTWATCH_NOW" in done.stderr


def test_a_process_started_later_reads_the_same_calendar(monkeypatch: pytest.MonkeyPatch) -> None:
    """anchor_environment (the CLI's first step) writes the anchored form back: a child started a second later does not
    start the calendar again from the named instant."""
    monkeypatch.setenv(clock.VARIABLE, "2027-12-07T06:00:00Z")
    clock.anchor_environment()
    assert "@" in os.environ[clock.VARIABLE]
    time.sleep(1.0)
    code = "from nightwatch import clock; print(clock.now().isoformat())"
    child = datetime.fromisoformat(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                  timeout=120, check=True).stdout.strip())
    assert child - clock.parse_instant("2027-12-07T06:00:00Z") >= timedelta(seconds=1)
    assert abs(child - clock.now()) < timedelta(seconds=30)


# Where the real clock may still be read: only where NightWatch compares with another service's own clock.
REAL_CLOCK_READERS = {
    "nightwatch/clock.py": "the calendar itself",
    "nightwatch/sources/http_retry.py": "a Retry-After HTTP date, the server's clock",
    "nightwatch/triage/batch.py": "the Batches API stamps created_at by its clock; deadlines and adoption compare with it",
    "nightwatch/offline/batches.py": "the offline Batches API's own clock",
    "nightwatch/verify/cgroup.py": "file modification times, the kernel's clock",
    "tasks/batch_handoff.py": "the time Prefect is asked to schedule a run at",
    "tasks/steps_fetch.py": "the outcome sync's `since`, compared with the tracker's updated_at",
}


def _real_clock_reads(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if (name, node.func.attr) in {("datetime", "now"), ("datetime", "utcnow"), ("date", "today"),
                                          ("datetime", "today"), ("time", "time")}:
                lines.append(node.lineno)
    return lines


def test_the_product_reads_the_date_through_the_calendar_only() -> None:
    found = {}
    for package in ("nightwatch", "knowledge_store", "tasks", "flows", "blocks", "deployments"):
        for path in (ROOT / package).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            if rel.startswith(("nightwatch/demo/", "nightwatch/demo_python/")) or rel in REAL_CLOCK_READERS:
                continue
            if lines := _real_clock_reads(path):
                found[rel] = lines
    assert found == {}, "read the date through nightwatch.clock, or say in REAL_CLOCK_READERS whose clock this is"


def test_a_month_closes_when_the_calendar_leaves_it_across_a_year_end(nightwatch_home: Path, calendar) -> None:
    """A night whose window crosses midnight on New Year's Eve lands on the day it ends; `metrics compact` (as the
    night's own close) compacts only months the calendar has left: December on the first of January, January on the
    first of February, never the month it is in."""
    from nightwatch.knowledge_store.metrics import MetricsStore
    from typer.testing import CliRunner

    from nightwatch.cli import app
    from tests.knowledge_store.test_metrics_layout import night

    store = MetricsStore(nightwatch_home)
    night(store, "night-12-31", date(2026, 12, 31))
    night(store, "night-01-01", date(2027, 1, 1))  # the window 2026-12-31 06:00 to 2027-01-01 06:00
    calendar("2027-01-01T06:30:00Z")
    compacted = CliRunner().invoke(app, ["metrics", "compact"])
    assert compacted.exit_code == 0, compacted.output
    assert sorted({p.parent.name for p in store.files("model_calls") if p.name == "compacted.parquet"}) == ["month=2026-12"]
    calendar("2027-02-01T00:00:01Z")
    assert CliRunner().invoke(app, ["metrics", "compact"]).exit_code == 0
    assert sorted({p.parent.name for p in store.files("model_calls") if p.name == "compacted.parquet"}) == \
        ["month=2026-12", "month=2027-01"]
