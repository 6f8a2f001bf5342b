"""What a night costs a Sentry-protocol tracker in requests, and how long listing a large project takes.

    python benchmarks/sentry_requests.py [--issues 1000] [--selected 8] [--repeats 3] [--json]

Sentry (`SentrySource`, against the fake Sentry API of the tests, which answers as Sentry's OpenAPI document says, 100
issues a page as Sentry's maximum): a project of N issues, each of one to three events the real sentry-sdk sent
(tests/captured/sentry_python, their timestamps moved into the window), then the night's requests: the issue list, page
after page, and the events of each selected error. The bound the source keeps is
    ceil(N / 100) list pages + 1 request per selected error   (+1 for the preflight's project lookup)
and the figures are checked against it. Bugsink (`BugsinkSource`) pages 250 issues, counts each candidate's events
in the window from its events list (one request each) and reads N full events per selected error:
    ceil(N / 250) + N candidates + events_per_issue per selected error;
its figures on a real Bugsink are in tests/sources/test_bugsink_night.py.

The anchor is the API's own limit: a page holds at most 100 issues, so ceil(N / 100) is the fewest requests any
client can list N issues in; the ratio printed is the source's list requests to it.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import SecretStr  # noqa: E402

from nightwatch.models import Window  # noqa: E402
from nightwatch.ranking import rank_errors  # noqa: E402
from nightwatch.sources.sentry import SentrySource, TrackerAPI  # noqa: E402
from nightwatch.sources.sentry_event import exceptions_of  # noqa: E402
from tests.fakes.sentry import FAKE_TOKEN, ORG, PROJECT, FakeSentry  # noqa: E402

END = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
WINDOW = Window.ending_at(END, timedelta(hours=24))


def project_of(issues: int) -> list[dict]:
    """`issues` distinct issues made of real events: each copy's exception type is renamed, so it groups apart."""
    real = [e for p in sorted((ROOT / "tests" / "captured" / "sentry_python").glob("*-sdk2.json"))
            for e in json.loads(p.read_text(encoding="utf-8"))["events"] if exceptions_of(e)]
    events = []
    for i in range(issues):
        for j in range(1 + i % 3):
            event = copy.deepcopy(real[i % len(real)])
            exceptions_of(event)[-1]["type"] = f"{exceptions_of(event)[-1]['type']}{i}"
            event["event_id"] = uuid.uuid4().hex
            event["timestamp"] = (END - timedelta(seconds=60 * i + j + 1)).timestamp()  # every one in the 24 h window
            events.append(event)
    return events


def night(fake: FakeSentry, selected: int) -> dict:
    source = SentrySource(TrackerAPI(SecretStr(FAKE_TOKEN), fake.url), ORG, PROJECT)
    started = time.perf_counter()
    source.check()
    batch = source.fetch_errors(WINDOW, limit=10_000)
    listed, list_s = source.api.requests - 1, time.perf_counter() - started
    chosen = rank_errors(batch.errors, END)[:selected]
    for error in chosen:
        source.fetch_traces(error, WINDOW)
    source.close()
    return {"issues": len(batch.errors), "list_requests": listed, "list_s": list_s, "selected": len(chosen),
            "requests": source.api.requests, "night_s": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--selected", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    events = project_of(args.issues)
    with FakeSentry(events) as fake:
        runs = [night(fake, args.selected) for _ in range(args.repeats)]
    first = runs[0]
    floor = -(-args.issues // 100)
    bound = floor + first["selected"] + 1
    out = {"issues": first["issues"], "events": len(events), "list_requests": first["list_requests"], "api_floor": floor,
           "ratio_to_floor": round(first["list_requests"] / floor, 2), "selected": first["selected"],
           "requests": first["requests"], "bound": bound, "within_bound": all(r["requests"] <= bound for r in runs),
           "list_s": {k: round(f([r["list_s"] for r in runs]), 3) for k, f in (("min", min), ("median", statistics.median), ("max", max))},
           "night_s_median": round(statistics.median(r["night_s"] for r in runs), 3)}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"Sentry: {out['issues']:,} issues ({out['events']:,} events) listed in {out['list_requests']} requests "
              f"(the API's floor at 100 a page: {floor}; ratio {out['ratio_to_floor']}); list time min/median/max "
              f"{out['list_s']['min']}/{out['list_s']['median']}/{out['list_s']['max']} s over {args.repeats} runs")
        print(f"a night: {out['requests']} requests for {out['selected']} selected errors "
              f"(bound ceil(N/100) + selected + 1 = {bound}: {'kept' if out['within_bound'] else 'EXCEEDED'}); "
              f"median {out['night_s_median']} s")
    return 0 if out["within_bound"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
