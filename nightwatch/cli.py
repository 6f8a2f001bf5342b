"""The `nightwatch` command: thin commands over the core and the flow.

Exit codes: 0 every selected error analysed; 1 a step or an analysis failed (the last line on stderr
says which); 2 bad usage or configuration. `run --output json` prints the RunReport alone on stdout;
progress lines go to stderr, tracebacks to the log file under NIGHTWATCH_HOME/logs/.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from nightwatch import clock
from nightwatch.cli_options import command_options
from nightwatch.settings import Settings

app = typer.Typer(help="NightWatch: nightly production-error analysis.", no_args_is_help=True, add_completion=False)
agents_app = typer.Typer(help="Agent definitions (Markdown + YAML frontmatter).", no_args_is_help=True)
app.add_typer(agents_app, name="agents")
knowledge_app = typer.Typer(help="The knowledge documents and their index.", no_args_is_help=True)
app.add_typer(knowledge_app, name="knowledge")
metrics_app = typer.Typer(help="What the nights cost and achieved, from the Parquet metrics (DuckDB views).")
app.add_typer(metrics_app, name="metrics")



def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        typer.echo(f"nightwatch {version('nightwatch')}")
        raise typer.Exit(0)


@app.callback()
def _calendar(
    _version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                  help="Print the installed version and exit."),
) -> None:
    """Every command reads one calendar (NIGHTWATCH_NOW, if set), shared with the processes it starts."""
    try:
        clock.anchor_environment()
    except clock.ClockError as exc:
        typer.echo(f"nightwatch: {exc}", err=True)
        raise typer.Exit(2) from None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw]?)\s*$")


class Mode(str, Enum):
    batch = "batch"
    interactive = "interactive"


class Output(str, Enum):
    text = "text"
    json = "json"


class Format(str, Enum):
    table = "table"
    csv = "csv"
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
    mode: Optional[Mode] = typer.Option(None, help="batch: triage through Message Batches; interactive: direct calls "
                                                   "(default: NIGHTWATCH_MODE, else interactive)."),
    agent: Optional[str] = typer.Option(None, help="Agent definition (see `nightwatch agents list`)."),
    until: Optional[datetime] = typer.Option(None, help="End of the window (UTC); default: now, to the hour."),
    output: Output = typer.Option(Output.text, help="text: readable summary; json: the RunReport on stdout."),
    settings_block: Optional[str] = typer.Option(None, help="Name of a saved NightWatchConfig Prefect block."),
) -> None:
    """Run one night: fetch, triage, investigate, report, file, remember.

    Exit 0 when every selected error was analysed, 1 when a step or any analysis failed, 2 on configuration.
    """
    hours = parse_since(since)
    settings = _settings(agent=agent)
    _preflight(settings)  # before Prefect starts: a wrong key or agent costs seconds, not a night
    from nightwatch import environment, run_log

    environment.configure(settings.resolved_home())
    log = run_log.start(settings.resolved_home())
    report = _run_flow(settings, log, dict(since_hours=hours, max_errors=max_errors, max_issues=max_issues, dry_run=dry_run,
                                           mode=mode.value if mode else settings.mode, agent=agent, until=until,
                                           settings_block=settings_block))
    if output is Output.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        from nightwatch.render.summary import text_summary

        typer.echo(text_summary(report))
    from nightwatch.render.summary import failure_lines, status_line

    for line in failure_lines(report):
        run_log.say(f"  failed: {line}")
    run_log.say(status_line(report) + ("" if report.succeeded else f" (log: {log})"))
    raise typer.Exit(0 if report.succeeded else 1)


QUIET_IN_RUN = {"verified fixes"}  # the night's report says per analysis why nothing was verified; `check` shows it


def _preflight(settings: Settings) -> None:
    from nightwatch.preflight import problems, run_checks
    from nightwatch.runtime import source_statuses

    checks = run_checks(settings, source_statuses(settings))
    for warning in [c for c in checks if not c.ok and not c.fatal and c.name not in QUIET_IN_RUN]:
        typer.echo(f"nightwatch: warning: {warning.name}: {warning.detail}", err=True)
    bad = problems(checks)
    if bad:
        _fail("; ".join(f"{c.name}: {c.detail}" for c in bad), 2)


def _run_flow(settings: Settings, log: Path, parameters: dict[str, Any]):
    """The night in this process with the flow's `parameters`; an expected failure is one line on stderr."""
    from nightwatch import environment, run_log
    from nightwatch.errors import USER_ERRORS

    run_log.say("starting Prefect…")
    from nightwatch.flows.nightwatch import run_night  # the outermost layer: only this command reaches Prefect

    run_log.quiet_prefect_console(log)
    try:
        with environment.sole_local_run(settings.resolved_home()) as sole:
            if sole:  # slots a killed night left taken on this local database would throttle this one for good
                from nightwatch.tasks.api_limits import API_LIMIT, release_orphaned_slots

                for line in release_orphaned_slots([API_LIMIT, settings.investigation_concurrency_limit]):
                    run_log.say(f"freed {line}")
            return run_night(**parameters)
    except USER_ERRORS as exc:
        run_log.record_traceback(exc)
        _fail(str(exc), 2)
    except Exception as exc:  # a failed step: one line that names it; the traceback goes to the log file
        run_log.record_traceback(exc)
        cause = exc.__cause__
        from nightwatch.render.summary import one_line

        _fail(f"run failed: {one_line(str(exc), 400)} (traceback in {log})", 2 if isinstance(cause, USER_ERRORS) else 1)


def _settings(**overrides: Any) -> Settings:
    from pydantic import ValidationError

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        _fail("invalid settings: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()), 2)
        raise


@dataclass
class EvalArgs:
    """`nightwatch eval`'s arguments and options."""

    cases: list[str] = typer.Argument(None, help="Case folder names; default: every case.")
    cases_dir: Path = typer.Option(Path("evals"), help="Folder holding one folder per case.")
    repo: Optional[Path] = typer.Option(None, help="A clone of the cases' application: each case checks out its commit "
                                                   "instead of its slice of <cases-dir>/apps (demo cases always use the "
                                                   "demo app).")
    output: Output = typer.Option(Output.text, help="text: the table and a summary; json: the same as JSON.")
    baseline: Optional[Path] = typer.Option(None, help="Scores to compare with; default: <cases-dir>/baseline.json.")
    update_baseline: bool = typer.Option(False, "--update-baseline", help="Accept tonight's scores as the baseline.")
    pr_min_confidence: str = typer.Option("medium", help="The PR confidence bar during the eval (medium lets the other "
                                                         "checks of the fix gate decide).")
    workdir: Optional[Path] = typer.Option(None, help="Where each case's checkout, home and reports go; default: a new "
                                                      "temporary folder, kept for inspection.")
    jobs: int = typer.Option(0, min=0, help="Nights run side by side; default: one per core this process may use "
                                            "(at most 4).")
    fix_tests: bool = typer.Option(False, "--fix-tests", help="Also check the harness on the real fixes: each case's "
                                   "regression_test, from <cases-dir>/apps, run in the sandbox at the fix's parent (it "
                                   "must fail with the production class) and at the fix (it must pass). Makes each "
                                   "application's test environment the first time (needs its package registry).")
    fix_tests_home: Optional[Path] = typer.Option(None, "--fix-tests-home", help="Where --fix-tests keeps the test "
                                                  "environments, so a later run reuses them; default: in the workdir.")


@app.command("eval")
@command_options(EvalArgs)
def eval_cases(args: EvalArgs) -> None:
    """Replay each case as a night on its own checkout and score it: route, crash file, origin, line, PR, noise, path
    mapping, tokens, cost, iterations. Exit 1 when a case does worse than the baseline. With --fix-tests, also run each
    real fix commit's own regression test at its parent and at the fix (reported, not compared with the baseline)."""
    from nightwatch.evaluation import EvalError, load_cases

    settings = _settings()
    _eval_services_offline(settings)
    _preflight(settings)
    try:
        chosen = load_cases(args.cases_dir, args.cases or None)
    except EvalError as exc:
        _fail(str(exc), 2)
    from nightwatch.eval_run import EvalOptions, run_eval

    code = run_eval(chosen, settings, EvalOptions(
        baseline_path=args.baseline or args.cases_dir / "baseline.json", workdir=args.workdir, checkout=args.repo,
        as_json=args.output is Output.json, update_baseline=args.update_baseline, pr_min_confidence=args.pr_min_confidence,
        jobs=args.jobs, fix_tests=args.fix_tests, fix_tests_home=args.fix_tests_home, apps_dir=args.cases_dir / "apps"))
    raise typer.Exit(code)


def _eval_services_offline(settings: Settings) -> None:
    """The eval replays export files against local checkouts: it must never reach New Relic, GitHub or Slack."""
    from nightwatch.runtime import source_statuses

    live = [s.name for s in source_statuses(settings) if s.name != "anthropic" and s.state != "offline"]
    if live:
        _fail(f"nightwatch eval runs offline except for the model; unset the {', '.join(live)} settings first", 2)


@app.command()
def check(
    output: Output = typer.Option(Output.text, help="text or json"),
    offline: bool = typer.Option(False, "--offline", help="Skip the calls that verify credentials against live APIs."),
    test_env: bool = typer.Option(False, "--test-env", help="Make (or reuse) the application's test environment, even "
                                  "where its set-up failed before, and run one of its tests in the sandbox."),
    settings_block: Optional[str] = typer.Option(None, help="A saved NightWatchConfig Prefect block, as `run` would read it."),
) -> None:
    """Each source (live, offline default, or misconfigured, and why), where issues and pull requests will be written,
    where each setting's value comes from, then what can be verified cheaply: the Anthropic key and models, the agent,
    the ignore file, writable folders. Exit 2 on any problem."""
    from nightwatch.preflight import problems, run_checks, test_environment_check
    from nightwatch.render.origins import check_report, check_text
    from nightwatch.runtime import source_statuses
    from nightwatch.settings import origins

    settings, values = _settings(), None
    if settings_block:  # the Prefect edge: only this option of check loads a block
        from nightwatch.blocks.settings_block import block_values, resolve_settings

        try:
            settings, values = resolve_settings(settings_block), block_values(settings_block)
        except Exception as exc:  # noqa: BLE001 - no such block, or no Prefect server to ask: one line, exit 2
            _fail(f"settings block {settings_block!r}: {str(exc)[:400]}", 2)
    if test_env:
        lines, code = test_environment_check(settings)
        for line in lines:
            typer.echo(line)
        if code == 2:  # why, in one line: the set-up's failure and what to install
            typer.echo(f"nightwatch: test environment: {lines[0]}", err=True)
        raise typer.Exit(code)
    statuses = source_statuses(settings)
    checks = run_checks(settings, statuses, probe_api=not offline)
    report = check_report(settings, statuses, checks, origins(settings_block, values))
    typer.echo(json.dumps(report, indent=2) if output is Output.json else check_text(report))
    if problems(checks):
        raise typer.Exit(2)


@app.command()
def doctor(
    check_only: bool = typer.Option(False, "--check", help="Only report what is damaged; change nothing."),
) -> None:
    """Check NIGHTWATCH_HOME: damaged knowledge documents and Parquet files are quarantined, a damaged index is
    rebuilt, a damaged views file removed. Exit 1 when something was (or, with --check, is) damaged."""
    from nightwatch.knowledge_store.doctor import check_home

    home = _settings().resolved_home()
    findings = check_home(home, repair=not check_only)
    for finding in findings:
        typer.echo(finding.line())
    typer.echo(f"{home}: {len(findings)} problem(s)" + (" found" if check_only else " repaired") if findings else f"{home}: healthy")
    raise typer.Exit(1 if findings else 0)


@knowledge_app.command("rebuild")
def knowledge_rebuild() -> None:
    """Rebuild the knowledge index from the documents (a night only upserts what it wrote and what people edited).
    Exit 1 when a document was skipped (each is named, with the reason)."""
    from nightwatch.knowledge_store.index import KnowledgeIndexError, open_index

    folder = _settings().resolved_home() / "knowledge"
    try:
        with open_index(folder) as index:
            result = index.rebuild()
            counts = index.counts()
    except KnowledgeIndexError as exc:
        _fail(str(exc), 2)
    for entry in result.skipped:
        typer.echo(f"skipped {entry['file']}: {entry['reason']}", err=True)
    typer.echo(f"{folder}: {counts['solutions']} error document(s), {counts['patterns']} pattern(s) indexed"
               + (f", {len(result.skipped)} skipped" if result.skipped else ""))
    raise typer.Exit(1 if result.skipped else 0)


@metrics_app.callback(invoke_without_command=True)
def metrics(
    context: typer.Context,
    nights: int = typer.Option(30, min=1, help="How many of the latest nights to summarise."),
    output: Format = typer.Option(Format.table, "--format", help="table, csv or json."),
    sql: Optional[str] = typer.Option(None, "--sql", help="Run one read-only query against the views instead."),
) -> None:
    """Summary of the last N nights: cost, tokens by kind, cache hit rate, iterations per investigation, knowledge hit
    rate, batch share, regressions, fix acceptance by model and agent definition. `--sql` queries the views."""
    if context.invoked_subcommand:
        return
    import duckdb

    from nightwatch.knowledge_store.duck import ViewsLockedError, connect_readonly, ensure_views
    from nightwatch.knowledge_store.summary import read_only, render, render_table, run_query, summarise

    home = _settings().resolved_home()
    try:
        ensure_views(home)
        with connect_readonly(home) as con:
            text = render_table(run_query(con, read_only(sql)), output.value) if sql else render(summarise(con, nights), output.value)
    except (ValueError, duckdb.Error, ViewsLockedError) as exc:
        _fail(str(exc).splitlines()[0], 2)
    typer.echo(text, nl=False)


@metrics_app.command("compact")
def metrics_compact(
    month: Optional[str] = typer.Option(None, help="Compact this month (YYYY-MM) even if it is still open; default: every "
                                        "closed month that still holds a file per night."),
) -> None:
    """Merge a month's nights into one file per table (a night does this on its own when a month closes)."""

    from nightwatch.knowledge_store.duck import ensure_views
    from nightwatch.knowledge_store.metrics import MetricsStore

    if month and not re.fullmatch(r"\d{4}-\d{2}", month):
        _fail(f"--month must look like 2026-10, not {month!r}", 2)
    home = _settings().resolved_home()
    store = MetricsStore(home)
    migrated = store.migrate()
    written = store.compact(today=clock.today(), month=month)
    ensure_views(home)
    for path in written:
        typer.echo(str(path.relative_to(home)))
    typer.echo(f"{len(written)} file(s) written" + (f"; {migrated} file(s) migrated to the current schema" if migrated else ""))


@metrics_app.command("trend")
def metrics_trend(
    out: Path = typer.Option(Path("trend.svg"), help="Where to write the SVG."),
    nights: int = typer.Option(30, min=1, help="How many of the latest nights to draw."),
) -> None:
    """Cost per night and cache hit rate over the last nights, as an SVG picture (each night puts one in its report folder)."""
    from nightwatch.knowledge_store.duck import ensure_views
    from nightwatch.knowledge_store.trend import write_trend

    home = _settings().resolved_home()
    ensure_views(home)
    typer.echo(str(write_trend(home, out, nights)))


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
