"""Renderers: the terminal summary, the Markdown artifact and the Slack blocks of a RunReport."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from nightwatch.models import (
    Analysis,
    CreatedIssueResult,
    CreatedPRResult,
    DetectedPattern,
    ErrorAnalysisResult,
    ErrorGroup,
    IgnoreSuggestion,
    RunReport,
    RunTotals,
    SourceStatus,
    StepOutcome,
    TokenUsage,
    TriageVerdict,
    Window,
)
from nightwatch.render.blocks import fallback_text, fit, followup_blocks, report_blocks
from nightwatch.render.markdown import followup_markdown, report_markdown
from nightwatch.render.summary import text_summary

END = datetime(2025, 3, 14, 6, 0, tzinfo=timezone.utc)
GITHUB_SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
SLACK_SECRET = "xoxb-" + "1234567890-abcdefghijkl"
OFFLINE_LABEL = "OFFLINE MODEL (deterministic, no tokens billed)"


def make_result(i: int, source: str = "model", root_cause: str | None = None, **error: object) -> ErrorAnalysisResult:
    group = ErrorGroup(
        error_class=str(error.get("error_class", f"ActiveRecord::RecordNotFound{i}")),
        transaction=str(error.get("transaction", f"Controller/orders/show{i}")),
        message=f"Couldn't find Order with id={i}",
        occurrences=100 - i,
    )
    verdict = TriageVerdict(fingerprint=group.fingerprint, route="deep", route_reason="needs code reading", confidence="medium")
    analysis = Analysis(
        title=f"Order lookup fails for deleted orders ({i})",
        reasoning="The controller calls find on a soft-deleted record.",
        root_cause=root_cause or f"OrdersController#show uses find instead of find_by ({i}).",
        has_fix=True,
        confidence="high",
    )
    return ErrorAnalysisResult(
        run_id="run-1", error=group, verdict=verdict, analysis=analysis, source=source,  # type: ignore[arg-type]
        iterations=4, tokens=TokenUsage(input=9000, output=1200, cache_read=3000), cost_usd=0.0421,
    )


def make_report(*, demo: bool = False, offline: bool = False, results: list[ErrorAnalysisResult] | None = None,
                **extra: object) -> RunReport:
    results = results if results is not None else [
        make_result(1), make_result(2, source="cache"), make_result(3, source="knowledge"),
    ]
    fields: dict[str, object] = dict(
        run_id="run-20250314-0600",
        started_at=END,
        window=Window.ending_at(END, timedelta(hours=24)),
        demo_data=demo,
        offline_model=offline,
        sources=[
            SourceStatus(name="errors", state="live", detail="New Relic account 12345, app storefront"),
            SourceStatus(name="slack", state="offline", detail="no SLACK_BOT_TOKEN: report written to files"),
            SourceStatus(name="github", state="misconfigured", detail="GITHUB_TOKEN set but GITHUB_REPOSITORY missing"),
        ],
        steps=[
            StepOutcome(step="2", name="fetch_errors", status="ok", detail="12 errors"),
            StepOutcome(step="10", name="propose_fix", status="failed", detail="patch did not apply"),
        ],
        errors_found=12,
        errors_ignored=3,
        errors_selected=8,
        results=results,
        issues=[
            CreatedIssueResult(fingerprint="aaaa", action="created", issue_number=41, url="https://github.com/acme/shop/issues/41", title="Order lookup fails"),
            CreatedIssueResult(fingerprint="bbbb", action="commented", issue_number=7, url="https://github.com/acme/shop/issues/7", title="Timeout in checkout"),
            CreatedIssueResult(fingerprint="cccc", action="skipped", reason="open-issue limit reached"),
        ],
        pr=CreatedPRResult(fingerprint="aaaa", action="created", pr_number=42, url="https://github.com/acme/shop/pull/42", branch="nightwatch/fix-aaaa", base_branch="develop"),
        patterns=[DetectedPattern(title=f"Pattern {n}", description=f"seen {n} times", occurrences=n, suggestion=f"do {n}", pattern_type="recurring_error") for n in range(1, 6)],
        ignore_suggestions=[IgnoreSuggestion(pattern=f"Net::ReadTimeout{n}", reason=f"transient {n}", evidence="always low confidence") for n in range(1, 5)],
        totals=RunTotals(tokens=TokenUsage(input=27000, output=3600, cache_write=500, cache_read=9000, thinking=800), cost_usd=0.1263, model_calls=9, iterations=12),
        warnings=["knowledge index was rebuilt"],
    )
    fields.update(extra)
    return RunReport(**fields)  # type: ignore[arg-type]


def all_slack_text(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


# labels --------------------------------------------------------------------------------------
def test_demo_and_offline_labels_appear_everywhere_when_set() -> None:
    report = make_report(demo=True, offline=True)
    for text in (text_summary(report), report_markdown(report), all_slack_text(report_blocks(report)), fallback_text(report)):
        assert "DEMO DATA" in text
        assert OFFLINE_LABEL in text


def test_demo_and_offline_labels_absent_when_unset() -> None:
    report = make_report()
    for text in (text_summary(report), report_markdown(report), all_slack_text(report_blocks(report)), fallback_text(report)):
        assert "DEMO DATA" not in text
        assert "OFFLINE MODEL" not in text


# the terminal summary ------------------------------------------------------------------------
def test_summary_counts_sources_and_steps() -> None:
    text = text_summary(make_report())
    assert "12 found · 3 ignored · 8 selected · 3 analysed\n" in text
    assert "1 from cache, 1 from the knowledge base" in text
    assert "offline default" in text and "misconfigured" in text and "GITHUB_REPOSITORY missing" in text
    assert "propose_fix" in text and "failed" in text and "patch did not apply" in text
    assert "run-20250314-0600" in text and "2025-03-13 06:00 UTC to 2025-03-14 06:00 UTC (24h)" in text


def test_summary_error_table_has_one_row_per_result() -> None:
    report = make_report(results=[make_result(i) for i in range(1, 6)])
    text = text_summary(report)
    rows = [line for line in text.splitlines() if "RecordNotFound" in line]
    assert len(rows) == 5
    assert rows[0].split()[0] == "1" and "deep" in rows[0] and "high" in rows[0]
    assert "13,200" in rows[0] and "$0.0421" in rows[0] and "99" in rows[0]
    assert "Controller/orders/show1" in text.splitlines()[text.splitlines().index(rows[0]) + 1]


def test_summary_stays_within_80_columns_even_with_long_text() -> None:
    long = make_result(1, root_cause="x " * 2000, error_class="Very::Long::" * 20, transaction="Controller/" + "a" * 300)
    text = text_summary(make_report(results=[long], warnings=["w " * 500]))
    assert max(len(line) for line in text.splitlines()) <= 80


def test_summary_issues_pr_patterns_and_totals() -> None:
    text = text_summary(make_report())
    assert "created #41" in text and "commented #7" in text and "open-issue limit reached" in text
    assert "draft PR #42 opened: https://github.com/acme/shop/pull/42" in text and "develop" in text
    assert "Pattern 3" in text and "Pattern 4" not in text
    assert "Net::ReadTimeout3" in text and "Net::ReadTimeout4" not in text
    assert "input 27,000" in text and "cache write 500" in text and "thinking 800" in text
    assert "$0.1263" in text and "9 model calls" in text
    assert "knowledge index was rebuilt" in text


def test_summary_names_outbox_files_when_offline() -> None:
    report = make_report(
        offline=True,
        issues=[CreatedIssueResult(fingerprint="aaaa", action="created", title="Order lookup fails", outbox_path="/h/outbox/issues/aaaa.md")],
        pr=CreatedPRResult(fingerprint="aaaa", action="created", branch="nightwatch/fix-aaaa", base_branch="main", diff_path="/h/outbox/prs/aaaa.diff"),
    )
    text = text_summary(report)
    assert "/h/outbox/issues/aaaa.md" in text
    assert "would be filed" in text and "/h/outbox/prs/aaaa.diff" in text


def test_summary_colour_only_on_request_and_production_escapes_removed() -> None:
    report = make_report(results=[make_result(1, root_cause="boom \x1b[2J\x1b]0;pwned\x07 here")])
    assert "\x1b" not in text_summary(report)
    assert "\x1b[" in text_summary(report, color=True)
    assert "pwned" in text_summary(report) and "\x07" not in text_summary(report)


# secrets and escaping --------------------------------------------------------------------------
def test_secrets_in_a_root_cause_are_redacted_in_every_rendering() -> None:
    cause = f"The job posts with token={GITHUB_SECRET} and Slack {SLACK_SECRET} in the URL"
    report = make_report(results=[make_result(1, root_cause=cause)])
    renderings = {
        "summary": text_summary(report),
        "markdown": report_markdown(report),
        "blocks": all_slack_text(report_blocks(report)),
    }
    for name, text in renderings.items():
        assert GITHUB_SECRET not in text, name
        assert SLACK_SECRET not in text, name
        assert "[REDACTED]" in text, name


def test_slack_text_is_mrkdwn_escaped() -> None:
    cause = "<!channel> look at <http://evil.example|this> & that"
    blocks = report_blocks(make_report(results=[make_result(1, root_cause=cause)]))
    text = all_slack_text(blocks)
    assert "<!channel>" not in text and "<http://evil" not in text
    assert "&lt;!channel&gt;" in text and "&amp; that" in text


def test_markdown_tables_survive_pipes_and_html() -> None:
    result = make_result(1, error_class="Weird|Error", transaction="Controller/<script>alert(1)</script>")
    text = report_markdown(make_report(results=[result]))
    assert "Weird\\|Error" in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    header = next(line for line in text.splitlines() if line.startswith("| # |"))
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))
    assert row.replace("\\|", "").count("|") == header.count("|")


# Slack limits ------------------------------------------------------------------------------------
def test_blocks_respect_slack_limits_with_40_results_and_huge_root_causes() -> None:
    results = [make_result(i, root_cause=f"cause {i} " + "lorem ipsum & <dolor> " * 600) for i in range(40)]
    report = make_report(
        demo=True, offline=True, results=results, run_id="r" * 400,
        patterns=[DetectedPattern(title="T" * 5000, description="d" * 9000, suggestion="s" * 9000, pattern_type="systemic_issue")] * 10,
        ignore_suggestions=[IgnoreSuggestion(pattern="p" * 5000, reason="r" * 5000, evidence="e")] * 10,
        warnings=["w" * 5000] * 20,
    )
    blocks = report_blocks(report)
    assert len(blocks) <= 50
    for block in blocks:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        if block["type"] == "context":
            assert 1 <= len(block["elements"]) <= 10
            assert all(len(e["text"]) <= 3000 for e in block["elements"])
    findings = [b for b in blocks if b["type"] == "section" and "route *deep*" in b["text"]["text"]]
    assert len(findings) == 10
    assert "…" in findings[0]["text"]["text"]
    assert "…and 30 more" in all_slack_text(blocks)


def test_pattern_and_ignore_sections_follow_the_seed_layout() -> None:
    texts = [b["text"]["text"] for b in report_blocks(make_report()) if b["type"] == "section"]
    start = texts.index("*:mag: Detected Patterns*")
    assert texts[start + 1] == "*Pattern 1*\nseen 1 times\n_Suggestion: do 1_"
    assert [t for t in texts if t.startswith("*Pattern")] == ["*Pattern 1*\nseen 1 times\n_Suggestion: do 1_",
                                                             "*Pattern 2*\nseen 2 times\n_Suggestion: do 2_",
                                                             "*Pattern 3*\nseen 3 times\n_Suggestion: do 3_"]
    ignore = next(t for t in texts if t.startswith("*:mute: Suggested Ignore Additions*"))
    assert ignore.count("•") == 3 and "`Net::ReadTimeout1`" in ignore


def test_footer_carries_the_totals() -> None:
    footer = report_blocks(make_report(offline=True))[-1]
    assert footer["type"] == "context"
    text = " ".join(e["text"] for e in footer["elements"])
    assert "input 27,000" in text and "$0.1263" in text and "9 model calls" in text and "nothing billed" in text


@pytest.mark.parametrize("tail", ["&amp;&amp;", "&lt;&gt;x"])
def test_fit_never_cuts_an_escape_entity_in_half(tail: str) -> None:
    text = "a" * 2996 + tail
    cut = fit(text, 3000)
    assert len(cut) <= 3000 and cut.endswith("…")
    assert not any(cut[:-1].endswith(partial) for partial in ("&", "&a", "&am", "&amp", "&l", "&lt", "&g", "&gt"))


# follow-up ---------------------------------------------------------------------------------------
def test_followup_links_issues_and_pr() -> None:
    report = make_report()
    text = all_slack_text(followup_blocks(report))
    assert "<https://github.com/acme/shop/issues/41|#41 Order lookup fails>" in text
    assert "<https://github.com/acme/shop/pull/42|#42>" in text and "open-issue limit reached" in text
    md = followup_markdown(report)
    assert "[#41 Order lookup fails](https://github.com/acme/shop/issues/41)" in md
    assert "[#42](https://github.com/acme/shop/pull/42)" in md


def test_followup_is_empty_when_nothing_was_filed() -> None:
    report = make_report(issues=[], pr=None)
    assert followup_blocks(report) == []
    assert "No issues filed and no draft PR" in followup_markdown(report)


def test_followup_with_many_issues_splits_sections_within_limits() -> None:
    issues = [CreatedIssueResult(fingerprint=f"{n:04d}", action="created", issue_number=n, url=f"https://github.com/acme/shop/issues/{n}", title="t" * 140) for n in range(200)]
    blocks = followup_blocks(make_report(issues=issues))
    assert 1 < len(blocks) <= 50
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks)
