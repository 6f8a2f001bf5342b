"""Token efficiency of an investigation: the same scripted investigations through each strategy.

The corpus (investigation_corpus.py): 30 scripted investigations of the demo's planted defects, 5 to
15 tool calls each over the demo app's real files, each with an early "needle" fact the final answer
needs. Every request goes through the agent loop (nightwatch/agent/loop.py) and the emulated
Messages API (context edits, compaction and prompt caching as documented; one prompt cache per
night), so the strategies differ only in what the client sends:

- naive: the full history, no caching, no context management;
- naive+cache: the same loop with what the SDK documentation tells every user to add, automatic caching
  (one top-level `cache_control`, which marks the last cacheable block of each request);
- original: the original NightWatch (a cache breakpoint on the system prompt; after iteration 6 only
  the first message and the last four are sent);
- nightwatch: every layer at the product's defaults (caching, context editing, compaction, the
  watcher, checkpoints, recall).

Budgets are lifted for every strategy (a script runs to its end), so the comparison is about context.
Dollars are at Sonnet prices with every token kind at its price (input, cache writes, cache reads,
output); the ratios the benchmark checks are in dollars against naive+cache, the baseline a careful
user starts from. Cost-weighted tokens count the input side only: uncached input x1, cache writes
x1.25, cache reads x0.1. The floor bills every new input token of the naive
run once at the base price and re-reads nothing.

The prompt cache runs on simulated time (8 s per model call), so the last lines can price the shared
prefix's TTL both ways: 5 minutes and 1 hour, investigations back to back and 6 minutes apart.

Three corpora: short (the demo, above), long (long_corpus.py: one script per Lobsters eval case, 28-37
tool calls on its checkout) and marathon (marathon_corpus.py: 60-150 tool calls over full checkouts of
Healthchecks and CTFd, three needles each, planted early and asked last). On the marathons the API
enforces the model's 200K window (a 400 `invalid_request_error`, as the API answers), so the naive
loop is shown as it runs: refused at the window (naive, naive+cache), or trimming its oldest turns
to fit (naive+cache, trims); `naive+cache, no window` is what its reads would cost if it could go on,
and the source of the floor. Each layer is measured off from NightWatch and alone where it acts, and
one marathon is killed (SIGKILL) at a tool call and resumed on another process from its checkpoint
(marathon_restart.py).

    python benchmarks/token_efficiency.py                     # the three corpora's tables
    python benchmarks/token_efficiency.py --corpus marathon   # one of them (short, long, marathon; both: short and long)
    python benchmarks/token_efficiency.py --json              # the same figures as one JSON object
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.investigation_corpus import Script, ScriptedModel, corpus  # noqa: E402
from benchmarks.long_corpus import long_corpus  # noqa: E402
from benchmarks.marathon_corpus import Marathon, MarathonModel, marathon_corpus  # noqa: E402
from benchmarks.marathon_restart import restart_figures, restart_lines  # noqa: E402
from benchmarks.simulated_api import (  # noqa: E402
    MODEL,
    UNLIMITED,
    WINDOW,
    BenchmarkAPI,
    SimClock,
    check_line,
    prompt_tokens,
)
from nightwatch.agent.caching import hit_rate  # noqa: E402
from nightwatch.agent.checkpoints import CheckpointStore  # noqa: E402
from nightwatch.agent.definitions import load_definition  # noqa: E402
from nightwatch.agent.loop import LoopConfig, LoopOutcome, run_agent  # noqa: E402
from nightwatch.agent.policy import ContextPolicy  # noqa: E402
from nightwatch.agent.recall import EventLog  # noqa: E402
from nightwatch.agent.tools import CodeCache, ToolRunner, offered_tools  # noqa: E402
from nightwatch.codehosts.local import LocalRepoHost  # noqa: E402
from nightwatch.models import TokenUsage  # noqa: E402
from nightwatch.offline.emulated_cache import PromptCache, prompt_blocks  # noqa: E402
from nightwatch.pricing import cost_usd, price_for  # noqa: E402
from nightwatch.prompts import investigation_message  # noqa: E402
from nightwatch.runtime import DEMO_APP  # noqa: E402


def automatic_caching(params: dict[str, Any]) -> dict[str, Any]:
    """A top-level `cache_control`: the API puts the breakpoint on the last cacheable block of the request."""
    messages = [dict(m) for m in params["messages"]]
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    messages[-1] = {**last, "content": blocks}
    return {**params, "messages": messages}


def original_nightwatch(params: dict[str, Any]) -> dict[str, Any]:
    """System-prompt caching only; from iteration 7 on, the first message and the last four."""
    messages = [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
                if isinstance(m["content"], list) else m for m in params["messages"]]
    if sum(1 for m in messages if m["role"] == "assistant") >= 6:
        messages = [messages[0]] + messages[-4:]
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in params["tools"]]
    return {**params, "messages": messages, "tools": tools}


def trimming(window: int, then: Callable[[dict], dict] | None = None) -> Callable[[dict], dict]:
    """The naive loop at the window, trimmed as the usual client does it: the oldest turns after the first message are
    dropped (an assistant turn with the tool results answering it) until the prompt and `max_tokens` fit."""

    def trim(params: dict[str, Any]) -> dict[str, Any]:
        messages = params["messages"]
        sizes = [prompt_tokens({**params, "tools": None, "system": None, "messages": [m]}) for m in messages]
        total = prompt_tokens({**params, "messages": []}) + sum(sizes)
        cut = 1
        while total + params["max_tokens"] > window and len(messages) - cut > 2:
            total -= sizes[cut] + sizes[cut + 1]
            cut += 2
        trimmed = {**params, "messages": messages[:1] + messages[cut:]}
        return then(trimmed) if then else trimmed

    return trim


# running -----------------------------------------------------------------------------------------
STRATEGIES: dict[str, tuple[ContextPolicy, Callable[[dict], dict] | None]] = {
    "naive": (ContextPolicy.off(), None),
    "naive+cache": (ContextPolicy.off(), automatic_caching),
    "original": (ContextPolicy(context_editing=False, compaction=False, watcher=False, checkpoints=False, lean_tool_results=False),
                 original_nightwatch),
    "nightwatch": (ContextPolicy(), None),
}
# Not a strategy of the comparison: every layer again, in a working context small enough for the demo
# app's files to fill it, so that clearing, the watcher and recall have to act (and what that costs shows).
TIGHT = ContextPolicy(context_budget=12_000, clear_tool_uses_trigger=8_000, clear_tool_uses_keep=3, clear_tool_uses_at_least=2_000)
RECALL = "recall_context"  # a NightWatch layer: the naive and original agents do not have it


@dataclass
class Tally:
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_weighted: float = 0.0
    cost_usd: float = 0.0
    batch_usd: float = 0.0  # the same calls through Message Batches (half of every token's price)
    peak: int = 0
    needles: dict[str, int] = field(default_factory=lambda: {"present": 0, "recalled": 0, "missing": 0})
    edits: int = 0
    cleared: int = 0
    compactions: int = 0
    watcher: int = 0
    calls: int = 0
    floor: int = 0
    scripts: int = 0
    failures: list[str] = field(default_factory=list)  # investigations that ended without an answer, and why
    peaks: list[int] = field(default_factory=list)  # each investigation's largest prompt
    costs: list[float] = field(default_factory=list)  # each investigation's $

    def add(self, outcome: LoopOutcome, needle: str | list[str], sent: list[dict]) -> None:
        self.peaks.append(max((c.usage.input + c.usage.cache_write + c.usage.cache_read for c in outcome.calls), default=0))
        self.costs.append(sum(c.cost_usd for c in outcome.calls))
        for call in outcome.calls:
            u = call.usage
            self.usage = self.usage + u
            self.cost_weighted += u.input + 1.25 * u.cache_write + 0.1 * u.cache_read
            self.cost_usd += call.cost_usd
            self.batch_usd += cost_usd(MODEL, u, batch=True)
            self.peak = max(self.peak, u.input + u.cache_write + u.cache_read)
            self.edits, self.cleared = self.edits + call.edits_applied, self.cleared + call.tokens_cleared
            self.compactions, self.watcher = self.compactions + call.compactions, self.watcher + call.watcher_actions
        self.calls += len(outcome.calls)
        for status in [needle] if isinstance(needle, str) else needle:
            self.needles[status] += 1
        self.floor += new_tokens(sent)
        self.scripts += 1


def new_tokens(sent: list[dict]) -> int:
    """Input tokens each request added to the one before it: every token counted once."""
    total, previous = 0, []
    for params in sent:
        blocks = prompt_blocks(params.get("tools"), params.get("system"), params["messages"])
        same = 0
        while same < min(len(blocks), len(previous)) and blocks[same].digest == previous[same].digest:
            same += 1
        total += sum(b.tokens for b in blocks[same:])
        previous = blocks
    return total


def run(name: str, scripts: list[Script], host: LocalRepoHost | Callable[[Script], LocalRepoHost], scratch: Path,
        policy_override: ContextPolicy | None = None, gap_s: float = 0.0, recall: bool | None = None) -> Tally:
    """One strategy over the scripts, in simulated time: 8 s a model call, `gap_s` idle between investigations.
    `recall`: offer the recall_context tool (default: with context editing, as NightWatch does; the naive and
    original agents have no such tool)."""
    policy, transform = STRATEGIES[name] if name in STRATEGIES else (TIGHT, None)
    policy = policy_override or policy
    clock = SimClock()
    definition = load_definition("base-analyzer")
    offered = policy.context_editing if recall is None else recall
    readable = offered_tools(definition.tools, set())  # the benchmarks' nights run no tests
    tools = readable if offered else [t for t in readable if t != RECALL]
    caches: dict[str, PromptCache] = {}  # one prompt cache (and one code cache) per night
    codes: dict[tuple[str, int], CodeCache] = {}  # a night's code cache per checkout
    tally = Tally()
    for n, script in enumerate(scripts):
        brain = ScriptedModel(script)
        api = BenchmarkAPI(brain, caches.setdefault(script.night, PromptCache(clock=clock)), transform, clock)
        checkout = host(script) if callable(host) else host
        code = codes.setdefault((script.night, id(checkout)), CodeCache(checkout))
        runner = ToolRunner(cache=code, traces=script.traces, events=EventLog(), run_id=f"bench-{name}",
                            fingerprint=script.error.fingerprint, allowed=tools, lean=policy.lean_tool_results)
        config = LoopConfig(model=MODEL, system_prompt=definition.system_prompt, tools=tools, max_iterations=24,
                            token_budget=UNLIMITED, policy=policy, agent=definition.name, focus=script.error.label)
        first = investigation_message(script.error, script.traces, script.research, None, policy.cache_ttl)
        store = CheckpointStore(scratch / name / str(n)) if policy.checkpoints else None
        outcome = run_agent(api, runner, config, first, checkpoints=store)
        if outcome.failure:
            raise RuntimeError(f"{name} {script.name}: {outcome.failure}")
        tally.add(outcome, brain.needle, api.sent)
        clock.gap(gap_s)
    return tally


LAYERS = {"tool results on a diet": "lean_tool_results", "prompt-cache breakpoints": "prompt_caching",
          "context editing": "context_editing", "compaction": "compaction", "watcher": "watcher",
          "recall_context tool": RECALL}


def layer_savings(scripts: list[Script], host: Any, scratch: Path, nightwatch: Tally) -> dict[str, float]:
    """What each layer saves, in $ per investigation: NightWatch with that one layer off, minus NightWatch."""
    base = STRATEGIES["nightwatch"][0]
    out = {}
    for label, switch in LAYERS.items():
        if switch == RECALL:  # the tool, offered in every request, that brings back what was cleared
            without = run("nightwatch", scripts, host, scratch / "without-recall", base, recall=False)
        else:  # the layer off, everything else (the recall tool included) as NightWatch runs it
            without = run("nightwatch", scripts, host, scratch / f"without-{switch}", base.with_(**{switch: False}), recall=True)
        out[label] = (without.cost_usd - nightwatch.cost_usd) / nightwatch.scripts
    return out


def saving_lines(savings: dict[str, float], nightwatch: Tally) -> list[str]:
    per_error = nightwatch.cost_usd / nightwatch.scripts
    lines = [f"what each layer saves ($ per investigation; NightWatch with that layer off, minus NightWatch at ${per_error:.4f}):"]
    lines += [f"  {label:<26} {'+' if saved >= 0 else '-'}${abs(saved):.4f}  ({saved / per_error:+.0%})" for label, saved in savings.items()]
    return lines


def ttl_lines(scripts: list[Script], host: Any, scratch: Path) -> list[str]:
    """The shared prefix's TTL measured: 5 minutes vs 1 hour, with investigations back to back and 6 minutes apart."""
    base = STRATEGIES["nightwatch"][0]
    lines = ["cache TTL of the shared prefix (tools, system prompt), $ per investigation, simulated 8 s per model call:"]
    for gap in (0.0, 360.0):
        cost = {ttl: run("nightwatch", scripts, host, scratch / f"ttl-{ttl}-{gap:g}", base.with_(shared_cache_ttl=ttl), gap)
                for ttl in ("5m", "1h")}
        five, hour = (cost[t].cost_usd / cost[t].scripts for t in ("5m", "1h"))
        label = "back to back" if not gap else f"{gap / 60:g} minutes apart"
        lines.append(f"  investigations {label:<18} 5m ${five:.4f}   1h ${hour:.4f}   ({'1h pays' if hour < five else '5m is cheaper'})")
    return lines


# the marathon corpus ------------------------------------------------------------------------------
REFUSED = ("prompt is too long", "exceed context limit")
# (policy, what the client does to each request, the window the API enforces)
MARATHON_STRATEGIES: dict[str, tuple[ContextPolicy, Callable[[dict], dict] | None, int | None]] = {
    "naive": (ContextPolicy.off(), None, WINDOW),
    "naive+cache": (ContextPolicy.off(), automatic_caching, WINDOW),
    "naive+cache, trims": (ContextPolicy.off(), trimming(WINDOW, automatic_caching), WINDOW),
    "original": (*STRATEGIES["original"], WINDOW),
    "nightwatch": (*STRATEGIES["nightwatch"], WINDOW),
}
UNBOUNDED = "naive+cache, no window"  # not a model one can call: what the naive loop's reads would cost with no window


def run_marathons(label: str, marathons: list[Marathon], scratch: Path, policy: ContextPolicy,
                  transform: Callable[[dict], dict] | None = None, window: int | None = WINDOW, recall: bool | None = None,
                  gap_s: float = 0.0) -> Tally:
    """The marathons of one night through one configuration (`label` names its checkpoints: one per configuration). An
    investigation the API refuses at the window ends there, without an answer: its needles count as missing."""
    clock = SimClock()
    cache = PromptCache(clock=clock)  # one night: one prompt cache
    definition = load_definition("base-analyzer")
    offered = policy.context_editing if recall is None else recall
    readable = offered_tools(definition.tools, set())  # the benchmarks' nights run no tests
    tools = readable if offered else [t for t in readable if t != RECALL]
    tally = Tally()
    for n, marathon in enumerate(marathons):
        brain = MarathonModel(marathon)
        api = BenchmarkAPI(brain, cache, transform, clock, window)
        runner = ToolRunner(cache=marathon.code, traces=marathon.traces, events=EventLog(), run_id=f"marathon-{label}",
                            fingerprint=marathon.error.fingerprint, allowed=tools, lean=policy.lean_tool_results)
        config = LoopConfig(model=MODEL, system_prompt=definition.system_prompt, tools=tools, max_iterations=marathon.max_iterations,
                            token_budget=UNLIMITED, policy=policy, agent=definition.name, focus=marathon.error.label)
        first = investigation_message(marathon.error, marathon.traces, marathon.research, None, policy.cache_ttl)
        store = CheckpointStore(scratch / label / str(n)) if policy.checkpoints else None
        outcome = run_agent(api, runner, config, first, checkpoints=store)
        statuses = [brain.needles.get(needle.text, "missing") for needle in marathon.needles]
        if outcome.failure:
            if not any(r in outcome.failure for r in REFUSED):
                raise RuntimeError(f"{label} {marathon.name}: {outcome.failure}")
            tally.failures.append(f"{marathon.name}: refused after {len(runner.calls)} of {marathon.calls} tool calls "
                                  f"({outcome.failure.split(': ', 2)[-1].split(',')[0]})")
        tally.add(outcome, statuses, api.sent)
        clock.gap(gap_s)
    return tally


MARATHON_LAYERS = {"context editing": "context_editing", "compaction": "compaction", "watcher": "watcher",
                   "recall_context tool": RECALL, "tool results on a diet": "lean_tool_results",
                   "prompt-cache breakpoints": "prompt_caching"}
ACTING = ("context_editing", "compaction", "watcher")  # the layers that act on a long context


def marathon_strategies(marathons: list[Marathon], scratch: Path) -> tuple[dict[str, Tally], Tally]:
    """Every strategy over the marathons, and the naive loop with automatic caching as it would run with no window."""
    tallies = {name: run_marathons(name, marathons, scratch, *config) for name, config in MARATHON_STRATEGIES.items()}
    return tallies, run_marathons(UNBOUNDED, marathons, scratch, ContextPolicy.off(), automatic_caching, window=None)


def marathon_layers(marathons: list[Marathon], scratch: Path) -> tuple[dict[str, Tally], dict[str, Tally]]:
    """Each layer off from NightWatch (the recall tool offered unless it is the layer); and each
    acting layer alone over NightWatch without all three (caching, the diet and recall on): where it acts."""
    base = STRATEGIES["nightwatch"][0]
    off = {label: run_marathons(f"off-{switch}", marathons, scratch, base, recall=False) if switch == RECALL else
           run_marathons(f"off-{switch}", marathons, scratch, base.with_(**{switch: False}), recall=True)
           for label, switch in MARATHON_LAYERS.items()}
    none = base.with_(**{switch: False for switch in ACTING})
    alone = {"none of the three": run_marathons("alone-none", marathons, scratch, none, recall=True)}
    alone |= {label: run_marathons(f"alone-{switch}", marathons, scratch, none.with_(**{switch: True}), recall=True)
              for label, switch in MARATHON_LAYERS.items() if switch in ACTING}
    return off, alone


def marathon_figures(tallies: dict[str, Tally], unbounded: Tally) -> dict[str, Any]:
    """The strategies' figures; the floor is the naive loop's reads with no window (at the window it stops early)."""
    data = figures(tallies)
    data[UNBOUNDED] = figures({UNBOUNDED: unbounded, "naive": unbounded, "nightwatch": tallies["nightwatch"]})[UNBOUNDED]
    data["floor"] = {"cost_weighted_tokens": unbounded.floor, "cost_usd": round(floor_usd({"naive": unbounded, "nightwatch": tallies["nightwatch"]}), 6)}
    for name, t in [*tallies.items(), (UNBOUNDED, unbounded)]:
        data[name]["refused_at_window"] = t.failures
    return data


def marathon_table(tallies: dict[str, Tally], unbounded: Tally, marathons: list[Marathon]) -> str:
    data = marathon_figures(tallies, unbounded)
    n = len(marathons)
    lines = [f"Token efficiency, marathon corpus: {n} investigations of {min(m.calls for m in marathons)}-{max(m.calls for m in marathons)} "
             f"tool calls over full checkouts of Healthchecks and CTFd (evals/apps), {MODEL} prices, a {WINDOW:,}-token window", ""]
    row = "{:<24} {:>13} {:>14} {:>8} {:>11} {:>9} {:>5} {:>16}  {}"
    lines += [row.format("strategy", "billed input", "cost-weighted", "output", "$/marathon", "peak ctx", "hit", "needles p/r/miss",
                         "at the window"), "-" * 122]
    for name, t in [*tallies.items(), (UNBOUNDED, unbounded)]:
        d = data[name]
        needles = f"{d['needles_answered']}/{d['needles_total']} ({t.needles['present']}/{t.needles['recalled']}/{t.needles['missing']})"
        window = f"{len(t.failures)} of {n} refused" if t.failures else ("trims the oldest turns" if "trims" in name else
                                                                       "no window (hypothetical)" if name == UNBOUNDED else "fits")
        lines.append(row.format(name, f"{d['billed_input_tokens']:,}", f"{d['cost_weighted_tokens']:,}", f"{d['output_tokens']:,}",
                                f"${t.cost_usd / t.scripts:.4f}", f"{t.peak:,}", f"{hit_rate(t.usage):.0%}", needles, window))
    lines.append(row.format("floor", "", f"{data['floor']['cost_weighted_tokens']:,}", "", f"${data['floor']['cost_usd'] / n:.4f}", "", "", "", ""))
    nw = tallies["nightwatch"]
    lines += ["", "each marathon (the naive loop's context as it would grow with no window; NightWatch's largest request):"]
    lines += [f"  {m.name:<38} {m.calls:>3} tool calls, needles planted at calls {', '.join(str(x.call) for x in m.needles)}: naive "
              f"{unbounded.peaks[i]:>7,} tokens{' (past the window)' if unbounded.peaks[i] > WINDOW else ''}, nightwatch "
              f"{nw.peaks[i]:>6,} tokens, ${nw.costs[i]:.4f}" for i, m in enumerate(marathons)]
    lines += [f"  naive+cache refused: {f}" for f in tallies["naive+cache"].failures]
    checks = [("nightwatch $ <= 35% of naive+cache as it runs at the window (trims)", nw.cost_usd / tallies["naive+cache, trims"].cost_usd, 0.35),
              ("nightwatch $ <= 35% of naive+cache with no window (hypothetical)", nw.cost_usd / unbounded.cost_usd, 0.35),
              ("nightwatch $ <= 1.3x the floor $", nw.cost_usd / data["floor"]["cost_usd"], 1.3),
              ("every needle answered", nw.needles["missing"], 0),
              (f"peak context <= the window ({WINDOW:,})", nw.peak / WINDOW, 1.0)]
    lines += [""] + [check_line(label, value, limit) for label, value, limit in checks]
    return "\n".join(lines)


def layer_row(label: str, t: Tally, against: Tally, alone: bool = False) -> str:
    """A configuration's $ per marathon, what the layer saves (the layer off minus on), its needles, peak and actions."""
    saved = (against.cost_usd - t.cost_usd if alone else t.cost_usd - against.cost_usd) / t.scripts
    answered = t.needles["present"] + t.needles["recalled"]
    return (f"  {label:<26} ${t.cost_usd / t.scripts:.4f}  {saved:+.4f} ({saved * t.scripts / against.cost_usd:+4.0%})  "
            f"{answered:>2}/{sum(t.needles.values())} needles  peak {t.peak:>7,}  acted: {t.edits} edits, {t.compactions} compactions, "
            f"{t.watcher} watcher actions")


def marathon_layer_lines(off: dict[str, Tally], alone: dict[str, Tally], nightwatch: Tally) -> list[str]:
    per = nightwatch.cost_usd / nightwatch.scripts
    lines = ["", f"each layer off (NightWatch at ${per:.4f} per marathon, {nightwatch.needles['missing']} needles missing; "
                 "columns: $ per marathon with the layer off, what the layer saves):"]
    lines += [layer_row(label, t, nightwatch) for label, t in off.items()]
    none = alone["none of the three"]
    lines += ["", "the acting layers alone, where they act (caching, the diet and recall on; saving against none of the three):"]
    lines += [layer_row(label, t, none, alone=True) for label, t in alone.items()]
    return lines


def marathon_ttl_lines(marathons: list[Marathon], scratch: Path) -> list[str]:
    base = STRATEGIES["nightwatch"][0]
    lines = ["", "cache TTL of the shared prefix, $ per marathon:"]
    for gap in (0.0, 360.0):
        five, hour = (run_marathons(f"ttl-{ttl}-{gap:g}", marathons, scratch, base.with_(shared_cache_ttl=ttl), gap_s=gap)
                      for ttl in ("5m", "1h"))
        label = "back to back" if not gap else f"{gap / 60:g} minutes apart"
        lines.append(f"  marathons {label:<18} 5m ${five.cost_usd / five.scripts:.4f}   1h ${hour.cost_usd / hour.scripts:.4f}   "
                     f"({'1h pays' if hour.cost_usd < five.cost_usd else '5m is cheaper'})")
    return lines


# output ------------------------------------------------------------------------------------------
def figures(tallies: dict[str, Tally]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, t in tallies.items():
        out[name] = {"cost_weighted_tokens": round(t.cost_weighted), "billed_input_tokens": t.usage.input + t.usage.cache_write + t.usage.cache_read,
                     "output_tokens": t.usage.output, "peak_context_tokens": t.peak,
                     "needles_answered": t.needles["present"] + t.needles["recalled"], "needles_total": sum(t.needles.values()),
                     "cost_usd": round(t.cost_usd, 6), "cost_usd_batch": round(t.batch_usd, 6)}
    out["floor"] = {"cost_weighted_tokens": tallies["naive"].floor, "cost_usd": round(floor_usd(tallies), 6)}
    return out


def floor_usd(tallies: dict[str, Tally]) -> float:
    """The floor in dollars: every new input token of the naive loop's requests billed once at the input price, plus
    NightWatch's own output."""
    nw, price = tallies["nightwatch"], price_for(MODEL)
    return (tallies["naive"].floor * price.input + nw.usage.output * price.output) / 1_000_000


def table(tallies: dict[str, Tally], tight: Tally | None, scripts: list[Script], corpus_name: str = "short",
          limits: tuple[float, float] = (0.90, 1.5)) -> str:
    data = figures(tallies)
    where = "over the demo app" if corpus_name == "short" else "over real-application checkouts (evals/lobsters-*)"
    lines = [f"Token efficiency, {corpus_name} corpus: {len(scripts)} scripted investigations {where} "
             f"({min(s.calls for s in scripts)}-{max(s.calls for s in scripts)} tool calls), {MODEL} prices, 5-minute cache", ""]
    row = "{:<12} {:>13} {:>14} {:>9} {:>10} {:>11} {:>9} {:>7} {:>16}"
    lines += [row.format("strategy", "billed input", "cost-weighted", "output", "$/error", "batch $/err", "peak ctx", "hit",
                         "needles p/r/miss"), "-" * 108]
    for name, t in tallies.items():
        d = data[name]
        needles = f"{d['needles_answered']}/{d['needles_total']} ({t.needles['present']}/{t.needles['recalled']}/{t.needles['missing']})"
        lines.append(row.format(name, f"{d['billed_input_tokens']:,}", f"{d['cost_weighted_tokens']:,}", f"{d['output_tokens']:,}",
                                f"${t.cost_usd / t.scripts:.4f}", f"${t.batch_usd / t.scripts:.4f}", f"{t.peak:,}",
                                f"{hit_rate(t.usage):.0%}", needles))
    careful = tallies["naive+cache"]
    floor = data["floor"]["cost_usd"]
    lines.append(row.format("floor", "", f"{data['floor']['cost_weighted_tokens']:,}", "", f"${floor / careful.scripts:.4f}",
                            "", "", "", ""))
    lines.append(f"  floor $ (each new input token of the naive loop billed once, plus NightWatch's output) = "
                 f"{floor / careful.cost_usd:.2f} of naive+cache $: the least the naive loop's reads can cost; only a loop "
                 "that is shown less (tool results on a diet) goes below it")
    nw, policy = tallies["nightwatch"], STRATEGIES["nightwatch"][0]
    shown = [("nightwatch", nw)] + ([("nightwatch-tight", tight)] if tight else [])
    lines += ["", "layers that acted:"] + [
        f"  {name:<17} {t.calls} calls, {t.edits} context edits ({t.cleared:,} tokens cleared), {t.compactions} compactions, "
        f"{t.watcher} watcher actions, needles {t.needles['present']} present / {t.needles['recalled']} recalled / {t.needles['missing']} missing"
        for name, t in shown]
    if tight:
        lines += [f"  nightwatch-tight: every layer in a {TIGHT.context_budget:,}-token working context: {tight.cost_weighted:,.0f} "
                  f"cost-weighted tokens, ${tight.cost_usd / tight.scripts:.4f}/error, peak {tight.peak:,} "
                  f"(limit {TIGHT.watcher_limit:,}); not part of the comparison"]
    lines.append("")
    checks = [(f"nightwatch $ <= {limits[0]:.0%} of naive+cache $", nw.cost_usd / careful.cost_usd, limits[0]),
              (f"nightwatch <= {limits[1]:g}x the floor", nw.cost_weighted / tallies["naive"].floor, limits[1]),
              ("nightwatch <= 60% of original", nw.cost_weighted / tallies["original"].cost_weighted, 0.60),
              ("every needle answered", nw.needles["missing"], 0),
              (f"peak context <= window minus reserve ({policy.watcher_limit:,})", nw.peak / policy.watcher_limit, 1.0)]
    lines += [check_line(label, value, limit) for label, value, limit in checks]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--corpus", choices=("short", "long", "marathon", "both", "all"), default="all",
                        help="which corpus to run (both: short and long; all: the three)")
    parser.add_argument("--kill-at", type=int, default=40, help="the marathon's restart: the tool call its process is killed at")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        if args.corpus in ("short", "both", "all"):
            host = LocalRepoHost(DEMO_APP)
            scripts = corpus(host)
            short = Path(scratch) / "short"  # checkpoints of one corpus must never resume the other's scripts
            tallies = {name: run(name, scripts, host, short) for name in STRATEGIES}
            results["short"] = figures(tallies)
            savings = layer_savings(scripts, host, short, tallies["nightwatch"])
            results["short"]["layer_savings_usd"] = {k: round(v, 6) for k, v in savings.items()}
            if not args.json:
                print(table(tallies, run("nightwatch-tight", scripts, host, short), scripts))
                print("\n".join(saving_lines(savings, tallies["nightwatch"])))
                print("\n".join(ttl_lines(scripts, host, short)) + "\n")
        if args.corpus in ("long", "both", "all"):
            pairs = long_corpus(Path(scratch) / "checkouts")
            hosts = {script.name: host for script, host in pairs}
            scripts = [script for script, _ in pairs]
            tallies = {name: run(name, scripts, lambda s: hosts[s.name], Path(scratch) / "long") for name in STRATEGIES}
            results["long"] = figures(tallies)
            savings = layer_savings(scripts, lambda s: hosts[s.name], Path(scratch) / "long", tallies["nightwatch"])
            results["long"]["layer_savings_usd"] = {k: round(v, 6) for k, v in savings.items()}
            if not args.json:
                print(table(tallies, None, scripts, "long", limits=(0.50, 1.5)))
                print("\n".join(saving_lines(savings, tallies["nightwatch"])))
                print("\n".join(ttl_lines(scripts, lambda s: hosts[s.name], Path(scratch) / "long")))
        if args.corpus in ("marathon", "all"):
            results["marathon"] = marathon_section(Path(scratch), args.kill_at, quiet=args.json)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def marathon_section(scratch: Path, kill_at: int, quiet: bool) -> dict[str, Any]:
    """The marathon corpus: the strategies, each layer on and off, the TTL of the shared prefix, and the restart."""
    marathons = [m for m, _ in marathon_corpus(scratch / "marathon-checkouts")]
    tallies, unbounded = marathon_strategies(marathons, scratch / "marathon")
    off, alone = marathon_layers(marathons, scratch / "marathon")
    restart = restart_figures(marathons[0], scratch / "marathon-restart", kill_at)
    data = marathon_figures(tallies, unbounded)
    data["layers_off_usd_per_marathon"] = {label: round(t.cost_usd / t.scripts, 6) for label, t in off.items()}
    data["layers_alone_usd_per_marathon"] = {label: round(t.cost_usd / t.scripts, 6) for label, t in alone.items()}
    data["layers_needles_answered"] = {label: t.needles["present"] + t.needles["recalled"] for label, t in {**off, **alone}.items()}
    data["restart"] = restart
    if not quiet:
        print(marathon_table(tallies, unbounded, marathons))
        print("\n".join(marathon_layer_lines(off, alone, tallies["nightwatch"])))
        print("\n".join(marathon_ttl_lines(marathons, scratch / "marathon")))
        print("\n" + "\n".join(restart_lines(restart)))
    return data


if __name__ == "__main__":
    raise SystemExit(main())
