"""GitHubHost through the real PyGithub client against the fake GitHub REST API."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Iterator

import pytest
from pydantic import SecretStr

from nightwatch.codehosts.base import CodeHostError, SearchHit
from nightwatch.codehosts.github import GitHubError, GitHubHost
from tests.fakes.github import T0, FakeGitHub
from tests.fakes.http import Reply

ORDER = "class Order\n  def total\n    items.sum(&:price)\n  end\nend\n"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    gh = FakeGitHub("acme/shop", default_branch="develop")
    gh.add_file("app/models/order.rb", ORDER)
    gh.add_file("app/services/checkout.rb", "class Checkout\n  def call(order)\n    order.total\n  end\nend\n")
    gh.add_file("README.md", "# Shop\n")
    with gh:
        yield gh


def make_host(fake: FakeGitHub, token: str | None = None, retries: int = 2) -> GitHubHost:
    return GitHubHost("acme/shop", SecretStr(token or fake.token), base_url=fake.url, retries=retries,
                      backoff_factor=0, seconds_between_requests=0)


def test_reads_lists_and_digests_the_default_branch(fake: FakeGitHub) -> None:
    host = make_host(fake)
    assert host.default_branch() == "develop"
    assert host.read_file("app/models/order.rb") == ORDER
    assert host.read_file("app/models/order.rb", start_line=2, end_line=3, numbered=True) == (
        "    2|   def total\n    3|     items.sum(&:price)\n")
    assert host.list_directory() == ["README.md", "app/"]
    assert host.list_directory("app") == ["app/models/", "app/services/"]
    assert host.file_digest("app/models/order.rb") == hashlib.sha256(ORDER.encode()).hexdigest()
    assert host.file_digest("app/models/missing.rb") is None
    assert host.file_digest("../etc/passwd") is None


def test_a_night_fetches_each_file_once_and_keeps_reading_what_it_first_saw(fake: FakeGitHub) -> None:
    host = make_host(fake)
    path = fake.repo_path("/contents/app/models/order.rb")
    digest = host.file_digest("app/models/order.rb")
    assert host.read_file("./app/models/order.rb", start_line=2, end_line=2) == "  def total\n"
    fake.add_file("app/models/order.rb", "# pushed during the night\n" + ORDER)
    assert host.read_text("app/models/order.rb") == ORDER and host.file_digest("app/models/order.rb") == digest
    assert [h.line for h in host.search_code("items.sum")] == [3]
    assert len(fake.server.calls("GET", path)) == 1
    assert host.current_digest("app/models/order.rb") != digest  # what a fix would be committed over: asked anew
    assert host.read_text("app/models/order.rb") == ORDER and len(fake.server.calls("GET", path)) == 2
    assert make_host(fake).read_file("app/models/order.rb").startswith("# pushed")  # the next night reads anew


def test_errors_are_short_and_actionable(fake: FakeGitHub) -> None:
    host = make_host(fake)
    with pytest.raises(CodeHostError, match="no such file: app/models/missing.rb"):
        host.read_file("app/models/missing.rb")
    with pytest.raises(CodeHostError, match="app/models is a directory; use list_directory"):
        host.read_file("app/models")
    with pytest.raises(CodeHostError, match="README.md is a file; use read_file"):
        host.list_directory("README.md")
    with pytest.raises(GitHubError, match="GitHub rejected the token"):
        make_host(fake, token="ghp_wrongtoken").read_file("README.md")


@pytest.mark.parametrize("path", ["../secrets", "/etc/passwd", "app/\x00x", ".git/config"])
def test_unsafe_paths_never_reach_github(fake: FakeGitHub, path: str) -> None:
    host = make_host(fake)
    with pytest.raises(CodeHostError):
        host.read_file(path)
    assert fake.server.calls(path_prefix="/repos/acme/shop/contents") == []


def test_search_finds_lines_and_narrows_by_glob(fake: FakeGitHub) -> None:
    host = make_host(fake)
    assert host.search_code("total") == [
        SearchHit(path="app/models/order.rb", line=2, text="def total"),
        SearchHit(path="app/services/checkout.rb", line=3, text="order.total"),
    ]
    assert [h.path for h in host.search_code("total", path_glob="app/services/*.rb")] == ["app/services/checkout.rb"]
    query = fake.server.calls("GET", "/search/code")[-1].query["q"][0]
    assert "repo:acme/shop" in query and "path:app/services" in query and "extension:rb" in query
    assert [(h.path, h.line) for h in host.search_code(r"def \w+\(order\)", regex=True)] == [("app/services/checkout.rb", 2)]
    assert host.search_code("nothing-like-this") == []


def test_recent_merged_prs_filter_by_time_merge_and_base(fake: FakeGitHub) -> None:
    fake.add_pr("Apply discounts", ["app/models/order.rb"], author="dana", merged_at=T0 - timedelta(hours=5))
    fake.add_pr("Closed without merge", ["x.rb"], merged_at=None, updated_at=T0 - timedelta(hours=2))
    fake.add_pr("Release branch", ["y.rb"], merged_at=T0 - timedelta(hours=3), base="release")
    fake.add_pr("Long ago", ["z.rb"], merged_at=T0 - timedelta(days=40))
    prs = make_host(fake).recent_merged_prs(T0 - timedelta(days=2))
    assert [(p.title, p.author, p.files) for p in prs] == [("Apply discounts", "dana", ["app/models/order.rb"])]
    assert prs[0].merged_at == T0 - timedelta(hours=5)
    assert prs[0].url.endswith("/pull/1")


def test_merged_prs_follow_pagination(fake: FakeGitHub) -> None:
    for i in range(105):
        fake.add_pr(f"PR {i}", [f"f{i}.rb"], merged_at=T0 - timedelta(minutes=200 - i))
    prs = make_host(fake).recent_merged_prs(T0 - timedelta(days=1), limit=150)
    assert len(prs) == 105 and prs[0].title == "PR 104" and prs[-1].title == "PR 0"
    assert any(r.query.get("page") == ["2"] for r in fake.server.calls("GET", "/repos/acme/shop/pulls"))


def test_a_server_error_is_retried_by_pygithub(fake: FakeGitHub) -> None:
    host = make_host(fake)
    path = fake.repo_path("/contents/app/models/order.rb")
    fake.fail_next("GET", path, Reply(500, {"message": "Server Error"}))
    assert host.read_file("app/models/order.rb") == ORDER
    assert len(fake.server.calls("GET", path)) == 2


def test_persistent_server_errors_become_a_clear_error(fake: FakeGitHub) -> None:
    host = make_host(fake, retries=1)
    path = fake.repo_path("/contents/README.md")
    fake.fail_next("GET", path, *[Reply(502, {"message": "Bad Gateway"})] * 3)
    with pytest.raises(GitHubError, match="GitHub kept failing while reading README.md; gave up after retries"):
        host.read_file("README.md")
    assert len(fake.server.calls("GET", path)) == 2


def test_rate_limit_429_is_retried_after_the_servers_delay(fake: FakeGitHub) -> None:
    host = make_host(fake)
    path = fake.repo_path("/contents/README.md")
    fake.fail_next("GET", path, Reply(429, {"message": "slow down"}, {"retry-after": "0"}))
    assert host.read_file("README.md") == "# Shop\n"
    assert len(fake.server.calls("GET", path)) == 2


def test_malformed_replies_and_timeouts_become_clear_errors(fake: FakeGitHub) -> None:
    host = GitHubHost("acme/shop", SecretStr(fake.token), base_url=fake.url, timeout=1, retries=0, seconds_between_requests=0)
    path = fake.repo_path("/contents/README.md")
    fake.fail_next("GET", path, Reply(200, raw=b"{not json"), Reply(200, {"unexpected": True}))
    for _ in range(2):
        with pytest.raises(GitHubError, match="GitHub sent a malformed reply while reading README.md"):
            host.read_file("README.md")
    fake.fail_next("GET", path, Reply(200, {"message": "late"}, delay_s=6))
    with pytest.raises(GitHubError, match="GitHub did not answer in time while reading README.md"):
        host.read_file("README.md")


@pytest.mark.parametrize(("raised", "permanent"), [
    ("bad_credentials", True), ("not_found", True), ("unprocessable", True), ("forbidden", True),
    ("rate_limited", False), ("server_error", False),
])
def test_a_refusal_is_permanent_and_a_rate_limit_or_server_error_is_worth_a_retry(raised, permanent):
    from github.GithubException import (
        BadCredentialsException,
        GithubException,
        RateLimitExceededException,
        UnknownObjectException,
    )
    from nightwatch.tasks.steps_publish import unless_permanent

    from nightwatch.codehosts.github import github_errors

    exc = {"bad_credentials": BadCredentialsException(401, {"message": "Bad credentials"}, {}),
           "not_found": UnknownObjectException(404, {"message": "Not Found"}, {}),
           "unprocessable": GithubException(422, {"message": "Validation Failed"}, {}),
           "forbidden": GithubException(403, {"message": "Resource not accessible by integration"}, {}),
           "rate_limited": RateLimitExceededException(403, {"message": "API rate limit exceeded"}, {}),
           "server_error": GithubException(502, {"message": "Bad Gateway"}, {})}[raised]
    with pytest.raises(GitHubError) as caught, github_errors("filing an issue"):
        raise exc
    assert caught.value.permanent is permanent

    class State:  # what Prefect hands a retry condition: a failed state whose result is the exception
        def result(self, raise_on_failure=False):
            return caught.value

    assert unless_permanent(None, None, State()) is not permanent
