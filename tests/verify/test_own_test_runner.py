"""A night's run_test on real applications' own tests: CTFd (Flask, pytest) and Healthchecks (Django, its own
`manage.py test` runner), each at the commit before the real fix of an eval case, with its test environment as a
team's CI image has one (NIGHTWATCH_TEST_ENV: .tools/testenvs/<app>, which `make testenvs` installs from a hashed lock
of the application's requirements at that commit; Healthchecks' psycopg2 and pycurl built with the system packages
.ci/run installs, as its own CI does).

The API stand-in calls run_test with the test the real fix added (its own file, as the fix commit has it, and the
test's name as a model writes it, without its file); the investigation runs it through the same tool the night
offers, in the sandbox, on the application's own runner. At the parent the test fails with the production error, and
that is what the model is told and the analysis records; the analysis then proposes the real fix, and step 8.5
verifies it: the test fails without the fix and passes with it. Nothing here reaches the network.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
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
from nightwatch.offline.model import OfflineAnalyst
from nightwatch.research import ResearchContext
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.trace_paths import PathMap, locate_frames
from nightwatch.verify import sandbox, step
from nightwatch.verify.verifier import TestSettings, Verifier
from tests.fakes.anthropic import FakeAnthropic

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # CTFd's tests in the sandbox: real processes

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class App:
    name: str
    case: str
    command: str  # the application's runner, as app.yml names it (Healthchecks': detected)
    test_file: str  # the file the real fix added its test to
    test: str  # the test, named as a model often names it: without its file
    new_file: str  # where the stand-in writes it
    fixed: str  # the file the real fix changed
    error_class: str
    ran: str  # what the runner prints when the test failed

    @property
    def env(self) -> Path:
        return ROOT / ".tools" / "testenvs" / self.name


APPS = [
    App("ctfd", "ctfd-duplicate-solution", "python -m pytest", "tests/api/v1/test_solutions.py",
        "test_api_solutions_post_admin_duplicate_challenge_solution", "tests/api/v1/test_nightwatch_repro.py",
        "CTFd/api/v1/solutions.py", "sqlalchemy.exc:IntegrityError", "1 failed"),
    App("healthchecks", "healthchecks-group-test-notification", "", "hc/front/tests/test_send_test_notification.py",
        "SendTestNotificationTestCase::test_it_handles_group_channel", "hc/front/tests/test_nightwatch_repro.py",
        "hc/api/transports.py", "builtins:ValueError", "FAILED (errors=1)"),
]
needs_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None,
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")


def require_env(app: App) -> Path:
    stamp, lock = app.env / ".installed", ROOT / "tests" / "testenvs" / app.name / "requirements.txt"
    if not stamp.is_file() or stamp.stat().st_mtime < lock.stat().st_mtime:
        pytest.fail(f"{app.name}'s test environment is not installed from {lock.relative_to(ROOT)} in "
                    f"{app.env.relative_to(ROOT)}: run `make testenvs` (`make test` runs it)", pytrace=False)
    return app.env


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=120).stdout


def checkout(app: App, work: Path) -> tuple[Path, str]:
    """A checkout of the application at the fix's parent (the trees `nightwatch eval --fix-tests` runs), and the bare
    repository its bundle was read into."""
    bare = AppRepositories(ROOT / "evals" / "apps", work / "apps").repository(app.name)
    repo = work / app.name
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "fetch", "-q", "--no-tags", str(bare), f"{case_ref(app.case, 'parent')}:refs/heads/main", "--update-head-ok")
    _git(repo, "reset", "-q", "--hard", "main")
    return repo, str(bare)


def _fix_side(app: App, bare: str, path: str) -> str:
    return subprocess.run(["git", "-C", bare, "show", f"{case_ref(app.case, 'fix')}:{path}"], capture_output=True,
                          text=True, check=True, timeout=60).stdout


@needs_sandbox
@pytest.mark.parametrize("app", APPS, ids=lambda a: a.name)
def test_run_test_reaches_the_applications_own_runner_and_its_outcome_is_what_the_model_is_told(app: App, tmp_path: Path) -> None:
    env = require_env(app)
    repo, bare = checkout(app, tmp_path)
    files = _git(repo, "ls-files").split()
    export = ExportFileSource(ROOT / "evals" / app.case / "export.json")
    window = Window(start=export.exported_at - timedelta(days=7), end=export.exported_at + timedelta(hours=1))
    error = next(e for e in export.fetch_errors(window).errors if e.error_class == app.error_class)
    traces = locate_frames(export.fetch_traces(error, window), PathMap(files))
    verifier = Verifier(repo, files, tmp_path / "home", TestSettings(command=app.command or None, env_path=env))
    tester = step.tester_for(verifier, error, traces)
    assert tester is not None, verifier.unavailable

    test = {"path": app.new_file, "content": _fix_side(app, bare, app.test_file), "test": app.test}
    before, after = _git(repo, "show", f"HEAD:{app.fixed}"), _fix_side(app, bare, app.fixed)
    analysis = {"title": f"{error.error_class} in {error.transaction}", "reasoning": "r", "root_cause": "the real fix's",
                "has_fix": True, "confidence": "high", "regression_test": test,
                "file_changes": [{"path": app.fixed, "before": before, "after": after, "description": "the real fix"}]}
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
    runner = app.command or "python manage.py test"
    assert command.startswith(f"$ {runner} ") and "(failed" in command, shown[:3000]
    assert app.new_file.removesuffix(".py").replace("/", ".") in command or app.new_file in command, command
    assert app.error_class.split(":")[-1].split(".")[-1] in shown and app.ran in shown  # its own runner ran it, and
    # it failed as production did
    call = next(c for c in result.tool_calls if c.name == "run_test")
    assert call.ok and result.failure is None and result.analysis is not None

    crash = step.crash_of(ErrorAnalysisResult(run_id="r1", error=error), traces)
    verdict = verifier.verify(Analysis.model_validate(analysis | {"regression_test": RegressionTest(**test),
                                                                   "file_changes": [FileChange(**analysis["file_changes"][0])]}),
                              crash)
    assert verdict.status == "verified", verdict.model_dump_json(indent=1)[:3000]
    assert [r.outcome.split(" ")[0] for r in verdict.runs][:2] == ["failed", "passed"]


def _text(block: dict) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


class RunsTheFixTest:
    """A model that, where an investigation offers run_test, first runs the test the real fix added, then answers as
    the offline analyst does, with that test as its analysis's regression test (as run_test's description asks) and,
    having reproduced the error, at least medium confidence."""

    def __init__(self, test: dict[str, str]) -> None:
        self.test, self.ran, self.analyst = test, False, OfflineAnalyst()
        self.scripted: list = []
        self.seen: list[dict] = []

    def respond(self, request: dict) -> list[dict]:
        self.seen.append(request)
        if "run_test" in {t["name"] for t in request.get("tools", [])} and not self.ran:
            self.ran = True
            return [{"type": "tool_use", "id": "toolu_fix_test", "name": "run_test", "input": self.test}]
        content = self.analyst.respond(request)
        for block in content:
            if block.get("type") == "tool_use" and block.get("name") == "submit_analysis":
                confidence = "medium" if block["input"].get("confidence") == "low" else block["input"].get("confidence")
                block["input"] = {**block["input"], "regression_test": self.test, "confidence": confidence}
        return content

    def summarise(self, request: dict, instructions: str | None) -> str:
        return self.analyst.summarise(request, instructions)


@needs_sandbox
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_a_whole_night_on_ctfd_reports_what_its_own_runner_said(nightwatch_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """The case's night (its New Relic export) on CTFd's checkout, through the API stand-in: the investigation's
    run_test reaches CTFd's pytest, and the night's report, the analysis's tool call and the issue say what it ran."""
    from nightwatch.flows.nightwatch import run_night

    app = APPS[0]
    repo, bare = checkout(app, tmp_path)
    test = {"path": app.new_file, "content": _fix_side(app, bare, app.test_file), "test": app.test}
    export = ROOT / "evals" / app.case / "export.json"
    with FakeAnthropic() as fake:
        fake.brain = fake.api.brain = RunsTheFixTest(test)  # type: ignore[assignment]
        for name, value in {"NIGHTWATCH_ERRORS_FILE": str(export), "NIGHTWATCH_CODE_PATH": str(repo),
                            "NIGHTWATCH_TEST_ENV": str(require_env(app)), "NIGHTWATCH_TEST_COMMAND": app.command,
                            "ANTHROPIC_API_KEY": fake.api_key, "ANTHROPIC_BASE_URL": fake.url}.items():
            monkeypatch.setenv(name, value)
        report = run_night(until=ExportFileSource(export).exported_at, max_errors=2)
        answered = [_text(block) for request in fake.brain.seen for m in request["messages"] if m["role"] == "user"
                    for block in (m["content"] if isinstance(m["content"], list) else [])
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == "toolu_fix_test"]
    assert report.succeeded and not report.offline_model, report.steps_failed
    assert answered and answered[0].startswith("reproduces the production error: sqlalchemy.exc.IntegrityError"), answered[:1]
    assert answered[0].splitlines()[1].startswith("$ python -m pytest")  # what the model was told: CTFd's runner ran it
    result = next(r for r in report.results if r.error.error_class == app.error_class)
    assert next(c for c in result.tool_calls if c.name == "run_test").ok
    verification = result.verification
    assert verification is not None and verification.runs, result.model_dump_json(include={"verification"})
    first = verification.runs[0]
    assert first.command.startswith("python -m pytest") and first.outcome.startswith("failed")
    assert "IntegrityError" in first.output and "CTFd/api/v1/solutions.py" in first.output
    (issue,) = [Path(i.url.removeprefix("file://")) for i in report.issues if i.fingerprint == result.fingerprint]
    text = issue.read_text()
    assert "python -m pytest" in text and "IntegrityError" in text and verification.status in text, text[-3000:]
