"""Text relevance for knowledge search: the words of a message, a root cause and file paths, scored with BM25.

DuckDB's full-text extension cannot be installed offline, so the index keeps, for each document, its
terms and their counts, and a vocabulary of how many documents hold each term (knowledge_store/index.py);
search scores its few candidates with BM25 here.
Terms are lowercase words of three or more letters; numbers, hex ids and a short list of words that
appear in nearly every error are left out, so an id in a message never makes two errors look alike.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
MIN_LENGTH = 3
MAX_TERMS = 400
STOP_WORDS = frozenset(
    "the and for with from that this was were not but are has have had into when then than its can could "
    "would should will been being which what where while error errors undefined method nil null none "
    "app lib rb py js ts java src main line file called raised exception".split()
)
# BM25 (Robertson & Zaragoza): k1 saturates term frequency, b normalises for document length.
K1 = 1.2
B = 0.75
# A document's BM25 becomes a share of the text weight as bm25 / (bm25 + HALF): HALF is the BM25 that earns half.
HALF = 6.0


def terms_of(*texts: str) -> list[str]:
    """The searchable words of `texts`, in order, repeated as often as they appear (at most MAX_TERMS)."""
    found: list[str] = []
    for text in texts:
        spaced = _CAMEL.sub(" ", text or "")
        found += [w for w in _WORD.findall(spaced.lower()) if _is_term(w)]
        if len(found) >= MAX_TERMS:
            return found[:MAX_TERMS]
    return found


def query_terms(*texts: str) -> list[str]:
    """The distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(terms_of(*texts)))


def _is_term(word: str) -> bool:
    if len(word) < MIN_LENGTH or not word[0].isalpha() or word in STOP_WORDS:
        return False
    digits = sum(c.isdigit() for c in word)
    return digits * 3 < len(word)


@dataclass(frozen=True)
class Corpus:
    """What BM25 needs to know of the whole index: its size, average length, and the query terms' document counts."""

    documents: int
    average_length: float
    df: dict[int, int]


def bm25(counts: dict[int, int], length: int, terms: list[int], corpus: Corpus) -> float:
    """Okapi BM25 of one document (its term counts and length) for the query `terms`."""
    score = 0.0
    norm = K1 * (1 - B + B * length / max(corpus.average_length, 1.0))
    for term in terms:
        tf = counts.get(term, 0)
        if tf:
            df = corpus.df.get(term, 1)
            idf = math.log(1 + (corpus.documents - df + 0.5) / (df + 0.5))
            score += idf * tf * (K1 + 1) / (tf + norm)
    return score


def share(relevance: float) -> float:
    """BM25 mapped into [0, 1): half at HALF."""
    return relevance / (relevance + HALF) if relevance > 0 else 0.0
