"""A year of metrics: every analyst query's median and p95, and the file count, before and after compaction.

365 nights are written through the product's own writer (`MetricsStore`: a part per analysis as it
ends, the night's analyses, errors and row, then the night closes into one file per table), about
600 model calls a night (217K in the year), then the views answer every query of
`knowledge_store.duck.ANALYST_QUERIES`. Then the closed months are compacted (what the first night of
each month does on its own) and the same queries run again.

    python benchmarks/metrics_year.py                 # 365 nights (about 4 minutes)
    python benchmarks/metrics_year.py --nights 60 --json
    python benchmarks/metrics_year.py --home /tmp/year && NIGHTWATCH_HOME=/tmp/year nightwatch metrics
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nightwatch.knowledge_store.duck import ANALYST_QUERIES, connect_readonly, ensure_views  # noqa: E402
from nightwatch.knowledge_store.layout import STAGING  # noqa: E402
from nightwatch.knowledge_store.metrics import MetricsStore  # noqa: E402

from nightwatch.models import (  # noqa: E402
    Analysis,
    ErrorAnalysisResult,
    ErrorGroup,
    ModelCall,
    RunReport,
    RunTotals,
    TokenUsage,
    ToolCall,
    Window,
)

FIRST_NIGHT = date(2025, 11, 1)
ANALYSES = 20  # deep investigations a night, each its own part
CALLS_PER_ANALYSIS = 30
REPEATS = 15


def analysis_of(rng: random.Random, night: str, i: int, started: datetime) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=f"Mod{rng.randrange(40)}::Error{rng.randrange(25)}",
                       transaction=f"Controller/things{rng.randrange(300)}/show", message="boom", occurrences=rng.randint(1, 900))
    calls = [ModelCall(call_id=f"{night}-{i}-{n}", run_id=night, fingerprint=error.fingerprint, phase="investigate",
                       iteration=n, model="claude-sonnet-4-6", mode="direct",
                       usage=TokenUsage(input=rng.randint(500, 3000), output=rng.randint(100, 900),
                                        cache_read=rng.randint(0, 40_000), cache_write=rng.randint(0, 4000)),
                       cost_usd=round(rng.uniform(0.002, 0.05), 6), started_at=started + timedelta(seconds=n))
             for n in range(CALLS_PER_ANALYSIS)]
    tools = [ToolCall(run_id=night, fingerprint=error.fingerprint, iteration=n, name=rng.choice(["read_file", "search_code"]),
                      ok=True, result_chars=rng.randint(100, 9000)) for n in range(12)]
    return ErrorAnalysisResult(run_id=night, error=error, model_calls=calls, tool_calls=tools, iterations=CALLS_PER_ANALYSIS,
                               analysis=Analysis(title="t", reasoning="r", root_cause="c", confidence="medium", has_fix=rng.random() < 0.3),
                               tokens=sum((c.usage for c in calls), TokenUsage()), cost_usd=sum(c.cost_usd for c in calls))


def write_night(store: MetricsStore, rng: random.Random, day: date) -> None:
    """One night as the flow writes it (steps 4, 12 and the night's record)."""
    night = f"{day.isoformat()}T06:00:00+00:00/24h"
    started = datetime(day.year, day.month, day.day, 6, tzinfo=timezone.utc)
    results = [analysis_of(rng, night, i, started) for i in range(ANALYSES)]
    for i, result in enumerate(results):
        store.write_model_calls(night, day, f"{result.fingerprint}-{i}-investigate", result.model_calls)
        store.write_tool_calls(night, day, f"{result.fingerprint}-{i}-investigate", result.tool_calls)
    store.write_errors(night, day, [r.error for r in results] * 5, {r.fingerprint for r in results}, {})
    store.write_analyses(night, day, results, started, attempt="a1")
    report = RunReport(run_id=night, started_at=started, finished_at=started + timedelta(minutes=20),
                       window=Window.ending_at(started, timedelta(days=1)), results=results,
                       totals=RunTotals(model_calls=ANALYSES * CALLS_PER_ANALYSIS))
    store.write_run(report, day)
    store.close_night(night, day)


def time_queries(home: Path) -> dict[str, dict[str, float]]:
    ensure_views(home)
    figures = {}
    with connect_readonly(home) as con:
        for name, sql in ANALYST_QUERIES.items():
            con.execute(sql).fetchall()  # warm
            took = []
            for _ in range(REPEATS):
                started = time.perf_counter()
                con.execute(sql).fetchall()
                took.append((time.perf_counter() - started) * 1000)
            took.sort()
            figures[name] = {"median_ms": round(statistics.median(took), 1), "p95_ms": round(took[int(0.95 * (len(took) - 1))], 1)}
    return figures


def file_count(home: Path) -> tuple[int, int]:
    """(files the views read, staged parts of the nights' ledgers)."""
    metrics = home / "metrics"
    views = sum(1 for p in metrics.glob("*/month=*/*.parquet") if p.parent.name != "month=0000-00")
    return views, sum(1 for _ in (metrics / STAGING).glob("**/*.parquet"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--home", type=Path, help="Write the year here and keep it (then try `nightwatch metrics` on it).")
    args = parser.parse_args()
    rng = random.Random(365)
    with tempfile.TemporaryDirectory(prefix="nw-metrics-year-") as tmp:
        home = args.home or Path(tmp)
        store = MetricsStore(home)
        started = time.perf_counter()
        last = FIRST_NIGHT
        for n in range(args.nights):
            last = FIRST_NIGHT + timedelta(days=n)
            write_night(store, rng, last)
        written_s = time.perf_counter() - started
        ensure_views(home)
        with connect_readonly(home) as con:
            rows = con.execute("SELECT count(*) FROM model_calls").fetchone()[0]
        before_files, staged = file_count(home)
        before = time_queries(home)
        started = time.perf_counter()
        store.compact(today=last)
        compact_s = time.perf_counter() - started
        after_files, staged_after = file_count(home)
        after = time_queries(home)
    result = {"nights": args.nights, "model_calls": rows, "write_s": round(written_s, 1), "compact_s": round(compact_s, 1),
              "files_before": before_files, "files_after": after_files, "staged_before": staged, "staged_after": staged_after,
              "queries": {name: {"before": before[name], "after": after[name]} for name in ANALYST_QUERIES}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{args.nights} nights, {rows:,} model_calls rows, written in {result['write_s']} s; "
          f"compaction {result['compact_s']} s")
    print(f"files the views read: {before_files:,} before compaction, {after_files:,} after "
          f"(staged parts: {staged:,} -> {staged_after:,})\n")
    print("| query | median ms (nights) | p95 ms (nights) | median ms (compacted) | p95 ms (compacted) |")
    print("|---|---|---|---|---|")
    for name in ANALYST_QUERIES:
        b, a = before[name], after[name]
        print(f"| {name} | {b['median_ms']} | {b['p95_ms']} | {a['median_ms']} | {a['p95_ms']} |")
    worst = max(max(v["p95_ms"] for v in (before[n], after[n])) for n in ANALYST_QUERIES)
    print(f"\nslowest p95: {worst} ms; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
