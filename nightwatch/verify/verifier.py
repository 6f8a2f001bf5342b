"""Reproduce, fix, verify: a proposed fix is shown to work by its regression test, in the sandbox.

1. The regression test, added to the tree at the night's commit, must fail as production did: the same exception
   class, raised through the crash frame ("not reproduced" otherwise, with what happened instead).
2. With the fix applied, the same test must pass, and the existing tests of the modules the fix touches must not
   fail where they passed before; a test that already failed without the fix is not blamed on it
   ("reproduced, not fixed" otherwise).
Each analysis ends `verified`, `reproduced, not fixed`, `not reproduced` or `not run` with the reason.
The tree is the code host's tracked files (never its secret files), so a verification needs a local checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Callable

from nightwatch.fix import FixRejected, checked_path
from nightwatch.models import SETUP_LABEL, Analysis, FileChange, RegressionTest, Verification, VerificationRun
from nightwatch.redact import fence
from nightwatch.verify import sandbox
from nightwatch.verify.reproduce import CrashSite, reproduces, without_library_frames
from nightwatch.verify.testenv import (
    TestCommand,
    TestEnvironment,
    existing_environment,
    is_test_path,
    prepare_environment,
    setup_command,
    test_command,
)
from nightwatch.verify.tree import TreeError, make_tree, overlay_files, sweep_trees

MAX_FIXED_FILE_BYTES = 2_000_000  # a source file a fix edits; past this it is data, not code
MODEL_OUTPUT_CHARS = 4_000  # of a run's output, what the model reads (the end, where the runner reports)
_FAILED_PYTEST = re.compile(r"^(?:FAILED|ERROR) (?P<id>\S+?)(?: - .*)?$", re.M)
_FAILED_UNITTEST = re.compile(r"^(?:FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)", re.M)


@dataclass(frozen=True)
class TestSettings:
    """How the application's tests run: NIGHTWATCH_TEST_SETUP, _COMMAND and _ENV, the limits of one run, the secrets
    to redact from its output, and whether fixes are verified at all (NIGHTWATCH_VERIFY_FIXES)."""

    __test__ = False  # not a pytest class

    setup: str | None = None
    command: str | None = None
    env_path: Path | None = None
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    secrets: tuple[str, ...] = ()
    enabled: bool = True


class Verifier:
    """The night's verifier: one test environment (made once, reused by every verification and later nights)."""

    def __init__(self, root: Path | None, files: list[str] | Callable[[], list[str]], home: Path,
                 config: TestSettings = TestSettings()) -> None:
        """`files`: the checkout's tracked files, or how to list them (listed on first use: `nightwatch check` and a
        night's preflight never need them)."""
        self.root, self.home = root, home
        self._files = files
        self.setup, self.env_path, self.limits, self.secrets = config.setup, config.env_path, config.limits, list(config.secrets)
        self.command = test_command(root, config.command) if root else None
        self.enabled = config.enabled
        self._env: TestEnvironment | None = None
        self._lock = threading.Lock()
        self._tree: Path | None = None  # the night's copy of the checkout, made once, every run's base

    @cached_property
    def files(self) -> list[str]:
        return list(self._files()) if callable(self._files) else list(self._files)

    @property
    def unavailable(self) -> str | None:
        """Why nothing can be verified here, or None."""
        if not self.enabled:
            return "verification is off (NIGHTWATCH_VERIFY_FIXES=false)"
        if self.root is None:
            return "verification needs a local checkout of the application (NIGHTWATCH_CODE_PATH)"
        reason = sandbox.unavailable_reason()
        if reason:
            return reason
        if self.command is None:
            return "no test command: set NIGHTWATCH_TEST_COMMAND (none of pytest, manage.py test, unittest, rspec or rails test was detected)"
        if self.command.ruby and not _ruby_ready():
            return "no Ruby toolchain (ruby and bundle) is installed to run the application's Ruby tests"
        if not self.command.ruby and self.env_path is None and not self.setup:
            suggested = setup_command(self.root)
            return ("no test environment: set NIGHTWATCH_TEST_SETUP" + (f" (for this checkout, e.g. `{suggested}`)" if suggested
                    else "") + " or NIGHTWATCH_TEST_ENV")
        return None

    def environment(self, retry: bool = False) -> TestEnvironment:
        """The test environment, made once a night (`retry`: make it even where this set-up failed before)."""
        with self._lock:
            if self._env is None or (retry and not self._env.ready):
                if self.env_path is not None:
                    self._env = existing_environment(self.env_path, self.home)
                elif self.command is not None and self.command.ruby:
                    self._env = ruby_environment()
                else:
                    self._env = prepare_environment(self.root, self.files, self.home, self.setup,  # type: ignore[arg-type]
                                                    secrets=self.secrets, retry=retry)
            return self._env

    def describe(self) -> str:
        """One line for `nightwatch check`: the command, the environment, or why nothing runs."""
        reason = self.unavailable
        if reason:
            return f"not run: {reason}"
        command = self.command
        assert command is not None
        how = "detected" if command.detected else "NIGHTWATCH_TEST_COMMAND"
        where = (f"environment NIGHTWATCH_TEST_ENV={self.env_path}" if self.env_path else
                 f"environment made by `{self.setup}` (NIGHTWATCH_TEST_SETUP)" if self.setup else "the system's Ruby")
        return f"`{command.shown}` ({how}); {where}; sandbox: bubblewrap, {sandbox.grouping()}"

    def run_test(self, test: RegressionTest, crash: CrashSite | None = None) -> tuple[VerificationRun, str]:
        """The agent's run_test tool: the test file added to the tree at the night's commit, run once. Returns the run
        and what it shows, for the model."""
        run = self._run("regression test (run_test)", test, {})
        if crash is None or run.outcome.startswith("not run"):
            return run, run.outcome
        ok, why = reproduces(run.output, crash)
        return run, ("reproduces the production error: " if ok else "does not reproduce the production error: ") + why

    def an_existing_test(self) -> str | None:
        """One test file of the application's own suite (the first, by path; never a conftest)."""
        return next((f for f in sorted(self.files) if is_test_path(f) and not f.endswith("conftest.py")
                     and f.endswith((".py", "_spec.rb", "_test.rb"))), None)

    def run_existing(self, test: str) -> VerificationRun:
        """An existing test file of the application, run in the sandbox as a fix's tests are."""
        return self._run("an existing test", None, {}, [test])

    def verify(self, analysis: Analysis, crash: CrashSite) -> Verification:
        """Steps 1 and 2 above for the analysis's regression test and fix."""
        test = analysis.regression_test
        reason = self.unavailable
        if reason or test is None:
            return Verification(status="not run", reason=reason or "the analysis has no regression test",
                                test_path=test.path if test else "")
        base = Verification(status="not run", test_path=test.path,
                            test=test_target(test, self.command.kind if self.command else "pytest"))
        env = self.environment()
        if not env.ready:
            setup = VerificationRun(label=SETUP_LABEL, command=self.setup or "", outcome=f"not run: {env.detail}",
                                    seconds=env.setup_seconds, output=env.output)
            return base.model_copy(update={"reason": f"no test environment: {env.detail}", "runs": [setup] if env.output else []})
        try:
            fix = fix_overlay(analysis.file_changes, self.root) if analysis.file_changes else {}  # type: ignore[arg-type]
        except (ValueError, OSError, FixRejected) as exc:  # checked_path turns a host's refusal into FixRejected
            return base.model_copy(update={"reason": f"the fix does not apply: {str(exc)[:300]}"})
        before = self._run("regression test without the fix", test, {})
        if before.outcome.startswith("not run") or before.outcome in ("passed", "skipped"):
            reason = {"passed": "the test passes without the fix: it does not show the error",
                      "skipped": "the test was skipped"}.get(before.outcome, before.outcome.removeprefix("not run: "))
            return base.model_copy(update={"status": "not reproduced" if before.outcome == "passed" else "not run",
                                           "reason": reason, "runs": [before]})
        ok, why = reproduces(before.output, crash)
        if not ok or not fix:
            return base.model_copy(update={"status": "not reproduced" if not ok else "reproduced, not fixed", "runs": [before],
                                           "reason": why if not ok else f"{why}; the analysis proposes no fix"})
        return self._with_fix(base, test, fix, analysis, before, why)

    def _with_fix(self, base: Verification, test: RegressionTest, fix: dict[str, str], analysis: Analysis,
                  before: VerificationRun, why: str) -> Verification:
        """Step 2: the test with the fix must pass, and the touched modules' tests that passed must still pass. The
        existing tests run on their own, without the regression test: a test the model wrote shares no process with
        the tests that judge its fix (it could patch the runner to report them passed)."""
        after = self._run("regression test with the fix", test, fix)
        runs = [before, after]
        if after.outcome != "passed":
            return base.model_copy(update={"status": "reproduced, not fixed", "runs": runs,
                                           "reason": f"{why}; with the fix the test does not pass ({after.outcome})"})
        related = related_tests(self.files, [c.path for c in analysis.file_changes], self.root, exclude=test.path)  # type: ignore[arg-type]
        if related:
            existing = self._run("existing tests with the fix", None, fix, related)
            runs.append(existing)
            if existing.outcome != "passed":
                broken = failed_tests(existing.output)
                if not broken:
                    return base.model_copy(update={"status": "reproduced, not fixed", "runs": runs, "reason":
                                                   f"{why}; with the fix the existing tests do not pass ({existing.outcome})"})
                already = self._run("existing tests without the fix", None, {}, sorted(broken))
                runs.append(already)
                new = broken - failed_tests(already.output) if already.outcome != "passed" else broken
                if new:
                    return base.model_copy(update={"status": "reproduced, not fixed", "runs": runs,
                                                   "reason": f"{why}; the fix breaks {len(new)} existing test(s): "
                                                             + ", ".join(sorted(new)[:5])})
        kept = f" and {len(related)} existing test file(s) pass" if related else ""
        return base.model_copy(update={"status": "verified", "runs": runs,
                                       "reason": f"the test fails without the fix ({why}) and passes with it{kept}"})

    def _run(self, label: str, test: RegressionTest | None, fix: dict[str, str], extra: list[str] = ()) -> VerificationRun:  # type: ignore[assignment]
        command: TestCommand = self.command  # type: ignore[assignment]
        targets = ([test_target(test, command.kind)] if test else []) + list(extra)
        argv = command.for_tests(targets) if command.kind != "pytest" else [*command.for_tests(targets), "-rfE"]
        overlay = {**fix, **({test.path: test.content} if test else {})}
        env = self.environment()
        if not env.ready:  # its output is why: the set-up's failing lines
            return VerificationRun(label=label, command=shlex.join(argv), outcome=f"not run: {env.detail}", output=env.output)
        try:
            tree = self.night_tree()
            with overlay_files(tree, overlay, parent=self._scratch()) as files:
                run = sandbox.run(argv, sandbox.Layered(tree, files), mounts=env.mounts, env=env.variables,
                                  limits=self.limits, secrets=self.secrets)
        except TreeError as exc:
            return VerificationRun(label=label, command=shlex.join(argv), outcome=f"not run: {exc}")
        return VerificationRun(label=label, command=shlex.join(argv), outcome=run.outcome, seconds=run.seconds, output=run.output)

    def night_tree(self) -> Path:
        """The checkout's tracked files as a run may see them (no secret file, no link out), copied once a night: every
        run reads it and copies it into its own tmpfs, its test and fix laid over it (a monorepo's tree is copied and
        checked for secrets once, not once per run)."""
        with self._lock:
            if self._tree is None or not self._tree.is_dir():
                sweep_trees(self._scratch())
                self._tree = make_tree(self.root, self.files, parent=self._scratch(),  # type: ignore[arg-type]
                                       prefix=f"night-tree-{os.getpid()}-")
            return self._tree

    def close(self) -> None:
        """Remove the night's tree (a later run makes it again)."""
        with self._lock:
            if self._tree is not None:
                shutil.rmtree(self._tree, ignore_errors=True)
                self._tree = None

    def _scratch(self) -> Path:
        folder = self.home / "sandbox"
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def test_target(test: RegressionTest, kind: str = "pytest") -> str:
    """The test to run, as the runner of `kind` names it (nightwatch.verify.testenv.TestCommand).

    Python's runners: a name given without its file (`test_it`, `OrdersTest::test_it`, `OrdersTest.test_it`, as a
    model often writes it) is taken in the test's own file (`path::OrdersTest::test_it`, which the Django and unittest
    runners get as a dotted label); a node id whose file is named by its base name alone gets the test's path; a
    parameter id (`test_it[1.5-a.b]`) is kept as written. Ruby's runners take a name that names its file, else the
    whole file. A name that starts with `-` would be an option: the whole file runs."""
    name = test.test.strip()
    if not name or name.startswith("-"):
        return test.path
    if kind in ("rspec", "rails"):
        return name if "/" in name else test.path
    if kind not in ("pytest", "django", "unittest"):
        return name
    base, bracket, params = name.partition("[")
    params = bracket + params
    path = PurePosixPath(test.path)
    if "::" in base:
        head, _, rest = base.partition("::")
        if head.endswith(".py"):
            return f"{test.path if PurePosixPath(head).name == path.name else head}::{rest}{params}"
        return f"{test.path}::{base}{params}"
    if base.endswith(".py") or "/" in base:
        return name
    module = str(path.with_suffix("")).replace("/", ".")
    if base == module:
        return test.path
    parts = [p for p in base.removeprefix(module + ".").split(".") if p]
    return f"{test.path}::{'::'.join(parts)}{params}"


def for_model(run: VerificationRun, verdict: str) -> str:
    """What the model reads of a run: the verdict, the command and the end of the (already redacted) output."""
    text = without_library_frames(run.output)
    output = text if len(text) <= MODEL_OUTPUT_CHARS else "[...]\n" + text[-MODEL_OUTPUT_CHARS:]
    return f"{verdict}\n$ {run.command}  ({run.outcome}, {run.seconds:g} s)\n" + fence("test run output", output)


def fix_overlay(changes: list[FileChange], root: Path) -> dict[str, str]:
    """The files a fix changes, as they read with it (every `before` must occur exactly once). A path is judged as a
    pull request would judge it (nightwatch.fix.checked_path) before anything is read: a file of the checkout, never
    one outside it, a device or a folder."""
    out: dict[str, str] = {}
    for change in changes:
        path = checked_path(change.path)
        if change.action == "create":
            out[path] = change.after or ""
            continue
        if change.action == "delete":
            raise ValueError(f"{path}: a fix that deletes a file is not verified")
        text = out[path] if path in out else _checkout_text(root, path)
        if change.before is None or text.count(change.before) != 1:
            raise ValueError(f"{path}: the excerpt to replace occurs {text.count(change.before or '')} times")
        out[path] = text.replace(change.before, change.after or "", 1)
    return out


def _checkout_text(root: Path, path: str) -> str:
    real = (root / path).resolve()
    if not real.is_relative_to(root.resolve()) or not real.is_file():
        raise ValueError(f"{path}: not a file of the repository")
    if real.stat().st_size > MAX_FIXED_FILE_BYTES:
        raise ValueError(f"{path}: {real.stat().st_size:,} bytes, larger than a file a fix is verified on")
    return real.read_text(encoding="utf-8")


def related_tests(files: list[str], touched: list[str], root: Path, exclude: str = "", limit: int = 8) -> list[str]:
    """Existing test files of the touched modules: those that import them, or that live beside a conftest that does."""
    names = [_module(p) for p in touched if p.endswith(".py") and not is_test_path(p)]
    if not names:
        return []
    patterns = [re.compile(rf"\b{re.escape(m)}\b|from\s+{re.escape(m.rpartition('.')[0])}\s+import\s+[^\n]*\b"
                           rf"{re.escape(m.rpartition('.')[2])}\b") for m in names if m]
    hits: list[str] = []
    conftest_dirs = set()
    for rel in sorted(files):
        if not rel.endswith(".py") or not is_test_path(rel) or rel == exclude:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(p.search(text) for p in patterns):
            if rel.endswith("conftest.py"):
                conftest_dirs.add(str(PurePosixPath(rel).parent))
            else:
                hits.append(rel)
    for rel in sorted(files):
        if (rel.endswith(".py") and is_test_path(rel) and not rel.endswith("conftest.py") and rel != exclude
                and str(PurePosixPath(rel).parent) in conftest_dirs and rel not in hits):
            hits.append(rel)
    return hits[:limit]


def failed_tests(output: str) -> set[str]:
    """The tests a run reports failed: pytest's `FAILED id` summary lines, unittest's and Django's `FAIL: name (where)`."""
    found = {m.group("id") for m in _FAILED_PYTEST.finditer(output)}
    found |= {f"{m.group('where')}.{m.group('name')}" for m in _FAILED_UNITTEST.finditer(output)}
    return found


def _module(path: str) -> str:
    return str(PurePosixPath(path).with_suffix("")).replace("/", ".").removesuffix(".__init__")



def ruby_environment() -> TestEnvironment:
    """The installed Ruby's gems, mounted read-only where `gem env gempath` says they are (the tree's own
    vendor/bundle comes with the tree)."""
    import subprocess

    try:
        out = subprocess.run(["gem", "env", "gempath"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return TestEnvironment(False, f"gem env gempath failed ({exc})")
    paths = [Path(p) for p in out.split(":") if p and Path(p).is_dir()]
    variables = {"GEM_PATH": ":".join(str(p) for p in paths)} if paths else {}
    return TestEnvironment(True, f"the installed Ruby with gems from {variables.get('GEM_PATH') or 'the system'}",
                           mounts=paths, variables=variables)


def _ruby_ready() -> bool:
    import shutil
    return bool(shutil.which("ruby") and shutil.which("bundle"))
