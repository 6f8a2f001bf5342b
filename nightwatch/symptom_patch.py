"""Does a fix only silence the crash line? Safe navigation, `try`, `rescue nil`, a bare nil guard.

Such a patch turns `undefined method 'x' for nil` into the next line's `undefined method 'y' for nil` when the
same receiver is used unguarded elsewhere in the method (`@user&.token` with `@user.username` beside it), or
swallows every error of the line (`rescue nil`, `except Exception: pass`). This module finds those, in Ruby and
Python, by reading the edited method of the new file text; a guard that protects every later use (an early
`return unless @user` at the top of the method) is a fix, not a symptom patch.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from nightwatch.models import FileChange

NEAR_CRASH_LINES = 3  # a guard this close to the crash line is "at the crash line"
_NAME = r"[@$]{0,2}[A-Za-z_]\w*"
_RECEIVER = rf"{_NAME}(?:(?:\.|&\.){_NAME}[?!]?)*"
_SAFE_NAV = re.compile(rf"({_RECEIVER})&\.[A-Za-z_]")
_TRY = re.compile(rf"({_RECEIVER})\.try!?\(")
_GETATTR = re.compile(rf"getattr\(\s*({_RECEIVER})\s*,\s*['\"]\w+['\"]\s*,")
_RESCUE_NIL = re.compile(r"\srescue\s+(?:nil|false|\{\}|\[\]|0|\"\"|'')\s*$")
_EARLY_RUBY = re.compile(r"^\s*(?:return|next|break)\b[^#]*?\b(?:if|unless)\s+(?P<cond>.+?)\s*$")
_MODIFIER_RUBY = re.compile(r"\S.*\s(?:if|unless)\s+(?P<cond>[^#]+?)\s*$")
_PY_IF = re.compile(r"^\s*if\s+(?P<cond>.+):\s*(?P<body>.*)$")
_PY_EXIT = re.compile(r"^\s*(?:return\b|continue\b|pass\b|break\b)")
_PY_SWALLOW = re.compile(r"^\s*except\s*(?:(?:Exception|BaseException|AttributeError|TypeError|KeyError)\b[^:]*)?:\s*(?:pass)?\s*$")


@dataclass(frozen=True)
class Crash:
    """Where the error was raised: the first application frame, repository-relative."""

    file: str
    line: int | None = None


@dataclass(frozen=True)
class _Guard:
    kind: str  # "safe navigation" | "try" | "getattr" | "early return" | "line guard" | "rescue"
    receiver: str
    line: int  # 1-based, in the new file text
    text: str


def symptom_only_reason(changes: list[FileChange], new_texts: dict[str, str], crash: Crash | None) -> str | None:
    """Why the fix only silences the crash line, or None when it does more than that."""
    for change in changes:
        text = new_texts.get(change.path)
        if change.action != "modify" or text is None or not change.after or not change.path.endswith((".rb", ".py")):
            continue
        start = _line_of(text, change.after)
        if start is None or not _near_crash(change, start, crash):
            continue
        for guard in _guards(change, start, python=change.path.endswith(".py")):
            reason = _judge(guard, text.splitlines(), change.path)
            if reason:
                return reason
    return None


def _line_of(text: str, excerpt: str) -> int | None:
    index = text.find(excerpt)
    return None if index < 0 else text.count("\n", 0, index) + 1


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


def _guards(change: FileChange, start: int, python: bool) -> list[_Guard]:
    """Guards the edit added: lines of `after` that are new or changed, read for what they protect."""
    old, new = (change.before or "").splitlines(), (change.after or "").splitlines()
    guards: list[_Guard] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        before_text = "\n".join(old)
        for offset in range(j1, j2):
            line, number = new[offset], start + offset
            following = new[offset + 1] if offset + 1 < len(new) else ""
            guards += _line_guards(line, number, before_text, following, python)
    return guards


def _line_guards(line: str, number: int, before: str, following: str, python: bool) -> list[_Guard]:
    code = line.split("#", 1)[0] if not python else line.split("  #", 1)[0]
    found = []
    for pattern, kind in ((_SAFE_NAV, "safe navigation"), (_TRY, "try"), (_GETATTR, "getattr")):
        for match in pattern.finditer(code):
            if match.group(0) not in before:
                found.append(_Guard(kind, _last_receiver(match.group(1)), number, line.strip()))
    if not python and _RESCUE_NIL.search(code) and " rescue " not in f" {before} ":
        found.append(_Guard("rescue", "", number, line.strip()))
    if python and _PY_SWALLOW.match(code):
        found.append(_Guard("rescue", "", number, line.strip()))
    found += _condition_guards(code, number, following, python)
    return found


def _condition_guards(code: str, number: int, following: str, python: bool) -> list[_Guard]:
    if python:
        match = _PY_IF.match(code)
        exits = match and (_PY_EXIT.match(match["body"]) or (not match["body"] and _PY_EXIT.match(following)))
        return [_Guard("early return", r, number, code.strip()) for r in _nil_tested(match["cond"], True)] if exits else []
    early = _EARLY_RUBY.match(code)
    if early:
        return [_Guard("early return", r, number, code.strip()) for r in _nil_tested(early["cond"], False)]
    modifier = _MODIFIER_RUBY.match(code)
    if modifier:
        return [_Guard("line guard", r, number, code.strip()) for r in _nil_tested(modifier["cond"], False)]
    return [_Guard("line guard", m.group(1), number, code.strip())
            for m in re.finditer(rf"({_RECEIVER})\s*(?:&&|\band\b)\s*\1\.", code)]


def _nil_tested(condition: str, python: bool) -> list[str]:
    """The receivers a condition tests for nil/None/blank: `x.nil?`, `!x`, `x.blank?`, `x is None`, `not x`, bare `x`."""
    cond = condition.strip()
    patterns = ([rf"^not\s+({_RECEIVER})$", rf"^({_RECEIVER})\s+is\s+(?:not\s+)?None$", rf"^({_RECEIVER})$"] if python else
                [rf"^!?\s*({_RECEIVER})(?:\.(?:nil|blank|present)\?)?$"])
    for pattern in patterns:
        match = re.match(pattern, cond)
        if match:
            return [match.group(1)]
    return []


def _last_receiver(receiver: str) -> str:
    """`@order.user&.profile` guards `@order.user&.profile`'s receiver as written, with `&.` read as `.`."""
    return receiver.replace("&.", ".")


def _judge(guard: _Guard, lines: list[str], path: str) -> str | None:
    if guard.kind == "rescue":
        return (f"symptom-only patch: `{guard.text}` (line {guard.line} of {path}) swallows every error of that code "
                "instead of fixing the one that was raised")
    python = path.endswith(".py")
    first, last = _method_range(lines, guard.line, python)
    for number in range(first, last + 1):
        text = lines[number - 1]
        if _uses_unguarded(text, guard.receiver) and not _protected(guard, number, text, lines, first, python):
            where = "on the same line" if number == guard.line else f"on line {number}"
            return (f"symptom-only patch: {guard.kind} guards `{guard.receiver}` at line {guard.line} of {path}, but "
                    f"`{_use_excerpt(text, guard.receiver)}` {where} still fails when it is nil; fix where "
                    f"`{guard.receiver}` gets its value, or handle the nil case for the whole method")
    return None


def _method_range(lines: list[str], line: int, python: bool) -> tuple[int, int]:
    """1-based first and last line of the method around `line` (the whole file when there is none)."""
    head = next((n for n in range(line, 0, -1) if re.match(r"^\s*(?:async\s+)?def\s", lines[n - 1])), None)
    if head is None:
        return 1, len(lines)
    indent = len(lines[head - 1]) - len(lines[head - 1].lstrip())
    for n in range(head + 1, len(lines) + 1):
        text = lines[n - 1]
        if not text.strip():
            continue
        depth = len(text) - len(text.lstrip())
        if python and depth <= indent:
            return head, n - 1
        if not python and depth == indent and re.match(r"^\s*end\b", text):
            return head, n
    return head, len(lines)


def _uses_unguarded(text: str, receiver: str) -> bool:
    code = text.split("#", 1)[0]
    pattern = rf"(?<![\w@$.&]){re.escape(receiver)}\.(?!(?:nil|blank|present|respond_to|is_a|kind_of)\?|try\b)[A-Za-z_]"
    return re.search(pattern, code) is not None


def _protected(guard: _Guard, number: int, text: str, lines: list[str], first: int, python: bool) -> bool:
    """A use is protected by the guard (an early return above it, the guard's own line) or by code already there."""
    if guard.kind == "early return" and number > guard.line:
        return True
    if guard.kind == "line guard" and number == guard.line:
        return True
    receiver = re.escape(guard.receiver)
    if re.search(rf"(?:\bif|\bunless|&&|\band)\s+!?{receiver}\b|{receiver}\s*(?:&&|\band\b)|{receiver}\s+is\s+not\s+None", text):
        return True
    depth = len(text) - len(text.lstrip())
    for n in range(number - 1, first - 1, -1):
        above = lines[n - 1]
        if not above.strip():
            continue
        indent = len(above) - len(above.lstrip())
        if indent < depth and re.match(rf"^\s*(?:if|elsif|elif|while|when)\s+(?!not\b|!){receiver}\b(?!\.nil\?|\s+is\s+None)", above):
            return True
        if indent < depth:
            depth = indent
        if re.match(rf"^\s*(?:return|next|raise)\b.*\b(?:unless\s+{receiver}\b|if\s+{receiver}\.(?:nil|blank)\?)", above):
            return True
    return False


def _use_excerpt(text: str, receiver: str) -> str:
    match = re.search(rf"{re.escape(receiver)}\.[A-Za-z_]\w*[?!]?", text)
    return match.group(0) if match else text.strip()[:80]
