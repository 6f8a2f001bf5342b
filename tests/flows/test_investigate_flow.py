"""The investigate subflow under Prefect: a concurrency limit that really limits, retries that resume, the run budget."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest
from nightwatch.flows.investigate import investigate_flow
from nightwatch.flows.nightwatch import run_night
from nightwatch.knowledge_store.metrics import MetricsStore
from nightwatch.tasks.context import NightRequest, new_context, open_night
from nightwatch.tasks.investigate_tasks import _retryable, at_once, investigate_error_task
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.states import Failed

from nightwatch.agent.budgets import RunBudgetSpent
from nightwatch.models import ErrorGroup, StackFrame, TraceData, TriageVerdict
from nightwatch.research import ResearchContext
from nightwatch.settings import Settings
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.http import Reply, Request

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness", "flow_results")]
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
DEMO_BUGS = [  # (class, transaction, message, file, line, method): real lines of the demo application
    ("NoMethodError", "Controller/orders/show", "undefined method `email' for nil:NilClass", "app/controllers/orders_controller.rb", 13, "show"),
    ("ZeroDivisionError", "Controller/checkout/show", "divided by 0", "app/services/price_calculator.rb", 55, "/"),
    ("KeyError", "Controller/webhooks/stripe", "key not found: \"customer\"", "app/controllers/webhooks_controller.rb", 52, "fetch"),
    ("TypeError", "Controller/products/index", "no implicit conversion of Float into String", "lib/money_format.rb", 33, "+"),
]


class CountingFake(FakeAnthropic):
    """Measures how many Messages requests are in flight at once; can fail the Nth one."""

    def __init__(self, delay_s: float = 0.0, fail_at: int | None = None) -> None:
        super().__init__()
        self.delay_s, self.fail_at = delay_s, fail_at
        self.active = self.peak = self.count = 0
        self.lock = threading.Lock()

    def _messages(self, req: Request) -> Reply:
        with self.lock:
            self.count += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            failing = self.count == self.fail_at
        try:
            time.sleep(self.delay_s)
            return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "boom"}}) if failing else super()._messages(req)
        finally:
            with self.lock:
                self.active -= 1


def _inputs(n: int):
    errors, traces, research, verdicts = [], [], [], []
    for cls, txn, msg, path, line, method in DEMO_BUGS[:n]:
        error = ErrorGroup(error_class=cls, transaction=txn, message=msg, occurrences=50)
        errors.append(error)
        traces.append(TraceData(fingerprint=error.fingerprint, stack_frames=[StackFrame(file=path, line=line, method=method, in_app=True)]))
        research.append(ResearchContext(fingerprint=error.fingerprint))
        verdicts.append(TriageVerdict(fingerprint=error.fingerprint, complexity="moderate"))
    return errors, traces, research, verdicts


@contextmanager
def _night(fake: FakeAnthropic, name: str, until: datetime = UNTIL, **settings):
    """A night's context and its open scope (its settings point at the fake), as the flow opens it."""
    values = {"anthropic_api_key": fake.api_key, "anthropic_base_url": fake.url, "anthropic_max_retries": 0,
              "investigation_concurrency_limit": f"test-{name}", **settings}
    settings = Settings(max_errors=8, max_issues=3, **values)
    ctx = new_context(settings, NightRequest(dry_run=True), until, f"flowrun-{name}")
    with open_night(ctx, settings):
        yield ctx


def test_the_concurrency_limit_is_created_and_holds(nightwatch_home):
    with CountingFake(delay_s=0.15) as fake, _night(fake, "limit", analysis_concurrency=2) as ctx:
        results = investigate_flow(ctx, *_inputs(4))
    assert all(r is not None and r.failure is None and r.analysis for r in results)
    assert fake.peak <= 2
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name("test-limit").limit == 2


def test_as_many_investigations_start_together_as_the_limit_has_slots():
    from uuid import uuid4

    from prefect.client.schemas.responses import GlobalConcurrencyLimitResponse

    def limit(slots: int, active: bool = True) -> GlobalConcurrencyLimitResponse:
        return GlobalConcurrencyLimitResponse(id=uuid4(), name="l", limit=slots, active=active, active_slots=0,
                                              slot_decay_per_second=0.0, created=UNTIL, updated=UNTIL)

    assert at_once(limit(4), 20) == 4  # the rest wait in the night's queue, not in the server's Retry-After
    assert at_once(limit(10), 20) == 10  # an operator who raised the limit in the UI gets more at once
    assert at_once(limit(4), 2) == 2
    assert at_once(limit(4, active=False), 20) == 20  # an inactive limit bounds nothing
    assert at_once(limit(0), 20) == 1  # a paused limit: one waits for a slot, as before


def test_a_limit_is_created_once_then_read_as_operators_set_it():
    from nightwatch.tasks.api_limits import ApiPaused, ensure_api_limit
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

    name = "api-limit-as-set"
    assert ensure_api_limit(3, name) == 3  # created with the configured size
    with get_client(sync_client=True) as client:
        client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(limit=5))
        assert ensure_api_limit(3, name) == 5  # an existing limit is left as it is, and read
        client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active=False))
        assert ensure_api_limit(3, name) == 3  # an inactive limit bounds nothing
        client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active=True, limit=0))
    with pytest.raises(ApiPaused, match="'api-limit-as-set' has 0 slots"):
        ensure_api_limit(3, name)


def test_a_retried_task_resumes_from_its_checkpoint(nightwatch_home):
    errors, traces, research, verdicts = _inputs(1)
    with CountingFake() as clean, _night(clean, "baseline") as ctx:
        baseline = investigate_flow(ctx, errors, traces, research, verdicts)[0]
    with CountingFake(fail_at=3) as fake, _night(fake, "retry", until=UNTIL.replace(hour=7)) as ctx:  # another window: not cached

        @flow
        def one_error():
            future = investigate_error_task.with_options(retry_delay_seconds=0).submit(ctx, errors[0], traces[0], research[0], verdicts[0])
            return future.result(), future.state

        result, state = one_error()
        bodies = fake.message_bodies()
    assert result.failure is None and result.analysis == baseline.analysis
    assert [c.iteration for c in result.model_calls] == [3, 4]  # the retry's own spend: iterations 1-2 were paid before
    ledger = MetricsStore(nightwatch_home).recorded_calls(ctx.run_id, ctx.run_date)
    assert sorted(call_id.split(":")[-1] for call_id, _ in ledger) == [str(c.iteration) for c in baseline.model_calls]  # each once
    assert len(bodies) == len(baseline.model_calls) + 1  # the failed call, then the retry's calls from iteration 3 on
    assert len(bodies[3]["messages"]) == len(bodies[2]["messages"])  # the retry sent what the failed call had sent
    assert state.is_completed()


def test_the_night_budget_leaves_deep_errors_with_their_triage_verdict(nightwatch_home):
    report = run_night(until=UNTIL, max_errors=4, overrides={"token_budget_per_run": 1})
    deep = [r for r in report.results if r.verdict and r.verdict.route == "deep"]
    assert deep and all(r.source == "triage" and r.iterations == 0 and r.failure is None for r in deep)
    assert any("run token budget" in w and "kept their triage verdict" in w for w in report.warnings)


def test_a_spent_budget_is_never_retried():
    assert not _retryable(None, None, Failed(data=RunBudgetSpent("spent")))
    assert _retryable(None, None, Failed(data=RuntimeError("model call failed")))


def test_inputs_past_prefects_parameter_limit_go_by_reference(nightwatch_home):
    errors, traces, research, verdicts = _inputs(2)
    bulky = [r.model_copy(update={"file_previews": {f"app/big_{i}.rb": "x = 1\n" * 60_000}}) for i, r in enumerate(research)]
    assert sum(len(p) for r in bulky for p in r.file_previews.values()) > 600_000  # Prefect refuses > 512 KB of parameters
    with FakeAnthropic() as fake, _night(fake, "bulky") as ctx:
        results = investigate_flow(ctx, errors, traces, bulky, verdicts)
    assert [r.error.fingerprint for r in results] == [e.fingerprint for e in errors]
