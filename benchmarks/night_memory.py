"""Memory of one process that runs night after night: RSS after night 1 and after night N.

A night's state (settings, clients, run budget, code cache, event log, cross-error notes, the API gate)
lives on its `Night` scope (nightwatch/night.py) and is dropped when the flow ends. This runs N offline
demo nights in one process, each over its own window (so nothing is answered from the task cache and
every step does its work), and prints the resident memory after each tenth night, the growth per night
after the first ten, how many nights are still open (0: every scope was closed) and how many closed ones
are still referenced (a context that a long-lived Prefect thread copied can keep one closed shell).

`prefect serve` and workers start each flow run in a process of its own; the CLI, `nightwatch eval`,
the tests and any in-process runner run nights back to back in one process, which is what this measures.

    python benchmarks/night_memory.py                 # 50 nights, 2 errors each
    python benchmarks/night_memory.py --nights 10 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNTIL = datetime(2026, 11, 21, 6, tzinfo=timezone.utc)


def rss_mb() -> float:
    """Resident set size now, from /proc (peak from getrusage where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def nights_alive() -> tuple[int, int]:
    """(Night objects still open, closed ones still referenced): a context copied by a long-lived Prefect thread can
    keep the shell of a closed night, which holds its settings and nothing else."""
    from nightwatch.night import Night

    gc.collect()
    nights = [o for o in gc.get_objects() if isinstance(o, Night)]
    return sum(1 for n in nights if not n.closed), sum(1 for n in nights if n.closed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=50)
    parser.add_argument("--max-errors", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="nightwatch-memory-"))
    for name in ("ANTHROPIC_API_KEY", "NEW_RELIC_API_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN", "PREFECT_API_URL"):
        os.environ.pop(name, None)
    os.environ["NIGHTWATCH_HOME"] = str(home)
    from nightwatch import environment

    environment.configure(home)
    from nightwatch.flows.nightwatch import run_night

    samples: dict[int, dict[str, float]] = {}
    started = time.monotonic()
    for n in range(1, args.nights + 1):
        report = run_night(until=UNTIL + timedelta(hours=n), max_errors=args.max_errors, dry_run=True)
        if not report.succeeded:
            sys.exit(f"night {n} did not succeed: {report.warnings[-3:]}")
        if n == 1 or n % 10 == 0 or n == args.nights:
            still_open, shells = nights_alive()
            samples[n] = {"rss_mb": round(rss_mb(), 1), "nights_open": still_open, "closed_nights_referenced": shells,
                          "seconds": round(time.monotonic() - started, 1)}
    first, last = samples[1], samples[args.nights]
    settled = samples.get(10, first)
    per_night = (last["rss_mb"] - settled["rss_mb"]) / max(1, args.nights - (10 if 10 in samples else 1))
    out = {"nights": args.nights, "max_errors": args.max_errors, "samples": samples,
           "rss_first_mb": first["rss_mb"], "rss_last_mb": last["rss_mb"], "growth_per_night_mb": round(per_night, 2)}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.nights} offline demo nights in one process ({args.max_errors} errors each), home {home}")
    print(f"{'after night':>12} {'RSS MB':>8} {'nights open':>12} {'closed, referenced':>19} {'elapsed s':>10}")
    for n, s in samples.items():
        print(f"{n:>12} {s['rss_mb']:>8.1f} {s['nights_open']:>12} {s['closed_nights_referenced']:>19} {s['seconds']:>10.1f}")
    print(f"RSS after night 1: {first['rss_mb']:.1f} MB; after night {args.nights}: {last['rss_mb']:.1f} MB; "
          f"growth after the first ten: {per_night:+.2f} MB per night")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
