"""A night whose model is down fails loudly, caches nothing, and the next run of the window does the work."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nightwatch.flows.nightwatch import run_night

from nightwatch.models import RunReport
from tests.fakes.anthropic import FakeAnthropic, overloaded
from tests.fakes.http import Reply, Request
from tests.views import rows as view_rows

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


class DownFake(FakeAnthropic):
    """Answers 529 to every Messages request while `down` is set."""

    down = True

    def _messages(self, req: Request) -> Reply:
        return overloaded() if self.down else super()._messages(req)



def test_a_night_with_the_model_down_fails_loudly_and_the_next_run_analyses_every_error(nightwatch_home, monkeypatch):
    with DownFake() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_MAX_RETRIES", "0")
        down = run_night(until=UNTIL, max_errors=3)
        deep = [r for r in down.results if r.verdict and r.verdict.route == "deep"]
        assert deep and down.errors_failed == len(deep) and not down.succeeded
        assert all(r.failed and ("529" in r.failure or "Overloaded" in r.failure) for r in deep)
        slack = json.loads((Path(down.reports_dir) / "slack" / "report.json").read_text())
        assert f"{down.errors_failed} failed" in json.dumps(slack) and "Overloaded" in json.dumps(slack)
        assert not list((nightwatch_home / "knowledge" / "errors").glob("*.md"))  # no failure kept as knowledge
        assert view_rows(nightwatch_home, "select errors_failed from runs") == [(down.errors_failed,)]
        assert _last_night_state() == ("FAILED", f"NightWatch {down.run_id}: FAILED: {down.errors_failed} of 3 analyses failed")

        fake.down = False
        healthy = run_night(until=UNTIL, max_errors=3)
    assert healthy.run_id == down.run_id  # the same window is the same night
    assert healthy.succeeded and healthy.errors_failed == 0
    assert healthy.count_source("cache") == 0  # nothing failed was cached as an answer
    assert all(r.analysis is not None for r in healthy.results if r.verdict.route in ("deep", "simple"))
    assert view_rows(nightwatch_home, "select count(*), sum(errors_failed) from runs") == [(1, 0)]  # one row per night
    assert _last_night_state()[0] == "COMPLETED"


def _last_night_state() -> tuple[str, str | None]:
    """The newest `nightwatch` flow run's state, as the run page shows it: red for a night that failed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["nightwatch"])), limit=1,
                                       sort=FlowRunSort.START_TIME_DESC)
    return run.state.type.value, run.state.message


def test_the_command_exits_1_with_one_line_per_failure_and_no_traceback(nightwatch_home, monkeypatch):
    from typer.testing import CliRunner

    from nightwatch.cli import app

    with DownFake() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_MAX_RETRIES", "0")
        result = CliRunner().invoke(app, ["run", "--until", "2026-11-21T06:00", "--max-errors", "2", "--output", "json"])
    assert result.exit_code == 1, result.stderr[-2000:]
    report = RunReport.model_validate_json(result.stdout)  # stdout stays the report alone
    lines = result.stderr.strip().splitlines()
    assert "FAILED" in lines[-1] and f"{report.errors_failed} of 2 analyses failed" in lines[-1]
    assert sum("failed:" in line for line in lines) == report.errors_failed
    assert "Traceback" not in result.stderr
    assert list((nightwatch_home / "logs").glob("run-*.log"))
