"""Cross-error notes, cleared thinking kept for recall, and the per-investigation context table of the report."""

from __future__ import annotations

from datetime import datetime, timezone

from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.cross_error import CrossErrorNotes, note_for
from nightwatch.agent.loop import run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.agent.recall import recall
from nightwatch.models import ErrorAnalysisResult, ModelCall, RunReport, TokenUsage, ToolCall, Window
from nightwatch.render.summary import text_summary
from tests.agent.test_agent_loop import VALID, _case, _use
from tests.agent.test_context_live_path import _config
from tests.builders import analysis, error_group, result_for
from tests.fakes.anthropic import FakeAnthropic


def _result(cls: str, cause: str, run_id: str = "r1") -> ErrorAnalysisResult:
    return result_for(error_group(cls, message="boom"), analysis(root_cause=cause), run_id, files_examined=["app/models/order.rb"])


def test_cross_error_notes_are_short_redacted_newest_first_and_never_about_oneself():
    notes = CrossErrorNotes()
    for i in range(6):
        notes.add(_result(f"Error{i}", f"cause {i} with key sk_live_{'a' * 24} " + "x" * 300))
    recent = notes.recent()
    assert len(recent) == 4 and recent[0].startswith("Error5") and all(len(n) <= 200 for n in recent)
    assert all("sk_live_" not in n for n in recent)
    own = _result("Error5", "c").fingerprint
    assert not any(n.startswith("Error5") for n in notes.recent(excluding=own))
    assert note_for(result_for(error_group("E", "T"))) is None


def test_cleared_thinking_goes_to_the_event_log(tmp_path):
    _, runner, first = _case(tmp_path)
    thought = {"type": "thinking", "thinking": "The invoice total uses a stale exchange rate.", "signature": "c2ln"}
    with FakeAnthropic() as fake:
        fake.script([thought, _use("list_directory", {"path": "app"}, 1)], [dict(thought, thinking="Second thought."), _use("list_directory", {}, 2)],
                    [_use("submit_analysis", VALID, 3)])
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner,
                            _config(thinking_budget=2048, policy=ContextPolicy(clear_thinking_keep=1)), first)
    assert outcome.failure is None and sum(c.edits_applied for c in outcome.calls) >= 1
    assert "stale exchange rate" in recall(runner.events, "exchange rate", runner.fingerprint)


def test_the_summary_shows_each_investigation_context_and_the_code_cache():
    result = _result("NoMethodError", "nil user")
    calls = [ModelCall(call_id=f"c{i}", run_id="r1", fingerprint=result.fingerprint, phase="investigate", iteration=i, model="claude-sonnet-4-6",
                       usage=TokenUsage(input=100, output=50, cache_write=400 if i == 1 else 50, cache_read=0 if i == 1 else 900),
                       edits_applied=int(i == 3), tokens_cleared=1200 if i == 3 else 0, compactions=0, cost_usd=0.01) for i in (1, 2, 3)]
    tools = [ToolCall(run_id="r1", fingerprint=result.fingerprint, iteration=1, name="read_file", ok=True, cached=c) for c in (True, False)]
    result = result.model_copy(update={"iterations": 3, "model_calls": calls, "tool_calls": tools, "cost_usd": 0.03,
                                       "tokens": sum((c.usage for c in calls), TokenUsage())})
    report = RunReport(run_id="r1", started_at=datetime.now(timezone.utc),
                       window=Window(start=datetime(2026, 11, 20, tzinfo=timezone.utc), end=datetime(2026, 11, 21, tzinfo=timezone.utc)),
                       results=[result])
    text = text_summary(report)
    row = next(line for line in text.splitlines() if line.startswith("  1   3"))
    assert "Context per investigation" in text and "1,800" in row and "69%" in row and "1,200" in row and "$0.0300" in row
    assert "code cache: 1 of 2 reads answered from the cache (50%)" in text
