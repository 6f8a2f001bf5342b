"""The offline model: a deterministic analyst that speaks the same protocol as Claude.

It answers through the emulated Messages API (emulated_api.py), so it sees only what Claude would
see once context edits and compaction have been applied, and its usage is metered with prompt
caching. It asks for the traces, reads the top in-app frame's file, searches for the failing method,
then submits a schema-valid Analysis with honest low or medium confidence. When the line it needs
was cleared from its context it asks `recall_context` for it. Triage requests (a `submit_triage`
tool) get a rule-based verdict; summary requests (`record_summary`, or a compaction) get an
extractive summary that keeps the error and the list of calls made.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nightwatch.agent.file_view import numbered_lines
from nightwatch.agent.search_view import parse_hits
from nightwatch.agent.tools import SUBMIT_TOOL
from nightwatch.models import Analysis, is_web_transaction
from nightwatch.offline.emulated_api import EmulatedMessagesAPI
from nightwatch.offline.emulated_cache import PromptCache
from nightwatch.offline.emulated_edits import CLEARED_TOOL_RESULT
from nightwatch.offline.heuristics import Evidence, diagnose, triage_verdict
from nightwatch.offline.origin_rules import Origin, Site, assignment_query, find_origin, nil_receiver
from nightwatch.offline.python_origins import (
    Found,
    PyFrame,
    defines,
    producer_origin,
    reversed_route,
    route_origin,
    row_producer,
    unique_column,
    validator_names,
    validator_origin,
)
from nightwatch.offline.python_tests import fix_by_rule, handler_of, regression_test
from nightwatch.prompts import previews_in

OFFLINE_MODEL_NAME = "nightwatch-offline-1"
TRIAGE_TOOL = "submit_triage"
SUMMARY_TOOL = "record_summary"

_TRACES_STACK = re.compile(r"^stack \(top first[^\n]*\n", re.M)
_FRAME = re.compile(r"\[app\]\s+(?P<path>[^\s:]+):(?P<line>\d+)(?: in `(?P<method>[^`]*)`)?")
_TOP = re.compile(r"Top in-app frame: (?P<path>[^\s:]+):(?P<line>\d+)(?: in `(?P<method>[^`]*)`)?")
_FIELD = re.compile(r"^(Error class|Transaction|HTTP status|Occurrences): (.*)$", re.M)
_LIKELY = re.compile(r"Likely files: (.*)")
_CALLED = re.compile(r"^- called (?P<name>\w+) (?P<args>\{.*\})$", re.M)
_FENCED = re.compile(r'<untrusted source="(?P<source>[^"]*)">\n(?P<body>.*?)\n</untrusted>', re.S)


def _fence(text: str, source: str) -> re.Match[str] | None:
    """The first fence of that source: production data NightWatch put there (a fence's body cannot open or close one),
    so text inside another fence, a commit's diff or an error message, is never read as it."""
    return next((m for m in _FENCED.finditer(text) if m["source"] == source), None)


def _fenced(text: str, source: str) -> str:
    """The body of the first fence of that source, or ""."""
    fence = _fence(text, source)
    return fence["body"] if fence else ""


def _outside_fences(text: str) -> str:
    """What NightWatch itself wrote: the text with every fenced block of production data taken out."""
    return _FENCED.sub("", text)


def _calls_in(text: str) -> list[tuple[str, dict]]:
    """The calls a summary lists (`- called name {json}`), outside any fence; a line that is not JSON is no call."""
    calls = []
    for match in _CALLED.finditer(_outside_fences(text)):
        try:
            args = json.loads(match["args"])
        except ValueError:
            continue
        if isinstance(args, dict):
            calls.append((match["name"], args))
    return calls


def _stack_of_traces(result: str) -> list[str]:
    """The stack lines of a get_error_traces answer: those after the line that starts `stack (top first`, inside its
    fence (an occurrence's value is on its own line's end: it can say those words, never start that line)."""
    body = _fenced(result, "error traces")
    head = _TRACES_STACK.search(body)
    return body[head.end():].split("\n") if head else []


@dataclass
class _Conversation:
    """The request as the analyst reads it: the opening text, the calls made, the results still in view."""

    text: str
    calls: list[tuple[str, dict]] = field(default_factory=list)
    results: list[tuple[str, dict, str, bool]] = field(default_factory=list)
    cleared: list[tuple[str, dict]] = field(default_factory=list)
    previews: dict[str, str] = field(default_factory=dict)  # the research block's file previews, by path

    @classmethod
    def of(cls, messages: list[dict]) -> "_Conversation":
        first = messages[0]["content"] if messages[0]["role"] == "user" and isinstance(messages[0]["content"], list) else []
        conv = cls(_opening_text(messages[0]), previews=previews_in(first))
        conv.calls = _calls_in(conv.text)
        pending: dict[str, tuple[str, dict]] = {}
        for message in messages[1:] if messages[0]["role"] == "user" else messages:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    pending[block["id"]] = (block["name"], block.get("input") or {})
                    conv.calls.append(pending[block["id"]])
                elif block.get("type") == "tool_result" and block["tool_use_id"] in pending:
                    conv._add_result(pending[block["tool_use_id"]], block)
        return conv

    def _add_result(self, call: tuple[str, dict], block: dict) -> None:
        content = block.get("content", "")
        if isinstance(content, list):
            content = "\n".join(c.get("text", "") for c in content)
        if content == CLEARED_TOOL_RESULT:
            self.cleared.append(call)
        else:
            self.results.append((call[0], call[1], content, bool(block.get("is_error"))))

    def field(self, name: str) -> str:
        for key, value in _FIELD.findall(self.text):
            if key == name:
                return value.strip()
        return ""

    @property
    def message(self) -> str:
        return _fenced(self.text, "error message").strip()

    def called(self, name: str, **args: Any) -> bool:
        return any(n == name and all(a.get(k) == v for k, v in args.items()) for n, a in self.calls)

    def result(self, name: str, **args: Any) -> tuple[str, bool] | None:
        for n, a, content, is_error in self.results:
            if n == name and all(a.get(k) == v for k, v in args.items()):
                return content, is_error
        return None

    def stack(self) -> list[str]:
        """The stack's lines: the traces' if they show it (fetched, and not named as the first message's), else the
        first message's Stack section."""
        traces = self.result("get_error_traces")
        shown = _stack_of_traces(traces[0]) if traces else []
        return shown or _fenced(self.text, "stack trace").split("\n")

    def app_frames(self) -> list[tuple[str, int, str]]:
        """In-app frames, top first: from the stack, else from the first message's header."""
        frames = [(m["path"], int(m["line"]), m["method"] or "") for m in _FRAME.finditer("\n".join(self.stack()))]
        if frames:
            return frames
        top = _TOP.search(self.text)  # the header's field, before any production text
        return [(top["path"], int(top["line"]), top["method"] or "")] if top else []

    def raised_in_library(self) -> bool:
        """The trace's first frame is framework code: the application called something that raised (read once the
        traces were fetched)."""
        first = next((line for line in self.stack() if line.strip()), "") if self.result("get_error_traces") else ""
        return bool(first) and "[app]" not in first

    def top_frame(self) -> tuple[str, int, str] | None:
        frames = self.app_frames()
        return frames[0] if frames else None

    def caller_frame(self) -> tuple[str, int, str] | None:
        """The first in-app frame in another file: where the failing code was called from."""
        frames = self.app_frames()
        return next((f for f in frames[1:] if frames and f[0] != frames[0][0]), None)

    def defect_frame(self) -> tuple[str, int, str] | None:
        """Where the defect is: the top frame, or its caller when the arguments did not match."""
        if "wrong number of arguments" in self.message and self.caller_frame():
            return self.caller_frame()  # the callee's `def` line is only where Ruby noticed; the call is the defect
        return self.top_frame()

    def source_of(self, path: str, recall_query: str = "") -> dict[int, str]:
        """Numbered lines of a file in view: its research preview and every read of it in this conversation (or what
        recall brings back after it was cleared)."""
        lines = dict(numbered_lines(self.previews.get(path, "")))
        for name, args, content, is_error in self.results:
            if name == "read_file" and args.get("path") == path and not is_error:
                lines.update(numbered_lines(content))
        if self.result("read_file", path=path) is None and recall_query:
            recalled = self.result("recall_context", query=recall_query)
            lines.update(numbered_lines(recalled[0]) if recalled and not recalled[1] else [])
        return lines

    def likely_files(self) -> list[str]:
        match = _LIKELY.search(self.text)
        return re.findall(r"`([^`]+)`", match.group(1)) if match else []

    def summary(self) -> str:
        """What a summary must keep for the work to go on: the error, its stack, the calls made."""
        head = _head(self.text)
        lines = [head, "", "## Investigation so far"]
        lines += [f"- called {name} {json.dumps(args, sort_keys=True)}" for name, args in self.calls]
        lines += [f"- {args.get('path')}: {len(content.splitlines())} lines read" for name, args, content, err in self.results
                  if name == "read_file" and not err]
        return "\n".join(lines)


def _head(text: str) -> str:
    """The error and its stack: the opening text up to the end of its stack's fence (and its note)."""
    stack = _fence(text, "stack trace")
    if stack is None:
        return text.split("## Research")[0].split("## Investigation so far")[0].strip()
    note = text.find("\n", stack.end() + 1)
    return text[: note if note >= 0 else len(text)].strip()


def _opening_text(message: dict) -> str:
    """The first user message's text, or a compaction summary standing in for everything before it."""
    content = message["content"]
    if isinstance(content, str):
        return content
    kinds = ("text", "compaction") if message["role"] == "assistant" else ("text",)
    return "\n".join((b.get("text") or b.get("content") or "") for b in content if b.get("type") in kinds)


class OfflineAnalyst:
    """The brain behind the offline model: rule-based, deterministic, honest about its confidence."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t["name"] for t in request.get("tools", [])}
        conv = _Conversation.of(request["messages"])
        if TRIAGE_TOOL in tools:
            return [self._tool_use(TRIAGE_TOOL, self._triage(conv))]
        if SUMMARY_TOOL in tools:
            return [self._tool_use(SUMMARY_TOOL, {"summary": conv.summary()})]
        return self._investigate(conv, tools, request.get("tool_choice"))

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return _Conversation.of(request["messages"]).summary()

    # triage ------------------------------------------------------------------------------
    def _triage(self, conv: _Conversation) -> dict[str, Any]:
        status = conv.field("HTTP status")
        return triage_verdict(
            error_class=conv.field("Error class"),
            message=conv.message,
            http_status=int(status) if status.isdigit() else None,
            occurrences=int((conv.field("Occurrences").split() or ["0"])[0] or 0),
            has_app_frame=conv.top_frame() is not None,
        )

    # investigation -------------------------------------------------------------------------
    def _investigate(self, conv: _Conversation, tools: set[str], tool_choice: dict | None) -> list[dict]:
        forced = (tool_choice or {}).get("name") == SUBMIT_TOOL or tools == {SUBMIT_TOOL}
        if not forced:
            step = self._next_step(conv, tools)
            if step is not None:
                name, args = step
                return [{"type": "text", "text": _narration(name, args)}, self._tool_use(name, args)]
        return [self._tool_use(SUBMIT_TOOL, self._analysis(conv))]

    def _next_step(self, conv: _Conversation, tools: set[str]) -> tuple[str, dict] | None:
        if "get_error_traces" in tools and not conv.called("get_error_traces"):
            return "get_error_traces", {}
        frame, caller = conv.top_frame(), conv.caller_frame()
        candidates = [f[0] for f in (frame, caller) if f] or conv.likely_files()[:2]
        for path in candidates:
            if "read_file" in tools and not conv.called("read_file", path=path):
                return "read_file", {"path": path}
        method = _failing_method(conv.message) or (frame[2] if frame else "")
        if method and "search_code" in tools and not conv.called("search_code", query=method):
            return "search_code", {"query": method}
        origin_step = self._origin_step(conv, tools)
        if origin_step:
            return origin_step
        if "run_test" in tools and _python_web(conv) and not conv.called("read_file", path=CONFTEST):
            return "read_file", {"path": CONFTEST}  # how the project's tests reach the application, to write one
        target = conv.defect_frame()
        if target and "recall_context" in tools and conv.called("read_file", path=target[0]) and conv.result("read_file", path=target[0]) is None:
            query = _recall_query(target)
            if not conv.called("recall_context", query=query):
                return "recall_context", {"query": query}  # the line it needs left the context: ask the event log
        return None

    def _origin_step(self, conv: _Conversation, tools: set[str]) -> tuple[str, dict] | None:
        """From the crash line to the origin: search where a nil instance variable is assigned, read the origin."""
        crash = conv.top_frame()
        if crash is None or "search_code" not in tools:
            return None
        query = assignment_query(nil_receiver(conv.message, conv.source_of(crash[0]).get(crash[1], "")))
        if query and not conv.called("search_code", query=query):
            return "search_code", {"query": query}
        producer = row_producer(conv.message, PyFrame(crash[0], crash[1], conv.source_of(crash[0])))
        if producer and not conv.called("search_code", query=f"def {producer}"):
            return "search_code", {"query": f"def {producer}"}  # where the rows the crash line reads are made
        made_in = _defined_in(conv, producer)
        if made_in and "read_file" in tools and not conv.called("read_file", path=made_in):
            return "read_file", {"path": made_in}
        route = _route_step(conv, tools) or _validator_step(conv, tools)
        if route:
            return route
        origin = self._origin(conv)
        if origin and "read_file" in tools and not conv.called("read_file", path=origin.file):
            return "read_file", {"path": origin.file}
        return None

    def _origin(self, conv: _Conversation) -> Origin | None:
        crash = conv.top_frame()
        if crash is None:
            return None
        producer = row_producer(conv.message, PyFrame(crash[0], crash[1], conv.source_of(crash[0])))
        made_in = _defined_in(conv, producer)
        found = producer_origin(producer, made_in, conv.source_of(made_in)) if producer and made_in else None
        found = found or _route_origin(conv) or _validator_origin(conv)
        if found:
            return Origin(found.file, found.line, found.note)
        source = conv.source_of(crash[0])
        query = assignment_query(nil_receiver(conv.message, source.get(crash[1], "")))
        hits = conv.result("search_code", query=query) if query else None
        caller = conv.caller_frame()
        callers = tuple(Site(f, conv.source_of(f[0])) for f in conv.app_frames()[1:])
        return find_origin(error_class=conv.field("Error class"), message=conv.message, transaction=conv.field("Transaction"),
                           crash=Site(crash, source), caller=Site(caller, conv.source_of(caller[0])) if caller else None,
                           assignment_hits=hits[0] if hits and not hits[1] else "", raised_in_library=conv.raised_in_library(),
                           callers=callers)

    def _analysis(self, conv: _Conversation) -> dict[str, Any]:
        frame = conv.defect_frame()
        path, line, method = frame if frame else ("", 0, "")
        source = conv.source_of(path, _recall_query(frame)) if path else {}
        search = conv.result("search_code", query=_failing_method(conv.message) or method)
        origin = self._origin(conv)
        crash = conv.top_frame()
        evidence = Evidence(error_class=conv.field("Error class"), transaction=conv.field("Transaction"), message=conv.message,
                            path=path, line=line, method=method, code_line=source.get(line, ""),
                            search_hits=search[0] if search and not search[1] else "")
        analysis = diagnose(evidence, crash[:2] if crash else None, origin)
        return _with_regression_test(conv, analysis).model_dump()

    def _tool_use(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_offline_{next(self._ids):06d}", "name": name, "input": args}


OFFLINE_POLL = (0.2, 1.0)  # the offline batch backend ends within a second or two


class OfflineModel(EmulatedMessagesAPI):
    """Deterministic stand-in for Claude behind the emulated API; every report labels its use."""

    name = "offline"
    offline = True

    def __init__(self, cache: PromptCache | None = None) -> None:
        super().__init__(OfflineAnalyst(), cache)

    def create(self, **params: Any):
        message = super().create(**params)
        return message.model_copy(update={"model": OFFLINE_MODEL_NAME})

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        return "offline", "offline"

    def batch_backend(self, home: Path) -> Any:
        from nightwatch.offline.batches import OfflineBatches

        return OfflineBatches(home / "batches" / "offline", self)

    def poll_interval(self, initial_s: float, max_s: float) -> tuple[float, float]:
        return OFFLINE_POLL


CONFTEST = "tests/conftest.py"


def _defined_in(conv: _Conversation, function: str | None) -> str | None:
    """The file a `def <function>` search found it in."""
    found = _definition_hit(conv, function) if function else None
    return found[0] if found else None


def _route_step(conv: _Conversation, tools: set[str]) -> tuple[str, dict] | None:
    """For a NoReverseMatch: search for the pattern's name, then read the URL configuration that declares it."""
    route = reversed_route(conv.field("Error class"), conv.message)
    if not route or "search_code" not in tools:
        return None
    if not conv.called("search_code", query=route):
        return "search_code", {"query": route}
    declared = _declared_in(conv, route)
    if declared and "read_file" in tools and not conv.called("read_file", path=declared):
        return "read_file", {"path": declared}
    return None


def _declared_in(conv: _Conversation, route: str) -> str | None:
    """The Python file whose line the search for a route's name found as `name="<route>"`."""
    hits = conv.result("search_code", query=route)
    if not hits or hits[1]:
        return None
    named = re.compile(rf"""\bname\s*=\s*(["']){re.escape(route)}\1""")
    return next((path for path, _, text in parse_hits(hits[0]) if path.endswith(".py") and named.search(text)), None)


def _route_origin(conv: _Conversation) -> Found | None:
    route = reversed_route(conv.field("Error class"), conv.message)
    declared = _declared_in(conv, route) if route else None
    return route_origin(route, declared, conv.source_of(declared)) if route and declared else None


def _validator_step(conv: _Conversation, tools: set[str]) -> tuple[str, dict] | None:
    """For a unique constraint violated on insert: search for the column's validator, then read it (a range from its
    `def`: in a long file a whole read shows the head and an outline, not the body)."""
    column = unique_column(conv.field("Error class"), conv.message)
    if not column or "search_code" not in tools:
        return None
    for name in validator_names(column):
        if not conv.called("search_code", query=f"def {name}"):
            return "search_code", {"query": f"def {name}"}
        found = _definition_hit(conv, name)
        if found:
            path, line = found
            if "read_file" in tools and not conv.called("read_file", path=path, start_line=line):
                return "read_file", {"path": path, "start_line": line, "end_line": line + VALIDATOR_LINES}
            return None
    return None


VALIDATOR_LINES = 40  # a validator's body, read from its def


def _definition_hit(conv: _Conversation, function: str) -> tuple[str, int] | None:
    """(file, line) of the `def <function>` a search for it found in a Python file."""
    hits = conv.result("search_code", query=f"def {function}")
    if not hits or hits[1]:
        return None
    return next(((path, line) for path, line, text in parse_hits(hits[0])
                 if path.endswith(".py") and defines(text, {function})), None)


def _validator_origin(conv: _Conversation) -> Found | None:
    column = unique_column(conv.field("Error class"), conv.message)
    for name in validator_names(column) if column else []:
        found = _definition_hit(conv, name)
        if found:
            return validator_origin(column, found[0], conv.source_of(found[0]))  # type: ignore[arg-type]
    return None


def _python_web(conv: _Conversation) -> bool:
    top = conv.top_frame()
    return is_web_transaction(conv.field("Transaction")) and bool(top) and top[0].endswith(".py")  # type: ignore[index]


def _with_regression_test(conv: _Conversation, analysis: Analysis) -> Analysis:
    """Where the investigation read the project's conftest (run_test was offered): the production request replayed as a
    regression test, and a fix where a rule makes one (python_tests.py)."""
    conftest = conv.result("read_file", path=CONFTEST)
    crash = conv.top_frame()
    if conftest is None or conftest[1] or crash is None:
        return analysis
    traces = conv.result("get_error_traces")
    frames = conv.app_frames()
    sources = {f[0]: conv.source_of(f[0]) for f in frames}
    handler = handler_of(conv.field("Transaction"), frames, sources)
    error_class = conv.field("Error class")
    test = regression_test(error_class, conv.message, traces[0] if traces else "", handler,
                           "\n".join(t for _, t in sorted(numbered_lines(conftest[0]))), crash, sources.get(crash[0], {}))
    if test is None:
        return analysis
    update: dict[str, Any] = {"regression_test": test}
    fix = fix_by_rule(error_class, conv.message, handler, crash, sources.get(crash[0], {}))
    if fix is not None and not analysis.file_changes:
        changes, why = fix
        update |= {"file_changes": changes, "has_fix": True, "reasoning": analysis.reasoning + f" Fix: {why}."}
    return analysis.model_copy(update=update)


def _recall_query(frame: tuple[str, int, str] | None) -> str:
    return f"{frame[0]} {frame[1]} {frame[2]}".strip() if frame else ""


def _failing_method(message: str) -> str:
    match = re.search(r"undefined (?:local variable or )?method [`'‘]([^'’`]+)['’`]", message) or re.search(
        r"has no attribute '([^']+)'", message
    )
    return match.group(1) if match else ""


def _narration(name: str, args: dict[str, Any]) -> str:
    if name == "get_error_traces":
        return "Reading the error's traces first."
    if name == "read_file":
        return f"Reading {args['path']}: a frame of the trace, or where the bad value comes from."
    if name == "recall_context":
        return f"The code at {args.get('query', '')} is no longer in view; recalling it."
    return f"Searching for `{args.get('query', '')}` to find its definition and callers."
