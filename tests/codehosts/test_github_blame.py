"""Suspect commits through GitHub: the GraphQL blame and associatedPullRequests, and the REST commit's patches,
served by the fake GitHub from a real git history, rank the commit that introduced each real-application eval case's
bug (its slice of evals/apps/<app>/history.bundle, its ground truth `introduced_by`) where local git ranks it, case by case.

The suspect lists themselves differ where GitHub's blame differs from git's with -w (whitespace-only edits are not
looked through; commits that only reformatted a Python or Ruby file are, on both hosts: test_formatting_commits): 17 of
the 19 lists are identical, and the figures are the same (the introducing commit first in 14, in the top three in 15,
blaming each case's crash line and its fix's first lines).

The queries (blame, associatedPullRequests, and a commit's parents with a file at it as a Blob) were checked against
GitHub's published schema (octokit/graphql-schema, schema.graphql of July 2026, with graphql-core): each validates, and
a misspelt field (`startLine`, `isTruncatd`) does not.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.codehosts.github import GitHubHost
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.evaluation import _original_commit, load_cases, prepare_repository
from nightwatch.suspects import suspect_commits
from tests.fakes.github import FakeGitHub

EVALS = Path(__file__).resolve().parents[2] / "evals"
REAL = [c for c in load_cases(EVALS) if not c.source.demo and c.monitor == "newrelic"]


def github_host(fake: FakeGitHub) -> GitHubHost:
    return GitHubHost(fake.full_name, SecretStr(fake.token), base_url=fake.url, retries=0, seconds_between_requests=0.0,
                      seconds_between_writes=0.0, timeout=300)  # a hang guard: the fake blames long files on a loaded core


def same_suspects(repo: Path, frames: list[tuple[str, int]], first_seen: datetime | None, fix_lines=()) -> tuple[list, list]:
    local, _ = suspect_commits(LocalRepoHost(repo), frames, first_seen, fix_lines=fix_lines)
    with FakeGitHub(history=repo) as fake:
        remote, notes = suspect_commits(github_host(fake), frames, first_seen, fix_lines=fix_lines)
    return [(s.sha, s.pr_number, s.confidence, s.lines, s.hunk) for s in local], \
        [(s.sha, s.pr_number, s.confidence, s.lines, s.hunk) for s in remote]


@pytest.mark.slow
@pytest.mark.parametrize("case", REAL, ids=lambda c: c.id)
def test_github_names_the_suspects_local_git_names_on_real_history(case, tmp_path):
    repo = prepare_repository(case, tmp_path / "repo")
    frames = [(case.crash.file, case.crash.line)] if case.crash.line else []
    span = case.origin.range
    origin = [(case.origin.file, n) for n in range(span[0], min(span[1], span[0] + 2) + 1)] if span else []
    first_seen = datetime.fromisoformat(subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%cI"], text=True,
                                                       capture_output=True, check=True).stdout.strip()) + timedelta(days=1)
    local, remote = same_suspects(repo, frames, first_seen, fix_lines=origin)
    assert rank(repo, remote, case.introduced_by) == rank(repo, local, case.introduced_by)
    # read as SZZ reads the fix: its best-ranked candidate
    assert best_rank(repo, remote, case.blamed) == best_rank(repo, local, case.blamed)
    assert (remote == local) is (case.id not in WHITESPACE_ONLY)


WHITESPACE_ONLY = {"healthchecks-group-test-notification", "lobsters-check-url-dupe-anonymous"}  # git blame -w looks
# through a commit GitHub names: one that changed the line's spaces and other code in the file (not formatting as a
# whole), or spaces that Ruby may read (around an operator, inside brackets), which are never taken for layout


def rank(repo: Path, suspects: list, truth: str | None) -> int | None:
    shas = [_original_commit(repo, s[0]) for s in suspects]
    return shas.index(truth) + 1 if truth in shas else None


def best_rank(repo: Path, suspects: list, candidates: list) -> int | None:
    ranks = [r for r in (rank(repo, suspects, c) for c in candidates) if r is not None]
    return min(ranks, default=None)


def test_a_github_host_without_history_answers_fewer_suspects_with_the_reason(tmp_path):
    with FakeGitHub() as fake:  # no history: GitHub answers the GraphQL query with an error
        fake.add_file("app/models/order.rb", "class Order\nend\n")
        suspects, notes = suspect_commits(github_host(fake), [("app/models/order.rb", 1)], datetime.now(timezone.utc))
    assert suspects == [] and any("no blame for app/models/order.rb from GitHub" in n for n in notes)


def test_the_fake_dates_a_blamed_commit_as_git_log_does(tmp_path):
    """The fake answers `committedDate` from blame's porcelain (committer-time and -tz) instead of a `git log` per
    range: the same text as `git log --format=%cI`, for every commit of a real history (offsets east, west and zero)."""
    from tests.fakes.github_history import _committed

    case = next(c for c in REAL if c.id == "healthchecks-group-test-notification")
    repo = prepare_repository(case, tmp_path / "repo")
    log = subprocess.run(["git", "-C", str(repo), "log", "--all", "--format=%ct %cd %cI", "--date=format:%z"], text=True,
                         capture_output=True, check=True).stdout.split("\n")
    rows = [line.split() for line in log if line]
    assert len(rows) > 20 and len({tz for _, tz, _ in rows}) > 1
    assert [_committed({"committer-time": ct, "committer-tz": tz}) for ct, tz, _ in rows] == [iso for _, _, iso in rows]


def test_github_tells_which_deploy_shipped_a_commit_as_local_git_does(tmp_path):
    """A deploy marker's commit contains a suspect or not: GitHub's compare (ahead or identical) against
    `git merge-base --is-ancestor`, on a real history; a commit GitHub does not have is 'cannot tell'."""
    case = next(c for c in REAL if c.id == "healthchecks-group-test-notification")
    repo = prepare_repository(case, tmp_path / "repo")
    shas = subprocess.run(["git", "-C", str(repo), "rev-list", "--first-parent", "-n", "40", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.split()
    local = LocalRepoHost(repo)
    pairs = [(shas[0], shas[10]), (shas[10], shas[0]), (shas[5], shas[5]), (shas[39], shas[20]), ("0" * 40, shas[3])]
    with FakeGitHub(history=repo) as fake:
        remote = github_host(fake)
        assert [remote.contains(release, sha) for release, sha in pairs] == [local.contains(release, sha) for release, sha in pairs]
    assert [local.contains(release, sha) for release, sha in pairs] == [True, False, True, False, None]
