"""LocalRepoHost: confinement to the checkout, only tracked and non-secret files served, reads, search,
default branch and merged PRs from git."""

from __future__ import annotations

import hashlib
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nightwatch.codehosts.base import CodeHostError, SearchHit
from nightwatch.codehosts.local import LocalRepoHost, run_git

NOW = datetime(2026, 11, 20, 3, 0, tzinfo=timezone.utc)
ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@x.invalid"}


def git(repo: Path, *args: str, author: str = "ci", hours_ago: float = 48) -> str:
    when = (NOW - timedelta(hours=hours_ago)).isoformat()
    env = {**ENV, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@x.invalid", "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    return run_git(repo, "-c", "commit.gpgsign=false", *args, env=env)


def write(repo: Path, rel: str, text: str | bytes) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def commit(repo: Path, message: str, author: str = "ci", hours_ago: float = 48) -> None:
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message, author=author, hours_ago=hours_ago)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repo on `trunk`: an initial commit, a squash-merged PR, a merged PR branch and a plain commit."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "--quiet", "-b", "trunk")
    write(root, "app/models/order.rb", "class Order\n  def total\n    items.sum(&:price)\n  end\nend\n")
    write(root, "app/services/checkout.rb", "class Checkout\n  def call(order)\n    order.total\n  end\nend\n")
    write(root, "README.md", "# Shop\n")
    commit(root, "Initial commit", hours_ago=200)
    write(root, "app/models/order.rb", "class Order\n  def total\n    items.sum(&:price) - discount\n  end\nend\n")
    commit(root, "Apply discounts to order totals (#12)", author="dana", hours_ago=30)
    git(root, "checkout", "--quiet", "-b", "feature/gift-cards")
    write(root, "app/services/gift_card.rb", "class GiftCard\n  def redeem(order)\n    order.total\n  end\nend\n")
    commit(root, "Add gift cards", author="erin", hours_ago=12)
    git(root, "checkout", "--quiet", "trunk")
    git(root, "merge", "--quiet", "--no-ff", "-m", "Merge pull request #15 from acme/feature/gift-cards",
        "-m", "Add gift card redemption", "feature/gift-cards", hours_ago=10)
    write(root, "README.md", "# Shop\n\nNow with gift cards.\n")
    commit(root, "Update readme", hours_ago=5)
    return root


def test_reads_whole_files_and_line_ranges_with_numbers(repo: Path) -> None:
    host = LocalRepoHost(repo)
    assert host.read_file("app/models/order.rb").startswith("class Order\n")
    assert host.read_file("app/models/order.rb", start_line=2, end_line=3) == "  def total\n    items.sum(&:price) - discount\n"
    numbered = host.read_file("./app/models/order.rb", start_line=4, end_line=99, numbered=True)
    assert numbered == "    4|   end\n    5| end\n"
    with pytest.raises(CodeHostError, match=r"start_line 9 is past the end of app/models/order.rb \(5 lines\)"):
        host.read_file("app/models/order.rb", start_line=9)
    with pytest.raises(CodeHostError, match="no such file: app/models/missing.rb"):
        host.read_file("app/models/missing.rb")
    with pytest.raises(CodeHostError, match="app/models is a directory; use list_directory"):
        host.read_file("app/models")


def test_large_files_are_capped_with_a_note_and_binaries_refused(repo: Path) -> None:
    write(repo, "db/seeds.rb", "".join(f"Seed.create!(id: {i})  # {'x' * 60}\n" for i in range(5000)))
    write(repo, "public/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    commit(repo, "Seeds and logo")
    host = LocalRepoHost(repo)
    text = host.read_file("db/seeds.rb")
    assert len(text.encode()) < 201_000
    assert "truncated" in text and "read further with start_line=" in text
    assert host.read_file("db/seeds.rb", start_line=4999).startswith("Seed.create!(id: 4998)")
    with pytest.raises(CodeHostError, match="binary file, not readable as text: public/logo.png"):
        host.read_file("public/logo.png")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../etc/passwd", "path escapes the repository: ../etc/passwd"),
        ("app/../../secrets.txt", "path escapes the repository"),
        ("/etc/passwd", "absolute paths are not allowed: /etc/passwd"),
        ("C:/Windows/win.ini", "absolute paths are not allowed"),
        ("app/models\x00.rb", "NUL byte"),
        (".git/config", "the .git directory is not part of the code"),
        ("", "empty path"),
    ],
)
def test_unsafe_paths_are_refused_with_clear_messages(repo: Path, path: str, message: str) -> None:
    host = LocalRepoHost(repo)
    with pytest.raises(CodeHostError, match=re.escape(message)):
        host.read_file(path)
    assert host.file_digest(path) is None


def test_symlinks_out_of_the_repository_are_refused_everywhere(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-VALUE order\n")
    (repo / "leak.txt").symlink_to(outside / "secret.txt")
    (repo / "vendor").symlink_to(outside, target_is_directory=True)
    (repo / "git_head").symlink_to(repo / ".git" / "HEAD")
    (repo / "models").symlink_to(repo / "app" / "models", target_is_directory=True)
    host = LocalRepoHost(repo)
    with pytest.raises(CodeHostError, match="symlink points outside the repository: leak.txt"):
        host.read_file("leak.txt")
    with pytest.raises(CodeHostError, match="symlink points outside the repository: vendor/secret.txt"):
        host.read_file("vendor/secret.txt")
    with pytest.raises(CodeHostError, match="points into .git"):
        host.read_file("git_head")
    assert host.read_file("models/order.rb").startswith("class Order")  # a symlink inside the repo is fine
    assert "leak.txt" not in host.list_directory() and "vendor/" not in host.list_directory()
    assert all("SECRET" not in hit.text for hit in host.search_code("secret"))
    assert host.file_digest("leak.txt") is None


def test_list_directory_gives_paths_with_folders_marked(repo: Path) -> None:
    host = LocalRepoHost(repo)
    assert host.list_directory() == ["README.md", "app/"]
    assert host.list_directory("app/services") == ["app/services/checkout.rb", "app/services/gift_card.rb"]
    with pytest.raises(CodeHostError, match="README.md is a file; use read_file"):
        host.list_directory("README.md")
    with pytest.raises(CodeHostError, match="no such directory: lib"):
        host.list_directory("lib")


def test_search_is_case_insensitive_and_respects_glob_regex_and_limit(repo: Path) -> None:
    write(repo, "log/huge.log", "order.total\n" * 120_000)  # > 1 MB: skipped
    write(repo, "public/blob.bin", b"\x00order.total")  # binary: skipped
    commit(repo, "A huge log and a binary")
    host = LocalRepoHost(repo)
    hits = host.search_code("ORDER.TOTAL")
    assert hits == [
        SearchHit(path="app/services/checkout.rb", line=3, text="order.total"),
        SearchHit(path="app/services/gift_card.rb", line=3, text="order.total"),
    ]
    assert [h.path for h in host.search_code("def", path_glob="app/models/*.rb")] == ["app/models/order.rb"]
    assert [h.path for h in host.search_code("class", path_glob="*.rb", limit=2)] == ["app/models/order.rb", "app/services/checkout.rb"]
    assert [(h.path, h.line) for h in host.search_code(r"def \w+\(order\)", regex=True)] == [
        ("app/services/checkout.rb", 2), ("app/services/gift_card.rb", 2)]
    assert host.search_code("refs/heads") == []  # .git is never searched
    with pytest.raises(CodeHostError, match="invalid regular expression"):
        host.search_code("def (", regex=True)
    with pytest.raises(CodeHostError, match="empty search query"):
        host.search_code("  ")


def test_default_branch_is_detected_not_assumed(repo: Path, tmp_path: Path) -> None:
    assert LocalRepoHost(repo).default_branch() == "trunk"
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "--quiet", str(repo), str(clone), env=ENV)
    git(clone, "checkout", "--quiet", "-b", "my-feature")
    assert LocalRepoHost(clone).default_branch() == "trunk"  # origin/HEAD wins over the current branch
    git(repo, "checkout", "--quiet", "--detach")
    with pytest.raises(CodeHostError, match="cannot tell the default branch"):
        LocalRepoHost(repo).default_branch()
    git(repo, "config", "init.defaultBranch", "develop")
    assert LocalRepoHost(repo).default_branch() == "develop"
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(CodeHostError, match="not a git repository"):
        LocalRepoHost(plain).default_branch()


def test_merged_prs_come_from_merge_and_squash_commits(repo: Path) -> None:
    host = LocalRepoHost(repo)
    prs = host.recent_merged_prs(NOW - timedelta(days=3))
    assert [(p.number, p.title, p.author) for p in prs] == [
        (15, "Add gift card redemption", "erin"),
        (12, "Apply discounts to order totals", "dana"),
    ]
    assert prs[0].files == ["app/services/gift_card.rb"]
    assert prs[1].files == ["app/models/order.rb"]
    assert prs[0].merged_at == NOW - timedelta(hours=10)
    assert [p.number for p in host.recent_merged_prs(NOW - timedelta(hours=20))] == [15]
    assert [p.number for p in host.recent_merged_prs(NOW - timedelta(days=3), limit=1)] == [15]


def test_pr_urls_point_at_github_when_origin_is_github(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "git@github.com:acme/shop.git")
    prs = LocalRepoHost(repo).recent_merged_prs((NOW - timedelta(days=3)).replace(tzinfo=None))
    assert prs[0].url == "https://github.com/acme/shop/pull/15"


def test_file_digest_is_sha256_of_current_bytes(repo: Path) -> None:
    host = LocalRepoHost(repo)
    expected = hashlib.sha256((repo / "README.md").read_bytes()).hexdigest()
    assert host.file_digest("README.md") == expected
    assert host.file_digest("missing.rb") is None
    assert host.file_digest("app") is None
    write(repo, "README.md", "changed\n")
    assert host.file_digest("README.md") != expected


# --- only tracked files, never secret files --------------------------------------------------------

SECRET = "sk_live_" + "9Zq4Xw2Lr8Kp1Vb6Nd3Ht7Ys"


def test_git_ignored_and_untracked_files_are_not_served(repo: Path) -> None:
    write(repo, ".gitignore", "tmp/\n*.local.yml\n")
    commit(repo, "Ignore scratch files")
    write(repo, "tmp/dump.txt", f"order.total {SECRET}\n")
    write(repo, "config/settings.local.yml", f"order_total_key: {SECRET}\n")
    write(repo, "notes.txt", f"order.total {SECRET}\n")  # untracked, not ignored
    host = LocalRepoHost(repo)
    for path in ("tmp/dump.txt", "config/settings.local.yml", "notes.txt"):
        with pytest.raises(CodeHostError, match=re.escape(f"{path} is not tracked by git, so it is not served")):
            host.read_file(path)
    assert all(hit.path.startswith("app/") for hit in host.search_code("order.total"))
    assert host.list_directory() == [".gitignore", "README.md", "app/"]
    with pytest.raises(CodeHostError, match="no such directory among the files git tracks: tmp"):
        host.list_directory("tmp")


def test_a_folder_without_git_serves_nothing_and_says_why(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    write(plain, "app/models/order.rb", "class Order\nend\n")
    host = LocalRepoHost(plain)
    for call in (lambda: host.read_file("app/models/order.rb"), lambda: host.search_code("Order"),
                 lambda: host.list_directory("")):
        with pytest.raises(CodeHostError, match=re.escape(f"{plain.resolve()} is not a git checkout")):
            call()


@pytest.mark.parametrize(
    "path",
    [".env", ".env.production", "config/master.key", "config/credentials/production.key",
     "config/credentials.yml.enc", "config/secrets.yml", "deploy/id_rsa", "deploy/id_ed25519", "certs/server.pem",
     "certs/store.p12", "certs/store.pfx", "android/release.keystore", "android/release.jks", "ops/vault.kdbx",
     "gcp/credentials-prod.json", ".npmrc", ".pypirc", ".netrc", ".git-credentials", ".aws/credentials",
     "keys/deploy.ppk", "infra/terraform.tfstate"],
)
def test_secret_files_are_withheld_by_name_even_when_committed(repo: Path, path: str) -> None:
    write(repo, path, f"order.total {SECRET}\n")
    git(repo, "add", "--force", path)
    commit(repo, f"Commit {path} by mistake")
    host = LocalRepoHost(repo)
    with pytest.raises(CodeHostError, match=re.escape(f"{path} is withheld as a secret file")) as refused:
        host.read_file(path)
    assert SECRET not in str(refused.value)
    assert all(hit.path.startswith("app/") for hit in host.search_code("order.total"))
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    assert path not in host.list_directory(folder)


def test_secret_files_are_withheld_by_content_and_through_symlinks(repo: Path) -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq" + "Qx9" * 20 + "\n-----END RSA PRIVATE KEY-----\n"
    write(repo, "docs/ops-notes.txt", "order.total notes\n" + key)
    write(repo, "config/partner.rb", f'PARTNER_TOKEN = "{SECRET}"\n')  # one line, all credential
    write(repo, ".env", f"ORDER_TOTAL_TOKEN={SECRET}\n")
    (repo / "config" / "app_env").symlink_to("../.env")
    write(repo, ".env.example", "STRIPE_SECRET_KEY=\nDATABASE_URL=postgres://localhost/shop\n")
    git(repo, "add", "docs", "config", ".env.example")
    commit(repo, "Notes, partner settings and an env template")
    host = LocalRepoHost(repo)
    with pytest.raises(CodeHostError, match="docs/ops-notes.txt is withheld as a secret file .it holds private key material"):
        host.read_file("docs/ops-notes.txt")
    with pytest.raises(CodeHostError, match="config/partner.rb is withheld as a secret file .1 of its 1 lines are credentials"):
        host.read_file("config/partner.rb")
    with pytest.raises(CodeHostError, match="config/app_env is withheld as a secret file"):
        host.read_file("config/app_env")  # a tracked symlink to an ignored secret file
    assert [h.path for h in host.search_code("order.total")] == ["app/services/checkout.rb", "app/services/gift_card.rb"]
    assert host.search_code("MIIEow") == [] and host.search_code("PARTNER_TOKEN") == []
    assert "STRIPE_SECRET_KEY=" in host.read_file(".env.example")  # a template is meant to be read


def test_served_text_is_redacted_before_it_is_cut(repo: Path) -> None:
    line = "x = 1  # " + "y" * 280 + f" charge with {SECRET}\n"  # the secret straddles the 300-character hit cut
    write(repo, "app/services/billing.rb", "class Billing\n" + line + "end\n" * 60)
    commit(repo, "Billing")
    host = LocalRepoHost(repo)
    assert SECRET not in host.read_file("app/services/billing.rb")
    hit = host.search_code("charge with", path_glob="app/services/billing.rb")[0]
    assert SECRET[:8] not in hit.text and "sk_live" not in hit.text
    assert "[REDACTED]" in host.read_file("app/services/billing.rb", start_line=2, end_line=2, numbered=True)
