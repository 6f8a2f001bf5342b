"""Configuration that cannot work is refused in seconds, before Prefect starts, with one line naming it."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from nightwatch.cli import app
from nightwatch.preflight import anthropic_checks, problems, run_checks
from nightwatch.runtime import source_statuses
from nightwatch.settings import Settings
from tests.fakes.anthropic import FakeAnthropic, overloaded

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
