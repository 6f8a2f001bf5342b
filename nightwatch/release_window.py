"""The deploy that brought an error: the release it was first seen in, the last release before it, and the commits
between the two.

A release is a `Deploy`, whichever source it came from: New Relic's deploy markers, Sentry's and Bugsink's releases
(nightwatch.sources). The error was first seen in the release its tracker names (Sentry's `firstRelease`, the first of
Bugsink's `events_at`), else in the newest release that reached production at or before it was first seen; the
release before that one is the last without it. Where both name commits (a release whose version is a commit, the
SDK's default in a git checkout; a marker that names its commit), the commits between them (`git rev-list
previous..release`, GitHub's compare) are what that deploy brought: suspects among them rank first
(nightwatch.suspects), and the issue and report say "first seen in release X, deployed with N commits".

Nothing here fails a night: a history that cannot count the commits leaves the count unknown, and a commit is then in
the window by its landing time (after the previous release, not after this one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from nightwatch.models import Deploy, ReleaseWindow
from nightwatch.redact import clean

GRACE = timedelta(minutes=5)  # the clocks of a deploy and of the tracker differ a little
MAX_LISTED = 20  # commits of the window kept for the issue and the prompt, newest first


def first_release(deploys: Sequence[Deploy], first_seen: datetime | None, named: str = "") -> int | None:
    """The index (in `deploys`, oldest first) of the release the error was first seen in: the one the tracker `named`
    (by version or commit; None when it is not among them: the clock would contradict the tracker), else the newest
    that reached production at or before `first_seen`."""
    if named:
        return next((i for i in range(len(deploys) - 1, -1, -1) if named in (deploys[i].version, deploys[i].commit)), None)
    if first_seen is None:
        return None
    found = None
    for index, deploy in enumerate(deploys):
        if deploy.at <= first_seen + GRACE:
            found = index
    return found


def release_window(host: object, deploys: Sequence[Deploy], first_seen: datetime | None,
                   named: str = "") -> ReleaseWindow | None:
    """The release the error was first seen in, the one before it, and the commits between them where the code host
    can list them (`commits_between`); None when no release is known at or before the error."""
    index = first_release(deploys, first_seen, named)
    if index is None:
        return None
    release, previous = deploys[index], deploys[index - 1] if index > 0 else None
    count, commits = None, []
    between = getattr(host, "commits_between", None)
    if previous is not None and release.commit and previous.commit and callable(between):
        try:
            listed = between(previous.commit, release.commit, MAX_LISTED)
        except Exception:  # noqa: BLE001 - a history that cannot tell: the count stays unknown, never a failed step
            listed = None
        if listed is not None:
            count, shown = listed
            commits = [" ".join(clean(line, 200)[0].split())[:200] for line in shown[:MAX_LISTED]]
    return ReleaseWindow(release=release, previous=previous, commit_count=count, commits=commits)


def shipped_in(host: object, window: ReleaseWindow | None, sha: str, landed: datetime | None) -> bool | None:
    """Whether the release the error was first seen in brought `sha` (it has it, the release before did not); None
    when nothing can tell (no earlier release known)."""
    if window is None or window.previous is None:
        return None
    if window.commit_count is not None and window.commit_count <= len(window.commits):
        return any(line.split(" ", 1)[0] == sha for line in window.commits)  # every commit of the window is listed
    contains = getattr(host, "contains", None)
    if callable(contains) and window.release.commit and window.previous.commit:
        now, before = contains(window.release.commit, sha), contains(window.previous.commit, sha)
        if now is not None and before is not None:
            return bool(now and not before)
    if landed is None:
        return None
    return window.previous.at < landed <= window.release.at + GRACE
