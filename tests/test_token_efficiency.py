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
