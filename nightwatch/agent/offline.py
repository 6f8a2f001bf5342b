"""The offline model: a deterministic analyst that speaks the same protocol as Claude.

It reads only what Claude would read (the request's messages and tools) and answers with the SDK's
own `BetaMessage`: it asks for the traces, reads the top in-app frame's file, searches for the
failing method, then submits a schema-valid Analysis with honest low or medium confidence. Triage
requests (a `submit_triage` tool) get a rule-based verdict. Usage is the calibrated token estimate.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from anthropic.types.beta import BetaMessage

from nightwatch.agent.heuristics import diagnose, triage_verdict
from nightwatch.agent.tools import SUBMIT_TOOL
from nightwatch.tokens import EstimatingCounter, estimate_text

OFFLINE_MODEL_NAME = "nightwatch-offline-1"
TRIAGE_TOOL = "submit_triage"

_FRAME = re.compile(r"\[app\]\s+(?P<path>[^\s:]+):(?P<line>\d+)(?: in `(?P<method>[^`]*)`)?")
_TOP = re.compile(r"Top in-app frame: (?P<path>[^\s:]+):(?P<line>\d+)(?: in `(?P<method>[^`]*)`)?")
_FIELD = re.compile(r"^(Error class|Transaction|HTTP status|Occurrences): (.*)$", re.M)
_MESSAGE = re.compile(r'<untrusted source="error message">\n(.*?)\n</untrusted>', re.S)
_NUMBERED = re.compile(r"^\s*(\d+)\| ?(.*)$")
_LIKELY = re.compile(r"Likely files: (.*)")


@dataclass
class _Conversation:
    text: str
    calls: list[tuple[str, dict]] = field(default_factory=list)
    results: list[tuple[str, dict, str, bool]] = field(default_factory=list)

    @classmethod
    def of(cls, messages: list[dict]) -> "_Conversation":
        first = messages[0]["content"]
        text = first if isinstance(first, str) else "\n".join(b.get("text", "") for b in first if b.get("type") == "text")
        conv = cls(text)
        pending: dict[str, tuple[str, dict]] = {}
        for message in messages[1:]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    pending[block["id"]] = (block["name"], block.get("input") or {})
                    conv.calls.append(pending[block["id"]])
                elif block.get("type") == "tool_result" and block["tool_use_id"] in pending:
                    name, args = pending[block["tool_use_id"]]
                    content = block.get("content", "")
                    if isinstance(content, list):
                        content = "\n".join(c.get("text", "") for c in content)
                    conv.results.append((name, args, content, bool(block.get("is_error"))))
        return conv

    def field(self, name: str) -> str:
        for key, value in _FIELD.findall(self.text):
            if key == name:
                return value.strip()
        return ""

    @property
    def message(self) -> str:
        match = _MESSAGE.search(self.text)
        return match.group(1).strip() if match else ""

    def called(self, name: str, **args: Any) -> bool:
        return any(n == name and all(a.get(k) == v for k, v in args.items()) for n, a in self.calls)

    def result(self, name: str, **args: Any) -> tuple[str, bool] | None:
        for n, a, content, is_error in self.results:
            if n == name and all(a.get(k) == v for k, v in args.items()):
                return content, is_error
        return None

    def app_frames(self) -> list[tuple[str, int, str]]:
        """In-app frames, top first: from the traces if fetched, else from the first message."""
        traces = self.result("get_error_traces")
        for source in ([traces[0]] if traces else []) + [self.text]:
            frames = [(m["path"], int(m["line"]), m["method"] or "") for m in _FRAME.finditer(source)]
            if not frames and (top := _TOP.search(source)):
                frames = [(top["path"], int(top["line"]), top["method"] or "")]
            if frames:
                return frames
        return []

    def top_frame(self) -> tuple[str, int, str] | None:
        frames = self.app_frames()
        return frames[0] if frames else None

    def caller_frame(self) -> tuple[str, int, str] | None:
        """The first in-app frame in another file: where the failing code was called from."""
        frames = self.app_frames()
        return next((f for f in frames[1:] if frames and f[0] != frames[0][0]), None)

    def likely_files(self) -> list[str]:
        match = _LIKELY.search(self.text)
        return re.findall(r"`([^`]+)`", match.group(1)) if match else []


class OfflineModel:
    """Deterministic stand-in for Claude; every report labels its use."""

    name = "offline"
    offline = True

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._counter = EstimatingCounter()

    def create(self, **params: Any) -> BetaMessage:
        tools = {t["name"] for t in params.get("tools", [])}
        conv = _Conversation.of(params["messages"])
        if TRIAGE_TOOL in tools:
            blocks = [self._tool_use(TRIAGE_TOOL, self._triage(conv))]
        else:
            blocks = self._investigate(conv, tools, params.get("tool_choice"))
        return self._message(params, blocks)

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
        return None

    def _analysis(self, conv: _Conversation) -> dict[str, Any]:
        frame = conv.top_frame()
        if frame and "wrong number of arguments" in conv.message and conv.caller_frame():
            frame = conv.caller_frame()  # the callee's `def` line is only where Ruby noticed; the call is the defect
        path, line, method = frame if frame else ("", 0, "")
        read = conv.result("read_file", path=path) if path else None
        source = {} if read is None or read[1] else _numbered_lines(read[0])
        search = conv.result("search_code", query=_failing_method(conv.message) or method)
        return diagnose(
            error_class=conv.field("Error class"),
            transaction=conv.field("Transaction"),
            message=conv.message,
            path=path,
            line=line,
            method=method,
            code_line=source.get(line, ""),
            search_hits=search[0] if search and not search[1] else "",
        ).model_dump()

    # protocol ------------------------------------------------------------------------------
    def _tool_use(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_offline_{next(self._ids):06d}", "name": name, "input": args}

    def _message(self, params: dict[str, Any], blocks: list[dict[str, Any]]) -> BetaMessage:
        input_tokens = self._counter.count(system=params.get("system"), messages=params["messages"], tools=params.get("tools"))
        output_tokens = sum(estimate_text(json.dumps(b)) for b in blocks)
        return BetaMessage.model_validate(
            {
                "id": f"msg_offline_{next(self._ids):06d}",
                "type": "message",
                "role": "assistant",
                "model": OFFLINE_MODEL_NAME,
                "content": blocks,
                "stop_reason": "tool_use",
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        )


def _failing_method(message: str) -> str:
    match = re.search(r"undefined (?:local variable or )?method [`'‘]([^'’`]+)['’`]", message) or re.search(
        r"has no attribute '([^']+)'", message
    )
    return match.group(1) if match else ""


def _numbered_lines(text: str) -> dict[int, str]:
    out = {}
    for raw in text.splitlines():
        match = _NUMBERED.match(raw)
        if match:
            out[int(match.group(1))] = match.group(2)
    return out


def _narration(name: str, args: dict[str, Any]) -> str:
    if name == "get_error_traces":
        return "Reading the error's traces first."
    if name == "read_file":
        return f"Reading {args['path']}, where the top application frame points."
    return f"Searching for `{args.get('query', '')}` to find its definition and callers."
