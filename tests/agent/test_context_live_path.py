"""What reaches the API: beta headers, `context_management` shapes and cache breakpoints, read back over HTTP."""

from __future__ import annotations

import copy

from nightwatch.agent.break_even import least_clearing
from nightwatch.agent.caching import hit_rate
from nightwatch.agent.client import AnthropicModelClient
from nightwatch.agent.definitions import load_definition
from nightwatch.agent.loop import LoopConfig, run_agent
from nightwatch.agent.policy import ContextPolicy
from nightwatch.pricing import cost_usd
from tests.agent.test_agent_loop import VALID, _case, _use
from tests.fakes.anthropic import FakeAnthropic, malformed, slow

INSTRUCTIONS_START = "This conversation investigates one production error."


def _config(**kw):
    d = load_definition("base-analyzer")
    return LoopConfig(**{"model": "claude-sonnet-4-6", "system_prompt": d.system_prompt, "tools": d.tools, **kw})


def _run(tmp_path, **config):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, _config(**config), first)
        return outcome, fake.message_bodies(), fake.betas()


def test_layers_at_their_thresholds_send_the_documented_betas_and_edit_shapes(tmp_path):
    outcome, bodies, betas = _run(tmp_path, policy=ContextPolicy(when_it_pays=False))
    assert outcome.failure is None
    assert all(b == ["context-management-2025-06-27", "compact-2026-01-12"] for b in betas)
    clear, compact = bodies[0]["context_management"]["edits"]
    assert clear == {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 40_000},
                     "keep": {"type": "tool_uses", "value": 4}, "clear_at_least": {"type": "input_tokens", "value": 0},
                     "exclude_tools": ["recall_context"]}
    assert compact["type"] == "compact_20260112" and compact["trigger"] == {"type": "input_tokens", "value": 50_000}
    assert compact["pause_after_compaction"] is True and compact["instructions"].startswith(INSTRUCTIONS_START)


def test_by_default_a_clearing_must_pay_and_a_compaction_is_offered_only_when_it_would(tmp_path):
    _, bodies, betas = _run(tmp_path)
    # a summary of a 50K history pays from four calls to come on (47,952 x 0.1 x 4 > 5,000 + 2,048 x 6.25)
    assert betas == [["context-management-2025-06-27"]] * 3 + [["context-management-2025-06-27", "compact-2026-01-12"]]
    (clear,) = bodies[0]["context_management"]["edits"]
    assert clear["trigger"] == {"type": "input_tokens", "value": 40_000}  # 20% of a 200K window
    # one call to come: a clearing pays only if it removes more than 1.15 / (0.1 x 2 + 1.15) of the 40K prompt
    assert clear["clear_at_least"] == {"type": "input_tokens", "value": least_clearing(40_000, 1)} == \
        {"type": "input_tokens", "value": 34_075}


def test_thinking_puts_clear_thinking_first(tmp_path):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        fake.script([{"type": "thinking", "thinking": "Look at the controller.", "signature": "c2ln"}, _use("list_directory", {"path": "app"})],
                    [_use("submit_analysis", VALID, 2)])
        run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, _config(thinking_budget=2048), first)
        body = fake.message_bodies()[0]
    assert body["context_management"]["edits"][0] == {"type": "clear_thinking_20251015", "keep": "all"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "tool_choice" not in body


def test_a_model_without_server_compaction_gets_no_compaction_beta(tmp_path):
    _, bodies, betas = _run(tmp_path, model="claude-haiku-4-5")
    assert all(b == ["context-management-2025-06-27"] for b in betas)
    assert [e["type"] for e in bodies[0]["context_management"]["edits"]] == ["clear_tool_uses_20250919"]


def test_with_every_layer_off_nothing_is_cached_or_edited(tmp_path):
    outcome, bodies, betas = _run(tmp_path, policy=ContextPolicy.off())
    assert betas == [[]] * len(bodies) and all("context_management" not in b for b in bodies)
    assert "cache_control" not in str(bodies)
    assert outcome.usage.cache_read == outcome.usage.cache_write == 0


def test_four_breakpoints_move_with_the_conversation_and_the_cache_pays_back(tmp_path):
    outcome, bodies, _ = _run(tmp_path)
    for body in bodies:
        marked = [b for b in body["tools"] + body["system"] if "cache_control" in b]
        marked += [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert len(marked) == 4 and "cache_control" in body["messages"][-1]["content"][-1]
        assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    later = outcome.calls[1:]
    assert all(c.usage.cache_read > 0 for c in later) and hit_rate(outcome.usage) > 0.5
    assert outcome.calls[0].usage.cache_write > 0


def test_a_long_night_caches_only_the_shared_prefix_for_an_hour(tmp_path):
    outcome, bodies, _ = _run(tmp_path, policy=ContextPolicy(shared_cache_ttl="1h"))
    assert bodies[0]["system"][0]["cache_control"]["ttl"] == "1h" and bodies[0]["tools"][-1]["cache_control"]["ttl"] == "1h"
    marked = [b["cache_control"]["ttl"] for m in bodies[0]["messages"] for b in m["content"] if isinstance(b, dict) and b.get("cache_control")]
    assert marked and set(marked) == {"5m"}  # the research block and the turns are this investigation's alone
    first = outcome.calls[0]
    assert 0 < first.usage.cache_write_1h < first.usage.cache_write
    five_minute_only = cost_usd(first.model, first.usage.model_copy(update={"cache_write_1h": 0}))
    assert first.cost_usd > five_minute_only  # the hour is priced at 2x, the rest at 1.25x


def test_the_shared_prefix_is_cached_five_minutes_unless_a_team_asks_for_an_hour():
    from nightwatch.settings import Settings

    assert ContextPolicy.from_settings(Settings()).shared_cache_ttl == "5m"
    assert ContextPolicy.from_settings(Settings(shared_cache_ttl="1h")).shared_cache_ttl == "1h"


def test_a_malformed_body_interrupts_the_loop_and_keeps_what_was_metered(tmp_path):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        fake.fail_at(2, malformed())
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, _config(), first)
    assert outcome.interrupted and outcome.failure.startswith("model call failed at iteration 2")
    assert len(outcome.calls) == 2 and outcome.calls[0].usage.cache_write > 0
    assert outcome.calls[1].status == "unconfirmed" and outcome.calls[1].usage.input > 0  # the lost answer, estimated


def test_a_slow_answer_times_out_and_the_sdk_retries_it(tmp_path):
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        # The client's timeout is a hang guard for the answers that follow (each well under a second on a loaded core;
        # at 0.5 s a loaded machine timed them out too); the slow answer outlasts it ten times over
        fake.fail_next("POST", "/v1/messages", slow(30.0))
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=2, timeout_s=3.0), runner, _config(), first)
        requests = len(fake.message_requests())
    assert outcome.failure is None and requests == len(outcome.calls)  # every request the server got is a row
    assert outcome.calls[0].status == "unconfirmed" and all(c.status == "ok" for c in outcome.calls[1:])


class _Clock:
    """The loop's clock, moving `step` seconds each time it is read (before and after every model call)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 1_000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_once_the_cached_prompt_expired_a_request_asks_to_clear_without_a_break_even(tmp_path):
    """A request after the cache's TTL (a resume after a restart, a long test run) writes the whole prompt again
    whatever it clears, so a clearing costs it no rewrite: it asks the server to clear to the last `keep` tool uses
    at any size of prompt instead of at least the break-even past the trigger."""
    _, warm, _ = _run(tmp_path / "warm", clock=_Clock(10))
    _, cold, _ = _run(tmp_path / "cold", clock=_Clock(400))  # 400 s from one answer to the next request: past 5 min
    second = [b["context_management"]["edits"][0] for b in (warm[1], cold[1])]
    assert second[0]["clear_at_least"]["value"] == least_clearing(40_000, 2) > 0  # two calls to come
    assert second[1]["clear_at_least"] == {"type": "input_tokens", "value": 0}
    assert second[0]["trigger"] == {"type": "input_tokens", "value": 40_000}
    assert second[1]["trigger"] == {"type": "input_tokens", "value": 1}  # any prompt
    assert second[1]["keep"] == {"type": "tool_uses", "value": 4}
    # the first request has no cache to lose: it asks for the break-even either way
    assert cold[0]["context_management"]["edits"][0]["clear_at_least"]["value"] > 0


class _GapAfter:
    """The loop's clock, 10 s a read, 400 s later (past the cache's TTL) from the second read after the server
    answered `answered` requests (the first is that answer's time): the gap falls before the next request, however
    often the loop reads its clock."""

    def __init__(self, fake: FakeAnthropic, answered: int) -> None:
        self.fake, self.answered, self.reads, self.after = fake, answered, 0, 0

    def __call__(self) -> float:
        self.reads += 1
        self.after += len(self.fake.message_requests()) >= self.answered
        return 1_000.0 + 10 * self.reads + (400 if self.after > 1 else 0)


def test_a_clearing_made_under_an_expired_cache_is_held_by_the_requests_after_it(tmp_path):
    """The clearing an expired cache asked for at any size is sent again, the same results at any size, by the
    requests after it, so the server keeps applying it and the prompt it cached holds; under the policy's trigger
    the next request would send the results back and write them again."""
    _, runner, first = _case(tmp_path)
    with FakeAnthropic() as fake:
        config = _config(clock=_GapAfter(fake, 2), policy=ContextPolicy(clear_tool_uses_keep=1, watcher=False))
        outcome = run_agent(AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=0), runner, config, first)
        bodies = fake.message_bodies()
    edits = [b["context_management"]["edits"][0] for b in bodies]
    assert [e["trigger"]["value"] for e in edits] == [40_000, 40_000, 1, 1]  # the third request came after the gap
    assert [e["keep"]["value"] for e in edits[2:]] == [1, 2]  # the same tool use cleared again, one more kept
    third, fourth = outcome.calls[2:4]
    assert third.edits_applied == fourth.edits_applied == 1 and third.tokens_cleared == fourth.tokens_cleared > 0
    assert fourth.usage.cache_read >= third.usage.cache_read + third.usage.cache_write - 100  # the cleared prompt was read back


def test_the_age_of_the_cache_survives_a_checkpoint():
    from nightwatch.agent.conversation import LoopState
    state = LoopState(messages=[], answered_at=1_234.5)
    assert LoopState.from_dict(state.to_dict()).answered_at == 1_234.5
    assert LoopState.from_dict({"messages": []}).answered_at is None  # a checkpoint written before it was kept
    # a field this version does not keep (a checkpoint another version wrote) is left out, not a failed resume
    assert LoopState.from_dict({"messages": [], "answered_at": 5.0, "cleared_trigger": 0}).answered_at == 5.0


def test_a_held_clearing_applies_again_on_a_prompt_a_summary_made_smaller_than_the_trigger(tmp_path):
    """After NightWatch's own summary folds the history, the held boundary may survive on a prompt under the 40K
    trigger: the held request still clears those results at the server, as the watcher and the compaction trigger
    count them cleared."""
    from nightwatch.agent import editing
    from nightwatch.agent.conversation import LoopState
    from nightwatch.agent.layers import ContextLayers
    from nightwatch.offline.emulated_edits import clear_tool_uses
    from tests.agent.test_agent_loop import _case
    from tests.agent.test_agent_loop import _config as loop_config

    _, runner, _ = _case(tmp_path)
    layers = ContextLayers(client=None, runner=runner, config=loop_config(clock=lambda: 1_000.0))
    messages = [{"role": "user", "content": [{"type": "text", "text": "summary of the investigation so far"}]}]
    for i in range(1, 7):  # six reads of about 2K tokens each: a 12K prompt, held cleared through the second
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"f{i}"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x " * 2_000}]}]
    state = LoopState(messages=messages, cleared_through="t2", answered_at=995.0)
    _, management = layers._management(state, False, 12_000, 3)
    (edit,) = management["edits"]
    assert edit["keep"]["value"] == 4 and edit["trigger"]["value"] < 12_000
    uses = editing.tool_uses(messages)
    counted = editing.cleared_ids(uses, editing.held(uses, state.cleared_through), layers.policy)
    applied = clear_tool_uses(copy.deepcopy(messages), edit, 12_000)  # the server's side, as the emulation does it
    assert counted == {"t1", "t2"} and applied is not None and applied["cleared_tool_uses"] == 2
    # a move decided on the request's count before the summary folded it (past the trigger) is sent at any size too:
    # under the 40K trigger the server would apply neither the move nor the held clearing
    layers._move_pays = lambda *_: True
    _, management = layers._management(state, False, 45_000, 3)
    (move,) = management["edits"]
    assert move["keep"]["value"] == 4 and move["trigger"]["value"] < 12_000
    assert clear_tool_uses(copy.deepcopy(messages), move, 12_000)["cleared_tool_uses"] == 2  # six uses, four kept
