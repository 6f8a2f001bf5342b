"""The agent's tools: read-only over the code host, the error's traces and the run's event log.

Tool schemas are data written for the model. A tool never raises out of the loop: failures come back
as `is_error` results whose text tells the model how to narrow its request. Every result is redacted
before the model or the event log sees it, and only then cut to a cap with a note (a cut through a
secret would leave a tail no rule recognises), so a single file cannot flood the context.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import time
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nightwatch.agent import search_view
from nightwatch.agent.file_view import file_view, numbered_lines
from nightwatch.agent.recall import EventLog, recall
from nightwatch.agent.tool_schema import model_tool
from nightwatch.codehosts.base import CodeHost, CodeHostError
from nightwatch.models import Analysis, ToolCall, TraceData
from nightwatch.redact import fence, redact
from nightwatch.stack_view import FIRST_MESSAGE_APP_FRAMES, breadcrumb_line, cut_at, one_line, stack_lines
from nightwatch.trace_paths import PathMap

SUBMIT_TOOL = "submit_analysis"
SEARCH_SHOWN = search_view.SHOWN
SEEN_RUN = 5  # consecutive lines already in view that a read answers by reference
MAX_RESULT_CHARS = 24_000
TEST_PATH = re.compile(r"^(?:[\w.-]+/)*(?:test_[\w.-]*\.py|[\w.-]*_test\.py|[\w.-]*_spec\.rb|[\w.-]*_test\.rb)$")

class ToolArgs(BaseModel):
    """A tool's arguments: validated before its function runs (an unknown or mistyped argument is an error result the
    model can correct). The schema the model reads is this model's (nightwatch.agent.tool_schema)."""

    model_config = ConfigDict(extra="forbid")


def _type_first(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema and its properties each with its `type` first (as a person writes one), and no
    `additionalProperties` (the validation refuses what the schema does not name; the model need not read it)."""
    out = {"type": schema["type"]} if "type" in schema else {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: _type_first(prop) for name, prop in value.items()}
        elif key not in ("type", "additionalProperties"):
            out[key] = value
    return out


@dataclass(frozen=True)
class Tool:
    """One tool, defined once by its function: the name is the function's, the description (written for the model) its
    docstring, the arguments the pydantic model its `args` parameter is annotated with. `needs` names what the night
    must have for the tool to be offered (run_test: a way to run the application's tests)."""

    name: str
    description: str
    arguments: type[ToolArgs]
    function: Callable[[Any, Any], "ToolOutcome"]
    needs: str | None = None

    @property
    def schema(self) -> dict[str, Any]:
        schema = model_tool(self.name, self.description, self.arguments)
        return {**schema, "input_schema": _type_first(schema["input_schema"])}


TOOLS: dict[str, Tool] = {}  # every tool, in the order the model is offered them


def tool(needs: str | None = None) -> Callable[[Callable[..., ToolOutcome]], Callable[..., ToolOutcome]]:
    """Make `function(runner, args: SomeArgs) -> ToolOutcome` a tool: the one place a tool is defined."""

    def register(function: Callable[..., ToolOutcome]) -> Callable[..., ToolOutcome]:
        arguments = inspect.signature(function).parameters["args"].annotation
        if isinstance(arguments, str):  # a module written with postponed annotations: resolved in its globals
            arguments = typing.get_type_hints(function)["args"]
        description = " ".join(inspect.cleandoc(function.__doc__ or "").split())
        if not description or function.__name__ in TOOLS or function.__name__ == SUBMIT_TOOL:
            raise ValueError(f"tool {function.__name__}: a tool needs a docstring (its description) and a name of its own")
        TOOLS[function.__name__] = Tool(function.__name__, description, arguments, function, needs)
        return function

    return register


def submit_tool_schema() -> dict[str, Any]:
    return model_tool(
        SUBMIT_TOOL,
        "Submit your final analysis. Call it exactly once, when the root cause is clear or "
        "when told this is your final turn.",
        Analysis,
    )


def tool_schemas(names: list[str]) -> list[dict[str, Any]]:
    return [TOOLS[n].schema for n in names] + [submit_tool_schema()]


def offered_tools(names: list[str], can: set[str]) -> list[str]:
    """Of a definition's tools, those the night can offer: a tool that needs something (`Tool.needs`) only where the
    night has it."""
    return [n for n in names if TOOLS[n].needs is None or TOOLS[n].needs in can]


class CodeCache:
    """Per-run cache of code-host reads shared by every investigation."""

    def __init__(self, host: CodeHost, paths: PathMap | None = None) -> None:
        self.host = host
        self._paths = paths
        self._store: dict[tuple, Any] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple, produce: Callable[[], Any]) -> tuple[Any, bool]:
        if key in self._store:
            self.hits += 1
            return self._store[key], True
        self.misses += 1
        value = produce()
        self._store[key] = value
        return value, False

    @property
    def paths(self) -> PathMap:
        """Production paths to repository paths; built from the host on first use when not given."""
        if self._paths is None:
            self._paths = PathMap.of_host(self.host)
        return self._paths

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass
class ToolOutcome:
    text: str
    is_error: bool = False
    cached: bool = False
    full_chars: int | None = None  # what the answer would have been without the diet; None: nothing withheld
    read_path: str | None = None  # a read_file answer: the repository file whose numbered lines it shows


@dataclass
class ToolRunner:
    """Executes tool calls for one investigation and records each in the event log."""

    cache: CodeCache
    traces: TraceData
    events: EventLog
    run_id: str
    fingerprint: str
    allowed: list[str]
    calls: list[ToolCall] = field(default_factory=list)
    files_examined: list[str] = field(default_factory=list)
    lean: bool = True  # a long file read without a range answers a window and an outline; a repeat, a reference
    context_intact: bool = True  # set by the loop: nothing was cleared or compacted yet, so earlier results are in view
    _shown: dict[tuple, int] = field(default_factory=dict)  # (path, start, end, text digest) -> iteration shown
    _lines_seen: dict[str, dict[int, tuple[int, str]]] = field(default_factory=dict)  # path -> line -> (iteration, text)
    _iteration: int = 0  # of the call being answered
    tester: Callable[[str, str, str], str] | None = None  # run_test: (path, content, test) -> what the run showed
    test_limit: int = 3
    _tests_run: int = 0

    def run(self, name: str, args: dict[str, Any], iteration: int) -> ToolOutcome:
        started = time.monotonic()
        try:
            if name not in self.allowed:
                raise CodeHostError(f"unknown tool '{name}'; available: {', '.join(self.allowed)}")
            self._iteration = iteration
            defined = TOOLS[name]
            outcome = defined.function(self, defined.arguments.model_validate(args or {}))
        except CodeHostError as exc:
            outcome = ToolOutcome(str(exc), is_error=True)
        except ValidationError as exc:
            outcome = ToolOutcome(f"bad arguments for {name}: " + "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()), is_error=True)
        outcome.text = _capped(outcome.text)  # redacted whole, then cut
        if outcome.read_path is not None:  # only what the model is really shown counts as in view
            self.note_shown(outcome.read_path, outcome.text, iteration)
        self.calls.append(
            ToolCall(
                run_id=self.run_id, fingerprint=self.fingerprint, iteration=iteration, name=name, ok=not outcome.is_error,
                result_chars=len(outcome.text),
                full_chars=min(outcome.full_chars, MAX_RESULT_CHARS) if outcome.full_chars is not None else len(outcome.text),
                cached=outcome.cached, latency_ms=int((time.monotonic() - started) * 1000),
            )
        )
        if name != "recall_context":
            label = redact(f"{name} {json.dumps(args, sort_keys=True, default=str)}")
            self.events.append(self.fingerprint, "tool_result", label, outcome.text, iteration)
        return outcome

    def note_shown(self, path: str, numbered: str, iteration: int) -> None:
        """Record the numbered lines of `path` the model has in view, with their text (iteration 0: the first
        message's previews); a line shown again with other text (the file changed) is recorded as shown now."""
        seen = self._lines_seen.setdefault(path, {})
        for number, line in numbered_lines(numbered):
            if seen.get(number, (0, None))[1] != line:
                seen[number] = (iteration, line)

    def _trim_seen(self, path: str, text: str) -> str:
        """Runs of SEEN_RUN or more consecutive lines the model already has in view with the same text, each run as
        one reference line."""
        seen = self._lines_seen.get(path) if self.lean and self.context_intact else None
        if not seen:
            return text
        out: list[str] = []
        run: list[tuple[int, str]] = []

        def flush() -> None:
            if len(run) >= SEEN_RUN:
                when = sorted({seen[n][0] for n, _ in run})
                where = ("in the research preview of the first message" if when == [0] else
                         f"at iteration {when[0]}" if len(when) == 1 else
                         "earlier (" + ", ".join("the research preview" if w == 0 else f"iteration {w}" for w in when) + ")")
                out.append(f"[lines {run[0][0]}-{run[-1][0]} unchanged: shown {where}, still above in this conversation "
                           "(recall_context finds it if it was cleared since)]")
            else:
                out.extend(raw for _, raw in run)
            run.clear()

        for raw in text.splitlines():
            parsed = numbered_lines(raw)
            number = parsed[0][0] if parsed and seen.get(parsed[0][0], (0, None))[1] == parsed[0][1] else None
            if number is None or (run and run[-1][0] != number - 1):
                flush()
            if number is None:
                out.append(raw)
            else:
                run.append((number, raw))
        flush()
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")

    def _already_shown(self, path: str, start: int | None, end: int | None, text: str, iteration: int) -> str | None:
        """A reference instead of the same text again, while the earlier result is surely still in the conversation."""
        key = (path, start, end, hashlib.sha256(text.encode()).hexdigest())
        earlier = self._shown.get(key)
        if earlier is None or not (self.lean and self.context_intact):
            self._shown[key] = iteration
            return None
        where = f"lines {start or 1}-{end}" if end else (f"from line {start}" if start else "as read then")
        return (f"[{path} ({where}) is unchanged since iteration {earlier}, where it was shown; that result is still above "
                "in this conversation (recall_context finds it if it was cleared since). Ask a different range if you need "
                "other lines.]")

    def _focus_line(self, path: str) -> int | None:
        """The line of the first application frame in this file, if the trace names one."""
        return next((f.line for f in self.traces.stack_frames if f.in_app and f.file == path and f.line), None)

    def _numbered_lines(self, path: str) -> dict[int, str]:
        """A file's lines by number, through the code cache (for a few search hits' context); {} if unreadable."""
        try:
            text, _ = self.cache.get(("read", path, None, None),
                                     lambda: self.cache.host.read_file(path, start_line=None, end_line=None, numbered=True))
        except CodeHostError:
            return {}
        return dict(numbered_lines(text))



# the tools: each defined once, by its function ------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    path: str = Field(description="e.g. app/models/order.rb")
    start_line: int | None = Field(None, ge=1)
    end_line: int | None = Field(None, ge=1)


@tool()
def read_file(runner: ToolRunner, args: ReadFileArgs) -> ToolOutcome:
    """Read a file of the repository, with line numbers. Use start_line/end_line for a range when the file is long.
    Paths are relative to the repository root."""
    path, mapped = runner.cache.paths.repo_path(args.path)  # a production path from the trace reads its repository file
    start, end = args.start_line, args.end_line
    text, cached = runner.cache.get(
        ("read", path, start, end), lambda: runner.cache.host.read_file(path, start_line=start, end_line=end, numbered=True))
    raw = text
    if runner.lean and start is None and end is None:  # a long file: the trace's window and an outline
        text = file_view(path, text, runner._focus_line(path))
    if path not in runner.files_examined:
        runner.files_examined.append(path)
    shown = runner._already_shown(path, start, end, text, runner._iteration)
    if shown is None:
        text = runner._trim_seen(path, text)
    return ToolOutcome(shown or (f"{mapped}\n{text}" if mapped else text), cached=cached, full_chars=len(raw), read_path=path)


class SearchCodeArgs(ToolArgs):
    query: str = Field(min_length=2)
    path_glob: str | None = Field(None, description="optional, e.g. app/models/*.rb")


@tool()
def search_code(runner: ToolRunner, args: SearchCodeArgs) -> ToolOutcome:
    """Search the repository for a string (case-insensitive). Returns the matching lines under their file as
    `line: text` (with a line of context when there are few) and counts what it left out. Use it to find a method's
    definition and its callers."""
    limit = search_view.SCANNED if runner.lean else SEARCH_SHOWN + 1
    hits, cached = runner.cache.get(("search", args.query, args.path_glob, limit),
                                    lambda: runner.cache.host.search_code(args.query, path_glob=args.path_glob, limit=limit))
    plain = _plain_hits(args.query, hits)
    if runner.lean:
        exhaustive = getattr(runner.cache.host, "search_is_exhaustive", False)
        return ToolOutcome(search_view.search_view(args.query, hits, runner._numbered_lines, exhaustive), cached=cached,
                           full_chars=len(plain))
    return ToolOutcome(plain, cached=cached)


class ListDirectoryArgs(ToolArgs):
    path: str = ""


@tool()
def list_directory(runner: ToolRunner, args: ListDirectoryArgs) -> ToolOutcome:
    """List a directory of the repository; directories end with '/'."""
    entries, cached = runner.cache.get(("list", args.path), lambda: runner.cache.host.list_directory(args.path))
    shown = entries[:LIST_SHOWN]
    more = (f"\n… {len(entries) - LIST_SHOWN:,} more entries of {len(entries):,}: list a subfolder, or find a file with "
            "search_code and a path_glob") if len(entries) > LIST_SHOWN else ""
    return ToolOutcome("\n".join(shown) + more or "(empty directory)", cached=cached)


class ErrorTracesArgs(ToolArgs):
    frame: int | None = Field(None, ge=0, description="optional: which [app] frame, 0 the top")
    breadcrumbs: int | None = Field(None, ge=0, description="optional: a page of breadcrumbs, 0 the newest")


@tool()
def get_error_traces(runner: ToolRunner, args: ErrorTracesArgs) -> ToolOutcome:
    """The error's sample occurrences and full stack trace (redacted production data). Where the source recorded them
    (Sentry's SDKs): `frame` shows an application frame's local variables and source lines (0: the top [app] frame, 1:
    the next [app] frame down the stack, ...); `breadcrumbs` pages back through what the application did before the
    error (0: the newest 20)."""
    if args.frame is not None:
        return ToolOutcome(fence("error traces", frame_details(runner.traces, int(args.frame))))
    if args.breadcrumbs is not None:
        return ToolOutcome(fence("error traces", breadcrumb_page(runner.traces, int(args.breadcrumbs))))
    return ToolOutcome(fence("error traces", render_traces(runner.traces, lean=runner.lean and runner.context_intact)))


class RecallArgs(ToolArgs):
    query: str = Field(description="words to look for, e.g. a method name")


@tool()
def recall_context(runner: ToolRunner, args: RecallArgs) -> ToolOutcome:
    """Search everything seen earlier in this investigation, including tool results that were cleared from the
    conversation. Use it when you need a detail you no longer have in view."""
    return ToolOutcome(recall(runner.events, args.query, runner.fingerprint))


class RunTestArgs(ToolArgs):
    path: str = Field(description="the test file, e.g. tests/test_pricing_regression.py")
    content: str = Field(description="the whole file")
    test: str | None = Field(None, description="optional: one test as the runner names it (path::name)")


@tool(needs="tests")
def run_test(runner: ToolRunner, args: RunTestArgs) -> ToolOutcome:
    """Run a regression test you write, in a sandbox (no network, a copy of the repository at the night's commit with
    your test file added). Use it to show the production error: the test should fail with the same exception class,
    raised through the crash frame; the answer says whether it does and ends with the runner's output. A few runs per
    investigation; put the test that reproduces the error in your analysis's regression_test, and NightWatch runs it
    again with your fix."""
    if runner.tester is None:
        raise CodeHostError("run_test is not available in this investigation")
    if runner._tests_run >= runner.test_limit:
        raise CodeHostError(f"run_test was used {runner.test_limit} times, its limit; submit your analysis with the "
                            "regression test you have")
    if not TEST_PATH.match(args.path) or ".." in args.path.split("/"):
        raise CodeHostError(f"{args.path!r} is not a test file path (tests/.../test_*.py, *_test.py or spec/..._spec.rb)")
    runner._tests_run += 1
    return ToolOutcome(runner.tester(args.path, args.content, args.test or ""))


def _plain_hits(query: str, hits: list[Any]) -> str:
    """Search hits as `path:line: text`, the first SEARCH_SHOWN of them (the answer without the diet)."""
    if not hits:
        return f"No matches for {query!r}."
    lines = [f"{h.path}:{h.line}: {h.text.strip()}" for h in hits[:SEARCH_SHOWN]]
    if len(hits) > SEARCH_SHOWN:
        lines.append(f"… more than {SEARCH_SHOWN} matches; narrow the search with path_glob or a longer query")
    return "\n".join(lines)


def render_traces(traces: TraceData, max_samples: int = 3, lean: bool = False) -> str:
    """The error's occurrences and stack, redacted (production data), the raw trace cut only after redaction. `lean`
    (the diet, while the first message is in view): what every occurrence shares is said once, and a stack the first
    message shows whole is named there instead of repeated."""
    samples = [[(k, one_line(redact(str(v)))) for k, v in s.items() if v not in (None, "")]
               for s in traces.transaction_errors[:max_samples]]
    lines = _occurrence_lines(samples, lean)
    if traces.stack_frames:
        stack = stack_lines(traces.stack_frames)
        if lean and not cut_at(traces.stack_frames, FIRST_MESSAGE_APP_FRAMES):  # the first message shows it whole
            lines.append(f"stack: the {len(stack)} line(s) of the first message's Stack section, unchanged")
        else:
            lines.append("stack (top first, [app] = application code; runs of framework frames are counted):")
            lines.extend(stack)
    elif traces.stack_trace:
        lines.append("stack trace:\n" + redact(traces.stack_trace)[:8000])
    lines.extend(f"note: {n}" for n in traces.notes)
    return redact("\n".join(lines)) or "No traces were recorded for this error."


BREADCRUMB_PAGE = 20
LIST_SHOWN = 400  # entries of one folder a listing shows: a monorepo's folder of thousands says how many it left out


def frame_details(traces: TraceData, index: int) -> str:
    """One application frame of the newest occurrence (0: the top): its source lines as production ran them, its
    local variables."""
    frames = traces.in_app_frames
    if not 0 <= index < len(frames):
        return f"There is no application frame {index}: the stack has {len(frames)} (0 is the top)."
    f = frames[index]
    lines = [f"application frame {index} of {len(frames)}: {one_line(f.render())}"]
    if f.context:
        lines.append("source as production ran it:")
        lines += [f"{'>' if n == f.line else ' '} {n:>5}| {one_line(t)}" for n, t in f.context]
    lines.append("local variables:" if f.variables else "no local variables were recorded for this frame")
    lines += [f"  {one_line(k)} = {one_line(v)}" for k, v in f.variables.items()]
    return redact("\n".join(lines))


def breadcrumb_page(traces: TraceData, page: int) -> str:
    """A page of the newest occurrence's breadcrumbs, newest page first, oldest line first within a page."""
    crumbs = traces.breadcrumbs
    if not crumbs:
        return "No breadcrumbs were recorded for this error."
    end = len(crumbs) - page * BREADCRUMB_PAGE
    if end <= 0:
        return f"There is no page {page}: {len(crumbs)} breadcrumbs make {-(-len(crumbs) // BREADCRUMB_PAGE)} page(s)."
    start = max(0, end - BREADCRUMB_PAGE)
    head = f"breadcrumbs {start + 1}-{end} of {len(crumbs)}, oldest first" + (f" (older: page {page + 1})" if start else "")
    return redact("\n".join([head, *(breadcrumb_line(b) for b in crumbs[start:end])]))


def _occurrence_lines(samples: list[list[tuple[str, str]]], lean: bool) -> list[str]:
    """One line per occurrence; lean, the attributes every occurrence shares come first, once."""
    common = set(samples[0]).intersection(*samples[1:]) if lean and len(samples) > 1 else set()
    lines = [f"every occurrence ({len(samples)} shown): " + ", ".join(f"{k}={v}" for k, v in samples[0] if (k, v) in common)
             ] if common else []
    for sample in samples:
        rest = [f"{k}={v}" for k, v in sample if (k, v) not in common]
        lines.append("occurrence: " + (", ".join(rest) or "(as every occurrence)"))
    return lines


def _capped(text: str) -> str:
    """The result redacted, then cut to MAX_RESULT_CHARS with a note."""
    text = redact(text)
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return text[:MAX_RESULT_CHARS] + (
        f"\n… [result cut at {MAX_RESULT_CHARS:,} of {len(text):,} characters: ask for a line range or a narrower search]"
    )
