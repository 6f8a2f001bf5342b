"""Cold and warm wall time of the demo night, measured side by side.

Cold: an empty NIGHTWATCH_HOME (Prefect builds its database, the demo repository is materialised,
every error is triaged and investigated). Warm: the same night again in the same home (finished
steps come from the task cache). Each pair runs in a fresh home; pairs alternate so machine noise
hits both columns alike.

    python benchmarks/run_demo.py [--pairs 2] [--max-errors 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNTIL = "2026-11-21T06:00:00"


def one_run(home: Path, max_errors: int) -> tuple[float, dict]:
    return offline_night(home, ["--until", UNTIL, "--max-errors", str(max_errors)])


def offline_night(home: Path, args: list[str], env_overrides: dict[str, str] | None = None) -> tuple[float, dict]:
    """`nightwatch run` in `home` with no service configured: its wall time and its JSON report."""
    env = {**os.environ, "NIGHTWATCH_HOME": str(home), **(env_overrides or {})}
    for name in ("ANTHROPIC_API_KEY", "NEW_RELIC_API_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN", "PREFECT_API_URL"):
        env.pop(name, None)
    cmd = [str(ROOT / ".venv" / "bin" / "nightwatch"), "run", "--output", "json", *args]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout)


def empty_flow(home: Path) -> float:
    """Prefect's own floor in this home: start the ephemeral API and run a flow that does nothing."""
    env = {**os.environ, "NIGHTWATCH_HOME": str(home), "PREFECT_HOME": str(home / "prefect"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90"}
    env.pop("PREFECT_API_URL", None)
    code = "from prefect import flow\nflow(lambda: 1, name='floor')()"
    started = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", code], cwd=ROOT, env=env, capture_output=True, timeout=300, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--max-errors", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cold, warm, floors, rows = [], [], [], []
    for i in range(args.pairs):
        with tempfile.TemporaryDirectory(prefix="nightwatch-bench-") as tmp:
            home = Path(tmp)
            c, first = one_run(home, args.max_errors)
            w, second = one_run(home, args.max_errors)
            floors.append(empty_flow(home))
        cold.append(c)
        warm.append(w)
        rows.append((i + 1, c, w, first["totals"]["model_calls"], second["totals"]["model_calls"],
                     sum(1 for r in second["results"] if r["source"] in ("cache", "knowledge"))))
    summary = {
        "cold_s": round(statistics.median(cold), 2), "warm_s": round(statistics.median(warm), 2),
        "warm_over_cold": round(statistics.median(warm) / statistics.median(cold), 3),
        "prefect_floor_s": round(statistics.median(floors), 2),
        "errors": args.max_errors, "pairs": args.pairs,
    }
    if args.json:
        print(json.dumps(summary))
        return
    print(f"demo night, {args.max_errors} errors, {args.pairs} pair(s), wall time of `nightwatch run` (includes Prefect start-up)")
    print(f"{'pair':>4} {'cold s':>8} {'warm s':>8} {'cold calls':>11} {'warm calls':>11} {'warm reused':>12}")
    for pair, c, w, cc, wc, reused in rows:
        print(f"{pair:>4} {c:>8.2f} {w:>8.2f} {cc:>11} {wc:>11} {reused:>12}")
    print(f"median: cold {summary['cold_s']} s, warm {summary['warm_s']} s, warm/cold {summary['warm_over_cold']}")
    print(f"floor: an empty Prefect flow in the same warm home takes {summary['prefect_floor_s']} s (ephemeral API start-up)")


if __name__ == "__main__":
    main()
