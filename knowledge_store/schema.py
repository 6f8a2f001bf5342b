"""The metrics schema: explicit, versioned pyarrow schemas for every Parquet table.

Like a database with numbered migrations (`m001_initial`, `m002_...`), the schema is the result of
applying `MIGRATIONS` in order. Parquet files are immutable, so a migration may only ADD tables or
nullable columns, never rename or retype one: files written under an older version stay readable,
and the DuckDB views (knowledge_store/duck.py) show the newer columns as NULL for them. Every row
carries the `schema_version` that wrote it.

`SCHEMA.md` beside this module is generated from this file by `render_schema_doc()`; a test keeps
the two equal, so the documentation cannot drift from the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pyarrow as pa

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    description: str
    nullable: bool = True


def _tokens(what: str) -> list[Column]:
    """The five token counters every metered table repeats, named the same everywhere."""
    return [
        Column("input_tokens", pa.int64(), f"Uncached input tokens {what}."),
        Column("output_tokens", pa.int64(), f"Output tokens {what} (thinking included, as billed)."),
        Column("cache_write_tokens", pa.int64(), f"Input tokens written to the prompt cache {what}."),
        Column("cache_read_tokens", pa.int64(), f"Input tokens read from the prompt cache {what}."),
        Column("thinking_tokens", pa.int64(), f"Extended-thinking tokens {what} (a part of output_tokens)."),
    ]


_RUN_ID = Column("run_id", pa.string(), "The night's run id, exactly as the flow named it.", nullable=False)
_FINGERPRINT = Column("fingerprint", pa.string(), "Stable 16-hex identity of the error group.", nullable=False)
_VERSION = Column("schema_version", pa.int32(), "SCHEMA_VERSION of the code that wrote the row.", nullable=False)

_M001_RUNS = [
    _RUN_ID,
    Column("started_at", UTC_TIMESTAMP, "When the run started (UTC).", nullable=False),
    Column("finished_at", UTC_TIMESTAMP, "When the run finished (UTC); null if it did not finish."),
    Column("window_start", UTC_TIMESTAMP, "Start of the lookback window (inclusive)."),
    Column("window_end", UTC_TIMESTAMP, "End of the lookback window (exclusive)."),
    Column("mode", pa.string(), "batch (scheduled, Message Batches) or interactive (direct calls)."),
    Column("dry_run", pa.bool_(), "True when no issue, PR or message was sent."),
    Column("demo_data", pa.bool_(), "True when the errors came from the bundled demo dataset."),
    Column("offline_model", pa.bool_(), "True when the deterministic offline model answered instead of Claude."),
    Column("agent", pa.string(), "Agent definition used for investigations."),
    Column("model", pa.string(), "Model used for investigations."),
    Column("errors_found", pa.int64(), "Error groups returned by the source for the window."),
    Column("errors_ignored", pa.int64(), "Error groups dropped by ignore rules."),
    Column("errors_selected", pa.int64(), "Error groups kept after ranking (top N)."),
    Column("errors_analysed", pa.int64(), "Selected errors that ended with an analysis."),
    Column("from_cache", pa.int64(), "Analyses reused from the task cache (no tokens spent)."),
    Column("from_knowledge", pa.int64(), "Analyses answered from the knowledge base."),
    Column("issues_created", pa.int64(), "GitHub issues created (comments on existing issues not counted)."),
    Column("pr_created", pa.bool_(), "True when a draft fix PR was opened."),
    *_tokens("over the run"),
    Column("cost_usd", pa.float64(), "Model cost of the run in US dollars."),
    Column("model_calls", pa.int64(), "Number of model calls in the run."),
    Column("iterations", pa.int64(), "Agent iterations summed over the run."),
    _VERSION,
]

_M001_ERRORS = [
    _RUN_ID,
    _FINGERPRINT,
    Column("error_class", pa.string(), "Exception class, e.g. ActiveRecord::RecordNotFound."),
    Column("transaction", pa.string(), "Transaction name, e.g. Controller/orders/update."),
    Column("message", pa.string(), "Error message, redacted and capped."),
    Column("occurrences", pa.int64(), "Occurrences in the window."),
    Column("rank_score", pa.float64(), "Ranking score used to pick the top N."),
    Column("first_seen", UTC_TIMESTAMP, "First occurrence in the window."),
    Column("last_seen", UTC_TIMESTAMP, "Last occurrence in the window."),
    Column("selected", pa.bool_(), "True when the error was selected for analysis."),
    Column("ignored_by", pa.string(), "The ignore rule that dropped the error; null if none did."),
    Column("app_name", pa.string(), "APM application name."),
    Column("http_status", pa.int64(), "HTTP status of the failing transaction, when known."),
    _VERSION,
]

_M001_ANALYSES = [
    _RUN_ID,
    _FINGERPRINT,
    Column("error_class", pa.string(), "Exception class."),
    Column("transaction", pa.string(), "Transaction name."),
    Column("occurrences", pa.int64(), "Occurrences in the window."),
    Column("route", pa.string(), "Triage route: known, transient, simple or deep; null without triage."),
    Column("severity", pa.string(), "Triage severity: critical, high, medium or low."),
    Column("source", pa.string(), "Where the answer came from: model, cache, knowledge, triage or skipped."),
    Column("agent", pa.string(), "Agent definition used."),
    Column("model", pa.string(), "Model used."),
    Column("confidence", pa.string(), "Confidence of the analysis (high, medium, low); null without one."),
    Column("has_fix", pa.bool_(), "True when the analysis carries concrete file changes."),
    Column("iterations", pa.int64(), "Agent iterations spent."),
    *_tokens("for this error"),
    Column("cost_usd", pa.float64(), "Model cost for this error in US dollars."),
    Column("model_calls", pa.int64(), "Model calls for this error."),
    Column("tool_calls", pa.int64(), "Tool calls for this error."),
    Column("files_examined", pa.int64(), "Distinct files the agent read."),
    Column("prior_analyses", pa.int64(), "Prior analyses found in the knowledge base."),
    Column("duration_s", pa.float64(), "Wall time of the analysis in seconds."),
    Column("failure", pa.string(), "Why the analysis failed; null when it did not."),
    Column("analysed_at", UTC_TIMESTAMP, "When the row was written (UTC)."),
    _VERSION,
]

_M001_MODEL_CALLS = [
    Column("call_id", pa.string(), "Unique id of the call.", nullable=False),
    _RUN_ID,
    _FINGERPRINT,
    Column("phase", pa.string(), "triage, investigate, wrapup or summarise."),
    Column("iteration", pa.int64(), "Agent iteration (0 for triage)."),
    Column("model", pa.string(), "Model name as sent to the API."),
    Column("mode", pa.string(), "direct, batch (Message Batches, half price) or offline."),
    *_tokens("in this call"),
    Column("cost_usd", pa.float64(), "Cost of the call in US dollars."),
    Column("price_table", pa.string(), "Version of the price table the cost was computed with."),
    Column("latency_ms", pa.int64(), "Wall time of the call in milliseconds."),
    Column("stop_reason", pa.string(), "stop_reason returned by the model."),
    Column("started_at", UTC_TIMESTAMP, "When the call started (UTC)."),
    _VERSION,
]

_M001_TOOL_CALLS = [
    _RUN_ID,
    _FINGERPRINT,
    Column("part", pa.string(), "The analysis part that wrote the row (fingerprint and phase)."),
    Column("seq", pa.int64(), "Order of the call within its part."),
    Column("iteration", pa.int64(), "Agent iteration that asked for the tool."),
    Column("name", pa.string(), "Tool name: read_file, search_code, list_directory, ..."),
    Column("ok", pa.bool_(), "False when the tool answered with an error."),
    Column("result_chars", pa.int64(), "Characters returned to the model."),
    Column("cached", pa.bool_(), "True when the code cache answered."),
    Column("latency_ms", pa.int64(), "Wall time of the tool in milliseconds."),
    _VERSION,
]

_M002_CONTEXT_COLUMNS = [
    Column("edits_applied", pa.int64(), "Server-side context edits applied to this call."),
    Column("tokens_cleared", pa.int64(), "Input tokens removed by context editing."),
    Column("compactions", pa.int64(), "Compactions performed before or during this call."),
    Column("watcher_actions", pa.int64(), "Sections the proactive watcher compacted before this call."),
    Column("checkpoint_id", pa.string(), "Checkpoint written before this call, if any."),
]

_M003_KNOWLEDGE_INDEX = [
    Column("kind", pa.string(), "solution (an error document) or pattern.", nullable=False),
    Column("file", pa.string(), "Document path relative to the knowledge folder.", nullable=False),
    Column("fingerprint", pa.string(), "Error fingerprint; null for patterns."),
    Column("error_class", pa.string(), "Exception class (for patterns: the first of them)."),
    Column("transaction", pa.string(), "Transaction name; null for patterns."),
    Column("title", pa.string(), "Pattern title; null for solutions."),
    Column("fix_confidence", pa.string(), "Confidence of the latest analysis."),
    Column("has_fix", pa.bool_(), "True when the latest analysis proposed file changes."),
    Column("fix_confirmed", pa.bool_(), "True once a fix was confirmed (merged and the error stopped)."),
    Column("tags", pa.list_(pa.string()), "Search tags derived from class and transaction."),
    Column("first_detected", pa.string(), "ISO date of the first analysis."),
    Column("last_run_id", pa.string(), "Run that last updated the document."),
    Column("run_count", pa.int64(), "Number of runs that saw the error."),
    Column("occurrences", pa.int64(), "Occurrences summed over those runs."),
    Column("issue_number", pa.int64(), "GitHub issue filed for the error."),
    Column("pr_number", pa.int64(), "Draft PR proposed for the error."),
    Column("root_cause", pa.string(), "Root cause summary."),
    Column("file_hashes", pa.map_(pa.string(), pa.string()), "sha256 of each cited file at analysis time."),
    Column("indexed_at", UTC_TIMESTAMP, "When the index was rebuilt."),
    _VERSION,
]

_M004_CALL_STATUS = [
    Column("status", pa.string(), "ok (answered, metered from its usage), unconfirmed (the answer was lost after the server "
           "may have billed it: estimated input tokens, no output) or failed (refused, not billed); null before m004: ok."),
]

_M005_CACHE_WRITE_1H = [
    Column("cache_write_1h_tokens", pa.int64(), "Of cache_write_tokens, those written with the 1-hour TTL (priced 2x input "
           "instead of 1.25x); null before m005: none."),
]

_M005_RUN_OUTCOME = [
    Column("errors_failed", pa.int64(), "Selected errors whose analysis failed (listed with reasons in the report); "
           "null before m005."),
    Column("attempts", pa.int64(), "Flow runs that worked on this night so far (a retry or rerun of the window is the "
           "same night); null before m005."),
]

_M006_TOOL_DIET = [
    Column("full_chars", pa.int64(), "Characters the answer would have had without the diet (the whole file or range, "
           "every search hit with its path, lines already in view shown again); result_chars when nothing was withheld; "
           "null before m006."),
]

_M007_KNOWLEDGE_TRUST = [
    Column("fix_state", pa.string(), "What people did with the analysis: none, proposed, merged, rejected, reverted or "
           "regressed (synced from the issue and PR each night); null before m007."),
    Column("trust", pa.float64(), "How far the analysis is trusted, 0 to 1 (0.5 until an outcome is known); null before m007."),
    Column("fix_merged_at", UTC_TIMESTAMP, "When its fix was merged; null if never (or before m007)."),
]

_M008_OUTCOMES = [
    _RUN_ID,
    _FINGERPRINT,
    Column("kind", pa.string(), "issue or pr (GitHub's), or tracker (the error's issue in Sentry or Bugsink, since "
           "m012).", nullable=False),
    Column("number", pa.int64(), "The issue's or PR's number; a tracker issue's numeric id (Sentry's), 0 where it has "
           "none (Bugsink's: `url` names it).", nullable=False),
    Column("state", pa.string(), "What the tracker says now: open, closed:<reason>, merged, reverted.", nullable=False),
    Column("previous_state", pa.string(), "The state the knowledge document recorded before; null the first time."),
    Column("fix_state", pa.string(), "What the change means for the analysis: merged, resolved, rejected, reverted, regressed; "
           "null when it means nothing yet (still open)."),
    Column("trust", pa.float64(), "The analysis's trust after the change; null when unchanged."),
    Column("note", pa.string(), "The change in one line, as the report and the next prompt show it."),
    Column("changed_at", UTC_TIMESTAMP, "When the tracker says the state changed (merged_at, closed_at); when it does not say, when NightWatch first saw it."),
    Column("url", pa.string(), "The issue's or PR's web address."),
    _VERSION,
]

_M009_REGRESSION = [
    Column("regression", pa.string(), "Why the error is a regression (back after its fix merged, or its issue reopened); "
           "null when it is not (or before m009)."),
]

_M010_VERIFICATION = [
    Column("verification", pa.string(), "The fix's regression test in the sandbox: verified, reproduced, not fixed, not "
           "reproduced or not run; null when the analysis had neither a fix nor a test, or before m010."),
    Column("verification_reason", pa.string(), "Why, in one line (what the test showed, or why it did not run)."),
]

_M011_SOURCE = [
    Column("source", pa.string(), "Where the night's errors came from: newrelic, sentry or bugsink (live or from a file of "
           "theirs); null before m011: newrelic."),
]

_M011_ERROR_FACTS = [
    Column("users", pa.int64(), "Users affected in the window, where the source counts them (Sentry); null otherwise."),
    Column("level", pa.string(), "The level the application reported it at (fatal, error, warning, ...), where the source "
           "says; null otherwise."),
    Column("handled", pa.bool_(), "False when nothing caught the error, true when the application caught and reported it; "
           "null where the source does not say."),
    Column("issue_id", pa.string(), "The tracker's own id of the error (a Sentry issue); null for New Relic."),
    Column("url", pa.string(), "Where a person reads the error in the tracker; null where there is none."),
]

_M012_RELEASES = [
    Column("first_release", pa.string(), "The release the tracker first saw the error in, where it says (Sentry's "
           "firstRelease, Bugsink's first release with events); null otherwise."),
    Column("tracker_status", pa.string(), "What the team did with the error in Sentry or Bugsink: resolved, ignored, "
           "regressed, unresolved; null for New Relic."),
]

MIGRATIONS: list[tuple[str, dict[str, list[Column]]]] = [
    (
        "m001_initial",
        {
            "runs": _M001_RUNS,
            "errors": _M001_ERRORS,
            "analyses": _M001_ANALYSES,
            "model_calls": _M001_MODEL_CALLS,
            "tool_calls": _M001_TOOL_CALLS,
        },
    ),
    ("m002_context_management", {"model_calls": _M002_CONTEXT_COLUMNS}),
    ("m003_knowledge_index", {"knowledge_index": _M003_KNOWLEDGE_INDEX}),
    ("m004_call_status", {"model_calls": _M004_CALL_STATUS}),
    ("m005_night_outcome", {"model_calls": _M005_CACHE_WRITE_1H, "analyses": _M005_CACHE_WRITE_1H,
                            "runs": _M005_CACHE_WRITE_1H + _M005_RUN_OUTCOME}),
    ("m006_tool_diet", {"tool_calls": _M006_TOOL_DIET}),
    ("m007_knowledge_trust", {"knowledge_index": _M007_KNOWLEDGE_TRUST}),
    ("m008_outcomes", {"outcomes": _M008_OUTCOMES}),
    ("m009_regressions", {"analyses": _M009_REGRESSION}),
    ("m010_verification", {"analyses": _M010_VERIFICATION}),
    ("m011_error_sources", {"runs": _M011_SOURCE, "errors": _M011_ERROR_FACTS}),
    ("m012_releases", {"errors": _M012_RELEASES}),
]
SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(ValueError):
    """A migration breaks the add-only rule, or a table name is unknown."""


def apply_migrations(migrations: list[tuple[str, dict[str, list[Column]]]]) -> dict[str, list[Column]]:
    """Fold the migrations into {table: columns}; refuse redefinitions, which Parquet cannot honour."""
    tables: dict[str, list[Column]] = {}
    for name, changes in migrations:
        for table, columns in changes.items():
            is_new_table = table not in tables
            existing = {c.name for c in tables.setdefault(table, [])}
            for column in columns:
                if column.name in existing:
                    raise SchemaError(f"migration {name} redefines {table}.{column.name}; migrations may only add")
                if not (is_new_table or column.nullable):
                    raise SchemaError(f"migration {name} adds {table}.{column.name} as NOT NULL; older files lack it")
                tables[table].append(column)
                existing.add(column.name)
    return tables


@cache
def table_columns() -> dict[str, tuple[Column, ...]]:
    return {table: tuple(columns) for table, columns in apply_migrations(MIGRATIONS).items()}


TABLES: tuple[str, ...] = tuple(table_columns())


def schema_for(table: str) -> pa.Schema:
    """The pyarrow schema of `table` at SCHEMA_VERSION, with descriptions as field metadata."""
    try:
        columns = table_columns()[table]
    except KeyError:
        raise SchemaError(f"unknown metrics table {table!r}; known tables: {', '.join(TABLES)}") from None
    fields = [pa.field(c.name, c.type, nullable=c.nullable, metadata={"description": c.description}) for c in columns]
    meta = {"nightwatch.table": table, "nightwatch.schema_version": str(SCHEMA_VERSION)}
    return pa.schema(fields, metadata=meta)


def duckdb_type(arrow_type: pa.DataType) -> str:
    """The DuckDB SQL type of a pyarrow type used here (what analysts see in the views)."""
    if pa.types.is_list(arrow_type):
        return f"{duckdb_type(arrow_type.value_type)}[]"
    if pa.types.is_map(arrow_type):
        return f"MAP({duckdb_type(arrow_type.key_type)}, {duckdb_type(arrow_type.item_type)})"
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMPTZ" if arrow_type.tz else "TIMESTAMP"
    if arrow_type not in _SQL_TYPES:
        raise SchemaError(f"no DuckDB type known for {arrow_type}; extend duckdb_type()")
    return _SQL_TYPES[arrow_type]


_SQL_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    pa.date32(): "DATE",
}


def introduced_in() -> dict[tuple[str, str], str]:
    """(table, column) -> the migration that added it, for the generated documentation."""
    seen: dict[tuple[str, str], str] = {}
    for name, changes in MIGRATIONS:
        for table, columns in changes.items():
            for column in columns:
                seen.setdefault((table, column.name), name)
    return seen


def render_schema_doc() -> str:
    """Markdown documentation of every table; SCHEMA.md is exactly this text."""
    origin = introduced_in()
    lines = [
        "# Metrics schema",
        "",
        "<!-- Generated by knowledge_store.schema.render_schema_doc(); do not edit by hand. -->",
        "",
        f"Schema version: **{SCHEMA_VERSION}**. Parquet files live under",
        "`$NIGHTWATCH_HOME/metrics/<table>/month=YYYY-MM/`: one file per night (`<date>_<run>.parquet`), or",
        "`compacted.parquet` once the month closed (`knowledge_index` is one snapshot,",
        "`metrics/knowledge_index/current.parquet`); a night's parts are staged under `metrics/.staging/` until",
        "its month is compacted (knowledge_store/layout.py). Every file but `knowledge_index` also has `date`",
        "(the night's date); `$NIGHTWATCH_HOME/nightwatch.duckdb` has one view per table (with the `month`",
        "partition) and the views `cost_by_day`, `iterations_by_error_class` and `cache_hit_rate`.",
        "Migrations only add tables or nullable columns; a night after an upgrade rewrites older files in the",
        "current schema (newer columns NULL), so the views never need `union_by_name`.",
        "",
        "## Migrations",
        "",
    ]
    lines += [f"{i}. `{name}`: {', '.join(sorted(changes))}" for i, (name, changes) in enumerate(MIGRATIONS, 1)]
    for table, columns in table_columns().items():
        lines += ["", f"## {table}", "", "| column | DuckDB type | Arrow type | null | since | description |"]
        lines.append("|---|---|---|---|---|---|")
        for c in columns:
            null = "yes" if c.nullable else "no"
            types = f"`{duckdb_type(c.type)}` | `{c.type}`"
            lines.append(f"| `{c.name}` | {types} | {null} | {origin[(table, c.name)]} | {c.description} |")
    return "\n".join(lines) + "\n"
