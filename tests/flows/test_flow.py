"""The nightly flow end to end under prefect_test_harness, on the demo workspace."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
import yaml
from nightwatch.flows.nightwatch import run_night
from nightwatch.tasks.run_start import StepFailed

from nightwatch.ignore import InvalidIgnoreRules, load_ignore_rules
from nightwatch.runtime import ConfigurationError
from nightwatch.settings import DEMO_DIR
from nightwatch.sources.base import SourceError
from tests.fakes.anthropic import FakeAnthropic

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
EXPECTED = yaml.safe_load((DEMO_DIR / "expected.yml").read_text())


def _night(**kw):
    return run_night(until=UNTIL, **kw)


def _model_call_rows(home: Path) -> int:
    con = duckdb.connect(str(home / "nightwatch.duckdb"), read_only=True)
    try:
        return con.execute("select count(*) from model_calls").fetchone()[0]
    finally:
        con.close()


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.usefixtures("recorded_task_runs")  # it reads the night's task runs back
def test_demo_night_then_a_second_night(nightwatch_home, monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_PR_MIN_CONFIDENCE", "medium")  # the offline model is never highly confident
    monkeypatch.setenv("NIGHTWATCH_PR_REQUIRE_VERIFIED", "false")  # the Rails demo's tests need a Ruby toolchain
    report = _night(max_errors=40)
    assert report.demo_data and report.offline_model
    assert [s.state for s in report.sources] == ["offline"] * 4
    assert report.errors_found == EXPECTED["totals"]["distinct_fingerprints"]
    assert report.errors_ignored == len(EXPECTED["noise"])
    assert all(step.status != "failed" for step in report.steps), report.steps

    by_class = {r.error.error_class: r for r in report.results}
    for bug in EXPECTED["bugs"]:
        result = by_class[bug["error_class"]]
        if bug["kind"] == "transient":
            assert result.verdict.route == "transient"
            continue
        if result.verdict.route == "deep":
            assert bug["file"] in result.files_examined, (bug["id"], result.files_examined)
            assert result.analysis is not None and result.analysis.confidence in ("low", "medium")

    out = Path(report.reports_dir)
    slack = json.loads((out / "slack" / "report.json").read_text())
    assert slack["blocks"] and "demo data" in json.dumps(slack).lower()
    assert list((out / "issues").glob("*.md")) and report.pr is not None and report.pr.action == "created"
    assert (out / "pr").exists()
    calls = report.totals.model_calls
    assert calls > 0 and _model_call_rows(nightwatch_home) == calls
    issues_before = sorted(p.name for p in (nightwatch_home / "tracker" / "issues").glob("*.md"))

    again = _night(max_errors=40)
    assert again.totals.model_calls == 0 and again.totals.cost_usd == 0
    assert again.count_source("cache") + again.count_source("knowledge") >= len([r for r in report.results if r.source == "model"])
    assert _model_call_rows(nightwatch_home) == calls  # nothing metered twice
    issues_after = sorted(p.name for p in (nightwatch_home / "tracker" / "issues").glob("*.md"))
    fingerprints = [name.split("-", 1)[1] for name in issues_after]
    assert len(fingerprints) == len(set(fingerprints)) and set(issues_before) <= set(issues_after)
    assert again.pr is not None and again.pr.action == "exists"
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:  # one report artifact per night, a version per attempt, the last complete
        versions = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[f"nightwatch-report-{report.run_id}".lower()])))
    assert len(versions) >= 4  # step 6 and the end, for each of the two attempts
    latest = max(versions, key=lambda a: a.created).data
    assert "detect_patterns" in latest and "record_run" in latest and "file_issues" in latest
    with get_client(sync_client=True) as client:  # task runs read like the step list, per error where there is one
        names = {run.name for run in client.read_task_runs(limit=200)}
    assert {"0 load_knowledge", "2 fetch_errors", "8.5 check_fixes", "13 detect_patterns"} <= names
    assert "3 fetch_traces · NoMethodError orders#show" in names
    assert any(name.startswith("4 investigate_error · ") for name in names)


def test_mode_and_the_learning_steps_follow_their_settings(nightwatch_home, monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_MODE", "batch")
    monkeypatch.setenv("NIGHTWATCH_COMPOUND_ENABLED", "false")
    monkeypatch.setenv("NIGHTWATCH_PATTERNS_ENABLED", "false")
    report = _night(max_errors=3)
    assert report.mode == "batch" and report.succeeded
    steps = {s.name: s.detail for s in report.steps}
    assert "knowledge documents off: NIGHTWATCH_COMPOUND_ENABLED=false" in steps["compound"]
    assert not list((nightwatch_home / "knowledge" / "errors").glob("*.md")) and not report.patterns
    assert steps["detect_patterns"].startswith("0 patterns, 0 ignore suggestions")


def test_live_model_path_through_the_fake_api(nightwatch_home, monkeypatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        report = _night(max_errors=3)
        bodies = fake.message_bodies()
    assert not report.offline_model
    assert any(b["tool_choice"] == {"type": "tool", "name": "submit_triage"} for b in bodies if "tool_choice" in b)
    models = {c.model for r in report.results for c in r.model_calls}
    assert models <= {"claude-sonnet-4-6", "claude-haiku-4-5"} and report.totals.cost_usd > 0


def _export_with(tmp_path: Path, mutate) -> Path:
    data = json.loads((DEMO_DIR / "nerdgraph_export.json").read_text())
    mutate(data)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data))
    return path


def test_malformed_nerdgraph_response_is_a_clear_error(nightwatch_home, tmp_path, monkeypatch):
    path = _export_with(tmp_path, lambda d: d["errors"]["data"].pop("actor"))
    monkeypatch.setenv("NIGHTWATCH_ERRORS_FILE", str(path))
    with pytest.raises(StepFailed) as failure:
        _night()
    assert isinstance(failure.value.__cause__, SourceError) and "malformed" in str(failure.value)


def test_invalid_ignore_rules_name_the_rule(nightwatch_home, tmp_path, monkeypatch):
    rules = tmp_path / "ignore.yml"
    rules.write_text("ignore:\n  - pattern: '(unclosed'\n    match: regex\n    reason: bots\n")
    monkeypatch.setenv("NIGHTWATCH_IGNORE_FILE", str(rules))
    with pytest.raises(StepFailed) as failure:
        _night()
    assert failure.value.step == "connect"  # checked before anything is fetched
    assert isinstance(failure.value.__cause__, ConfigurationError) and "(unclosed" in str(failure.value)
    with pytest.raises(InvalidIgnoreRules, match="unclosed"):  # the rules themselves say which rule is wrong
        load_ignore_rules(rules)


def test_five_megabyte_trace_is_truncated_with_a_note(nightwatch_home, tmp_path, monkeypatch):
    frame = "app/models/category.rb:25:in `ancestors_path'\n"

    def huge(d):  # the error with the 5 MB trace and two ordinary ones: a night's worth of steps around it
        groups = d["errors"]["data"]["actor"]["account"]["nrql"]["results"]
        kept = {g["error.class"] for g in groups[:2]} | {"SystemStackError"}
        groups[:] = [g for g in groups if g["error.class"] in kept]
        d["details"] = [detail for detail in d["details"] if detail["error_class"] in kept]
        for detail in d["details"]:
            if detail["error_class"] == "SystemStackError":
                rows = detail["error_traces"]["data"]["actor"]["account"]["nrql"]["results"]
                rows[0]["stackTrace"] = frame * (5_000_000 // len(frame))

    monkeypatch.setenv("NIGHTWATCH_ERRORS_FILE", str(_export_with(tmp_path, huge)))
    monkeypatch.setenv("NIGHTWATCH_CODE_PATH", str(DEMO_DIR / "app"))
    report = _night(max_errors=40, dry_run=True)
    assert report.errors_selected <= 3
    stack = next(r for r in report.results if r.error.error_class == "SystemStackError")
    assert stack.analysis is not None and all(s.status != "failed" for s in report.steps)
    assert stack.model_calls and all(c.result_chars < 50_000 for c in stack.tool_calls)  # 5 MB never reaches the model
    prompt = max(c.usage.input + c.usage.cache_write + c.usage.cache_read for c in stack.model_calls)
    assert prompt < 50_000, prompt
