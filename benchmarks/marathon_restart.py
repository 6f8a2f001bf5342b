"""A marathon killed mid-investigation (SIGKILL: the process is gone, nothing is raised) resumes from its checkpoint
on another process; what the restart costs is measured against the same marathon uninterrupted.

The API's side lives in this process and outlives the investigation's process, as Anthropic's servers outlive a
worker: the emulated Messages API with its prompt cache (on simulated time, 8 s a call) and the model, which answers
from the request alone (benchmarks/marathon_corpus.py). The investigation runs in a child process, `run_agent` with
NightWatch's default layers, a file-backed event log and checkpoint store (as a night keeps them under
NIGHTWATCH_HOME), talking to the API over a local connection. The child stops when its runner is asked for tool call
`kill_at` and the parent kills it there with SIGKILL: the model call of that iteration is answered and billed, its
tool calls half done, its checkpoint never written. A new child on the same event log and checkpoints resumes from
the newest checkpoint that verifies, a minute later (the prompt cache still warm) and, again, ten minutes later
(expired). Every call the server answered is billed, the killed process's included.

    python benchmarks/marathon_restart.py    # the first marathon killed at tool call 40
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anthropic.types.beta import BetaMessage  # noqa: E402

from benchmarks.marathon_corpus import Marathon, MarathonModel  # noqa: E402
from benchmarks.simulated_api import MODEL, UNLIMITED, WINDOW, BenchmarkAPI, SimClock, check_line  # noqa: E402
from nightwatch.agent.checkpoints import CheckpointStore  # noqa: E402
from nightwatch.agent.definitions import load_definition  # noqa: E402
from nightwatch.agent.loop import LoopConfig, run_agent  # noqa: E402
from nightwatch.agent.metering import usage_of  # noqa: E402
from nightwatch.agent.policy import ContextPolicy  # noqa: E402
from nightwatch.agent.recall import EventLog  # noqa: E402
from nightwatch.agent.tools import ToolRunner, offered_tools  # noqa: E402
from nightwatch.offline.emulated_api import EmulatedAPIError  # noqa: E402
from nightwatch.offline.emulated_cache import PromptCache  # noqa: E402
from nightwatch.pricing import cost_usd  # noqa: E402
from nightwatch.prompts import investigation_message  # noqa: E402

KEY = b"nightwatch-marathon"
KILL_POINT = "KILL-POINT"
RESPEND_LIMIT = 0.05  # of the marathon's uninterrupted cost
RESTART_GAPS_S = (60.0, 600.0)  # simulated seconds from the kill to the new process's first call: the cache warm, expired


# the API's side (this process) --------------------------------------------------------------------------------
@dataclass
class Server:
    """The emulated Messages API for one marathon, served to investigation processes over a local connection."""

    marathon: Marathon
    clock: SimClock = field(default_factory=SimClock)
    billed: list[float] = field(default_factory=list)  # the cost of every call answered, in order

    def __post_init__(self) -> None:
        self.brain = MarathonModel(self.marathon)
        self.api = BenchmarkAPI(self.brain, PromptCache(clock=self.clock), None, self.clock, WINDOW)
        self.listener = Listener(("127.0.0.1", 0), authkey=KEY)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self.listener.address
        return f"{host}:{port}"

    def _accept(self) -> None:
        while True:
            try:
                connection = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: Any) -> None:
        with connection:
            while True:
                try:
                    params = connection.recv()
                except (EOFError, OSError):
                    return
                if params == "now":  # the investigation's clock is the simulated one the prompt cache keeps
                    connection.send(("now", self.clock()))
                    continue
                try:
                    message = self.api.create(**params)
                    self.billed.append(cost_usd(MODEL, usage_of(message)))  # billed, whether the answer arrives or not
                    answer: tuple = ("ok", message.to_dict(mode="json"))
                except EmulatedAPIError as exc:
                    answer = ("error", exc.message, exc.status)
                try:
                    connection.send(answer)
                except OSError:  # the investigation's process is gone
                    return

    def close(self) -> None:
        self.listener.close()


# the investigation's side (a child process) -------------------------------------------------------------------
class RemoteAPI:
    """A model client over the connection: the Messages API's parameters out, its Message (or its error) back."""

    name, offline = "benchmark", False

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.connection = Client((host, int(port)), authkey=KEY)

    def create(self, **params: Any) -> BetaMessage:
        self.connection.send(params)
        answer = self.connection.recv()
        if answer[0] == "error":
            raise EmulatedAPIError(answer[1], answer[2])
        return BetaMessage.model_validate(answer[1])

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        return model, mode

    def now(self) -> float:
        """The server's simulated time, in seconds: what the prompt cache's TTL is counted in."""
        self.connection.send("now")
        return float(self.connection.recv()[1])


@dataclass
class StoppingRunner(ToolRunner):
    """A tool runner that, asked for tool call `stop_at` (counting the calls a resumed run restored), says so on
    stdout and waits there for the kill."""

    stop_at: int = 0

    def run(self, name: str, args: dict[str, Any], iteration: int) -> Any:
        if self.stop_at and len(self.calls) + 1 == self.stop_at:
            print(f"{KILL_POINT} {self.stop_at} iteration {iteration}", flush=True)
            time.sleep(3600)
        return super().run(name, args, iteration)


def child(marathon_file: Path, address: str, home: Path, stop_at: int) -> dict[str, Any]:
    """One investigation process: the marathon with NightWatch's defaults, resuming from `home`'s checkpoints."""
    marathon: Marathon = pickle.loads(marathon_file.read_bytes())
    definition, policy = load_definition("base-analyzer"), ContextPolicy()
    tools = offered_tools(definition.tools, set())  # the benchmarks' nights run no tests
    runner = StoppingRunner(cache=marathon.code, traces=marathon.traces, events=EventLog(home / "events.jsonl"),
                            run_id="marathon-restart", fingerprint=marathon.error.fingerprint, allowed=tools,
                            lean=policy.lean_tool_results, stop_at=stop_at)
    api = RemoteAPI(address)
    config = LoopConfig(model=MODEL, system_prompt=definition.system_prompt, tools=tools,
                        max_iterations=marathon.max_iterations, token_budget=UNLIMITED, policy=policy, agent=definition.name,
                        focus=marathon.error.label, clock=api.now)
    first = investigation_message(marathon.error, marathon.traces, marathon.research, None, policy.cache_ttl)
    outcome = run_agent(api, runner, config, first, checkpoints=CheckpointStore(home / "checkpoints"))
    return {"failure": outcome.failure, "resumed_at": outcome.resumed_at, "iterations": outcome.iterations,
            "tool_calls": len(runner.calls), "model_calls": len(outcome.calls)}


# the parent: run, kill, resume --------------------------------------------------------------------------------
def _spawn(marathon_file: Path, server: Server, home: Path, stop_at: int = 0) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve()), "child", str(marathon_file), server.address, str(home), str(stop_at)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def _finish(process: subprocess.Popen) -> dict[str, Any]:
    out, _ = process.communicate(timeout=1800)
    if process.returncode != 0:
        raise RuntimeError(f"the investigation's process exited with {process.returncode}: {out[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def uninterrupted(marathon: Marathon, marathon_file: Path, home: Path) -> tuple[Server, dict[str, Any]]:
    server = Server(marathon)
    try:
        return server, _finish(_spawn(marathon_file, server, home))
    finally:
        server.close()


def killed_and_resumed(marathon: Marathon, marathon_file: Path, home: Path, kill_at: int, gap_s: float
                       ) -> tuple[Server, dict[str, Any]]:
    """The marathon killed (SIGKILL) at tool call `kill_at`, then resumed `gap_s` later by a new process from its
    checkpoint."""
    server = Server(marathon)
    try:
        process = _spawn(marathon_file, server, home, kill_at)
        said = process.stdout.readline() if process.stdout else ""
        if not said.startswith(KILL_POINT):
            raise RuntimeError(f"the investigation ended before tool call {kill_at}: {said!r}")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        killed = {"signal": -process.returncode, "billed_calls": len(server.billed), "billed_usd": sum(server.billed),
                  "at": said.split(" ", 1)[1].strip()}
        server.clock.gap(gap_s)
        resumed = _finish(_spawn(marathon_file, server, home))
        return server, {"killed": killed, **resumed}
    finally:
        server.close()


def restart_figures(marathon: Marathon, scratch: Path, kill_at: int = 40) -> dict[str, Any]:
    """Spend and needles of the marathon uninterrupted and killed at `kill_at` then resumed, and the re-spend."""
    scratch.mkdir(parents=True, exist_ok=True)
    marathon_file = scratch / "marathon.pickle"
    marathon_file.write_bytes(pickle.dumps(marathon))
    whole, whole_run = uninterrupted(marathon, marathon_file, scratch / "uninterrupted")
    base = sum(whole.billed)
    data: dict[str, Any] = {"marathon": marathon.name, "tool_calls": marathon.calls, "kill_at": kill_at,
                            "uninterrupted": {"cost_usd": round(base, 6), "model_calls": len(whole.billed),
                                              "failure": whole_run["failure"], "needles": whole.brain.needles},
                            "restarts": []}
    for gap in RESTART_GAPS_S:
        again, run = killed_and_resumed(marathon, marathon_file, scratch / f"restarted-{gap:g}", kill_at, gap)
        total = sum(again.billed)
        data["restarts"].append({"gap_s": gap, "cost_usd": round(total, 6), "model_calls": len(again.billed), "failure": run["failure"],
                                 "killed": run["killed"], "resumed_at_iteration": run["resumed_at"], "needles": again.brain.needles,
                                 "respend_usd": round(total - base, 6), "respend_share": round((total - base) / base, 4) if base else None})
    return data


def restart_lines(data: dict[str, Any]) -> list[str]:
    first = data["restarts"][0]
    killed = first["killed"]
    lines = [f"restart: {data['marathon']} ({data['tool_calls']} tool calls, uninterrupted ${data['uninterrupted']['cost_usd']:.4f} in "
             f"{data['uninterrupted']['model_calls']} model calls) killed with signal {killed['signal']} at tool call {data['kill_at']} "
             f"({killed['at']}; {killed['billed_calls']} model calls billed), resumed by a new process from the checkpoint of "
             f"iteration {first['resumed_at_iteration']}:"]
    for again in data["restarts"]:
        answered = sum(1 for s in again["needles"].values() if s != "missing")
        lines.append(f"  {again['gap_s'] / 60:g} min later ({'cache warm' if again['gap_s'] < 300 else 'cache expired'}): "
                     f"${again['cost_usd']:.4f} in {again['model_calls']} model calls, re-spend ${again['respend_usd']:.4f} "
                     f"({again['respend_share']:.1%}), needles {answered}/{len(again['needles'])} answered")
    for again in data["restarts"]:
        when = f"{again['gap_s'] / 60:g} min later"
        missing = sum(1 for s in again["needles"].values() if s == "missing")
        lines.append(check_line(f"re-spend <= {RESPEND_LIMIT:.0%} of the marathon uninterrupted, {when}", again["respend_share"],
                                RESPEND_LIMIT, f"{again['respend_share']:.1%}"))
        lines.append(check_line(f"every needle answered, {when}", missing, 0))
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "child":
        marathon_file, address, home, stop_at = args[1:5]
        print(json.dumps(child(Path(marathon_file), address, Path(home), int(stop_at))), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kill-at", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(args)
    from benchmarks.marathon_corpus import MARATHONS, marathon_corpus

    with tempfile.TemporaryDirectory() as scratch:
        (marathon, _), = marathon_corpus(Path(scratch) / "checkouts", MARATHONS[:1])
        data = restart_figures(marathon, Path(scratch) / "restart", options.kill_at)
    print(json.dumps(data, indent=2) if options.json else "\n".join(restart_lines(data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
