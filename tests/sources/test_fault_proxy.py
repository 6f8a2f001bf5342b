"""A whole night through a fault-injecting proxy between the real anthropic SDK and the fake Messages API.

Six faults land on Messages requests: a garbled 200 on a triage call, then 429, a stall past the client's
timeout, 529, a connection reset inside the answer and 500 on investigation turns. Whatever happens, every
selected error ends analysed or failed with its reason, and the night's `model_calls` ledger holds one row
per request the upstream answered: `ok` when the answer arrived, `unconfirmed` when it was lost on the way
(the stall, the reset and the garbled body).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from nightwatch.flows.nightwatch import run_night

from nightwatch.models import RunReport
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.fault_proxy import LOST_ON_THE_WAY, FaultProxy
from tests.views import rows as view_rows

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
# The client timeout is what the stall must outlast, and every other answer must beat it on a loaded machine: at 1.5 s
# an ordinary investigation turn once ran out on one core of two (`taskset -c 0 make test`), an extra unconfirmed row.
# 8 s is five times that; the stall outlasts it by 2 s, so the stalled answer is lost, never late.
TIMEOUT_S, STALL_S = 8.0, 10.0
# A max_errors=3 demo night makes 3 triage requests (all three before any investigation), then 13 investigation
# turns (3 investigations at once, of 4, 4 and 5 turns). Without SDK retries the faulted triage call is request 4
# (Prefect's retry), and an investigation dies at its second fault: with at most 4 faults and fewer than 4 answered
# investigation turns before request 11, some investigation is still alive to make it, so every fault lands.
FAULTS = {3: "garbled", 5: "429", 7: "stall", 8: "529", 10: "reset", 11: "500"}
FAULT_ERRORS = ("RetryableError", "RateLimitError", "APITimeoutError", "OverloadedError", "APIConnectionError", "InternalServerError")


def _night(monkeypatch: pytest.MonkeyPatch, max_retries: int | None) -> tuple[RunReport, FaultProxy, int]:
    with FakeAnthropic() as upstream, FaultProxy(upstream.url, FAULTS, stall_s=STALL_S) as proxy:
        monkeypatch.setenv("ANTHROPIC_API_KEY", upstream.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", proxy.url)
        monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_TIMEOUT_S", str(TIMEOUT_S))
        if max_retries is not None:
            monkeypatch.setenv("NIGHTWATCH_ANTHROPIC_MAX_RETRIES", str(max_retries))
        report = run_night(until=UNTIL, max_errors=3)
        received = len(upstream.message_requests())
    return report, proxy, received



def _ledger(home: Path) -> dict[str, int]:
    """Rows by status, from the analysts' view (nightwatch.duckdb) and from the Parquet files: they must agree.

    The answers lost on the way are one triage call (the garbled 200 on request 3: the three triage calls come
    before any investigation) and two investigation turns (the stall and the reset).
    """
    con = duckdb.connect(str(home / "nightwatch.duckdb"), read_only=True)
    try:
        view = dict(con.execute("select status, count(*) from model_calls group by 1").fetchall())
        lost = dict(con.execute("select phase, count(*) from model_calls where status = 'unconfirmed' group by 1").fetchall())
    finally:
        con.close()
    files = str(home / "metrics" / "model_calls" / "**" / "*.parquet")
    parquet = dict(duckdb.sql(f"select status, count(*) from read_parquet('{files}') group by 1").fetchall())
    assert view == parquet, (view, parquet)
    assert lost == {"triage": 1, "investigate": 2}, lost
    return view


def _every_fault_landed(proxy: FaultProxy, received: int) -> int:
    """All six faults were injected, the forwarded ones answered upstream; how many answers were lost on the way."""
    assert proxy.pending == {}, f"faults scheduled past the night's {proxy.messages_seen} Messages requests"
    assert {f.index: f.kind for f in proxy.injected} == FAULTS
    lost = [f for f in proxy.injected if f.kind in LOST_ON_THE_WAY]
    assert all(f.answered_upstream for f in lost), proxy.injected
    refused = len(proxy.injected) - len(lost)
    assert received == proxy.upstream_answered == proxy.messages_seen - refused  # the upstream answered all it got
    return len(lost)


def _every_error_accounted_for(report: RunReport) -> list:
    """Each selected error has one result, analysed or failed with a reason: none dropped, none analysed without an analysis."""
    assert report.errors_selected == 3 and len(report.results) == report.errors_selected
    assert len({r.fingerprint for r in report.results}) == len(report.results)
    for r in report.results:
        analysed = r.analysis is not None and not r.failed
        assert analysed or (r.failed and r.failure), (r.fingerprint, r.verdict, r.failure)
    failed = [r for r in report.results if r.failed]
    assert report.errors_failed == len(failed)
    return failed


def _summary(name: str, report: RunReport, proxy: FaultProxy, rows: dict[str, int], failed: list) -> str:
    return (f"{name}: {proxy.messages_seen} Messages requests, injected {[(f.index, f.kind) for f in proxy.injected]}, "
            f"upstream answered {proxy.upstream_answered}, ledger {rows}, analysed {len(report.results) - len(failed)}, "
            f"failed {len(failed)} {[r.failure for r in failed]}, succeeded {report.succeeded}")


def test_a_night_through_every_fault_the_sdk_retries(nightwatch_home, monkeypatch):
    report, proxy, received = _night(monkeypatch, max_retries=None)  # the default: 4 retries
    lost = _every_fault_landed(proxy, received)
    failed = _every_error_accounted_for(report)
    rows = _ledger(nightwatch_home)
    print(_summary("retries 4", report, proxy, rows, failed))

    assert sum(rows.values()) == proxy.upstream_answered  # a row for every request the upstream answered
    assert rows.get("unconfirmed", 0) == lost == 3 and set(rows) <= {"ok", "unconfirmed"}
    assert rows["ok"] == proxy.upstream_answered - lost
    assert failed == [], [r.failure for r in failed]  # each fault was one attempt: the SDK's retry got the answer
    assert report.succeeded and report.steps_failed == []
    assert all(r.analysis is not None for r in report.results)


def test_the_same_faults_without_sdk_retries_surface_as_failures_and_are_still_metered(nightwatch_home, monkeypatch):
    report, proxy, received = _night(monkeypatch, max_retries=0)
    lost = _every_fault_landed(proxy, received)
    failed = _every_error_accounted_for(report)
    rows = _ledger(nightwatch_home)
    print(_summary("retries 0", report, proxy, rows, failed))

    assert report.succeeded is (not failed)
    assert sum(rows.values()) == proxy.upstream_answered
    night = view_rows(nightwatch_home, "select model_calls, errors_failed from runs")
    assert night == [(sum(rows.values()), len(failed))]  # the night's row counts every call of every attempt
    assert rows.get("unconfirmed", 0) == lost == 3 and set(rows) <= {"ok", "unconfirmed"}
    analyze = next(s for s in report.steps if s.name == "analyze")
    assert ("FAILED" in analyze.detail) is bool(failed), analyze.detail  # the report says so, with each failure's reason
    assert all(any(kind in r.failure for kind in FAULT_ERRORS) for r in failed), [r.failure for r in failed]

