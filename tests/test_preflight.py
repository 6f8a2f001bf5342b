"""Configuration that cannot work is refused in seconds, before Prefect starts, with one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightwatch.cli import app
from nightwatch.preflight import anthropic_checks, newrelic_checks, problems, run_checks
from nightwatch.runtime import source_statuses
from nightwatch.settings import Settings
from nightwatch.verify.sandbox import unavailable_reason as sandbox_unavailable
from tests.fakes.anthropic import FakeAnthropic, overloaded
from tests.fakes.http import Reply
from tests.fakes.nerdgraph import FAKE_API_KEY, FakeNerdGraph, NerdGraphDataset, sample_export

runner = CliRunner()


def _live(fake: FakeAnthropic, key: str | None = None, **extra: object) -> Settings:
    return Settings(anthropic_api_key=key or fake.api_key, anthropic_base_url=fake.url, **extra)


def test_a_refused_key_is_a_configuration_error_naming_the_key():
    with FakeAnthropic() as fake:
        checks = anthropic_checks(_live(fake, key="sk-ant-wrong-1234567890"))
        counted = fake.calls("POST", "/v1/messages/count_tokens")
    assert [c.state for c in checks] == ["error"] and "ANTHROPIC_API_KEY" in checks[0].detail and "401" in checks[0].detail
    assert len(counted) == 1  # one probe, not retried: a 401 is not transient
    assert "sk-ant-wrong" not in checks[0].detail


def test_an_unknown_model_is_a_configuration_error():
    with FakeAnthropic(known_models={"claude-haiku-4-5"}) as fake:
        checks = anthropic_checks(_live(fake, model="claude-sonnet-9-9"))
    assert problems(checks) and "NIGHTWATCH_MODEL" in checks[0].detail and "claude-sonnet-9-9" in checks[0].detail


def test_a_good_key_passes_a_busy_api_warns_and_an_unreachable_one_is_an_error():
    with FakeAnthropic() as fake:
        good = anthropic_checks(_live(fake))
        fake.fail_next("POST", "/v1/messages/count_tokens", overloaded(), overloaded())
        busy = anthropic_checks(_live(fake, model="claude-haiku-4-5"))
        url = fake.url
    assert [c.state for c in good] == ["ok", "ok"]  # one probe per configured model
    assert [c.state for c in busy] == ["warning"] and not problems(busy)
    gone = anthropic_checks(Settings(anthropic_api_key="sk-ant-x", anthropic_base_url=url))  # the server has stopped
    assert [c.state for c in gone] == ["error"] and "ANTHROPIC_BASE_URL" in gone[0].detail


def test_run_against_a_closed_port_exits_2_in_seconds_with_one_line(nightwatch_home, monkeypatch):
    with FakeAnthropic() as fake:
        url = fake.url  # a port that was just closed
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-closedport0000000000")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    result = runner.invoke(app, ["run"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "could not be reached" in lines[0] and url in lines[0]
    assert not list(nightwatch_home.glob("prefect/*.db")) and not (nightwatch_home / "reports").exists()  # nothing analysed


def test_offline_checks_cover_agent_ignore_file_and_writable_homes(tmp_path: Path, monkeypatch):
    ignore = tmp_path / "ignore.yml"
    ignore.write_text("ignore:\n  - pattern: '(unclosed'\n    match: regex\n    reason: bots\n")
    locked = tmp_path / "locked"
    locked.write_text("a file where a folder should be")
    monkeypatch.setenv("PREFECT_HOME", str(locked / "prefect"))
    settings = Settings(agent="no-such-agent", ignore_file=ignore)
    bad = {c.name: c.detail for c in problems(run_checks(settings, source_statuses(settings)))}
    assert set(bad) == {"agent", "ignore rules", "PREFECT_HOME"}
    assert "base-analyzer" in bad["agent"] and "(unclosed" in bad["ignore rules"]


def test_run_with_a_bogus_key_exits_2_before_prefect_starts(nightwatch_home, monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-bogus-0000000000")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        result = runner.invoke(app, ["run"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0] and "bogus" not in lines[0]
    assert not list(nightwatch_home.glob("prefect/*.db"))  # Prefect never started
    assert not fake.message_requests()


def test_run_with_an_unknown_agent_exits_2_naming_the_known_ones(nightwatch_home):
    result = runner.invoke(app, ["run", "--agent", "nope"])
    assert result.exit_code == 2 and "nope" in result.stderr and "base-analyzer" in result.stderr
    assert not list(nightwatch_home.glob("prefect/*.db"))


def test_check_reports_each_check_and_exits_2_on_a_problem(monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-bogus-0000000000")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        result = runner.invoke(app, ["check"])
        offline = runner.invoke(app, ["check", "--offline"])
    assert result.exit_code == 2 and "anthropic" in result.stdout and "error" in result.stdout
    assert offline.exit_code == 0  # nothing was asked of the API


def _newrelic(fake: FakeNerdGraph, key: str = FAKE_API_KEY) -> Settings:
    return Settings(newrelic_api_key=key, newrelic_account_id=fake.account_id, newrelic_app_name="storefront-production",
                    newrelic_endpoint=fake.url)


def test_new_relic_a_refused_key_an_unknown_account_and_a_closed_port_are_errors_a_busy_api_a_warning():
    with FakeNerdGraph(NerdGraphDataset.from_export(sample_export())) as fake:
        good = newrelic_checks(_newrelic(fake))
        refused = newrelic_checks(_newrelic(fake, key="NRAK-WRONGWRONGWRONGWRONG00"))
        other = Settings(newrelic_api_key=FAKE_API_KEY, newrelic_account_id=999, newrelic_app_name="x",
                         newrelic_endpoint=fake.url)
        unknown = newrelic_checks(other)
        fake.fail_next(Reply(503, {"errors": []}), Reply(503, {"errors": []}))
        busy = newrelic_checks(_newrelic(fake))
        asked = list(fake.queries)
        url = fake.url
    assert [c.state for c in good] == ["ok"] and "SINCE" in asked[0] and "storefront-production" in asked[0]
    assert [c.state for c in refused] == ["error"] and "NEW_RELIC_API_KEY" in refused[0].detail
    assert "WRONGWRONG" not in refused[0].detail
    assert [c.state for c in unknown] == ["error"] and "999" in unknown[0].detail
    assert [c.state for c in busy] == ["warning"] and "503" in busy[0].detail
    gone = newrelic_checks(Settings(newrelic_api_key=FAKE_API_KEY, newrelic_account_id=1, newrelic_app_name="x",
                                    newrelic_endpoint=url))
    assert [c.state for c in gone] == ["error"] and url in gone[0].detail and "NIGHTWATCH_NEWRELIC_ENDPOINT" in gone[0].detail


def test_run_against_a_closed_nerdgraph_port_exits_2_in_seconds_with_one_line(nightwatch_home, monkeypatch):
    with FakeNerdGraph(NerdGraphDataset.from_export(sample_export())) as fake:
        url = fake.url  # a port that was just closed
    for name, value in {"NEW_RELIC_API_KEY": FAKE_API_KEY, "NEW_RELIC_ACCOUNT_ID": "1234567",
                        "NEW_RELIC_APP_NAME": "storefront-production", "NIGHTWATCH_NEWRELIC_ENDPOINT": url}.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["run"])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "could not reach" in lines[0] and url in lines[0]
    assert FAKE_API_KEY not in result.stderr
    assert not list(nightwatch_home.glob("prefect/*.db")) and not (nightwatch_home / "reports").exists()  # nothing analysed


@pytest.mark.skipif(sandbox_unavailable() is not None, reason="no sandbox here: the check says why instead")
def test_check_says_whether_a_runs_processes_are_held_together(monkeypatch):
    from nightwatch.verify import cgroup, sandbox

    def detail() -> str:
        return next(c.detail for c in run_checks(Settings(demo="python"), []) if c.name == "verified fixes")

    monkeypatch.setattr(cgroup, "make", lambda *a, **k: (None, "no cgroup here"))
    assert detail().endswith("sandbox: bubblewrap, memory and processes limited per process only (no cgroup here)")
    group = cgroup.RunGroup(1, Path("/nonexistent/m"), Path("/nonexistent/p"))
    monkeypatch.setattr(cgroup, "make", lambda *a, **k: (group, ""))
    assert detail().endswith("sandbox: bubblewrap, memory and processes limited per run (cgroup v1)")
    assert sandbox.grouping() == "memory and processes limited per run (cgroup v1)"
