"""The `nightwatch eval` table: one row per case (what the night showed the model, the gate, then what the model
concluded), then the summary."""

from __future__ import annotations

from typing import Any

from nightwatch.evaluation import SHOWN, CaseScore

_ROW = "{:<44} {:>5} {:<14} {:<5} {:<6} {:<4} {:<8} {:<5} {:>7} {:>5} {:>8} {:>8} {:>3}"
_HEAD = ("case", "shown", "route", "crash", "origin", "line", "PR", "file", "frames", "reads", "tokens", "cost", "it")


def _mark(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "NO"


def eval_table(scores: list[CaseScore], totals: dict[str, Any]) -> str:
    lines = ["shown: what the night showed the model, passed of applicable (the gate); route to file: what the model "
             "concluded (reported)", _ROW.format(*_HEAD), "-" * 133]
    for s in scores:
        route = s.route if s.checks.get("route") else f"{s.route or '-'}!={s.route_expected}"
        applicable = [bool(s.checks[c]) for c in SHOWN if s.checks.get(c) is not None]
        lines.append(_ROW.format(
            s.case[:44], f"{sum(applicable)}/{len(applicable)}", route[:14], _mark(s.checks.get("crash")), _mark(s.checks.get("origin")), _mark(s.checks.get("line")),
            s.pr, _mark(s.pr_file_right), f"{s.frames_mapped}/{s.frames_in_app}", s.refused_reads, f"{s.tokens:,}",
            f"${s.cost_usd:.4f}", s.iterations,
        ))
        if s.pr_reason and s.pr == "refused":
            lines.append(f"    PR refused: {s.pr_reason[:200]}")
        if s.failure:
            lines.append(f"    failure: {s.failure[:200]}")
    lines += ["", "Summary"]
    lines += [f"  {key:<26} {value}" for key, value in totals.items()]
    return "\n".join(lines)
