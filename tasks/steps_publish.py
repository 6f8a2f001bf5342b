"""Steps 5-11: report, notify, select, correlate, check fixes, file issues, propose the fix, follow up."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import duckdb
import httpx
from nightwatch.knowledge_store.documents import KnowledgeDocError, read_doc
from nightwatch.knowledge_store.duck import ViewsLockedError
from nightwatch.tasks._prefect import nightwatch_task, raised
from nightwatch.tasks.context import RunContext, report_dir, runtime, settings_for
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from nightwatch.fix import FixRejected, choose_best_fix, validate_fix, with_regression_test
from nightwatch.fix_gate import check_fix, crash_site
from nightwatch.models import (
    CorrelatedPR,
    CreatedIssueResult,
    CreatedPRResult,
    ErrorAnalysisResult,
    RunReport,
    RunTotals,
    TraceData,
)
from nightwatch.outcomes import failed_fix_fields
from nightwatch.publishers.issues import file_issues as file_issues_core
from nightwatch.publishers.pull_requests import propose_fix as propose_fix_core
from nightwatch.render.markdown import report_markdown
from nightwatch.report import run_totals
from nightwatch.research import correlate
from nightwatch.selection import select_for_issues as select_for_issues_core
from nightwatch.verify.step import verified_first, verify_results, with_verification


def unless_permanent(_task, _run, state) -> bool:
    """Retry what may work later: a Slack or GitHub call refused for now (5xx, rate limits), the network, a disk or a
    database lock, Prefect's API. Not a call refused for good (a bad token, a missing repository or channel, a refused
    body), nor a fault in NightWatch itself (an AttributeError, a TypeError): that attempt would fail the same way, only
    minutes later."""
    exc = raised(state)
    if exc is None:
        return True  # the failure cannot be read back: it may be anything, so it may pass
    permanent = getattr(exc, "permanent", None)
    if permanent is not None:
        return not permanent
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500 or exc.response.status_code in (408, 429)
    return isinstance(exc, TRANSIENT) and not isinstance(exc, MISSING)


TRANSIENT = (OSError, httpx.TransportError, subprocess.TimeoutExpired, duckdb.OperationalError, sqlite3.OperationalError,
             ViewsLockedError)
MISSING = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)  # OSErrors that stay as they are


def artifact_key(ctx: RunContext, what: str) -> str:
    """One key per night and kind (lowercase letters, numbers, dashes): each attempt adds a version of the same artifact."""
    return re.sub(r"[^a-z0-9-]+", "-", f"nightwatch-{what}-{ctx.run_id}".lower()).strip("-")[:200]


@nightwatch_task(name="build_report", step="5")
def build_report(ctx: RunContext, results: list[ErrorAnalysisResult]) -> RunTotals:
    """Step 5: what this attempt of the night spent on its results (answers from the cache count nothing)."""
    return run_totals(ctx.run_id, results)


@nightwatch_task(name="notify", step="6", retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=unless_permanent)
def notify(ctx: RunContext, report: RunReport) -> str:
    """Step 6: Slack report (Block Kit) and the Prefect markdown + table artifacts."""
    create_markdown_artifact(report_markdown(report), key=artifact_key(ctx, "report"), description=f"NightWatch {ctx.run_id}")
    rows = [
        {"error": r.error.label[:80], "occurrences": r.error.occurrences, "route": r.verdict.route if r.verdict else "",
         "source": r.source, "confidence": r.analysis.confidence if r.analysis else "", "tokens": r.tokens.total,
         "cost_usd": round(r.cost_usd, 4)}
        for r in report.results
    ]
    if rows:
        create_table_artifact(rows, key=artifact_key(ctx, "errors"), description="Errors analysed tonight")
    if ctx.dry_run:
        return "dry run: nothing sent"
    result = runtime(ctx).notifier_factory(report_dir(ctx)).post_report(report)
    return f"{result.action} ({result.target}{': ' + str(result.path) if result.path else ''})"


@nightwatch_task(name="report_artifact", step="-")
def report_artifact(ctx: RunContext, report: RunReport) -> str:
    """The night's report artifact again at the end: every step 0-13, the issues, the PR and the spend (a new version
    of the same key; step 6 wrote the first one for anyone watching the night)."""
    create_markdown_artifact(report_markdown(report), key=artifact_key(ctx, "report"), description=f"NightWatch {ctx.run_id} (final)")
    return artifact_key(ctx, "report")


@nightwatch_task(name="select_for_issues", step="7")
def select_for_issues(ctx: RunContext, results: list[ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    """Step 7: which analyses deserve an issue (the WIP limit applies when filing)."""
    return select_for_issues_core(results)


@nightwatch_task(name="correlate_prs", step="8", retries=2, retry_delay_seconds=5, retry_condition_fn=unless_permanent)
def correlate_prs(ctx: RunContext, chosen: list[ErrorAnalysisResult], prs: list[CorrelatedPR]) -> list[ErrorAnalysisResult]:
    """Step 8: recently merged PRs that touch each error's files go into its issue."""
    out = []
    for result in chosen:
        files = list(dict.fromkeys(result.files_examined + [c.path for c in (result.analysis.file_changes if result.analysis else [])]))
        found = correlate(files, prs) or result.correlated_prs
        out.append(result.model_copy(update={"correlated_prs": found}))
    return out


@nightwatch_task(name="check_fixes", step="8.5")
def check_fixes(ctx: RunContext, chosen: list[ErrorAnalysisResult], traces: list[TraceData]) -> list[ErrorAnalysisResult]:
    """Step 8.5: every proposed fix through the gate (applies, parses, not symptom-only, confidence) and its regression
    test through the sandbox (fails as production did without the fix, passes with it); the issue lists the checks, and
    only a fix that passes them all can become the draft PR."""
    crashes = {t.fingerprint: crash_site(t) for t in traces}
    rt, settings = runtime(ctx), settings_for(ctx)
    verified = verify_results(chosen, rt.verifier, {t.fingerprint: t for t in traces})
    out = []
    for result in chosen:
        analysis = result.analysis
        verification = verified.get(result.fingerprint)
        if analysis is None or not (analysis.has_fix and analysis.file_changes):
            out.append(result.model_copy(update={"verification": verification}))
            continue
        gate, _ = check_fix(analysis, rt.host, settings.pr_min_confidence, crashes.get(result.fingerprint),
                            failed_fixes_of(result))
        gate = with_verification(gate, analysis, verification, settings.pr_min_confidence, settings.pr_require_verified)
        out.append(result.model_copy(update={"fix_gate": gate, "verification": verification}))
    return verified_first(out)


def failed_fixes_of(result: ErrorAnalysisResult) -> dict[str, str]:
    """The fixes of this error that were merged and did not hold, from its knowledge document (digest -> what happened),
    the merged fix of a regression this very night included (step 12 records it only after step 10)."""
    for prior in result.prior_analyses:
        path = Path(prior.source_file)
        if prior.fingerprint == result.fingerprint and path.is_file():
            try:
                meta = read_doc(path)[0]
            except KnowledgeDocError as exc:  # step 12 quarantines it; the gate goes on without its memory
                print(f"failed fixes unknown for {result.fingerprint}: {exc}")
                return {}
            tonight = failed_fix_fields(meta, "regressed", result.regression) if result.regression else {}
            failed = tonight.get("failed_fixes", meta.get("failed_fixes"))
            return {str(k): str(v) for k, v in failed.items()} if isinstance(failed, dict) else {}
    return {}


@nightwatch_task(name="file_issues", step="9", retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=unless_permanent)
def file_issues(ctx: RunContext, chosen: list[ErrorAnalysisResult], demo: bool) -> list[CreatedIssueResult]:
    """Step 9: create, or comment "new occurrence" on the existing issue; idempotent by fingerprint."""
    if ctx.dry_run:
        return [CreatedIssueResult(fingerprint=r.fingerprint, action="skipped", reason="dry run") for r in chosen]
    return file_issues_core(chosen, runtime(ctx).issues, ctx.run_id, ctx.max_issues, settings_for(ctx).open_issue_limit,
                            demo, report_dir(ctx))


@nightwatch_task(name="propose_fix", step="10", retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=unless_permanent)
def propose_fix(ctx: RunContext, chosen: list[ErrorAnalysisResult], issues: list[CreatedIssueResult]) -> CreatedPRResult | None:
    """Step 10: the best fix that passed every check of step 8.5 becomes one draft PR (idempotent)."""
    best = choose_best_fix([r for r in chosen if r.fix_gate and r.fix_gate.passed])
    if best is None:
        refused = choose_best_fix(chosen)
        if refused is None:
            return None
        why = refused.fix_gate.refusal if refused.fix_gate else "the fix was not checked"
        return CreatedPRResult(fingerprint=refused.fingerprint, action="skipped", reason=f"no PR: {why}")
    rt = runtime(ctx)
    try:
        fix = validate_fix(best.analysis, rt.host)  # type: ignore[arg-type]
        test = best.analysis.regression_test  # type: ignore[union-attr]
        if test is not None and best.verification is not None and best.verification.status == "verified":
            fix = with_regression_test(fix, test, rt.host)
    except FixRejected as exc:
        return CreatedPRResult(fingerprint=best.fingerprint, action="skipped", reason=f"fix rejected: {exc}")
    if ctx.dry_run:
        return CreatedPRResult(fingerprint=best.fingerprint, action="skipped", reason="dry run")
    issue = next((i.issue_number for i in issues if i.fingerprint == best.fingerprint), None)
    return propose_fix_core(best, fix, rt.pulls, rt.host, ctx.run_id, issue, report_dir(ctx))


@nightwatch_task(name="follow_up", step="11", retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=unless_permanent)
def follow_up(ctx: RunContext, report: RunReport) -> str:
    """Step 11: Slack follow-up with the issue and PR links."""
    if ctx.dry_run or not (report.issues or report.pr):
        return "nothing to follow up"
    result = runtime(ctx).notifier_factory(report_dir(ctx)).post_followup(report)
    return "nothing to follow up" if result is None else f"{result.action} ({result.target})"
