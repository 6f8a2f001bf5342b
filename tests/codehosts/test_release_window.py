"""Releases bound the suspects: the commits between the last release without the error and the release it was first
seen in come first, whichever source named the releases (New Relic's deploy markers, Sentry's or Bugsink's releases),
on real git history; the issue and the report say which release brought it and with how many commits."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.models import Analysis, Deploy, ErrorAnalysisResult, ErrorGroup, RunReport, Window
from nightwatch.release_window import first_release, release_window, shipped_in
from nightwatch.render.blocks import report_blocks
from nightwatch.render.issue import issue_body
from nightwatch.render.markdown import report_markdown
from nightwatch.suspects import suspect_commits
from tests.codehosts.test_suspects import FIRST_SEEN, commit, git, write

FRAMES = [("app/views.py", 3), ("app/models.py", 2)]


@pytest.fixture()
def history(tmp_path: Path) -> dict[str, str]:
    """Three releases: r1 with the import, r2 ten days before the error with a change to the crash line, r3 a day
    before it with a change one frame deeper and a README edit (hostile text in its subject)."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total)", ""])
    write(root, "app/models.py", ["def load(pk):", "    row = find(pk)", "    return row", ""])
    shas = {"r1": commit(root, "Import the shop", FIRST_SEEN - timedelta(days=900))}
    write(root, "app/views.py", ["def show(request, pk):", "    order = load(pk)", "    return render(order.total_cents)", ""])
    shas["crash_line"] = shas["r2"] = commit(root, "Show totals in cents", FIRST_SEEN - timedelta(days=11))
    write(root, "app/models.py", ["def load(pk):", "    row = find(pk) if pk else None", "    return row", ""])
    shas["deeper"] = commit(root, "Let load take no key", FIRST_SEEN - timedelta(days=2))
    write(root, "README.md", ["shop"])
    shas["readme"] = shas["r3"] = commit(root, "Docs <@here> `rm -rf /` [click](http://evil.example)", FIRST_SEEN - timedelta(days=2))
    shas["root"] = str(root)
    return shas


def releases(shas: dict[str, str], commits: bool = True) -> list[Deploy]:
    at = {"r1": FIRST_SEEN - timedelta(days=800), "r2": FIRST_SEEN - timedelta(days=10), "r3": FIRST_SEEN - timedelta(days=1)}
    return [Deploy(at=when, version=shas[name] if commits else f"shop@{i}", commit=shas[name] if commits else "")
            for i, (name, when) in enumerate(at.items(), 1)]


def test_the_commits_the_first_release_brought_rank_first_over_a_stronger_older_suspect(history: dict[str, str]) -> None:
    host = LocalRepoHost(Path(history["root"]))
    deploys = releases(history)
    unbounded, _ = suspect_commits(host, FRAMES, FIRST_SEEN, deploys=deploys)
    assert [s.sha for s in unbounded] == [history["crash_line"], history["deeper"]]  # the crash line weighs most
    window = release_window(host, deploys, FIRST_SEEN)
    assert window is not None and window.release.commit == history["r3"] and window.previous.commit == history["r2"]
    assert window.commit_count == 2 and [c.split()[0] for c in window.commits] == [history["readme"], history["deeper"]]
    assert window.line == f"first seen in release {history['r3'][:12]}, deployed with 2 commits since {history['r2'][:12]}"
    bounded, _ = suspect_commits(host, FRAMES, FIRST_SEEN, deploys=deploys, window=window)
    assert [(s.sha, s.in_release) for s in bounded] == [(history["deeper"], True), (history["crash_line"], False)]
    assert "brought by the release the error was first seen in" in bounded[0].why and bounded[0].score < bounded[1].score


def test_git_agrees_on_the_count(history: dict[str, str]) -> None:
    """The anchor: `git rev-list --count r2..r3` says the same number as the window."""
    root = Path(history["root"])
    counted = int(git(root, "rev-list", "--count", f"{history['r2']}..{history['r3']}").strip())
    assert LocalRepoHost(root).commits_between(history["r2"], history["r3"], 1) == (counted, [
        git(root, "log", "-1", "--format=%H %s", history["r3"]).strip()])


def test_the_tracker_named_first_release_wins_over_the_clock(history: dict[str, str]) -> None:
    """Sentry's firstRelease (or Bugsink's first release with events) names the release even when the clock alone
    would pick a later one (an error first reported late)."""
    deploys = releases(history)
    assert first_release(deploys, FIRST_SEEN) == 2
    assert first_release(deploys, FIRST_SEEN, named=history["r2"]) == 1
    assert first_release(deploys, FIRST_SEEN - timedelta(days=900)) is None
    window = release_window(LocalRepoHost(Path(history["root"])), deploys, FIRST_SEEN, named=history["r2"])
    assert window is not None and window.commit_count == 1 and window.commits[0].startswith(history["crash_line"])


def test_releases_that_name_no_commit_bound_by_landing_time(history: dict[str, str]) -> None:
    host = LocalRepoHost(Path(history["root"]))
    window = release_window(host, releases(history, commits=False), FIRST_SEEN)
    assert window is not None and window.commit_count is None and window.line == "first seen in release shop@3"
    assert shipped_in(host, window, history["deeper"], FIRST_SEEN - timedelta(days=2)) is True
    assert shipped_in(host, window, history["crash_line"], FIRST_SEEN - timedelta(days=11)) is False
    assert shipped_in(host, None, history["deeper"], FIRST_SEEN) is None


def test_a_first_release_with_none_before_it_bounds_nothing(history: dict[str, str]) -> None:
    host = LocalRepoHost(Path(history["root"]))
    window = release_window(host, releases(history)[2:], FIRST_SEEN)
    assert window is not None and window.previous is None and window.commit_count is None
    suspects, _ = suspect_commits(host, FRAMES, FIRST_SEEN, deploys=releases(history)[2:], window=window)
    assert all(s.in_release is None for s in suspects)


def test_a_host_that_cannot_tell_leaves_the_count_unknown_and_never_fails(history: dict[str, str]) -> None:
    class Broken:
        def commits_between(self, older: str, newer: str, limit: int) -> tuple[int, list[str]]:
            raise RuntimeError("the history is gone")

    window = release_window(Broken(), releases(history), FIRST_SEEN)
    assert window is not None and window.commit_count is None and window.commits == []
    assert LocalRepoHost(Path(history["root"])).commits_between("not a commit", history["r3"]) is None
    assert LocalRepoHost(Path(history["root"])).commits_between("0" * 40, history["r3"]) is None


def test_the_issue_slack_and_the_report_say_which_release_brought_it_and_commit_text_stays_inert(history: dict[str, str]) -> None:
    host = LocalRepoHost(Path(history["root"]))
    window = release_window(host, releases(history), FIRST_SEEN)
    error = ErrorGroup(error_class="AttributeError", transaction="views.show", first_seen=FIRST_SEEN)
    result = ErrorAnalysisResult(run_id="r", error=error, release_window=window,
                                 analysis=Analysis(title="t", reasoning="r", root_cause="load returns None", has_fix=False,
                                                   confidence="medium"))
    body = issue_body(result, "r", demo=False)
    assert "## Release" in body and "deployed with 2 commits since" in body
    assert "<@here>" not in body and "](http://evil.example)" not in body
    report = RunReport(run_id="r", started_at=FIRST_SEEN, window=Window(start=FIRST_SEEN - timedelta(days=1), end=FIRST_SEEN), results=[result])
    assert "deployed with 2 commits" in report_markdown(report)
    slack = str(report_blocks(report))
    assert "first seen in release" in slack and "deployed with 2 commits" in slack


def test_no_release_known_says_nothing(history: dict[str, str]) -> None:
    assert release_window(LocalRepoHost(Path(history["root"])), [], FIRST_SEEN) is None
    assert release_window(LocalRepoHost(Path(history["root"])), releases(history), None) is None
