"""Steps 12-13 and the run's own metrics: persist learnings, detect patterns, refresh the views."""

from __future__ import annotations

from pathlib import Path

import duckdb
from nightwatch.knowledge_store.doctor import check_views_file, quarantine_parquet, quarantine_paths, quarantine_skipped
from nightwatch.knowledge_store.documents import update_doc_metadata, write_error_doc, write_pattern_doc
from nightwatch.knowledge_store.duck import ensure_views
from nightwatch.knowledge_store.index import KnowledgeIndex, open_index
from nightwatch.knowledge_store.metrics import MetricsStore, as_date
from nightwatch.knowledge_store.outcomes import apply_regressions, plan_regressions
from nightwatch.knowledge_store.schema import SCHEMA_VERSION
from nightwatch.knowledge_store.trend import TREND_FILE, write_trend
from nightwatch.tasks._prefect import nightwatch_task
from nightwatch.tasks.context import RunContext, home, settings_for

from nightwatch import clock
from nightwatch.fix import fix_digest
from nightwatch.ignore import noise_rules
from nightwatch.models import DetectedPattern, IgnoreSuggestion, RunReport
from nightwatch.patterns import detect_patterns as detect_patterns_core
from nightwatch.patterns import module_of, suggest_ignore_updates
from nightwatch.report import spent_again as spent_again_lines
from nightwatch.selection import Selection


@nightwatch_task(name="compound", step="12")
def compound(ctx: RunContext, report: RunReport, selection: Selection, digests: dict[str, dict[str, str]]) -> str:
    """Step 12: knowledge documents (upserted into the index one by one), and the night's metrics; idempotent per
    run_id. NIGHTWATCH_COMPOUND_ENABLED=false writes the metrics only."""
    keep = settings_for(ctx).compound_enabled
    with open_index(home(ctx) / "knowledge") as index:
        written, repaired = write_documents(ctx, report, index, digests) if keep and not ctx.dry_run else (0, [])
        snapshot = index.snapshot() if index.meta("snapshot_generation") != str(index.generation()) else None
        state = index.state()
    store = MetricsStore(home(ctx))
    store.write_errors(ctx.run_id, ctx.run_date, selection.found, {e.fingerprint for e in selection.selected}, selection.ignored)
    store.write_analyses(ctx.run_id, ctx.run_date, report.results, attempt=ctx.attempt)
    if snapshot is not None:
        store.write_knowledge_index(snapshot)
        with open_index(home(ctx) / "knowledge") as index:
            index.set_meta("snapshot_generation", str(state.generation))
    note = f"; quarantined {len(repaired)} damaged document(s): {'; '.join(repaired)}" if repaired else ""
    note += "" if keep else " (knowledge documents off: NIGHTWATCH_COMPOUND_ENABLED=false)"
    return f"{written} knowledge documents written, index holds {state.solutions}{note}"


def write_documents(ctx: RunContext, report: RunReport, index: KnowledgeIndex,
                    digests: dict[str, dict[str, str]]) -> tuple[int, list[str]]:
    """The night's fresh analyses and its issue and PR numbers into their documents, then into the index."""
    knowledge = home(ctx) / "knowledge"
    where = index.paths_of(r.fingerprint for r in report.results)
    damaged = [index.root / s["file"] for s in index.skipped()
               if any(s["file"].endswith(f"_{r.fingerprint[:8]}.md") for r in report.results)]
    repaired = [f.line() for f in quarantine_paths(home(ctx), [*where.values(), *damaged])]  # must not stop the writes
    where = {fp: path for fp, path in where.items() if path.exists()}
    written = 0
    for result in report.results:
        if result.analysis is not None and result.source in ("model", "triage") and result.run_id == ctx.run_id:
            path = write_error_doc(result, knowledge, file_hashes=digests.get(result.fingerprint),
                                   existing=where.get(result.fingerprint))
            where[result.fingerprint], written = path or where.get(result.fingerprint), written + 1
    # a regression the night flagged is an outcome of its own, recorded once (the row first, then the document), and
    # before tonight's PR number and change replace those of the fix that did not hold
    regressions = plan_regressions(knowledge, report.results, where, ctx.window.end)
    MetricsStore(home(ctx)).write_outcomes(ctx.run_id, ctx.run_date, ctx.attempt, [r.row for r in regressions if r.row],
                                           source="regressions")
    apply_regressions(knowledge, regressions)
    # an issue this night reopened is remembered as reopened, so the next sync does not take it for someone's outcome
    numbers = [(i.fingerprint, {"issue_number": i.issue_number, **({"issue_state": "open:reopened"} if i.reopened else {})})
               for i in report.issues if i.issue_number is not None]
    if report.pr and report.pr.pr_number is not None:  # with what it changes, to know that change again if it fails
        proposed = next((r.analysis for r in report.results if r.fingerprint == report.pr.fingerprint and r.analysis), None)
        digest = {"fix_digest": fix_digest(proposed.file_changes)} if proposed and proposed.file_changes else {}
        numbers.append((report.pr.fingerprint, {"pr_number": report.pr.pr_number, **digest}))
    for fingerprint, fields in numbers:
        update_doc_metadata(knowledge, fingerprint, path=where.get(fingerprint), **fields)
    synced = index.upsert([p for p in where.values() if p is not None] + damaged)
    repaired += [f.line() for f in quarantine_skipped(home(ctx), synced.skipped)]
    return written, repaired


@nightwatch_task(name="detect_patterns", step="13")
def detect_patterns(ctx: RunContext, report: RunReport, ignore_file: str | None) -> tuple[list[DetectedPattern], list[IgnoreSuggestion]]:
    """Step 13: cross-error and cross-run patterns, and ignore-rule suggestions for a human to review
    (nothing when NIGHTWATCH_PATTERNS_ENABLED=false). History is what the index holds of tonight's classes and
    modules, never the whole knowledge base."""
    if not settings_for(ctx).patterns_enabled:
        return [], []
    with open_index(home(ctx) / "knowledge") as index:
        history = index.history({r.error.error_class for r in report.results},
                                {module_of(r.error.transaction) for r in report.results})
        patterns = detect_patterns_core(report.results, history)
        in_force = noise_rules(Path(ignore_file) if ignore_file else None, defaults=settings_for(ctx).noise_defaults)
        suggestions = suggest_ignore_updates(report.results, history, [r.model_dump() for r in in_force])
        if not ctx.dry_run:
            index.upsert([write_pattern_doc(pattern, index.root) for pattern in patterns])
    return patterns, suggestions


def spent_again(ctx: RunContext, report: RunReport, storage: str) -> list[str]:
    """What this attempt paid for again, and why (nightwatch.report.spent_again), from the night's ledger."""
    store = MetricsStore(home(ctx))
    ledger = store.night_calls(ctx.run_id, ctx.run_date, columns=["call_id", "started_at", "fingerprint", "phase", "iteration"])
    finished = store.finished_by_other_attempts(ctx.run_id, ctx.run_date, ctx.attempt)
    return spent_again_lines(report.results, ctx.run_id, ledger, finished, storage)


def close_and_compact(ctx: RunContext, store: MetricsStore) -> tuple[list[Path], list[Path], Path]:
    """The night into one file per table (and any night that crashed before closing), closed months compacted, the
    views made if they are missing or older than the schema."""
    closed = store.close_night(ctx.run_id, ctx.run_date) + store.close_pending()
    # today's month, not the night's: a night rerun after its month closed joins that month's compaction at once
    today = max(as_date(ctx.run_date), clock.today())
    return closed, store.compact(today=today), ensure_views(home(ctx))


@nightwatch_task(name="record_run", step="-")
def record_run(ctx: RunContext, report: RunReport) -> str:
    """The run's own row; the night closed into one file per table; a month that has closed compacted into one file per
    table; the DuckDB views analysts query (made once, again only when the schema changes)."""
    store = MetricsStore(home(ctx))
    store.write_run(report, ctx.run_date)
    try:
        migrated, (closed, compacted, views) = store.migrate(), close_and_compact(ctx, store)
    except (duckdb.Error, OSError, ValueError) as exc:  # a damaged Parquet file must not break every later query
        moved = quarantine_parquet(home(ctx)) + check_views_file(home(ctx))
        if not moved:
            raise
        print(f"metrics failed ({exc}); quarantined: {'; '.join(f.line() for f in moved)}")
        migrated, (closed, compacted, views) = store.migrate(), close_and_compact(ctx, store)
    if report.reports_dir:
        write_trend(home(ctx), Path(report.reports_dir) / TREND_FILE)
    notes = [f"{len(closed)} night file(s)"] + ([f"{len(compacted)} month file(s) compacted"] if compacted else [])
    notes += [f"{migrated} file(s) migrated to schema {SCHEMA_VERSION}"] if migrated else []
    return f"{views} ({', '.join(notes)})"
