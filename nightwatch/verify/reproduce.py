"""Whether a test run shows the production error: the same exception class, raised through the crash frame.

A test runner's output is read for Python tracebacks, as the interpreter prints them (Django's runner, unittest,
pytest --tb=native) and as pytest prints them (`path.py:12: in name` frames, an `E   Class: message` line); the run reproduces the error when one of its tracebacks ends in the
production class (compared by name, and by module where both give one) and passes through the crash frame's
file at its line or in its function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>\S+))?')
_PYTEST_FRAME = re.compile(r"^(?P<file>[^\s:]+\.py):(?P<line>\d+): (?:in (?P<function>\S+)|\w[\w.]*)$")
_EXCEPTION = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str


@dataclass(frozen=True)
class RaisedError:
    """One traceback in a run's output."""

    error_class: str
    message: str
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class CrashSite:
    """The production error: its class (`module:Name`, `module.Name` or `Name`) and the crash frame in the repository."""

    error_class: str
    file: str
    line: int | None = None
    function: str | None = None


_CAPTURED = re.compile(r"^-+ Captured (?:stdout|stderr|log) (?:setup|call|teardown) -+$")


def tracebacks(output: str) -> list[RaisedError]:
    """Every Python traceback in `output`, in order: the interpreter's, then pytest's. What a test printed, which pytest
    shows in its `Captured stdout call` sections, is not read: a test could print a traceback it never raised."""
    lines = _without_captured(output.split("\n"))
    return _native(lines) + _pytest(lines)


def _without_captured(lines: list[str]) -> list[str]:
    out: list[str] = []
    captured = False
    for line in lines:
        if _CAPTURED.match(line):
            captured = True
        elif captured and line.startswith(("----", "____", "====")):
            captured = False
        if not captured:
            out.append(line)
    return out


def _pytest(lines: list[str]) -> list[RaisedError]:
    found: list[RaisedError] = []
    frames: list[Frame] = []
    for line in lines:
        m = _PYTEST_FRAME.match(line)
        if m:
            frames.append(Frame(m.group("file"), int(m.group("line")), m.group("function") or ""))
        elif line.startswith("E   ") and frames:
            e = _EXCEPTION.match(line[1:].strip())
            if e:
                found.append(RaisedError(e.group("cls"), (e.group("message") or "").strip(), tuple(frames)))
            frames = []
        elif line.startswith("____") or line.startswith("===="):
            frames = []
    return found


def _native(lines: list[str]) -> list[RaisedError]:
    found: list[RaisedError] = []
    i = 0
    while i < len(lines):
        if lines[i].strip().endswith(_TRACEBACK):
            frames: list[Frame] = []
            i += 1
            while i < len(lines):
                m = _FRAME.match(lines[i])
                if m:
                    frames.append(Frame(m.group("file"), int(m.group("line")), m.group("function") or ""))
                    i += 1
                    continue
                stripped = lines[i].strip()
                if lines[i][:1] in {" ", "\t"} or not stripped or set(stripped) <= set("^~ "):
                    i += 1  # the source line under a frame, carets, blank lines
                    continue
                e = _EXCEPTION.match(stripped)
                if e:
                    found.append(RaisedError(e.group("cls"), (e.group("message") or "").strip(), tuple(frames)))
                break
        i += 1
    return found


def same_class(production: str, raised: str) -> bool:
    """`builtins:KeyError` and `KeyError`; `django.urls.exceptions:NoReverseMatch` and
    `django.urls.exceptions.NoReverseMatch` or `NoReverseMatch`; `django.contrib.auth.models:DoesNotExist` and
    `django.contrib.auth.models.User.DoesNotExist`; never `KeyError` and `ValueError`."""
    p_module, p_name = _split(production)
    r_module, r_name = _split(raised)
    if p_name != r_name:
        return False
    # New Relic names a nested class by its module and __name__ (`django.contrib.auth.models:DoesNotExist`); Python
    # prints its qualified name (`django.contrib.auth.models.User.DoesNotExist`).
    nested = bool(p_module) and r_module.startswith(p_module + ".") and ":" in production
    return not (p_module and r_module) or p_module == r_module or nested or "builtins" in {p_module, r_module}


def through_crash(error: RaisedError, crash: CrashSite) -> bool:
    """Whether the traceback passes through the crash frame: its file, at the line or in the function."""
    want = crash.file.strip("/")
    for frame in error.frames:
        path = frame.file.replace("\\", "/")
        if path == want or path.endswith("/" + want):
            if crash.line is None and crash.function is None:
                return True
            if crash.line is not None and frame.line == crash.line:
                return True
            if crash.function and frame.function == crash.function:
                return True
    return False


def reproduces(output: str, crash: CrashSite) -> tuple[bool, str]:
    """Whether the run's output shows the production error, and what it shows instead."""
    errors = tracebacks(output)
    for error in errors:
        if same_class(crash.error_class, error.error_class) and through_crash(error, crash):
            return True, f"{error.error_class} raised through {crash.file}" + (f":{crash.line}" if crash.line else "")
    if not errors:
        return False, "no traceback in the output"
    last = errors[-1]
    if any(same_class(crash.error_class, e.error_class) for e in errors):
        return False, f"{last.error_class} raised, but not through {crash.file}"
    return False, f"raised {last.error_class}: {last.message[:200]}, not {crash.error_class}"


def _split(name: str) -> tuple[str, str]:
    name = name.strip()
    if ":" in name:
        module, _, cls = name.rpartition(":")
        return module, cls
    module, _, cls = name.rpartition(".")
    return module, cls


_LIBRARY = re.compile(r"(?:site-packages|dist-packages|/lib/python3\.\d+/)")


def without_library_frames(output: str) -> str:
    """A run's output with each run of library frames (site-packages, the standard library) folded into one line:
    what is left is the test, the application's frames and the error."""
    out: list[str] = []
    skipped = 0
    in_library = False
    for line in output.splitlines():
        frame = _PYTEST_FRAME.match(line) or _FRAME.match(line)
        if frame:
            in_library = bool(_LIBRARY.search(frame.group("file")))
            if in_library:
                skipped += 1
                continue
        elif in_library and (line.startswith((" ", "\t")) and line.strip()):
            continue  # the source line (and carets) under a library frame
        else:
            in_library = False
        if skipped:
            out.append(f"    [... {skipped} library frame(s) ...]")
            skipped = 0
        out.append(line)
    if skipped:
        out.append(f"    [... {skipped} library frame(s) ...]")
    return "\n".join(out)


_UNITTEST_SKIPPED = re.compile(r"^Ran (\d+) tests? in .*\n+OK \(skipped=(\d+)\)", re.M)


def skipped(output: str) -> bool:
    """Whether a run that exited 0 only skipped its tests (pytest's `1 skipped`, unittest's `OK (skipped=1)` with as
    many skipped as ran): a skip is not a pass."""
    tail = output[-2_000:]
    unit = _UNITTEST_SKIPPED.search(tail)
    if unit:
        return unit[1] == unit[2]
    summary = [line for line in tail.splitlines() if re.search(r"\b\d+ (?:passed|failed|skipped|errors?)\b", line)]
    return bool(summary) and "skipped" in summary[-1] and not re.search(r"\b\d+ (?:passed|failed|errors?)\b", summary[-1])
