"""Test data built in one place: an error group, its traces, an analysis and a result, each with the fields a test
does not care about filled in, and any of them overridden by keyword.

    error = nil_error()                                   # NoMethodError on orders#show, 87 occurrences
    traces = traces_for(error, app_frame("app/controllers/orders_controller.rb", 4, "show"), gem_frame())
    result = result_for(error, analysis(confidence="high"))
"""

from __future__ import annotations

from typing import Any

from nightwatch.models import Analysis, ErrorAnalysisResult, ErrorGroup, StackFrame, TraceData

NIL_MESSAGE = "undefined method `email' for nil:NilClass"


def error_group(error_class: str = "NoMethodError", transaction: str = "Controller/orders/show", **fields: Any) -> ErrorGroup:
    return ErrorGroup(error_class=error_class, transaction=transaction, **fields)


def nil_error(**fields: Any) -> ErrorGroup:
    """The demo's most common kind of error: a method called on nil in a controller action."""
    return error_group(**({"message": NIL_MESSAGE, "occurrences": 87} | fields))


def app_frame(file: str = "app/controllers/orders_controller.rb", line: int = 4, method: str = "show") -> StackFrame:
    return StackFrame(file=file, line=line, method=method, in_app=True)


def gem_frame(file: str = "/usr/local/bundle/gems/actionpack-7.1.3/lib/action_controller/metal.rb", line: int = 6,
              method: str = "dispatch") -> StackFrame:
    return StackFrame(file=file, line=line, method=method)


def traces_for(error: ErrorGroup, *frames: StackFrame, **fields: Any) -> TraceData:
    return TraceData(fingerprint=error.fingerprint, stack_frames=list(frames), **fields)


def analysis(**fields: Any) -> Analysis:
    return Analysis(**({"title": "t", "reasoning": "r", "root_cause": "c", "has_fix": False, "confidence": "low"} | fields))


def result_for(error: ErrorGroup, found: Analysis | None = None, run_id: str = "r", **fields: Any) -> ErrorAnalysisResult:
    return ErrorAnalysisResult(run_id=run_id, error=error, analysis=found, **fields)
