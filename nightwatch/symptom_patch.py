"""Does a fix only silence the crash line? Safe navigation, `try`, `rescue nil`, a bare nil guard.

Such a patch turns `undefined method 'x' for nil` into the next line's `undefined method 'y' for nil` when the
same receiver is used unguarded elsewhere in the method (`@user&.token` with `@user.username` beside it), or
swallows every error of the code it wraps (`rescue nil`, `except Exception: pass`, `suppress(AttributeError)`).
This module finds those in Ruby and Python by reading the edited method of the new file text. A guard that
protects every later use (an early `return head(:not_found) unless @user`, `if order is None: raise Http404`)
is a fix, not a symptom patch; so is a use inside an `if @user` block, an `else` of `if x is None`, or after
`@user ||= Guest.new`. tests/adversarial/test_symptom_corpus.py holds the corpus it is judged on.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from nightwatch.models import FileChange

NEAR_CRASH_LINES = 3  # a guard this close to the crash line is "at the crash line"
_NAME = r"[@$]{0,2}[A-Za-z_]\w*"
_RECEIVER = rf"{_NAME}(?:(?:\.|&\.){_NAME}[?!]?)*"
_TAIL_RECEIVER = re.compile(rf"({_NAME}(?:(?:\.|&\.){_NAME}(?![\w?!])|\.{_NAME}[?!])*)$")
_NIL_PREDICATE = re.compile(r"\.(?:nil|blank|present|empty)\?$")
_SWALLOWED = r"(?:Exception|BaseException|StandardError|NoMethodError|NameError|TypeError|AttributeError|KeyError|ValueError)"
_RB_RESCUE_MODIFIER = re.compile(r"\S\s+rescue\s+\S")
_RB_RESCUE_CLAUSE = re.compile(rf"^\s*rescue(?:\s+{_SWALLOWED}(?:::\w+)*(?:\s*,\s*{_SWALLOWED})*)?(?:\s*=>\s*\w+)?\s*$")
_PY_EXCEPT = re.compile(rf"^\s*except\s*(?:\(?\s*{_SWALLOWED}(?:\s*,\s*{_SWALLOWED})*\s*\)?)?(?:\s+as\s+\w+)?\s*:\s*(?P<body>.*)$")
_PY_SUPPRESS = re.compile(r"^\s*with\s+(?:contextlib\.)?suppress\(")
_BROKEN_CHAIN = re.compile(r"&\.[A-Za-z_]\w*[?!]?(?:\([^()]*\))?\.(?!\.)[A-Za-z_]\w*")  # `t&.strip.gsub`
_EXIT_RB = r"(?:return|next|break|raise|head|render|redirect_to)\b"
_EARLY_RUBY = re.compile(rf"^\s*{_EXIT_RB}[^#]*?\s(?:if|unless)\s+(?P<cond>.+?)\s*$")
_MODIFIER_RUBY = re.compile(r"^\s*\S.*?\s(?P<word>if|unless)\s+(?P<cond>.+?)\s*$")
_BLOCK_RUBY = re.compile(r"^\s*(?P<word>if|unless|elsif)\s+(?P<cond>.+?)\s*(?:then)?\s*$")
_PY_IF = re.compile(r"^\s*(?:el)?if\s+(?P<cond>.+?)\s*:\s*(?P<body>.*)$")
_PY_EXIT = re.compile(r"^\s*(?:return\b|continue\b|break\b|raise\b|abort\()")


@dataclass(frozen=True)
class Crash:
    """Where the error was raised: the first application frame, repository-relative."""

    file: str
    line: int | None = None


@dataclass(frozen=True)
class _Guard:
    kind: str  # "safe navigation" | "try" | "getattr" | "early return" | "line guard" | "block guard" | "rescue"
    receiver: str
    line: int  # 1-based, in the new file text
    text: str
    until: int = 0  # for a block guard: the last line of the block it opens


def symptom_only_reason(changes: list[FileChange], new_texts: dict[str, str], crash: Crash | None) -> str | None:
    """Why the fix only silences the crash line, or None when it does more than that."""
    for change in changes:
        text = new_texts.get(change.path)
        if change.action != "modify" or text is None or not change.after or not change.path.endswith((".rb", ".py")):
            continue
        python = change.path.endswith(".py")
        lines = text.splitlines()
        start = _line_of(text, change.after, crash.line if crash and crash.file == change.path else None)
        if start is None or not _near_crash(change, start, crash):
            continue
        for guard in _guards(change, start, lines, python):
            reason = _judge(guard, lines, change.path, python)
            if reason:
                return reason
    return None


# where the edit is -----------------------------------------------------------------------------------------


def _line_of(text: str, excerpt: str, near: int | None) -> int | None:
    """The first line of `excerpt` in `text`: its occurrence nearest the crash line when it occurs more than once."""
    starts, index = [], text.find(excerpt)
    while index >= 0:
        starts.append(text.count("\n", 0, index) + 1)
        index = text.find(excerpt, index + 1)
    if not starts:
        return None
    return min(starts, key=lambda line: abs(line - near)) if near else starts[0]


def _near_crash(change: FileChange, start: int, crash: Crash | None) -> bool:
    """The edit is in the crash file and its lines come within a few lines of the crash line (unknown crash: yes)."""
    if crash is None:
        return True
    if crash.file != change.path:
        return False
    if crash.line is None:
        return True
    end = start + max(len((change.after or "").splitlines()), len((change.before or "").splitlines()))
    return start - NEAR_CRASH_LINES <= crash.line <= end + NEAR_CRASH_LINES


def code_of(line: str, python: bool) -> str:
    """A line without its comment: `#` outside string literals (and never Ruby's `#{`)."""
    quote, escaped = "", False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (python or not line.startswith("{", index + 1)):
            return line[:index]
    return line


# what the edit added ---------------------------------------------------------------------------------------


def _guards(change: FileChange, start: int, lines: list[str], python: bool) -> list[_Guard]:
    """Guards the edit added: lines of `after` that are new or changed, read for what they protect."""
    old, new = (change.before or "").splitlines(), (change.after or "").splitlines()
    guards: list[_Guard] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        replaced = "\n".join(code_of(line, python) for line in old[i1:i2])
        for offset in range(j1, j2):
            number = start + offset
            guards += _line_guards(lines, number, replaced, python)
    return guards


def _line_guards(lines: list[str], number: int, replaced: str, python: bool) -> list[_Guard]:
    line = lines[number - 1]
    code = code_of(line, python)
    found = [_Guard(kind, receiver, number, line.strip()) for kind, receiver in _call_guards(code, replaced, python)]
    if _swallows(lines, number, code, replaced, python):
        found.append(_Guard("rescue", "", number, line.strip()))
    chain = None if python else _BROKEN_CHAIN.search(code)
    if chain and chain.group(0) not in replaced:
        found.append(_Guard("chain", chain.group(0), number, line.strip()))
    return found + _condition_guards(lines, number, code, python)


def _call_guards(code: str, replaced: str, python: bool) -> list[tuple[str, str]]:
    """Guards written into a call: `x&.m`, `x.try(:m)`, `x.to_s.m`, `Array(x)`, `getattr(x, "m", None)`."""
    found = []
    if not python:
        for marker, kind in (("&.", "safe navigation"), (".try(", "try"), (".try!(", "try"), (".to_s.", "to_s")):
            for match in re.finditer(re.escape(marker), code):
                tail = _TAIL_RECEIVER.search(code[: match.start()])
                if tail and f"{tail.group(1)}{marker}" not in replaced:
                    found.append((kind, tail.group(1).replace("&.", ".")))
        found += [("Array()", m.group(1)) for m in re.finditer(rf"\bArray\(\s*({_RECEIVER})\s*\)", code)
                  if m.group(0) not in replaced]
    for match in re.finditer(rf"getattr\(\s*({_RECEIVER})\s*,\s*['\"]\w+['\"]\s*,\s*None\s*\)", code):
        if match.group(0) not in replaced:
            found.append(("getattr", match.group(1)))
    return found


def _swallows(lines: list[str], number: int, code: str, replaced: str, python: bool) -> bool:
    """A new rescue/except that answers every error of the code it wraps with a default, never re-raising."""
    if python:
        if _PY_SUPPRESS.match(code) and "suppress(" not in replaced:
            return True
        match = _PY_EXCEPT.match(code)
        if not match or code.strip() in replaced:
            return False
        body = match["body"].strip() or (lines[number].strip() if number < len(lines) else "")
        return not body.startswith("raise") and "raise " not in body
    if _RB_RESCUE_MODIFIER.search(code) and not _RB_RESCUE_MODIFIER.search(replaced):
        return True
    if _RB_RESCUE_CLAUSE.match(code) and code.strip() not in replaced:
        following = code_of(lines[number], False).strip() if number < len(lines) else ""
        return not following.startswith("raise")
    return False


def _condition_guards(lines: list[str], number: int, code: str, python: bool) -> list[_Guard]:
    text = code.strip()
    if python:
        return _python_conditions(lines, number, code)
    early = _EARLY_RUBY.match(code)
    if early:
        return [_Guard("early return", r, number, text) for r in _nil_tested(early["cond"], python)]
    block = _BLOCK_RUBY.match(code)
    if block:
        tested = _nil_tested(block["cond"], python)
        if _tests_presence(block["word"], block["cond"]):
            end = _block_end(lines, number, python)
            return [_Guard("block guard", r, number, text, until=end) for r in tested]
        return [_Guard("early return", r, number, text) for r in tested] if _body_exits(lines, number, python) else []
    found = [_Guard("line guard", m.group(1), number, text)
             for m in re.finditer(rf"({_RECEIVER})\s*(?:&&|\band\b|\?)\s*\1\.", code)]
    modifier = _MODIFIER_RUBY.match(code)
    if modifier and not found:
        found = [_Guard("line guard", r, number, text) for r in _nil_tested(modifier["cond"], python)]
    return found


def _python_conditions(lines: list[str], number: int, code: str) -> list[_Guard]:
    text = code.strip()
    found = [_Guard("line guard", m.group(1), number, text)
             for m in re.finditer(rf"({_RECEIVER})\s+and\s+\1\.|({_RECEIVER})\.\w+.*\bif\s+\2\b", code) if m.group(1)]
    found += [_Guard("line guard", m.group(1), number, text)
              for m in re.finditer(rf"({_RECEIVER})\.\w+[^#]*\bif\s+(?:\1)\s+(?:is\s+not\s+None\s+)?else\b", code)]
    match = _PY_IF.match(code)
    if match:
        tested = _nil_tested(match["cond"], True)
        exits = _PY_EXIT.match(match["body"]) or (not match["body"] and _body_exits(lines, number, True))
        if exits and not _tests_presence("if", match["cond"]):
            found += [_Guard("early return", r, number, text) for r in tested]
        elif _tests_presence("if", match["cond"]) and not match["body"]:
            found += [_Guard("block guard", r, number, text, until=_block_end(lines, number, True)) for r in tested]
    return found


def _nil_tested(condition: str, python: bool) -> list[str]:
    """The receivers a condition tests for nil/None/blank: `x.nil?`, `!x`, `x.present?`, `x is None`, `not x`, bare `x`."""
    cond = condition.strip().removesuffix(":").strip()
    cond = re.sub(r"^\((.*)\)$", r"\1", cond)
    if python:
        cond = re.sub(r"^\(?\s*\w+\s*:=\s*(.+?)\)?$", r"\1", cond)  # walrus: `(user := get_user())` tests `user`
        match = re.match(rf"^(?:not\s+)?({_RECEIVER})(?:\s+is\s+(?:not\s+)?None)?$", cond)
        return [match.group(1)] if match else []
    match = re.match(rf"^!?\s*({_RECEIVER})$", cond)
    if not match:
        return []
    return [_NIL_PREDICATE.sub("", match.group(1))]


def _tests_presence(word: str, condition: str) -> bool:
    """The branch runs only when the value is there: `if x`, `if x.present?`, `unless x.nil?`, `if x is not None`."""
    cond = condition.strip()
    negated = cond.startswith(("!", "not ")) or re.search(r"\.(?:nil|blank|empty)\?$|\bis\s+None$", cond) is not None
    return negated if word == "unless" else not negated


def _body_exits(lines: list[str], number: int, python: bool) -> bool:
    """The block opened at `number` ends in return/raise/next (its first statement, at least)."""
    following = next((code_of(t, python) for t in lines[number:] if t.strip()), "")
    return bool(re.match(r"^\s*(?:return|raise|next|break|continue|head|render|redirect_to|abort\()", following))


def _block_end(lines: list[str], number: int, python: bool) -> int:
    indent = _indent(lines[number - 1])
    for n in range(number + 1, len(lines) + 1):
        text = lines[n - 1]
        if not text.strip():
            continue
        if _indent(text) <= indent:
            return n - 1 if python or not re.match(r"^\s*(?:end|else|elsif)\b", text) else n
    return len(lines)


# judging a guard -------------------------------------------------------------------------------------------


def _judge(guard: _Guard, lines: list[str], path: str, python: bool) -> str | None:
    if guard.kind == "chain":
        return (f"symptom-only patch: `{guard.receiver}` (line {guard.line} of {path}) goes on with a plain `.` after "
                "`&.`, so the rest of the chain still fails on nil")
    if guard.kind == "rescue":
        return (f"symptom-only patch: `{guard.text}` (line {guard.line} of {path}) swallows every error of that code "
                "instead of fixing the one that was raised")
    first, last = method_range(lines, guard.line, python)
    for number in range(first, last + 1):
        text = code_of(lines[number - 1], python)
        if _uses_unguarded(text, guard.receiver) and not _protected(guard, number, text, lines, first, python):
            where = "on the same line" if number == guard.line else f"on line {number}"
            return (f"symptom-only patch: {guard.kind} guards `{guard.receiver}` at line {guard.line} of {path}, but "
                    f"`{_use_excerpt(text, guard.receiver)}` {where} still fails when it is nil; fix where "
                    f"`{guard.receiver}` gets its value, or handle the nil case for the whole method")
    return None


def method_range(lines: list[str], line: int, python: bool) -> tuple[int, int]:
    """1-based first and last line of the innermost method around `line` (the whole file when there is none)."""
    depth = _indent(lines[line - 1]) if lines[line - 1].strip() else 10**6
    for head in range(line, 0, -1):
        text = lines[head - 1]
        if not re.match(r"^\s*(?:async\s+)?def\s", text) or (head < line and _indent(text) >= depth):
            continue
        if not python and re.match(r"^\s*def\s+[\w.]+[?!]?(?:\s+|\([^)]*\)\s*)=(?![=~])", text):
            if head == line:
                return head, head  # an endless `def name = expression`
            continue
        last = _method_end(lines, head, python)
        if last >= line:
            return head, last
    return 1, len(lines)


def _method_end(lines: list[str], head: int, python: bool) -> int:
    indent = _indent(lines[head - 1])
    body = head
    if python:  # a signature over several lines ends where its brackets close
        balance = 0
        for body in range(head, len(lines) + 1):
            balance += sum(lines[body - 1].count(c) for c in "([{") - sum(lines[body - 1].count(c) for c in ")]}")
            if balance <= 0:
                break
    for n in range(body + 1, len(lines) + 1):
        text = lines[n - 1]
        if not text.strip():
            continue
        if python and _indent(text) <= indent:
            return n - 1
        if not python and _indent(text) == indent and re.match(r"^\s*end\b", text):
            return n
    return len(lines)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _uses_unguarded(code: str, receiver: str) -> bool:
    pattern = rf"(?<![\w@$.&]){re.escape(receiver)}\.(?!(?:nil|blank|present|respond_to|is_a|kind_of)\?|try\b|to_s\b)[A-Za-z_]"
    return re.search(pattern, code) is not None


def _protected(guard: _Guard, number: int, text: str, lines: list[str], first: int, python: bool) -> bool:
    """A use protected by the guard itself, or by code already there: an early exit above, an enclosing presence
    check (`if x`, `unless x.nil?`, `else` of `if x is None`), the same line's own check, or `x ||= default`."""
    if guard.kind == "early return" and number > guard.line:
        return True
    if guard.kind == "block guard" and guard.line < number <= guard.until:
        return True
    if guard.kind == "line guard" and number == guard.line:
        return True
    receiver = re.escape(guard.receiver)
    if re.search(rf"(?:\bif|\bunless|&&|\band)\s+!?{receiver}\b|{receiver}\s*(?:&&|\band\b|\?\s)|{receiver}\s+is\s+not\s+None", text):
        return True
    return _protected_above(receiver, number, text, lines, first, python)


def _protected_above(receiver: str, number: int, text: str, lines: list[str], first: int, python: bool) -> bool:
    depth = _indent(text)
    for n in range(number - 1, first - 1, -1):
        above = code_of(lines[n - 1], python)
        if not above.strip():
            continue
        indent = _indent(above)
        stripped = above.strip()
        if re.match(rf"^{receiver}\s*\|\|=", stripped):
            return True  # given a default before this use (`@user ||= Guest.new`)
        if indent < depth:
            if _opens_presence_block(stripped, receiver, python) or (stripped == "else:" and _else_of_none_check(lines, n, indent)):
                return True
            depth = indent
        if _early_exit_on(stripped, receiver, lines, n, python):
            return True
    return False


def _opens_presence_block(stripped: str, receiver: str, python: bool) -> bool:
    match = (_PY_IF if python else _BLOCK_RUBY).match(stripped)
    if not match or (python and match["body"]):
        return False
    word = "if" if python else match["word"].replace("elsif", "if")
    return receiver.replace("\\", "") in _nil_tested(match["cond"], python) and _tests_presence(word, match["cond"])


def _else_of_none_check(lines: list[str], number: int, indent: int) -> bool:
    for n in range(number - 1, 0, -1):
        text = lines[n - 1]
        if text.strip() and _indent(text) == indent:
            match = _PY_IF.match(text)
            return match is not None and re.search(r"\bis\s+None\s*$|^not\s", match["cond"].strip()) is not None
    return False


def _early_exit_on(stripped: str, receiver: str, lines: list[str], number: int, python: bool) -> bool:
    plain = receiver.replace("\\", "")
    if python:
        match = _PY_IF.match(stripped)
        if not match or plain not in _nil_tested(match["cond"], True) or _tests_presence("if", match["cond"]):
            return False
        return bool(_PY_EXIT.match(match["body"])) or (not match["body"] and _body_exits(lines, number, True))
    early = _EARLY_RUBY.match(stripped)
    if early and plain in _nil_tested(early["cond"], False):
        word = re.search(r"\s(if|unless)\s+" + re.escape(early["cond"]) + "$", stripped)
        return word is not None and not _tests_presence(word.group(1), early["cond"])
    block = _BLOCK_RUBY.match(stripped)
    return block is not None and plain in _nil_tested(block["cond"], False) \
        and not _tests_presence(block["word"], block["cond"]) and _body_exits(lines, number, False)


def _use_excerpt(text: str, receiver: str) -> str:
    match = re.search(rf"{re.escape(receiver)}\.[A-Za-z_]\w*[?!]?", text)
    return match.group(0) if match else text.strip()[:80]
