"""A test environment whose set-up fails says why, wherever "not run" appears: the failing lines and the Debian package
a missing build tool comes from, in the model's run_test result, the issue, and `nightwatch check --test-env`; the
whole output is kept in setup.log, and the same set-up is not tried again until its files change or the check asks.

The application is the Python demo with one more requirement, a package that builds from source as mysqlclient does:
its setup script runs `mysql_config` and, where it is missing, raises mysqlclient's own `OSError: mysql_config not
found` (the build tool is absent here and on CI machines). pip runs that script for real, in the sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nightwatch.cli import app
from nightwatch.models import RegressionTest, RunReport
from nightwatch.settings import DEMO_DIRS
from nightwatch.verify import sandbox
from nightwatch.verify.setup_failure import explain
from nightwatch.verify.testenv import FAILED, SETUP_LOG, prepare_environment
from nightwatch.verify.verifier import TestSettings, Verifier, for_model

pytestmark = pytest.mark.slow  # set-ups and tests run in the sandbox: real processes

NOW = datetime(2026, 11, 26, 6, tzinfo=timezone.utc)
SETUP = "python -m pip install --no-index --no-build-isolation -r requirements.txt"
needs_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")
MYSQLISH = '''"""Builds as mysqlclient does: the compiler flags come from mysql_config."""
import subprocess
from setuptools import setup


def mysql_config(what):
    try:
        return subprocess.run(["mysql_config", f"--{what}"], capture_output=True, text=True, check=True).stdout.split()
    except FileNotFoundError:
        raise OSError("mysql_config not found")


setup(name="mysqlish", version="1.0", py_modules=[], extra_compile_args=mysql_config("cflags"))
'''


def checkout(root: Path) -> Path:
    """The Python demo application with a requirement that cannot build here, as a git checkout."""
    repo = root / "bookshop"
    shutil.copytree(DEMO_DIRS["python"] / "app", repo, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3"))
    (repo / "vendor" / "mysqlish").mkdir(parents=True)
    (repo / "vendor" / "mysqlish" / "setup.py").write_text(MYSQLISH)
    (repo / "requirements.txt").write_text("./vendor/mysqlish\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x.invalid", "PATH": os.environ["PATH"], "HOME": str(root)}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "app"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def test_the_failing_lines_and_the_package_are_found_in_real_build_output() -> None:
    pycurl = ("  error: subprocess-exited-with-error\n  × python setup.py egg_info did not run successfully.\n"
              "  │ exit code: 1\n  ╰─> [9 lines of output]\n      Traceback (most recent call last):\n"
              "      __main__.ConfigurationError: Could not run curl-config: [Errno 2] No such file or directory: 'curl-config'\n"
              "      [end of output]\n  note: This error originates from a subprocess, and is likely not a problem with pip.\n")
    why = explain(pycurl)
    assert why.missing == [("curl-config", "libcurl4-openssl-dev")] and "apt-get install libcurl4-openssl-dev" in why.hint
    assert any("Could not run curl-config" in line for line in why.lines)
    assert not any(line.startswith("  note:") for line in why.lines)
    assert explain("fatal error: Python.h: No such file or directory").missing == [("Python.h", "python3-dev")]
    assert explain("Error: pg_config executable not found.").missing == [("pg_config", "libpq-dev")]
    assert explain("ERROR: No matching distribution found for nosuchpackage").missing == []


@needs_sandbox
def test_a_set_up_that_fails_says_why_keeps_its_log_and_is_not_run_again_until_asked(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    files = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout.split()
    home = tmp_path / "home"
    env = prepare_environment(repo, files, home, SETUP)
    assert not env.ready and "mysql_config is missing (Debian: apt-get install default-libmysqlclient-dev)" in env.detail
    assert "OSError: mysql_config not found" in env.output and env.log and "mysql_config not found" in env.log.read_text()
    again = prepare_environment(repo, files, home, SETUP)  # the next night: remembered, not run again
    assert not again.ready and "not tried again" in again.detail and again.setup_seconds == 0.0
    assert "OSError: mysql_config not found" in again.output
    retried = prepare_environment(repo, files, home, SETUP, retry=True)
    assert not retried.ready and retried.setup_seconds > 0 and (env.log.parent / FAILED).is_file()
    assert (env.log.parent / SETUP_LOG) == env.log


@needs_sandbox
def test_the_models_run_test_result_shows_the_failing_lines_and_the_package(tmp_path: Path) -> None:
    repo = checkout(tmp_path)
    files = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout.split()
    verifier = Verifier(repo, files, tmp_path / "home", TestSettings(setup=SETUP))
    test = RegressionTest(path="tests/test_regression.py", content="def test_it():\n    assert True\n")
    told = for_model(*verifier.run_test(test))
    assert told.startswith("not run: ") and "apt-get install default-libmysqlclient-dev" in told
    assert "OSError: mysql_config not found" in told.split('<untrusted source="test run output">', 1)[1]


@needs_sandbox
def test_check_test_env_shows_the_failing_lines_and_the_package_then_runs_a_test_once_it_can(tmp_path: Path, monkeypatch) -> None:
    repo = checkout(tmp_path)
    monkeypatch.setenv("NIGHTWATCH_CODE_PATH", str(repo))
    monkeypatch.setenv("NIGHTWATCH_TEST_SETUP", SETUP)
    failed = CliRunner().invoke(app, ["check", "--test-env"])
    assert failed.exit_code == 2
    assert "OSError: mysql_config not found" in failed.stdout and "apt-get install default-libmysqlclient-dev" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    (repo / "requirements.txt").write_text("")  # the team drops the requirement: a new set-up, tried at once
    ran = CliRunner().invoke(app, ["check", "--test-env"])
    assert "$ python -m pytest" in ran.stdout and "tests/test_api.py" in ran.stdout


@needs_sandbox
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_a_night_shows_the_model_and_the_issue_why_and_changes_nothing_else(tmp_path: Path, monkeypatch) -> None:
    repo = checkout(tmp_path)
    for name, value in {"NIGHTWATCH_DEMO": "python", "NIGHTWATCH_CODE_PATH": str(repo), "NIGHTWATCH_TEST_SETUP": SETUP,
                        "NIGHTWATCH_MAX_ERRORS": "3"}.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["run", "--output", "json", "--until", NOW.isoformat()[:19]])
    assert result.exit_code == 0, result.stderr
    report = RunReport.model_validate_json(result.stdout)
    assert report.errors_selected == 3 and all(r.analysis for r in report.results)  # the night itself goes on
    verifications = [r.verification for r in report.results if r.verification]
    assert verifications and all(v.status == "not run" and "default-libmysqlclient-dev" in v.reason for v in verifications)
    issues = [Path(i.url.removeprefix("file://")).read_text() for i in report.issues if i.action == "created"]
    assert issues and all("OSError: mysql_config not found" in text and "default-libmysqlclient-dev" in text for text in issues
                          if "Verification" in text)
