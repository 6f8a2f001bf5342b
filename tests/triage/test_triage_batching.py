"""Batching by estimated cost: custom_ids, estimates, and splits within the API's limits and a budget."""

from __future__ import annotations

import pytest

from nightwatch.research import ResearchContext
from nightwatch.tokens import EstimatingCounter
from nightwatch.triage.backends import CUSTOM_ID
from nightwatch.triage.plan import (
    BatchPlanError,
    TriageRequest,
    custom_id_for,
    estimate_tokens,
    plan_batches,
    plan_night,
    triage_request,
)
from nightwatch.triage.verdict import triage_params
from tests.triage.test_triage import _error, _prior, _traces


def _request(i: int, tokens: int = 1000, size: int = 5000) -> TriageRequest:
    return TriageRequest(fingerprint=f"{i:016x}", custom_id=f"{i:016x}", params={}, est_tokens=tokens, size_bytes=size)


def test_custom_ids_are_valid_unique_and_map_back():
    taken: set[str] = set()
    assert custom_id_for("0123456789abcdef", taken) == "0123456789abcdef"
    assert custom_id_for("0123456789abcdef", taken) == "0123456789abcdef-2"
    odd = custom_id_for("fingerprint with spaces/and:colons" * 4, taken)
    assert CUSTOM_ID.match(odd) and odd.startswith("fp-") and len(odd) <= 64
    assert all(CUSTOM_ID.match(c) for c in taken) and len(taken) == 3


def test_estimate_is_the_prompt_plus_the_answer_budget():
    error = _error("NoMethodError", "undefined method `email' for nil:NilClass")
    params = triage_params(error, _traces(error), [], "claude-haiku-4-5", max_tokens=1024)
    prompt = EstimatingCounter().count(system=params["system"], messages=params["messages"], tools=params["tools"])
    assert estimate_tokens(params) == prompt + 1024 and prompt > 100
    request = triage_request(error.fingerprint, params, set())
    assert request.custom_id == error.fingerprint and request.est_tokens == prompt + 1024 and request.size_bytes > 1000


def test_split_by_token_budget_keeps_order():
    batches = plan_batches([_request(i, tokens=1000) for i in range(10)], token_budget=3000)
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    assert [r.custom_id for b in batches for r in b] == [f"{i:016x}" for i in range(10)]
    assert all(sum(r.est_tokens for r in b) <= 3000 for b in batches)


def test_split_by_request_count_and_bytes():
    assert [len(b) for b in plan_batches([_request(i) for i in range(7)], 10**9, max_requests=3)] == [3, 3, 1]
    by_bytes = plan_batches([_request(i, size=400) for i in range(5)], 10**9, max_bytes=1000)
    assert [len(b) for b in by_bytes] == [2, 2, 1]


def test_a_request_over_the_budget_goes_alone():
    batches = plan_batches([_request(0, 100), _request(1, 5000), _request(2, 100)], token_budget=1000)
    assert [[r.custom_id[-1] for r in b] for b in batches] == [["0"], ["1"], ["2"]]


def test_a_request_over_the_byte_limit_is_a_named_error():
    error = _error("NoMethodError", "x")
    params = triage_params(error, _traces(error), [], "claude-haiku-4-5")
    params["messages"][0]["content"][0]["text"] = "x" * 30_000
    with pytest.raises(BatchPlanError, match=error.fingerprint):
        triage_request(error.fingerprint, params, set(), max_bytes=20_000)
    assert triage_request(error.fingerprint, params, set(), max_bytes=40_000).size_bytes > 30_000


def test_plan_skips_known_errors_and_batches_the_rest():
    known, new = _error("NoMethodError", "undefined method `email' for nil"), _error("KeyError", "key not found: :id")
    research = [ResearchContext(fingerprint=known.fingerprint, prior_analyses=[_prior()], file_digests={"app/a.rb": "h1"}),
                ResearchContext(fingerprint=new.fingerprint)]
    plan = plan_night("run-1", [(known, _traces(known), research[0]), (new, _traces(new), research[1])], "claude-haiku-4-5", 10**6)
    assert list(plan.known) == [known.fingerprint] and plan.known[known.fingerprint].verdict.route == "known"
    assert [r.fingerprint for r in plan.requests] == [new.fingerprint] and len(plan.batches) == 1
    assert plan.requests[0].params["tool_choice"] == {"type": "tool", "name": "submit_triage"} and "1 batch(es)" in plan.note
