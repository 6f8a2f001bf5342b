"""A stack as the model reads it: every application frame, and each run of framework frames as its first frame and a
count by library (the frames between are the framework's plumbing; the first is what the application called, or
where the error was raised)."""

from __future__ import annotations

import re
from collections import Counter

from nightwatch.models import Breadcrumb, StackFrame
from nightwatch.redact import LINE_ENDS

_BREAKS = re.compile(f"[\n{LINE_ENDS}]+")
FIRST_MESSAGE_APP_FRAMES = 12  # the application frames an investigation's first message shows (get_error_traces: all)


def one_line(value: object) -> str:
    """Production text on one line: a frame's name or a sample's value cannot start a line of its own."""
    return _BREAKS.sub(" ", str(value))


def breadcrumb_line(b: Breadcrumb) -> str:
    """One breadcrumb on one line: when, its category and level, what it says."""
    when = f"{b.at:%H:%M:%S} " if b.at else ""
    line = one_line(f"{when}[{b.category or 'log'}{'/' + b.level if b.level else ''}] {b.message} {b.data}".rstrip())
    return line if len(line) <= 400 else line[:399] + "…"


def cut_at(frames: list[StackFrame], max_app: int) -> bool:
    """Whether stack_lines with `max_app` leaves application frames out (short of that, it shows the stack whole)."""
    return sum(f.in_app for f in frames) > max_app


def stack_lines(frames: list[StackFrame], max_app: int = 60) -> list[str]:
    """Every application frame (up to `max_app`, and the framework frames around them); of each run of framework
    frames, its first and a count by library."""
    out: list[str] = []
    run: list[StackFrame] = []
    shown_app = 0

    def flush() -> None:
        if run and shown_app <= max_app:
            out.append(f"        {one_line(run[0].render())}")
            if len(run) > 1:
                counts = Counter(_library_of(f.file) for f in run[1:])
                out.append(f"        … {len(run) - 1} more framework frames ("
                           + ", ".join(f"{name} {n}" for name, n in counts.most_common(6)) + ")")
        run.clear()

    for frame in frames:
        if not frame.in_app:
            run.append(frame)
            continue
        flush()
        shown_app += 1
        if shown_app <= max_app:
            out.append(f"  [app] {one_line(frame.render())}")
    flush()
    if shown_app > max_app:
        out.append(f"  … {shown_app - max_app} more application frames")
    return out


# Where a framework frame's library is named, most specific first: a Python package's path also holds
# `lib/python3.12/`, so the standard library's pattern comes last.
_LIBRARY = (re.compile(r"gems/([A-Za-z][\w.-]*?)-\d[\w.]*/"), re.compile(r"(?:site|dist)-packages/(\w+)"),
            re.compile(r"node_modules/((?:@[\w.-]+/)?[\w.-]+)"), re.compile(r"lib/(ruby|python\d[\d.]*)/"))


def _library_of(path: str) -> str:
    return next((match[1] for pattern in _LIBRARY if (match := pattern.search(path))), "other")
