"""The agent loop over the offline model and over scripted replies (the FakeLLM tier)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from anthropic.types.beta import BetaMessage

from nightwatch.agent.definitions import load_definition
from nightwatch.agent.loop import LoopConfig, run_agent
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SUBMIT_TOOL, CodeCache, ToolRunner
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.offline.model import OfflineModel
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext
from tests.builders import app_frame, gem_frame, nil_error, traces_for
from tests.gitrepo import commit_all

CONTROLLER = """class OrdersController < ApplicationController
  def show
    @order = Order.find(params[:id])
    @email = @order.user.email
    render :show
  end
end
"""

VALID = {"title": "t", "reasoning": "r", "root_cause": "c", "has_fix": False, "confidence": "low"}


def _repo(tmp_path: Path) -> LocalRepoHost:
    root = tmp_path / "repo"
    (root / "app/controllers").mkdir(parents=True)
    (root / "app/controllers/orders_controller.rb").write_text(CONTROLLER)
    return LocalRepoHost(commit_all(root))


def _case(tmp_path: Path):
    error = nil_error()
    traces = traces_for(error, app_frame(), gem_frame())
    runner = ToolRunner(cache=CodeCache(_repo(tmp_path)), traces=traces, events=EventLog(), run_id="r1",
                        fingerprint=error.fingerprint, allowed=load_definition("base-analyzer").tools)
    first = investigation_message(error, traces, ResearchContext(fingerprint=error.fingerprint))
    return error, runner, first


def _config(**kw: Any) -> LoopConfig:
    d = load_definition("base-analyzer")
    return LoopConfig(model="claude-sonnet-4-6", system_prompt=d.system_prompt, tools=d.tools, **kw)


def test_offline_model_finds_the_file_and_fixes_the_nil(tmp_path):
    _, runner, first = _case(tmp_path)
    outcome = run_agent(OfflineModel(), runner, _config(), first)
    assert outcome.failure is None
    assert [c.name for c in runner.calls] == ["get_error_traces", "read_file", "search_code"]
    assert runner.files_examined == ["app/controllers/orders_controller.rb"]
    analysis = outcome.analysis
    assert analysis.confidence == "medium" and analysis.has_fix
    change = analysis.file_changes[0]
    assert change.path == "app/controllers/orders_controller.rb" and "@order.user&.email" in change.after
    assert len(outcome.calls) == 4 and all(c.usage.input + c.usage.cache_write + c.usage.cache_read > 0 for c in outcome.calls)


class Scripted:
    """Replies in order; records every request so tests can assert what the loop sent."""

    name, offline = "scripted", False

    def __init__(self, *replies: list[dict]) -> None:
        self.replies = list(replies)
        self.requests: list[dict] = []

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        return model, mode

    def create(self, **params: Any) -> BetaMessage:
        self.requests.append(copy.deepcopy(params))  # as sent: the loop mutates its history afterwards
        content = self.replies.pop(0)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return BetaMessage.model_validate({"id": f"m{len(self.requests)}", "type": "message", "role": "assistant",
                                           "model": "claude-sonnet-4-6", "content": content, "stop_reason": stop,
                                           "usage": {"input_tokens": 100, "output_tokens": 10}})


def _use(name: str, args: dict, i: int = 1) -> dict:
    return {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}


def test_invalid_answer_gets_one_retry_with_the_error(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use(SUBMIT_TOOL, {"title": "x"}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    outcome = run_agent(client, runner, _config(), first)
    assert outcome.analysis is not None and outcome.iterations == 2
    retry = client.requests[1]["messages"][-1]["content"][0]
    assert retry["is_error"] and "does not match the schema" in retry["content"]


def test_twice_invalid_is_a_clear_failure(tmp_path):
    _, runner, first = _case(tmp_path)
    outcome = run_agent(Scripted([_use(SUBMIT_TOOL, {}, 1)], [_use(SUBMIT_TOOL, {"confidence": "sure"}, 2)]), runner, _config(), first)
    assert outcome.analysis is None and "failed validation twice" in outcome.failure


def test_tool_error_returns_as_is_error_result(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use("read_file", {"path": "../../etc/passwd"}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    outcome = run_agent(client, runner, _config(), first)
    result = client.requests[1]["messages"][-1]["content"][0]
    assert result["is_error"] and "escapes" in result["content"] and outcome.analysis is not None


def test_thinking_blocks_are_passed_back_unmodified(tmp_path):
    _, runner, first = _case(tmp_path)
    thinking = {"type": "thinking", "thinking": "Let me look at the controller.", "signature": "sig-abc=="}
    client = Scripted([thinking, _use("list_directory", {"path": "app"}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    run_agent(client, runner, _config(thinking_budget=2048), first)
    sent = client.requests[1]["messages"][1]["content"][0]
    assert sent == thinking
    assert client.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_tools_withheld_on_the_last_step(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use("list_directory", {}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    run_agent(client, runner, _config(max_iterations=2), first)
    last = client.requests[1]
    assert [t["name"] for t in last["tools"]] == [SUBMIT_TOOL]
    assert last["tool_choice"] == {"type": "tool", "name": SUBMIT_TOOL}
    assert "final turn" in last["messages"][-1]["content"][-1]["text"]


def test_token_budget_forces_a_wrap_up(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use("list_directory", {}, 1)], [_use(SUBMIT_TOOL, VALID, 2)])
    outcome = run_agent(client, runner, _config(token_budget=50), first)
    assert outcome.wrapped_up and [t["name"] for t in client.requests[1]["tools"]] == [SUBMIT_TOOL]


def test_prose_answer_is_nudged_once_then_fails(tmp_path):
    _, runner, first = _case(tmp_path)
    text = {"type": "text", "text": "I think it is a nil."}
    outcome = run_agent(Scripted([text], [text]), runner, _config(), first)
    assert outcome.analysis is None and "without calling submit_analysis" in outcome.failure


def test_a_failing_model_call_keeps_what_was_metered(tmp_path):
    _, runner, first = _case(tmp_path)
    client = Scripted([_use("list_directory", {}, 1)])  # second call pops from an empty script
    outcome = run_agent(client, runner, _config(), first)
    assert outcome.failure.startswith("model call failed at iteration 2") and len(outcome.calls) == 1
