"""Outcomes: what people did with the issues and fix PRs NightWatch filed, and what that says about the analysis.

Each night first asks the tracker (GitHub, or the offline tracker's files) for the state of everything
NightWatch filed. A change of state moves the analysis's trust, which search ranks by and triage reads:

| seen | fix state | trust | reused as known? |
|---|---|---|---|
| PR merged | merged | 0.9 | yes, until the error is seen again after the deploy lag |
| issue closed as completed | resolved | 0.7 | no (nothing NightWatch proposed was confirmed) |
| PR closed unmerged; issue closed as not planned, `wontfix`, `not-a-bug`, `invalid` | rejected | 0.2 | no; the rejection is in the next prompt |
| PR merged, then reverted | reverted | 0.1 | no; "do not propose it again" |
| issue reopened | regressed | 0.3 | no |
| resolved in Sentry or Bugsink (now, in the next release, in a release) | resolved | 0.7 | no |
| ignored (muted) in Sentry or Bugsink | ignored | 0.5 | not investigated while the tracker ignores it |
| marked regressed by Sentry or Bugsink | regressed | 0.3 | no |

The error tracker's verdicts (`kind = tracker`: Sentry's issue status, Bugsink's issue history) weigh as an issue's:
a fix NightWatch's PR merged is not moved by the tracker resolving its issue, only by the tracker saying it regressed.

An error seen after its fix merged (or its issue closed as completed), later than the deploy lag allows,
is a regression: flagged first in the report and on its issue, and investigated again, never answered
as known.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

from pydantic import BaseModel

from nightwatch.models import ErrorGroup, PriorAnalysis
from nightwatch.research import ResearchContext

REJECTING_LABELS = frozenset({"wontfix", "won't fix", "not-a-bug", "not a bug", "invalid", "nightwatch:wrong"})
TRUST = {"merged": 0.9, "resolved": 0.7, "ignored": 0.5, "none": 0.5, "regressed": 0.3, "rejected": 0.2, "reverted": 0.1}
FIXED_STATES = frozenset({"merged", "resolved"})
DISTRUSTED_STATES = frozenset({"rejected", "reverted", "regressed"})


class Observed(BaseModel):
    """What the tracker says of one issue or PR now, or the error tracker (Sentry, Bugsink) of the error's issue."""

    kind: Literal["issue", "pr", "tracker"]
    number: int  # the error tracker's numeric id where it has one (Sentry's), else 0: `url` names it
    state: Literal["open", "closed", "merged", "reverted", "missing"]
    reason: str = ""  # an issue's close reason (completed, not_planned, reopened) or the label that rejected it;
    # the error tracker's: resolved, resolved in the next release, resolved in release X, ignored, regressed
    at: datetime | None = None  # when it reached this state
    url: str = ""

    @property
    def key(self) -> str:
        """The state as the knowledge document remembers it: a change of this is an outcome."""
        return f"{self.state}:{self.reason}" if self.reason else self.state


class Filed(BaseModel):
    """What the knowledge index knows of one analysis's issue and PR."""

    fingerprint: str
    path: str
    issue_number: int | None = None
    pr_number: int | None = None
    issue_state: str | None = None
    pr_state: str | None = None
    fix_state: str | None = None
    tracker_issue: str | None = None  # the id of the error's issue in Sentry or Bugsink, where it came from one
    tracker_state: str | None = None

    @property
    def tracker_number(self) -> int | None:
        return tracker_number(self.tracker_issue)


def tracker_number(ident: str | None) -> int | None:
    """An error-tracker issue's number for the outcomes table: Sentry's numeric id, 0 for Bugsink's UUIDs."""
    if not ident:
        return None
    return int(ident) if numeric_id(ident) else 0


def numeric_id(ident: str) -> bool:
    """A tracker id that is a number (Sentry's): ASCII digits only, within an int64."""
    return ident.isascii() and ident.isdecimal() and len(ident) < 19


class OutcomeChange(BaseModel):
    """One observed change, and what it does to the analysis's document."""

    fingerprint: str
    path: str
    kind: Literal["issue", "pr", "tracker"]
    number: int
    state: str
    previous: str | None
    fix_state: str | None  # None: only the state is remembered (an issue still open, a PR still a draft)
    trust: float | None
    note: str
    at: datetime | None = None
    url: str = ""

    @property
    def judged(self) -> bool:
        """The change says something about the analysis (not only a state to remember, such as an issue still open)."""
        return self.fix_state is not None

    def fields(self) -> dict[str, object]:
        """What the document's frontmatter takes from this change."""
        out: dict[str, object] = {f"{self.kind}_state": self.state}
        if self.fix_state is not None:
            out |= {"fix_state": self.fix_state, "trust": self.trust, "outcome": self.note,
                    "fix_confirmed": self.fix_state == "merged"}
        if self.fix_state in FIXED_STATES:  # undated (a hand-written entry): no older date may stand in for it
            out["fix_merged_at"] = self.at.astimezone(timezone.utc).isoformat(timespec="seconds") if self.at else ""
        return out


def judge(observed: Observed, previous: str | None) -> tuple[str, str] | None:
    """(fix state, one-line note) for an observed state; None when it says nothing about the analysis yet."""
    what = f"{'PR' if observed.kind == 'pr' else 'issue'} #{observed.number}"
    when = f" on {observed.at:%Y-%m-%d}" if observed.at else ""
    if observed.kind == "tracker":
        return tracker_judgement(observed, when, previous)
    if observed.kind == "pr":
        return {"merged": ("merged", f"{what} merged{when}"),
                "reverted": ("reverted", f"{what} was merged, then reverted{when}"),
                "closed": ("rejected", f"{what} closed without merging{when}")}.get(observed.state)
    if observed.state == "closed":
        if observed.reason in REJECTING_LABELS or observed.reason == "not_planned":
            return "rejected", f"{what} closed as {observed.reason.replace('_', ' ')}{when}"
        return "resolved", f"{what} closed as completed{when}"
    if observed.state == "open" and (observed.reason == "reopened" or (previous or "").startswith("closed")):
        return "regressed", f"{what} reopened{when}"
    return None


def tracker_judgement(observed: Observed, when: str, previous: str | None = None) -> tuple[str, str] | None:
    """(fix state, note) for what the team did with the error in Sentry or Bugsink; None for an issue still open."""
    where = observed.url or "its issue in the error tracker"
    if observed.state == "closed" and observed.reason == "ignored":
        return "ignored", f"ignored in the error tracker{when} ({where})"
    if observed.state == "closed":  # a release's name is the tracker's text: the note says which kind, not which one
        how = " in the next release" if "next release" in observed.reason else " in a release" if "release" in observed.reason else ""
        return "resolved", f"resolved{how} in the error tracker{when} ({where})"
    if observed.state == "open" and observed.reason == "regressed":
        return "regressed", f"marked regressed by the error tracker{when} ({where})"
    if observed.state == "open" and (previous or "") == "closed:ignored":
        return "none", f"no longer ignored in the error tracker{when} ({where})"
    return None


def changes(filed: list[Filed], observed: dict[tuple[str, int | str], Observed]) -> list[OutcomeChange]:
    """Every filed issue and PR, and every error-tracker issue, whose state moved since the documents last recorded
    it; the error tracker's first, then issues, so a PR's outcome (the stronger signal) is applied last."""
    found = []
    for kind in ("tracker", "issue", "pr"):
        for doc in filed:
            number, previous = getattr(doc, f"{kind}_number"), getattr(doc, f"{kind}_state")
            ident = doc.tracker_issue if kind == "tracker" else number  # the error tracker's issues by their own id
            now = observed.get((kind, ident)) if ident is not None else None
            if now is None or now.state == "missing" or now.key == previous:
                continue
            verdict = judge(now, previous)
            if verdict and kind in ("issue", "tracker") and not outranks(verdict[0], doc.fix_state):
                verdict = None  # remembered, but a weaker signal than what the PR said
            if verdict and kind == "tracker" and verdict[0] == doc.fix_state and (previous or "").split(":")[0] == now.state:
                verdict = None  # the same verdict restated (resolved in the next release, then in the release that came)
            if verdict and verdict[0] == "regressed" and doc.fix_state == "regressed":
                verdict = None  # a regression already recorded (NightWatch flagged it): one row per regression
            note = verdict[1] + undated(now, verdict[0]) if verdict else ""
            found.append(OutcomeChange(
                fingerprint=doc.fingerprint, path=doc.path, kind=kind, number=number, state=now.key, previous=previous,
                fix_state=verdict[0] if verdict else None, trust=TRUST[verdict[0]] if verdict else None,
                note=note, at=now.at, url=now.url))
    return found


def undated(observed: Observed, fix_state: str) -> str:
    """A warning for a fix with no date (an entry of the offline tracker written by hand without `merged_at` or
    `closed_at`): with no date, the error seen again can never be told a regression."""
    if fix_state not in FIXED_STATES or observed.at is not None:
        return ""
    return f" (warning: no {'merged_at' if observed.kind == 'pr' else 'closed_at'} given, so the error seen again cannot count as a regression)"


def outranks(issue_verdict: str, fix_state: str | None) -> bool:
    """Whether an issue's outcome may replace the fix state a PR set: closing an issue after its fix merged says
    nothing new, a reopened one says the merged fix did not hold; nothing an issue does undoes a revert."""
    if fix_state == "merged":
        return issue_verdict == "regressed"
    if issue_verdict in ("ignored", "none"):  # muting, or unmuting, says nothing of a fix or a regression
        return fix_state in (None, "none", "proposed", "rejected", "ignored")
    return fix_state != "reverted"


def regression_of(error: ErrorGroup, priors: list[PriorAnalysis], seen_at: datetime, lag: timedelta,
                  night_end: datetime | None = None) -> tuple[str, str]:
    """(why tonight's `error` is a new regression of an earlier analysis of its fingerprint, or ""; "still regressing
    since <date>" when an earlier night already flagged it, or ""). A regression is announced by the night that finds
    it (and by that night's reruns, whose window ends at `night_end` too), never by the nights after."""
    for prior in priors:
        if prior.fingerprint != error.fingerprint:
            continue
        if prior.fix_state == "regressed":
            if prior.regressed_at is not None and (night_end is None or prior.regressed_at < night_end):
                return "", f"still regressing since {prior.regressed_at:%Y-%m-%d}"
            said = prior.outcome or "its issue was reopened"
            return (said if said.startswith("regression:") else f"regression: {said}"), ""
        fixed_at = prior.fix_merged_at
        if prior.fix_state in FIXED_STATES and fixed_at is not None and seen_at > fixed_at + lag:
            return (f"regression: seen {seen_at:%Y-%m-%d %H:%M} UTC, after {prior.outcome or 'its fix'} "
                    f"(more than the {lag.total_seconds() / 3600:g}h deploy lag later)"), ""
    return "", ""


def mark_regression(research: ResearchContext, error: ErrorGroup, seen_at: datetime, lag: timedelta,
                    night_end: datetime | None = None) -> ResearchContext:
    """The research of `error`, saying so when it is a regression (new, or still regressing); its prior analysis then
    reads as regressed, so triage never answers it as known and every prompt says the fix did not hold."""
    why, still = regression_of(error, research.prior_analyses, seen_at, lag, night_end)
    if still:
        return research.model_copy(update={"still_regressing": still})
    if not why:
        return research
    priors = [p.model_copy(update={"fix_state": "regressed", "trust": TRUST["regressed"], "outcome": why})
              if p.fingerprint == error.fingerprint else p for p in research.prior_analyses]
    return research.model_copy(update={"regression": why, "prior_analyses": priors})


def regression_record(fingerprint: str, path: str, why: str, night_end: datetime,
                      previous: dict[str, object]) -> tuple[dict[str, object], OutcomeChange | None]:
    """What a night that flagged a regression writes: the document's fields (fix state and trust of a regression, the
    fix no longer confirmed, when it was flagged) and, unless its document already says regressed (a person reopened
    the issue, and the sync recorded it), the `regressed` outcome row. A regression is recorded once however it
    was found; a rerun of the night finds its own record and writes nothing again."""
    flagged = night_end.astimezone(timezone.utc).isoformat(timespec="seconds")
    if previous.get("regressed_at") == flagged:
        return {}, None
    fields: dict[str, object] = {"fix_state": "regressed", "trust": TRUST["regressed"], "fix_confirmed": False,
                                 "outcome": why, "regressed_at": flagged, **failed_fix_fields(previous, "regressed", why)}
    kind = "issue" if isinstance(previous.get("issue_number"), int) else "pr" if isinstance(previous.get("pr_number"), int) \
        else "tracker"
    number = previous.get(f"{kind}_number") if kind != "tracker" else tracker_number(str(previous.get("tracker_issue") or ""))
    if previous.get("fix_state") == "regressed" or not isinstance(number, int):
        return fields, None
    return fields, OutcomeChange(fingerprint=fingerprint, path=path, kind=kind, number=number, state="regressed",
                                 previous=str(previous.get(f"{kind}_state") or "") or None, fix_state="regressed",
                                 trust=TRUST["regressed"], note=why, at=night_end)


FAILED_FIX_STATES = frozenset({"regressed", "reverted"})


def failed_fix_fields(meta: dict[str, object], fix_state: str | None, note: str) -> dict[str, object]:
    """When a merged fix turns out not to hold (regressed, reverted): the document's `failed_fixes` with its change
    (`fix_digest`, recorded when its PR opened) added, saying what happened; {} otherwise or when already there."""
    digest = meta.get("fix_digest")
    failed_fixes = meta.get("failed_fixes")
    failed = failed_fixes if isinstance(failed_fixes, dict) else {}
    was_merged = fix_state == "reverted" or meta.get("pr_state") in ("merged", "reverted")  # its PR merged: not a draft
    if fix_state not in FAILED_FIX_STATES or not was_merged or not isinstance(digest, str) or digest in failed:
        return {}
    merged_at = meta.get("fix_merged_at")
    when = f" on {str(merged_at)[:10]}" if merged_at else ""
    what = "and the error came back" if fix_state == "regressed" else "and then reverted"
    return {"failed_fixes": {**failed, digest: f"was merged{when} {what} ({note[:200]})"}}
