"""How the offline model follows a Python error from the line that raised to where the bad value was decided.

- `'NoneType' object has no attribute 'x'` on a function's parameter: up the stack to the first caller that did not
  just pass the parameter on; that call is where the None comes from.
- An error that quotes the bad value (`Invalid isoformat string: 'last-month'`): the line of the stack's functions
  where that value is written as a literal (a parameter's default, an assignment).
- A KeyError on a module-level table (`RATES[currency]`): the table's definition, which decides its keys.
Each rule reads only the frames' lines already in view; none knows any application.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NONE_ATTRIBUTE = re.compile(r"'NoneType' object has no attribute '(\w+)'")
_QUOTED = re.compile(r"'([^'\n]{1,80})'")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


@dataclass(frozen=True)
class PyFrame:
    """An application frame with the lines of its file in view."""

    path: str
    line: int
    source: dict[int, str]


@dataclass(frozen=True)
class Found:
    file: str
    line: int
    note: str


def python_origin(error_class: str, message: str, frames: list[PyFrame]) -> Found | None:
    """Where a Python error's bad value was decided, when these rules can tell; `frames` are the in-app frames, top
    (where it raised) first."""
    if not frames or not frames[0].path.endswith(".py"):
        return None
    return _none_passed_in(message, frames) or _quoted_literal(message, frames) or _missing_table_key(error_class, message, frames[0])


def _none_passed_in(message: str, frames: list[PyFrame]) -> Found | None:
    attribute = _NONE_ATTRIBUTE.search(message)
    receiver = re.search(rf"\b([A-Za-z_]\w*)\.{attribute[1]}\b", frames[0].source.get(frames[0].line, "")) if attribute else None
    if not receiver:
        return None
    name = receiver[1]
    for callee, caller in zip(frames, frames[1:]):
        function, params = _enclosing_def(callee)
        if name not in params:
            return None  # a local value: the rules for assignments apply, not these
        argument = _argument(caller.source.get(caller.line, ""), function, params, name)
        if argument is None:
            return None
        if argument in _enclosing_def(caller)[1]:
            name = argument  # passed straight on: keep following it up
            continue
        return Found(caller.path, caller.line, f"`{argument}` can be None here and is passed to `{function}` as `{name}`, "
                                               f"which calls `.{attribute[1]}` on it")
    return None


def _quoted_literal(message: str, frames: list[PyFrame]) -> Found | None:
    for value in _QUOTED.findall(message):
        literal = re.compile(rf"""(["']){re.escape(value)}\1""")
        for frame in frames:
            start = _def_line(frame) or frame.line
            for number in range(start, frame.line + 1):
                text = frame.source.get(number, "")
                if literal.search(text) and (frame, number) != (frames[0], frames[0].line):
                    return Found(frame.path, number, f"the value {value!r} the error quotes is written here")
    return None


def _missing_table_key(error_class: str, message: str, crash: PyFrame) -> Found | None:
    if not error_class.endswith("KeyError"):
        return None
    for table in re.findall(r"\b([A-Z][A-Z0-9_]+)\[", crash.source.get(crash.line, "")):
        defined = next((n for n, t in sorted(crash.source.items()) if re.match(rf"^{table}\s*(?::[^=]+)?=", t)), None)
        if defined:
            return Found(crash.path, defined, f"`{table}` has no key {message.strip()[:60]}; its keys are decided here")
    return None


def _def_line(frame: PyFrame) -> int | None:
    return next((n for n in range(frame.line, 0, -1) if _DEF.match(frame.source.get(n, ""))), None)


def _enclosing_def(frame: PyFrame) -> tuple[str, list[str]]:
    """The function a frame's line is in, and its parameter names (its signature may span lines)."""
    start = _def_line(frame)
    if start is None:
        return "", []
    signature, number = "", start
    while number <= frame.line and not re.search(r"\)\s*(?:->[^:]+)?:\s*(?:#.*)?$", signature):
        signature += frame.source.get(number, "") + " "
        number += 1
    inside = signature[signature.index("(") + 1: signature.rfind(")")]
    names = [re.match(r"\s*\**(\w+)", part) for part in _split_top_level(inside)]
    return _DEF.match(frame.source[start])[1], [m[1] for m in names if m and m[1] not in ("self", "cls")]


def _argument(line: str, function: str, params: list[str], name: str) -> str | None:
    """The expression a call to `function` on this line passes as parameter `name` (by keyword or position)."""
    call = re.search(rf"\b{re.escape(function)}\(", line)
    if not call:
        return None
    depth, end = 1, call.end()
    while end < len(line) and depth:
        depth += {"(": 1, ")": -1}.get(line[end], 0)
        end += 1
    arguments = [a.strip() for a in _split_top_level(line[call.end(): end - 1])]
    keyword = next((a.split("=", 1)[1].strip() for a in arguments if re.match(rf"{name}\s*=(?!=)", a)), None)
    positional = [a for a in arguments if not re.match(r"\w+\s*=(?!=)", a)]
    index = params.index(name)
    return keyword or (positional[index] if index < len(positional) else None)


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in [*parts, current] if p.strip()]
