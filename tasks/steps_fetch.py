"""Steps 0-3.5: knowledge, connect, fetch_errors, fetch_traces, research."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from nightwatch.knowledge_store.doctor import quarantine_skipped
from nightwatch.knowledge_store.index import KnowledgeState, open_index
from nightwatch.knowledge_store.metrics import MetricsStore
from nightwatch.knowledge_store.outcomes import OutcomeSync, apply_changes, last_synced, outcome_changes
from nightwatch.knowledge_store.search import search_prior_knowledge
from nightwatch.tasks._prefect import key, nightwatch_task
from nightwatch.tasks.context import RunContext, home, runtime, settings_for
from prefect import get_run_logger

from nightwatch.ignore import noise_rules
from nightwatch.models import CorrelatedPR, Deploy, ErrorGroup, SourceStatus, TraceData, Window
from nightwatch.outcomes import Filed, Observed, mark_regression
from nightwatch.preflight import problems, run_checks
from nightwatch.research import ResearchContext, files_from_traces, pr_lookback, research_error
from nightwatch.runtime import ConfigurationError, demo_file
from nightwatch.selection import Selection, select_errors
from nightwatch.sources.sentry import MAX_VERDICTS
from nightwatch.trace_paths import locate_frames


@nightwatch_task(name="load_knowledge", step="0")
def load_knowledge(ctx: RunContext) -> KnowledgeState:
    """Step 0: open the knowledge index and take in documents people added, edited or removed since the last
    night (a damaged index is rebuilt from the documents; a document whose frontmatter does not parse is
    quarantined, one that lacks a field is skipped and named); tasks get the index's path, never its contents."""
    with open_index(home(ctx) / "knowledge") as index:
        changes = [index.rebuilt.line()] if index.rebuilt else []
        synced = index.sync()
        moved = quarantine_skipped(home(ctx), index.skipped())
        index.upsert([home(ctx) / finding.what for finding in moved])  # gone: the index forgets them
        skipped, state = index.skipped(), index.state()
    if synced.upserted or synced.removed:
        changes.append(synced.line())
    for line in [f"knowledge index: {c}" for c in changes] + [f"knowledge document quarantined: {f.line()}" for f in moved]:
        print(line)
    for entry in skipped:
        print(f"knowledge document skipped (fix it and the next night indexes it): {entry['file']}: {entry['reason']}")
    return state


@nightwatch_task(name="sync_outcomes", step="1.5", retries=2, retry_delay_seconds=5)
def sync_outcomes(ctx: RunContext, knowledge: KnowledgeState) -> OutcomeSync:
    """Step 1.5: what people did with the issues and fix PRs NightWatch filed (merged, closed, reverted, reopened)
    goes into their analyses' documents (fix state, trust) and the `outcomes` table, before anything is searched."""
    started = datetime.now(timezone.utc)  # the next sync asks the tracker what changed since: the tracker's clock
    with open_index(Path(knowledge.path)) as index:
        filed = index.filed()
        on_github = [d for d in filed if d.issue_number is not None or d.pr_number is not None]
        observed = runtime(ctx).issues.observe_outcomes(on_github, last_synced(index)) if on_github else {}
        observed |= tracker_verdicts(ctx, filed)
        found = outcome_changes(index, observed)
        if not ctx.dry_run:  # the rows first: a crash after the documents moved would leave a change never recorded
            MetricsStore(home(ctx)).write_outcomes(ctx.run_id, ctx.run_date, ctx.attempt, found)
            apply_changes(index, found, started)
        state = index.state()
    return OutcomeSync(changes=found, knowledge=state)


def nightly_turn(ids: list[str], night: int, limit: int) -> list[str]:
    """`ids` (newest analyses first) from where night number `night` takes its turn: past `limit` a night, each night
    starts `limit` further on, so every issue is asked within len(ids) / limit nights (a rerun takes the same turn)."""
    if len(ids) <= limit:
        return ids
    start = (night * limit) % len(ids)
    return ids[start:] + ids[:start]


def tracker_verdicts(ctx: RunContext, filed: list[Filed]) -> dict[tuple[str, int | str], Observed]:
    """What the team did in Sentry or Bugsink with the errors analysed from it (newest analyses first, then in turns:
    nightly_turn); nothing where the night's source keeps no verdicts (New Relic); a tracker that fails leaves a
    warning, never a failed step."""
    observe = getattr(runtime(ctx).source, "observe_verdicts", None)
    ids = list(dict.fromkeys(d.tracker_issue for d in reversed(filed) if d.tracker_issue))
    if not callable(observe) or not ids:
        return {}
    ids = nightly_turn(ids, ctx.window.end.date().toordinal(), MAX_VERDICTS)
    try:
        found, notes = observe(ids)
    except Exception as exc:  # noqa: BLE001 - the tracker's verdicts never cost the night GitHub's outcomes
        found, notes = {}, [f"error tracker verdicts not read: {type(exc).__name__}: {str(exc)[:300]}"]
    for note in notes:
        get_run_logger().warning(note)
    return found


@nightwatch_task(name="connect", step="1")
def connect(ctx: RunContext) -> list[SourceStatus]:
    """Step 1: build clients; say which sources are live and which are offline defaults; verify what is cheap
    to verify (a refused key, an unknown model or agent ends the night here, as a configuration error)."""
    rt = runtime(ctx)
    bad = problems(run_checks(settings_for(ctx), rt.statuses))
    if bad:
        raise ConfigurationError("; ".join(f"{c.name}: {c.detail}" for c in bad))
    return rt.statuses


def ignore_file_of(ctx: RunContext) -> str | None:
    """The ignore rules in force: the configured file, or the demo's own rules on demo data."""
    settings = settings_for(ctx)
    if settings.ignore_file:
        return str(settings.ignore_file)
    demo_rules = demo_file(settings, "ignore.yml")  # the Python demo has none of its own
    offline_demo = runtime(ctx).source_state == "offline" and not settings.errors_file
    return str(demo_rules) if offline_demo and demo_rules.is_file() else None


@nightwatch_task(
    name="fetch_errors", step="2", retries=2, retry_delay_seconds=5,
    cache_key_fn=lambda _c, p: key("fetch_errors", runtime(p["ctx"]).source.name, p["ctx"].run_id, p["ctx"].max_errors,
                                   ignore_file_of(p["ctx"]), settings_for(p["ctx"]).noise_defaults),
    cache_expiration=timedelta(days=2),
)
def fetch_errors(ctx: RunContext) -> Selection:
    """Step 2: NRQL over the window, the team's ignore rules and the shipped noise rules, ranking, top N."""
    path = ignore_file_of(ctx)
    rules = noise_rules(Path(path) if path else None, defaults=settings_for(ctx).noise_defaults)
    return select_errors(runtime(ctx).source, ctx.window, rules, ctx.max_errors, ctx.anchor)


@nightwatch_task(
    name="fetch_traces", step="3", retries=2, retry_delay_seconds=5,
    cache_key_fn=lambda _c, p: key("fetch_traces", p["error"].fingerprint, p["ctx"].run_id,
                                   runtime(p["ctx"]).host.name, settings_for(p["ctx"]).path_prefixes),
    cache_expiration=timedelta(days=2),
)
def fetch_traces(ctx: RunContext, error: ErrorGroup) -> TraceData:
    """Step 3: traces and stack frames of one selected error, each frame named by its repository path."""
    rt = runtime(ctx)
    return locate_frames(rt.source.fetch_traces(error, ctx.window), rt.paths)


@nightwatch_task(name="recent_prs", step="3.5", retries=2, retry_delay_seconds=5)
def recent_prs(ctx: RunContext) -> list[CorrelatedPR]:
    """Recently merged PRs on the default branch (input of research and step 8)."""
    return runtime(ctx).host.recent_merged_prs(since=pr_lookback(ctx.window.end))


@nightwatch_task(name="deploys", step="3.5", retries=2, retry_delay_seconds=5)
def deploys(ctx: RunContext) -> list[Deploy]:
    """The application's deploy markers (New Relic change tracking) over the PR lookback: when each suspect commit
    reached production. None where the source has none; a query that fails leaves a warning, never a failed night."""
    fetch = getattr(runtime(ctx).source, "fetch_deploys", None)
    if fetch is None:
        return []
    found, notes = fetch(Window(start=pr_lookback(ctx.window.end), end=ctx.window.end))
    for note in notes:
        get_run_logger().warning(f"deploy markers: {note}")
    return found


@nightwatch_task(
    name="research", step="3.5",
    cache_key_fn=lambda _c, p: key("research", p["error"].fingerprint, p["ctx"].run_id, p["knowledge"].generation),
    cache_expiration=timedelta(days=2),
)
def research(ctx: RunContext, error: ErrorGroup, traces: TraceData, knowledge: KnowledgeState,
             prs: list[CorrelatedPR], deploys: list[Deploy] | None = None) -> ResearchContext:
    """Step 3.5: prior knowledge, likely files, previews, correlated PRs."""
    with open_index(Path(knowledge.path)) as index:
        priors = search_prior_knowledge(error, index, files=files_from_traces(traces))
    found = research_error(error, traces, runtime(ctx).host, priors, prs, deploys=deploys)
    lag = timedelta(hours=settings_for(ctx).regression_lag_hours)
    return mark_regression(found, error, error.last_seen or ctx.window.end, lag, night_end=ctx.window.end)
