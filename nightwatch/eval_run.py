"""The `nightwatch eval` command's body: one night per case through the flow, then the table and the verdict.

Like `nightwatch run`, this is the outermost layer: it alone reaches Prefect, lazily.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from nightwatch import environment, run_log
from nightwatch.evaluation import (
    CaseScore,
    EvalCase,
    EvalError,
    exported_at,
    load_baseline,
    regressions,
    run_case,
    summary,
    write_baseline,
)
from nightwatch.models import RunReport
from nightwatch.render.evals import eval_table
from nightwatch.settings import Settings


def run_eval(cases: list[EvalCase], settings: Settings, *, workdir: Path | None, checkout: Path | None, as_json: bool,
             baseline_path: Path, update_baseline: bool, pr_min_confidence: str) -> int:
    """Run and score every case; print the table (or JSON); 0, or 1 on a regression against the baseline."""
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="nightwatch-eval-"))
    root.mkdir(parents=True, exist_ok=True)
    environment.configure(root)
    run_log.start(root)
    run_log.say(f"eval: {len(cases)} case(s); checkouts, homes and reports in {root}")
    night = _night_runner(pr_min_confidence)
    started = time.monotonic()
    scores: list[CaseScore] = []
    for case in cases:
        run_log.say(f"eval: {case.id}")
        scores.append(run_case(case, root, night, checkout))
    try:
        baseline = load_baseline(baseline_path)
    except EvalError as exc:
        run_log.say(f"nightwatch: {exc}")
        return 2
    found = regressions(scores, baseline)
    totals = summary(scores, cases) | {"wall_seconds": round(time.monotonic() - started, 1), "model": _model_label(settings)}
    if as_json:
        sys.stdout.write(json.dumps({"cases": [s.model_dump() for s in scores], "summary": totals, "regressions": found},
                                    indent=2) + "\n")
    else:
        sys.stdout.write(eval_table(scores, totals) + "\n")
    if update_baseline:
        write_baseline(baseline_path, scores, _model_label(settings))
        run_log.say(f"eval: baseline written to {baseline_path}")
        return 0
    for line in found:
        run_log.say(f"  regressed: {line}")
    run_log.say(f"eval: {len(found)} regression(s) against {baseline_path}" if found else
                f"eval: no regression against {baseline_path}" if baseline else f"eval: no baseline at {baseline_path}")
    return 1 if found else 0


def _model_label(settings: Settings) -> str:
    return settings.model if settings.live_model else "offline"


def _night_runner(pr_min_confidence: str):
    from flows.nightwatch import run_night

    def run(case: EvalCase, repo: Path, home: Path) -> RunReport:
        overrides = {"home": str(home), "errors_file": str(case.export.resolve()), "code_path": str(repo),
                     "pr_min_confidence": pr_min_confidence, "max_errors": 20, "max_issues": 5}
        return run_night(since_hours=24.0, until=exported_at(case), overrides=overrides)

    return run
