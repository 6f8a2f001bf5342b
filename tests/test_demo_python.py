"""The Python demo (nightwatch/demo_python): its application's own tests pass, its export (captured from the real
New Relic agent) agrees with the application and the answer key, and `NIGHTWATCH_DEMO=python` runs a night on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from nightwatch.cli import app
from nightwatch.ignore import noise_rules
from nightwatch.models import RunReport, Window
from nightwatch.selection import select_errors
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.trace_paths import PathMap, locate_frames

DEMO = Path(__file__).resolve().parents[1] / "nightwatch" / "demo_python"
APP = DEMO / "app"
KEY = yaml.safe_load((DEMO / "expected.yml").read_text(encoding="utf-8"))
NOW = datetime(2026, 11, 26, 6, tzinfo=timezone.utc)
WINDOW = Window(start=NOW - timedelta(days=1), end=NOW)


def test_the_application_s_own_test_suite_passes(tmp_path: Path) -> None:
    shutil.copytree(APP, tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    # a temporary folder of its own: under the shared one, pytest would first delete every older run's folders there
    # (it keeps three), which took a minute in the middle of the suite on a machine that had run it often
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--basetemp", str(tmp_path / "app-pytest")],
                          cwd=tmp_path / "app", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


def test_the_answer_key_points_at_lines_of_the_application() -> None:
    assert len(KEY["defects"]) >= 8
    assert sum(1 for d in KEY["defects"] if (d["crash"]["file"], d["crash"]["line"]) != (d["origin"]["file"], d["origin"]["line"])) >= 4
    for defect in KEY["defects"]:
        for where in (defect["crash"], defect["origin"]):
            lines = (APP / where["file"]).read_text(encoding="utf-8").splitlines()
            assert where["snippet"] in lines[where["line"] - 1], (defect["error_class"], where)


def test_the_captured_export_crashes_where_the_answer_key_says_and_drops_the_noise() -> None:
    source = ExportFileSource(DEMO / "nerdgraph_export.json", rebase_to=NOW, demo=True)
    selection = select_errors(source, WINDOW, noise_rules(None), 50, NOW)
    paths = PathMap([p.relative_to(APP).as_posix() for p in APP.rglob("*.py")])
    by_key = {(g.error_class, g.transaction): g for g in selection.selected}
    for defect in KEY["defects"]:
        group = by_key[(defect["error_class"], defect["transaction"])]
        assert group.http_status == 500
        frames = [f for f in locate_frames(source.fetch_traces(group, WINDOW), paths).stack_frames if f.in_app]
        assert (frames[0].file, frames[0].line) == (defect["crash"]["file"], defect["crash"]["line"]), defect["error_class"]
        assert all(f.located for f in frames)
    dropped = {rule.split(" ")[0] for rule in selection.ignored.values()}
    assert dropped == {n["rule"] for n in KEY["noise"]} and len(selection.selected) == len(KEY["defects"])


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_a_night_on_the_python_demo_localises_every_planted_bug(monkeypatch) -> None:
    monkeypatch.setenv("NIGHTWATCH_DEMO", "python")
    result = CliRunner().invoke(app, ["run", "--output", "json", "--until", NOW.isoformat()[:19]])
    assert result.exit_code == 0, result.stderr
    report = RunReport.model_validate_json(result.stdout)
    assert report.demo_data and report.errors_selected == len(KEY["defects"]) and len(report.noise) == len(KEY["noise"])
    found = {(r.error.error_class, r.error.transaction): r.analysis for r in report.results}
    origins_named = 0
    for defect in KEY["defects"]:
        analysis = found[(defect["error_class"], defect["transaction"])]
        crash = analysis.crash_site
        assert crash and (crash.file, crash.line) == (defect["crash"]["file"], defect["crash"]["line"]), defect["error_class"]
        if defect["origin"] != defect["crash"] and analysis.origin:
            origins_named += (analysis.origin.file, analysis.origin.line) == (defect["origin"]["file"], defect["origin"]["line"])
    assert origins_named == 5  # all five that start away from the crash line (the model's rules: nightwatch/offline)
