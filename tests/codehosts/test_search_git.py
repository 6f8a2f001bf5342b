"""search_code at git's speed: `git grep` names the files that can match, and only those are read through the guards.

Held against the walk of every file it replaced, on the real trees of CTFd and Healthchecks (evals/apps, at an eval
case's commit): the same hits in the same order for identifiers, strings found nowhere, regular expressions, globs and
hit limits. Then the guards on the new path, each with a test that fails if the guard is dropped: a secret file by
name and by content, a symlink leading outside the checkout or to a secret, a binary, a file past the size cap, an
untracked file; and the queries git cannot answer for the walk (letters outside ASCII, a pattern PCRE refuses)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nightwatch.codehosts.base import SEARCH_MAX_FILE_BYTES
from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.eval_apps import bundle_of

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "evals" / "apps"
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x.invalid", "PATH": os.environ["PATH"]}
QUERIES = [("def ", None, False), ("current_user", None, False), ("import", "*.py", False), ("NoSuchStringAnywhere", None, False),
           ("Solutions", "CTFd/models/*", False), ("ping", None, False), ("class \\w+View", None, True),
           ("assert(Equal|True)\\(", "*.py", True), ("TODO|FIXME", None, True), ("{{", "*.html", False),
           ("x", None, False), ("utf-8", None, False), ("SELECT", None, False), ("select", None, False)]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=True).stdout


def checkout(root: Path, app: str, case: str) -> Path:
    repo = root / app
    subprocess.run(["git", "clone", "-q", str(bundle_of(APPS, app)), str(repo)], env=GIT_ENV, check=True, capture_output=True)
    git(repo, "fetch", "-q", str(bundle_of(APPS, app)), "refs/cases/*:refs/cases/*")
    git(repo, "checkout", "-q", f"refs/cases/{case}/parent")
    return repo


class Walking(LocalRepoHost):
    """The search as it was: every tracked file walked."""

    def _grep_candidates(self, query: str, regex: bool) -> frozenset[str] | None:
        return None


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[LocalRepoHost, Walking]]:
    """Both applications' trees, each with a host of each kind (a host keeps what it learnt of files across searches)."""
    root = tmp_path_factory.mktemp("trees")
    repos = [checkout(root, "ctfd", "ctfd-duplicate-solution"), checkout(root, "healthchecks", "healthchecks-ping-non-utf8-body")]
    return [(LocalRepoHost(repo), Walking(repo)) for repo in repos]


@pytest.mark.slow  # 84 searches of each kind over two real trees: make test runs it
def test_the_same_hits_as_walking_every_file_on_real_trees(trees: list[tuple[LocalRepoHost, Walking]]) -> None:
    for fast, walking in trees:
        for query, glob, regex in QUERIES:
            for limit in (1, 20, 200):
                assert fast.search_code(query, glob, limit, regex) == walking.search_code(query, glob, limit, regex), \
                    (fast.root.name, query, limit)


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "plain.py").write_text("zebrafinch = 1\n")
    (repo / "app" / "settings.py").write_text("API_TOKEN = 'ghp_" + "a" * 36 + "'  # zebrafinch\n")  # a secret by content
    (repo / ".env.production").write_text("ZEBRAFINCH=1\n")  # a secret by name
    (repo / "app" / "blob.bin").write_bytes(b"\x00\x01zebrafinch\x00")
    (repo / "app" / "huge.txt").write_text("zebrafinch\n" + "y" * (SEARCH_MAX_FILE_BYTES + 10))
    outside = tmp_path / "outside.py"
    outside.write_text("zebrafinch = 'outside'\n")
    (repo / "app" / "out.py").symlink_to(outside)
    (repo / "app" / "to_env").symlink_to("../.env.production")
    (repo / "app" / "alias.py").symlink_to("plain.py")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", "-A")
    git(repo, "add", "--force", ".env.production")
    git(repo, "commit", "-qm", "planted")
    (repo / "app" / "untracked.py").write_text("zebrafinch = 'untracked'\n")
    return repo


def test_every_guard_holds_on_the_git_grep_path(planted: Path) -> None:
    host = LocalRepoHost(planted)
    assert host._grep_candidates("zebrafinch", False) is not None  # this search goes through git grep
    found = sorted(h.path for h in host.search_code("zebrafinch", limit=50))
    assert found == ["app/alias.py", "app/plain.py"]  # a tracked link inside the checkout reads as its target
    assert found == sorted(h.path for h in Walking(planted).search_code("zebrafinch", limit=50))


def test_git_grep_alone_would_have_let_every_planted_file_through(planted: Path) -> None:
    """What each guard stops: git grep names them all (but the untracked one), so dropping a guard shows a hit."""
    named = LocalRepoHost(planted)._grep_candidates("zebrafinch", False)
    assert {"app/settings.py", ".env.production", "app/blob.bin", "app/huge.txt", "app/out.py", "app/to_env"} <= named  # type: ignore[operator]
    assert "app/untracked.py" not in named  # type: ignore[operator]


@pytest.mark.parametrize(("query", "regex"), [("zébrafinch", False), ("ZEBRAFİNCH", False), ("(unclosed|", True)])
def test_what_git_cannot_answer_for_the_walk_is_walked(planted: Path, query: str, regex: bool) -> None:
    host = LocalRepoHost(planted)
    assert host._grep_candidates(query, regex) is None
    if not regex:
        assert host.search_code(query) == Walking(planted).search_code(query)


def test_a_folder_of_thousands_of_files_is_listed_capped_and_says_so(tmp_path: Path) -> None:
    from nightwatch.agent.recall import EventLog
    from nightwatch.agent.tools import LIST_SHOWN, CodeCache, ToolRunner
    from nightwatch.models import TraceData

    repo = tmp_path / "mono"
    (repo / "gen").mkdir(parents=True)
    for i in range(3_000):
        (repo / "gen" / f"m{i:05d}.py").write_text("x = 1\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    runner = ToolRunner(cache=CodeCache(LocalRepoHost(repo)), traces=TraceData(fingerprint="fp"), events=EventLog(),
                        run_id="r1", fingerprint="fp", allowed=["list_directory"])
    text = runner.run("list_directory", {"path": "gen"}, 1).text
    assert text.count("gen/m") == LIST_SHOWN and "2,600 more entries of 3,000" in text
