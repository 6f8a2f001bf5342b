"""The eval's applications as data: one bundle per application, read once per run, each case checked out of it.

Made here from a small repository of the Python demo's files, so each failure (no bundle, no ref for the case, two
processes wanting the same application) is seen on its own; the real bundles are checked in test_eval.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from nightwatch.eval_apps import AppError, AppRepositories, case_ref
from nightwatch.evaluation import EvalCase, load_cases, prepare_repository, run_case

APP = Path(__file__).resolve().parents[2] / "nightwatch" / "demo_python" / "app"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}
CASE = "bookshop-missing-rate"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def cases_dir(tmp_path: Path) -> Path:
    """evals/ with one case of application `bookshop`, whose bundle holds the case's slice: two commits of history."""
    work = tmp_path / "work"
    shutil.copytree(APP / "bookshop", work / "bookshop")
    git(work.parent, "init", "-q", "-b", "main", str(work))
    (work / "LICENSE").write_text("MIT\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "first\n\nOriginal-Commit: " + "a" * 40)
    (work / "bookshop" / "pricing.py").write_text((work / "bookshop" / "pricing.py").read_text() + "# later\n")
    git(work, "commit", "-q", "-am", "second\n\nOriginal-Commit: " + "b" * 40)
    git(work, "update-ref", case_ref(CASE, "history"), "HEAD")
    evals = tmp_path / "evals"
    (evals / "apps" / "bookshop").mkdir(parents=True)
    git(work, "bundle", "create", "-q", str(evals / "apps" / "bookshop" / "history.bundle"), "--glob=refs/cases/*")
    (evals / CASE).mkdir()
    (evals / CASE / "export.json").write_text("{}")
    (evals / CASE / "expected.yml").write_text(
        f"id: {CASE}\nsource:\n  repository: https://example.invalid/acme/Bookshop\n  commit: {'b' * 40}\n"
        "error:\n  error_class: 'builtins:KeyError'\n  transaction: WebTransaction/x\n"
        "crash:\n  file: bookshop/pricing.py\norigin:\n  file: bookshop/pricing.py\n")
    return evals


def the_case(cases_dir: Path) -> EvalCase:
    [case] = load_cases(cases_dir)
    return case


def test_a_case_is_checked_out_of_its_applications_bundle_with_its_history(cases_dir: Path, tmp_path: Path) -> None:
    repo = prepare_repository(the_case(cases_dir), tmp_path / "night" / "repo")
    assert (repo / "bookshop" / "pricing.py").read_text().endswith("# later\n") and (repo / "LICENSE").is_file()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main" and not git(repo, "status", "--porcelain")
    assert git(repo, "log", "--format=%(trailers:key=Original-Commit,valueonly)").split() == ["b" * 40, "a" * 40]


def test_an_application_is_read_once_per_run_however_many_want_it_at_once(cases_dir: Path, tmp_path: Path) -> None:
    apps = AppRepositories(cases_dir / "apps", tmp_path / "run" / "apps")
    made: list[Path] = []
    threads = [threading.Thread(target=lambda: made.append(apps.repository("bookshop"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 1 and len(made) == 4
    names = sorted(p.name for p in (tmp_path / "run" / "apps").iterdir())
    assert len(names) == 2 and names[0] == ".bookshop.lock" and re.fullmatch(r"bookshop-[0-9a-f]{12}\.git", names[1])
    stamp = (made[0] / "HEAD").stat().st_mtime_ns
    for n in range(3):
        apps.check_out("bookshop", CASE, tmp_path / f"case{n}")
    assert (made[0] / "HEAD").stat().st_mtime_ns == stamp  # not read again


def test_a_case_its_bundle_does_not_hold_is_a_scored_failure_naming_what_writes_it(cases_dir: Path, tmp_path: Path) -> None:
    case = the_case(cases_dir).model_copy(update={"id": "bookshop-not-recorded"})

    def night(*_args):
        raise AssertionError("no night runs without the case's code")

    scored = run_case(case, tmp_path / "run", night)
    assert "has no refs/cases/bookshop-not-recorded/history (scripts/history_slices.py writes it)" in scored.failure
    assert "--repo" in scored.failure


def test_an_application_without_a_bundle_says_which_file_is_missing(cases_dir: Path, tmp_path: Path) -> None:
    (cases_dir / "apps" / "bookshop" / "history.bundle").unlink()
    with pytest.raises(AppError, match=r"no .*apps/bookshop/history.bundle \(scripts/history_slices.py"):
        AppRepositories(cases_dir / "apps", tmp_path / "apps").repository("bookshop")


def test_an_unreadable_bundle_is_named_and_leaves_nothing_half_made(cases_dir: Path, tmp_path: Path) -> None:
    (cases_dir / "apps" / "bookshop" / "history.bundle").write_bytes(b"not a bundle\n")
    with pytest.raises(AppError, match="cannot read .*history.bundle"):
        AppRepositories(cases_dir / "apps", tmp_path / "apps").repository("bookshop")
    assert [p.name for p in (tmp_path / "apps").iterdir()] == [".bookshop.lock"]


def test_a_bundle_written_again_is_read_again_in_a_reused_workdir(cases_dir: Path, tmp_path: Path) -> None:
    apps = AppRepositories(cases_dir / "apps", tmp_path / "run" / "apps")
    before = apps.resolve("bookshop", case_ref(CASE, "history"))
    work = tmp_path / "work"
    (work / "LICENSE").write_text("MIT, again\n")
    git(work, "commit", "-q", "-am", "third\n\nOriginal-Commit: " + "c" * 40)
    git(work, "update-ref", case_ref(CASE, "history"), "HEAD")
    git(work, "bundle", "create", "-q", str(cases_dir / "apps" / "bookshop" / "history.bundle"), "--glob=refs/cases/*")
    after = AppRepositories(cases_dir / "apps", tmp_path / "run" / "apps").resolve("bookshop", case_ref(CASE, "history"))
    assert before and after and after != before and after == git(work, "rev-parse", "HEAD")


def test_git_missing_or_hanging_is_a_named_failure_not_a_crash(cases_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    with pytest.raises(AppError, match="cannot read .*history.bundle"):
        AppRepositories(cases_dir / "apps", tmp_path / "apps").repository("bookshop")
