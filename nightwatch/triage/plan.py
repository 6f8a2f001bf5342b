"""Batching by estimated cost: estimate each triage request, then split the
night's requests into Message Batches that stay within the API's limits and a token budget.

The estimate is taken before anything is sent: the calibrated offline counter for the prompt plus
`max_tokens` for the answer, an upper bound, so a batch never costs more than its budget says.
Requests keep their order; a request larger than the whole budget cannot be split and goes alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import Field

from nightwatch.models import ErrorGroup, Model, TraceData
from nightwatch.research import ResearchContext
from nightwatch.tokens import EstimatingCounter, TokenCounter
from nightwatch.triage.backends import CUSTOM_ID, MAX_BYTES, MAX_REQUESTS
from nightwatch.triage.verdict import TriageOutcome, known_prior, route, triage_params

ENVELOPE_BYTES = 64  # `{"requests": [...]}` and the commas between requests


class BatchPlanError(ValueError):
    """A request that no batch can carry (over the API's body limit on its own)."""


class TriageRequest(Model):
    fingerprint: str
    custom_id: str
    params: dict[str, Any]
    est_tokens: int
    size_bytes: int

    def batch_request(self) -> dict[str, Any]:
        return {"custom_id": self.custom_id, "params": self.params}


def custom_id_for(fingerprint: str, taken: set[str]) -> str:
    """The fingerprint itself when it is a valid custom_id (16 hex chars always are), else a digest of it."""
    base = fingerprint if CUSTOM_ID.match(fingerprint) else "fp-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base[:58]}-{n}"
    taken.add(candidate)
    return candidate


def estimate_tokens(params: dict[str, Any], counter: TokenCounter | None = None) -> int:
    """Prompt tokens (estimated) plus the most the answer may cost."""
    counter = counter or EstimatingCounter()
    prompt = counter.count(system=params.get("system"), messages=params["messages"], tools=params.get("tools"))
    return prompt + int(params.get("max_tokens", 0))


def triage_request(fingerprint: str, params: dict[str, Any], taken: set[str], counter: TokenCounter | None = None,
                   max_bytes: int = MAX_BYTES) -> TriageRequest:
    custom_id = custom_id_for(fingerprint, taken)
    size = len(json.dumps({"custom_id": custom_id, "params": params}).encode())
    if size + ENVELOPE_BYTES > max_bytes:
        raise BatchPlanError(f"the triage request of {fingerprint} is {size:,} bytes, over the {max_bytes:,}-byte batch limit")
    return TriageRequest(fingerprint=fingerprint, custom_id=custom_id, params=params, est_tokens=estimate_tokens(params, counter),
                         size_bytes=size)


def plan_batches(requests: list[TriageRequest], token_budget: int, max_requests: int = MAX_REQUESTS,
                 max_bytes: int = MAX_BYTES) -> list[list[TriageRequest]]:
    """Split in order: a new batch starts when the next request would break a limit or the budget."""
    batches: list[list[TriageRequest]] = []
    current: list[TriageRequest] = []
    tokens = size = 0
    for request in requests:
        fits = (len(current) < max_requests and size + request.size_bytes + 1 <= max_bytes - ENVELOPE_BYTES
                and tokens + request.est_tokens <= token_budget)
        if current and not fits:
            batches.append(current)
            current, tokens, size = [], 0, 0
        current.append(request)
        tokens, size = tokens + request.est_tokens, size + request.size_bytes + 1
    return batches + ([current] if current else [])


def describe_plan(batches: list[list[TriageRequest]], token_budget: int) -> str:
    sizes = ", ".join(f"{len(b)} requests ~{sum(r.est_tokens for r in b):,} tokens" for b in batches)
    return f"{len(batches)} batch(es) within {token_budget:,} estimated tokens each: {sizes}"


class TriagePlan(Model):
    """A night's triage before anything is sent: known answers, and the rest split into batches."""

    known: dict[str, TriageOutcome] = Field(default_factory=dict)
    batches: list[list[TriageRequest]] = Field(default_factory=list)
    note: str = ""

    @property
    def requests(self) -> list[TriageRequest]:
        return [r for batch in self.batches for r in batch]


def plan_night(run_id: str, items: list[tuple[ErrorGroup, TraceData, ResearchContext]], model: str, token_budget: int,
               counter: TokenCounter | None = None) -> TriagePlan:
    """Known answers skip the model; every other error gets one request, estimated and batched."""
    known: dict[str, TriageOutcome] = {}
    requests: list[TriageRequest] = []
    taken: set[str] = set()
    for error, traces, research in items:
        prior, why = known_prior(research.prior_analyses, research.file_digests, research.regression)
        if prior is not None:
            known[error.fingerprint] = TriageOutcome(run_id=run_id, verdict=route(error.fingerprint, None, "knowledge", prior, why))
            continue
        params = triage_params(error, traces, research.prior_analyses, model)
        requests.append(triage_request(error.fingerprint, params, taken, counter))
    batches = plan_batches(requests, token_budget)
    return TriagePlan(known=known, batches=batches, note=describe_plan(batches, token_budget) if batches else "")
