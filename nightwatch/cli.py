"""The `nightwatch` command: thin commands over the core and the flow.

Exit codes: 0 success; 1 the run failed (the message names the step); 2 bad usage or configuration.
`run --output json` prints the RunReport alone on stdout; logs go to stderr.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from enum import Enum
from typing import Optional

import typer

from nightwatch.settings import Settings

app = typer.Typer(help="NightWatch: nightly production-error analysis.", no_args_is_help=True, add_completion=False)
agents_app = typer.Typer(help="Agent definitions (Markdown + YAML frontmatter).", no_args_is_help=True)
app.add_typer(agents_app, name="agents")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw]?)\s*$")


class Mode(str, Enum):
    batch = "batch"
    interactive = "interactive"


class Output(str, Enum):
    text = "text"
    json = "json"


def parse_since(value: str) -> float:
    """'24h', '90m', '2d', '1w' or a bare number of hours -> hours."""
    match = _DURATION.match(value)
    if not match:
        raise typer.BadParameter(f"'{value}' is not a duration like 24h, 90m, 2d")
    amount, unit = float(match.group(1)), match.group(2) or "h"
    hours = amount * {"m": 1 / 60, "h": 1, "d": 24, "w": 168}[unit]
    if not 0 < hours <= 24 * 30:
        raise typer.BadParameter("the window must be between 1 minute and 30 days")
    return hours


def _fail(message: str, code: int) -> None:
    typer.echo(f"nightwatch: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def run(
    since: str = typer.Option("24h", help="Lookback window: 24h, 90m, 2d."),
    max_errors: Optional[int] = typer.Option(None, min=1, max=200, help="Errors to analyse (top N after ranking)."),
    max_issues: Optional[int] = typer.Option(None, min=0, max=50, help="New GitHub issues to create at most."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Analyse and report, but send and file nothing."),
    mode: Mode = typer.Option(Mode.interactive, help="batch: triage through Message Batches; interactive: direct calls."),
    agent: Optional[str] = typer.Option(None, help="Agent definition (see `nightwatch agents list`)."),
    until: Optional[datetime] = typer.Option(None, help="End of the window (UTC); default: now, to the hour."),
    output: Output = typer.Option(Output.text, help="text: readable summary; json: the RunReport on stdout."),
    settings_block: Optional[str] = typer.Option(None, help="Name of a saved NightWatchConfig Prefect block."),
) -> None:
    """Run one night: fetch, triage, investigate, report, file, remember."""
    hours = parse_since(since)
    settings = _settings()
    from nightwatch import environment
    from nightwatch.runtime import ConfigurationError, require_consistent, source_statuses

    try:
        require_consistent(source_statuses(settings))  # before Prefect starts: fail fast, name what is missing
    except ConfigurationError as exc:
        _fail(str(exc), 2)

    environment.configure(settings.resolved_home())
    report = _run_flow(hours, max_errors, max_issues, dry_run, mode.value, agent, until, settings_block)
    if output is Output.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        from nightwatch.render.summary import text_summary

        typer.echo(text_summary(report))


def _run_flow(hours, max_errors, max_issues, dry_run, mode, agent, until, settings_block):
    from flows.nightwatch import nightwatch_flow  # the outermost layer: only this command reaches Prefect
    from nightwatch.errors import USER_ERRORS

    try:
        return nightwatch_flow(since_hours=hours, max_errors=max_errors, max_issues=max_issues, dry_run=dry_run, mode=mode,
                               agent=agent, until=until, settings_block=settings_block)
    except USER_ERRORS as exc:
        _fail(str(exc), 2)
    except Exception as exc:  # a failed step: say which and why, no traceback
        cause = exc.__cause__
        _fail(f"run failed: {exc}", 2 if isinstance(cause, USER_ERRORS) else 1)


def _settings() -> Settings:
    from pydantic import ValidationError

    try:
        return Settings()
    except ValidationError as exc:
        _fail("invalid settings: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()), 2)
        raise


@app.command()
def check(output: Output = typer.Option(Output.text, help="text or json")) -> None:
    """Say, for each source, whether it is live, an offline default, or misconfigured (and why)."""
    from nightwatch.runtime import source_statuses

    statuses = source_statuses(_settings())
    if output is Output.json:
        typer.echo(json.dumps([s.model_dump() for s in statuses], indent=2))
    else:
        for s in statuses:
            typer.echo(f"{s.name:<10} {s.state:<14} {s.detail}")
    if any(s.state == "misconfigured" for s in statuses):
        raise typer.Exit(2)


@agents_app.command("list")
def agents_list() -> None:
    """List the agent definitions NightWatch can use."""
    from nightwatch.agent.definitions import AgentDefinitionError, list_definitions

    try:
        for d in list_definitions():
            typer.echo(f"{d.name:<16} {d.description}")
    except AgentDefinitionError as exc:
        _fail(str(exc), 2)


@agents_app.command("show")
def agents_show(name: str) -> None:
    """Print one definition: its settings and system prompt."""
    from nightwatch.agent.definitions import AgentDefinitionError, load_definition

    try:
        d = load_definition(name)
    except AgentDefinitionError as exc:
        _fail(str(exc), 2)
        return
    typer.echo(json.dumps(d.model_dump(exclude={"system_prompt"}), indent=2))
    typer.echo("\n" + d.system_prompt)


@agents_app.command("validate")
def agents_validate(paths: list[str] = typer.Argument(None, help="Definition files; default: every known definition.")) -> None:
    """Validate definitions; exit 2 naming each file and field that is wrong."""
    from pathlib import Path

    from nightwatch.agent.definitions import AgentDefinitionError, list_definitions, parse_definition

    problems = []
    try:
        checked = [parse_definition(Path(p).read_text(encoding="utf-8"), p).name for p in paths] if paths else [d.name for d in list_definitions()]
    except (AgentDefinitionError, OSError) as exc:
        problems.append(str(exc))
        checked = []
    for p in problems:
        typer.echo(p, err=True)
    if problems:
        raise typer.Exit(2)
    typer.echo(f"ok: {', '.join(checked)}")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
