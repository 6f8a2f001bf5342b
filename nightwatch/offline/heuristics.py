"""Rules the offline model reasons with: a fixed, inspectable stand-in for a model's judgement.

They only claim what the evidence in front of them supports: confidence is `medium` when the
defective line was read and a known failure shape matches it, `low` otherwise, never `high`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from nightwatch.agent.search_view import parse_hits
from nightwatch.models import Analysis, CodeLocation, FileChange
from nightwatch.offline.origin_rules import NIL_CALL, Origin

TRANSIENT = re.compile(r"Timeout|TimedOut|ReadTimeout|OpenTimeout|ECONNRESET|ECONNREFUSED|ConnectionError|"
                       r"ConnectionFailed|ServiceUnavailable|Deadlock|LockWait|TooManyRequests", re.I)
CONFIG = re.compile(r"Authentication|Unauthorized|Forbidden|credentials|API key|MissingSecret|KeyNotSet|"
                    r"ImproperlyConfigured|EnvironmentError", re.I)
SIMPLE_CLASSES = ("NoMethodError", "NameError", "ArgumentError", "TypeError", "KeyError", "IndexError",
                  "AttributeError", "ZeroDivisionError", "RecordNotFound", "ValueError")
COMPLEX_CLASSES = ("SystemStackError", "RecursionError", "Deadlock", "NoMemoryError", "SegmentationFault", "StatementInvalid")


def triage_verdict(error_class: str, message: str, http_status: int | None, occurrences: int, has_app_frame: bool) -> dict:
    text = f"{error_class} {message}"
    if TRANSIENT.search(text):
        category, cause = "transient", "a timeout or connection failure talking to another service"
    elif CONFIG.search(text):
        category, cause = "config", "a credential or configuration problem, not a code defect"
    elif has_app_frame:
        category, cause = "code_bug", f"{error_class} raised by application code"
    else:
        category, cause = "unknown", f"{error_class} raised outside the application's own frames"
    complexity = (
        "complex" if any(c in error_class for c in COMPLEX_CLASSES)
        else "simple" if any(c in error_class for c in SIMPLE_CLASSES) else "moderate"
    )
    severity = _severity(http_status, occurrences, category)
    return {
        "severity": severity,
        "complexity": complexity,
        "category": category,
        "likely_root_cause": cause,
        "confidence": "medium" if category in ("transient", "config") else "low",
        "needs_deep_investigation": category in ("code_bug", "unknown"),
    }


def _severity(http_status: int | None, occurrences: int, category: str) -> str:
    if category == "transient":
        return "low" if occurrences < 500 else "medium"
    if http_status and 400 <= http_status < 500:
        return "low"
    if occurrences >= 1000:
        return "critical"
    return "high" if occurrences >= 100 else "medium"


@dataclass(frozen=True)
class Evidence:
    """What the offline analyst read: the error, its top application frame, that frame's line and a search."""

    error_class: str
    transaction: str
    message: str
    path: str = ""
    line: int = 0
    method: str = ""
    code_line: str = ""
    search_hits: str = ""

    @property
    def where(self) -> str:
        return f"`{self.path}:{self.line}`" if self.path else f"the `{self.transaction}` transaction"


def diagnose(evidence: Evidence, crash: tuple[str, int] | None = None, origin: Origin | None = None) -> Analysis:
    """The rule-based analysis, with the crash site and, when the rules found one elsewhere, the origin."""
    analysis = _diagnose_crash(evidence)
    e = evidence
    crash_site = CodeLocation(file=crash[0], line=crash[1] or None, note=f"{e.error_class} raised here") if crash else None
    if origin is None or (crash and (origin.file, origin.line) == tuple(crash)):
        where = crash_site or (CodeLocation(file=e.path, line=e.line or None) if e.path else None)
        return analysis.model_copy(update={"crash_site": crash_site, "origin": where})
    at = f"`{origin.file}:{origin.line}`"
    return analysis.model_copy(update={
        "crash_site": crash_site,
        "origin": CodeLocation(file=origin.file, line=origin.line, note=origin.note),
        "root_cause": f"{analysis.root_cause} The origin is at {at}: {origin.note}.",
        "reasoning": analysis.reasoning + f" Following the value back from the crash site leads to {at}: {origin.note}.",
        "has_fix": False,
        "file_changes": [],  # a guard at the crash line would only move the crash; the fix belongs at the origin
        "suggested_next_steps": [f"Fix the origin at {at}: {origin.note}.", *analysis.suggested_next_steps],
    })


# (matches the error, its cause, its next step) for the classes the rules know, checked in order
_RULES: list[tuple[Callable[[Evidence], bool], Callable[[Evidence], str], list[str]]] = [
    (lambda e: "ZeroDivisionError" in e.error_class or "division by zero" in e.message,
     lambda e: f"A denominator that can be zero is divided by at {e.where}.",
     ["Guard the zero case (return zero or skip the calculation) and add a test for empty input."]),
    (lambda e: "RecordNotFound" in e.error_class,
     lambda e: f"`find` raises at {e.where} when the record no longer exists (deleted, or an id from a stale link).",
     ["Use `find_by` and handle nil, or rescue RecordNotFound and answer 404."]),
    (lambda e: e.error_class == "KeyError" or "key not found" in e.message,
     lambda e: f"A key the code requires is missing from the hash read at {e.where}.",
     ["Validate the payload before reading it, or use `fetch` with a default where the key is optional."]),
    (lambda e: "ArgumentError" in e.error_class and "wrong number of arguments" in e.message,
     lambda e: f"The call at {e.where} passes a different number of arguments than `{e.method or 'the method'}` accepts, likely "
               "after a signature change.",
     ["Align every caller with the method's current signature (search results below list them)."]),
    (lambda e: any(c in e.error_class for c in ("SystemStackError", "RecursionError")),
     lambda e: f"Unbounded recursion in `{e.method or 'a method'}` ({e.where}): the recursion has no base case for this data "
               "(a cycle?).",
     ["Add a visited set or a depth limit to the recursion, and check the data for cycles."]),
    (lambda e: bool(TRANSIENT.search(e.error_class)),
     lambda e: f"A call to another service timed out in {e.where}; the code gives it no timeout or retry budget.",
     ["Set explicit open/read timeouts and a bounded retry with backoff on the client.", "Alert on the dependency's latency."]),
    (lambda e: "TypeError" in e.error_class,
     lambda e: f"A value of the wrong type reaches {e.where}: {e.message[:160]}",
     ["Convert the value at its source (parse strings to numbers once), and add a test with real input."]),
]


def _diagnose_crash(e: Evidence) -> Analysis:
    code = e.code_line.strip()
    found = _nil_call(e) or next(((cause(e), list(steps), None) for matches, cause, steps in _RULES if matches(e)), None)
    saw_line = bool(code) and found is not None
    cause, steps, change = found or (f"{e.error_class} is raised at {e.where}: {e.message[:160]}",
                                     ["Read the callers of this code path with the failing input in mind."], None)
    if e.search_hits:
        steps.append("Other places to check:\n" + "\n".join(f"{p}:{n}: {t}" for p, n, t in parse_hits(e.search_hits)[:5]))
    reasoning = (
        f"The top application frame is {e.where}" + (f" in `{e.method}`" if e.method else "") + ". "
        + (f"That line reads `{code}`. " if code else "The defective line could not be read. ")
        + f"The error is {e.error_class}: {e.message[:200]}. " + cause
        + " (Offline analysis: rule-based, from the stack frame and the code it points at.)"
    )
    return Analysis(
        title=f"{e.error_class} in {e.method or e.transaction}" + (f" ({e.path}:{e.line})" if e.path else ""),
        reasoning=reasoning,
        root_cause=cause,
        has_fix=change is not None,
        confidence="medium" if saw_line else "low",
        file_changes=[change] if change else [],
        suggested_next_steps=steps,
    )


def _nil_call(e: Evidence) -> tuple[str, list[str], FileChange | None] | None:
    """A method called on nil (Ruby) or None (Python): the receiver, and a safe-navigation guard for Ruby."""
    nil_call = NIL_CALL.search(e.message)
    if not nil_call:
        return None
    called = nil_call.group(1) or nil_call.group(2)
    receiver = re.search(rf"([A-Za-z_@][\w@.]*?)\.{re.escape(called)}(?![\w?!])", e.code_line.strip())
    nil = "None" if e.path.endswith(".py") or nil_call.group(2) else "nil"  # each language's word for it
    cause = (f"`{receiver.group(1)}` is {nil} at {e.where}, and `{called}` is called on it without a guard."
             if receiver else f"A {nil} value reaches {e.where}, where `{called}` is called on it.")
    change = None
    if receiver and e.path.endswith(".rb"):
        fixed = e.code_line.replace(f"{receiver.group(1)}.{called}", f"{receiver.group(1)}&.{called}", 1)
        change = FileChange(path=e.path, action="modify", description=f"Guard the nil `{receiver.group(1)}` with the safe "
                            "navigation operator", before=e.code_line, after=fixed)
    return cause, [f"Decide whether `{receiver.group(1) if receiver else 'the value'}` may legitimately be nil; if not, fix "
                   "the data or the association."], change
