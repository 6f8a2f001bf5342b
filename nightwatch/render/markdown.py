"""Markdown renderings of a RunReport: the Prefect report artifact and the offline Slack file.

Same content as the terminal summary, laid out as tables. Production text is made safe
(`summary.safe`) and escaped so it cannot break a table or smuggle HTML into the page.
"""

from __future__ import annotations

from pathlib import Path

from nightwatch.models import CreatedIssueResult, CreatedPRResult, RunReport
from nightwatch.render.neutral import no_links, no_mentions
from nightwatch.render.summary import (
    STATE_LABELS,
    TOP_ADVICE,
    TOP_FINDINGS,
    analysed,
    confidence_of,
    counts_text,
    failure_lines,
    has_followup,
    money,
    noise_lines,
    one_line,
    outcome_lines,
    regression_heading,
    regression_lines,
    root_cause_of,
    route_of,
    run_labels,
    shorten,
    status_line,
    title_of,
    token_parts,
    verification_lines,
    window_text,
)


def md(text: str) -> str:
    """Escape text for a Markdown table cell or paragraph: pipes, HTML brackets, line breaks."""
    escaped = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(no_links(no_mentions(escaped)).split())


def cell(text: str | None, limit: int = 120) -> str:
    """Production text as one escaped table cell."""
    return md(one_line(text, limit))


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def report_markdown(report: RunReport) -> str:
    """The whole night as Markdown."""
    sections = [
        _header(report),
        _regressions(report),
        _failures(report),
        _sources(report),
        _steps(report),
        _errors(report),
        _findings(report),
        _followup_section(report),
        _outcomes(report),
        _patterns(report),
        _ignore_suggestions(report),
        _totals(report),
        _trend(report),
        _warnings(report),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections if lines) + "\n"


def followup_markdown(report: RunReport) -> str:
    """The issues and the draft PR of the night, as links (or outbox files when offline)."""
    lines = [f"# NightWatch follow-up: run `{report.run_id}`", ""]
    lines += _followup_lines(report) or ["No issues filed and no draft PR for this run."]
    return "\n".join(lines) + "\n"


def _header(report: RunReport) -> list[str]:
    lines = [f"# NightWatch report: run `{report.run_id}`", ""]
    lines += [f"> **{label}**" for label in run_labels(report)]
    details = [f"**Window** {window_text(report.window)}", f"**Mode** {report.mode}"]
    details += [f"**Agent** {md(report.agent)}"] if report.agent else []
    details += [f"**Model** {md(report.model)}"] if report.model else []
    return lines + ([""] if run_labels(report) else []) + [" · ".join(details)]


def _regressions(report: RunReport) -> list[str]:
    lines = regression_lines(report)
    return [f"## {regression_heading(report)}", ""] + [f"- **{md(line)}**" for line in lines] if lines else []


def _outcomes(report: RunReport) -> list[str]:
    lines = outcome_lines(report)
    return ["## What happened to what NightWatch filed", ""] + [f"- {md(line)}" for line in lines] if lines else []


def _trend(report: RunReport) -> list[str]:
    if not report.trend_svg:
        return []
    return ["## Trend", "", f"[Cost per night and cache hit rate, last 30 nights]({Path(report.trend_svg).resolve().as_uri()}) "
            f"(`{md(report.trend_svg)}`; `nightwatch metrics` prints the figures)"]


def _failures(report: RunReport) -> list[str]:
    if report.succeeded:
        return []
    lines = [f"> **{md(status_line(report))}**", ""]
    return lines + [f"- {md(line)}" for line in failure_lines(report)]


def _sources(report: RunReport) -> list[str]:
    if not report.sources:
        return []
    rows = [[md(s.name), STATE_LABELS[s.state], cell(s.detail, 300)] for s in report.sources]
    return ["## Sources", ""] + table(["source", "state", "detail"], rows)


def _steps(report: RunReport) -> list[str]:
    if not report.steps:
        return []
    rows = [[md(s.step), md(s.name), s.status, cell(s.detail, 300)] for s in report.steps]
    return ["## Steps", ""] + table(["step", "name", "outcome", "detail"], rows)


def _errors(report: RunReport) -> list[str]:
    lines = ["## Errors", "", counts_text(report)]
    if not report.results:
        return lines
    headers = ["#", "error", "transaction", "occurrences", "route", "confidence", "iterations", "tokens", "cost"]
    rows = [
        [str(rank), cell(r.error.error_class, 80), cell(r.error.transaction, 80), f"{r.error.occurrences:,}",
         route_of(r), confidence_of(r), str(r.iterations), f"{r.tokens.total:,}", money(r.cost_usd)]
        for rank, r in enumerate(report.results, 1)
    ]
    return lines + [""] + table(headers, rows) + _noise(report)


def _noise(report: RunReport) -> list[str]:
    if not report.noise:
        return []
    return ["", "Dropped as noise:", ""] + [f"- {md(line)}" for line in noise_lines(report)]


def _findings(report: RunReport) -> list[str]:
    results = analysed(report)[:TOP_FINDINGS]
    if not results:
        return []
    lines = ["## Findings"]
    for rank, r in enumerate(results, 1):
        reason = f": {cell(r.verdict.route_reason, 200)}" if r.verdict and r.verdict.route_reason else ""
        lines += [
            "",
            f"### {rank}. {cell(title_of(r), 150)}",
            "",
            f"`{cell(r.error.error_class, 80)}` in `{cell(r.error.transaction, 80)}` · "
            f"**route** {route_of(r)}{reason} · **confidence** {confidence_of(r)} · answered by {r.source}",
            "",
            md(shorten(root_cause_of(r), 1500)),
        ]
        if r.release_window is not None:
            lines += ["", cell(r.release_window.line, 300)]
    return lines


def _followup_section(report: RunReport) -> list[str]:
    lines = _followup_lines(report)
    verified = [f"- {md(line)}" for line in verification_lines(report)]
    return (["## Issues and draft PR", ""] + lines if lines else []) + (
        ["", "## Fixes verified in the sandbox", ""] + verified if verified else [])


def _followup_lines(report: RunReport) -> list[str]:
    if not has_followup(report):
        return []
    lines = [f"- {_issue_link(i)}" for i in report.issues]
    return lines + ([f"- {_pr_link(report.pr)}"] if report.pr else [])


def _issue_link(issue: CreatedIssueResult) -> str:
    title = cell(issue.title or issue.fingerprint, 100)
    if issue.action == "skipped":
        return f"skipped `{issue.fingerprint}`: {cell(issue.reason, 200) or 'no reason given'}"
    label = f"#{issue.issue_number} {title}" if issue.issue_number else title
    if issue.url:
        return f"{issue.action} [{label}]({issue.url})"
    return f"{issue.action} {label}" + (f" (outbox `{issue.outbox_path}`)" if issue.outbox_path else "")


def _pr_link(pr: CreatedPRResult) -> str:
    if pr.action == "skipped":
        return f"no draft PR: {cell(pr.reason, 200) or 'no fix good enough'}"
    branches = f" (`{md(pr.branch)}` → `{md(pr.base_branch)}`)" if pr.branch else ""
    if not pr.url:
        where = f"; diff in `{pr.diff_path}`" if pr.diff_path else ""
        return f"draft PR would be filed{branches}{where}"
    verb = "opened" if pr.action == "created" else "already open"
    return f"draft PR {verb}: [#{pr.pr_number or '?'}]({pr.url}){branches}"


def _patterns(report: RunReport) -> list[str]:
    if not report.patterns:
        return []
    lines = ["## Detected patterns"]
    for p in report.patterns[:TOP_ADVICE]:
        lines += ["", f"**{cell(p.title, 150)}** ({p.occurrences:,} occurrences, {p.pattern_type})", "",
                  cell(p.description, 600)]
        lines += ["", f"_Suggestion: {cell(p.suggestion, 400)}_"] if p.suggestion else []
    return lines


def _ignore_suggestions(report: RunReport) -> list[str]:
    if not report.ignore_suggestions:
        return []
    rows = [[f"`{cell(s.pattern, 80)}`", s.match, cell(s.reason, 200), cell(s.evidence, 200)]
            for s in report.ignore_suggestions[:TOP_ADVICE]]
    return ["## Suggested ignore additions", ""] + table(["pattern", "match", "reason", "evidence"], rows)


def _totals(report: RunReport) -> list[str]:
    t = report.totals
    parts = token_parts(t.tokens)
    lines = ["## Totals", ""] + table([name for name, _ in parts], [[f"{value:,}" for _, value in parts]])
    lines += ["", f"Cost {money(t.cost_usd)} · {t.model_calls:,} model calls · {t.iterations:,} iterations"]
    return lines + (["", "_Offline model: nothing was billed._"] if report.offline_model else [])


def _warnings(report: RunReport) -> list[str]:
    if not report.warnings:
        return []
    return ["## Warnings", ""] + [f"- {cell(w, 400)}" for w in report.warnings]
