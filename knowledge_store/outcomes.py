"""Outcomes into the knowledge: each change of an issue's or PR's state moves its analysis's document and index row.

The document keeps the last state it saw of its issue and of its PR (`issue_state`, `pr_state`), so a
change is applied once: a retry or rerun of the night observes the same states and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from nightwatch.knowledge_store.documents import read_doc, update_doc_metadata
from nightwatch.knowledge_store.index import KnowledgeIndex, KnowledgeState
from pydantic import BaseModel, Field

from nightwatch.models import ErrorAnalysisResult
from nightwatch.outcomes import Observed, OutcomeChange, changes, failed_fix_fields, regression_record

SYNCED_AT = "outcomes_synced_at"


class OutcomeSync(BaseModel):
    """What the night's outcome sync found, and the knowledge index's state after it (research is keyed on it)."""

    changes: list[OutcomeChange] = Field(default_factory=list)
    knowledge: KnowledgeState

    def lines(self) -> list[str]:
        return [f"{c.note} ({c.fingerprint})" for c in self.changes if c.judged]


def last_synced(index: KnowledgeIndex) -> datetime | None:
    value = index.meta(SYNCED_AT)
    return datetime.fromisoformat(value) if value else None


def apply_changes(index: KnowledgeIndex, found: list[OutcomeChange], synced_at: datetime) -> None:
    """Each change into its document (fix state, trust, outcome, the state seen), then the documents into the index."""
    touched: list[Path] = []
    for change in found:
        path = index.root / change.path
        failed = failed_fix_fields(read_doc(path)[0], change.fix_state, change.note) if path.is_file() else {}
        if update_doc_metadata(index.root, change.fingerprint, path=path if path.is_file() else None,
                               **change.fields(), **failed):
            touched.append(path)
    index.upsert(touched)
    index.set_meta(SYNCED_AT, synced_at.isoformat())


def outcome_changes(index: KnowledgeIndex, observed: dict[tuple[str, int | str], Observed]) -> list[OutcomeChange]:
    return changes(index.filed(), observed)


class RegressionRecord(BaseModel):
    """A regression the night flagged, to record once: its document's new fields, and its outcome row (if any)."""

    path: Path
    fingerprint: str
    fields: dict[str, object]
    row: OutcomeChange | None = None


def plan_regressions(knowledge: Path, results: list[ErrorAnalysisResult], where: dict[str, Path],
                     night_end: datetime) -> list[RegressionRecord]:
    """What each regression the night flagged changes (nightwatch.outcomes.regression_record); nothing for one already
    recorded. The caller writes the rows, then applies the fields: a crash between the two never loses a row."""
    planned = []
    for result in results:
        path = where.get(result.fingerprint)
        if not result.regression or path is None or not path.is_file():
            continue
        fields, row = regression_record(result.fingerprint, path.relative_to(knowledge).as_posix(), result.regression,
                                        night_end, read_doc(path)[0])
        if fields:
            planned.append(RegressionRecord(path=path, fingerprint=result.fingerprint, fields=fields, row=row))
    return planned


def apply_regressions(knowledge: Path, planned: list[RegressionRecord]) -> list[Path]:
    return [p for r in planned if (p := update_doc_metadata(knowledge, r.fingerprint, path=r.path, **r.fields))]
