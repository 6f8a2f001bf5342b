"""The run context every task receives: serialisable, hashable, secret-free.

Settings (which hold secrets) never travel as task parameters: the flow registers them for its run
id, and a task on another worker rebuilds them from the environment and the settings Block.
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from knowledge_store.metrics import safe_name
from nightwatch.models import Model, Window
from nightwatch.runtime import Runtime, runtime_for
from nightwatch.settings import Settings

_SETTINGS: dict[str, Settings] = {}
_LOCK = threading.Lock()


class RunContext(Model):
    run_id: str  # the night: its window and scope, the same for every attempt (retry, rerun, another worker)
    attempt: str = ""  # the flow run doing the work now
    results_at: str = ""  # where the night's task results and cache live (tasks/result_storage.py)
    anchor: datetime
    window: Window
    mode: Literal["batch", "interactive"]
    dry_run: bool
    agent: str
    max_errors: int
    max_issues: int
    overrides: dict[str, Any] = {}
    settings_block: str | None = None

    @property
    def attempt_key(self) -> str:
        """This attempt of the night in this process: the key of in-memory state (clients, caches, gates)."""
        return f"{self.run_id}/{self.attempt}"

    @property
    def run_date(self) -> str:
        return f"{self.anchor:%Y-%m-%d}"


def floor_hour(moment: datetime) -> datetime:
    moment = moment.astimezone(timezone.utc)
    return moment.replace(minute=0, second=0, microsecond=0)


def new_context(settings: Settings, flow_run_id: str, anchor: datetime, *, since_hours: float, mode: str, dry_run: bool,
                agent: str, max_errors: int, max_issues: int, overrides: dict[str, Any], settings_block: str | None,
                run_count: int = 1, results_at: str = "") -> RunContext:
    anchor = floor_hour(anchor)
    ctx = RunContext(
        run_id=night_id(anchor, since_hours, scope_of(settings, settings_block)),
        attempt=attempt_name(flow_run_id, run_count),
        results_at=results_at,
        anchor=anchor,
        window=Window.ending_at(anchor, timedelta(hours=since_hours)),
        mode=mode,  # type: ignore[arg-type]
        dry_run=dry_run,
        agent=agent,
        max_errors=max_errors,
        max_issues=max_issues,
        overrides=overrides,
        settings_block=settings_block,
    )
    register(ctx, settings)
    return ctx


def attempt_name(flow_run_id: str, run_count: int = 1) -> str:
    """The flow run doing the work, and which of its runs: `prefect flow-run retry` keeps the flow run's id, so its
    second run is `<id>-2` and adds its own rows instead of replacing the first run's."""
    short = flow_run_id.replace("-", "")[:8]
    return short if run_count <= 1 else f"{short}-{run_count}"


def night_id(anchor: datetime, since_hours: float, scope: str) -> str:
    """The night's identity: its window and what it watches. Every side effect is idempotent per night."""
    return f"{anchor:%Y%m%dT%H%M}-{since_hours:g}h-{scope}"


def scope_of(settings: Settings, settings_block: str | None) -> str:
    """What the night watches: the settings block (one per application), else a short digest of its sources."""
    if settings_block:
        return safe_name(settings_block, 40)
    sources = [settings.newrelic_app_name or "", str(settings.errors_file or ""), settings.github_repo or "",
               str(settings.code_path or "")]
    return hashlib.sha256("|".join(sources).encode()).hexdigest()[:6]


def register(ctx: RunContext, settings: Settings) -> None:
    with _LOCK:
        _SETTINGS[ctx.attempt_key] = settings


def settings_for(ctx: RunContext) -> Settings:
    with _LOCK:
        if ctx.attempt_key in _SETTINGS:
            return _SETTINGS[ctx.attempt_key]
    from blocks.settings_block import resolve_settings

    settings = resolve_settings(ctx.settings_block, ctx.overrides)
    register(ctx, settings)
    return settings


def runtime(ctx: RunContext) -> Runtime:
    return runtime_for(settings_for(ctx), ctx.anchor)


def home(ctx: RunContext) -> Path:
    return settings_for(ctx).resolved_home()


def report_dir(ctx: RunContext) -> Path:
    return home(ctx) / "reports" / ctx.run_id


def model_id(ctx: RunContext, model: str) -> str:
    """The model name a cache key uses: `offline` when no Anthropic key is configured."""
    return "offline" if runtime(ctx).model_client.offline else model
