"""One window is one night, whatever happens to the process running it.

- A `nightwatch run` killed (SIGKILL, the whole process group) in the middle of its investigations is
  finished by the next run of the same window: triage and finished investigations come from Prefect's
  cache, interrupted ones resume from their checkpoints, and nothing is filed, posted or metered twice.
- A second run of a finished window is the same night: no model call, the same issues byte for byte.
- The demo night against a model that knows nothing of NightWatch (answers filled from the tool schemas)
  ends with a validated analysis for every error triage routes deep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.models import Analysis, RunReport
from nightwatch.settings import Settings
from nightwatch.triage.verdict import TRIAGE_TOOL
from tests.fakes.anthropic import FakeAnthropic, GenericModel, anthropic_env
from tests.fakes.http import Reply, Request
from tests.prefect_processes import PROCESS_GUARD_S, run_process_group, seed_database
from tests.views import rows as view_rows

pytestmark = pytest.mark.flow  # every test here runs a night

ROOT = Path(__file__).resolve().parents[2]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
UNTIL_ARG = f"{UNTIL:%Y-%m-%dT%H:%M}"
MAX_ERRORS = 3
MAX_ISSUES = 2
STALL_AT = 6  # the sixth investigation request: each of the three deep errors is one or two iterations in
NIGHT_TIMEOUT_S = PROCESS_GUARD_S  # a night in a subprocess: about 40 s on one loaded core


class StallingFake(FakeAnthropic):
    """Holds the Nth investigation request (triage requests, which force submit_triage, are not counted)
    until the test releases it, so the test knows the night is in the middle of its investigations."""

    def __init__(self, stall_at: int | None) -> None:
        super().__init__()
        self.stall_at = stall_at
        self.investigation_requests = 0
        self.stalled = threading.Event()
        self.release = threading.Event()
        self._count_lock = threading.Lock()

    def _messages(self, req: Request) -> Reply:
        body = req.json() or {}
        if (body.get("tool_choice") or {}).get("name") != TRIAGE_TOOL:
            with self._count_lock:
                self.investigation_requests += 1
                # the Nth request or the first after it that continues an investigation (it carries a tool result,
                # so that investigation's checkpoint is on disk): never a race with which investigation got a slot first
                stall = (self.stall_at is not None and self.investigation_requests >= self.stall_at
                         and not self.stalled.is_set() and _continues(body))
                if stall:
                    self.stalled.set()
            if stall:
                self.release.wait(NIGHT_TIMEOUT_S)
                return Reply(503, {"type": "error", "error": {"type": "api_error", "message": "gone"}})
        return super()._messages(req)


def _continues(body: dict) -> bool:
    """The request carries a tool result: its investigation finished an iteration (and wrote its checkpoint)."""
    return any(isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"])
               for m in body.get("messages") or [])


def _env(home: Path, fake: FakeAnthropic | None, retries: int) -> dict[str, str]:
    """The machine's environment minus Prefect's and NightWatch's: the CLI sets Prefect up under its home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "NIGHTWATCH_", "ANTHROPIC_"))}
    env.update(NIGHTWATCH_HOME=str(home), PYTHONPATH=str(ROOT), NIGHTWATCH_ANTHROPIC_MAX_RETRIES=str(retries))
    if fake is not None:
        env.update(anthropic_env(fake))
    return env


def _command(max_issues: int = MAX_ISSUES) -> list[str]:
    return [sys.executable, "-m", "nightwatch.cli", "run", "--output", "json", "--until", UNTIL_ARG,
            "--max-errors", str(MAX_ERRORS), "--max-issues", str(max_issues)]


def _night(home: Path, fake: FakeAnthropic | None, *, retries: int = 1, max_issues: int = MAX_ISSUES) -> RunReport:
    done = run_process_group(_command(max_issues), env=_env(home, fake, retries), cwd=home.parent, timeout=NIGHT_TIMEOUT_S)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    return RunReport.model_validate_json(done.stdout)



def _issue_files(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "tracker" / "issues").glob("*.md"))}


def _investigation_requests(bodies: list[dict | None]) -> list[dict]:
    """The investigation requests among `bodies`; a request whose body never arrived (its sender was killed while
    sending it: the fake reads an empty body, JSON null) names no error and is no request."""
    return [b for b in bodies if b is not None and (b.get("tool_choice") or {}).get("name") != TRIAGE_TOOL]


def _by_error(bodies: list[dict]) -> Counter[str]:
    """Investigation requests per error: each carries its error's fingerprint in its first message."""
    found = (re.search(r"Fingerprint: ([0-9a-f]+)", json.dumps(b["messages"][0])) for b in _investigation_requests(bodies))
    return Counter(m.group(1) for m in found if m)


def _saved_iterations(home: Path) -> dict[str, int]:
    """Fingerprint -> iterations its newest valid checkpoint holds, for every investigation left in progress."""
    latest = {d.name: CheckpointStore(d).latest() for d in (home / "checkpoints").glob("*/*") if d.is_dir()}
    return {fp: checkpoint.iteration for fp, checkpoint in latest.items() if checkpoint is not None}


def _held_investigation_slots(home: Path) -> int:
    """Slots of the investigations' global concurrency limit that the CLI's Prefect database counts as held."""
    con = sqlite3.connect(str(home / "prefect" / "prefect.db"))
    try:
        row = con.execute("select active_slots from concurrency_limit_v2 where name = ?",
                          (Settings.model_fields["investigation_concurrency_limit"].default,)).fetchone()
    finally:
        con.close()
    return row[0] if row else 0


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_a_night_killed_mid_investigation_is_finished_by_the_next_run_of_the_window(tmp_path, monkeypatch,
                                                                                    prefect_db_template):
    # What a clean night of this window costs, measured rather than assumed: the same flow, the same window,
    # the same fake brain (deterministic: its answer depends only on the request), in ANOTHER home. It runs in
    # this process under the session's Prefect harness (~15 s) instead of a third CLI process (~45 s); the
    # CLI only wraps this flow call. Adding up the killed run's and the resumed run's requests would not do:
    # it presumes the very resumption the test is about.
    from nightwatch.flows.nightwatch import run_night

    clean_home = tmp_path / "clean-home"
    with FakeAnthropic() as clean_fake:
        monkeypatch.setenv("NIGHTWATCH_HOME", str(clean_home))
        for name, value in anthropic_env(clean_fake).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_MAX_RETRIES", "1")
        clean = run_night(until=UNTIL, max_errors=MAX_ERRORS, max_issues=MAX_ISSUES)
        clean_requests = len(clean_fake.message_requests())
    assert clean.succeeded and clean.totals.model_calls == clean_requests
    clean_deep = len(_investigation_requests(clean_fake.message_bodies()))
    assert clean_deep > STALL_AT, f"the clean night makes only {clean_deep} investigation requests"

    home = tmp_path / "home"
    seed_database(home / "prefect", prefect_db_template)  # the CLI's own Prefect starts without migrating
    with StallingFake(stall_at=STALL_AT) as fake:
        log = tmp_path / "killed-night.stderr"
        with log.open("w") as stderr:  # a file, not a pipe nobody reads while the night runs
            killed = subprocess.Popen(_command(), stdout=subprocess.DEVNULL, stderr=stderr, env=_env(home, fake, 0),
                                      cwd=tmp_path, start_new_session=True)
            try:
                deadline = time.monotonic() + NIGHT_TIMEOUT_S
                while not (stalled := fake.stalled.wait(1)) and killed.poll() is None and time.monotonic() < deadline:
                    pass  # a night that dies before its investigations is reported at once, with its stderr
            finally:
                os.killpg(killed.pid, signal.SIGKILL)  # the CLI and whatever it started (the ephemeral Prefect API)
                killed.wait(30)
                fake.release.set()
        assert stalled, (f"the night never reached investigation request {STALL_AT} ({fake.investigation_requests} seen, "
                         f"exit {killed.returncode}):\n{log.read_text()[-4000:]}")
        assert killed.returncode == -signal.SIGKILL
        killed_requests = len(fake.message_requests())  # the stalled one included: it was sent, never answered
        killed_by_error = _by_error(fake.message_bodies())
        saved = _saved_iterations(home)
        assert saved, "the killed night left no checkpoint of an investigation in progress"
        held_after_kill = _held_investigation_slots(home)

        fake.stall_at = None
        time.sleep(0.5)  # let the released handler thread finish before the count below
        before = len(fake.message_requests())
        report = _night(home, fake)
        resumed_bodies = fake.message_bodies()[before:]
    resumed_requests = len(resumed_bodies)
    resumed_deep = _investigation_requests(resumed_bodies)
    print(f"clean night: {clean_requests} Messages requests ({clean_deep} investigation); killed night: {killed_requests} "
          f"(stalled at investigation request {STALL_AT}; iterations checkpointed: {saved}; investigation slots held "
          f"after the kill: {held_after_kill}); resumed night: {resumed_requests} ({len(resumed_deep)} investigation)")

    assert report.run_id == clean.run_id  # the window is the night, whichever home or process runs it
    assert report.succeeded and report.errors_failed == 0
    deep = [r for r in report.results if r.verdict and r.verdict.route == "deep"]
    assert len(deep) == len([r for r in clean.results if r.verdict and r.verdict.route == "deep"]) > 0
    assert all(r.failure is None and isinstance(r.analysis, Analysis) for r in deep), [(r.error.label, r.failure) for r in deep]
    assert len(resumed_deep) == resumed_requests  # triage: every verdict from the cache
    fresh_starts = sum(1 for b in resumed_deep if len(b["messages"]) == 1)
    assert fresh_starts <= len(deep) - len(saved), "an investigation with a checkpoint started again from scratch"
    # Exactly the iterations no checkpoint holds, error by error. An investigation the killed night finished (all of its
    # requests answered before the kill: on a slow machine the others may get that far before the stalled request)
    # comes from Prefect's cache and asks nothing again; every other one asks what its checkpoint does not hold.
    clean_by_error, resumed_by_error = _by_error(clean_fake.message_bodies()), _by_error(resumed_bodies)
    assert set(clean_by_error) >= set(resumed_by_error) | set(saved)
    finished_before_kill = {fp for fp, n in clean_by_error.items() if killed_by_error[fp] == n and fp not in saved}
    assert all(resumed_by_error[fp] == 0 for fp in finished_before_kill), (resumed_by_error, finished_before_kill)
    assert {fp: resumed_by_error[fp] for fp in clean_by_error if fp not in finished_before_kill} == {
        fp: n - saved.get(fp, 0) for fp, n in clean_by_error.items() if fp not in finished_before_kill}
    assert len(finished_before_kill) < len(clean_by_error)  # the kill landed in the middle of an investigation
    assert resumed_requests < clean_requests
    assert not list((home / "checkpoints").glob("*/*/[0-9][0-9][0-9][0-9].json"))  # finished investigations keep none

    # nothing twice: issues, the night's row, model calls, the Slack report
    issues = _issue_files(home)
    fingerprints = [name.split("-", 1)[1] for name in issues]
    assert issues and len(fingerprints) == len(set(fingerprints)) and len(issues) <= MAX_ISSUES
    index = json.loads((home / "tracker" / "index.json").read_text())["issues"]
    assert len(index) == len(issues) and len({e["fingerprint"] for e in index}) == len(index)
    assert sum(1 for i in report.issues if i.action == "created") <= MAX_ISSUES
    assert view_rows(home, "select count(*) from runs") == [(1,)]
    (calls, distinct), = view_rows(home, "select count(*), count(distinct (call_id, started_at)) from model_calls")
    assert calls == distinct
    assert calls == clean_requests  # every call the night's answers rest on, each once: as many as a clean night's
    reports = sorted((home / "reports").glob("*/slack/report.json"))
    assert [p.parent.parent.name for p in reports] == [report.run_id]
    assert not list((home / "reports" / report.run_id / "slack").glob(".*.tmp"))

    # The night is over and no process runs: no investigation slot may still be held, or every later run on
    # this home investigates with fewer slots (none once the killed nights have taken them all).
    assert _held_investigation_slots(home) == 0, (
        f"{_held_investigation_slots(home)} slot(s) of the investigations' concurrency limit are still held after the night "
        f"finished ({held_after_kill} right after the kill): the killed process's leases died with its Prefect server")


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.flow
def test_a_rerun_of_a_finished_night_is_the_same_night(nightwatch_home, prefect_db_template):
    home = nightwatch_home
    seed_database(home / "prefect", prefect_db_template)
    first = _night(home, None, max_issues=1)
    assert first.offline_model and first.succeeded
    assert sum(1 for i in first.issues if i.action == "created") == 1
    issues_before = _issue_files(home)
    index_before = (home / "tracker" / "index.json").read_bytes()
    marker = f"<!-- nightwatch:run={first.run_id} -->"
    markers_before = {name: text.count(marker.encode()) for name, text in issues_before.items()}

    again = _night(home, None, max_issues=1)
    assert again.run_id == first.run_id and again.attempt != first.attempt
    assert again.succeeded and again.errors_failed == 0
    assert all(r.source in ("cache", "knowledge") for r in again.results), [(r.error.label, r.source) for r in again.results]
    assert again.totals.model_calls == 0 and again.totals.cost_usd == 0
    assert all(i.action not in ("created", "commented") for i in again.issues), [(i.fingerprint, i.action) for i in again.issues]
    assert _issue_files(home) == issues_before  # byte for byte: no new comment carrying the night's marker
    assert {name: text.count(marker.encode()) for name, text in _issue_files(home).items()} == markers_before
    assert (home / "tracker" / "index.json").read_bytes() == index_before
    assert view_rows(home, "select count(*) from runs") == [(1,)]
    second_part = view_rows(home, "select source, cost_usd, model_calls from analyses "
                              f"where analysed_at >= '{again.started_at.isoformat()}'::timestamptz")
    assert len(second_part) == len(again.results)
    assert all(source == "cache" and cost == 0 and calls == 0 for source, cost, calls in second_part), second_part
    (total,), = view_rows(home, "select count(*) from analyses")
    assert total == len(first.results) + len(again.results)  # one part per attempt, the first one kept
    (calls,), = view_rows(home, "select count(*) from model_calls")
    assert calls == first.totals.model_calls


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_the_demo_night_against_a_generic_model(nightwatch_home, monkeypatch):
    from nightwatch.flows.nightwatch import run_night

    with FakeAnthropic(generic=True) as fake:
        assert isinstance(fake.brain, GenericModel)
        # The default filling answers needs_deep_investigation=false and category code_bug: every error stays
        # "simple". The other end of each choice (category "unknown", true) sends them to the investigators.
        fake.brain.prefer = "last"
        for name, value in anthropic_env(fake).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_MAX_RETRIES", "0")
        report = run_night(until=UNTIL, max_errors=MAX_ERRORS)
        bodies = fake.message_bodies()
    assert not report.offline_model
    assert sum(1 for b in bodies if (b.get("tool_choice") or {}).get("name") == TRIAGE_TOOL) == MAX_ERRORS
    deep = [r for r in report.results if r.verdict and r.verdict.route == "deep"]
    assert len(deep) == MAX_ERRORS, [(r.error.label, r.verdict.route if r.verdict else None) for r in report.results]
    for result in deep:
        assert result.failure is None, (result.error.label, result.failure)
        assert isinstance(result.analysis, Analysis)
        assert Analysis.model_validate(result.analysis.model_dump()) == result.analysis
        assert result.source == "model" and result.iterations > 0
    assert report.errors_failed == 0 and report.succeeded, [(s.name, s.status, s.detail) for s in report.steps]
