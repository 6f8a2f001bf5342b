"""Outcomes into the knowledge: each change of an issue's or PR's state moves its analysis's document and index row.

The document keeps the last state it saw of its issue and of its PR (`issue_state`, `pr_state`), so a
change is applied once: a retry or rerun of the night observes the same states and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from knowledge_store.documents import update_doc_metadata
from knowledge_store.index import KnowledgeIndex, KnowledgeState
from nightwatch.outcomes import Observed, OutcomeChange, changes

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
        if update_doc_metadata(index.root, change.fingerprint, path=path if path.is_file() else None, **change.fields()):
            touched.append(path)
    index.upsert(touched)
    index.set_meta(SYNCED_AT, synced_at.isoformat())


def outcome_changes(index: KnowledgeIndex, observed: dict[tuple[str, int], Observed]) -> list[OutcomeChange]:
    return changes(index.filed(), observed)
