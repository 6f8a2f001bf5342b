"""The harness checked on fix commits: a fix's own regression test, run through the sandbox at the fix's parent (it
must fail with the production error class) and at the fix (it must pass).

With no network: the fix commits here are made in a temporary repository from the Python demo application, and the
tests run in NightWatch's own environment (it has fastapi, httpx and pytest). The real fix commits the eval runs
(`nightwatch eval --fix-tests`: the eval cases' fixes and the harness-only `fix_commits` of evals/apps/<app>/app.yml) are
in each application's bundle (evals/apps/<app>/history.bundle); the bundles are checked here for the refs each needs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from nightwatch.eval_apps import TRAILER, bundle_of, case_ref, excluded, load_app_trees
from nightwatch.eval_run import fix_tests_table
from nightwatch.evaluation import (
    EvalError,
    FixTestItem,
    fix_test_items,
    fix_tests_summary,
    load_cases,
    run_fix_tests,
)
from nightwatch.verify import commit_tests, sandbox
from nightwatch.verify.commit_tests import FixCommit, HarnessSettings, changed_test_files, check_fix_commit

ROOT = Path(__file__).resolve().parents[2]
EVALS = ROOT / "evals"
APPS = EVALS / "apps"
APP = ROOT / "nightwatch" / "demo_python" / "app"
FIX_ITEMS = fix_test_items(load_cases(EVALS), APPS)  # the eval cases' fixes, then the harness-only fix commits
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}
PRODUCTION = "builtins:KeyError"  # the bookshop's production error: a currency missing from RATES
CRASH = "bookshop/pricing.py"

_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")


def needs_sandbox(test):
    """A test that runs fix commits' tests in the sandbox (real processes: left out of make test-fast)."""
    return pytest.mark.slow(_sandbox(test))

PRICING = (APP / "bookshop" / "pricing.py").read_text()
FIXES = {
    # adds the missing rate; its test converts to pounds: KeyError at the parent
    "gbp": {"bookshop/pricing.py": PRICING.replace('"CHF": 0.94}', '"CHF": 0.94, "GBP": 0.85}'),
            "tests/test_gbp.py": "from bookshop import pricing\n\n\ndef test_a_price_converts_to_pounds():\n"
                                 "    assert pricing.convert(10, 'GBP') == 8.5\n"},
    # its test checks what already worked
    "passes": {"bookshop/pricing.py": PRICING.replace('"CHF": 0.94}', '"CHF": 0.94, "GBP": 0.85}'),
               "tests/test_chf.py": "from bookshop import pricing\n\n\ndef test_francs():\n"
                                    "    assert pricing.convert(100, 'CHF') == 94.0\n"},
    # fixes another bug: at the parent its test raises AssertionError in line_total, not the production KeyError
    "other": {"bookshop/pricing.py": PRICING.replace('    assert quantity > 0, f"quantity must be positive, got {quantity}"\n',
                                                     "    if quantity <= 0:\n        return 0.0\n"),
              "tests/test_empty_line.py": "from bookshop import pricing\n\n\ndef test_an_empty_line_costs_nothing():\n"
                                          "    assert pricing.line_total(2.5, 0) == 0.0\n"},
}
TESTS = {"gbp": "tests/test_gbp.py", "passes": "tests/test_chf.py", "other": "tests/test_empty_line.py"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


@pytest.fixture(scope="module")
def bookshop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The demo bookshop as a parent commit, and one fix commit on it per FIXES entry (branches of those names)."""
    repo = tmp_path_factory.mktemp("bookshop")
    shutil.copytree(APP, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bookshop")
    shas = {"parent": git(repo, "rev-parse", "HEAD")}
    for name, files in FIXES.items():
        git(repo, "checkout", "-q", "-B", name, shas["parent"])
        for rel, text in files.items():
            (repo / rel).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"fix: {name}")
        shas[name] = git(repo, "rev-parse", "HEAD")
    return repo, shas


def check(bookshop: tuple[Path, dict[str, str]], fix: str, tmp_path: Path) -> commit_tests.CommitTestResult:
    repo, shas = bookshop
    return check_fix_commit(FixCommit(repo, shas["parent"], shas[fix], TESTS[fix], PRODUCTION, CRASH),
                            HarnessSettings(tmp_path / "home", env_path=Path(sys.prefix)))


def test_the_fix_commits_test_files_are_what_it_added_or_changed(bookshop) -> None:
    repo, shas = bookshop
    assert changed_test_files(repo, shas["parent"], shas["gbp"]) == ["tests/test_gbp.py"]


@needs_sandbox
def test_a_fix_whose_test_fails_at_the_parent_with_the_production_class_and_passes_at_the_fix_holds(bookshop, tmp_path):
    result = check(bookshop, "gbp", tmp_path)
    assert result.verdict == "holds", (result.detail, [r.output[-2000:] for r in result.runs])
    assert result.holds and result.detail == f"fails at the parent with {PRODUCTION}, through {CRASH}; passes at the fix"
    before, after = result.runs
    assert (before.commit, after.commit) == (bookshop[1]["parent"], bookshop[1]["gbp"])
    assert before.outcome.startswith("failed") and "KeyError: 'GBP'" in before.output
    assert after.outcome == "passed" and before.seconds > 0 and after.seconds > 0


@needs_sandbox
def test_a_fix_whose_test_passes_at_the_parent_does_not_hold(bookshop, tmp_path):
    result = check(bookshop, "passes", tmp_path)
    assert (result.verdict, result.detail) == ("passes at the parent", "the test does not fail before the fix")
    assert [r.outcome for r in result.runs] == ["passed", "passed"]


@needs_sandbox
def test_a_fix_whose_test_fails_at_the_parent_with_another_class_does_not_hold(bookshop, tmp_path):
    result = check(bookshop, "other", tmp_path)
    assert result.verdict == "fails differently at the parent"
    assert result.detail.startswith("raised AssertionError") and result.detail.endswith(f"not {PRODUCTION}")
    assert result.runs[1].outcome == "passed"


def test_an_unknown_commit_is_a_verdict_not_an_exception(bookshop, tmp_path):
    repo, shas = bookshop
    result = check_fix_commit(FixCommit(repo, shas["parent"], "0" * 40, TESTS["gbp"], PRODUCTION),
                              HarnessSettings(tmp_path, env_path=Path(sys.prefix)))
    assert result.verdict == "not run" and "could not be read" in result.detail


@needs_sandbox
def test_the_eval_runs_a_case_and_a_harness_only_fix_commit_from_their_applications_bundle(bookshop, tmp_path, monkeypatch):
    """`nightwatch eval --fix-tests`'s part: the app's bundle cloned, each fix's refs checked, the real commits named;
    an eval case's fix and a harness-only fix commit of the app's yml side by side, each marked as what it is."""
    repo, shas = bookshop
    cases_dir = tmp_path / "evals"
    case_id, harness_id = "bookshop-gbp-missing-rate", "bookshop-empty-line"
    (cases_dir / case_id).mkdir(parents=True)
    (cases_dir / case_id / "export.json").write_text("{}")
    (cases_dir / case_id / "expected.yml").write_text(
        f"id: {case_id}\nsource:\n  repository: https://example.invalid/acme/Bookshop\n  commit: {shas['parent']}\n"
        f"  fix_commit: {shas['gbp']}\nerror:\n  error_class: '{PRODUCTION}'\n  transaction: WebTransaction/x\n"
        f"crash:\n  file: {CRASH}\norigin:\n  file: {CRASH}\nregression_test: {TESTS['gbp']}\n")
    (cases_dir / "apps" / "bookshop").mkdir(parents=True)
    (cases_dir / "apps" / "bookshop" / "app.yml").write_text(
        f"fix_commits:\n  - id: {harness_id}\n    parent: {shas['parent']}\n    fix: {shas['other']}\n"
        f"    test: {TESTS['other']}\n    error_class: '{PRODUCTION}'\n    evidence: its test\n    note: another bug\n")
    for ref, sha in ((case_id, shas["gbp"]), (harness_id, shas["other"])):
        git(repo, "update-ref", f"refs/cases/{ref}/parent", shas["parent"])
        git(repo, "update-ref", f"refs/cases/{ref}/fix", sha)
    git(repo, "bundle", "create", "-q", str(cases_dir / "apps" / "bookshop" / "history.bundle"), "--glob=refs/cases/*")
    seen = {}

    def in_this_environment(commit, settings):  # the test environment is NightWatch's own: no registry needed
        seen.setdefault("crash_files", []).append(commit.crash_file)
        seen.update(vars(settings))
        return check_fix_commit(commit, replace(settings, env_path=Path(sys.prefix)))

    monkeypatch.setattr(commit_tests, "check_fix_commit", in_this_environment)
    items = fix_test_items(load_cases(cases_dir), cases_dir / "apps")
    score, other = run_fix_tests(items, cases_dir / "apps", tmp_path / "work", tmp_path / "home")
    assert (score.case, score.app, score.kind, score.verdict) == (case_id, "bookshop", "eval", "holds"), score.detail
    assert [(r.side, r.commit, r.outcome) for r in score.runs] == [
        ("parent", shas["parent"], score.runs[0].outcome), ("fix", shas["gbp"], "passed")]
    assert "KeyError" in (Path(score.logs) / "parent.log").read_text()
    assert (other.case, other.kind, other.verdict, other.note) == (harness_id, "harness", "fails differently at the parent",
                                                                    "another bug")
    assert [r.commit for r in other.runs] == [shas["parent"], shas["other"]]
    assert seen["crash_files"] == [CRASH, None] and seen["setup"] is None and seen["command"] is None
    assert fix_tests_summary([score, other]) == "1/2 hold"
    table = fix_tests_table([score, other])
    assert f"{case_id:<44} eval    holds" in table and f"{harness_id:<44} harness fails differently" in table
    assert "1/2 hold" in table and "eval cases 1/1, harness-only 0/1" in table


def test_a_fix_commit_missing_from_its_bundle_is_reported_not_run(tmp_path):
    renamed = FIX_ITEMS[0].model_copy(update={"id": "not-in-the-bundle"})
    [score] = run_fix_tests([renamed], APPS, tmp_path / "work", tmp_path / "home")
    assert score.verdict == "not run" and f"has no refs/cases/{renamed.id}/parent" in score.detail


def test_a_fix_commit_id_used_twice_is_refused(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "app.yml").write_text("fix_commits:\n" + "".join(
        f"  - {{id: twice, parent: a, fix: b, test: t, error_class: 'builtins:KeyError', evidence: e{n}}}\n"
        for n in (1, 2)))
    with pytest.raises(EvalError, match="used twice.*twice"):
        fix_test_items([], tmp_path)


# the real fix commits' trees ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each application's bundle fetched once into a bare repository."""
    out = {}
    for app in sorted({i.app for i in FIX_ITEMS}):
        out[app] = tmp_path_factory.mktemp(app) / "trees.git"
        subprocess.run(["git", "init", "-q", "--bare", str(out[app])], check=True)
        git(out[app], "fetch", "-q", str(bundle_of(APPS, app)), "refs/cases/*:refs/cases/*")
    return out


def test_at_least_twenty_real_fix_commits_added_a_regression_test_and_the_bundles_are_small() -> None:
    harness = [i for i in FIX_ITEMS if i.kind == "harness"]
    assert len(FIX_ITEMS) >= 20 and len(harness) >= 13 and len({i.app for i in FIX_ITEMS}) >= 2
    assert sum(p.stat().st_size for p in APPS.glob("*/history.bundle")) <= 8 * 1024 * 1024  # every case's history too
    for item in harness:  # each says as New Relic names it which class the bug raised, and where that comes from
        entry = next(f for f in load_app_trees(APPS, item.app).fix_commits if f.id == item.id)
        assert ":" in item.error_class and entry.evidence and len(item.parent) == len(item.fix) == 40, item.id


@pytest.mark.parametrize("item", FIX_ITEMS, ids=[i.id for i in FIX_ITEMS])
def test_the_bundle_holds_the_real_trees_of_each_fix_commits_parent_and_fix(item: FixTestItem,
                                                                            clones: dict[str, Path]) -> None:
    repo = clones[item.app]
    parent, fix = (git(repo, "rev-parse", case_ref(item.id, side)) for side in ("parent", "fix"))
    trailer = f"%(trailers:key={TRAILER.rstrip(': ')},valueonly)"
    assert git(repo, "log", "-1", f"--format={trailer}", parent) == item.parent
    assert git(repo, "log", "-1", f"--format={trailer}", fix) == item.fix
    assert git(repo, "rev-parse", f"{fix}^") == parent
    # the fix commit added or changed the test it names, and the trees leave out only what the yml excludes
    tests = changed_test_files(repo, parent, fix)
    test_file = item.test.split("::")[0] if "::" in item.test or item.test.endswith(".py") \
        else "/".join(item.test.split(".")[:-2]) + ".py"
    assert test_file in tests
    trees = load_app_trees(APPS, item.app)
    for commit in (parent, fix):
        paths = git(repo, "ls-tree", "-r", "--name-only", commit).splitlines()
        assert len(paths) > 100 and not [p for p in paths if excluded(p, trees)]
