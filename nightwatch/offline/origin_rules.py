"""How the offline model looks past the crash site: the rules it follows from the crash line to the origin.

- A nil receiver that is an instance variable: where it is assigned (`@story =`), and whether the callback that
  assigns it runs for this action (`before_action :find_story, only: [...]`).
- A nil receiver that is a local variable: its assignment above the crash line.
- A crash inside a callback method: the callback's declaration says on which actions it runs.
- An error the application raises itself (`raise` on the crash line), or a call with the wrong arguments: the
  calling frame, which should rescue or call differently.
Everything else: the origin is the crash site. Each rule reads only what the conversation already holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nightwatch.agent.search_view import parse_hits
from nightwatch.offline.python_origins import PyFrame, python_origin

NIL_CALL = re.compile(r"undefined method [`'‘]([^'’`]+)['’`] for (?:nil|an instance of NilClass)|'NoneType' object has no attribute '([^']+)'")
_RECEIVER = r"[@$]{0,2}[A-Za-z_]\w*(?:\.[A-Za-z_]\w*[?!]?)*"
_CALLBACK = re.compile(r"^\s*(?:prepend_|append_)?(?P<kind>before|after|around)_(?:action|filter)\s+(?P<names>(?::[\w?!]+(?![\w?!]|\s*=>)\s*,\s*)*:[\w?!]+(?![\w?!]|\s*=>))(?P<opts>.*)$", re.S)
_ACTIONS = r"(\[[^\]]*\]|:\w+|%i\[[^\]]*\]|%w\[[^\]]*\])"
_NILABLE = re.compile(r"\bfind_by\b(?!!)|\.first\b|\.last\b|\.detect\b|\.find\s*\{|\bwhere\(|\bparams\[|\.dig\(|\.get\(|\[\s*:?\w+\s*\]\s*$|\.first\(\)")
Frame = tuple[str, int, str]


@dataclass(frozen=True)
class Origin:
    file: str
    line: int
    note: str


def nil_receiver(message: str, code_line: str) -> str | None:
    """The expression that was nil at the crash line: `@story` in `@story.title` for "undefined method `title' for nil"."""
    match = NIL_CALL.search(message)
    if not match:
        return None
    called = match.group(1) or match.group(2)
    found = re.search(rf"({_RECEIVER})(?:\.|&\.){re.escape(called)}(?![\w?!])", code_line)
    return found.group(1) if found else None


def assignment_query(receiver: str | None) -> str | None:
    """The search that finds where an instance variable gets its value (`@story =`)."""
    if receiver and receiver.startswith("@") and "." not in receiver:
        return f"{receiver} ="
    return None


@dataclass(frozen=True)
class Site:
    """A stack frame and the lines of its file that the conversation shows (by line number)."""

    frame: Frame
    source: dict[int, str] = field(default_factory=dict)


def find_origin(*, error_class: str = "", message: str, transaction: str, crash: Site, caller: Site | None = None,
                assignment_hits: str = "", raised_in_library: bool = False, callers: tuple[Site, ...] = ()) -> Origin | None:
    """Where the defect is, when the rules can tell it from the crash site; None means the crash site itself.
    `callers`: the in-app frames above the crash site, nearest first (Python's rules follow a value up them)."""
    (path, line, method), source = crash.frame, crash.source
    found = python_origin(error_class, message, [PyFrame(s.frame[0], s.frame[1], s.source) for s in (crash, *callers)])
    if found:
        return Origin(found.file, found.line, found.note)
    code = source.get(line, "")
    callback = _callback_declaration(source, method, path)
    if callback:
        return callback
    if caller and re.search(r"^\s*raise\b|\braise\s+\w", code):
        return _missing_rescue(error_class, caller.frame, caller.source)
    if caller and ("wrong number of arguments" in message or (raised_in_library and _library_error(error_class))):
        file, number, name = caller.frame
        return Origin(file, number, f"the caller `{name or 'of this code'}` passes what the call rejects")
    receiver = nil_receiver(message, code)
    if receiver is None:
        return None
    if receiver.startswith("@"):
        action = _action_of(transaction)
        return (_callback_not_run(receiver, action, source, path)
                or _instance_variable_origin(receiver, path, source, action, assignment_hits))
    return _local_origin(receiver, path, line, source)


@dataclass(frozen=True)
class _Callback:
    line: int
    kind: str
    names: tuple[str, ...]
    options: str


def callbacks(source: dict[int, str]) -> list[_Callback]:
    """`before_action`/`after_action`/`around_action` declarations, continuation lines joined."""
    found, numbers = [], sorted(source)
    for index, number in enumerate(numbers):
        text = source[number]
        following = numbers[index + 1 :]
        while text.rstrip().endswith(",") and following and following[0] == number + len(text.splitlines()):
            text += "\n" + source[following.pop(0)]
        match = _CALLBACK.match(text)
        if match:
            names = tuple(n.lstrip(":") for n in re.findall(r":[\w?!]+", match["names"]))
            found.append(_Callback(number, match["kind"], names, " ".join(match["opts"].split()).strip(" ,")))
    return found


def _library_error(error_class: str) -> bool:
    """An error a third-party client raises about its input (`Stripe::InvalidRequestError`), not the ORM's own."""
    return "::" in error_class and not error_class.startswith(("ActiveRecord::", "ActionController::", "ActionView::"))


def _missing_rescue(error_class: str, caller: Frame, source: dict[int, str]) -> Origin:
    """The caller should handle what the application raised: its method's rescue clauses when it has some."""
    name = error_class.rsplit("::", 1)[-1] or "the error"
    rescues = []
    for number in range(caller[1] + 1, caller[1] + 80):  # the rest of the calling method
        text = source.get(number)
        if text is None or re.match(r"^\s*def\s", text):
            break
        if re.match(r"^\s*rescue\b", text):
            rescues.append(number)
    if rescues:
        return Origin(caller[0], rescues[-1], f"`{caller[2] or 'the caller'}` rescues other errors here but not {name}")
    return Origin(caller[0], caller[1], f"`{caller[2] or 'the caller'}` calls code that raises {name} and does not rescue it")


def _callback_declaration(source: dict[int, str], method: str, path: str) -> Origin | None:
    name = re.split(r"[#. ]", method)[-1] if method else ""  # `block in show`, `InboxController#update_read_at`
    for callback in callbacks(source):
        if name and name in callback.names:
            options = f" with {callback.options}" if callback.options else ""
            return Origin(path, callback.line, f"the {callback.kind}_action `{name}` is declared here{options}; "
                                               "it runs on actions where its data may be missing")
    return None


def _callback_not_run(receiver: str, action: str, source: dict[int, str], path: str) -> Origin | None:
    """A callback named after the receiver (`require_logged_in_user` for `@user`) that does not run for this action."""
    stem = receiver.lstrip("@").lower()
    if not action or len(stem) < 3:
        return None
    for callback in callbacks(source):
        if callback.kind != "before":
            continue
        named = [n for n in callback.names if stem in n.lower()]
        if named and not _runs_for(callback.options, action):
            return Origin(path, callback.line, f"`before_action :{named[0]}` ({callback.options}) does not run for "
                                               f"`{action}`, so {receiver} can be nil there")
    return None


def _instance_variable_origin(receiver: str, path: str, source: dict[int, str], action: str, hits: str) -> Origin | None:
    assignments = [(p, n, t) for p, n, t in parse_hits(hits) if re.search(rf"{re.escape(receiver)}\s*\|?\|?=(?!=)", t)]
    for hit_path, number, _text in assignments:
        if hit_path != path:
            continue
        setter = _enclosing_def(source, number)
        declared = _declaration_of(source, setter) if setter else None
        if declared and action and not _runs_for(declared[1], action):
            return Origin(path, declared[0], f"`{setter}`, which assigns {receiver}, does not run for `{action}`")
    nilable = [a for a in assignments if _NILABLE.search(a[2])]
    chosen = next((a for a in nilable if a[0] == path), nilable[0] if nilable else None)
    if chosen:
        return Origin(chosen[0], chosen[1], f"{receiver} is assigned here from a lookup that can return nil")
    return None


def _local_origin(receiver: str, path: str, line: int, source: dict[int, str]) -> Origin | None:
    name = receiver.split(".")[0]
    for number in range(line - 1, 0, -1):
        text = source.get(number)
        if text is None or re.match(r"^\s*def\s", text):
            return None
        if re.match(rf"^\s*{re.escape(name)}\s*\|?\|?=(?!=)", text):
            return Origin(path, number, f"`{name}` is assigned here and can be nil") if _NILABLE.search(text) else None
    return None


def _enclosing_def(source: dict[int, str], line: int) -> str | None:
    for number in range(line, 0, -1):
        match = re.match(r"^\s*def\s+(?:self\.)?([\w?!]+)", source.get(number, ""))
        if match:
            return match.group(1)
    return None


def _declaration_of(source: dict[int, str], method: str) -> tuple[int, str] | None:
    return next(((c.line, c.options) for c in callbacks(source) if method in c.names), None)


def _runs_for(options: str, action: str) -> bool:
    """Whether a callback with these options (`only: [...]`, `:except => :x`) runs for the action."""
    only = re.search(rf"(?:only:|:only\s*=>)\s*{_ACTIONS}", options)
    if only:
        return action in re.findall(r"\w+", re.sub(r"%[iw]", "", only.group(1)))
    excepted = re.search(rf"(?:except:|:except\s*=>)\s*{_ACTIONS}", options)
    return not (excepted and action in re.findall(r"\w+", re.sub(r"%[iw]", "", excepted.group(1))))


def _action_of(transaction: str) -> str:
    """`Controller/stories/show` -> `show`; other transactions have no action."""
    return transaction.rsplit("/", 1)[-1] if transaction.startswith("Controller/") else ""
