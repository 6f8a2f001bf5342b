"""Rules the offline model reasons with: a fixed, inspectable stand-in for a model's judgement.

They only claim what the evidence in front of them supports: confidence is `medium` when the
defective line was read and a known failure shape matches it, `low` otherwise, never `high`.
"""

from __future__ import annotations

import re

from nightwatch.agent.origin_rules import Origin
from nightwatch.agent.search_view import parse_hits
from nightwatch.models import Analysis, CodeLocation, FileChange

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


def diagnose(
    *, error_class: str, transaction: str, message: str, path: str, line: int, method: str, code_line: str, search_hits: str,
    crash: tuple[str, int] | None = None, origin: Origin | None = None,
) -> Analysis:
    """The rule-based analysis, with the crash site and, when the rules found one elsewhere, the origin."""
    analysis = _diagnose_crash(error_class=error_class, transaction=transaction, message=message, path=path, line=line,
                               method=method, code_line=code_line, search_hits=search_hits)
    crash_site = CodeLocation(file=crash[0], line=crash[1] or None, note=f"{error_class} raised here") if crash else None
    if origin is None or (crash and (origin.file, origin.line) == tuple(crash)):
        where = crash_site or (CodeLocation(file=path, line=line or None) if path else None)
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


def _diagnose_crash(
    *, error_class: str, transaction: str, message: str, path: str, line: int, method: str, code_line: str, search_hits: str
) -> Analysis:
    where = f"`{path}:{line}`" if path else f"the `{transaction}` transaction"
    code = code_line.strip()
    saw_line = bool(code)
    change: FileChange | None = None
    steps: list[str] = []
    nil_call = re.search(r"undefined method [`'‘]([^'’`]+)['’`] for nil|'NoneType' object has no attribute '([^']+)'", message)
    if nil_call:
        called = nil_call.group(1) or nil_call.group(2)
        receiver = re.search(rf"([A-Za-z_@][\w@.]*?)\.{re.escape(called)}(?![\w?!])", code)
        cause = (f"`{receiver.group(1)}` is nil at {where}, and `{called}` is called on it without a guard."
                 if receiver else f"A nil value reaches {where}, where `{called}` is called on it.")
        if receiver and path.endswith(".rb"):
            fixed = code_line.replace(f"{receiver.group(1)}.{called}", f"{receiver.group(1)}&.{called}", 1)
            change = FileChange(path=path, action="modify", description=f"Guard the nil `{receiver.group(1)}` with the safe navigation operator",
                                before=code_line, after=fixed)
        steps = [f"Decide whether `{receiver.group(1) if receiver else 'the value'}` may legitimately be nil; if not, fix the data or the association."]
    elif "ZeroDivisionError" in error_class or "division by zero" in message:
        cause = f"A denominator that can be zero is divided by at {where}."
        steps = ["Guard the zero case (return zero or skip the calculation) and add a test for empty input."]
    elif "RecordNotFound" in error_class:
        cause = f"`find` raises at {where} when the record no longer exists (deleted, or an id from a stale link)."
        steps = ["Use `find_by` and handle nil, or rescue RecordNotFound and answer 404."]
    elif error_class in ("KeyError",) or "key not found" in message:
        cause = f"A key the code requires is missing from the hash read at {where}."
        steps = ["Validate the payload before reading it, or use `fetch` with a default where the key is optional."]
    elif "ArgumentError" in error_class and "wrong number of arguments" in message:
        cause = f"The call at {where} passes a different number of arguments than `{method or 'the method'}` accepts, likely after a signature change."
        steps = ["Align every caller with the method's current signature (search results below list them)."]
    elif any(c in error_class for c in ("SystemStackError", "RecursionError")):
        cause = f"Unbounded recursion in `{method or 'a method'}` ({where}): the recursion has no base case for this data (a cycle?)."
        steps = ["Add a visited set or a depth limit to the recursion, and check the data for cycles."]
    elif TRANSIENT.search(error_class):
        cause = f"A call to another service timed out in {where}; the code gives it no timeout or retry budget."
        steps = ["Set explicit open/read timeouts and a bounded retry with backoff on the client.", "Alert on the dependency's latency."]
    elif "TypeError" in error_class:
        cause = f"A value of the wrong type reaches {where}: {message[:160]}"
        steps = ["Convert the value at its source (parse strings to numbers once), and add a test with real input."]
    else:
        cause = f"{error_class} is raised at {where}: {message[:160]}"
        steps = ["Read the callers of this code path with the failing input in mind."]
        saw_line = False
    if search_hits:
        steps.append("Other places to check:\n" + "\n".join(f"{p}:{n}: {t}" for p, n, t in parse_hits(search_hits)[:5]))
    reasoning = (
        f"The top application frame is {where}" + (f" in `{method}`" if method else "") + ". "
        + (f"That line reads `{code}`. " if code else "The defective line could not be read. ")
        + f"The error is {error_class}: {message[:200]}. " + cause
        + " (Offline analysis: rule-based, from the stack frame and the code it points at.)"
    )
    return Analysis(
        title=f"{error_class} in {method or transaction}" + (f" ({path}:{line})" if path else ""),
        reasoning=reasoning,
        root_cause=cause,
        has_fix=change is not None,
        confidence="medium" if saw_line else "low",
        file_changes=[change] if change else [],
        suggested_next_steps=steps,
    )
