"""Steps 12-13 and the run's own metrics: persist learnings, detect patterns, refresh the views."""

from __future__ import annotations

from pathlib import Path

import duckdb

from knowledge_store.doctor import check_views_file, quarantine_documents, quarantine_parquet, quarantine_skipped
from knowledge_store.documents import update_doc_metadata, write_error_doc, write_pattern_doc
from knowledge_store.duck import refresh_views
from knowledge_store.index import load_index, rebuild_index
from knowledge_store.metrics import MetricsStore
from nightwatch.ignore import noise_rules
from nightwatch.models import DetectedPattern, IgnoreSuggestion, RunReport
from nightwatch.patterns import detect_patterns as detect_patterns_core
from nightwatch.patterns import suggest_ignore_updates
from nightwatch.report import spent_again as spent_again_lines
from nightwatch.selection import Selection
from tasks._prefect import nightwatch_task
from tasks.context import RunContext, home, settings_for


@nightwatch_task(name="compound", step="12")
def compound(ctx: RunContext, report: RunReport, selection: Selection, digests: dict[str, dict[str, str]]) -> str:
    """Step 12: knowledge documents, their index, and the night's metrics; idempotent per run_id."""
    knowledge = home(ctx) / "knowledge"
    written = 0
    tonight = [r.fingerprint for r in report.results]
    repaired = [f.line() for f in quarantine_documents(home(ctx), fingerprints=tonight)]  # a damaged one must not stop the writes
    keep = settings_for(ctx).compound_enabled  # NIGHTWATCH_COMPOUND_ENABLED=false: metrics only, no knowledge documents
    if not ctx.dry_run and keep:
        for result in report.results:
            if result.analysis is not None and result.source in ("model", "triage") and result.run_id == ctx.run_id:
                write_error_doc(result, knowledge, file_hashes=digests.get(result.fingerprint))
                written += 1
        for issue in report.issues:
            if issue.issue_number is not None:
                update_doc_metadata(knowledge, issue.fingerprint, issue_number=issue.issue_number)
        if report.pr and report.pr.pr_number is not None:
            update_doc_metadata(knowledge, report.pr.fingerprint, pr_number=report.pr.pr_number)
    index = rebuild_index(knowledge)
    repaired += [f.line() for f in quarantine_skipped(home(ctx), index)]
    store = MetricsStore(home(ctx))
    store.write_errors(ctx.run_id, ctx.run_date, selection.found, {e.fingerprint for e in selection.selected}, selection.ignored)
    store.write_analyses(ctx.run_id, ctx.run_date, report.results, attempt=ctx.attempt)
    store.write_knowledge_index(index)
    note = f"; quarantined {len(repaired)} damaged document(s): {'; '.join(repaired)}" if repaired else ""
    note += "" if keep else " (knowledge documents off: NIGHTWATCH_COMPOUND_ENABLED=false)"
    return f"{written} knowledge documents written, index holds {len(index.get('solutions', []))}{note}"


@nightwatch_task(name="detect_patterns", step="13")
def detect_patterns(ctx: RunContext, report: RunReport, ignore_file: str | None) -> tuple[list[DetectedPattern], list[IgnoreSuggestion]]:
    """Step 13: cross-error and cross-run patterns, and ignore-rule suggestions for a human to review
    (nothing when NIGHTWATCH_PATTERNS_ENABLED=false)."""
    if not settings_for(ctx).patterns_enabled:
        return [], []
    knowledge = home(ctx) / "knowledge"
    history = load_index(knowledge).get("solutions", [])
    patterns = detect_patterns_core(report.results, history)
    in_force = noise_rules(Path(ignore_file) if ignore_file else None, defaults=settings_for(ctx).noise_defaults)
    rules = [r.model_dump() for r in in_force]
    suggestions = suggest_ignore_updates(report.results, history, rules)
    if not ctx.dry_run:
        for pattern in patterns:
            write_pattern_doc(pattern, knowledge)
    return patterns, suggestions


def spent_again(ctx: RunContext, report: RunReport, storage: str) -> list[str]:
    """What this attempt paid for again, and why (nightwatch.report.spent_again), from the night's ledger."""
    store = MetricsStore(home(ctx))
    ledger = store.night_calls(ctx.run_id, ctx.run_date, columns=["call_id", "started_at", "fingerprint", "phase", "iteration"])
    finished = store.finished_by_other_attempts(ctx.run_id, ctx.run_date, ctx.attempt)
    return spent_again_lines(report.results, ctx.run_id, ledger, finished, storage)


@nightwatch_task(name="record_run", step="-")
def record_run(ctx: RunContext, report: RunReport) -> str:
    """The run's own row, then the DuckDB views analysts query."""
    MetricsStore(home(ctx)).write_run(report, ctx.run_date)
    try:
        return str(refresh_views(home(ctx)))
    except duckdb.Error as exc:  # a damaged Parquet file must not break the views for every later query
        moved = quarantine_parquet(home(ctx)) + check_views_file(home(ctx))
        if not moved:
            raise
        print(f"views failed ({exc}); quarantined: {'; '.join(f.line() for f in moved)}")
        return f"{refresh_views(home(ctx))} (after quarantining {len(moved)} damaged file(s))"
