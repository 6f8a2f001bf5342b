"""The run context every task receives: serialisable, hashable, secret-free.

Settings (which hold secrets) never travel as task parameters: the flow registers them for its run
id, and a task on another worker rebuilds them from the environment and the settings Block.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from nightwatch.models import Model, Window
from nightwatch.runtime import Runtime, runtime_for
from nightwatch.settings import Settings

_SETTINGS: dict[str, Settings] = {}
_LOCK = threading.Lock()


class RunContext(Model):
    run_id: str
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
    def run_date(self) -> str:
        return f"{self.anchor:%Y-%m-%d}"


def floor_hour(moment: datetime) -> datetime:
    moment = moment.astimezone(timezone.utc)
    return moment.replace(minute=0, second=0, microsecond=0)


def new_context(settings: Settings, flow_run_id: str, anchor: datetime, *, since_hours: float, mode: str, dry_run: bool,
                agent: str, max_errors: int, max_issues: int, overrides: dict[str, Any], settings_block: str | None) -> RunContext:
    anchor = floor_hour(anchor)
    ctx = RunContext(
        run_id=f"{anchor:%Y%m%dT%H%M}-{flow_run_id.replace('-', '')[:8]}",
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
    register(ctx.run_id, settings)
    return ctx


def register(run_id: str, settings: Settings) -> None:
    with _LOCK:
        _SETTINGS[run_id] = settings


def settings_for(ctx: RunContext) -> Settings:
    with _LOCK:
        if ctx.run_id in _SETTINGS:
            return _SETTINGS[ctx.run_id]
    from blocks.settings_block import resolve_settings

    settings = resolve_settings(ctx.settings_block, ctx.overrides)
    register(ctx.run_id, settings)
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
