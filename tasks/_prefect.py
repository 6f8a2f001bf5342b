"""Project defaults for Prefect tasks, in one place (the ControlFlow pattern).

Tasks persist their results so a retried or rerun flow reuses finished steps; steps that must not
be cached say so with `cache_policy=NONE`.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NONE


def nightwatch_task(*args: Any, **kwargs: Any):
    cached = "cache_key_fn" in kwargs
    if not cached:
        kwargs.setdefault("cache_policy", NONE)
    kwargs.setdefault("persist_result", cached)
    kwargs.setdefault("log_prints", True)
    return task(*args, **kwargs)


def key(*parts: object) -> str:
    return ":".join(str(p) for p in parts)


def raised(state: Any) -> BaseException | None:
    """What a failed task run raised (for retry conditions and callers), or None when it cannot be read back."""
    try:
        cause = state.result(raise_on_failure=False)
    except Exception:  # an unreadable result: the state's message is all there is
        return None
    return cause if isinstance(cause, BaseException) else None


def from_cache(state: Any) -> bool:
    """The task run was answered from Prefect's cache (an earlier attempt of the night did the work)."""
    return state.name == "Cached"
