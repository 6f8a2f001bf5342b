"""Releases and verdicts of a Sentry-protocol tracker, as NightWatch reads them from both sources alike.

- **Releases are deploys.** Each release of the project becomes a `Deploy` (nightwatch.release_window): its version,
  when it reached production (Sentry's `dateReleased`, else `dateCreated`; Bugsink's `date_released`, when it first
  received an event of it unless a release was created by hand), and its commit where the version is one (the SDK's
  default release in a git checkout is the commit it runs; `name@<sha>` too) or Sentry names its last commit.
- **Verdicts are outcomes.** What the team did with the error's issue (resolved, in the next release or in a release;
  ignored, muted; regressed, as the tracker marks it) becomes an `Observed` of kind `tracker`
  (nightwatch.outcomes): Sentry's issue `status`, `substatus` and `statusDetails`, dated by its activity; Bugsink's
  newest turning point of the issue's history.
"""

from __future__ import annotations

from typing import Any

from nightwatch.codehosts.base import are_commit_ids
from nightwatch.models import Deploy
from nightwatch.outcomes import Observed
from nightwatch.sources.sentry_event import object_at, text, timestamp_or_none


def release_commit(version: str, named: str = "") -> str:
    """The commit a release shipped: its version where that is a commit id (or `name@<sha>`), else the commit the
    tracker `named` (Sentry's lastCommit), else ""."""
    for candidate in (version, version.rpartition("@")[2], named):
        if candidate and are_commit_ids(candidate):
            return candidate.lower()
    return ""


def sentry_deploy(release: Any) -> Deploy | None:
    """One release of Sentry's releases list as a deploy; None for an entry without a version or a date."""
    if not isinstance(release, dict):
        return None
    version = text(release.get("version"), 200)
    at = timestamp_or_none(release.get("dateReleased")) or timestamp_or_none(release.get("dateCreated"))
    if not version or at is None:
        return None
    last = object_at(release, "lastCommit")
    return Deploy(at=at, version=version, commit=release_commit(version, str(last.get("id") or "")),
                  description=text(release.get("ref"), 200))


def bugsink_deploy(release: Any) -> Deploy | None:
    """One release of Bugsink's releases list as a deploy; None for the empty release (events sent without one)."""
    if not isinstance(release, dict):
        return None
    version = text(release.get("version"), 200)
    at = timestamp_or_none(release.get("date_released"))
    if not version or at is None:
        return None
    return Deploy(at=at, version=version, commit=release_commit(version), deployment_id=text(str(release.get("id") or ""), 64))


def sentry_status(issue: dict[str, Any]) -> str:
    """What the team did with a Sentry issue, as `ErrorGroup.tracker_status` says it."""
    status, sub = str(issue.get("status") or ""), str(issue.get("substatus") or "")
    if status == "ignored" or sub.startswith("archived"):
        return "ignored"
    if status.startswith("resolved"):
        return "resolved"
    return "regressed" if sub == "regressed" else ("unresolved" if status == "unresolved" else "")


_SENTRY_ACTIVITY = {"resolved": "set_resolved", "ignored": "set_ignored", "regressed": "set_regression"}


def sentry_observed(issue: Any, number: int) -> Observed:
    """A Sentry issue's verdict, dated by the newest activity that set it where the issue carries its activity."""
    if not isinstance(issue, dict):
        return Observed(kind="tracker", number=number, state="missing")
    status = sentry_status(issue)
    details = object_at(issue, "statusDetails")
    url = text(issue.get("permalink"), 500)
    prefix = _SENTRY_ACTIVITY.get(status, "")
    listed = issue.get("activity")
    activity: list[Any] = listed if isinstance(listed, list) else []
    moments = [timestamp_or_none(a.get("dateCreated")) for a in activity
               if prefix and isinstance(a, dict) and str(a.get("type") or "").startswith(prefix)]
    at = max((m for m in moments if m), default=None)
    if status == "resolved":
        reason = ("resolved in the next release" if details.get("inNextRelease") else
                  f"resolved in release {text(details.get('inRelease'), 80)}" if details.get("inRelease") else "resolved")
        return Observed(kind="tracker", number=number, state="closed", reason=reason, at=at, url=url)
    if status == "ignored":
        return Observed(kind="tracker", number=number, state="closed", reason="ignored", at=at, url=url)
    return Observed(kind="tracker", number=number, state="open", reason="regressed" if status == "regressed" else "",
                    at=at, url=url)


def bugsink_status(issue: dict[str, Any]) -> str:
    """What the team did with a Bugsink issue, as its list says it (regressions are in its history only)."""
    if issue.get("is_muted"):
        return "ignored"
    return "resolved" if issue.get("is_resolved") else "unresolved"


_BUGSINK_STATE_KINDS = ("resolved", "muted", "regressed", "reopened", "unmuted", "next_materialized")


def bugsink_observed(history: list[Any], url: str) -> Observed:
    """A Bugsink issue's verdict: the newest turning point of its history that set its state (newest first)."""
    for point in history:
        kind = str(point.get("kind") or "") if isinstance(point, dict) else ""
        if kind not in _BUGSINK_STATE_KINDS:
            continue
        at = timestamp_or_none(point.get("timestamp"))
        meta = object_at(point, "metadata")
        if kind in ("resolved", "next_materialized"):
            release = text(meta.get("resolved_release") or meta.get("actual_release"), 80)
            reason = ("resolved in the next release" if meta.get("resolve_by_next") and not release else
                      f"resolved in release {release}" if release else "resolved")
            return Observed(kind="tracker", number=0, state="closed", reason=reason, at=at, url=url)
        if kind == "muted":
            return Observed(kind="tracker", number=0, state="closed", reason="ignored", at=at, url=url)
        return Observed(kind="tracker", number=0, state="open", reason="regressed" if kind == "regressed" else "",
                        at=at, url=url)
    return Observed(kind="tracker", number=0, state="open", url=url)
