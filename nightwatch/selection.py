"""Step 2's core and step 7's: which errors a night looks at, and which analyses deserve an issue."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from nightwatch.ignore import IgnoreRule, apply_ignore_rules
from nightwatch.models import CONFIDENCE_RANK, ErrorAnalysisResult, ErrorGroup, Model, NoiseDrop, Window
from nightwatch.ranking import rank_errors, select_top
from nightwatch.sources.base import ErrorSource


class Selection(Model):
    source: str
    demo: bool
    found: list[ErrorGroup] = Field(default_factory=list)
    ignored: dict[str, str] = Field(default_factory=dict)  # fingerprint -> rule reason
    noise: list[NoiseDrop] = Field(default_factory=list)  # what each rule dropped
    selected: list[ErrorGroup] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def tracker_rule(source: str) -> IgnoreRule:
    """How the report names what the team ignored (muted) in Sentry or Bugsink: never investigated while it is."""
    return IgnoreRule(pattern="ignored", name=f"ignored in {source}", reason="the team ignored it in the error tracker")


def select_errors(source: ErrorSource, window: Window, rules: list[IgnoreRule], max_errors: int, now: datetime) -> Selection:
    batch = source.fetch_errors(window)
    rule = tracker_rule(source.name)
    by_team = [(e, rule) for e in batch.errors if e.tracker_status == "ignored"]
    kept, ignored = apply_ignore_rules([e for e in batch.errors if e.tracker_status != "ignored"], rules)
    ignored = by_team + ignored
    slow = [rule.timed_out for rule in rules if rule.timed_out]
    ranked = rank_errors(kept, now)
    return Selection(
        source=source.name,
        demo=source.demo,
        found=batch.errors,
        ignored={e.fingerprint: f"{rule.label} ({rule.reason})" for e, rule in ignored},
        noise=noise_drops(ignored),
        selected=select_top(ranked, max_errors),
        warnings=batch.warnings + slow,
    )


def noise_drops(ignored: list[tuple[ErrorGroup, IgnoreRule]], examples: int = 3) -> list[NoiseDrop]:
    """Per rule, in the order rules first dropped something: how many errors and occurrences, a few labels."""
    drops: dict[str, NoiseDrop] = {}
    for error, rule in ignored:
        drop = drops.setdefault(rule.label, NoiseDrop(rule=rule.label, reason=rule.reason))
        drop.errors += 1
        drop.occurrences += error.occurrences
        if len(drop.examples) < examples:
            drop.examples.append(f"{error.error_class}: {error.message[:100]}" if error.message else error.label)
    return list(drops.values())


def select_for_issues(results: list[ErrorAnalysisResult]) -> list[ErrorAnalysisResult]:
    """Analyses worth an issue: regressions first (their issue hears of it, reopened), then a real analysis of a
    non-transient error, best evidence first.

    Low-confidence analyses without a fix are left to the report: an issue should give a reader
    something to act on. Failed analyses come last: they never open an issue, but an issue already
    open for the error gets a comment saying tonight's analysis failed and why. How many to create (max issues, the WIP limit
    on open issues) is decided when filing (step 9), since comments on existing issues cost nothing.
    """
    eligible = [
        r for r in results
        if r.analysis is not None and r.failure is None
        and (r.verdict is None or r.verdict.route != "transient")
        and (r.analysis.confidence != "low" or r.analysis.has_fix)
    ]
    eligible += [r for r in results if r.regression and r not in eligible and r.analysis is not None and r.failure is None]
    eligible.sort(key=lambda r: (not r.regression, -CONFIDENCE_RANK[r.analysis.confidence], not r.analysis.has_fix,  # type: ignore[union-attr]
                                 -r.error.occurrences))
    failed = [r for r in results if r.failed and (r.verdict is None or r.verdict.route != "transient")]
    return eligible + failed  # a failed analysis opens no issue, but its existing issue hears of the failure
