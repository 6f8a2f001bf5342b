"""Damaged local state and crafted input cost a warning, never a night: quarantine, rebuild, go on."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from nightwatch.knowledge_store.doctor import check_home
from nightwatch.knowledge_store.metrics import MetricsStore
from typer.testing import CliRunner

from nightwatch.cli import app
from nightwatch.ignore import IgnoreRule, apply_ignore_rules
from nightwatch.models import ErrorGroup
from nightwatch.settings import DEMO_DIR
from tests.knowledge_store.test_metrics import make_calls

UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
BROKEN_DOC = "---\nfingerprint: [unclosed\n---\n# broken\n"


def _damage(home: Path) -> None:
    errors = home / "knowledge" / "errors"
    errors.mkdir(parents=True, exist_ok=True)
    (errors / "2026-11-01_broken_deadbeef.md").write_text(BROKEN_DOC)
    (home / "knowledge" / "index.duckdb").write_bytes(b"not a database either" * 100)
    good = MetricsStore(home).write_model_calls("night-0", "2026-11-01", "part", make_calls(2))
    truncated = good.with_name("cut.parquet")
    truncated.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    (home / "nightwatch.duckdb").write_bytes(b"not a database at all" * 100)


def test_doctor_quarantines_rebuilds_and_then_finds_a_healthy_home(nightwatch_home: Path):
    _damage(nightwatch_home)
    found = check_home(nightwatch_home, repair=False)
    assert {f.what.split("/")[0] for f in found} == {"knowledge", "metrics", "nightwatch.duckdb"}
    assert (nightwatch_home / "knowledge" / "errors" / "2026-11-01_broken_deadbeef.md").exists()  # --check changes nothing

    repaired = check_home(nightwatch_home)
    assert len(repaired) == len(found)
    quarantined = {p.name for p in (nightwatch_home / "quarantine").glob("**/*") if p.is_file()}
    assert quarantined == {"2026-11-01_broken_deadbeef.md", "cut.parquet"}
    assert check_home(nightwatch_home) == []
    files = str(nightwatch_home / "metrics" / ".staging" / "model_calls" / "**" / "*.parquet")
    assert duckdb.sql(f"select count(*) from read_parquet('{files}')").fetchall() == [(2,)]  # the good file still answers


def test_doctor_command_exit_codes(nightwatch_home: Path):
    runner = CliRunner()
    assert runner.invoke(app, ["doctor"]).exit_code == 0
    _damage(nightwatch_home)
    checked = runner.invoke(app, ["doctor", "--check"])
    assert checked.exit_code == 1 and "cut.parquet" in checked.stdout and "found" in checked.stdout
    assert runner.invoke(app, ["doctor"]).exit_code == 1
    assert runner.invoke(app, ["doctor"]).exit_code == 0


def test_a_catastrophic_ignore_regex_costs_one_timeout_and_a_warning():
    rule = IgnoreRule(pattern="(a+)+$", match="regex", reason="scanner noise")
    crafted = ErrorGroup(error_class="RuntimeError", transaction="Controller/x", message=("a" * 5_000 + "!") * 20)  # 100 KB
    others = [ErrorGroup(error_class="KeyError", transaction=f"Controller/y{i}", message="aaaa") for i in range(50)]
    kept, ignored = apply_ignore_rules([crafted, *others], [rule])
    assert rule.timed_out and "(a+)+$" in rule.timed_out and "off for the rest of this night" in rule.timed_out
    assert len(kept) + len(ignored) == 51  # every error still decided


def test_nul_and_lone_surrogates_are_replaced_where_errors_are_made():
    error = ErrorGroup(error_class="No\x00Method\x1b[2J", transaction="Controller/a", message="bad \ud800 half")
    assert "\x00" not in error.error_class and "\x1b" not in error.error_class
    assert error.message == "bad ? half"
    json.dumps(error.model_dump()).encode("utf-8")  # every writer can store it


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_a_night_goes_on_over_damaged_state_and_crafted_rows(nightwatch_home: Path, tmp_path: Path, monkeypatch):
    from nightwatch.flows.nightwatch import run_night

    _damage(nightwatch_home)
    data = json.loads((DEMO_DIR / "nerdgraph_export.json").read_text())
    rows = data["errors"]["data"]["actor"]["account"]["nrql"]["results"]
    rows[0]["error.class"] = rows[0]["facet"][0] = "Type\x00Error"
    rows[1]["message"] = "half a surrogate \ud800 here"
    export = tmp_path / "export.json"
    export.write_text(json.dumps(data))
    rules = tmp_path / "ignore.yml"
    rules.write_text("ignore:\n  - pattern: '(a+)+$'\n    match: regex\n    reason: crafted\n")
    monkeypatch.setenv("NIGHTWATCH_ERRORS_FILE", str(export))
    monkeypatch.setenv("NIGHTWATCH_IGNORE_FILE", str(rules))
    monkeypatch.setenv("NIGHTWATCH_CODE_PATH", str(DEMO_DIR / "app"))
    report = run_night(until=UNTIL, max_errors=3)
    assert report.steps_failed == [], report.steps
    assert report.errors_selected == 3 and not report.errors_failed
    assert list((nightwatch_home / "quarantine").glob("**/*.md")) and list((nightwatch_home / "quarantine").glob("**/*.parquet"))
    con = duckdb.connect(str(nightwatch_home / "nightwatch.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from runs").fetchone()[0] == 1
        assert con.execute("select count(*) from errors where error_class like 'Type%Error'").fetchone()[0] >= 1
    finally:
        con.close()
