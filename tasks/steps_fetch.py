"""Steps 0-3.5: knowledge, connect, fetch_errors, fetch_traces, research."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from knowledge_store.doctor import check_index, quarantine_documents
from knowledge_store.index import KnowledgeIndexError, load_index
from knowledge_store.search import search_prior_knowledge
from nightwatch.ignore import noise_rules
from nightwatch.models import CorrelatedPR, ErrorGroup, SourceStatus, TraceData
from nightwatch.preflight import problems, run_checks
from nightwatch.research import ResearchContext, pr_lookback, research_error
from nightwatch.runtime import DEMO_IGNORE, ConfigurationError
from nightwatch.selection import Selection, select_errors
from nightwatch.trace_paths import locate_frames
from tasks._prefect import key, nightwatch_task
from tasks.context import RunContext, home, runtime, settings_for


@nightwatch_task(name="load_knowledge", step="0")
def load_knowledge(ctx: RunContext) -> dict:
    """Step 0: open the knowledge store and its index; a damaged index is rebuilt and damaged documents
    are quarantined (reported in the log and by `nightwatch doctor`), so the night goes on."""
    try:
        return load_index(home(ctx) / "knowledge")
    except KnowledgeIndexError as exc:
        for finding in quarantine_documents(home(ctx)) + check_index(home(ctx)):
            print(f"knowledge store repaired: {finding.line()}")
        print(f"knowledge index was damaged ({exc}); rebuilt")
        return load_index(home(ctx) / "knowledge")


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
    return str(DEMO_IGNORE) if runtime(ctx).state("newrelic") == "offline" and not settings.errors_file else None


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


@nightwatch_task(
    name="research", step="3.5",
    cache_key_fn=lambda _c, p: key("research", p["error"].fingerprint, p["ctx"].run_id, p["index"].get("last_updated")),
    cache_expiration=timedelta(days=2),
)
def research(ctx: RunContext, error: ErrorGroup, traces: TraceData, index: dict, prs: list[CorrelatedPR]) -> ResearchContext:
    """Step 3.5: prior knowledge, likely files, previews, correlated PRs."""
    priors = search_prior_knowledge(error, index, home(ctx) / "knowledge")
    return research_error(error, traces, runtime(ctx).host, priors, prs)
