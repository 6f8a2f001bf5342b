"""The corpus of the token-efficiency benchmark: scripted investigations of the demo's planted defects.

Each planted defect of nightwatch/demo/expected.yml is investigated three times, one per "night"
(a short, a medium and a long investigation: 5, 10 and 15 tool calls over the demo app's real files,
two at a time in the longer ones). The second turn reads the defective file together with a related
file whose method definition is the "needle": a fact the final answer quotes, which the first
message (research previews included) does not show. The scripted model follows its script whatever
it is shown; at the answer turn it quotes the needle if it can see it, asks `recall_context` for it
if it has that tool, and otherwise answers without it.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import yaml

from nightwatch.agent.tools import SUBMIT_TOOL
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.models import ErrorGroup, TraceData, Window
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext, research_error
from nightwatch.runtime import DEMO_EXPORT
from nightwatch.settings import DEMO_DIR
from nightwatch.sources.export_file import ExportFileSource

ANCHOR = datetime(2026, 11, 21, 6, tzinfo=timezone.utc)
LENGTHS = {"short": 5, "medium": 10, "long": 15}  # tool calls per script, one night each
Call = tuple[str, dict[str, Any]]


@dataclass
class Script:
    name: str
    error: ErrorGroup
    traces: TraceData
    research: ResearchContext
    turns: list[list[Call]]
    needle: str  # a line of a related file read early, as read_file shows it ("   42|   def contact_email")
    recall_query: str
    bug: dict
    defect: str  # the defective line's code (also in the research preview of the first message)
    night: str

    @property
    def calls(self) -> int:
        return sum(len(t) for t in self.turns)


# the corpus ------------------------------------------------------------------------------------
def corpus(host: LocalRepoHost) -> list[Script]:
    """Three nights (short, medium, long investigations), each over every planted defect."""
    source = ExportFileSource(DEMO_EXPORT, rebase_to=ANCHOR, demo=True)
    window = Window.ending_at(ANCHOR, timedelta(hours=24))
    errors = source.fetch_errors(window).errors
    scripts = []
    for bug in yaml.safe_load((DEMO_DIR / "expected.yml").read_text())["bugs"]:
        found = _error_of(bug, errors, source, window)
        if found is None:
            continue
        error, traces = found
        research = research_error(error, traces, host, [], [])
        first = json.dumps(investigation_message(error, traces, research))
        needle_path, needle = _needle(bug, research, host, first)
        defect = host.read_file(bug["file"]).splitlines()[bug["line"] - 1]
        for night, calls in LENGTHS.items():
            turns = _turns(bug, research, host, calls, needle_path)
            query = f"{needle_path} {' '.join(needle.split('| ', 1)[1].split()[:2])}"  # e.g. "app/models/order.rb def total"
            scripts.append(Script(f"{bug['id']}/{night}", error, traces, research, turns, needle, query, bug, defect, night))
    return scripts


def _needle(bug: dict, research: ResearchContext, host: LocalRepoHost, first: str) -> tuple[str, str]:
    """The first method definition of a related file that the first message does not already show."""
    for path in _related(bug, research, host):
        for line in host.read_file(path, numbered=True).splitlines():
            code = line.split("| ", 1)[1] if "| " in line else ""
            if code.strip().startswith("def ") and json.dumps(code)[1:-1] not in first:
                return path, line
    raise RuntimeError(f"no needle for {bug['id']}")


def _error_of(bug: dict, errors: list[ErrorGroup], source: ExportFileSource, window: Window) -> tuple[ErrorGroup, TraceData] | None:
    for error in errors:
        if error.error_class != bug["error_class"]:
            continue
        traces = source.fetch_traces(error, window)
        if any(f.file.lstrip("./") == bug["file"] for f in traces.in_app_frames):
            return error, traces
    return None


def _identifier(text: str) -> str:
    words = [w.strip("@.:()\"'") for w in text.replace("(", " ").replace(".", " ").split()]
    return max(words, key=len)


def _related(bug: dict, research: ResearchContext, host: LocalRepoHost) -> list[str]:
    folder = posixpath.dirname(bug["file"])
    related = [f for f in research.likely_files if f != bug["file"]]
    related += [f for f in host.list_directory(folder) if not f.endswith("/") and f != bug["file"]]
    related += ["app/models/order.rb", "db/schema.rb", "config/routes.rb", "app/models/user.rb", "app/models/product.rb"]
    return [f for f in dict.fromkeys(related) if f != bug["file"] and host.file_digest(f)]


def _turns(bug: dict, research: ResearchContext, host: LocalRepoHost, calls: int, needle_path: str) -> list[list[Call]]:
    """Traces; the defect's file with the related file holding the needle; then reads and searches."""
    folder = posixpath.dirname(bug["file"])
    pool: list[Call] = [("list_directory", {"path": folder}), ("search_code", {"query": _identifier(bug["buggy_text"])})]
    for i, path in enumerate(p for p in _related(bug, research, host) if p != needle_path):
        pool.append(("read_file", {"path": path}))
        pool.append(("search_code", {"query": posixpath.splitext(posixpath.basename(path))[0]}) if i % 2 else
                    ("list_directory", {"path": posixpath.dirname(path)}))
    per_turn = 2 if calls >= 10 else 1  # longer investigations ask for two things at once
    rest = pool[: calls - 3]
    grouped = [rest[i : i + per_turn] for i in range(0, len(rest), per_turn)]
    return [[("get_error_traces", {})], [("read_file", {"path": bug["file"]}), ("read_file", {"path": needle_path})]] + grouped


# the scripted model ----------------------------------------------------------------------------
class ScriptedModel:
    """Follows its script; at the answer turn quotes the needle if it can see it, or recalls it."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.turn = 0
        self.recalled = False
        self.needle = "missing"  # present | recalled | missing, at the answer turn
        self._ids = iter(range(1, 10_000))

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t["name"] for t in request.get("tools", [])}
        forced = tools == {SUBMIT_TOOL} or (request.get("tool_choice") or {}).get("type") == "tool"
        if not forced and self.turn < len(self.script.turns):
            calls = self.script.turns[self.turn]
            self.turn += 1
            return [{"type": "text", "text": f"Next I look at {', '.join(_label(c) for c in calls)} to follow the evidence."}] + \
                [self._use(name, args) for name, args in calls]
        visible = self.script.needle in _text(request["messages"])
        if not visible and not forced and "recall_context" in tools and not self.recalled:
            self.recalled = True
            return [{"type": "text", "text": "The defective line is no longer in view; recalling it."},
                    self._use("recall_context", {"query": self.script.recall_query})]
        self.needle = ("recalled" if self.recalled else "present") if visible else "missing"
        return [self._use(SUBMIT_TOOL, self._analysis(visible))]

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        """A conservative summary: the calls made, not the code they returned."""
        uses = [b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"]
        return "Investigation so far: " + "; ".join(f"{u['name']} {json.dumps(u['input'])}" for u in uses)

    def _analysis(self, visible: bool) -> dict[str, Any]:
        """The fix quotes the defective line; the reasoning quotes the needle when it was seen."""
        bug, code = self.script.bug, self.script.defect
        fix = bug.get("fix") or {}
        after = code.replace(fix["find"], fix["replace"]) if fix.get("find", "\0") in code else f"{code}  # guarded"
        seen = f" The related code reads `{self.script.needle.split('| ', 1)[1].strip()}`." if visible else ""
        return {"title": f"{bug['error_class']} at {bug['file']}:{bug['line']}", "reasoning": "Followed the stack to the line." + seen,
                "root_cause": bug["root_cause"], "has_fix": True, "confidence": "high" if visible else "medium",
                "file_changes": [{"path": bug["file"], "action": "modify", "description": "fix the defect", "before": code, "after": after}],
                "suggested_next_steps": ["Add a regression test."]}

    def _use(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_bench_{next(self._ids):05d}", "name": name, "input": args}


def _text(messages: list[dict]) -> str:
    """Everything the model can read in its messages (tool results, texts, summaries)."""
    parts = []
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]:
            value = block.get("text") or block.get("content") or ""
            parts.append(value if isinstance(value, str) else json.dumps(value))
    return "\n".join(parts)


def _label(call: Call) -> str:
    return f"{call[0]}({', '.join(str(v) for v in call[1].values())})"
