"""The `nightwatch eval` command's body: one night per case through the flow, then the table and the verdict.

Like `nightwatch run`, this is the outermost layer: it alone reaches Prefect, lazily.

A night is CPU-bound in two processes that take turns (the night's own, and the Prefect API's), so on a machine
with more than one core the cases run side by side: this process and `jobs - 1` worker processes take cases from one
list, each with its own throwaway Prefect API. The scores do not depend on the order.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from nightwatch import environment, run_log
from nightwatch.eval_apps import APPS
from nightwatch.evaluation import (
    CONCLUDED,
    FIX_TESTS_CLAIM,
    CaseScore,
    EvalCase,
    EvalError,
    FixTestScore,
    exported_at,
    failed,
    fix_test_items,
    fix_tests_summary,
    load_baseline,
    regressions,
    run_case,
    run_fix_tests,
    summary,
    write_baseline,
)
from nightwatch.models import RunReport
from nightwatch.render.evals import eval_table
from nightwatch.settings import Settings


@dataclass(frozen=True)
class EvalOptions:
    """What `nightwatch eval` was asked for, beyond the cases."""

    baseline_path: Path
    workdir: Path | None = None  # checkouts, homes and reports; default: a new temporary folder
    checkout: Path | None = None  # a clone of the cases' application (`--repo`)
    as_json: bool = False
    update_baseline: bool = False
    pr_min_confidence: str = "medium"
    jobs: int = 0  # nights side by side; 0: default_jobs()
    fix_tests: bool = False  # also run each real fix commit's own regression test at its parent and at the fix
    fix_tests_home: Path | None = None  # where their test environments are made and reused; default: in the workdir
    apps_dir: Path | None = None  # the applications' bundles and app.yml (<cases-dir>/apps)


def run_eval(cases: list[EvalCase], settings: Settings, options: EvalOptions) -> int:
    """Run and score every case; print the table (or JSON); 0, or 1 on a regression against the baseline."""
    baseline_path = options.baseline_path
    root = Path(options.workdir) if options.workdir else Path(tempfile.mkdtemp(prefix="nightwatch-eval-"))
    root.mkdir(parents=True, exist_ok=True)
    _quiet_throwaway_api()
    environment.configure(root)
    run_log.start(root)
    jobs = min(options.jobs or default_jobs(), len(cases)) or 1
    run_log.say(f"eval: {len(cases)} case(s), {jobs} at a time; checkouts, homes and reports in {root}")
    started = time.monotonic()
    scores = _run_cases(cases, root, options.checkout, options.pr_min_confidence, jobs)
    try:
        baseline = load_baseline(baseline_path)
    except EvalError as exc:
        run_log.say(f"nightwatch: {exc}")
        return 2
    found = regressions(scores, baseline)  # the gate: what the night shows the model
    concluded = regressions(scores, baseline, CONCLUDED)  # the model's conclusions: reported, never a failure
    totals = summary(scores, cases) | {"wall_seconds": round(time.monotonic() - started, 1), "model": _model_label(settings)}
    fixes = _fix_tests(cases, root, options) if options.fix_tests else None
    _print_scores(scores, totals, found, concluded, fixes, options.as_json)
    if options.update_baseline:
        write_baseline(baseline_path, scores, _model_label(settings))
        run_log.say(f"eval: baseline written to {baseline_path}")
        return 0
    for line in concluded:
        run_log.say(f"  the model concluded otherwise (reported, not a regression): {line}")
    for line in found:
        run_log.say(f"  regressed: {line}")
    run_log.say(f"eval: {len(found)} regression(s) against {baseline_path}" if found else
                f"eval: no regression against {baseline_path}" if baseline else f"eval: no baseline at {baseline_path}")
    return 1 if found else 0


def _print_scores(scores: list[CaseScore], totals: dict[str, object], found: list[str], concluded: list[str],
                  fixes: list[FixTestScore] | None, as_json: bool) -> None:
    """The table (or JSON) on stdout: every case's scores, the regressions of the gate, the model's changed conclusions."""
    if as_json:
        out: dict[str, object] = {"cases": [s.model_dump() for s in scores], "summary": totals, "regressions": found,
                                  "conclusions_changed": concluded}
        if fixes is not None:
            out["fix_tests"] = {"cases": [f.model_dump() for f in fixes], "summary": _fix_totals(fixes)}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return
    sys.stdout.write(eval_table(scores, totals) + "\n")
    if fixes is not None:
        sys.stdout.write("\n" + fix_tests_table(fixes) + "\n")


def _fix_tests(cases: list[EvalCase], root: Path, options: EvalOptions) -> list[FixTestScore]:
    home = Path(options.fix_tests_home) if options.fix_tests_home else root / "fix-tests-home"
    apps = Path(options.apps_dir) if options.apps_dir else (cases[0].folder.parent if cases else Path("evals")) / APPS
    try:
        items = fix_test_items(cases, apps)
    except EvalError as exc:
        run_log.say(f"eval: no fix commits' own tests: {exc}")
        return []
    run_log.say(f"eval: the fix commits' own tests, from {apps}: {sum(i.kind == 'eval' for i in items)} eval case(s), "
                f"{sum(i.kind == 'harness' for i in items)} harness-only fix commit(s); test environments in {home}")
    started = time.monotonic()
    fixes = run_fix_tests(items, apps, root, home, say=run_log.say)
    run_log.say(f"eval: fix commits' own tests: {fix_tests_summary(fixes)} ({FIX_TESTS_CLAIM}), {_by_kind(fixes)}, "
                f"{time.monotonic() - started:.0f} s")
    return fixes


def _by_kind(fixes: list[FixTestScore]) -> str:
    """How many hold of the eval cases' fixes, and of the harness-only fix commits."""
    parts = []
    for kind, label in (("eval", "eval cases"), ("harness", "harness-only")):
        of = [f for f in fixes if f.kind == kind]
        parts += [f"{label} {fix_tests_summary(of).removesuffix(' hold')}"] if of else []
    return ", ".join(parts)


def _fix_totals(fixes: list[FixTestScore]) -> dict[str, object]:
    verdicts: dict[str, int] = {}
    for f in fixes:
        verdicts[f.verdict] = verdicts.get(f.verdict, 0) + 1
    return {"hold": sum(1 for f in fixes if f.holds), "cases": len(fixes), "figure": f"{fix_tests_summary(fixes)} ({FIX_TESTS_CLAIM})",
            "by_kind": _by_kind(fixes), "verdicts": verdicts, "setup_seconds": round(sum(f.setup_seconds for f in fixes), 1),
            "run_seconds": round(sum(r.seconds for f in fixes for r in f.runs), 1)}


def fix_tests_table(fixes: list[FixTestScore]) -> str:
    """The text report of --fix-tests: one row per fix commit (an eval case's, or a harness-only one of <app>.yml), its
    detail under it, then the figure."""
    row = "{:<44} {:<7} {:<32} {:<24} {:<24}"
    lines = ["Fix commits' own tests (the real fix's regression test in the sandbox, at the fix's parent and at the fix;",
             "of: eval = an eval case's fix, harness = a harness-only fix commit of evals/apps/<app>/app.yml, no night)",
             row.format("case", "of", "verdict", "at the parent", "at the fix"), "-" * 135]
    for f in fixes:
        runs = {r.side: f"{r.outcome} {r.seconds:g} s" for r in f.runs}
        lines.append(row.format(f.case[:44], f.kind, f.verdict[:32], runs.get("parent", "-")[:24], runs.get("fix", "-")[:24]))
        lines.append(f"    {f.detail[:300]}")
        if f.setup_seconds:
            lines.append(f"    set-up: {f.environment[:200]}")
        if f.note and not f.holds:
            lines += textwrap.wrap(f"why: {f.note}", width=123, initial_indent="    ", subsequent_indent="      ")
    totals = _fix_totals(fixes)
    lines += ["", f"  fix commits' own tests: {totals['figure']}; {totals['by_kind']}",
              f"  set-up {totals['setup_seconds']:g} s, runs {totals['run_seconds']:g} s; each run's output under "
              f"{Path(fixes[0].logs).parent if fixes and fixes[0].logs else 'the workdir'}"]
    return "\n".join(lines)


def default_jobs() -> int:
    """The cores this process may use (a `taskset` counts), at most 4: each night keeps about one busy."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _quiet_throwaway_api() -> None:
    """The nights run on a throwaway local API that nobody opens; a server of the user's (PREFECT_API_URL) is theirs."""
    if os.environ.get("PREFECT_API_URL"):
        return
    for name in environment.UNREAD_ON_THE_EVAL_API:
        os.environ.setdefault(name, "false")


def _run_cases(cases: list[EvalCase], root: Path, checkout: Path | None, pr_min_confidence: str, jobs: int) -> list[CaseScore]:
    """Every case's score, in the cases' order; `jobs` nights at a time."""
    scores: list[CaseScore | None] = [None] * len(cases)
    template = Path(os.environ.get("PREFECT_HOME", root / "prefect")) / "prefect.db"
    taken = iter(range(len(cases)))
    lock = threading.Lock()

    def next_case() -> int | None:
        with lock:
            return next(taken, None)

    def feed(pool: ProcessPoolExecutor) -> None:
        while (i := next_case()) is not None:
            try:
                scores[i] = pool.submit(_worker_case, cases[i], root, checkout, pr_min_confidence).result()
            except Exception as exc:  # noqa: BLE001 - a worker that died (killed, out of memory) fails its case only
                scores[i] = failed(cases[i], f"the worker process running the night died: {str(exc)[:300]}")

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Prefect state or threads forked
    workers = ProcessPoolExecutor(max_workers=jobs - 1, mp_context=context, initializer=_worker_start,
                                  initargs=(str(root), str(template))) if jobs > 1 else contextlib.nullcontext()
    with workers as pool:
        feeders = [threading.Thread(target=feed, args=(pool,), daemon=True) for _ in range(jobs - 1)]
        for feeder in feeders:
            feeder.start()
        night = _night_runner(pr_min_confidence)
        while (i := next_case()) is not None:  # this process runs nights too
            run_log.say(f"eval: {cases[i].id}")
            scores[i] = run_case(cases[i], root, night, checkout)
        for feeder in feeders:
            feeder.join()
    return [s for s in scores if s is not None]


def _worker_start(root: str, template: str) -> None:
    """A worker's nights keep their own Prefect home and API: two nights writing to one SQLite-backed API lock each
    other out (it answers 503). Its database starts as a copy of this eval's, already migrated, when there is one."""
    home = Path(root) / "workers" / f"prefect-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    if Path(template).is_file() and not (home / "prefect.db").exists():
        copy_database(Path(template), home / "prefect.db")
    os.environ["PREFECT_HOME"] = str(home)
    environment.configure(Path(root))
    run_log.start(Path(root))


def copy_database(source: Path, target: Path) -> bool:
    """A consistent copy of a SQLite database another process may be writing (this eval's Prefect API migrating it, its
    latest writes still in the write-ahead log): SQLite's online backup, never a file copy that could catch a page
    half-written. False, and no file, when it cannot be read (the worker's Prefect then makes its own)."""
    partial = target.with_name(target.name + ".copying")
    try:
        with contextlib.closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)) as src, \
                contextlib.closing(sqlite3.connect(partial)) as dst:
            src.backup(dst)
        os.replace(partial, target)
        return True
    except sqlite3.Error:
        partial.unlink(missing_ok=True)
        return False


def _worker_case(case: EvalCase, root: Path, checkout: Path | None, pr_min_confidence: str) -> CaseScore:
    run_log.say(f"eval: {case.id}")
    return run_case(case, root, _night_runner(pr_min_confidence), checkout)


def _model_label(settings: Settings) -> str:
    return settings.model if settings.live_model else "offline"


def _night_runner(pr_min_confidence: str):
    from nightwatch.flows.nightwatch import run_night

    def run(case: EvalCase, repo: Path, home: Path) -> RunReport:
        overrides = {"home": str(home), "errors_file": str(case.export.resolve()), "code_path": str(repo),
                     "pr_min_confidence": pr_min_confidence, "max_errors": 20, "max_issues": 5,
                     "source": "sentry" if case.monitor == "sentry" else "newrelic"}
        return run_night(since_hours=24.0, until=exported_at(case), overrides=overrides)

    return run
