"""The run context every task receives: serialisable, hashable, secret-free.

Settings (which hold secrets) never travel as task parameters: they live on the night's scope
(nightwatch/night.py), which the flow opens with `open_night` and every task of the night finds in its
context. A task run outside any night (called by hand) gets a night of its own, built from the
environment and the settings Block, that lives as long as the call's references to it.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from nightwatch.knowledge_store.metrics import safe_name

from nightwatch.models import Model, Window
from nightwatch.night import Night, current, scope
from nightwatch.runtime import Runtime
from nightwatch.settings import Settings


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


class NightRequest(Model):
    """What a night was asked for: its lookback, mode, dry run, and where its settings come from."""

    since_hours: float = 24.0
    mode: Literal["batch", "interactive"] = "interactive"
    dry_run: bool = False
    overrides: dict[str, Any] = {}
    settings_block: str | None = None


def new_context(settings: Settings, request: NightRequest, anchor: datetime, attempt: str, results_at: str = "") -> RunContext:
    """The context of one attempt (`attempt_name`) of the night that `request` and `anchor` name."""
    anchor = floor_hour(anchor)
    return RunContext(
        run_id=night_id(anchor, request.since_hours, scope_of(settings, request.settings_block)),
        attempt=attempt,
        results_at=results_at,
        anchor=anchor,
        window=Window.ending_at(anchor, timedelta(hours=request.since_hours)),
        mode=request.mode,
        dry_run=request.dry_run,
        agent=settings.agent,
        max_errors=settings.max_errors,
        max_issues=settings.max_issues,
        overrides=request.overrides,
        settings_block=request.settings_block,
    )


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


def open_night(ctx: RunContext, settings: Settings) -> AbstractContextManager[Night]:
    """The night's scope for this attempt: its tasks find it, and its clients are closed when the block ends."""
    return scope(Night(settings, ctx.anchor, ctx.attempt_key))


def night_of(ctx: RunContext) -> Night:
    """The open night of this attempt, or (outside one) a night of its own from the environment and the Block."""
    night = current(ctx.attempt_key)
    if night is not None:
        return night
    from nightwatch.blocks.settings_block import resolve_settings

    return Night(resolve_settings(ctx.settings_block, ctx.overrides), ctx.anchor, ctx.attempt_key)


def settings_for(ctx: RunContext) -> Settings:
    return night_of(ctx).settings


def runtime(ctx: RunContext) -> Runtime:
    return night_of(ctx).runtime


def home(ctx: RunContext) -> Path:
    return settings_for(ctx).resolved_home()


def report_dir(ctx: RunContext, settings: Settings | None = None) -> Path:
    """The night's report folder; `settings` when the night's scope is not open yet (the flow's first step)."""
    return (settings.resolved_home() if settings is not None else home(ctx)) / "reports" / ctx.run_id


def model_id(ctx: RunContext, model: str) -> str:
    """The model name a cache key uses: `offline` when no Anthropic key is configured."""
    return runtime(ctx).model_client.recorded_as(model, ctx.mode)[0]
