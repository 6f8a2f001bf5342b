"""How the offline model follows a Python error from the line that raised to where the bad value was decided.

- `'NoneType' object has no attribute 'x'` on a function's parameter: up the stack to the first caller that did not
  just pass the parameter on; that call is where the None comes from.
- An error that quotes the bad value (`Invalid isoformat string: 'last-month'`): the line of the stack's functions
  where that value is written as a literal (a parameter's default, an assignment).
- A KeyError on a module-level table (`RATES[currency]`): the table's definition, which decides its keys.
- An assertion on a parameter (`assert quantity > 0`) whose argument is a model's attribute (`line.quantity`): the
  field declaration whose bound (`Field(ge=0)`) admits what the assertion rejects.
- A str met a number in arithmetic on `row[...]` of a loop over a function's rows: that function, where a csv reader
  yields strings (the offline model finds and reads it: `row_producer`, `producer_origin`).
- Django's NoReverseMatch (`Reverse for 'name' with arguments ... not found`): reverse() was given arguments that the
  named URL pattern's converters do not accept; the pattern's route string, declared in the URL configuration,
  decides which it accepts (the offline model finds and reads it: `reversed_route`, `route_origin`).
- A unique constraint violated on insert (`UNIQUE constraint failed: users.email`, PostgreSQL's `Key (email)=...`,
  MySQL's `for key 'users.email'`): the validation of that column let the duplicate through. Validators are named
  for their field (`validate_email` in marshmallow, DRF and WTForms, `clean_email` in Django forms); the origin is
  its uniqueness query (`filter_by(email=...)`), else its `def` (`unique_column`, `validator_origin`).
Each rule reads only the frames' lines already in view; none knows any application.
"""

from __future__ import annotations

import re
from collections.abc import Collection
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
    return (_none_passed_in(message, frames) or _quoted_literal(error_class, message, frames)
            or _missing_table_key(error_class, message, frames[0]) or _field_admits(frames))


def _none_passed_in(message: str, frames: list[PyFrame]) -> Found | None:
    attribute = _NONE_ATTRIBUTE.search(message)
    if not attribute:
        return None
    receiver = re.search(rf"\b([A-Za-z_]\w*)\.{attribute[1]}\b", frames[0].source.get(frames[0].line, ""))
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


# Errors whose messages quote the language's own names (a type, an attribute, a variable, a module, a parameter:
# `'NoneType' object has no attribute 'place'`, `name 'x' is not defined`), never the program's data.
_QUOTES_NAMES = re.compile(r"(?:^|[.:])(?:AttributeError|TypeError|NameError|UnboundLocalError|ImportError|ModuleNotFoundError)$")


def _quoted_literal(error_class: str, message: str, frames: list[PyFrame]) -> Found | None:
    """A value the error quotes, written as a literal in the stack's functions. Not for errors that quote names: a
    string literal equal to an attribute's name (`data["place"]`) is not where a value came from."""
    if _QUOTES_NAMES.search(error_class):
        return None
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


_ASSERT = re.compile(r"^\s*assert\s+(\w+)\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)\b")
_FIELD_BOUND = re.compile(r"\b(ge|gt|le|lt)\s*=\s*(-?\d+(?:\.\d+)?)")


def _field_admits(frames: list[PyFrame]) -> Found | None:
    """`assert quantity > 0` on a parameter whose argument is a model's attribute (`line.quantity`): the field's
    declaration decides what values arrive, and a bound it declares (`Field(ge=0)`) that admits what the assertion
    rejects is where the value's shape is wrong."""
    crash = frames[0]
    check = _ASSERT.match(crash.source.get(crash.line, ""))
    if not check or len(frames) < 2:
        return None
    name, op, bound = check[1], check[2], float(check[3])
    function, params = _enclosing_def(crash)
    argument = _argument(frames[1].source.get(frames[1].line, ""), function, params, name) if name in params else None
    attribute = re.fullmatch(r"[\w.]*\.(\w+)", argument or "") or re.search(rf"\.({re.escape(name)})\b",
                                                                             frames[1].source.get(frames[1].line, ""))
    if not attribute:
        return None
    declaration = re.compile(rf"^\s+{re.escape(attribute[1])}\s*:[^=]*=\s*(?:\w+\.)?Field\((?P<args>.*)\)")
    for frame in frames:
        for number, text in sorted(frame.source.items()):
            field_decl = declaration.match(text)
            if field_decl and any(_admits(kind, float(value), op, bound) for kind, value in _FIELD_BOUND.findall(field_decl["args"])):
                return Found(frame.path, number, f"`{attribute[1]}` is declared with `{field_decl['args'].strip()}`, which "
                                                 f"admits values `assert {name} {op} {check[3]}` rejects")
    return None


def _admits(kind: str, value: float, op: str, bound: float) -> bool:
    """Whether a field bound (`ge=0`) lets through a value the assertion (`> 0`) rejects."""
    if op in (">", ">="):
        lowest_allowed = value if kind in ("ge", "gt") else None
        if lowest_allowed is None:
            return False
        return lowest_allowed < bound or (lowest_allowed == bound and op == ">" and kind == "ge")
    highest_allowed = value if kind in ("le", "lt") else None
    if highest_allowed is None:
        return False
    return highest_allowed > bound or (highest_allowed == bound and op == "<" and kind == "le")


_STR_MIXED = re.compile(r"unsupported operand type\(s\) for [^:]+: '(?:int|float|str)' and '(?:int|float|str)'|"
                        r"can only concatenate str|not supported between instances of '(?:str|int|float)' and")
_READER = re.compile(r"\bcsv\.(?:DictReader|reader)\(")


def row_producer(message: str, crash: PyFrame) -> str | None:
    """The function whose rows the crash line does arithmetic on, when a str met a number there: the call a
    `for row in ...` loop of the crashing function iterates, for a `row[...]` the crash line reads."""
    if not _STR_MIXED.search(message) or "str" not in message:
        return None
    start = _def_line(crash) or 1
    for variable in re.findall(r"\b(\w+)\[[\"'][^\"']+[\"']\]", crash.source.get(crash.line, "")):
        for number in range(crash.line, start - 1, -1):
            loop = re.match(rf"\s*for\s+{variable}\s+in\s+(?:[\w.]+\.)?(\w+)\(", crash.source.get(number, ""))
            if loop:
                return loop[1]
    return None


def producer_origin(function: str, path: str, source: dict[int, str]) -> Found | None:
    """In the producing function's body, a csv reader: it yields every field as a str, and the function hands its rows
    on unconverted, so the numbers downstream are strings."""
    start = def_line_of(source, {function})
    if start is None:
        return None
    for number in range(start + 1, max(source) + 1):
        text = source.get(number, "")
        if _DEF.match(text) or (text.strip() and not text.startswith((" ", "\t"))):
            break
        if _READER.search(text):
            return Found(path, number, f"csv readers yield every field as a str, and `{function}` passes its rows on "
                                       "unconverted: the numbers downstream are strings")
    return None


_REVERSE = re.compile(r"Reverse for '([^'\n]{1,100})'")
_ROUTE_CALL = re.compile(r"\b(?:re_path|path|url)\(")
_STRING = re.compile(r"""(?:^|[\s(,])r?(["'])[^"'\n]*\1""")


def reversed_route(error_class: str, message: str) -> str | None:
    """The URL pattern name a NoReverseMatch could not build (`Reverse for 'hc-login' ...`), else None."""
    if not error_class.endswith("NoReverseMatch"):
        return None
    found = _REVERSE.search(message)
    return found[1] if found else None


def route_origin(name: str, path: str, source: dict[int, str]) -> Found | None:
    """In a URL configuration, the route string of the pattern declared `name="<name>"`: its converters decide which
    arguments reverse() accepts (the declaration may span lines: back from `name=` to its `path(`)."""
    named = re.compile(rf"""\bname\s*=\s*(["']){re.escape(name)}\1""")
    declared = next((n for n, t in sorted(source.items()) if named.search(t)), None)
    if declared is None:
        return None
    start = next((n for n in range(declared, max(declared - 12, 0), -1) if _ROUTE_CALL.search(source.get(n, ""))), declared)
    for number in range(start, declared + 1):
        text = named.sub("", source.get(number, ""))
        call = _ROUTE_CALL.search(text)
        if _STRING.search(text[call.end():] if call else text):
            return Found(path, number, f"the URL pattern `{name}` is declared here: its route's converters decide which "
                                       "arguments reverse() accepts, and the ones the error shows match none")
    return None


_UNIQUE = (re.compile(r"UNIQUE constraint failed: \w+\.(\w+)"),  # SQLite
           re.compile(r"Key \((\w+)\)=\("),  # PostgreSQL's DETAIL line
           re.compile(r"Duplicate entry '[^'\n]{0,300}' for key '(?:\w+\.)?(\w+)'"))  # MySQL (the key is named for its column)


def unique_column(error_class: str, message: str) -> str | None:
    """The column whose unique constraint an IntegrityError reports, else None."""
    if not error_class.endswith("IntegrityError"):
        return None
    found = next((m for m in (p.search(message) for p in _UNIQUE) if m), None)
    return found[1] if found else None


def validator_names(column: str) -> list[str]:
    return [f"validate_{column}", f"clean_{column}"]


def validator_origin(column: str, path: str, source: dict[int, str]) -> Found | None:
    """In a file that validates `column`: the uniqueness query in its validator, else the validator's `def`."""
    start = def_line_of(source, set(validator_names(column)))
    if start is None:
        return None
    indent = len(source[start]) - len(source[start].lstrip())
    lookup = re.compile(r"\b(?:filter_by|filter|get|exists|where)\(")
    name = re.escape(column)  # a keyword argument (`email=`, `email__iexact=`) or a comparison (`User.email ==`)
    by_column = re.compile(rf"[(,]\s*{name}(?:__iexact)?\s*=(?!=)|\.{name}\s*==")  # two linear searches, not `\(.*\b`
    for number in range(start + 1, max(source) + 1):
        text = source.get(number, "")
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break  # the validator ended
        if lookup.search(text) and by_column.search(text):
            return Found(path, number, f"the unique `{column}` was checked here and a duplicate got through: "
                                       "this validation decides which values reach the insert")
    return Found(path, start, f"`{column}` is validated here, and a duplicate got through to the insert")


def defines(text: str, names: Collection[str]) -> bool:
    """Whether a line is the `def` of one of the functions `names`."""
    found = _DEF.match(text)
    return found is not None and found[1] in names


def def_line_of(source: dict[int, str], names: Collection[str]) -> int | None:
    """The first line of `source` that defines one of `names`."""
    return next((n for n, t in sorted(source.items()) if defines(t, names)), None)


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
    header = _DEF.match(frame.source[start])
    assert header is not None  # _def_line chose `start` because this matched
    return header[1], [m[1] for m in names if m and m[1] not in ("self", "cls")]


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
