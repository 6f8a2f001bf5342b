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
    """The files under test folders (or named test_*.py / *_test.py) the fix commit added or changed."""
    out = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", "--diff-filter=AM", parent, fix],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [p for p in out.splitlines() if _is_test_path(p)]


def check_fix_commit(repo: Path, parent: str, fix: str, test: str, error_class: str, home: Path, *,
                     setup: str | None = None, command: str | None = None, env_path: Path | None = None,
                     crash_file: str | None = None, limits: sandbox.Limits = sandbox.Limits(wall_s=300.0, cpu_s=300),
                     ) -> CommitTestResult:
    """Run `test` (as the runner names it) at `parent` with the fix's test files laid over it, then at `fix`.

    Each side runs in the environment its own requirement files make (the same one, reused, unless the fix changed
    them). A commit git does not know, or a set-up that fails, is a verdict ("not run"), never an exception."""
    try:
        overlay = {path: _show(repo, fix, path) for path in changed_test_files(repo, parent, fix)}
        with commit_tree(repo, parent, overlay) as tree:
            runner = test_command(tree, command)
            if runner is None:
                return CommitTestResult(test, "not run", "no test command: set NIGHTWATCH_TEST_COMMAND")
            env = _environment(tree, home, setup, env_path)
            if not env.ready:
                return CommitTestResult(test, "not run", env.detail, environment=env.detail,
                                        setup_seconds=env.setup_seconds, setup_output=env.output)
            before = _run(runner, env, tree, test, limits, parent)
        with commit_tree(repo, fix) as tree:
            env_fix = _environment(tree, home, setup, env_path)
            if not env_fix.ready:
                return CommitTestResult(test, "not run", f"at the fix: {env_fix.detail}", environment=env_fix.detail,
                                        runs=[before], setup_seconds=env.setup_seconds + env_fix.setup_seconds,
                                        setup_output=env_fix.output)
            after = _run(runner, env_fix, tree, test, limits, fix)
    except (TreeError, subprocess.SubprocessError) as exc:
        why = getattr(exc, "stderr", None) or str(exc)
        return CommitTestResult(test, "not run", f"the commits could not be read: {str(why).strip()[:300]}")
    made = sum(e.setup_seconds for e in (env, env_fix) if not e.reused)
    environment = env.detail if env_fix.mounts[:1] == env.mounts[:1] else f"{env.detail}; at the fix: {env_fix.detail}"
    result = CommitTestResult(test, "", "", environment=environment, runs=[before, after], setup_seconds=made)
    raised = [e.error_class for e in tracebacks(before.output)]
    if before.outcome.startswith("not run"):
        result.verdict, result.detail = "not run", before.outcome
    elif before.outcome == "passed":
        result.verdict, result.detail = "passes at the parent", "the test does not fail before the fix"
    elif not any(same_class(error_class, r) for r in raised):
        result.verdict = "fails differently at the parent"
        result.detail = f"raised {', '.join(dict.fromkeys(raised)) or 'no exception'} (test output: {before.outcome}), " \
                        f"not {error_class}"
    elif after.outcome != "passed":
        result.verdict, result.detail = "fails at the fix", after.outcome
    else:
        through = ""
        if crash_file:
            ok, _why = reproduces(before.output, CrashSite(error_class, crash_file))
            through = f", through {crash_file}" if ok else f" (not through {crash_file})"
        result.verdict = "holds"
        result.detail = f"fails at the parent with {error_class}{through}; passes at the fix"
    return result


def _environment(tree: Path, home: Path, setup: str | None, env_path: Path | None) -> TestEnvironment:
    """The environment the tree's requirement files make with `setup` (or the detected set-up), made once under
    `home` and reused; or the one at `env_path`."""
    if env_path is not None:
        return existing_environment(env_path)
    files = [str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink()]
    return prepare_environment(tree, files, home, setup_command(tree, setup))


def _run(runner: TestCommand, env: TestEnvironment, tree: Path, test: str, limits: sandbox.Limits,
         commit: str) -> CommitTestRun:
    run = sandbox.run(runner.for_tests([test]), tree, mounts=env.mounts, env=env.variables, limits=limits)
    return CommitTestRun(commit=commit, outcome=run.outcome, seconds=run.seconds, output=run.output)


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True,
                          timeout=60, check=True, errors="replace").stdout


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (any(p in {"tests", "test", "spec"} for p in parts[:-1]) or name.startswith("test_")
            or name.endswith(("_test.py", "_spec.rb", "_test.rb")))
