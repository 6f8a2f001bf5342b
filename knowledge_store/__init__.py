"""NightWatch's memory: knowledge documents, their index and search, Parquet metrics, DuckDB views.

- documents: one Markdown + YAML document per error fingerprint (and per detected pattern)
- index / search: `index.duckdb` holds a row per document; search looks up candidates, scores only those
- outcomes: what people did with NightWatch's issues and PRs, into the documents' trust
- schema / metrics / layout: versioned Parquet tables (runs, errors, analyses, model_calls, tool_calls,
  outcomes, knowledge_index), written atomically and idempotently per night, one file per table per
  night and per closed month
- duck / summary / trend: `nightwatch.duckdb`, views over the Parquet for analysts (see SCHEMA.md for the
  columns); `nightwatch metrics` and its trend picture

Every file is written through `atomic`: readers never see a partial file.
"""

from nightwatch.knowledge_store.documents import (
    KnowledgeDocError,
    find_error_doc,
    read_doc,
    update_doc_metadata,
    write_error_doc,
    write_pattern_doc,
)
from nightwatch.knowledge_store.duck import ANALYST_QUERIES, ViewsLockedError, connect_readonly, refresh_views
from nightwatch.knowledge_store.index import KnowledgeIndex, KnowledgeIndexError, open_index
from nightwatch.knowledge_store.metrics import MetricsStore, MetricsWriteError
from nightwatch.knowledge_store.schema import MIGRATIONS, SCHEMA_VERSION, TABLES, render_schema_doc, schema_for
from nightwatch.knowledge_store.search import extract_tags, search_prior_knowledge

from nightwatch.atomic import atomic_write_bytes, atomic_write_text

__all__ = [
    "ANALYST_QUERIES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "KnowledgeDocError",
    "KnowledgeIndex",
    "KnowledgeIndexError",
    "MetricsStore",
    "MetricsWriteError",
    "ViewsLockedError",
    "atomic_write_bytes",
    "atomic_write_text",
    "connect_readonly",
    "extract_tags",
    "find_error_doc",
    "open_index",
    "read_doc",
    "refresh_views",
    "render_schema_doc",
    "schema_for",
    "search_prior_knowledge",
    "update_doc_metadata",
    "write_error_doc",
    "write_pattern_doc",
]
