"""Knowledge search: find earlier analyses of the same or a similar error, index first.

Scoring (seed 002, section 4.2): the same fingerprint is the same error (1.0); otherwise the same
error class scores 0.5, the same transaction 0.3 (ids masked, so `orders/123` meets `orders/456`)
and each shared tag 0.1, capped at 1.0. Only the best `max_results` documents are opened; one
that has gone missing or bad since the index was built is passed over for the next best.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from knowledge_store.documents import KnowledgeDocError, read_doc, section
from nightwatch.fingerprint import normalise_transaction
from nightwatch.models import Confidence, ErrorGroup, PriorAnalysis
from nightwatch.patterns import extract_tags

__all__ = ["extract_tags", "score_entry", "search_prior_knowledge"]

CLASS_WEIGHT = 0.5
TRANSACTION_WEIGHT = 0.3
TAG_WEIGHT = 0.1
SUMMARY_CHARS = 500


def score_entry(error: ErrorGroup, entry: dict[str, Any], tags: set[str] | None = None) -> float:
    """Relevance of one index entry to `error`, between 0 and 1."""
    if entry.get("fingerprint") == error.fingerprint:
        return 1.0
    tags = extract_tags(error.error_class, error.transaction) if tags is None else tags
    score = CLASS_WEIGHT if entry.get("error_class") == error.error_class else 0.0
    if normalise_transaction(str(entry.get("transaction", ""))) == normalise_transaction(error.transaction):
        score += TRANSACTION_WEIGHT
    score += TAG_WEIGHT * len(tags & {str(t) for t in entry.get("tags") or []})
    return round(min(score, 1.0), 4)


def search_prior_knowledge(
    error: ErrorGroup,
    index: dict[str, Any],
    knowledge_dir: Path,
    max_results: int = 3,
    min_score: float = 0.3,
) -> list[PriorAnalysis]:
    """The best prior analyses for `error`, best first; trusted (fix confirmed, has fix) first on ties."""
    tags = extract_tags(error.error_class, error.transaction)
    scored = [(score_entry(error, entry, tags), entry) for entry in index.get("solutions") or []]
    ranked = sorted((pair for pair in scored if pair[0] >= min_score), key=_rank_key)
    found: list[PriorAnalysis] = []
    for score, entry in ranked:
        if len(found) >= max_results:
            break
        prior = read_prior(Path(knowledge_dir), entry, score)
        if prior is not None:
            found.append(prior)
    return found


def _rank_key(pair: tuple[float, dict[str, Any]]) -> tuple:
    score, entry = pair
    return (-score, not entry.get("fix_confirmed"), not entry.get("has_fix"), str(entry.get("file", "")))


def read_prior(knowledge_dir: Path, entry: dict[str, Any], score: float) -> PriorAnalysis | None:
    """Open one document named by the index; None if it is gone, malformed or outside the folder."""
    path = (knowledge_dir / str(entry.get("file", ""))).resolve()
    if not path.is_relative_to(knowledge_dir.resolve()) or not path.is_file():
        return None
    try:
        meta, body = read_doc(path)
    except KnowledgeDocError:
        return None
    summary = section(body, "Analysis") or body
    hashes = meta.get("file_hashes") if isinstance(meta.get("file_hashes"), dict) else {}
    return PriorAnalysis(
        fingerprint=str(meta.get("fingerprint") or entry.get("fingerprint") or ""),
        error_class=str(meta.get("error_class") or entry.get("error_class", "")),
        transaction=str(meta.get("transaction") or entry.get("transaction", "")),
        root_cause=str(meta.get("root_cause") or section(body, "Root Cause")),
        fix_confidence=_confidence(meta.get("fix_confidence")),
        has_fix=bool(meta.get("has_fix", False)),
        summary=summary[:SUMMARY_CHARS],
        match_score=score,
        source_file=str(path),
        first_detected=str(meta.get("first_detected") or ""),
        file_hashes={str(k): str(v) for k, v in hashes.items()},
        fix_confirmed=bool(meta.get("fix_confirmed", False)),
    )


def _confidence(value: object) -> Confidence:
    """A hand-edited document may say anything; unknown confidences count as low."""
    text = str(value or "").lower()
    return text if text in get_args(Confidence) else "low"  # type: ignore[return-value]
