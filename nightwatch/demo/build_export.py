"""Build nerdgraph_export.json: one night of production errors of the demo storefront.

The export is what NightWatch would have fetched from New Relic (NerdGraph NRQL answers) for
`storefront-production` in the 24 hours before `EXPORTED_AT`: one facet row per error class and
transaction, and for each its sample TransactionErrors and one error trace; and the deploy markers of
change tracking, one after each pull request of history.yml. The groups themselves are in error_catalog.py. Run again after editing the demo application:

    python nightwatch/demo/build_export.py           # rewrite the export
    python nightwatch/demo/build_export.py --check   # exit 1 if the committed export is stale

The output is deterministic: every random choice comes from a generator seeded per error group.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

if not __package__:  # run as a script: make the nightwatch package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from nightwatch import safe_yaml
from nightwatch.demo.error_catalog import Group, all_groups  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "nerdgraph_export.json"
HISTORY = Path(__file__).resolve().parent / "history.yml"
FORMAT = "nightwatch.nerdgraph-export/1"
ACCOUNT_ID = 1234567
APP_NAME = "storefront-production"
EXPORTED_AT = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
SEED = "storefront-demo-2026-11-21"


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _rng(group: Group) -> random.Random:
    return random.Random(f"{SEED}|{group.error_class}|{group.transaction}")


def _window(group: Group) -> tuple[datetime, datetime]:
    rng = _rng(group)
    last = EXPORTED_AT - timedelta(minutes=rng.randint(3, 90))
    first = last - timedelta(hours=group.span_hours, minutes=rng.randint(0, 20) if group.span_hours else 0)
    return max(first, EXPORTED_AT - timedelta(hours=23, minutes=55)), last


def _sample_times(group: Group, count: int) -> list[datetime]:
    first, last = _window(group)
    if count == 1:
        return [last]
    step = (last - first) / (count - 1)
    return [last - step * i for i in range(count)]


def _uri(group: Group, rng: random.Random) -> str:
    return (group.uri or "").replace("{id}", str(rng.randint(1200, 98000))).replace(
        "{slug}", rng.choice(["chef-knife-8in", "cast-iron-skillet-26cm", "pour-over-kettle", "linen-apron"]))


def facet_row(group: Group) -> dict:
    first, last = _window(group)
    return {
        "facet": [group.error_class, group.transaction],
        "error.class": group.error_class,
        "transactionName": group.transaction,
        "occurrences": group.occurrences,
        "message": group.message.replace("{id}", "812"),
        "first_seen": epoch_ms(first),
        "last_seen": epoch_ms(last),
        "http_status": group.http_status,
    }


def sample_row(group: Group, moment: datetime, rng: random.Random) -> dict:
    row = {
        "timestamp": epoch_ms(moment),
        "error.class": group.error_class,
        "error.message": group.message.replace("{id}", str(rng.choice([812, 1407, 2291]))),
        "transactionName": group.transaction,
        "host": rng.choice(group.hosts),
        "appName": APP_NAME,
    }
    if group.web:
        row.update({"request.uri": _uri(group, rng), "request.method": group.method,
                    "http.statusCode": group.http_status})
    return row


def nrql(results: list[dict]) -> dict:
    return {"data": {"actor": {"account": {"nrql": {"results": results}}}}}


def detail(group: Group) -> dict:
    rng = _rng(group)
    times = _sample_times(group, min(group.occurrences, 3))
    samples = [sample_row(group, moment, rng) for moment in times]
    trace = {key: samples[0][key] for key in ("timestamp", "error.class", "error.message", "transactionName")}
    trace["stackTrace"] = "\n".join(group.frames)
    trace.update(group.trace_attributes)
    return {
        "error_class": group.error_class,
        "transaction": group.transaction,
        "transaction_errors": nrql(samples),
        "error_traces": nrql([trace]),
    }


def deploys() -> dict:
    """Change tracking's deploy markers (the deploy markers query's answer, newest first): the storefront deploys half
    an hour after each pull request of history.yml merges, and once before the first. They name no commit: the demo
    repository's commits are made when a night first runs, so each marker is paired with a merge by its time."""
    merged = sorted((float(pr["merged_hours_ago"]), int(pr["number"]))
                    for pr in safe_yaml.safe_load(HISTORY.read_text(encoding="utf-8"))["pull_requests"])[::-1]
    marks = [(merged[0][0] + 12, "the storefront as it was")] + [(hours - 0.5, f"ships PR #{number}") for hours, number in merged]
    rows = [{"timestamp": epoch_ms(EXPORTED_AT - timedelta(hours=hours)), "entity.name": APP_NAME, "version": f"v1.{i}.0",
             "deploymentId": f"storefront-deploy-{i + 1}", "user": "deploy-bot", "description": what}
            for i, (hours, what) in enumerate(marks)]
    return nrql(rows[::-1])


def build() -> dict:
    groups = all_groups()
    return {
        "format": FORMAT,
        "account_id": ACCOUNT_ID,
        "app_name": APP_NAME,
        "exported_at": EXPORTED_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "errors": nrql([facet_row(g) for g in groups]),
        "details": [detail(g) for g in groups],
        "deploys": deploys(),
    }


def render(export: dict) -> str:
    return json.dumps(export, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the demo NerdGraph export from the demo application.")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="only compare with the existing file; exit 1 if stale")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run python nightwatch/demo/build_export.py", file=sys.stderr)
            return 1
        print(f"{args.output.name} is up to date")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}: {len(all_groups())} error groups, {len(text.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
