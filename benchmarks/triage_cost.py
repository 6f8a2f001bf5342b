"""Triage cost on a 200-error night: batch vs direct vs investigating everything, and direct wall time.

The corpus is the demo night scaled to `--errors` (default 200), deterministically: the demo's own
27 selected errors as they are (new this night), then, of every 20 more: 7 recurring errors already in
the knowledge base with a confirmed fix and unchanged code, 2 recurring errors whose cited files
changed since (so triage sees them again), and 11 transient noise errors (timeouts, connection
failures, deadlocks), each on another transaction. Every model call goes through the real anthropic SDK to the fake
API (tests/fakes), answered by the offline model and priced with the price table as the model named
in the request (triage: settings.triage_model, investigation: settings.model).

- batch triage: the night's triage requests as Message Batches (the batch path of the triage flow)
- direct triage: the same requests as direct calls
- investigate everything: the agent on every error, no triage, no context management (strategy (a),
  "naive", of benchmarks/token_efficiency.py: `ContextPolicy.off()`)
- routed night: batch triage + the agent, with a scheduled night's context policy, on the errors
  triage routed deep
- wall time: the triage subflow in interactive mode (Prefect tasks within the `anthropic-api`
  concurrency limit) over `--wall-errors` requests against the fake with 1 s latency, at 1, 4, 16

    python benchmarks/triage_cost.py [--errors 200] [--wall-errors 96] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
NAMESPACES = ["admin", "partner", "mobile", "legacy", "internal", "storefront", "wholesale", "kiosk", "marketplace", "support"]
NOISE = [("Net::ReadTimeout", "Net::ReadTimeout with #<TCPSocket:(closed)>"), ("Redis::TimeoutError", "Connection timed out"),
         ("Faraday::ConnectionFailed", "Failed to open TCP connection to api.shipping.test:443 (ECONNREFUSED)"),
         ("ActiveRecord::ConnectionTimeoutError", "could not obtain a connection from the pool within 5.000 seconds"),
         ("ActiveRecord::Deadlocked", "Mysql2::Error: Deadlock found when trying to get lock"),
         ("Rack::Timeout::RequestTimeoutException", "Request waited 12ms, then ran for longer than 15000ms")]


# the corpus ----------------------------------------------------------------------------------
def demo_night(home: Path):
    """The demo's selected errors with their traces and research, computed with the core (no Prefect)."""
    from nightwatch.ignore import load_ignore_rules
    from nightwatch.models import Window
    from nightwatch.research import pr_lookback, research_error
    from nightwatch.runtime import DEMO_IGNORE, build_runtime
    from nightwatch.selection import select_errors
    from nightwatch.settings import Settings

    runtime = build_runtime(Settings(home=home), UNTIL)
    window = Window.ending_at(UNTIL, timedelta(hours=24))
    selected = select_errors(runtime.source, window, load_ignore_rules(DEMO_IGNORE), 200, UNTIL).selected
    prs = runtime.host.recent_merged_prs(since=pr_lookback(UNTIL))
    items = []
    for error in selected:
        traces = runtime.source.fetch_traces(error, window)
        items.append((error, traces, research_error(error, traces, runtime.host, [], prs)))
    return runtime, items


def variant(item, k: int, rng: random.Random, error_class: str | None = None, message: str | None = None):
    """The same defect (or noise) on another transaction: a new fingerprint, the same evidence."""
    error, traces, research = item
    parts = error.transaction.split("/")
    transaction = "/".join(parts[:1] + [f"{NAMESPACES[k % len(NAMESPACES)]}{'_' * (k // len(NAMESPACES))}"] + parts[1:])
    copy = error.model_copy(update={"transaction": transaction, "occurrences": rng.randint(3, 900),
                                    "error_class": error_class or error.error_class, "message": message or error.message})
    copy = type(error).model_validate(copy.model_dump())
    return copy, traces.model_copy(update={"fingerprint": copy.fingerprint}), research.model_copy(update={"fingerprint": copy.fingerprint})


def with_prior(item, files_changed: bool):
    """A recurring error: the knowledge base has a high-confidence, fix-confirmed analysis of it."""
    from nightwatch.models import PriorAnalysis

    error, traces, research = item
    hashes = dict(research.file_digests) or {"app/models/unknown.rb": "0"}
    if files_changed:
        hashes = {path: "0" * 64 for path in hashes}
    prior = PriorAnalysis(fingerprint=error.fingerprint, error_class=error.error_class, transaction=error.transaction,
                          root_cause="seen before; fixed by a merged change", fix_confidence="high", has_fix=True,
                          summary="Fixed last week.", match_score=0.95, source_file=f"errors/{error.fingerprint}.md",
                          first_detected="2026-11-01", file_hashes=hashes, fix_confirmed=True)
    return error, traces, research.model_copy(update={"prior_analyses": [prior]})


MIX = ["known"] * 7 + ["changed"] * 2 + ["noise"] * 11  # of every 20 errors added to the demo's own


def corpus(items, size: int):
    """Demo errors as they are, then recurring errors (known; cited files changed) and transient noise."""
    rng = random.Random(20261121)
    code_bugs = [it for it in items if it[1].in_app_frames and not any(n in it[0].error_class for n, _ in NOISE)]
    transient = [it for it in items if any(n in it[0].error_class for n, _ in NOISE)] or items
    out = list(items[:size])
    for k in range(1, size - len(out) + 1):
        kind = MIX[k % len(MIX)]
        if kind == "noise":
            cls, message = NOISE[k % len(NOISE)]
            out.append(variant(rng.choice(transient), k, rng, cls, message))
        else:
            out.append(with_prior(variant(rng.choice(code_bugs), k, rng), files_changed=kind == "changed"))
    return out


# cost ----------------------------------------------------------------------------------------
def batch_triage(fake, items, home: Path, model: str):
    from nightwatch.triage.backends import AnthropicBatches
    from nightwatch.triage.batch import PollPolicy, collect, submit_or_resume, wait_for_batches
    from nightwatch.triage.ledger import LedgerStore
    from nightwatch.triage.plan import plan_night

    backend = AnthropicBatches(sdk(fake))
    plan = plan_night("bench-batch", items, model, 5_000_000)
    store = LedgerStore(home / "batches")
    ledger = submit_or_resume(backend, store, "bench", "bench-batch", plan.batches)
    ledger = wait_for_batches(backend, store, ledger, PollPolicy(initial_s=0.1, max_s=0.5, hold_s=None, deadline_s=3600))
    ledger = collect(backend, store, "bench", "bench-batch", model)
    calls = [o.call for o in ledger.outcomes.values()] + [f.wasted for f in ledger.fallbacks.values() if f.wasted]
    verdicts = {fp: o.verdict for fp, o in (plan.known | ledger.outcomes).items()}
    return calls, verdicts, ledger


def direct_triage(fake, items, model: str):
    from nightwatch.agent.client import AnthropicModelClient
    from nightwatch.triage.verdict import known_prior, triage_direct, triage_params

    client = AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=2)
    todo = [(e, triage_params(e, t, r.prior_analyses, model)) for e, t, r in items if known_prior(r.prior_analyses, r.file_digests)[0] is None]
    with ThreadPoolExecutor(8) as pool:
        return [call for _, call in pool.map(lambda job: triage_direct(client, job[1], "bench-direct", job[0].fingerprint), todo)]


def investigate(fake, runtime, items, naive: bool, verdicts=None, workers: int = 4):
    from nightwatch.agent.client import AnthropicModelClient
    from nightwatch.agent.definitions import load_definition
    from nightwatch.agent.policy import ContextPolicy
    from nightwatch.agent.recall import EventLog
    from nightwatch.agent.tools import CodeCache
    from nightwatch.investigate import AgentKit, Investigation, investigate_error

    client = AnthropicModelClient(fake.api_key, base_url=fake.url, max_retries=2)
    definition, cache, events = load_definition("base-analyzer"), CodeCache(runtime.host), EventLog()
    policy = ContextPolicy.off() if naive else ContextPolicy.from_settings(runtime.settings)

    def one(item):
        error, traces, research = item
        subject = Investigation("bench-naive" if naive else "bench-routed", error, traces, research,
                                (verdicts or {}).get(error.fingerprint))
        return investigate_error(subject, AgentKit(definition=definition, model=runtime.settings.model, client=client,
                                                   cache=cache if not naive else CodeCache(runtime.host), events=events,
                                                   max_iterations=runtime.settings.max_iterations,
                                                   token_budget=runtime.settings.token_budget_per_error, policy=policy))

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, items))


def sdk(fake):
    import anthropic

    return anthropic.Anthropic(api_key=fake.api_key, base_url=fake.url, max_retries=2)


# wall time -----------------------------------------------------------------------------------
def wall_times(items, home: Path, concurrencies: list[int]) -> dict[str, float]:
    """The triage subflow, interactive, one night per concurrency (distinct windows: nothing cached)."""
    from nightwatch.flows.triage import triage_flow
    from nightwatch.tasks.api_limits import API_LIMIT, ensure_api_limit
    from nightwatch.tasks.context import NightRequest, new_context, open_night, runtime
    from prefect.client.orchestration import get_client

    from nightwatch.settings import Settings
    from tests.fakes.anthropic_batches import FakeAnthropicBatches

    out = {}
    with FakeAnthropicBatches(latency_s=1.0) as fake:
        os.environ.update({"ANTHROPIC_API_KEY": fake.api_key, "ANTHROPIC_BASE_URL": fake.url})
        for i, n in enumerate([2] + concurrencies):  # the first, unrecorded night warms up Prefect and the clients
            batch = items if i else items[:2]
            settings = Settings(home=home, api_concurrency=n, max_errors=len(batch), max_issues=0)
            ensure_api_limit(n)
            with get_client(sync_client=True) as client:
                from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

                client.update_global_concurrency_limit(API_LIMIT, GlobalConcurrencyLimitUpdate(limit=n))
            ctx = new_context(settings, NightRequest(dry_run=True), UNTIL + timedelta(days=i + 1), f"wall{n:04d}")
            with open_night(ctx, settings):
                runtime(ctx)  # build clients and the demo checkout before the clock starts
                started = time.perf_counter()
                run = triage_flow(ctx, [e for e, _, _ in batch], [t for _, t, _ in batch], [r for _, _, r in batch])
            if i:
                out[str(n)] = round(time.perf_counter() - started, 2)
            assert {o.verdict.via for o in run.outcomes} == {"direct"}, "every wall-time request must be a direct call"
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            os.environ.pop(name, None)
    return out


# report --------------------------------------------------------------------------------------
def total(calls) -> tuple[float, int]:
    return round(sum(c.cost_usd for c in calls), 6), sum(c.usage.total for c in calls)


def table(figures: dict, tokens: dict, routes: dict, size: int, wall_n: int) -> str:
    rows = [("batch triage", figures["batch_cost_usd"], tokens["batch"]), ("direct triage", figures["direct_cost_usd"], tokens["direct"]),
            ("investigate everything", figures["investigate_all_cost_usd"], tokens["investigate_all"]),
            ("routed night (batch triage + deep)", figures["routed_night_cost_usd"], tokens["routed"])]
    lines = [f"Triage cost on a {size}-error night ({', '.join(f'{n} {r}' for r, n in sorted(routes.items()))})", "",
             f"{'strategy':<36} {'cost':>10} {'tokens':>12}", "-" * 60]
    lines += [f"{name:<36} ${cost:>9.4f} {tok:>12,}" for name, cost, tok in rows]
    batch_ratio = figures["batch_cost_usd"] / figures["direct_cost_usd"]
    routed_ratio = figures["routed_night_cost_usd"] / figures["investigate_all_cost_usd"]
    wall = figures["wall_s"]
    speedup = wall["1"] / wall["16"]
    lines += ["", f"batch / direct: {batch_ratio:.0%} (target <= 50%)",
              f"routed night / investigate everything: {routed_ratio:.1%} (target <= 20%)", "",
              f"direct triage wall time, {wall_n} requests, fake API with 1 s latency:"]
    lines += [f"  {n:>2} concurrent: {wall[n]:>7.2f} s" for n in ("1", "4", "16")]
    lines += [f"  16-way is {speedup:.1f}x faster than 1-way (target >= 12x)"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", type=int, default=200)
    parser.add_argument("--wall-errors", type=int, default=96)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nightwatch-triage-bench-") as tmp:
        home = Path(tmp)
        os.environ["NIGHTWATCH_HOME"] = str(home)
        from nightwatch import environment

        environment.configure(home)
        figures, tokens, routes, wall_n = measure(home, args.errors, args.wall_errors)
    print(json.dumps(figures) if args.json else table(figures, tokens, routes, args.errors, wall_n))


def measure(home: Path, size: int, wall_errors: int):
    runtime, demo = demo_night(home)
    items = corpus(demo, size)
    figures, tokens, verdicts = costs(runtime, items, home)
    gc.collect()  # the cost runs' objects are gone before the clock starts
    needs_call = [it for it in items if verdicts[it[0].fingerprint].route != "known"][:wall_errors]
    figures["wall_s"] = wall_times(needs_call, home, [1, 4, 16])
    return figures, tokens, Counter(v.route for v in verdicts.values()), len(needs_call)


def costs(runtime, items, home: Path):
    """Batch and direct triage, everything investigated, and the routed night: costs and tokens."""
    from tests.fakes.anthropic_batches import FakeAnthropicBatches

    with FakeAnthropicBatches(processing_s=0.5) as fake:
        batch_calls, verdicts, _ = batch_triage(fake, items, home, runtime.settings.triage_model)
        direct_calls = direct_triage(fake, items, runtime.settings.triage_model)
        everything = investigate(fake, runtime, items, naive=True)
        deep = [it for it in items if verdicts[it[0].fingerprint].route == "deep"]
        routed = investigate(fake, runtime, deep, naive=False, verdicts=verdicts)
    (batch_cost, batch_tok), (direct_cost, direct_tok) = total(batch_calls), total(direct_calls)
    naive_cost, naive_tok = total([c for r in everything for c in r.model_calls])
    deep_cost, deep_tok = total([c for r in routed for c in r.model_calls])
    figures = {"batch_cost_usd": batch_cost, "direct_cost_usd": direct_cost, "investigate_all_cost_usd": naive_cost,
               "routed_night_cost_usd": round(batch_cost + deep_cost, 6)}
    tokens = {"batch": batch_tok, "direct": direct_tok, "investigate_all": naive_tok, "routed": batch_tok + deep_tok}
    return figures, tokens, verdicts


if __name__ == "__main__":
    main()
