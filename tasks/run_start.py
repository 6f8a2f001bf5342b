"""How the flow runs a step: record its outcome in the report, and stop only when it must."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Callable

from nightwatch.tasks._prefect import from_cache
from prefect import Task, get_run_logger
from prefect.exceptions import MissingContextError

from nightwatch.models import RunReport, StepOutcome
from nightwatch.settings import Settings


class StepFailed(Exception):
    """A step the night cannot go on without; the message names the step and the cause."""

    def __init__(self, step: str, cause: BaseException | str) -> None:
        self.step = step
        super().__init__(f"step {step} failed: {cause}")


def resolve_run_settings(settings_block: str | None, overrides: dict[str, Any] | None, **params: Any) -> Settings:
    from nightwatch.blocks.settings_block import resolve_settings

    return resolve_settings(settings_block, {**(overrides or {}), **{k: v for k, v in params.items() if v is not None}})


def describe(value: Any) -> str:
    """One line a person reads in the step list: what the step produced."""
    if isinstance(value, str):
        return value[:200]
    if value is None:
        return "nothing to do"
    if hasattr(value, "changes") and hasattr(value, "knowledge"):  # the outcome sync
        lines = value.lines()
        return f"{len(lines)} outcome(s)" + (": " + "; ".join(lines)[:160] if lines else "")
    if hasattr(value, "solutions") and hasattr(value, "generation"):  # the knowledge index's state
        skipped = f", {value.skipped} skipped" if value.skipped else ""
        return f"{value.solutions} known analyses, {value.patterns} patterns{skipped}"
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, list) for v in value):
        return f"{len(value[0])} patterns, {len(value[1])} ignore suggestions"
    if isinstance(value, list):
        return _describe_list(value)
    if hasattr(value, "selected") and hasattr(value, "found"):
        return f"{len(value.found)} found, {len(value.ignored)} ignored, {len(value.selected)} selected"
    if hasattr(value, "model_calls") and hasattr(value, "iterations"):  # the night's totals (step 5)
        return f"{value.model_calls} model calls, {value.iterations} iterations, {value.tokens.total:,} tokens, ${value.cost_usd:.4f}"
    if hasattr(value, "action"):
        return f"{value.action}{': ' + value.reason if getattr(value, 'reason', '') else ''}"
    return "done"


def _describe_list(items: list) -> str:
    kind = type(items[0]).__name__ if items else ""
    if kind == "SourceStatus":
        states = Counter(s.state for s in items)
        return ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    if kind in ("CreatedIssueResult",):
        return ", ".join(f"{n} {action}" for action, n in Counter(i.action for i in items).items())
    if kind == "ResearchContext":
        priors = sum(len(r.prior_analyses) for r in items)
        prs = sum(len(r.correlated_prs) for r in items)
        return f"{len(items)} errors researched, {priors} prior analyses, {prs} correlated PRs"
    noun = {"TraceData": "traces", "CorrelatedPR": "merged PRs", "ErrorAnalysisResult": "analyses"}.get(kind, "items")
    return f"{len(items)} {noun}"


PROGRESS = logging.getLogger("nightwatch.progress")


def run_step(report: RunReport, step: str, name: str, fn: Callable[..., Any], *args: Any, critical: bool = True) -> Any:
    """Run a task (or a small inline step), append its outcome, and return its result; say so as it goes."""
    _say(logging.INFO, "step %s %s …", step, name)
    try:
        if isinstance(fn, Task):
            state = fn(*args, return_state=True)
            value = state.result()
            status = "cached" if from_cache(state) else "ok"
        else:
            value, status = fn(*args), "ok"
    except Exception as exc:
        report.steps.append(StepOutcome(step=step, name=name, status="failed", detail=f"{type(exc).__name__}: {exc}"[:500]))
        _say(logging.WARNING, "step %s %s FAILED: %s", step, name, report.steps[-1].detail)
        if critical:
            raise StepFailed(name, exc) from exc
        report.warnings.append(f"step {step} {name} failed: {exc}")
        return None
    report.steps.append(StepOutcome(step=step, name=name, status=status, detail=describe(value)))
    _say(logging.INFO, "step %s %s %s: %s", step, name, status, report.steps[-1].detail)
    return value


def _say(level: int, message: str, *args: Any) -> None:
    """A progress line on stderr (the CLI) and in the flow run's logs (the UI's Logs tab)."""
    PROGRESS.log(level, message, *args)
    try:
        get_run_logger().log(level, message, *args)
    except MissingContextError:  # outside a flow run
        pass
