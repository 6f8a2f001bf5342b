"""The verification harness checked on real code, with no model: a real bug-fix commit's own regression test,
run through the sandbox at the fix's parent (with the test files as the fix left them) and at the fix.

A harness that works fails the test at the parent with the production error class and passes it at the fix.
This is what NightWatch asks of a fix it proposes, measured on fixes whose authors we did not write.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from nightwatch.verify import sandbox
from nightwatch.verify.reproduce import CrashSite, reproduces, same_class, tracebacks
from nightwatch.verify.testenv import (
    TestCommand,
    TestEnvironment,
    existing_environment,
    is_test_path,
    prepare_environment,
    setup_command,
    test_command,
)
from nightwatch.verify.tree import TreeError, commit_tree


@dataclass
class CommitTestRun:
    commit: str
    outcome: str
    seconds: float
    output: str


@dataclass
class CommitTestResult:
    """`verdict`: holds (fails at the parent with the production class, passes at the fix), or what did not."""

    test: str
    verdict: str
    detail: str
    environment: str = ""
    runs: list[CommitTestRun] = field(default_factory=list)
    setup_seconds: float = 0.0  # making the test environment(s); 0 when reused
    setup_output: str = ""  # the set-up's output, when it failed

    @property
    def holds(self) -> bool:
        return self.verdict == "holds"


def changed_test_files(repo: Path, parent: str, fix: str) -> list[str]:
    """The test suite's files (nightwatch.verify.testenv.is_test_path) the fix commit added or changed."""
    out = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", "--diff-filter=AM", parent, fix],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [p for p in out.splitlines() if is_test_path(p)]


@dataclass(frozen=True)
class FixCommit:
    """A real bug fix: its repository, its parent and itself, the regression test it added (as the runner names it),
    the class the bug raised in production and, when known, the crash frame's file."""

    repo: Path
    parent: str
    fix: str
    test: str
    error_class: str
    crash_file: str | None = None


@dataclass(frozen=True)
class HarnessSettings:
    """Where test environments are made (`home`) and how: the set-up and test command (detected where None), or an
    environment made elsewhere; the limits of one run."""

    home: Path
    setup: str | None = None
    command: str | None = None
    env_path: Path | None = None
    limits: sandbox.Limits = field(default_factory=lambda: sandbox.Limits(wall_s=300.0, cpu_s=300))


def check_fix_commit(commit: FixCommit, settings: HarnessSettings) -> CommitTestResult:
    """Run the commit's test at its parent with the fix's test files laid over it, then at the fix.

    Each side runs in the environment its own requirement files make (the same one, reused, unless the fix changed
    them). A commit git does not know, or a set-up that fails, is a verdict ("not run"), never an exception."""
    try:
        sides = _both_sides(commit, settings)
    except (TreeError, subprocess.SubprocessError) as exc:
        why = getattr(exc, "stderr", None) or str(exc)
        return CommitTestResult(commit.test, "not run", f"the commits could not be read: {str(why).strip()[:300]}")
    if isinstance(sides, CommitTestResult):
        return sides
    (before, env), (after, env_fix) = sides
    made = sum(e.setup_seconds for e in (env, env_fix) if not e.reused)
    environment = env.detail if env_fix.mounts[:1] == env.mounts[:1] else f"{env.detail}; at the fix: {env_fix.detail}"
    verdict, detail = _verdict(commit, before, after)
    return CommitTestResult(commit.test, verdict, detail, environment=environment, runs=[before, after], setup_seconds=made)


def _both_sides(commit: FixCommit, settings: HarnessSettings) -> list[tuple[CommitTestRun, TestEnvironment]] | CommitTestResult:
    """(run, environment) at the parent and at the fix, or a "not run" result."""
    overlay = {path: _show(commit.repo, commit.fix, path) for path in changed_test_files(commit.repo, commit.parent, commit.fix)}
    runner: TestCommand | None = None
    sides: list[tuple[CommitTestRun, TestEnvironment]] = []
    for sha, laid in ((commit.parent, overlay), (commit.fix, {})):
        with commit_tree(commit.repo, sha, laid) as tree:
            runner = runner or test_command(tree, settings.command)
            if runner is None:
                return CommitTestResult(commit.test, "not run", "no test command: set NIGHTWATCH_TEST_COMMAND")
            env = _environment(tree, settings.home, settings.setup, settings.env_path)
            if not env.ready:
                where = "" if sha == commit.parent else "at the fix: "
                return CommitTestResult(commit.test, "not run", where + env.detail, environment=env.detail,
                                        runs=[s[0] for s in sides], setup_seconds=env.setup_seconds, setup_output=env.output)
            sides.append((_run(runner, env, tree, commit.test, settings.limits, sha), env))
    return sides


def _verdict(commit: FixCommit, before: CommitTestRun, after: CommitTestRun) -> tuple[str, str]:
    raised = [e.error_class for e in tracebacks(before.output)]
    if before.outcome.startswith("not run") or before.outcome == "skipped":
        return "not run", "the test was skipped at the parent" if before.outcome == "skipped" else before.outcome
    if before.outcome == "passed":
        return "passes at the parent", "the test does not fail before the fix"
    if not any(same_class(commit.error_class, r) for r in raised):
        return ("fails differently at the parent", f"raised {', '.join(dict.fromkeys(raised)) or 'no exception'} "
                f"(test output: {before.outcome}), not {commit.error_class}")
    if after.outcome != "passed":
        return "fails at the fix", after.outcome
    through = ""
    if commit.crash_file:
        ok, _why = reproduces(before.output, CrashSite(commit.error_class, commit.crash_file))
        through = f", through {commit.crash_file}" if ok else f" (not through {commit.crash_file})"
    return "holds", f"fails at the parent with {commit.error_class}{through}; passes at the fix"


def _environment(tree: Path, home: Path, setup: str | None, env_path: Path | None) -> TestEnvironment:
    """The environment the tree's requirement files make with `setup` (or the detected set-up), made once under
    `home` and reused; or the one at `env_path`."""
    if env_path is not None:
        return existing_environment(env_path, home)
    files = [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink()]
    return prepare_environment(tree, files, home, setup_command(tree, setup))


def _run(runner: TestCommand, env: TestEnvironment, tree: Path, test: str, limits: sandbox.Limits,
         commit: str) -> CommitTestRun:
    run = sandbox.run(runner.for_tests([test]), tree, mounts=env.mounts, env=env.variables, limits=limits)
    return CommitTestRun(commit=commit, outcome=run.outcome, seconds=run.seconds, output=run.output)


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True,
                          timeout=60, check=True, errors="replace").stdout

