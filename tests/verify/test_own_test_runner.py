"""A night's run_test on a real application's own tests: CTFd at the commit before the real fix of the eval case
ctfd-duplicate-solution, with its test environment as a team's CI image has one (NIGHTWATCH_TEST_ENV:
.tools/testenvs/ctfd, which `make testenvs` installs from a hashed lock of CTFd's requirements at that commit).

The API stand-in calls run_test with the test the real fix added (its own file, as the fix commit has it, and the
test's name); the investigation runs it through the same tool the night offers, in the sandbox, on CTFd's own runner
(pytest over CTFd's tests/ and its conftest). At the parent the test fails with the production error, and that is what
the model is told and the analysis records; the analysis then proposes the real fix, and step 8.5 verifies it: the
test fails without the fix and passes with it. Nothing here reaches the network: the environment was made before.
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.definitions import list_definitions
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.eval_apps import AppRepositories, case_ref
from nightwatch.investigate import AgentKit, Investigation, investigate_error
from nightwatch.models import Analysis, ErrorAnalysisResult, FileChange, RegressionTest, Window
from nightwatch.research import ResearchContext
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.trace_paths import PathMap, locate_frames
from nightwatch.verify import sandbox, step
from nightwatch.verify.verifier import TestSettings, Verifier
from tests.fakes.anthropic import FakeAnthropic

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # CTFd's tests in the sandbox: real processes

ROOT = Path(__file__).resolve().parents[2]
CASE = "ctfd-duplicate-solution"
ENV = ROOT / ".tools" / "testenvs" / "ctfd"
LOCK = ROOT / "tests" / "testenvs" / "ctfd" / "requirements.txt"
TEST_FILE = "tests/api/v1/test_solutions.py"
TEST_NAME = "test_api_solutions_post_admin_duplicate_challenge_solution"
FIXED = "CTFd/api/v1/solutions.py"
needs_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None,
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")


def require_env() -> Path:
    stamp = ENV / ".installed"
    if not stamp.is_file() or stamp.stat().st_mtime < LOCK.stat().st_mtime:
        pytest.fail(f"CTFd's test environment is not installed from {LOCK.relative_to(ROOT)} in {ENV.relative_to(ROOT)}: "
                    "run `make testenvs` (`make test` runs it)", pytrace=False)
    return ENV


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.fixture(scope="module")
def ctfd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A checkout of CTFd at the fix's parent (the trees `nightwatch eval --fix-tests` runs), and the fix's bare repo."""
    work = tmp_path_factory.mktemp("ctfd")
    bare = AppRepositories(ROOT / "evals" / "apps", work / "apps").repository("ctfd")
    repo = work / "CTFd"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "fetch", "-q", "--no-tags", str(bare), f"{case_ref(CASE, 'parent')}:refs/heads/main", "--update-head-ok")
    _git(repo, "reset", "-q", "--hard", "main")
    return repo, str(bare)


def _fix_side(bare: str, path: str) -> str:
    return subprocess.run(["git", "-C", bare, "show", f"{case_ref(CASE, 'fix')}:{path}"], capture_output=True, text=True,
                          check=True, timeout=60).stdout


@needs_sandbox
def test_run_test_reaches_ctfds_own_runner_and_the_outcome_is_what_the_model_and_the_analysis_are_told(
        ctfd: tuple[Path, str], tmp_path: Path) -> None:
    env = require_env()
    repo, bare = ctfd
    files = _git(repo, "ls-files").split()
    export = ExportFileSource(ROOT / "evals" / CASE / "export.json")
    window = Window(start=export.exported_at - timedelta(days=7), end=export.exported_at + timedelta(hours=1))
    error = next(e for e in export.fetch_errors(window).errors if e.error_class == "sqlalchemy.exc:IntegrityError")
    traces = locate_frames(export.fetch_traces(error, window), PathMap(files))
    verifier = Verifier(repo, files, tmp_path / "home", TestSettings(command="python -m pytest", env_path=env))
    tester = step.tester_for(verifier, error, traces)
    assert tester is not None, verifier.unavailable

    test = {"path": "tests/api/v1/test_nightwatch_repro.py", "content": _fix_side(bare, TEST_FILE), "test": TEST_NAME}
    before, after = _git(repo, "show", f"HEAD:{FIXED}"), _fix_side(bare, FIXED)
    analysis = {"title": "A second solution for a challenge violates the unique constraint", "reasoning": "r",
                "root_cause": "POST /api/v1/solutions commits a second Solutions row for a challenge that has one",
                "has_fix": True, "confidence": "high", "regression_test": test,
                "file_changes": [{"path": FIXED, "before": before, "after": after, "description": "the real fix"}]}
    with FakeAnthropic() as fake:
        fake.script([{"type": "tool_use", "id": "toolu_1", "name": "run_test", "input": test}],
                    [{"type": "tool_use", "id": "toolu_2", "name": "submit_analysis", "input": analysis}])
        definition = next(d for d in list_definitions() if d.name == "base-analyzer")
        result = investigate_error(
            Investigation("r1", error, traces, ResearchContext(fingerprint=error.fingerprint)),
            AgentKit(definition=definition, model="claude-sonnet-4-6", client=AnthropicModelClient(fake.api_key, base_url=fake.url),
                     cache=CodeCache(LocalRepoHost(repo)), events=EventLog(), max_iterations=6, token_budget=400_000,
                     tester=tester, test_limit=2))
        told = next(block for m in fake.message_bodies()[1]["messages"] if m["role"] == "user"
                    for block in (m["content"] if isinstance(m["content"], list) else []) if block.get("type") == "tool_result")
    shown = told["content"] if isinstance(told["content"], str) else "".join(b.get("text", "") for b in told["content"])
    assert shown.startswith("reproduces the production error"), shown[:2000]
    command = shown.splitlines()[1]
    assert command.startswith("$ python -m pytest ") and f"tests/api/v1/test_nightwatch_repro.py::{TEST_NAME}" in command
    assert "(failed" in command, shown[:3000]
    assert "IntegrityError" in shown and "1 failed" in shown  # CTFd's own runner ran it, and it failed as production did
    call = next(c for c in result.tool_calls if c.name == "run_test")
    assert call.ok and result.failure is None and result.analysis is not None

    crash = step.crash_of(ErrorAnalysisResult(run_id="r1", error=error), traces)
    verdict = verifier.verify(Analysis.model_validate(analysis | {"regression_test": RegressionTest(**test),
                                                                   "file_changes": [FileChange(**analysis["file_changes"][0])]}),
                              crash)
    assert verdict.status == "verified", verdict.model_dump_json(indent=1)[:3000]
    assert [r.outcome.split(" ")[0] for r in verdict.runs][:2] == ["failed", "passed"]
