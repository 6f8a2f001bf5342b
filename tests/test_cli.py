"""The `nightwatch` command as a user meets it: exit codes, messages, stdout discipline."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nightwatch.cli import app, parse_since
from nightwatch.models import RunReport

runner = CliRunner()


def test_since_parsing():
    assert parse_since("24h") == 24 and parse_since("90m") == 1.5 and parse_since("2d") == 48 and parse_since("6") == 6
    for bad in ("yesterday", "0h", "90d"):
        with pytest.raises(typer.BadParameter):
            parse_since(bad)


def test_check_offline_defaults():
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0
    assert "newrelic" in result.stdout and "offline" in result.stdout and "demo data" in result.stdout


def test_check_partial_credentials_exit_2_without_leaking(monkeypatch):
    monkeypatch.setenv("NEW_RELIC_API_KEY", "NRAK-SECRETSECRETSECRETSECRET1")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret-token-value")
    result = runner.invoke(app, ["check", "--output", "json"])
    assert result.exit_code == 2
    states = {s["name"]: s for s in json.loads(result.stdout)["sources"]}
    assert states["newrelic"]["state"] == "misconfigured" and "account id" in states["newrelic"]["detail"]
    assert states["slack"]["state"] == "misconfigured" and "channel" in states["slack"]["detail"]
    assert "SECRET" not in result.stdout and "xoxb" not in result.stdout


def test_run_refuses_partial_credentials(monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_GITHUB_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123")
    result = runner.invoke(app, ["run"])
    assert result.exit_code == 2 and "github" in result.stderr and "repository missing" in result.stderr
    assert "ghp_" not in result.stderr


def test_bad_since_is_a_usage_error():
    result = runner.invoke(app, ["run", "--since", "soon"])
    assert result.exit_code == 2 and "soon" in result.output


def test_agents_commands(tmp_path):
    assert "ruby-rails" in runner.invoke(app, ["agents", "list"]).stdout
    assert "submit_analysis" in runner.invoke(app, ["agents", "show", "base-analyzer"]).stdout
    bad = tmp_path / "bad.md"
    bad.write_text("---\nname: bad\n---\nA prompt that is long enough to pass.\n")
    result = runner.invoke(app, ["agents", "validate", str(bad)])
    assert result.exit_code == 2 and "description" in result.stderr


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_run_json_prints_only_the_report():
    until = datetime(2026, 11, 21, 6, tzinfo=timezone.utc).isoformat()
    result = runner.invoke(app, ["run", "--output", "json", "--max-errors", "3", "--until", until[:19]])
    assert result.exit_code == 0, result.stderr
    report = RunReport.model_validate_json(result.stdout)
    assert report.errors_selected == 3 and report.demo_data


def test_knowledge_rebuild_names_skipped_documents(nightwatch_home: Path):
    errors = nightwatch_home / "knowledge" / "errors"
    errors.mkdir(parents=True)
    (errors / "2026-01-01_x_deadbeef.md").write_text("---\nerror_class: A\ntransaction: B\n---\n\n## Root Cause\n\nr\n")
    (errors / "2026-01-01_y_cafebabe.md").write_text("---\nrun_id: x\n---\n")
    result = runner.invoke(app, ["knowledge", "rebuild"])
    assert result.exit_code == 1
    assert "1 error document(s), 0 pattern(s) indexed, 1 skipped" in result.stdout
    assert "skipped errors/2026-01-01_y_cafebabe.md: the frontmatter field 'error_class' is missing" in result.stderr
    (errors / "2026-01-01_y_cafebabe.md").unlink()
    assert runner.invoke(app, ["knowledge", "rebuild"]).exit_code == 0
