"""Checkpoints: atomic, verified, and an investigation killed mid-loop resumes where it stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nightwatch.agent.checkpoints import Checkpoint, CheckpointError, CheckpointStore
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.loop import run_agent
from nightwatch.models import ErrorAnalysisResult
from tests.agent.test_agent_loop import _case
from tests.agent.test_context_live_path import _config
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.http import Reply, Request
from tests.prefect_processes import PROCESS_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
KILL_AT = 3  # the third Messages request: iterations 1 and 2 are done and checkpointed

DRIVER = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path
from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.definitions import load_definition
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.investigate import AgentKit, Investigation, investigate_error
from nightwatch.models import ErrorGroup, StackFrame, TraceData
from nightwatch.research import ResearchContext

work = Path({work!r})
error = ErrorGroup(error_class="NoMethodError", transaction="Controller/orders/show",
                   message="undefined method `email' for nil:NilClass", occurrences=87)
traces = TraceData(fingerprint=error.fingerprint, stack_frames=[
    StackFrame(file="app/controllers/orders_controller.rb", line=4, method="show", in_app=True)])
result = investigate_error(
    Investigation("night-1", error, traces, ResearchContext(fingerprint=error.fingerprint)),
    AgentKit(definition=load_definition("base-analyzer"), model="claude-sonnet-4-6",
             client=AnthropicModelClient("{key}", base_url="{url}", max_retries=0, timeout_s=60),
             cache=CodeCache(LocalRepoHost(work / "repo")), events=EventLog(work / "events.jsonl"), max_iterations=12,
             token_budget=60_000, checkpoints=CheckpointStore(work / "checkpoints")))
print(result.model_dump_json())
"""


class StallingFake(FakeAnthropic):
    """Holds the Nth Messages request until the test kills the client process."""

    def __init__(self, stall_at: int | None) -> None:
        super().__init__()
        self.stall_at = stall_at
        self.count = 0
        self.stalled = threading.Event()

    def _messages(self, req: Request) -> Reply:
        self.count += 1
        if self.count == self.stall_at:
            self.stalled.set()
            time.sleep(5)
            return Reply(503, {"type": "error", "error": {"type": "api_error", "message": "gone"}})
        return super()._messages(req)


def _driver(tmp_path: Path, work: Path, fake: FakeAnthropic) -> Path:
    _case(work)  # writes work/repo
    script = tmp_path / f"driver_{work.name}.py"
    script.write_text(DRIVER.format(root=str(ROOT), work=str(work), key=fake.api_key, url=fake.url))
    return script


def _run(script: Path) -> ErrorAnalysisResult:
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=PROCESS_GUARD_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return ErrorAnalysisResult.model_validate_json(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_killed_investigation_resumes_at_the_same_iteration(tmp_path):
    with StallingFake(stall_at=None) as fake:
        baseline = _run(_driver(tmp_path, tmp_path / "baseline", fake))
    with StallingFake(stall_at=KILL_AT) as fake:
        script = _driver(tmp_path, tmp_path / "killed", fake)
        process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert fake.stalled.wait(60), "the investigation never reached its third call"
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        saved = CheckpointStore(tmp_path / "killed" / "checkpoints").latest()
        assert saved is not None and saved.iteration == KILL_AT - 1 and saved.hypotheses and saved.next_steps
        fake.stall_at = None
        seen_before = len(fake.message_requests())
        resumed = _run(script)
        first_resumed_request = fake.message_bodies()[seen_before]
    assert baseline.failure is None and resumed.failure is None
    assert resumed.model_calls[KILL_AT - 1].iteration == KILL_AT  # the first call of the retry is the interrupted iteration
    assert len(first_resumed_request["messages"]) == 2 * (KILL_AT - 1) + 1  # the saved conversation, not a fresh start
    assert resumed.iterations == baseline.iterations and resumed.analysis == baseline.analysis
    one_iteration = max(c.usage.total for c in baseline.model_calls)
    assert resumed.tokens.total <= baseline.tokens.total + one_iteration
    assert [c.name for c in resumed.tool_calls] == [c.name for c in baseline.tool_calls]
    assert not CheckpointStore(tmp_path / "killed" / "checkpoints")._files()  # a finished investigation leaves none


def _checkpoint(iteration: int) -> Checkpoint:
    return Checkpoint(run_id="r", fingerprint="f" * 16, iteration=iteration, state={"messages": [], "iteration": iteration},
                      hypotheses=["the user is nil"], next_steps=["read_file app/models/order.rb"])


def test_checkpoints_are_verified_and_a_corrupt_newest_one_is_skipped(tmp_path):
    store = CheckpointStore(tmp_path)
    first = store.save(_checkpoint(1))
    second = store.save(_checkpoint(2))
    assert first.checkpoint_id != second.checkpoint_id and store.latest().iteration == 2
    newest = sorted(tmp_path.glob("*.json"))[-1]
    newest.write_text(newest.read_text()[:-40])  # torn write
    assert store.latest().iteration == 1 and store.skipped == [str(newest)]
    tampered = json.loads(sorted(tmp_path.glob("*.json"))[0].read_text())
    tampered["iteration"] = 7  # content that no longer matches its digest
    sorted(tmp_path.glob("*.json"))[0].write_text(json.dumps(tampered))
    assert store.latest() is None


def test_only_the_last_few_checkpoints_are_kept_and_no_temporary_file_remains(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)
    for i in range(1, 6):
        store.save(_checkpoint(i))
    assert [p.name for p in sorted(tmp_path.iterdir())] == ["0004.json", "0005.json"]


def test_an_unwritable_checkpoint_is_an_error_that_names_the_file(tmp_path):
    (tmp_path / "blocked").write_text("a file where the folder should be")
    with pytest.raises(CheckpointError, match="blocked"):
        CheckpointStore(tmp_path / "blocked" / "inner").save(_checkpoint(1))


def test_a_checkpoint_of_another_agent_or_model_is_not_resumed(tmp_path):
    _, runner, first = _case(tmp_path)
    store = CheckpointStore(tmp_path / "ck")
    store.save(_checkpoint(2).model_copy(update={"agent": "python", "model": "claude-opus-4-6", "fingerprint": runner.fingerprint}))
    with FakeAnthropic() as fake:
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner,
                            _config(agent="base-analyzer"), first, checkpoints=store)
    assert outcome.resumed_at is None and outcome.failure is None
