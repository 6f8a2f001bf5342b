"""GitHubHost withholds the same secret files as the local checkout: by name and by content, for all three
code tools; what it serves is redacted."""

from __future__ import annotations

from typing import Iterator

import pytest
from pydantic import SecretStr

from nightwatch.codehosts.base import CodeHostError
from nightwatch.codehosts.github import GitHubHost
from tests.fakes.github import FakeGitHub

TOKEN = "ghp_" + "Q7w3Rt9Yp2Lk5Zx8Cv1Bn4Mj6Hg0Fd3Sa"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
NAMED = [".env", ".env.production", "config/master.key", "config/credentials/production.key", "deploy/id_rsa",
         "certs/server.pem", ".npmrc", "config/secrets.yml", "gcp/credentials.json", ".aws/credentials"]


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    gh = FakeGitHub("acme/shop")
    gh.add_file("app/models/order.rb", "class Order\n  def total\n    items.sum(&:price)\n  end\nend\n")
    gh.add_file("app/clients/partner.rb", f'class Partner\n  # zebrafinch\n  TOKEN = "{TOKEN}"\n  def call; end\nend\n')
    gh.add_file("docs/deploy-notes.md", "zebrafinch notes\n" + KEY)
    gh.add_file(".env.example", "STRIPE_SECRET_KEY=\n")
    for path in NAMED:
        gh.add_file(path, f"zebrafinch {TOKEN}\n")
    with gh:
        yield gh


def _host(fake: FakeGitHub) -> GitHubHost:
    return GitHubHost("acme/shop", SecretStr(fake.token), base_url=fake.url, retries=0, backoff_factor=0,
                      seconds_between_requests=0)


@pytest.mark.parametrize("path", NAMED)
def test_secret_files_are_withheld_by_name(fake: FakeGitHub, path: str) -> None:
    with pytest.raises(CodeHostError, match=f"{path} is withheld as a secret file") as refused:
        _host(fake).read_file(path)
    assert TOKEN not in str(refused.value)


def test_secret_files_are_withheld_by_content_left_out_of_search_and_listings(fake: FakeGitHub) -> None:
    host = _host(fake)
    with pytest.raises(CodeHostError, match="docs/deploy-notes.md is withheld as a secret file .it holds private key"):
        host.read_file("docs/deploy-notes.md")
    hits = host.search_code("zebrafinch")
    assert [h.path for h in hits] == ["app/clients/partner.rb"] and all(TOKEN not in h.text for h in hits)
    assert host.list_directory() == [".aws/", ".env.example", "app/", "certs/", "config/", "deploy/", "docs/", "gcp/"]
    assert host.list_directory(".aws") == []
    assert host.list_directory("config") == ["config/credentials/"]
    assert host.list_directory("deploy") == []


def test_served_files_are_redacted(fake: FakeGitHub) -> None:
    text = _host(fake).read_file("app/clients/partner.rb", numbered=True)
    assert TOKEN not in text and '    3|   TOKEN = "[REDACTED]"' in text
    assert _host(fake).read_file(".env.example") == "STRIPE_SECRET_KEY=\n"
