"""Context editing loses nothing: a needle cleared from the model's view comes back through recall_context."""

from __future__ import annotations

from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.loop import run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import EventLog, recall
from nightwatch.offline.emulated_edits import CLEARED_TOOL_RESULT
from tests.agent.test_agent_loop import _case
from tests.agent.test_context_live_path import _config
from tests.fakes.anthropic import FakeAnthropic

NEEDLE = "    @email = @order.user.email"  # line 4 of the controller: read at iteration 2, needed by the fix
AGGRESSIVE = ContextPolicy(clear_tool_uses_trigger=1_500, clear_tool_uses_keep=1, clear_tool_uses_at_least=0, watcher=False)


def _investigate(tmp_path, tools=None):
    _, runner, first = _case(tmp_path)
    if tools is not None:
        runner.allowed = tools
    config = _config(policy=AGGRESSIVE, **({"tools": tools} if tools is not None else {}))
    with FakeAnthropic() as fake:
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, config, first)
        return outcome, runner, fake.brain.seen


def _visible_reads(request: dict) -> list[str]:
    return [b["content"] for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_result" and ("orders_controller" in str(b["content"]) or b["content"] == CLEARED_TOOL_RESULT)]


def test_a_cleared_needle_reaches_the_answer_through_recall(tmp_path):
    outcome, runner, seen = _investigate(tmp_path)
    assert outcome.failure is None
    assert sum(c.edits_applied for c in outcome.calls) > 0 and sum(c.tokens_cleared for c in outcome.calls) > 0
    answer_turn = seen[-1]
    assert NEEDLE not in str([b for m in answer_turn["messages"][:-1] for b in m["content"] if b.get("type") == "tool_result"])
    assert CLEARED_TOOL_RESULT in str(answer_turn["messages"])  # the read it needs was cleared by the server
    assert [c.name for c in runner.calls][-1] == "recall_context"
    change = outcome.analysis.file_changes[0]
    assert change.before == NEEDLE and "@order.user&.email" in change.after
    notes = [e for e in runner.events._events if e.kind == "note"]
    assert notes and all(e.label.startswith("cleared ") for e in notes)


def test_without_recall_the_cleared_needle_is_lost(tmp_path):
    tools = ["read_file", "search_code", "list_directory", "get_error_traces"]
    outcome, runner, _ = _investigate(tmp_path, tools=tools)
    assert "recall_context" not in [c.name for c in runner.calls]
    assert outcome.analysis is not None and not outcome.analysis.has_fix and outcome.analysis.confidence == "low"


def test_recall_ranks_content_not_the_notes_about_clearing():
    log = EventLog()
    log.append("fp", "tool_result", 'read_file {"path": "app/models/order.rb"}', "12| def total\n13|   subtotal / items.count\n14| end", 2)
    log.append("fp", "note", 'cleared read_file {"path": "app/models/order.rb"}', "Cleared from the model's context.", 5)
    log.append("fp", "tool_result", 'read_file {"path": "app/models/user.rb"}', "1| class User\n2| end", 3)
    text = recall(log, "order.rb 13 total", "fp")
    assert text.startswith("[tool_result #1") and "subtotal / items.count" in text and "Cleared" not in text
    assert recall(log, "order.rb", "other-fingerprint").startswith("No earlier context")
