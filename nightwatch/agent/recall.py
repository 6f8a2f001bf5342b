"""The run's event log and the `recall_context` search over it.

Every tool result, cleared block and summary is appended here before it can leave the model's
context, so context editing and compaction lose nothing: the agent can ask for it back. Ranking is
BM25 over word terms, scoped to one run (and optionally one error), capped in size.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

_TERM = re.compile(r"[A-Za-z_][A-Za-z0-9_]{1,}|\d{2,}")


def terms(text: str) -> list[str]:
    out: list[str] = []
    for raw in _TERM.findall(text):
        low = raw.lower()
        out.append(low)
        if "_" in low:
            out.extend(p for p in low.split("_") if len(p) > 1)
    return out


@dataclass
class Event:
    seq: int
    fingerprint: str
    kind: str  # tool_result | cleared | compacted | summary | note
    label: str
    text: str
    iteration: int = 0
    tf: Counter = field(default_factory=Counter, repr=False)


class EventLog:
    """Append-only, thread-safe; persisted as JSONL when given a path."""

    def __init__(self, path: Path | None = None) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._path = path
        if path and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    data = json.loads(line)
                    self._events.append(Event(**data, tf=_frequencies(data["label"], data["text"])))

    def __len__(self) -> int:
        return len(self._events)

    def append(self, fingerprint: str, kind: str, label: str, text: str, iteration: int = 0) -> Event:
        with self._lock:
            event = Event(len(self._events) + 1, fingerprint, kind, label, text, iteration, _frequencies(label, text))
            self._events.append(event)
            if self._path:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                record = {k: v for k, v in asdict(event).items() if k != "tf"}
                with self._path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
            return event

    def search(self, query: str, fingerprint: str | None = None, limit: int = 5) -> list[tuple[float, Event]]:
        """BM25 over the events that carry content (`note` events only record that something happened)."""
        with self._lock:
            pool = [e for e in self._events if (fingerprint is None or e.fingerprint == fingerprint) and e.kind != "note"]
        if not pool:
            return []
        q = set(terms(query))
        avg_len = sum(sum(e.tf.values()) for e in pool) / len(pool) or 1.0
        scored = []
        for event in pool:
            score = sum(_bm25(event, t, pool, avg_len) for t in q)
            if score > 0:
                scored.append((score, event))
        scored.sort(key=lambda pair: (-pair[0], -pair[1].seq))
        return scored[:limit]


LABEL_WEIGHT = 3  # the label names what was read or searched (a path, a query): it says most about the event


def _frequencies(label: str, text: str) -> Counter:
    counts = Counter(terms(text))
    for term in terms(label):
        counts[term] += LABEL_WEIGHT
    return counts


def _bm25(event: Event, term: str, pool: list[Event], avg_len: float, k1: float = 1.2, b: float = 0.75) -> float:
    freq = event.tf.get(term, 0)
    if not freq:
        return 0.0
    docs_with = sum(1 for e in pool if term in e.tf)
    idf = math.log(1 + (len(pool) - docs_with + 0.5) / (docs_with + 0.5))
    length = sum(event.tf.values())
    return idf * freq * (k1 + 1) / (freq + k1 * (1 - b + b * length / avg_len))


def excerpt(text: str, query: str, width: int) -> str:
    """The window of `text` around the line that best matches the query; rare terms weigh most."""
    if len(text) <= width:
        return text
    lines = text.splitlines() or [text]
    line_terms = [set(terms(line)) for line in lines]
    wanted = set(terms(query))
    spread = Counter(t for found in line_terms for t in found & wanted)
    best = max(range(len(lines)), key=lambda i: (sum(1 / spread[t] for t in line_terms[i] & wanted), -i))
    lo = hi = best
    size = len(lines[best])
    grew = True
    while grew:
        grew = False
        if hi + 1 < len(lines) and size + len(lines[hi + 1]) + 1 <= width:
            hi, size, grew = hi + 1, size + len(lines[hi + 1]) + 1, True
        if lo > 0 and size + len(lines[lo - 1]) + 1 <= width:
            lo, size, grew = lo - 1, size + len(lines[lo - 1]) + 1, True
    return "\n".join(lines[lo : hi + 1])[:width]


def recall(log: EventLog, query: str, fingerprint: str | None, cap_chars: int = 6000) -> str:
    """The best-ranked matches within `cap_chars`; the best one gets half the room."""
    hits = log.search(query, fingerprint=fingerprint, limit=5)
    if not hits:
        return f"No earlier context matches {query!r}."
    widths = [cap_chars // 2] + [max(400, cap_chars // 2 // max(1, len(hits) - 1))] * (len(hits) - 1)
    parts = [f"[{e.kind} #{e.seq}, iteration {e.iteration}] {e.label}\n{excerpt(e.text, query, w)}" for (_, e), w in zip(hits, widths)]
    return "\n\n".join(parts)[:cap_chars]
