"""How the flow runs a step: record its outcome in the report, and stop only when it must."""

from __future__ import annotations

from typing import Any, Callable

from prefect import Task

from nightwatch.models import RunReport, StepOutcome
from nightwatch.settings import Settings


class StepFailed(Exception):
    """A step the night cannot go on without; the message names the step and the cause."""

    def __init__(self, step: str, cause: BaseException | str) -> None:
        self.step = step
        super().__init__(f"step {step} failed: {cause}")


def resolve_run_settings(settings_block: str | None, overrides: dict[str, Any] | None, **params: Any) -> Settings:
    from blocks.settings_block import resolve_settings

    return resolve_settings(settings_block, {**(overrides or {}), **{k: v for k, v in params.items() if v is not None}})


def describe(value: Any) -> str:
    if isinstance(value, str):
        return value[:200]
    if isinstance(value, (list, tuple)):
        return f"{len(value)} item(s)"
    if isinstance(value, dict):
        return f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    if value is None:
        return "nothing to do"
    for attr in ("selected", "action"):
        if hasattr(value, attr):
            found = getattr(value, attr)
            return f"{len(found)} selected" if isinstance(found, list) else str(found)
    return "done"


def run_step(report: RunReport, step: str, name: str, fn: Callable[..., Any], *args: Any, critical: bool = True) -> Any:
    """Run a task (or a small inline step), append its outcome, and return its result."""
    try:
        if isinstance(fn, Task):
            state = fn(*args, return_state=True)
            value = state.result()
            status = "cached" if state.name == "Cached" else "ok"
        else:
            value, status = fn(*args), "ok"
    except Exception as exc:
        report.steps.append(StepOutcome(step=step, name=name, status="failed", detail=f"{type(exc).__name__}: {exc}"[:500]))
        if critical:
            raise StepFailed(name, exc) from exc
        report.warnings.append(f"step {step} {name} failed: {exc}")
        return None
    report.steps.append(StepOutcome(step=step, name=name, status=status, detail=describe(value)))
    return value
