"""The verifier's verdicts, through the real sandbox on the Python demo application (its tests use what NightWatch's
own environment has): verified, reproduced but not fixed, not reproduced, a fix that breaks a passing test, and a
test that already failed without the fix, which is not blamed on it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from nightwatch.models import Analysis, FileChange, RegressionTest
from nightwatch.verify import sandbox
from nightwatch.verify.reproduce import CrashSite
from nightwatch.verify.verifier import TestSettings, Verifier, failed_tests, related_tests

pytestmark = [pytest.mark.skipif(sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
                                 reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)"),
              pytest.mark.slow]  # every test runs the application's tests in the sandbox: real processes

APP = Path(__file__).resolve().parents[2] / "nightwatch" / "demo_python" / "app"
FILES = sorted(str(p.relative_to(APP)) for p in APP.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
CRASH = CrashSite("builtins:IndexError", "bookshop/app.py", 30, "author_debut")
TEST = RegressionTest(path="tests/test_regression_debut.py", content=(
    "def test_an_author_without_books(client):\n    assert client.get('/authors/terry-pratchett/debut').status_code < 500\n"))
CRASH_LINE = "    return dict(storage.books_by(slug)[0])"
GUARD = ("    books = storage.books_by(slug)\n    if not books:\n        raise HTTPException(404, 'no books')\n"
         "    return dict(books[0])")


def verifier(tmp_path: Path) -> Verifier:
    return Verifier(APP, FILES, tmp_path, TestSettings(env_path=Path(sys.prefix)))


def analysis(*changes: FileChange, test: RegressionTest | None = TEST) -> Analysis:
    return Analysis(title="t", reasoning="r", root_cause="r", has_fix=bool(changes), confidence="medium",
                    file_changes=list(changes), regression_test=test)


def test_a_fix_whose_test_fails_without_it_and_passes_with_it_is_verified(tmp_path):
    v = verifier(tmp_path).verify(analysis(FileChange(path="bookshop/app.py", before=CRASH_LINE, after=GUARD)), CRASH)
    assert v.status == "verified", v
    assert "IndexError raised through bookshop/app.py:30" in v.reason
    assert [r.outcome for r in v.runs] == ["failed (exit 1)", "passed", "passed"]
    assert "tests/test_api.py" in v.runs[2].command  # the existing tests of the module the fix touches ran too
    assert TEST.path not in v.runs[2].command  # on their own: the model's test shares no process with them


def test_a_regression_test_that_reports_every_other_test_passed_cannot_hide_a_fix_that_breaks_one(tmp_path):
    hiding = RegressionTest(path=TEST.path, content=(
        "import gc, pytest\n\n"
        "class _AllGreen:\n"
        "    @pytest.hookimpl(hookwrapper=True)\n"
        "    def pytest_runtest_makereport(self, item, call):\n"
        "        report = (yield).get_result()\n"
        "        if 'test_regression_debut' not in item.nodeid:\n"
        "            report.outcome, report.longrepr = 'passed', None\n\n"
        "_config = next(o for o in gc.get_objects() if type(o).__name__ == 'Config' and hasattr(o, 'pluginmanager'))\n"
        "_config.pluginmanager.register(_AllGreen())\n\n" + TEST.content))
    breaking = FileChange(path="bookshop/app.py", before=CRASH_LINE, after="    return {}")
    v = verifier(tmp_path).verify(analysis(breaking, test=hiding), CRASH)
    assert v.status == "reproduced, not fixed" and "breaks" in v.reason, v


def test_a_traceback_a_test_prints_is_not_taken_for_one_it_raised(tmp_path):
    fake = ('Traceback (most recent call last):\n  File "/work/bookshop/app.py", line 30, in author_debut\n'
            '    return dict(storage.books_by(slug)[0])\nIndexError: list index out of range')
    printing = RegressionTest(path="tests/test_regression_printed.py",
                              content=f"def test_it():\n    print({fake!r})\n    assert False\n")
    marker = FileChange(path="bookshop/nw_marker.py", action="create", after="OWNED = True\n")
    v = verifier(tmp_path).verify(analysis(marker, test=printing), CRASH)
    assert v.status == "not reproduced", v


def test_a_fix_or_a_test_at_a_path_outside_the_checkout_or_onto_a_folder_is_not_run_and_reads_nothing(tmp_path):
    for path in ("/dev/zero", "../../etc/passwd", "bookshop/../../x.py", ".github/workflows/ci.yml"):
        v = verifier(tmp_path).verify(analysis(FileChange(path=path, before="a", after="b")), CRASH)
        assert v.status == "not run" and "the fix does not apply" in v.reason, (path, v)
    for path in ("tests", "bookshop/app.py/test_x.py"):
        v = verifier(tmp_path).verify(analysis(test=RegressionTest(path=path, content=TEST.content)), CRASH)
        assert v.status == "not run" and "cannot be written" in v.reason, (path, v)


def test_a_fix_that_does_not_fix_and_a_test_that_shows_another_error_say_so(tmp_path):
    wrong = FileChange(path="bookshop/app.py", before=CRASH_LINE, after=CRASH_LINE + "  # looked at")
    v = verifier(tmp_path).verify(analysis(wrong), CRASH)
    assert v.status == "reproduced, not fixed" and "does not pass" in v.reason
    other = RegressionTest(path="tests/test_regression_other.py", content="def test_it():\n    {}['missing']\n")
    v = verifier(tmp_path).verify(analysis(wrong, test=other), CRASH)
    assert v.status == "not reproduced" and "KeyError" in v.reason and "not builtins:IndexError" in v.reason
    passing = RegressionTest(path="tests/test_regression_ok.py", content="def test_it():\n    assert True\n")
    assert verifier(tmp_path).verify(analysis(wrong, test=passing), CRASH).status == "not reproduced"


def test_a_fix_that_breaks_a_passing_test_is_not_verified_but_an_old_failure_is_not_blamed_on_it(tmp_path):
    breaking = FileChange(path="bookshop/pricing.py", before='RATES = {"EUR": 1.0, "USD": 1.08, "CHF": 0.94}',
                          after='RATES = {"EUR": 1.0, "CHF": 0.94}')
    v = verifier(tmp_path).verify(analysis(FileChange(path="bookshop/app.py", before=CRASH_LINE, after=GUARD), breaking), CRASH)
    assert v.status == "reproduced, not fixed" and "the fix breaks" in v.reason and "test_price_in_euros_and_dollars" in v.reason
    app = tmp_path / "app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    (app / "tests" / "test_old_failure.py").write_text("from bookshop import app\n\n\ndef test_known_bad():\n    assert False\n")
    files = sorted(str(p.relative_to(app)) for p in app.rglob("*") if p.is_file())
    v = Verifier(app, files, tmp_path, TestSettings(env_path=Path(sys.prefix))).verify(
        analysis(FileChange(path="bookshop/app.py", before=CRASH_LINE, after=GUARD)), CRASH)
    assert v.status == "verified", v  # test_known_bad failed before the fix too
    assert [r.label for r in v.runs][-1] == "existing tests without the fix"


def test_nothing_runs_without_a_checkout_a_command_or_an_environment(tmp_path):
    assert Verifier(None, [], tmp_path).verify(analysis(), CRASH).reason.startswith("verification needs a local checkout")
    bare = Verifier(APP, FILES, tmp_path)  # no NIGHTWATCH_TEST_SETUP and no NIGHTWATCH_TEST_ENV: nothing is installed
    assert bare.verify(analysis(), CRASH).reason.startswith("no test environment: set NIGHTWATCH_TEST_SETUP")
    off = Verifier(APP, FILES, tmp_path, TestSettings(env_path=Path(sys.prefix), enabled=False))
    assert off.verify(analysis(), CRASH).reason == "verification is off (NIGHTWATCH_VERIFY_FIXES=false)"


def test_failed_tests_and_related_tests_are_read_as_the_runners_print_them():
    out = ("FAILED tests/test_api.py::test_price - KeyError: 'GBP'\nERROR tests/test_x.py::test_y\n"
           "FAIL: test_it_works (hc.api.tests.test_ping.PingTestCase)\n")
    assert failed_tests(out) == {"tests/test_api.py::test_price", "tests/test_x.py::test_y",
                                 "hc.api.tests.test_ping.PingTestCase.test_it_works"}
    assert related_tests(FILES, ["bookshop/pricing.py"], APP) == ["tests/test_pricing.py"]  # imports it
    assert set(related_tests(FILES, ["bookshop/app.py"], APP)) == {"tests/test_api.py", "tests/test_pricing.py"}  # conftest


def test_the_night_copies_the_checkout_once_and_each_run_lays_only_its_own_files_over_it(tmp_path):
    """A monorepo's tree is copied (and checked for secrets) once a night, not per run: every run reads the night's
    copy, and its test and fix reach only its own tmpfs; closing the verifier removes the copy."""
    v = verifier(tmp_path)
    guarded = FileChange(path="bookshop/app.py", before=CRASH_LINE, after=GUARD)
    first = v.verify(analysis(guarded), CRASH)
    trees = sorted((tmp_path / "sandbox").glob("night-tree-*"))
    second = v.verify(analysis(FileChange(path="bookshop/app.py", before=CRASH_LINE, after=CRASH_LINE + "  # no")), CRASH)
    assert first.status == "verified" and second.status == "reproduced, not fixed", (first, second)
    assert len(trees) == 1 and sorted((tmp_path / "sandbox").glob("night-tree-*")) == trees
    assert CRASH_LINE in (trees[0] / "bookshop" / "app.py").read_text()  # no run's fix ever reached the night's copy
    assert not list((tmp_path / "sandbox").glob("nightwatch-overlay-*"))
    v.close()
    assert not trees[0].exists()


def test_a_runs_file_replaces_a_link_of_the_tree_instead_of_writing_through_it(tmp_path):
    app = tmp_path / "app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    (app / "tests" / "test_linked.py").symlink_to("../bookshop/app.py")
    files = [*FILES, "tests/test_linked.py"]
    test = RegressionTest(path="tests/test_linked.py", content=(
        "import pathlib\n\ndef test_the_link_was_replaced():\n"
        "    assert 'author_debut' in pathlib.Path('bookshop/app.py').read_text()\n"
        "    assert not pathlib.Path('tests/test_linked.py').is_symlink()\n"))
    run, _ = Verifier(app, files, tmp_path / "home", TestSettings(env_path=Path(sys.prefix))).run_test(test)
    assert run.outcome == "passed", run.output
