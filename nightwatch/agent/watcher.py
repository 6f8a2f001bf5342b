"""The proactive watcher: keep headroom before every call, compacting the least useful first.

Before each call the request is counted. If it would take more than the working budget minus the
reserve, sections of the history are compacted, lowest score first, until it fits:

    score = priority x relevance x recency

- priority: Critical sections are never compacted (the error itself, the answer instructions, the
  model's current hypotheses and the results of the turn in progress); then High, Medium, Low;
- relevance: how many of the error's own terms (class, method, files of the stack) the section holds;
- recency: exp(-age / half-life), age in iterations.

A compacted section keeps its place (a tool_result stays paired with its tool_use) and says how to
get it back: its full text is in the run's event log, where `recall_context` finds it.

Compacting changes the prompt at the first compacted block, so the request writes everything after it
into the cache again. Once the watcher must act it compacts at least the break-even of that rewrite
(`least_clearing`, agent/break_even.py) rather than just enough to fit: compacting only the overflow
left the next call over the limit again, and a rewrite of the cache every call cost more than the
compaction saved. Acting is never skipped for cost: the headroom is a guard. Nor does the cache
ever take more than half the prompt: with a few calls to come the break-even is most of it (79% with
two), and what the model needs last is what it has read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nightwatch.agent.break_even import least_clearing
from nightwatch.agent.editing import cleared_view
from nightwatch.agent.recall import EventLog, terms
from nightwatch.tokens import TokenCounter, _text_of, estimate_text

PRIORITY = {"high": 1.0, "medium": 0.6, "low": 0.3}
HALF_LIFE_ITERATIONS = 4.0
NO_TERMS_RELEVANCE = 0.5
MIN_COMPACTABLE_TOKENS = 200
_TOOL_PRIORITY = {"get_error_traces": "high", "read_file": "medium", "search_code": "medium", "recall_context": "medium",
                  "list_directory": "low"}


@dataclass
class Section:
    """One compactable block of the history, with where it lives and how it scores."""

    message: int
    block: int
    label: str
    tokens: int
    priority: str  # critical | high | medium | low
    relevance: float
    iteration: int

    def score(self, now: int) -> float:
        if self.priority == "critical":
            return math.inf
        return PRIORITY[self.priority] * self.relevance * math.exp(-max(0, now - self.iteration) / HALF_LIFE_ITERATIONS)


class Watcher:
    def __init__(self, limit: int, counter: TokenCounter, focus: str, events: EventLog, fingerprint: str,
                 cache_ttl: str = "5m") -> None:
        self.limit = limit
        self.cache_ttl = cache_ttl
        self.counter = counter
        self.focus = set(terms(focus))
        self.events = events
        self.fingerprint = fingerprint

    def keep_headroom(self, messages: list[dict], system: Any, tools: list[dict], now: int,
                      cleared: frozenset[str] = frozenset(), to_come: int | None = None) -> tuple[int, int]:
        """Compact until the request fits; (sections compacted, tokens the request now counts). With `to_come` (the
        requests expected after this one), an act compacts at least what pays back its cache rewrite over them. The
        results of the `cleared` tool uses are counted as the server shows them (cleared), and left alone."""
        count = self.counter.count(system=system, messages=cleared_view(messages, cleared), tools=tools)
        if count <= self.limit:
            return 0, count
        pays = least_clearing(count, to_come, self.cache_ttl) if to_come is not None else 0
        goal = max(count - self.limit, min(pays, count // 2))  # never half the prompt for the cache's sake alone
        actions = compacted = 0
        for section in sorted(self.sections(messages, cleared), key=lambda s: s.score(now)):
            if compacted >= goal or section.priority == "critical":
                break
            compacted += self._compact(messages, section, now)
            actions += 1
        return actions, count - compacted

    def sections(self, messages: list[dict], cleared: frozenset[str] = frozenset()) -> list[Section]:
        """Every block worth compacting, scored; the first message and the newest turn are Critical; the results the
        server clears are not in the prompt, so not worth compacting."""
        uses = {b["id"]: b for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_use"}
        last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        out = []
        for i, message in enumerate(messages):
            if not isinstance(message["content"], list):
                continue
            for j, block in enumerate(message["content"]):
                if block.get("type") == "tool_result" and block.get("tool_use_id") in cleared:
                    continue
                section = self._section(i, j, block, uses, messages, last_assistant)
                if section and section.tokens >= MIN_COMPACTABLE_TOKENS:
                    out.append(section)
        return out

    def _section(self, i: int, j: int, block: dict, uses: dict, messages: list[dict], last_assistant: int) -> Section | None:
        turn = (i + 1) // 2
        critical = i == 0 or i >= last_assistant
        kind = block.get("type")
        if kind == "tool_result" and not str(block.get("content", "")).startswith(COMPACTED):
            use = uses.get(block["tool_use_id"], {"name": "tool", "input": {}})
            priority = "low" if block.get("is_error") else _TOOL_PRIORITY.get(use["name"], "medium")
            label = f"{use['name']} {use.get('input') or {}}"
        elif kind == "text" and messages[i]["role"] == "assistant" and not block["text"].startswith(COMPACTED):
            priority, label = "medium", "assistant note"
        elif kind == "text" and i == 0 and block["text"].startswith(RESEARCH_HEADING):
            return Section(i, j, "research notes", estimate_text(block["text"]), "high", 1.0, 0)
        else:
            return None
        text = _text_of(block)
        return Section(i, j, label, estimate_text(text), "critical" if critical else priority, self._relevance(text), turn)

    def _relevance(self, text: str) -> float:
        if not self.focus:
            return NO_TERMS_RELEVANCE
        found = self.focus.intersection(terms(text))
        return 0.2 + 0.8 * len(found) / len(self.focus)

    def _compact(self, messages: list[dict], section: Section, now: int) -> int:
        block = messages[section.message]["content"][section.block]
        text = _text_of(block)
        stub = f"{COMPACTED} {section.label}, {section.tokens:,} tokens; ask recall_context for it.]"
        if block.get("type") == "tool_result":
            block["content"] = stub  # its full text is already in the event log
        else:
            self.events.append(self.fingerprint, "compacted", section.label, text, now)
            block["text"] = stub
        return max(0, section.tokens - estimate_text(stub))


COMPACTED = "[compacted to keep context headroom:"
RESEARCH_HEADING = "## Research"
