"""The triage subflow inside the night, under prefect_test_harness: batch nights offline and through the
fake Batches API (mixed results, a crash after submission, a hand-off to `collect`), and the direct path
within the API's Prefect concurrency limit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nightwatch.flows.nightwatch import nightwatch_flow, run_night
from nightwatch.tasks.api_limits import API_LIMIT
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL

from nightwatch.render.summary import text_summary
from nightwatch.triage.ledger import LedgerStore
from tests.fakes.anthropic_batches import FakeAnthropicBatches
from tests.views import rows as view_rows

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parents[2]
FAST_POLLING = {"NIGHTWATCH_BATCH_POLL_INITIAL_S": "0.05", "NIGHTWATCH_BATCH_POLL_MAX_S": "0.2", "NIGHTWATCH_ANTHROPIC_MAX_RETRIES": "1"}


@pytest.fixture(autouse=True)
def fast_polling(monkeypatch):
    for name, value in FAST_POLLING.items():
        monkeypatch.setenv(name, value)


def _live(monkeypatch, fake: FakeAnthropicBatches) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)



def test_offline_batch_night_shows_every_route_and_reruns_for_free(nightwatch_home):
    report = run_night(until=UNTIL, max_errors=12, mode="batch", dry_run=True)
    assert report.offline_model and report.mode == "batch" and all(s.status != "failed" for s in report.steps)
    verdicts = [r.verdict for r in report.results]
    assert {v.route for v in verdicts} == {"deep", "simple", "transient"} and {v.via for v in verdicts} == {"batch"}
    analyze = next(s for s in report.steps if s.name == "analyze")
    assert "triage via 12 batch" in analyze.detail
    table = text_summary(report).split(" route ", 1)[1].splitlines()[2:]  # the errors table, below its header
    rows = [line.split() for line in table if re.match(r"^\s+\d+ \S", line)][:12]
    assert [row[-5] for row in rows] == [v.route for v in verdicts]  # its route column
    assert len(list((nightwatch_home / "batches" / "offline").glob("msgbatch_*.json"))) == 1
    triage_rows = view_rows(nightwatch_home, "select mode, model, cost_usd from model_calls where phase = 'triage'")
    assert len(triage_rows) == 12 and set(triage_rows) == {("batch", "offline", 0.0)}

    again = run_night(until=UNTIL, max_errors=12, mode="batch", dry_run=True)
    assert again.totals.model_calls == 0 and [r.verdict.route for r in again.results] == [v.route for v in verdicts]
    assert len(list((nightwatch_home / "batches" / "offline").glob("msgbatch_*.json"))) == 1


def test_mixed_batch_results_fall_back_and_the_report_says_why(nightwatch_home, monkeypatch):
    with FakeAnthropicBatches(processing_s=0.3) as fake:
        fake.script_outcomes(matching={"NoMethodError": "errored", "KeyError": "expired", "Date::Error": "invalid",
                                       "InsufficientStock": "garbled"})
        _live(monkeypatch, fake)
        report = run_night(until=UNTIL, max_errors=6, mode="batch", dry_run=True)
    by_class = {r.error.error_class: r.verdict for r in report.results}
    assert len(by_class) == 6 and all(v is not None for v in by_class.values())
    fell_back = {cls for cls, v in by_class.items() if v.via == "fallback"}
    assert fell_back == {"NoMethodError", "KeyError", "Date::Error", "Product::InsufficientStock"}
    assert by_class["NoMethodError"].fallback_reason.startswith("the batch entry errored")
    assert by_class["KeyError"].fallback_reason == "the batch expired before this request was processed"
    assert by_class["Date::Error"].fallback_reason.startswith("the batch answer did not validate")
    assert by_class["Product::InsufficientStock"].fallback_reason.startswith("no result for this request")
    assert all("batch fallback:" in by_class[c].route_reason for c in fell_back)
    warning = next(w for w in report.warnings if "fell back to direct calls" in w)
    assert "4 fell back" in warning and "NoMethodError in Controller/orders/show: the batch entry errored" in warning
    assert fake.creates == 1

    calls = [c for r in report.results for c in r.model_calls if c.phase == "triage"]
    assert sorted(c.mode for c in calls) == ["batch"] * 3 + ["direct"] * 4  # 2 answers + 1 unusable answer, 4 fallbacks
    rows = view_rows(nightwatch_home, "select mode, count(*), sum(cost_usd) from model_calls where phase = 'triage' group by mode order by mode")
    assert [(m, n) for m, n, _ in rows] == [("batch", 3), ("direct", 4)]
    assert view_rows(nightwatch_home, "select count(*) from model_calls")[0][0] == report.totals.model_calls


def test_a_refused_batch_is_not_retried_and_the_night_goes_on_directly(nightwatch_home, monkeypatch):
    from tests.fakes.http import Reply

    with FakeAnthropicBatches() as fake:
        fake.fail_next("POST", "/v1/messages/batches", Reply(400, {"type": "error", "error": {
            "type": "invalid_request_error", "message": "requests: batches are not enabled for this workspace"}}))
        _live(monkeypatch, fake)
        report = run_night(until=UNTIL, max_errors=3, mode="batch", dry_run=True)
        creates = fake.calls("POST", "/v1/messages/batches")
    assert len(creates) == 1 and fake.creates == 0  # refused once, not retried
    assert {r.verdict.via for r in report.results} == {"fallback"} and len(report.results) == 3
    assert all("could not be submitted" in r.verdict.fallback_reason and "not enabled" in r.verdict.fallback_reason for r in report.results)
    assert any("3 error(s) triaged by direct calls instead" in w for w in report.warnings)


def test_a_night_killed_after_submitting_resumes_the_same_batch(nightwatch_home, monkeypatch, tmp_path):
    with FakeAnthropicBatches(processing_s=None) as fake:
        _live(monkeypatch, fake)
        env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(ROOT),
               "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(tmp_path / "results")}
        code = ("from datetime import datetime, timezone\nfrom nightwatch.flows.nightwatch import nightwatch_flow\n"
                "nightwatch_flow(until=datetime(2026, 11, 21, 6, tzinfo=timezone.utc), max_errors=3, mode='batch', dry_run=True)\n")
        night = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 150
            while not (fake.creates and fake.calls("GET", "/v1/messages/batches/msgbatch_")):  # submitted, now polling
                assert night.poll() is None, night.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "the night never submitted its batch"
                time.sleep(0.1)
        finally:
            night.send_signal(signal.SIGKILL)
            night.wait()
        (batch_id,) = fake.batch_ids()
        ledger = next(iter(LedgerStore(nightwatch_home / "batches").root.glob("triage-*.json")))
        assert batch_id in ledger.read_text()
        fake.finish()
        report = run_night(until=UNTIL, max_errors=3, mode="batch", dry_run=True)
        polled_after = [r for r in fake.calls("GET") if r.path == f"/v1/messages/batches/{batch_id}"]
    assert fake.creates == 1 and polled_after
    assert [r.verdict.via for r in report.results] == ["batch"] * 3 and report.totals.model_calls > 0


def test_a_deployment_run_hands_a_long_batch_to_collect(nightwatch_home, monkeypatch):
    from nightwatch.deployments.definitions import build_collect_deployment, build_deployments
    from prefect.deployments import run_deployment
    from prefect.flow_engine import run_flow

    monkeypatch.setenv("NIGHTWATCH_BATCH_HOLD_S", "0.3")
    build_collect_deployment().apply()
    build_deployments()[1].apply()  # `manual`, run here in batch mode
    with FakeAnthropicBatches(processing_s=None) as fake:
        _live(monkeypatch, fake)
        params = {"until": UNTIL.isoformat(), "max_errors": 3, "mode": "batch", "dry_run": True}
        first = run_deployment("nightwatch/manual", parameters=params, timeout=0, as_subflow=False)
        report = run_flow(nightwatch_flow, flow_run=first, parameters=first.parameters)
        analyze = next(s for s in report.steps if s.name == "analyze")
        assert analyze.status == "skipped" and "nightwatch/collect" in analyze.detail and not report.results
        with get_client(sync_client=True) as client:
            collect_id = client.read_deployment_by_name("nightwatch/collect").id
            (scheduled,) = client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[collect_id])), limit=5,
                                                 sort=FlowRunSort.ID_DESC)
        assert scheduled.state.is_scheduled() and scheduled.parameters["until"] == UNTIL.isoformat()
        assert scheduled.parameters["mode"] == "batch" and scheduled.parameters["max_errors"] == 3

        fake.finish()
        resumed = run_flow(nightwatch_flow, flow_run=scheduled, parameters=scheduled.parameters)
    assert fake.creates == 1 and len(resumed.results) == 3 and {r.verdict.via for r in resumed.results} == {"batch"}
    assert resumed.window == report.window


def test_direct_triage_stays_within_the_api_concurrency_limit(nightwatch_home, monkeypatch):
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    monkeypatch.setenv("NIGHTWATCH_API_CONCURRENCY", "2")
    with get_client(sync_client=True) as client:
        try:
            client.delete_global_concurrency_limit_by_name(API_LIMIT)
        except Exception:  # noqa: BLE001 - absent is what we want
            pass
    try:
        with FakeAnthropicBatches(latency_s=0.2) as fake:
            _live(monkeypatch, fake)
            report = run_night(until=UNTIL, max_errors=8, mode="interactive", dry_run=True)
            triage = lambda body: "submit_triage" in str(body.get("tool_choice"))  # noqa: E731
            overlap = fake.max_overlap(triage)
        with get_client(sync_client=True) as client:
            limit = client.read_global_concurrency_limit_by_name(API_LIMIT)
        assert limit.limit == 2 and overlap == 2
        assert {r.verdict.via for r in report.results} == {"direct"} and len(report.results) == 8
    finally:
        with get_client(sync_client=True) as client:
            client.update_global_concurrency_limit(API_LIMIT, GlobalConcurrencyLimitUpdate(limit=16))
