"""What verifying fixes costs a night: the Python demo night with and without NIGHTWATCH_VERIFY_FIXES, side by side.

Each run is a cold night in a fresh NIGHTWATCH_HOME; runs alternate (off, on, off, on, ...) so the machine's noise
hits both columns alike. With verification, step 8.5 runs each chosen analysis's regression test in the bubblewrap
sandbox without and with its fix; without it, nothing runs and no PR opens (NIGHTWATCH_PR_REQUIRE_VERIFIED).
Also printed: the sandbox's own cost (the seconds its runs took, from the report) and what each night concluded.

    python benchmarks/verify_cost.py [--pairs 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.run_demo import offline_night  # noqa: E402

UNTIL = "2026-11-26T06:00:00"


def one_night(verify: bool) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="nightwatch-verify-bench-") as tmp:
        return offline_night(Path(tmp), ["--until", UNTIL], {"NIGHTWATCH_DEMO": "python",
                                                             "NIGHTWATCH_VERIFY_FIXES": "true" if verify else "false"})


def summary(report: dict) -> dict:
    verifications = [r["verification"] for r in report["results"] if r.get("verification")]
    statuses: dict[str, int] = {}
    for v in verifications:
        statuses[v["status"]] = statuses.get(v["status"], 0) + 1
    pr = report.get("pr") or {}
    return {"statuses": statuses, "sandbox_s": round(sum(run["seconds"] for v in verifications for run in v["runs"]), 2),
            "pr": pr.get("action", "none")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    off, on, rows = [], [], []
    for i in range(args.pairs):
        t_off, r_off = one_night(False)
        t_on, r_on = one_night(True)
        off.append(t_off)
        on.append(t_on)
        rows.append({"pair": i + 1, "off_s": round(t_off, 1), "on_s": round(t_on, 1), "off": summary(r_off), "on": summary(r_on)})
    result = {"pairs": rows, "median_off_s": round(statistics.median(off), 1), "median_on_s": round(statistics.median(on), 1),
              "added": round(statistics.median(on) / statistics.median(off) - 1, 3)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'pair':>4} {'off (s)':>8} {'on (s)':>8}  sandbox (s)  verifications (on)                      PR off / on")
    for row in rows:
        print(f"{row['pair']:>4} {row['off_s']:>8} {row['on_s']:>8}  {row['on']['sandbox_s']:>11}  "
              f"{json.dumps(row['on']['statuses']):<40} {row['off']['pr']} / {row['on']['pr']}")
    print(f"median: {result['median_off_s']} s without, {result['median_on_s']} s with verification: "
          f"{result['added']:+.0%} wall time")


if __name__ == "__main__":
    main()
