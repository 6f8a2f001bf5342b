"""Error sources: New Relic over NerdGraph, or a NerdGraph export file (the offline demo)."""

from nightwatch.sources.base import ErrorBatch, ErrorSource, SourceError
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.sources.nerdgraph import NerdGraphClient, NerdGraphSource

__all__ = ["ErrorBatch", "ErrorSource", "ExportFileSource", "NerdGraphClient", "NerdGraphSource", "SourceError"]
