"""Project defaults for Prefect tasks, in one place (the ControlFlow pattern).

Tasks persist their results so a retried or rerun flow reuses finished steps; steps that must not
be cached say so with `cache_policy=NONE`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NONE
from prefect.utilities.annotations import opaque


def nightwatch_task(*args: Any, step: str | None = None, **kwargs: Any):
    """A task with the project's defaults; `step` names its runs as the step list does (`4 investigate_error · …`)."""
    if step is not None and "name" in kwargs:
        kwargs.setdefault("task_run_name", run_name(step, kwargs["name"]))
    cached = "cache_key_fn" in kwargs
    if not cached:
        kwargs.setdefault("cache_policy", NONE)
    kwargs.setdefault("persist_result", cached)
    kwargs.setdefault("log_prints", True)
    made = task(*args, **kwargs)
    if isinstance(made, Task):
        return StepTask.of(made)
    return lambda fn: StepTask.of(made(fn))


class StepTask(Task):
    """A task whose arguments Prefect takes as they are, without walking into them.

    Before a task runs, Prefect visits every argument recursively, field by field of every model (once to resolve
    futures nested in it, once to list the run's inputs): for a night's errors, traces and research that was a fifth
    of the flow process's CPU. The steps are handed values (never futures or states inside a collection), so each
    argument is passed `opaque`: Prefect resolves and links the argument itself (a value another task returned still
    shows as that task's output on the run graph) and does not walk its contents. The function, the cache key and the
    run name see the plain value."""

    @classmethod
    def of(cls, made: Task) -> "StepTask":
        made.__class__ = cls
        return made

    def __call__(self, *args: Any, **kwargs: Any):
        args, kwargs = self._opaque(args, kwargs)
        return super().__call__(*args, **kwargs)

    def submit(self, *args: Any, **kwargs: Any):
        args, kwargs = self._opaque(args, kwargs)
        return super().submit(*args, **kwargs)

    def with_options(self, *args: Any, **kwargs: Any) -> "StepTask":
        return StepTask.of(super().with_options(*args, **kwargs))

    @staticmethod
    def _opaque(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        engine = {"return_state", "wait_for"}  # Prefect's own keywords, not the function's
        return (tuple(opaque(a) for a in args),
                {k: v if k in engine else opaque(v) for k, v in kwargs.items()})


def run_name(step: str, name: str):
    """`3 fetch_traces · NoMethodError orders#show`: the step, the task, and the error it works on, if any."""

    def build(parameters: dict[str, Any]) -> str:  # the run's resolved arguments (Prefect passes them by this name)
        error = parameters.get("error")
        if error is None or not hasattr(error, "error_class"):
            return f"{step} {name}"
        return f"{step} {name} · {error.error_class} {short_transaction(error.transaction)}"[:120]

    return build


def short_transaction(transaction: str) -> str:
    """`Controller/orders/show` -> `orders#show`; other transactions keep their last two parts."""
    parts = [p for p in transaction.split("/") if p]
    if transaction.startswith("Controller/") and len(parts) >= 3:
        return f"{'/'.join(parts[1:-1])}#{parts[-1]}"
    return "/".join(parts[-2:])


def key(*parts: object) -> str:
    """A cached step's key: its parts, then the version of the results' shapes (`results_version`)."""
    return ":".join(str(p) for p in (*parts, results_version()))


@functools.cache
def results_version() -> str:
    """`r` and a digest of the shapes of the results a night caches (their JSON schemas). Prefect pickles a cached
    result; one pickled by another version of NightWatch (a field added or renamed since) reads back as an object
    without the new field, and the step that uses it fails. With the shapes in the key, a night rerun after an upgrade
    recomputes its cached steps instead."""
    from nightwatch.models import ErrorAnalysisResult, TraceData
    from nightwatch.research import ResearchContext
    from nightwatch.selection import Selection
    from nightwatch.triage.verdict import TriageOutcome

    shapes = [m.model_json_schema() for m in (Selection, TraceData, ResearchContext, TriageOutcome, ErrorAnalysisResult)]
    return "r" + hashlib.sha256(json.dumps(shapes, sort_keys=True).encode()).hexdigest()[:10]


def raised(state: Any) -> BaseException | None:
    """What a failed task run raised (for retry conditions and callers), or None when it cannot be read back."""
    try:
        cause = state.result(raise_on_failure=False)
    except Exception:  # an unreadable result: the state's message is all there is
        return None
    return cause if isinstance(cause, BaseException) else None


CACHED_MESSAGE = "Answered from the night's cache: an earlier attempt finished this step, nothing ran again"


def from_cache(state: Any) -> bool:
    """The task run was answered from Prefect's cache (an earlier attempt of the night did the work)."""
    return state.name == "Cached"


def label_cached_runs(flow_run_id: Any) -> int:
    """Give every task run of this night's flow run (and its subflows) that was answered from the cache a state
    message saying so, where the run page shows it (Prefect's Cached state has none); return how many.

    Done once at the end of the night: the server records task runs from their events a moment after they
    finish, so a task run cannot be labelled the instant it ends."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId, TaskRunFilter, TaskRunFilterStateName

    with get_client(sync_client=True) as client:
        subflows = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id={"any_": [flow_run_id, *(r.id for r in subflows)]}),
                                     task_run_filter=TaskRunFilter(state={"name": TaskRunFilterStateName(any_=["Cached"])}))
        unlabelled = [r for r in runs if r.state is not None and not r.state.message]
        for run in unlabelled:
            client.set_task_run_state(run.id, run.state.model_copy(update={"message": CACHED_MESSAGE}), force=True)
    return len(unlabelled)


@contextmanager
def quiet_local_api() -> Iterator[None]:
    """A night on this process's own throwaway API (no PREFECT_API_URL: `nightwatch run`, `nightwatch eval`) sends no
    flow-run heartbeats: nothing outlives the process to watch them, and each flow run and subflow would wait up to a
    second, when it ends, for the heartbeat thread to stop. Against a server, Prefect's default stands (its
    heartbeats are how the server tells a crashed run)."""
    import prefect.settings
    from prefect.settings import get_current_settings, temporary_settings

    if get_current_settings().api.url:
        yield
        return
    with temporary_settings(updates={prefect.settings.PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield
