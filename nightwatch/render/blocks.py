"""Slack Block Kit for the nightly report and its follow-up.

Slack rejects a whole message (`invalid_blocks`) when one block breaks a limit, so every block is
built within them: at most 50 blocks, section text at most 3,000 characters, header text at most
150, context at most 10 elements. Production text is redacted (`summary.safe`) and mrkdwn-escaped
(&, <, >) so an error message can neither leak a secret nor ping @channel or forge a link.
"""

from __future__ import annotations

from typing import Any

from nightwatch.models import CreatedIssueResult, CreatedPRResult, ErrorAnalysisResult, RunReport
from nightwatch.render.neutral import no_links, no_mentions
from nightwatch.render.summary import (
    DEMO_LABEL,
    DRY_RUN_LABEL,
    OFFLINE_LABEL,
    STATE_LABELS,
    TOP_ADVICE,
    TOP_FINDINGS,
    analysed,
    confidence_of,
    counts_text,
    failure_lines,
    has_followup,
    money,
    one_line,
    regression_heading,
    regression_lines,
    root_cause_of,
    route_of,
    run_labels,
    shorten,
    status_line,
    title_of,
    token_parts,
    window_text,
)

Block = dict[str, Any]
MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_CONTEXT_ELEMENTS = 10
ROUTE_ICONS = {"known": ":books:", "transient": ":cloud:", "simple": ":wrench:", "deep": ":mag_right:"}


# Slack text primitives ------------------------------------------------------------------------
def escape(text: str) -> str:
    """Slack mrkdwn escaping: the only three characters Slack asks to be escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def prod(text: str | None, limit: int) -> str:
    """Production text for mrkdwn: one line, redacted, shortened, escaped, no mention or link left live."""
    return no_links(no_mentions(escape(one_line(text, limit))))


def code(text: str | None, limit: int) -> str:
    """Production text as an inline code span (kept copy-pasteable); a backtick inside would end the span early."""
    return "`" + escape(one_line(text, limit)).replace("`", "'") + "`"


def fit(text: str, limit: int = MAX_SECTION) -> str:
    """Shorten to `limit` with an ellipsis, never leaving half an escape entity behind."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    amp = cut.rfind("&", max(len(cut) - 5, 0))
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut.rstrip() + "…"


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": shorten(text, MAX_HEADER), "emoji": True}}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": fit(text)}}


def context(*texts: str) -> Block:
    elements = [{"type": "mrkdwn", "text": fit(t)} for t in texts if t][:MAX_CONTEXT_ELEMENTS]
    return {"type": "context", "elements": elements}


def divider() -> Block:
    return {"type": "divider"}


def cap_blocks(blocks: list[Block]) -> list[Block]:
    """Keep within Slack's 50 blocks; the last block (the footer) always survives."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    return blocks[: MAX_BLOCKS - 1] + [blocks[-1]]


def pack_sections(title: str, lines: list[str]) -> list[Block]:
    """Lines under a bold title, split over as many sections as 3,000 characters require."""
    blocks: list[Block] = []
    current = f"*{title}*"
    for line in (fit(line, MAX_SECTION - len(title) - 10) for line in lines):
        if len(current) + len(line) + 1 > MAX_SECTION:
            blocks.append(section(current))
            current = ""
        current = f"{current}\n{line}" if current else line
    return blocks + [section(current)]


# the report ---------------------------------------------------------------------------------
def report_blocks(report: RunReport) -> list[Block]:
    """The nightly report: header, labels, counts, top findings, patterns, ignore suggestions, totals."""
    blocks = [header(_headline(report)), context(*_labels(report)), section(f"*Errors:* {counts_text(report)}")]
    if report.sources:
        blocks.append(context(*(f"{escape(s.name)}: *{STATE_LABELS[s.state]}*" for s in report.sources)))
    blocks += _regressions(report) + _failures(report) + _findings(report) + _patterns(report) + _ignore_suggestions(report) + _warnings(report)
    blocks += [divider(), _footer(report)]
    return cap_blocks(blocks)


def _regressions(report: RunReport) -> list[Block]:
    lines = regression_lines(report)
    if not lines:
        return []
    return [section(f"*:rotating_light: {regression_heading(report)}*\n" + "\n".join(f"• {escape(line)}" for line in lines))]


def fallback_text(report: RunReport) -> str:
    """The notification text (and what screen readers read) when blocks are not shown."""
    labels = "".join(f" [{label}]" for label in run_labels(report))
    failed = f", {report.errors_failed} FAILED" if report.errors_failed else ""
    back = f"{len(report.regressions)} REGRESSION(S), " if report.regressions else ""
    return (
        f"NightWatch {window_text(report.window)}: {back}{len(analysed(report))} errors analysed{failed} "
        f"({report.errors_found} found, {report.errors_selected} selected){labels}"
    )


def _headline(report: RunReport) -> str:
    prefix = "[DEMO] " if report.demo_data else ""
    failed = f", {report.errors_failed} failed" if report.errors_failed else ""
    return f"{prefix}NightWatch nightly report: {len(analysed(report))} errors analysed{failed}"


def _failures(report: RunReport) -> list[Block]:
    """First thing after the counts: a night that did not do its job says so, error by error."""
    if report.succeeded:
        return []
    lines = [f"• {prod(line, 400)}" for line in failure_lines(report)[:10]]
    lines += [f"• step {escape(step)} failed" for step in report.steps_failed]
    more = report.errors_failed - 10
    text = f"*:rotating_light: {escape(status_line(report))}*\n" + "\n".join(lines) + (f"\n…and {more} more" if more > 0 else "")
    return [divider(), section(fit(text))]


def _labels(report: RunReport) -> list[str]:
    texts = [f":calendar: {window_text(report.window)}", f"mode *{report.mode}*", f"run `{escape(report.run_id)}`"]
    flags = [
        (report.demo_data, f":test_tube: *{DEMO_LABEL}*"),
        (report.offline_model, f":robot_face: *{OFFLINE_LABEL}*"),
        (report.dry_run, f":no_entry_sign: *{DRY_RUN_LABEL}*"),
    ]
    return texts + [text for on, text in flags if on]


def _findings(report: RunReport) -> list[Block]:
    results = analysed(report)
    blocks = [divider()] if results else []
    blocks += [section(_finding_text(rank, r)) for rank, r in enumerate(results[:TOP_FINDINGS], 1)]
    if len(results) > TOP_FINDINGS:
        blocks.append(context(f"…and {len(results) - TOP_FINDINGS} more in the full report."))
    return blocks


def _finding_text(rank: int, r: ErrorAnalysisResult) -> str:
    icon = ROUTE_ICONS.get(route_of(r), ":grey_question:")
    reason = f" ({prod(r.verdict.route_reason, 200)})" if r.verdict and r.verdict.route_reason else ""
    where = f"{code(r.error.error_class, 120)} in {code(r.error.transaction, 160)}"
    stats = f"{r.error.occurrences:,} occurrences · {r.iterations} iterations · {r.tokens.total:,} tokens · {money(r.cost_usd)}"
    return (
        f"*{rank}. {prod(title_of(r), 200)}*\n{where}\n"
        f"{icon} route *{route_of(r)}*{reason} · confidence *{confidence_of(r)}* · from {r.source}\n"
        f"{stats}{_suspect(r)}\n>{prod(root_cause_of(r), 2000)}"
    )


def _suspect(r: ErrorAnalysisResult) -> str:
    """The release that brought it, where known, and the best suspect commit, when there is one: its sha, PR and
    author (commit text is untrusted, made inert)."""
    release = f"\n{prod(r.release_window.line, 200)}" if r.release_window is not None else ""
    if not r.suspect_commits:
        return release
    s = r.suspect_commits[0]
    pr = f", PR #{s.pr_number}" if s.pr_number else ""
    since = f" deploy {code(s.deploy, 40)}" if s.deploy else ""
    after = f", first seen {s.first_seen_after} after{since}" if s.first_seen_after else ""
    return f"{release}\n{s.confidence}: introduced by {code(s.sha[:12], 12)} ({prod(s.author, 60) or 'unknown'}{pr}){after}"


def _patterns(report: RunReport) -> list[Block]:
    if not report.patterns:
        return []
    blocks = [divider(), section("*:mag: Detected Patterns*")]
    for p in report.patterns[:TOP_ADVICE]:
        text = f"*{prod(p.title, 200)}*\n{prod(p.description, 1500)}"
        blocks.append(section(text + (f"\n_Suggestion: {prod(p.suggestion, 800)}_" if p.suggestion else "")))
    return blocks


def _ignore_suggestions(report: RunReport) -> list[Block]:
    if not report.ignore_suggestions:
        return []
    lines = [
        f"• {code(s.pattern, 120)} ({s.match}) — {prod(s.reason, 400)}"
        for s in report.ignore_suggestions[:TOP_ADVICE]
    ]
    return [section("*:mute: Suggested Ignore Additions*\n" + "\n".join(lines))]


def _warnings(report: RunReport) -> list[Block]:
    if not report.warnings:
        return []
    lines = [f"• {prod(w, 300)}" for w in report.warnings[:5]]
    more = len(report.warnings) - 5
    return [section("*:warning: Warnings*\n" + "\n".join(lines) + (f"\n…and {more} more" if more > 0 else ""))]


def _footer(report: RunReport) -> Block:
    t = report.totals
    tokens = " · ".join(f"{name} {value:,}" for name, value in token_parts(t.tokens))
    cost = f"cost {money(t.cost_usd)}" + (" (offline model, nothing billed)" if report.offline_model else "")
    return context(f"Tokens: {tokens}", f"{cost} · {t.model_calls:,} model calls · {t.iterations:,} iterations")


# the follow-up --------------------------------------------------------------------------------
def followup_blocks(report: RunReport) -> list[Block]:
    """Issue and PR links, posted in the report's thread; empty when there is nothing to follow up."""
    if not has_followup(report):
        return []
    lines = [_issue_line(i) for i in report.issues] + ([_pr_line(report.pr)] if report.pr else [])
    lines += [f"{_VERIFIED_ICON.get(r.verification.status, '')} {code(r.error.error_class, 120)}: "
              f"*{r.verification.status}*: {prod(r.verification.reason, 300)}"
              for r in report.results if r.verification is not None]
    return cap_blocks(pack_sections("Issues and draft PR", lines))


_VERIFIED_ICON = {"verified": ":white_check_mark:", "reproduced, not fixed": ":warning:", "not reproduced": ":grey_question:",
                  "not run": ":heavy_minus_sign:"}


def _link(url: str, label: str) -> str:
    return f"<{escape(url).replace('|', '%7C')}|{label}>" if url else label


def _issue_line(issue: CreatedIssueResult) -> str:
    title = prod(issue.title or issue.fingerprint, 150)
    if issue.action == "skipped":
        return f"• skipped `{issue.fingerprint}`: {prod(issue.reason, 300) or 'no reason given'}"
    label = f"#{issue.issue_number} {title}" if issue.issue_number else title
    outbox = f" (outbox `{escape(issue.outbox_path)}`)" if issue.outbox_path and not issue.url else ""
    return f"• {issue.action} {_link(issue.url, label)}{outbox}"


def _pr_line(pr: CreatedPRResult) -> str:
    if pr.action == "skipped":
        return f"• no draft PR: {prod(pr.reason, 300) or 'no fix good enough'}"
    branches = f" (`{escape(pr.branch)}` → `{escape(pr.base_branch)}`)" if pr.branch else ""
    if not pr.url:
        where = f"; diff in `{escape(pr.diff_path)}`" if pr.diff_path else ""
        return f"• draft PR would be filed{branches}{where}"
    verb = "opened" if pr.action == "created" else "already open"
    number = f"#{pr.pr_number}" if pr.pr_number else "link"
    return f"• draft PR {verb}: {_link(pr.url, number)}{branches}"
