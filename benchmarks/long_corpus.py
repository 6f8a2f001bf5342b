"""The long corpus of the token-efficiency benchmark: scripted investigations on real-size code.

One script per real-application eval case (evals/lobsters-*): the case's own checkout (files up to
~1,000 lines), its production trace (40-100 frames, most of them gems), and 20-40 tool calls two at a
time: the trace, the crash file whole, a range around the origin of the fix (its lines hold the
"needle" the answer quotes), every other file of the case whole, broad and narrow searches (the file
names, the words of the crash line, the methods around it), the crash file read a second time, ranges
around the crash and the trace's other application frames, and the origin file whole. The scripted model of investigation_corpus.py
follows the script whatever it is shown, and at the answer turn quotes the needle if it can see it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.investigation_corpus import Call, Script
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.evaluation import EvalCase, load_cases, prepare_repository
from nightwatch.models import TraceData, Window
from nightwatch.prompts import investigation_message
from nightwatch.research import research_error
from nightwatch.sources.export_file import ExportFileSource
from nightwatch.trace_paths import PathMap, locate_frames

EVALS = Path(__file__).resolve().parents[1] / "evals"
MIN_CALLS, MAX_CALLS = 20, 40
NIGHT = "lobsters"  # one night of the application's errors: they share the night's prompt cache, each its own checkout


def long_corpus(scratch: Path) -> list[tuple[Script, LocalRepoHost]]:
    """(script, its checkout) for every real-application case, all of one night (as the short corpus's nights hold
    several errors): the tools and system prompt are one shared prefix, and each case reads its own checkout."""
    out = []
    for case in (c for c in load_cases(EVALS) if c.id.startswith("lobsters-")):  # the Rails night; the Python apps have the marathons
        host = LocalRepoHost(prepare_repository(case, scratch / case.id))
        out.append((_script(case, host), host))
    return out


def _script(case: EvalCase, host: LocalRepoHost) -> Script:
    source = ExportFileSource(case.export)
    window = Window(start=datetime(2000, 1, 1, tzinfo=timezone.utc), end=datetime(2100, 1, 1, tzinfo=timezone.utc))
    error = next(e for e in source.fetch_errors(window).errors if e.error_class == case.error.error_class)
    traces = locate_frames(source.fetch_traces(error, window), PathMap.of_host(host))
    research = research_error(error, traces, host, [], [])
    first = json.dumps(investigation_message(error, traces, research))
    low, high = case.origin.range or (1, 1)
    needle, needle_range = _needle(host, case.origin.file, (low, high), first)
    crash_text = host.read_file(case.crash.file).splitlines()[(case.crash.line or 1) - 1]
    bug = {"error_class": case.error.error_class, "file": case.crash.file, "line": case.crash.line, "fix": None,
           "root_cause": case.notes or case.title}
    turns = _turns(case, host, needle_range, crash_text, traces)
    query = f"{case.origin.file} {' '.join(needle.split('| ', 1)[1].split()[:2])}"
    return Script(case.id, error, traces, research, turns, needle, query, bug, crash_text, night=NIGHT)


def _needle(host: LocalRepoHost, path: str, origin: tuple[int, int], first: str) -> tuple[str, tuple[int, int]]:
    """A line near the origin, as read_file numbers it, that the first message does not show (a `def` if any), and
    the range the script reads it with: 15 lines around the origin, wider when the research previews show those."""
    for margin in (15, 40, 100, 10_000):
        lines = (max(1, origin[0] - margin), origin[1] + margin)
        shown = host.read_file(path, start_line=lines[0], end_line=lines[1], numbered=True).splitlines()
        fresh = [line for line in shown if "| " in line and len(line.split("| ", 1)[1].strip()) > 8
                 and json.dumps(line.split("| ", 1)[1])[1:-1] not in first]
        defs = [line for line in fresh if line.split("| ", 1)[1].strip().startswith("def ")]
        if defs or fresh:
            return (defs or fresh)[0], lines
    lines = (max(1, origin[0] - 15), origin[1] + 15)  # the research previews show the whole file: its origin line
    return host.read_file(path, start_line=origin[0], end_line=origin[0], numbered=True).splitlines()[0], lines


def _turns(case: EvalCase, host: LocalRepoHost, needle_range: tuple[int, int], crash_text: str, traces: TraceData
           ) -> list[list[Call]]:
    crash = case.crash.line or 1
    others = sorted(p for p in host.tracked_files() if p != case.crash.file and not p.endswith("LICENSE"))
    words = sorted({w for w in re.findall(r"[A-Za-z_]\w{3,}", crash_text)}, key=lambda w: (-len(w), w))
    pool: list[Call] = []
    for path in others:
        pool.append(("read_file", {"path": path}))
        pool.append(("search_code", {"query": Path(path).stem}))
    pool += [("search_code", {"query": w}) for w in words[:6]]
    pool += [("search_code", {"query": "def "}), ("search_code", {"query": "before_action"}),
             ("read_file", {"path": case.crash.file}),  # the crash file a second time
             ("read_file", {"path": case.crash.file, "start_line": max(1, crash - 30), "end_line": crash + 30}),
             ("list_directory", {"path": "app/models"}), ("list_directory", {"path": "app/controllers"}),
             ("search_code", {"query": "find_by"}), ("search_code", {"query": "rescue"})]
    frames = list(dict.fromkeys((f.file, f.line) for f in traces.stack_frames if f.in_app and f.located and f.line))
    pool += [("read_file", {"path": path, "start_line": max(1, line - 20), "end_line": line + 20}) for path, line in frames[1:6]]
    pool += [("search_code", {"query": name}) for name in _methods_near(host, case.crash.file, crash)]
    pool += [("read_file", {"path": case.origin.file}), ("list_directory", {"path": "app"}),
             ("list_directory", {"path": "config"}), ("search_code", {"query": "nil"})]
    rest = pool[: MAX_CALLS - 3]
    assert len(rest) + 3 >= MIN_CALLS, f"{case.id}: only {len(rest) + 3} tool calls"
    grouped = [rest[i : i + 2] for i in range(0, len(rest), 2)]
    origin = ("read_file", {"path": case.origin.file, "start_line": needle_range[0], "end_line": needle_range[1]})
    return [[("get_error_traces", {})], [("read_file", {"path": case.crash.file}), origin]] + grouped


def _methods_near(host: LocalRepoHost, path: str, line: int, count: int = 4) -> list[str]:
    """The names of the methods defined closest to `line` in `path`: what an investigator searches for callers of."""
    defs = [(abs(n - line), m.group(1)) for n, text in enumerate(host.read_file(path).splitlines(), 1)
            if (m := re.match(r"\s*def\s+(?:self\.)?([A-Za-z_]\w*[?!=]?)", text))]
    return list(dict.fromkeys(name for _, name in sorted(defs)))[:count]
