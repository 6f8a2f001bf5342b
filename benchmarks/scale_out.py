"""A 40-error night on 1 and on 2 Prefect workers, the model answering in 1 s: what a second worker buys.

Everything runs as a platform team runs it: a real `prefect server`, `make deploy`'s script, process workers
(`prefect worker start`) sharing NIGHTWATCH_HOME, and the `manual` deployment run through the API. The model
is the fake Messages API on loopback with a fixed latency per request, so the wall time is the night's own
shape (triage, investigations, their concurrency limits), not CPU or network noise. Three columns, run one
after the other in one process:

- 1 worker: the night as deployed;
- 2 workers: the same night with a second worker polling the pool;
- 1 worker, 2x slots: one worker, the investigations' global concurrency limit doubled.

For each: wall time from `deployment run` to the flow run's end, model requests, and the floor those
requests put under the night (investigation requests x latency / slots, as if every slot were always busy).

    python benchmarks/scale_out.py [--errors 40] [--latency 1.0] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nightwatch.settings import DEMO_DIR, Settings  # noqa: E402
from tests.fakes.anthropic import FakeAnthropic, anthropic_env  # noqa: E402
from tests.fakes.http import Reply, Request  # noqa: E402
from tests.prefect_processes import deploy, prefect_server, run_deployment, wait_terminal, worker  # noqa: E402

UNTIL = "2026-11-21T06:00:00+00:00"


class SlowModel(FakeAnthropic):
    """The fake Messages API, every request answered after `latency_s`."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s

    def _messages(self, req: Request) -> Reply:
        time.sleep(self.latency_s)
        return super()._messages(req)


def wide_export(path: Path, copies: int) -> Path:
    """The demo export, its errors repeated under `copies` sets of transaction names (each copy is new errors
    with the same code behind them), so a night has as many errors to choose from as the benchmark needs."""
    text = (DEMO_DIR / "nerdgraph_export.json").read_text()
    base = json.loads(text)
    for n in range(2, copies + 1):
        copy = json.loads(text.replace('"Controller/', f'"Controller/shard{n}/'))
        base["errors"]["data"]["actor"]["account"]["nrql"]["results"] += copy["errors"]["data"]["actor"]["account"]["nrql"]["results"]
        base["details"] += copy["details"]
    path.write_text(json.dumps(base))
    return path


def wait_started(workers: list) -> None:
    deadline = time.monotonic() + 90
    while not all("started!" in w.log.read_text() for w in workers):
        if time.monotonic() > deadline:
            sys.exit("workers did not start:\n" + "\n".join(w.log.read_text()[-1500:] for w in workers))
        time.sleep(0.5)


def column(name: str, count: int, extra: dict[str, str], env: dict[str, str], model: SlowModel, work: Path,
           errors: int) -> dict:
    folder = work / name.replace(" ", "-").replace(",", "")
    night_env = {**env, **anthropic_env(model), "NIGHTWATCH_HOME": str(folder / "shared-home"),
                 "NIGHTWATCH_ERRORS_FILE": str(work / "export.json"), "NIGHTWATCH_MAX_ERRORS": str(errors),
                 "NIGHTWATCH_MAX_ISSUES": "0", **extra}
    before = len(model.message_bodies())
    with contextlib.ExitStack() as stack:
        procs = [stack.enter_context(worker(night_env, folder / f"worker-{i + 1}")) for i in range(count)]
        wait_started(procs)
        started = time.perf_counter()
        run_id = run_deployment(env, "nightwatch/manual", f"until={UNTIL}", f"max_errors={errors}")
        run = wait_terminal(env, run_id, procs, timeout_s=1800)
        wall = time.perf_counter() - started
        ran_on = [w.log.name.removesuffix(".log") for w in procs if run_id in w.log.read_text()]
    bodies = model.message_bodies()[before:]
    deep = sum(1 for b in bodies if any(t.get("name") == "read_file" for t in b.get("tools", [])))
    slots = int(extra.get("NIGHTWATCH_ANALYSIS_CONCURRENCY", Settings().analysis_concurrency))
    return {"column": name, "workers": count, "state": run["state"]["type"], "wall_s": round(wall, 1),
            "run_s": round(run.get("total_run_time") or 0.0, 1), "requests": len(bodies), "investigation_requests": deep,
            "slots": slots, "floor_s": round(deep * model.latency_s / slots, 1), "ran_on": ran_on}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", type=int, default=40)
    parser.add_argument("--latency", type=float, default=1.0, help="Seconds the fake model takes per request.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    slots = Settings().analysis_concurrency
    columns = [("1 worker", 1, {}), ("2 workers", 2, {}),
               ("1 worker, 2x slots", 1, {"NIGHTWATCH_ANALYSIS_CONCURRENCY": str(2 * slots),
                                          "NIGHTWATCH_INVESTIGATION_CONCURRENCY_LIMIT": f"nightwatch-investigations-{2 * slots}"})]
    with tempfile.TemporaryDirectory(prefix="nightwatch-scale-") as tmp:
        work = Path(tmp)
        wide_export(work / "export.json", copies=3)
        with prefect_server(work) as env, SlowModel(args.latency) as model:
            env = {k: v for k, v in deploy(env, work / "checkout").items() if k != "DEPLOY_OUTPUT"}
            rows = [column(name, count, extra, env, model, work, args.errors) for name, count, extra in columns]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"A {args.errors}-error night, model latency {args.latency:g} s per request (wall: deployment run to flow run end)")
    print(f"{'':22} {'state':>10} {'wall s':>8} {'run s':>7} {'requests':>9} {'invest.':>8} {'slots':>6} {'floor s':>8}  ran on")
    for r in rows:
        print(f"{r['column']:22} {r['state']:>10} {r['wall_s']:>8} {r['run_s']:>7} {r['requests']:>9} "
              f"{r['investigation_requests']:>8} {r['slots']:>6} {r['floor_s']:>8}  {', '.join(r['ran_on'])}")
    one, two = rows[0]["wall_s"], rows[1]["wall_s"]
    print(f"2 workers / 1 worker: {two / one:.2f}x the wall time; 2x slots / 1 worker: {rows[2]['wall_s'] / one:.2f}x")


if __name__ == "__main__":
    main()
