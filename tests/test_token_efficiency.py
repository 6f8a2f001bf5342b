"""The token-efficiency benchmark runs, keeps its JSON keys, and its strategies rank as the design says."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.investigation_corpus import LENGTHS, corpus
from benchmarks.token_efficiency import STRATEGIES, figures, run
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.runtime import DEMO_APP

KEYS = {"cost_weighted_tokens", "billed_input_tokens", "output_tokens", "peak_context_tokens", "needles_answered", "needles_total",
        "cost_usd", "cost_usd_batch"}


def test_long_investigations_rank_naive_original_nightwatch(tmp_path: Path):
    host = LocalRepoHost(DEMO_APP)
    scripts = [s for s in corpus(host) if s.night == "long"][:3]
    assert all(5 <= s.calls <= max(LENGTHS.values()) for s in scripts)
    data = figures({name: run(name, scripts, host, tmp_path) for name in STRATEGIES})
    assert set(data) == {"naive", "naive+cache", "original", "nightwatch", "floor"} and set(data["floor"]) == {"cost_weighted_tokens", "cost_usd"}
    assert all(set(data[name]) == KEYS for name in STRATEGIES)
    naive, original, nightwatch = (data[n]["cost_weighted_tokens"] for n in ("naive", "original", "nightwatch"))
    assert data["floor"]["cost_weighted_tokens"] < nightwatch < original < naive
    assert data["nightwatch"]["cost_usd"] < data["naive+cache"]["cost_usd"] < data["naive"]["cost_usd"]  # in dollars, output included
    assert all(data[n]["cost_usd_batch"] == pytest.approx(data[n]["cost_usd"] / 2, rel=1e-3) for n in STRATEGIES)  # half price
    assert data["floor"]["cost_usd"] < data["nightwatch"]["cost_usd"]
    assert data["nightwatch"]["needles_answered"] == 3 and data["original"]["needles_answered"] < 3  # the window dropped them


def test_the_long_corpus_runs_on_real_application_checkouts(tmp_path: Path):
    from benchmarks.long_corpus import MAX_CALLS, MIN_CALLS, long_corpus

    pairs = long_corpus(tmp_path / "checkouts")[:2]
    hosts = {script.name: host for script, host in pairs}
    scripts = [script for script, _ in pairs]
    assert all(MIN_CALLS <= s.calls <= MAX_CALLS for s in scripts) and all(len(s.traces.stack_frames) >= 30 for s in scripts)
    data = figures({name: run(name, scripts, lambda s: hosts[s.name], tmp_path) for name in ("naive", "naive+cache", "nightwatch")})
    assert data["nightwatch"]["needles_answered"] == 2
    assert data["nightwatch"]["cost_usd"] < data["naive+cache"]["cost_usd"] < data["naive"]["cost_usd"]
    assert data["nightwatch"]["billed_input_tokens"] < data["naive"]["billed_input_tokens"]  # lean tool results


MARATHON = (("ctfd-users-create-admin-email", 60),)  # the shortest marathon: 60 tool calls over CTFd's full tree


def test_a_marathon_answers_every_needle_within_the_window_where_the_naive_loop_is_refused(tmp_path: Path):
    """NightWatch clears what pays (holding its boundary, so the cache holds), recalls what it cleared and answers every
    needle far below the window; the naive loop with automatic caching is refused at the window, with no answer."""
    from benchmarks.marathon_corpus import marathon_corpus
    from benchmarks.token_efficiency import MARATHON_STRATEGIES, WINDOW, run_marathons
    from nightwatch.agent.caching import hit_rate

    ((marathon, _),) = marathon_corpus(tmp_path / "checkout", MARATHON)
    assert marathon.calls == 60 and len(marathon.needles) == 3 and all(n.call <= 12 for n in marathon.needles)
    nightwatch, careful = (run_marathons(name, [marathon], tmp_path / "runs", *MARATHON_STRATEGIES[name])
                           for name in ("nightwatch", "naive+cache"))
    assert nightwatch.failures == [] and nightwatch.needles["missing"] == 0 and nightwatch.needles["recalled"] > 0
    assert nightwatch.peak < WINDOW // 4 and nightwatch.edits > 0 and hit_rate(nightwatch.usage) > 0.8
    assert len(careful.failures) == 1 and "exceed context limit" in careful.failures[0] and careful.needles["missing"] == 3
    assert nightwatch.cost_usd < careful.cost_usd / 2


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.slow
def test_a_marathon_killed_at_a_tool_call_resumes_on_another_process_and_re_spends_little(tmp_path: Path):
    import signal

    from benchmarks.marathon_corpus import marathon_corpus
    from benchmarks.marathon_restart import restart_figures

    ((marathon, _),) = marathon_corpus(tmp_path / "checkout", MARATHON)
    data = restart_figures(marathon, tmp_path / "restart", kill_at=40)
    assert data["uninterrupted"]["failure"] is None and [r["gap_s"] for r in data["restarts"]] == [60, 600]
    for restarted in data["restarts"]:  # the cache warm, then expired
        assert restarted["killed"]["signal"] == signal.SIGKILL and restarted["failure"] is None
        assert 1 <= restarted["resumed_at_iteration"] < restarted["killed"]["billed_calls"]
        assert set(restarted["needles"].values()) <= {"present", "recalled"} and len(restarted["needles"]) == 3
    warm, cold = data["restarts"]
    assert 0 <= warm["respend_share"] <= 0.05  # one model call again, read from the cache
    # and the prompt written again, cleared first since its rewrite is paid anyway: what is left is mostly the 7K
    # tokens before the first tool use, written again, which is 6% of this 60-call marathon (the restart benchmark's
    # 150-call one re-spends 2.7%); before the clearing at any size it was a third (simulated time: the same figure on
    # every machine)
    assert warm["respend_usd"] < cold["respend_usd"] and cold["respend_share"] <= 0.08
