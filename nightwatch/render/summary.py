"""The terminal summary printed at the end of `nightwatch run`: plain text, about 80 columns.

This module also holds the few facts every renderer shares (labels, counts, confidence, money,
how an issue or the draft PR is described), so the terminal, the Markdown artifact and the Slack
blocks never disagree about what a night did. Text that came from production goes through
`safe()` (control characters replaced, secrets redacted) before it is shown anywhere.
"""

from __future__ import annotations

import re
import textwrap
from datetime import datetime
from typing import Callable

from nightwatch.models import (
    CreatedIssueResult,
    CreatedPRResult,
    ErrorAnalysisResult,
    RunReport,
    TokenUsage,
    Window,
)
from nightwatch.redact import printable, redact
from nightwatch.render.neutral import visible

WIDTH = 80
TOP_FINDINGS = 10
TOP_ADVICE = 3
DEMO_LABEL = "DEMO DATA"
OFFLINE_LABEL = "OFFLINE MODEL (deterministic, no tokens billed)"
DRY_RUN_LABEL = "DRY RUN (nothing sent to GitHub or Slack)"
STATE_LABELS = {"live": "live", "offline": "offline default", "misconfigured": "misconfigured"}
_SPACES = re.compile(r"\s+")
Paint = Callable[[str, str], str]
_ANSI = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "dim": "2"}


# shared facts ------------------------------------------------------------------------------
def safe(text: str | None) -> str:
    """Production text made presentable: control characters (terminal escapes) out, secrets redacted."""
    cleaned, _ = printable(text or "")
    return redact(visible(cleaned))


def shorten(text: str, limit: int) -> str:
    """Cut to `limit` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def one_line(text: str | None, limit: int) -> str:
    """Safe production text on a single line, shortened."""
    return shorten(_SPACES.sub(" ", safe(text)).strip(), limit)


def money(cost: float) -> str:
    return f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"


def run_labels(report: RunReport) -> list[str]:
    """The labels a reader must never miss: demo data, offline model, dry run."""
    flags = [(report.demo_data, DEMO_LABEL), (report.offline_model, OFFLINE_LABEL), (report.dry_run, DRY_RUN_LABEL)]
    return [label for on, label in flags if on]


def window_text(window: Window) -> str:
    return f"{_when(window.start)} to {_when(window.end)} ({window.hours:g}h)"


def _when(moment: datetime) -> str:
    zone = moment.tzname() or ""
    return f"{moment:%Y-%m-%d %H:%M} {zone}".strip()


def analysed(report: RunReport) -> list[ErrorAnalysisResult]:
    """Results that got an answer from somewhere (model, cache, knowledge base or triage), in rank order.

    A failed analysis is not among them, whatever triage guessed: it is listed with its reason instead."""
    return [r for r in report.results if r.source != "skipped" and not r.failed]


def funnel_text(report: RunReport) -> str:
    """How the night narrowed production down: found, ignored, selected, analysed (and failed)."""
    failed = f" · {report.errors_failed:,} FAILED" if report.errors_failed else ""
    return (
        f"{report.errors_found:,} found · {report.errors_ignored:,} ignored · "
        f"{report.errors_selected:,} selected · {len(analysed(report)):,} analysed{failed}"
    )


def noise_lines(report: RunReport) -> list[str]:
    """One line per ignore or noise rule that dropped something tonight."""
    return [f"{d.rule}: {d.errors:,} error(s), {d.occurrences:,} occurrence(s): {d.reason}" for d in report.noise]


def status_line(report: RunReport) -> str:
    """One line that says whether the night did its job; the exit code follows it."""
    if report.succeeded:
        return f"NightWatch {report.run_id}: ok, {len(analysed(report))} of {report.errors_selected} errors analysed"
    parts = []
    if report.errors_failed:
        parts.append(f"{report.errors_failed} of {report.errors_selected} analyses failed")
    if report.steps_failed:
        parts.append(f"step(s) failed: {', '.join(report.steps_failed)}")
    return f"NightWatch {report.run_id}: FAILED: {'; '.join(parts)}"


def regression_lines(report: RunReport, limit: int = 300) -> list[str]:
    """One line per regression (an error back after its fix merged, or whose issue was reopened), first in every report;
    then one per regression an earlier night flagged and that is still seen ("still regressing since <date>")."""
    return [one_line(f"{r.error.error_class} in {r.error.transaction}: {r.regression}", limit) for r in report.regressions] + [
        one_line(f"{r.error.error_class} in {r.error.transaction}: {r.still_regressing}", limit) for r in report.still_regressing]


def verification_lines(report: RunReport, limit: int = 300) -> list[str]:
    """One line per fix or regression test the night ran in the sandbox: verified, reproduced, not fixed, not
    reproduced or not run, with why."""
    return [one_line(f"{r.error.error_class} in {r.error.transaction}: {r.verification.line}", limit)
            for r in report.results if r.verification is not None]


def regression_heading(report: RunReport) -> str:
    """"Regressions (2)", or with the ones still regressing since an earlier night: "Regressions (2 new; 1 still)"."""
    new, still = len(report.regressions), len(report.still_regressing)
    return f"Regressions ({new} new; {still} still)" if still else f"Regressions ({new})"


def outcome_lines(report: RunReport, limit: int = 300) -> list[str]:
    """What people did with what NightWatch filed, since the last night (step 1.5)."""
    return [one_line(line, limit) for line in report.outcomes]


def failure_lines(report: RunReport, limit: int = 300) -> list[str]:
    """One line per failed analysis: which error, and why."""
    return [f"{one_line(r.error.label, 100)}: {one_line(reason, limit)}" for r, reason in report.failures()]


def reuse_text(report: RunReport) -> str:
    """How many answers cost no investigation: from the analysis cache or the knowledge base."""
    return f"{report.count_source('cache'):,} from cache, {report.count_source('knowledge'):,} from the knowledge base"


def counts_text(report: RunReport) -> str:
    return f"{funnel_text(report)} ({reuse_text(report)})"


def route_of(result: ErrorAnalysisResult) -> str:
    return result.verdict.route if result.verdict else "-"


def confidence_of(result: ErrorAnalysisResult) -> str:
    if result.failed:
        return "failed"
    if result.analysis:
        return result.analysis.confidence
    return result.verdict.confidence if result.verdict else "-"


def title_of(result: ErrorAnalysisResult) -> str:
    return safe(result.analysis.title) if result.analysis else safe(result.error.label)


def root_cause_of(result: ErrorAnalysisResult) -> str:
    """The best statement of the cause: the analysis, else why it failed, else triage's guess."""
    if result.failed:
        return f"analysis failed: {safe(result.failure)}"
    if result.analysis and result.analysis.root_cause:
        return safe(result.analysis.root_cause)
    if result.verdict and result.verdict.likely_root_cause:
        return safe(result.verdict.likely_root_cause)
    return f"not analysed: {safe(result.failure)}" if result.failure else "no root cause recorded"


def issue_text(issue: CreatedIssueResult) -> str:
    """One issue outcome in words, with its link or its outbox file."""
    title = one_line(issue.title or issue.fingerprint, 60)
    if issue.action == "skipped":
        return f"skipped {issue.fingerprint}: {one_line(issue.reason, 80) or 'no reason given'}"
    number = f"#{issue.issue_number} " if issue.issue_number else ""
    where = issue.url or (f"outbox {issue.outbox_path}" if issue.outbox_path else "")
    return f"{issue.action} {number}{title}" + (f" ({where})" if where else "")


def pr_text(pr: CreatedPRResult) -> str:
    """The draft PR this night filed, found already open, would file offline, or skipped."""
    if pr.action == "skipped":
        return f"no draft PR: {one_line(pr.reason, 120) or 'no fix good enough'}"
    branches = f"{pr.branch} -> {pr.base_branch}" if pr.branch else ""
    if not pr.url and pr.diff_path:
        return f"draft PR would be filed ({branches}); diff written to {pr.diff_path}"
    verb = "opened" if pr.action == "created" else "already open"
    number = f" #{pr.pr_number}" if pr.pr_number else ""
    return f"draft PR{number} {verb}: {pr.url or 'no url'}" + (f" ({branches})" if branches else "")


def has_followup(report: RunReport) -> bool:
    return bool(report.issues) or report.pr is not None


def token_parts(tokens: TokenUsage) -> list[tuple[str, int]]:
    return [
        ("input", tokens.input),
        ("output", tokens.output),
        ("cache write", tokens.cache_write),
        ("cache read", tokens.cache_read),
        ("thinking", tokens.thinking),
        ("total", tokens.total),
    ]


# the terminal summary ------------------------------------------------------------------------
def text_summary(report: RunReport, color: bool = False) -> str:
    """The end-of-run summary for a terminal; ANSI colour only when asked for."""
    paint = _painter(color)
    sections = [
        _header(report, paint),
        _regressions(report, paint),
        _failed(report, paint),
        _sources(report, paint),
        _steps(report, paint),
        _errors_table(report),
        context_table(report),
        _findings(report),
        _followup(report),
        _outcomes(report),
        _advice(report),
        _totals(report),
        _warnings(report, paint),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections if lines) + "\n"


def _painter(color: bool) -> Paint:
    def paint(text: str, style: str) -> str:
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if color else text

    return paint


def _header(report: RunReport, paint: Paint) -> list[str]:
    lines = [paint(f"NightWatch run {report.run_id}", "bold"), "=" * WIDTH]
    lines.append(f"window  {window_text(report.window)}")
    lines.append(f"mode    {report.mode}" + (f" · agent {report.agent}" if report.agent else ""))
    if report.model:
        lines.append(f"model   {report.model}")
    lines += [paint(f"*** {label} ***", "yellow") for label in run_labels(report)]
    return lines


def _regressions(report: RunReport, paint: Paint) -> list[str]:
    lines = regression_lines(report)
    return [paint(regression_heading(report).upper(), "red")] + _bullets(lines) if lines else []


def _outcomes(report: RunReport) -> list[str]:
    lines = outcome_lines(report)
    return ["What happened to what NightWatch filed"] + _bullets(lines) if lines else []


def _failed(report: RunReport, paint: Paint) -> list[str]:
    if report.succeeded:
        return []
    lines = [paint(status_line(report), "red")]
    return lines + _bullets(failure_lines(report))


def _sources(report: RunReport, paint: Paint) -> list[str]:
    if not report.sources:
        return []
    lines = ["Sources"]
    for s in report.sources:
        state = STATE_LABELS[s.state]
        styled = paint(f"{state:<16}", "red" if s.state == "misconfigured" else "dim")
        lines += _wrapped(f"  {s.name:<12} {styled}", one_line(s.detail, 300), indent=31)
    return lines


def _steps(report: RunReport, paint: Paint) -> list[str]:
    if not report.steps:
        return []
    styles = {"ok": "green", "cached": "dim", "skipped": "dim", "failed": "red"}
    lines = ["Steps"]
    for s in report.steps:
        status = paint(f"{s.status:<8}", styles[s.status])
        lines += _wrapped(f"  {s.step:>4} {s.name:<18} {status}", one_line(s.detail, 300), indent=34)
    return lines


def _wrapped(head: str, detail: str, indent: int) -> list[str]:
    """`head` then `detail`, continued on indented lines so nothing runs past WIDTH."""
    if not detail:
        return [head.rstrip()]
    body = textwrap.wrap(detail, width=WIDTH - indent) or [""]
    return [f"{head} {body[0]}"] + [" " * indent + line for line in body[1:]]


_ROW = "{:>3} {:<30} {:>6} {:<9} {:<6} {:>3} {:>8} {:>8}"


def _errors_table(report: RunReport) -> list[str]:
    lines = [f"Errors  {funnel_text(report)}", f"        {reuse_text(report)}"]
    if not report.results:
        return lines
    lines += ["", _ROW.format("#", "error", "occ", "route", "conf", "it", "tokens", "cost"), "-" * WIDTH]
    for rank, r in enumerate(report.results, 1):
        occurrences = shorten(f"{r.error.occurrences:,}", 6)
        lines.append(
            _ROW.format(rank, one_line(r.error.error_class, 30), occurrences, route_of(r), confidence_of(r),
                        r.iterations, f"{r.tokens.total:,}", money(r.cost_usd))
        )
        lines.append(f"    in {one_line(r.error.transaction, WIDTH - 7)}")
    return lines + _noise(report)


def _noise(report: RunReport) -> list[str]:
    if not report.noise:
        return []
    return ["", "Dropped as noise"] + [line for text in noise_lines(report) for line in _wrapped("  -", text, 4)]


_CONTEXT_ROW = "{:>3} {:>3} {:>7} {:>7} {:>8} {:>8} {:>4} {:>5} {:>8} {:>4} {:>8}"
_CODE_TOOLS = ("read_file", "search_code", "list_directory")


def context_table(report: RunReport) -> list[str]:
    """Per investigation: iterations, tokens by kind, cache hit rate, context edits, compactions, cost."""
    rows = [(rank, r) for rank, r in enumerate(report.results, 1) if r.iterations and r.source != "cache"]
    if not rows:
        return []
    lines = ["Context per investigation",
             _CONTEXT_ROW.format("#", "it", "input", "output", "c.write", "c.read", "hit", "edits", "cleared", "comp", "cost"),
             "-" * WIDTH]
    for rank, r in rows:
        t, calls = r.tokens, r.model_calls
        prompt = t.input + t.cache_write + t.cache_read
        lines.append(_CONTEXT_ROW.format(rank, r.iterations, f"{t.input:,}", f"{t.output:,}", f"{t.cache_write:,}", f"{t.cache_read:,}",
                                         f"{t.cache_read / prompt:.0%}" if prompt else "-", sum(c.edits_applied for c in calls),
                                         f"{sum(c.tokens_cleared for c in calls):,}", sum(c.compactions for c in calls), money(r.cost_usd)))
    code = [c for r in report.results if r.source != "cache" for c in r.tool_calls if c.name in _CODE_TOOLS]
    if code:
        lines.append(f"    code cache: {sum(c.cached for c in code):,} of {len(code):,} reads answered from the cache "
                     f"({sum(c.cached for c in code) / len(code):.0%})")
    return lines


def _findings(report: RunReport) -> list[str]:
    results = analysed(report)[:TOP_FINDINGS]
    if not results:
        return []
    lines = ["Findings"]
    for rank, r in enumerate(results, 1):
        lines.append(f"{rank:>3}. {one_line(title_of(r), WIDTH - 5)}")
        reason = one_line(r.verdict.route_reason, 120) if r.verdict else ""
        route = f"[{r.source}] route {route_of(r)}, confidence {confidence_of(r)}" + (f": {reason}" if reason else "")
        lines += _indented(route) + _indented(shorten(one_line(root_cause_of(r), 600), 360))
    return lines


def _indented(text: str) -> list[str]:
    return textwrap.wrap(text, width=WIDTH, initial_indent="     ", subsequent_indent="     ")


def _followup(report: RunReport) -> list[str]:
    if not has_followup(report):
        return []
    lines = ["Issues and draft PR"]
    lines += _bullets([issue_text(i) for i in report.issues])
    if report.pr:
        lines += _bullets([pr_text(report.pr)])
    verified = verification_lines(report)
    return lines + (["", "Fixes verified in the sandbox"] + _bullets(verified) if verified else [])


def _advice(report: RunReport) -> list[str]:
    lines: list[str] = []
    if report.patterns:
        lines.append("Patterns")
        for p in report.patterns[:TOP_ADVICE]:
            text = f"{one_line(p.title, 80)} ({p.occurrences:,} occurrences): {one_line(p.description, 240)}"
            lines += _bullets([text + (f" (suggestion: {one_line(p.suggestion, 200)})" if p.suggestion else "")])
    if report.ignore_suggestions:
        lines += ([""] if lines else []) + ["Ignore suggestions"]
        items = [f"'{one_line(s.pattern, 60)}' ({s.match}): {one_line(s.reason, 200)}" for s in report.ignore_suggestions]
        lines += _bullets(items[:TOP_ADVICE])
    return lines


def _bullets(items: list[str]) -> list[str]:
    lines: list[str] = []
    for item in items:
        lines += textwrap.wrap(item, width=WIDTH, initial_indent="  - ", subsequent_indent="    ",
                               break_long_words=False, break_on_hyphens=False)
    return lines


def _totals(report: RunReport) -> list[str]:
    t = report.totals
    tokens = " · ".join(f"{name} {value:,}" for name, value in token_parts(t.tokens))
    lines = ["Totals"] + textwrap.wrap(f"tokens: {tokens}", width=WIDTH, initial_indent="  ", subsequent_indent="    ")
    lines.append(f"  cost {money(t.cost_usd)} · {t.model_calls:,} model calls · {t.iterations:,} iterations")
    if report.offline_model:
        lines.append("  (offline model: nothing was billed)")
    return lines


def _warnings(report: RunReport, paint: Paint) -> list[str]:
    if not report.warnings:
        return []
    return [paint("Warnings", "yellow")] + _bullets([one_line(w, 400) for w in report.warnings])
