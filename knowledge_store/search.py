"""Knowledge search: find earlier analyses of the same or a similar error, by indexed lookup, then scoring.

The index (knowledge_store/index.py) finds the candidates: the same fingerprint, the same error
class, the same transaction (ids masked, so `orders/123` meets `orders/456`) or a shared tag. Only
those are scored, with these weights (same fingerprint 1.0; otherwise class 0.5, transaction
0.3, 0.1 per shared tag) plus up to 0.2 of text relevance (BM25 of the error's message and stack
files against each document's message, root cause and files), capped at 1.0. Ties go to the
analysis people trusted more (outcomes: merged, rejected, reverted). The index holds what a prompt
shows of a prior analysis, so no document is opened; one deleted since it was indexed is passed over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from nightwatch.knowledge_store import text_relevance
from nightwatch.knowledge_store.entries import DEFAULT_TRUST, tag_id, token_id
from nightwatch.knowledge_store.index import KnowledgeIndex

from nightwatch.fingerprint import normalise_transaction
from nightwatch.models import Confidence, ErrorGroup, PriorAnalysis
from nightwatch.patterns import extract_tags

__all__ = ["extract_tags", "prior_of", "ranked_candidates", "search_prior_knowledge"]

CLASS_WEIGHT = 0.5
TRANSACTION_WEIGHT = 0.3
TAG_WEIGHT = 0.1
TEXT_WEIGHT = 0.2
SPARE_CANDIDATES = 5  # ranked beyond max_results, for documents that vanished since they were indexed

MOST_SCORED = 300  # candidates that get text relevance, best base score first
# A tag held by more than this share of the documents (and more than COMMON_TAG_FLOOR of them) still adds to a
# candidate's score but does not make one by itself: `orders` or `create` would make thousands.
COMMON_TAG_SHARE = 0.002
COMMON_TAG_FLOOR = 50
SCORING_COLUMNS = "doc_id, doc_len, term_ids, term_counts, trust, fix_confirmed, has_fix, path"
PRIOR_COLUMNS = "doc_id, path, fingerprint, error_class, \"transaction\", root_cause, summary, fix_confidence, has_fix, " \
                "first_detected, file_hashes, fix_confirmed, fix_state, trust, outcome, fix_merged_at, regressed_at"


def ranked_candidates(index: KnowledgeIndex, error: ErrorGroup, files: list[str] | None = None,
                      limit: int = 10, min_score: float = 0.0) -> list[dict[str, Any]]:
    """The best-scoring documents for `error` (their index rows and `score`), best first; the same fingerprint first.

    Candidates come from indexed lookups; each gets a base score from the seed weights; only those whose base
    plus the most text relevance can add could still reach the top `limit` (and `min_score`) get BM25.
    """
    tags = sorted({tag_id(t) for t in extract_tags(error.error_class, error.transaction)})
    terms = [token_id(t) for t in text_relevance.query_terms(error.message, " ".join(files or []))]
    corpus = index.corpus(tags + terms)
    common = max(COMMON_TAG_FLOOR, COMMON_TAG_SHARE * corpus.documents)
    found = index.candidates(error.fingerprint, error.error_class, normalise_transaction(error.transaction),
                             [t for t in tags if corpus.df.get(t, 0) <= common])
    shared = index.shared_tags(list(found), tags)
    base = {doc: 1.0 if exact else min(1.0, CLASS_WEIGHT * same_class + TRANSACTION_WEIGHT * same_transaction
                                       + TAG_WEIGHT * shared.get(doc, 0))
            for doc, (exact, same_class, same_transaction) in found.items()}
    best = sorted(base.values(), reverse=True)
    floor = max(best[limit - 1] if len(best) >= limit else 0.0, min_score) - TEXT_WEIGHT
    short = sorted((d for d in base if base[d] >= floor), key=lambda d: (not found[d][0], -base[d], d))[:MOST_SCORED]
    scored = index.rows_by_id(short, SCORING_COLUMNS)
    for row in scored:
        relevance = text_relevance.bm25(dict(zip(row["term_ids"], row["term_counts"])), row["doc_len"], terms, corpus)
        exact = found[row["doc_id"]][0]
        row["exact"], row["score"] = exact, 1.0 if exact else round(
            min(1.0, base[row["doc_id"]] + TEXT_WEIGHT * text_relevance.share(relevance)), 4)
    scored.sort(key=lambda r: (not r["exact"], -r["score"], -(r["trust"] or 0), not r["fix_confirmed"], not r["has_fix"], r["path"]))
    top = scored[:limit]
    full = {row["doc_id"]: row for row in index.rows_by_id([r["doc_id"] for r in top], PRIOR_COLUMNS)}
    return [full[r["doc_id"]] | {"score": r["score"]} for r in top if r["doc_id"] in full]


def search_prior_knowledge(
    error: ErrorGroup,
    index: KnowledgeIndex,
    files: list[str] | None = None,
    max_results: int = 3,
    min_score: float = 0.3,
) -> list[PriorAnalysis]:
    """The best prior analyses for `error`, best first; `files` are its stack's repository paths. Everything
    comes from the index (kept in step with the documents by each night's sync); a document deleted since is
    passed over for the next best."""
    found: list[PriorAnalysis] = []
    for row in ranked_candidates(index, error, files, max_results + SPARE_CANDIDATES, min_score):
        if len(found) >= max_results or row["score"] < min_score:
            break
        if (index.root / row["path"]).is_file():
            found.append(prior_of(index.root, row))
    return found


def prior_of(knowledge_dir: Path, row: dict[str, Any]) -> PriorAnalysis:
    """A prior analysis from its index row."""
    return PriorAnalysis(
        fingerprint=row["fingerprint"] or "",
        error_class=row["error_class"] or "",
        transaction=row["transaction"] or "",
        root_cause=row["root_cause"] or "",
        fix_confidence=_confidence(row["fix_confidence"]),
        has_fix=bool(row["has_fix"]),
        summary=row["summary"] or "",
        match_score=float(row["score"]),
        source_file=str(knowledge_dir / row["path"]),
        first_detected=row["first_detected"] or "",
        file_hashes=json.loads(row["file_hashes"]) if row["file_hashes"] else {},
        fix_confirmed=bool(row["fix_confirmed"]),
        fix_state=row["fix_state"] or "none",
        trust=DEFAULT_TRUST if row["trust"] is None else float(row["trust"]),
        outcome=row["outcome"] or "",
        fix_merged_at=row["fix_merged_at"],
        regressed_at=row["regressed_at"],
    )


def _confidence(value: object) -> Confidence:
    """A hand-edited document may say anything; unknown confidences count as low."""
    text = str(value or "").lower()
    return text if text in get_args(Confidence) else "low"  # type: ignore[return-value]
