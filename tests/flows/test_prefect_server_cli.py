"""The Prefect CLI of the lockfile against a real `prefect server` (not the ephemeral one): `make deploy`'s script
registers every deployment of prefect.yaml on a process work pool, the CLI lists them, a worker runs a night and
another worker runs its retry.

A FastAPI release once turned every CLI list command into HTTP 422 (null limit/offset); pyproject.toml pins it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.prefect_processes import (
    PROCESS_GUARD_S,
    ROOT,
    deploy,
    free_port,
    prefect,
    prefect_server,
    run_deployment,
    wait_terminal,
    worker,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # a real Prefect server and workers: past the suite's hang guard


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, prefect_db_template: Path) -> Iterator[dict[str, str]]:
    """One real Prefect server for this file's tests (the suite runs a file's tests on one worker)."""
    with prefect_server(tmp_path_factory.mktemp("server"), prefect_db_template) as env:
        yield env


@pytest.fixture(scope="module")
def deployed(server: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """`make deploy`'s script, run once from a copy of the checkout."""
    return deploy(server, tmp_path_factory.mktemp("checkout"))


def test_make_deploy_registers_every_deployment_and_the_locked_cli_lists_them(deployed: dict[str, str]) -> None:
    env = {k: v for k, v in deployed.items() if k != "DEPLOY_OUTPUT"}
    project = Path(env["NIGHTWATCH_CHECKOUT"])
    assert "prefect worker start --pool nightwatch" in deployed["DEPLOY_OUTPUT"]
    for command in (["work-pool", "ls"], ["deployment", "ls"], ["flow-run", "ls"], ["artifact", "ls"], ["block", "ls"]):
        listed = prefect(env, *command)
        refused = re.search(r"(?<![0-9a-f-])422(?![0-9a-f-])", listed.stdout + listed.stderr)  # an HTTP 422, not part of an id
        assert listed.returncode == 0 and not refused, f"prefect {' '.join(command)}: {listed.stderr[-1500:]}"
    listed = prefect(env, "deployment", "ls")
    assert all(f"nightwatch/{name}" in listed.stdout for name in ("nightly", "manual", "collect")), listed.stdout
    again = subprocess.run(["bash", "scripts/deploy.sh"], env=env, cwd=project, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    assert again.returncode == 0, again.stderr[-2000:]  # a second deploy updates in place


def test_make_deploy_refuses_without_a_real_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    refused = subprocess.run(["bash", str(ROOT / "scripts" / "deploy.sh")], env=env, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    assert refused.returncode == 2 and "set PREFECT_API_URL" in refused.stderr


# The script sends KILL 5 s after Ctrl-C to whatever has not stopped, so on a quiet machine everything is gone in about
# 2 s; on one loaded core the processes' own exits took up to 9 s. What this guards against is a process that lingers
# (Prefect's threads kept the serving process alive for a minute): 45 s, five times the slowest stop seen.
STOP_GUARD_S = 45


def test_ctrl_c_on_make_ui_ends_every_process_within_seconds(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"NIGHTWATCH_HOME": str(tmp_path / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    log = tmp_path / "ui.log"
    with log.open("w") as out:
        ui = subprocess.Popen(["bash", str(ROOT / "scripts" / "serve-ui.sh"), str(free_port())], env=env, stdout=out,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + PROCESS_GUARD_S
        while "being served" not in log.read_text() and time.monotonic() < deadline and ui.poll() is None:
            time.sleep(1)
        assert "being served" in log.read_text(), log.read_text()[-3000:]
        started = time.monotonic()
        os.killpg(ui.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends to the foreground group
        while (ui.poll() is None or _group_alive(ui.pid)) and time.monotonic() - started < STOP_GUARD_S:  # poll reaps the script
            time.sleep(0.25)
        stopped_after = time.monotonic() - started
    finally:
        if _group_alive(ui.pid):
            os.killpg(ui.pid, signal.SIGKILL)
    print(f"make ui stopped {stopped_after:.1f} s after Ctrl-C")
    assert stopped_after < STOP_GUARD_S, f"make ui took {stopped_after:.1f} s to stop"
    assert "Traceback" not in log.read_text()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


UNTIL = "2026-11-21T06:00:00+00:00"  # the night's end, and the calendar its workers run at


def test_a_night_on_a_worker_and_its_retry_on_another_worker_with_an_empty_disk(deployed: dict[str, str], tmp_path: Path,
                                                                                 calendar) -> None:
    """A platform team's night: `manual` run through the API on worker A, whose step 11 (the Slack follow-up)
    fails, so the night ends Failed; `prefect flow-run retry` then runs it on worker B, whose own Prefect home
    (and so Prefect's default result storage) is empty. Both share NIGHTWATCH_HOME, as a shared volume would. The
    nights run on the day they cover, so November is still open and each attempt's part is still staged."""
    from tests.fakes.anthropic import FakeAnthropic, anthropic_env
    from tests.fakes.slack import FakeSlack

    env = {k: v for k, v in deployed.items() if k != "DEPLOY_OUTPUT"}
    home = tmp_path / "shared-home"
    with FakeAnthropic() as model, FakeSlack() as slack:
        night_env = {**env, **anthropic_env(model), "NIGHTWATCH_HOME": str(home), "NIGHTWATCH_ANTHROPIC_MAX_RETRIES": "1",
                     "SLACK_BOT_TOKEN": slack.token, "NIGHTWATCH_SLACK_CHANNEL": "#nightwatch",
                     "NIGHTWATCH_SLACK_BASE_URL": slack.url + "/api/", "NIGHTWATCH_MAX_ERRORS": "3", "NIGHTWATCH_NOW": calendar(UNTIL)}
        slack.refuse_replies = "is_archived"  # the channel archived mid-night: not retried, the step fails
        with worker(night_env, tmp_path / "worker-a") as worker_a:
            run_id = run_deployment(env, "nightwatch/manual", f"until={UNTIL}")
            first = wait_terminal(env, run_id, [worker_a])
        assert first["state"]["type"] == "FAILED", first["state"]
        assert "step(s) failed: 11 follow_up" in first["state"]["message"]
        spent, issues = len(model.message_requests()), _issue_files(home)
        assert spent > 0 and issues and len(slack.top_level()) == 1
        log = worker_a.log.read_text()  # type: ignore[attr-defined]
        assert worker_a.returncode == 0, "worker A did not stop on SIGTERM; its threads then:\n" + log[-8000:]
        assert "NightFailed: NightWatch" in log and "step(s) failed: 11 follow_up" in log  # the run's log ends in why
        assert "Unexpected result for failed state" not in log

        slack.refuse_replies = None
        retried = prefect(env, "flow-run", "retry", run_id)
        assert retried.returncode == 0, retried.stdout[-1500:] + retried.stderr[-1500:]
        with worker(night_env, tmp_path / "worker-b") as worker_b:
            second = wait_terminal(env, run_id, [worker_b], after_runs=first["run_count"])
        assert worker_b.returncode == 0, "worker B did not stop on SIGTERM:\n" + worker_b.log.read_text()[-8000:]  # type: ignore[attr-defined]
        assert second["state"]["type"] == "COMPLETED", second["state"]
        assert len(model.message_requests()) == spent, "the retry repeated model calls"
        assert _issue_files(home) == issues, "the retry filed issues again"
        (report,) = slack.top_level()
        assert len(slack.thread(report.ts)) == 1  # the follow-up, posted once, by the retry
    analyses = sorted(p.name for p in (home / "metrics" / ".staging" / "analyses").rglob("*.parquet"))  # a part per attempt
    assert len(analyses) == 2 and any(name.endswith(f"-{second['run_count']}.parquet") for name in analyses), analyses
    assert not any((tmp_path / "worker-b" / "storage").rglob("*")), "results went to worker B's own disk"


def _issue_files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in (home / "tracker").rglob("*") if p.is_file())
