"""The nightly flow: steps 0-13 of docs/night.md, in order, each a task named as the step.

A step that fails after errors were fetched is recorded in the report and the night goes on: what
was already collected is still reported, filed and remembered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from nightwatch.flows.investigate import budget_note, investigate_flow
from nightwatch.flows.triage import triage_flow
from nightwatch.knowledge_store.index import KnowledgeState
from nightwatch.knowledge_store.trend import TREND_FILE
from nightwatch.tasks import result_storage
from nightwatch.tasks import steps_fetch as fetch
from nightwatch.tasks import steps_learn as learn
from nightwatch.tasks import steps_publish as publish
from nightwatch.tasks._prefect import label_cached_runs, quiet_local_api
from nightwatch.tasks.context import (
    NightRequest,
    RunContext,
    attempt_name,
    new_context,
    open_night,
    report_dir,
    runtime,
    settings_for,
)
from nightwatch.tasks.run_start import PROGRESS, StepFailed, resolve_run_settings, run_step
from prefect import flow, get_run_logger
from prefect.context import get_run_context
from prefect.states import Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from nightwatch import clock
from nightwatch.models import CorrelatedPR, ErrorAnalysisResult, ErrorGroup, RunReport, StepOutcome, TraceData
from nightwatch.render.summary import status_line
from nightwatch.report import analyze_detail
from nightwatch.research import ResearchContext
from nightwatch.selection import Selection
from nightwatch.settings import Settings
from nightwatch.triage.merge import combine_results


@flow(name="nightwatch", task_runner=ThreadPoolTaskRunner(max_workers=4), log_prints=True)
def nightwatch_flow(
    since_hours: float = 24.0,
    max_errors: int | None = None,
    max_issues: int | None = None,
    dry_run: bool = False,
    mode: Literal["batch", "interactive"] | None = None,
    agent: str | None = None,
    until: datetime | None = None,
    settings_block: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> RunReport:
    settings = resolve_run_settings(settings_block, overrides, max_errors=max_errors, max_issues=max_issues, agent=agent)
    ctx, report = begin(settings, since_hours, dry_run, mode or settings.mode, until, overrides, settings_block)
    with open_night(ctx, settings):  # the night's clients, budget and caches; closed when the night ends
        found = gather(ctx, report)  # steps 0-3.5
        results = analyze(ctx, report, found.errors, found.traces, found.research)  # step 4
        if results is None:  # the triage batch is still processing: the `collect` deployment resumes this night
            report.finished_at = clock.now()
            return report
        publish_night(ctx, report, results, found)  # steps 5-11
        learn_from_night(ctx, report, found)  # steps 12-13, then the night's records
        return night_state(report)


@dataclass
class Gathered:
    """What steps 0-3.5 found: the knowledge index's state, the selection, and per selected error its traces and research."""

    knowledge: KnowledgeState
    selection: Selection
    traces: list[TraceData]
    prs: list[CorrelatedPR]
    research: list[ResearchContext]

    @property
    def errors(self) -> list[ErrorGroup]:
        return self.selection.selected


def begin(settings: Settings, since_hours: float, dry_run: bool, mode: str, until: datetime | None,
          overrides: dict[str, Any] | None, settings_block: str | None) -> tuple[RunContext, RunReport]:
    """The night's context and its report; results and cache go to the shared result storage before any task."""
    results_at = result_storage.use_for_night(settings)
    run = get_run_context().flow_run
    anchor = until or (run.expected_start_time if run and run.expected_start_time else clock.now())
    request = NightRequest(since_hours=since_hours, mode=mode, dry_run=dry_run, overrides=overrides or {},
                           settings_block=settings_block)
    attempt = attempt_name(str(run.id if run else "local"), run.run_count if run else 1)
    ctx = new_context(settings, request, anchor, attempt, results_at)
    report = RunReport(run_id=ctx.run_id, attempt=ctx.attempt, started_at=clock.now(), window=ctx.window, mode=mode,
                       dry_run=dry_run, agent=ctx.agent, model=settings.model,
                       reports_dir=str(report_dir(ctx, settings)))
    get_run_logger().info("NightWatch night %s (attempt %s) over %s; results and cache in %s", ctx.run_id, ctx.attempt,
                          ctx.window.key, results_at)
    return ctx, report


def gather(ctx: RunContext, report: RunReport) -> Gathered:
    """Steps 0-3.5: what the night knows, where it runs, which errors, their traces, merged PRs and research."""
    knowledge = run_step(report, "0", "load_knowledge", fetch.load_knowledge, ctx)
    report.sources = run_step(report, "1", "connect", fetch.connect, ctx)
    synced = run_step(report, "1.5", "sync_outcomes", fetch.sync_outcomes, ctx, knowledge, critical=False)
    if synced is not None:
        knowledge, report.outcomes = synced.knowledge, synced.lines()
    rt = runtime(ctx)
    report.demo_data, report.offline_model = rt.demo_data, rt.model_client.offline
    report.error_source = rt.statuses[0].name
    selection = run_step(report, "2", "fetch_errors", fetch.fetch_errors, ctx)
    report.errors_found, report.errors_ignored, report.errors_selected = len(selection.found), len(selection.ignored), len(selection.selected)
    report.noise = selection.noise
    report.warnings += selection.warnings
    errors = selection.selected
    traces = run_step(report, "3", "fetch_traces", lambda c: [f.result() for f in [fetch.fetch_traces.submit(c, e) for e in errors]], ctx)
    prs = run_step(report, "3.5", "recent_prs", fetch.recent_prs, ctx, critical=False) or []
    deploys = run_step(report, "3.5", "deploys", fetch.deploys, ctx, critical=False) or []
    research = run_step(report, "3.5", "research",
                        lambda c: [f.result() for f in [fetch.research.submit(c, e, t, knowledge, prs, deploys)
                                                        for e, t in zip(errors, traces)]], ctx)
    return Gathered(knowledge, selection, traces, prs, research)


def publish_night(ctx: RunContext, report: RunReport, results: list[ErrorAnalysisResult], found: Gathered) -> None:
    """Steps 5-11: the report, Slack, the errors worth an issue, their PRs and fixes, issues, a draft PR, the follow-up."""
    report.results = results
    report.totals = run_step(report, "5", "build_report", publish.build_report, ctx, results)
    run_step(report, "6", "notify", publish.notify, ctx, report, critical=False)
    chosen = run_step(report, "7", "select_for_issues", publish.select_for_issues, ctx, report.results, critical=False) or []
    chosen = run_step(report, "8", "correlate_prs", publish.correlate_prs, ctx, chosen, found.prs, critical=False) or chosen
    by_error = dict(zip((e.fingerprint for e in found.errors), found.traces))
    chosen = run_step(report, "8.5", "check_fixes", publish.check_fixes, ctx, chosen,
                      [by_error[r.fingerprint] for r in chosen if r.fingerprint in by_error], critical=False) or chosen
    checked = {r.fingerprint: r for r in chosen}  # the report, knowledge and metrics keep what step 8.5 found
    report.results = [checked.get(r.fingerprint, r) for r in report.results]
    report.issues = run_step(report, "9", "file_issues", publish.file_issues, ctx, chosen, report.demo_data, critical=False) or []
    report.pr = run_step(report, "10", "propose_fix", publish.propose_fix, ctx, chosen, report.issues, critical=False)
    run_step(report, "11", "follow_up", publish.follow_up, ctx, report, critical=False)


def learn_from_night(ctx: RunContext, report: RunReport, found: Gathered) -> None:
    """Steps 12-13, then what the night spent again, its cached task runs labelled, its row and its artifact."""
    digests = {r.fingerprint: r.file_digests for r in found.research}
    run_step(report, "12", "compound", learn.compound, ctx, report, found.selection, digests, critical=False)
    patterns = run_step(report, "13", "detect_patterns", learn.detect_patterns, ctx, report, fetch.ignore_file_of(ctx), critical=False)
    if patterns:
        report.patterns, report.ignore_suggestions = patterns
    report.warnings += run_step(report, "-", "spent_again", learn.spent_again, ctx, report, ctx.results_at, critical=False) or []
    flow_run = get_run_context().flow_run
    run_step(report, "-", "label_cached", lambda c: f"{label_cached_runs(flow_run.id)} task runs answered from the cache", ctx,
             critical=False)
    report.finished_at = clock.now()
    run_step(report, "-", "record_run", learn.record_run, ctx, report, critical=False)
    trend = Path(report.reports_dir or ".") / TREND_FILE
    report.trend_svg = str(trend) if report.reports_dir and trend.exists() else None
    run_step(report, "-", "report_artifact", publish.report_artifact, ctx, report, critical=False)


class NightFailed(RuntimeError):
    """A night that ran to its end with a failed step. Its flow run's Failed state carries it: the engine that runs a
    deployment's night (a worker's flow-run process) raises it, so the run's log ends in one line naming the failed
    step, and `run_night` takes the report back from it."""

    def __init__(self, report: RunReport) -> None:
        super().__init__(status_line(report))
        self.report = report

    def __reduce__(self):
        return NightFailed, (self.report,)


def night_state(report: RunReport) -> RunReport | State:
    """The report when the night did its job; else a Failed state that names why and carries the report. The run
    page, the exit code and `prefect flow-run retry` then agree: a night with a failed step is not green."""
    if report.succeeded:
        return report
    return Failed(message=status_line(report), data=NightFailed(report))


def run_night(**parameters: Any) -> RunReport:
    """Run a night in this process and return its report, whether it did its job or not (`report.succeeded`
    says which, as its flow run's state does). A step the night could not go on without raises."""
    with quiet_local_api():
        state = nightwatch_flow(**parameters, return_state=True)
    value = state.result(raise_on_failure=False)
    if isinstance(value, NightFailed):
        return value.report
    if isinstance(value, BaseException):
        raise value
    return value


def analyze(ctx: RunContext, report: RunReport, errors, traces, research) -> list[ErrorAnalysisResult] | None:
    """Step 4: the triage subflow, then the investigate subflow for the errors triage routes deep.

    None while the night's triage batch is still processing and the night was handed to `collect`.
    """
    PROGRESS.info("step 4 analyze … (triage of %d errors, then the deep ones)", len(errors))
    try:
        triage = triage_flow(ctx, errors, traces, research)
        if triage.pending:
            report.steps.append(StepOutcome(step="4", name="analyze", status="skipped", detail=triage.pending[:500]))
            report.warnings.append(triage.pending)
            return None
        triaged = triage.outcomes
        report.warnings += triage.notes
        deep = [i for i, t in enumerate(triaged) if t.verdict.route == "deep"]
        investigated = investigate_flow(ctx, [errors[i] for i in deep], [traces[i] for i in deep], [research[i] for i in deep],
                                        [triaged[i].verdict for i in deep]) if deep else []
    except Exception as exc:
        report.steps.append(StepOutcome(step="4", name="analyze", status="failed", detail=str(exc)[:500]))
        raise StepFailed("analyze", exc) from exc
    kept = [errors[i] for i, r in zip(deep, investigated) if r is None]  # the run budget was spent before them
    if kept:
        report.warnings.append(budget_note(kept, settings_for(ctx).token_budget_per_run))
    results = combine_results(ctx.run_id, ctx.agent, errors, research, triaged,
                              {i: r for i, r in zip(deep, investigated) if r is not None})
    detail, failed = analyze_detail([t.verdict for t in triaged], results), sum(1 for r in results if r.failed)
    report.steps.append(StepOutcome(step="4", name="analyze", detail=detail))
    PROGRESS.log(logging.WARNING if failed else logging.INFO, "step 4 analyze %s: %s", "ok" if not failed else "with failures", detail)
    return results
