"""The applications the eval's real cases come from, kept as data: `<cases-dir>/apps/<app>/` holds one git bundle
(`history.bundle`), the application's LICENSE and `app.yml` (how its tests run, what its trees leave out, its
harness-only fix commits). No application source is kept as files beside the cases.

The bundle's refs, all under `refs/cases/<id>/`:

- `history`: a case's slice (scripts/history_slices.py): every commit of the real history that touched the files
  the case's night needs, up to the case's commit, each naming the real one in an `Original-Commit:` trailer. Its tip's
  tree is what the night reads.
- `parent` and `fix`: a real fix commit's trees (scripts/fix_trees.py), for `nightwatch eval --fix-tests`.

An eval run reads each application's bundle once, into a bare repository under its workdir, and checks each case out
of that (a case's own commit: its `history` ref). Every commit the night reads is one of these, so a rerun reads the
same code.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from nightwatch import safe_yaml
from nightwatch.models import Model

APPS = "apps"  # <cases-dir>/apps/<app>/
BUNDLE = "history.bundle"
APP_YML = "app.yml"
TRAILER = "Original-Commit: "
GIT_TIMEOUT = 300


class AppError(Exception):
    """An application's bundle or yml cannot be read; the message names the file and the problem."""


class FixCommitEntry(Model):
    """A real bug fix in `app.yml`'s `fix_commits:`, checked like an eval case's fix but with no night (it has no
    captured error export): its parent and itself, the regression test it added (as the runner names it), the class
    the bug raised in production (`module:Name`, as New Relic's Python agent names it) and where that comes from."""

    id: str
    parent: str
    fix: str
    test: str
    error_class: str
    crash_file: str | None = None
    evidence: str = ""  # one line: the commit subject, the issue or the test that names the class
    note: str = ""  # why its check does not hold, where it does not


class AppTrees(Model):
    """`<cases-dir>/apps/<app>/app.yml`: how an application's fix-commit tests run, and what its trees leave out."""

    repository: str = ""
    setup: str | None = None  # the test environment's set-up; default: what the tree's requirement files imply
    command: str | None = None  # the test command; default: detected (pytest, manage.py test, unittest)
    exclude: list[str] = Field(default_factory=list)  # fnmatch globs over whole paths (`*` crosses folders)
    keep: list[str] = Field(default_factory=list)  # globs that win over `exclude`
    why: str = ""  # why the excluded paths are not needed, and what the set-up needs from the machine
    cases: dict[str, str] = Field(default_factory=dict)  # a case id -> what its check shows, where it does not hold
    fix_commits: list[FixCommitEntry] = Field(default_factory=list)  # real fixes only the harness is checked on


def app_of(repository: str) -> str:
    """The application a repository URL names, as its folder under apps/ is named: the repository's name, lower case."""
    return repository.rstrip("/").rsplit("/", 1)[-1].lower()


def app_names(apps_dir: Path) -> list[str]:
    return sorted(p.name for p in Path(apps_dir).iterdir() if p.is_dir()) if Path(apps_dir).is_dir() else []


def bundle_of(apps_dir: Path, app: str) -> Path:
    return Path(apps_dir) / app / BUNDLE


def case_ref(case_id: str, side: str) -> str:
    """A case's ref in its application's bundle: `history` (its slice), `parent` or `fix` (a fix commit's trees)."""
    return f"refs/cases/{case_id}/{side}"


def load_app_trees(apps_dir: Path, app: str) -> AppTrees:
    path = Path(apps_dir) / app / APP_YML
    if not path.is_file():
        return AppTrees()
    try:
        return AppTrees.model_validate(safe_yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise AppError(f"{path}: {exc}") from exc


def excluded(path: str, trees: AppTrees) -> bool:
    """Whether the app's trees leave `path` out."""
    from fnmatch import fnmatchcase

    return any(fnmatchcase(path, p) for p in trees.exclude) and not any(fnmatchcase(path, k) for k in trees.keep)


class AppRepositories:
    """Each application's bundle read once into a bare repository under `cache` (shared by the processes of one eval
    run: the first to need an application reads it, under a lock, and the others reuse it)."""

    def __init__(self, apps_dir: Path, cache: Path) -> None:
        self.apps_dir = Path(apps_dir)
        self.cache = Path(cache)
        self._read: dict[str, Path] = {}  # app -> its repository, once this reader has found or made it

    def repository(self, app: str) -> Path:
        """The bare repository holding `app`'s bundle's refs; AppError when the bundle is missing or unreadable."""
        if app not in self._read:
            self._read[app] = self._repository(app)
        return self._read[app]

    def _repository(self, app: str) -> Path:
        bundle = bundle_of(self.apps_dir, app)
        if not bundle.is_file():
            raise AppError(f"no {bundle} (scripts/history_slices.py and scripts/fix_trees.py write it from a clone of "
                           "the application)")
        dest = self.cache / f"{app}-{_digest(bundle)}.git"  # a bundle written again is read again, even in a reused workdir
        if dest.is_dir():
            return dest
        self.cache.mkdir(parents=True, exist_ok=True)
        with _locked(self.cache / f".{app}.lock"):
            if dest.is_dir():  # another process read it while this one waited
                return dest
            partial = Path(tempfile.mkdtemp(prefix=f".{app}.", dir=self.cache))
            try:
                for args in (["init", "-q", "--bare", str(partial)],
                             ["-C", str(partial), "fetch", "-q", "--no-tags", str(bundle.resolve()), "refs/cases/*:refs/cases/*"]):
                    _git(args, f"cannot read {bundle}")
                partial.rename(dest)
            finally:
                shutil.rmtree(partial, ignore_errors=True)
        return dest

    def resolve(self, app: str, ref: str) -> str:
        """The commit `ref` names in `app`'s bundle, or "" where it has none."""
        try:
            proc = subprocess.run(["git", "-C", str(self.repository(app)), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"],
                                  capture_output=True, text=True, check=False, timeout=60)
        except (subprocess.SubprocessError, OSError) as exc:
            raise AppError(f"cannot read {app}'s repository: {exc}") from exc
        return proc.stdout.strip() if proc.returncode == 0 else ""

    def check_out(self, app: str, case_id: str, dest: Path) -> Path:
        """A checkout of the case's slice at `dest`, on branch `main` with the slice's whole history: what the night
        reads, blames and ranks suspects in."""
        ref = case_ref(case_id, "history")
        repo = self.repository(app)
        if not self.resolve(app, ref):
            raise AppError(f"{bundle_of(self.apps_dir, app)} has no {ref} (scripts/history_slices.py writes it)")
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for args in (["init", "-q", "-b", "main"],
                     ["fetch", "-q", "--no-tags", "--update-head-ok", str(repo.resolve()), f"{ref}:refs/heads/main"],
                     ["reset", "-q", "--hard", "main"]):
            _git(["-C", str(dest), *args], f"cannot check {case_id} out of {repo}")
        return dest


def _git(args: list[str], failing: str) -> None:
    """Run git; a failure, a hang past GIT_TIMEOUT or no git at all is an AppError saying what could not be done."""
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, check=False, timeout=GIT_TIMEOUT)
    except (subprocess.SubprocessError, OSError) as exc:
        raise AppError(f"{failing}: {exc}") from exc
    if proc.returncode != 0:
        raise AppError(f"{failing}: {proc.stderr.strip()[:300]}")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
