"""What the budgets let the context layers do: the long and marathon corpora of token_efficiency.py, each
investigation run under an investigation profile's limits instead of lifted ones.

    python benchmarks/default_budgets.py              # both profiles, both corpora
    python benchmarks/default_budgets.py --json

A profile is NIGHTWATCH_INVESTIGATION_PROFILE: `standard` (the defaults: 12 turns, 60,000 input-equivalent tokens per
investigation) or `deep` (nightwatch.settings.PROFILES). For each: how many investigations reached their end, how many
the turn limit or the token budget stopped (the loop then asks for the answer), the largest prompt, what each context
layer did (server-side clearings, compactions, the watcher's actions), the needles answered (marathons: facts planted
early and asked last), the input-equivalent tokens spent, and dollars at Sonnet prices. Every layer is on, as a night
runs them (ContextPolicy from the settings' defaults); the API enforces the model's window.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.investigation_corpus import ScriptedModel  # noqa: E402
from benchmarks.long_corpus import long_corpus  # noqa: E402
from benchmarks.marathon_corpus import Marathon, MarathonModel, marathon_corpus  # noqa: E402
from benchmarks.simulated_api import MODEL, WINDOW, BenchmarkAPI, SimClock  # noqa: E402
from nightwatch.agent.budgets import iteration_limit, weighted_tokens  # noqa: E402
from nightwatch.agent.definitions import load_definition  # noqa: E402
from nightwatch.agent.loop import LoopConfig, run_agent  # noqa: E402
from nightwatch.agent.policy import ContextPolicy  # noqa: E402
from nightwatch.agent.recall import EventLog  # noqa: E402
from nightwatch.agent.tools import CodeCache, ToolRunner, offered_tools  # noqa: E402
from nightwatch.offline.emulated_cache import PromptCache  # noqa: E402
from nightwatch.prompts import investigation_message  # noqa: E402
from nightwatch.settings import PROFILES as SETTINGS_PROFILES  # noqa: E402
from nightwatch.settings import Settings  # noqa: E402

PROFILES = ("standard", *SETTINGS_PROFILES)


def limits(profile: str) -> tuple[int, int]:
    """(turns, input-equivalent tokens) an investigation of a complex error gets under `profile`."""
    settings = Settings(investigation_profile=profile)
    definition = load_definition(settings.agent)
    return iteration_limit(definition.max_iterations, "complex", settings.max_iterations), settings.token_budget_per_error


def run_profile(profile: str, items: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
    """Each (error, traces/research source, model) of a corpus through the loop under the profile's limits."""
    turns, tokens = limits(profile)
    policy = ContextPolicy.from_settings(Settings())
    definition = load_definition("base-analyzer")
    tools = offered_tools(definition.tools, set())
    clock = SimClock()
    cache = PromptCache(clock=clock)
    out: dict[str, Any] = {"profile": profile, "turns": turns, "token_budget": tokens, "investigations": 0, "ended": 0,
                           "most_input_equivalent": 0,
                           "stopped_by_turns": 0, "stopped_by_tokens": 0, "peak_prompt": 0, "clearings": 0, "compactions": 0,
                           "watcher": 0, "needles": [0, 0], "input_equivalent": 0, "usd": 0.0}
    for subject, code, brain in items:
        api = BenchmarkAPI(brain, cache, None, clock, WINDOW)
        runner = ToolRunner(cache=code, traces=subject.traces, events=EventLog(), run_id=f"budgets-{profile}",
                            fingerprint=subject.error.fingerprint, allowed=tools, lean=policy.lean_tool_results)
        config = LoopConfig(model=MODEL, system_prompt=definition.system_prompt, tools=tools, max_iterations=turns,
                            token_budget=tokens, policy=policy, agent=definition.name, focus=subject.error.label)
        outcome = run_agent(api, runner, config, investigation_message(subject.error, subject.traces, subject.research, None,
                                                                          policy.cache_ttl))
        _tally(out, outcome, subject, brain)
    return out


def _tally(out: dict[str, Any], outcome: Any, subject: Any, brain: Any) -> None:
    out["investigations"] += 1
    stop = outcome.wrap_reason or ""
    out["stopped_by_turns"] += "iteration limit" in stop
    out["stopped_by_tokens"] += "token budget" in stop
    out["ended"] += not stop
    spent = sum(weighted_tokens(c.usage, MODEL) for c in outcome.calls)  # as the loop's budget counts them
    out["most_input_equivalent"] = max(out["most_input_equivalent"], round(spent))
    out["input_equivalent"] += round(spent)
    for call in outcome.calls:
        u = call.usage
        out["peak_prompt"] = max(out["peak_prompt"], u.input + u.cache_write + u.cache_read)
        out["clearings"] += call.edits_applied
        out["compactions"] += call.compactions
        out["watcher"] += call.watcher_actions
        out["usd"] = round(out["usd"] + call.cost_usd, 4)
    if isinstance(subject, Marathon):
        statuses = [brain.needles.get(n.text, "missing") for n in subject.needles]
        out["needles"][0] += sum(s != "missing" for s in statuses)
        out["needles"][1] += len(statuses)


def corpora(scratch: Path) -> dict[str, list[tuple[Any, Any, Any]]]:
    long = [(script, CodeCache(host), ScriptedModel(script)) for script, host in long_corpus(scratch / "long")]
    marathons = [(m, m.code, MarathonModel(m)) for m, _ in marathon_corpus(scratch / "marathon")]
    return {"long": long, "marathon": marathons}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="nightwatch-budgets-") as scratch:
        for profile in PROFILES:
            for corpus, items in corpora(Path(scratch) / profile).items():  # each run's models and checkouts its own
                results.append({"corpus": corpus, **run_profile(profile, items)})
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    row = "{:<9} {:<9} {:>6} {:>9} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>10} {:>8}"
    print(row.format("corpus", "profile", "turns", "budget", "runs", "ended", "turns!", "tokens!", "peak", "clears",
                     "compact", "watcher", "input-eq", "$"))
    for r in results:
        print(row.format(r["corpus"], r["profile"], r["turns"], f"{r['token_budget']:,}", r["investigations"], r["ended"],
                         r["stopped_by_turns"], r["stopped_by_tokens"], f"{r['peak_prompt']:,}", r["clearings"],
                         r["compactions"], r["watcher"], f"{r['input_equivalent']:,}", f"{r['usd']:.2f}"))
        print(f"{'':<19} the most one investigation spent: {r['most_input_equivalent']:,} input-equivalent tokens"
              + (f"; needles answered {r['needles'][0]}/{r['needles'][1]}" if r["needles"][1] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
