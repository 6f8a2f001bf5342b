"""The marathon corpus of the token-efficiency benchmark: investigations of 60-150 tool calls over whole applications.

The short and long corpora stay below 50K tokens of context, where no clearing or summary pays. A marathon is
what the long-context layers are for: one investigation over a full checkout of a real application (Healthchecks
or CTFd, from the trees `nightwatch eval --fix-tests` ships in evals/apps/<app>/history.bundle, at the commit the error
happened on), reading whole files of 800-2,600 lines, paging through them in ranges, broad searches over 600-700
files, the production trace as New Relic captured it (40-50 frames), and the same files read again late. Under the
naive loop its context passes the model's 200K window.

Needles: three facts of each marathon are planted early (lines of code, with a value in them, shown by a tool result
of its first dozen calls and by no later one, nor by the first message) and asked late: the final answer quotes
every needle it can see. What a clearing, the watcher or a summary took away shows as a needle the answer misses,
unless `recall_context` brings it back.

The model (`MarathonModel`) answers from the request alone, as a model does: it finds the last step it took in the
conversation it is shown (each of its turns says `[marathon step N]`, and its summaries say up to which step), so a
run that resumes from a checkpoint on another process gets the same answers as one that never stopped.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.investigation_corpus import Call, _text
from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import SUBMIT_TOOL, CodeCache, ToolRunner
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.evaluation import EvalCase, load_cases
from nightwatch.models import ErrorGroup, TraceData, Window
from nightwatch.prompts import investigation_message
from nightwatch.research import ResearchContext, research_error
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.trace_paths import PathMap, locate_frames

EVALS = Path(__file__).resolve().parents[1] / "evals"
APPS = EVALS / "apps"
NIGHT = "marathon"
# (eval case, tool calls): each case's error investigated on its application's full tree at the commit it happened on
MARATHONS: tuple[tuple[str, int], ...] = (
    ("healthchecks-group-test-notification", 150),
    ("ctfd-delete-solution-with-files", 120),
    ("healthchecks-ping-non-utf8-body", 100),
    ("ctfd-users-create-admin-email", 60),
)
PER_TURN = 3  # tool calls the model asks for at once
NEEDLES = 3
PLANTED_BY = 12  # needles come from the results of the first calls
STEP = re.compile(r"\[marathon step (\d+)\]")
LONG_FILE_LINES = 300  # files read whole in the middle of a marathon
PAGE_LINES = 100  # a long file paged through in ranges of this many lines


@dataclass
class Needle:
    path: str  # the file it was read from
    text: str  # the line's code, as the model must quote it
    call: int  # the tool call (1-based) whose result planted it
    query: str  # what the model asks recall_context when it no longer sees it


@dataclass
class Marathon:
    name: str
    app: str
    error: ErrorGroup
    traces: TraceData
    research: ResearchContext
    turns: list[list[Call]]
    needles: list[Needle]
    bug: dict
    defect: str
    code: CodeCache  # the checkout's reads and searches, shared by every run of the marathon (as a night's runs share it)
    night: str = NIGHT

    @property
    def calls(self) -> int:
        return sum(len(t) for t in self.turns)

    @property
    def max_iterations(self) -> int:
        """The loop's iteration limit for this marathon: its turns, a recall turn, the answer and a little slack."""
        return len(self.turns) + 6


# checkouts ----------------------------------------------------------------------------------------------------
def app_of(case_id: str) -> str:
    return case_id.split("-", 1)[0]


def checkout(case_id: str, dest: Path) -> LocalRepoHost:
    """The application's full tree at the commit the case's error happened on (`refs/cases/<id>/parent` of
    evals/apps/<app>/history.bundle), as a git checkout."""
    if not (dest / ".git").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        bundle = (APPS / app_of(case_id) / "history.bundle").resolve()
        for args in (["init", "-q"], ["fetch", "-q", str(bundle), f"refs/cases/{case_id}/parent:refs/heads/night"],
                     ["-c", "advice.detachedHead=false", "checkout", "-q", "night"]):
            subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True, timeout=300)
    return LocalRepoHost(dest)


# the corpus ---------------------------------------------------------------------------------------------------
def marathon_corpus(scratch: Path, only: tuple[tuple[str, int], ...] = MARATHONS) -> list[tuple[Marathon, LocalRepoHost]]:
    cases = {c.id: c for c in load_cases(EVALS, [case_id for case_id, _ in only])}
    out = []
    for case_id, calls in only:
        host = checkout(case_id, scratch / case_id)
        out.append((_marathon(cases[case_id], host, calls), host))
    return out


def _marathon(case: EvalCase, host: LocalRepoHost, calls: int) -> Marathon:
    source = ExportFileSource(case.export)
    window = Window(start=datetime(2000, 1, 1, tzinfo=timezone.utc), end=datetime(2100, 1, 1, tzinfo=timezone.utc))
    error = next(e for e in source.fetch_errors(window).errors if e.error_class == case.error.error_class)
    traces = locate_frames(source.fetch_traces(error, window), PathMap.of_host(host))
    research = research_error(error, traces, host, [], [])
    crash_line = case.crash.line or 1
    defect = host.read_file(case.crash.file).splitlines()[crash_line - 1]
    bug = {"error_class": case.error.error_class, "file": case.crash.file, "line": crash_line, "fix": None,
           "root_cause": case.notes or case.title}
    turns = _turns(case, host, calls)
    code = CodeCache(host)
    needles = _needles(code, traces, turns, json.dumps(investigation_message(error, traces, research)))
    return Marathon(case.id, app_of(case.id), error, traces, research, turns, needles, bug, defect, code)


def _turns(case: EvalCase, host: LocalRepoHost, calls: int) -> list[list[Call]]:
    """An investigation that starts at the trace, reads the crash and the fix's origin with the files around them,
    then widens to the application's long files and its tests (whole, then paged through), broad searches and
    listings, and comes back to the crash and the origin late."""
    crash = case.crash.line or 1
    sizes = {p: _lines(host, p) for p in host.tracked_files() if p.endswith(".py")}
    words = sorted({w for w in re.findall(r"[A-Za-z_]\w{4,}", host.read_file(case.crash.file).splitlines()[crash - 1])},
                   key=lambda w: (-len(w), w))
    early = _early(case, host, sizes, words)
    late: list[Call] = [
        ("read_file", {"path": case.crash.file}),  # the same files read again, late
        ("read_file", {"path": case.crash.file, "start_line": max(1, crash - 15), "end_line": crash + 15}),
        ("read_file", {"path": case.origin.file}),
        ("search_code", {"query": words[0] if words else "def "}),
    ]
    chosen = early + _middle(case, sizes)[: max(0, calls - len(early) - len(late))] + late
    assert len(chosen) == calls, f"{case.id}: {len(chosen)} tool calls, not {calls}"
    return [chosen[i : i + PER_TURN] for i in range(0, len(chosen), PER_TURN)]


def _early(case: EvalCase, host: LocalRepoHost, sizes: dict[str, int], words: list[str]) -> list[Call]:
    """The trace, the crash and origin files whole, three files they import (or beside them) whole: where the
    needles are; ranges around the crash and the origin, searches for the crash line's words, its folder."""
    crash, origin = case.crash.line or 1, (case.origin.range or (1, 1))
    folders = list(dict.fromkeys(p.rsplit("/", 1)[0] for p in (case.crash.file, case.origin.file)))
    nearby = _imports(host, case.crash.file, sizes) + _imports(host, case.origin.file, sizes) + \
        [p for folder in folders for p in sorted(sizes) if p.rsplit("/", 1)[0] == folder]
    related = [p for p in dict.fromkeys(nearby) if 40 <= sizes[p] < LONG_FILE_LINES and p not in (case.crash.file, case.origin.file)][:3]
    return [
        ("get_error_traces", {}),
        ("read_file", {"path": case.crash.file}),
        ("read_file", {"path": case.origin.file}),
        *[("read_file", {"path": p}) for p in related],
        ("read_file", {"path": case.crash.file, "start_line": max(1, crash - 60), "end_line": crash + 40}),
        ("read_file", {"path": case.origin.file, "start_line": max(1, origin[0] - 60), "end_line": origin[1] + 40}),
        *[("search_code", {"query": w}) for w in words[:2]],
        ("list_directory", {"path": folders[0]}),
    ]


def _middle(case: EvalCase, sizes: dict[str, int]) -> list[Call]:
    """The application's long files whole (each with a search for its name), the longest tests whole, broad searches,
    the folders, then every long file paged through, longest first."""
    package = case.crash.file.split("/", 1)[0]
    test = re.compile(r"(^|/)tests?/")
    long_files = sorted((p for p, n in sizes.items() if n >= LONG_FILE_LINES and p.startswith(package + "/") and not test.search(p)),
                        key=lambda p: (-sizes[p], p))
    tests = sorted((p for p, n in sizes.items() if n >= LONG_FILE_LINES and test.search(p)), key=lambda p: (-sizes[p], p))
    middle: list[Call] = []
    for path in long_files:
        stem = Path(path).stem if Path(path).stem != "__init__" else Path(path).parent.name
        middle += [("read_file", {"path": path}), ("search_code", {"query": stem})]
    middle += [("read_file", {"path": path}) for path in tests[:10]]
    middle += [("search_code", {"query": q}) for q in ("def ", "import ", "raise ", "except ", "return None", "request.")]
    middle += [("list_directory", {"path": d}) for d in sorted({p.rsplit("/", 1)[0] for p in long_files})]
    for path in long_files + tests:
        middle += [("read_file", {"path": path, "start_line": s, "end_line": s + PAGE_LINES - 1})
                   for s in range(1, sizes[path] + 1, PAGE_LINES)]
    return middle


def _imports(host: LocalRepoHost, path: str, sizes: dict[str, int]) -> list[str]:
    """The repository's Python files `path` imports, in the order it imports them."""
    out = []
    for line in host.read_file(path).splitlines():
        match = re.match(r"\s*(?:from\s+([\w.]+)\s+import\s+([\w, ()]+)|import\s+([\w.]+))", line)
        if not match:
            continue
        module = (match.group(1) or match.group(3)).replace(".", "/")
        names = [n.strip(" ()") for n in (match.group(2) or "").split(",") if n.strip(" ()")]
        out += [c for c in (f"{module}.py", f"{module}/__init__.py", *(f"{module}/{n}.py" for n in names)) if c in sizes]
    return out


def _lines(host: LocalRepoHost, path: str) -> int:
    try:
        return (host.root / path).read_bytes().count(b"\n") + 1
    except OSError:
        return 0


def _needles(code: CodeCache, traces: TraceData, turns: list[list[Call]], first: str) -> list[Needle]:
    """Lines shown by one of the first calls' results and by no later result nor the first message, with a value in
    them (a number, a string or an assignment), each from another result; checked with and without the diet."""
    calls = [c for turn in turns for c in turn]
    shown = {lean: _dry_run(code, traces, calls, lean) for lean in (True, False)}
    later = "\n".join(text for lean in shown for text in shown[lean][PLANTED_BY:])
    needles: list[Needle] = []
    for index in range(1, PLANTED_BY):
        name, args = calls[index]
        if name != "read_file" or len(needles) >= NEEDLES or any(n.call == index + 1 for n in needles):
            continue
        both = [line for line in _code_lines(shown[True][index]) if line in _code_lines(shown[False][index])]
        valued = [t for t in both if re.search(r"\s=\s", t) and re.search(r"\d|['\"]", t) and not t.startswith(("def ", "import ", "from "))]
        for text in valued + both:
            if len(text) >= 20 and re.search(r"\d|['\"]|\s=\s", text) and text not in first and text not in later \
                    and all(n.text != text for n in needles):
                words = sorted(set(re.findall(r"[A-Za-z_]\w{3,}", text)), key=lambda w: (-len(w), w))[:4]
                needles.append(Needle(args["path"], text, index + 1, " ".join([args["path"], *words])))
                break
    return needles


def _code_lines(result: str) -> list[str]:
    """The code of each numbered line of a read_file result, stripped."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*\d+\| ?(.*)$", result, re.M)]


def _dry_run(code: CodeCache, traces: TraceData, calls: list[Call], lean: bool) -> list[str]:
    runner = ToolRunner(cache=code, traces=traces, events=EventLog(), run_id="dry", fingerprint="dry",
                        allowed=sorted({name for name, _ in calls}), lean=lean)
    return [runner.run(name, dict(args), 1 + i // PER_TURN).text for i, (name, args) in enumerate(calls)]


# the model ----------------------------------------------------------------------------------------------------
@dataclass
class MarathonModel:
    """Follows the marathon's script from the step it finds in the request; at the answer, asks recall_context for
    every needle it no longer sees (once), then quotes the needles it sees."""

    marathon: Marathon
    needles: dict[str, str] = field(default_factory=dict)  # needle text -> present | recalled | missing, at the answer
    answered: int = 0

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t["name"] for t in request.get("tools", [])}
        forced = tools == {SUBMIT_TOOL} or (request.get("tool_choice") or {}).get("type") == "tool"
        step = last_step(request["messages"]) + 1
        if not forced and step <= len(self.marathon.turns):
            calls = self.marathon.turns[step - 1]
            return [{"type": "text", "text": f"[marathon step {step}] Next: " + ", ".join(_label(c) for c in calls)}] + \
                [self._use(step, i, name, args) for i, (name, args) in enumerate(calls)]
        seen = _text(request["messages"])
        asked = _recall_queries(request["messages"])
        lost = [n for n in self.marathon.needles if n.text not in seen and n.query not in asked]
        if lost and not forced and "recall_context" in tools:
            return [{"type": "text", "text": f"[marathon step {step}] {len(lost)} fact(s) read early are no longer in view; recalling."}] + \
                [self._use(step, i, "recall_context", {"query": n.query}) for i, n in enumerate(lost)]
        self.needles = {n.text: ("recalled" if n.query in asked else "present") if n.text in seen else "missing"
                        for n in self.marathon.needles}
        self.answered += 1
        return [self._use(step, 0, SUBMIT_TOOL, self._analysis([n for n in self.marathon.needles if n.text in seen]))]

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        """A conservative summary: the calls made (not the code they returned), and the step reached."""
        uses = [b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"]
        return f"Investigation so far, up to [marathon step {last_step(request['messages'])}]: " + \
            "; ".join(f"{u['name']} {json.dumps(u['input'])}" for u in uses)

    def _analysis(self, seen: list[Needle]) -> dict[str, Any]:
        bug = self.marathon.bug
        quoted = " ".join(f"{n.path} reads `{n.text}`." for n in seen)
        return {"title": f"{bug['error_class']} at {bug['file']}:{bug['line']}", "reasoning": "Followed the stack to the line. " + quoted,
                "root_cause": bug["root_cause"], "has_fix": True, "confidence": "high" if len(seen) == len(self.marathon.needles) else "medium",
                "file_changes": [{"path": bug["file"], "action": "modify", "description": "fix the defect", "before": self.marathon.defect,
                                  "after": f"{self.marathon.defect}  # guarded"}],
                "suggested_next_steps": ["Add a regression test."]}

    @staticmethod
    def _use(step: int, index: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_marathon_{step:03d}_{index}", "name": name, "input": args}


def last_step(messages: list[dict]) -> int:
    """The last step the model took, from its own turns and summaries in the conversation (0: none yet)."""
    found = [0]
    for message in messages:
        blocks = message["content"] if isinstance(message["content"], list) else [{"type": "text", "text": message["content"]}]
        for block in blocks:
            said = block.get("text") if block.get("type") == "text" else block.get("content") if block.get("type") == "compaction" else None
            found += [int(n) for n in STEP.findall(said or "")]
    return max(found)


def _recall_queries(messages: list[dict]) -> set[str]:
    return {b["input"].get("query", "") for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use" and b.get("name") == "recall_context"}


def _label(call: Call) -> str:
    return f"{call[0]}({', '.join(str(v) for v in call[1].values())})"
