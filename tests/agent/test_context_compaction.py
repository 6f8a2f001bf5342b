"""Compaction: the API's compact_20260112 (paused, checkpointed, absorbed) and NightWatch's own summary."""

from __future__ import annotations

from pathlib import Path

from nightwatch.agent.checkpoints import CheckpointStore
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.compaction import SUMMARY_HEADING, cut_point
from nightwatch.agent.definitions import load_definition
from nightwatch.agent.loop import run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext
from tests.agent.test_agent_loop import CONTROLLER, _use
from tests.agent.test_context_live_path import _config
from tests.builders import app_frame, nil_error, traces_for
from tests.fakes.anthropic import FakeAnthropic
from tests.gitrepo import commit_all

FILES = 9


def _big_repo(tmp_path: Path) -> LocalRepoHost:
    root = tmp_path / "repo"
    (root / "app/controllers").mkdir(parents=True)
    (root / "app/controllers/orders_controller.rb").write_text(CONTROLLER)
    (root / "lib").mkdir()
    for i in range(FILES):  # each read is cut at 24,000 characters: about 6,700 tokens
        (root / f"lib/big_{i}.rb").write_text("".join(f"  def helper_{i}_{n}(value) = value.to_s * {n}\n" for n in range(700)))
    return LocalRepoHost(commit_all(root))


def _setup(tmp_path: Path, reads: int):
    error = nil_error()
    traces = traces_for(error, app_frame())
    events = EventLog(tmp_path / "events.jsonl")
    runner = ToolRunner(cache=CodeCache(_big_repo(tmp_path)), traces=traces, events=events, run_id="r1",
                        fingerprint=error.fingerprint, allowed=load_definition("base-analyzer").tools)
    script = [[_use("read_file", {"path": f"lib/big_{i}.rb"}, i + 1)] for i in range(reads)]
    return runner, investigation_message(error, traces, ResearchContext(fingerprint=error.fingerprint)), script


def test_server_compaction_pauses_checkpoints_and_replaces_the_history(tmp_path):
    runner, first, script = _setup(tmp_path, FILES)
    store = CheckpointStore(tmp_path / "checkpoints")
    policy = ContextPolicy(context_editing=False, watcher=False, when_it_pays=False)
    with FakeAnthropic() as fake:
        fake.script(*script)
        client = AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0)
        outcome = run_agent(client, runner, _config(policy=policy, token_budget=500_000), first, checkpoints=store)
        bodies = fake.message_bodies()
    assert outcome.failure is None and outcome.analysis is not None
    paused = [c for c in outcome.calls if c.stop_reason == "compaction"]
    billed = paused[0].usage.input + paused[0].usage.cache_read
    assert len(paused) == 1 and paused[0].compactions == 1 and billed > 50_000  # the compaction pass is billed
    assert paused[0].checkpoint_id is not None  # written before the compaction, verified
    after = bodies[outcome.calls.index(paused[0]) + 1]
    assert after["messages"][0]["role"] == "assistant" and after["messages"][0]["content"][0]["type"] == "compaction"
    assert len(after["messages"]) == 1  # the local history before the compaction block was dropped
    assert any(e.kind == "summary" for e in runner.events._events)
    assert paused[0].iteration == outcome.calls[outcome.calls.index(paused[0]) + 1].iteration  # a pause is not an iteration


def test_own_summary_catches_up_after_a_failed_one(tmp_path):
    runner, first, script = _setup(tmp_path, 5)
    policy = ContextPolicy(context_editing=False, watcher=False, compaction_trigger=20_000, summary_keep_messages=2, when_it_pays=False)
    with FakeAnthropic() as fake:
        fake.summary_faults = 1
        fake.script(*script)
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner,
                            _config(model="claude-haiku-4-5", policy=policy), first)
        bodies = fake.message_bodies()
    summaries = [b for b in bodies if b["tools"][0]["name"] == "record_summary"]
    assert outcome.failure is None and len(summaries) >= 2
    assert any("summary failed" in d for d in outcome.decisions)
    failed, caught_up = summaries[0], summaries[1]
    assert len(caught_up["messages"]) > len(failed["messages"])  # it covers the gap the failed one left
    assert [c.phase for c in outcome.calls].count("summarise") == len(summaries) - 1
    investigation = [b for b in bodies if b["tools"][0]["name"] != "record_summary"]
    folded = investigation[-1]["messages"][0]["content"][-1]["text"]
    assert folded.startswith(SUMMARY_HEADING) and "lib/big_0.rb" in folded
    assert investigation[-1]["messages"][1]["role"] == "assistant"  # the cut fell before an assistant turn


def test_the_cut_never_separates_a_tool_use_from_its_result():
    messages = [{"role": "user", "content": "q"}]
    for i in range(4):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r"}]}]
    for keep in (1, 2, 3, 4, 5):
        cut = cut_point(messages, keep)
        assert cut is None or messages[cut]["role"] == "assistant"
    assert cut_point(messages[:3], 2) is None  # nothing old enough to summarise
