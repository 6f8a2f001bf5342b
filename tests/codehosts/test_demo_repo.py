"""materialize_demo_repo: a real git history replayed from a history file, built once and reused."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nightwatch.codehosts.demo_repo import DemoRepoError, materialize_demo_repo
from nightwatch.codehosts.local import LocalRepoHost, run_git

NOW = datetime(2026, 11, 20, 3, 0, tzinfo=timezone.utc)
CONTROLLER = """\
class CheckoutController < ApplicationController
  def create
    order = Order.find(params[:order_id])
    GiftCardRedeemer.new(order).redeem!(params[:code])
    order.pay!(amount: order.total_cents)
  end
end
"""
HISTORY = """\
default_branch: trunk
org: acme
pull_requests:
  - number: 481
    title: "Add gift card redemption at checkout"
    author: dana
    branch: feature/gift-cards
    merged_hours_ago: 30
    files:
      - path: app/services/gift_card_redeemer.rb
        created: true
      - path: app/controllers/checkout_controller.rb
        revert:
          - find: "    GiftCardRedeemer.new(order).redeem!(params[:code])\\n"
            replace: ""
  - number: 490
    title: "Charge in cents"
    author: erin
    branch: fix/cents
    merged_hours_ago: 6
    files:
      - path: app/controllers/checkout_controller.rb
        revert:
          - find: "amount: order.total_cents"
            replace: "amount: order.total"
"""


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Path]:
    app = tmp_path / "app"
    (app / "app/controllers").mkdir(parents=True)
    (app / "app/services").mkdir(parents=True)
    (app / "app/controllers/checkout_controller.rb").write_text(CONTROLLER)
    (app / "app/services/gift_card_redeemer.rb").write_text("class GiftCardRedeemer\nend\n")
    (app / "README.md").write_text("# Demo shop\n")
    history = tmp_path / "history.yml"
    history.write_text(HISTORY)
    return app, history


def git_out(repo: Path, *args: str) -> str:
    return run_git(repo, *args)


def test_final_tree_equals_the_app_and_history_is_replayed(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    repo = materialize_demo_repo(app, history, tmp_path / "repo", NOW)
    tracked = sorted(git_out(repo, "ls-files").split())
    assert tracked == ["README.md", "app/controllers/checkout_controller.rb", "app/services/gift_card_redeemer.rb"]
    for rel in tracked:
        assert (repo / rel).read_bytes() == (app / rel).read_bytes()
    assert git_out(repo, "status", "--porcelain") == ""
    host = LocalRepoHost(repo)
    assert host.default_branch() == "trunk"
    prs = host.recent_merged_prs(NOW - timedelta(days=7))
    assert [(p.number, p.title, p.author, p.merged_at) for p in prs] == [
        (490, "Charge in cents", "erin", NOW - timedelta(hours=6)),
        (481, "Add gift card redemption at checkout", "dana", NOW - timedelta(hours=30)),
    ]
    assert prs[1].files == ["app/controllers/checkout_controller.rb", "app/services/gift_card_redeemer.rb"]
    subjects = git_out(repo, "log", "--first-parent", "--format=%s").splitlines()
    assert subjects[0] == "Merge pull request #490 from acme/fix/cents"


def test_each_pre_pr_state_is_the_reverted_text(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    repo = materialize_demo_repo(app, history, tmp_path / "repo", NOW)
    merges = git_out(repo, "log", "--merges", "--format=%H").split()  # newest first: #490, #481
    before_490 = git_out(repo, "show", f"{merges[0]}^1:app/controllers/checkout_controller.rb")
    assert "amount: order.total)" in before_490 and "GiftCardRedeemer" in before_490
    before_481 = git_out(repo, "show", f"{merges[1]}^1:app/controllers/checkout_controller.rb")
    assert "GiftCardRedeemer" not in before_481
    initial_files = git_out(repo, "ls-tree", "-r", "--name-only", f"{merges[1]}^1").split()
    assert "app/services/gift_card_redeemer.rb" not in initial_files
    first_date = git_out(repo, "log", "--reverse", "--format=%cI").splitlines()[0]
    assert datetime.fromisoformat(first_date) < NOW - timedelta(hours=30)


def test_materialization_is_reused_when_inputs_are_unchanged(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    dest = tmp_path / "repo"
    materialize_demo_repo(app, history, dest, NOW)
    head = git_out(dest, "rev-parse", "HEAD")
    marker = dest / "untracked-marker"
    marker.write_text("still here if reused")
    materialize_demo_repo(app, history, dest, NOW)
    assert marker.exists() and git_out(dest, "rev-parse", "HEAD") == head
    (app / "README.md").write_text("# Demo shop, renamed\n")
    materialize_demo_repo(app, history, dest, NOW)
    assert not marker.exists()
    assert (dest / "README.md").read_text() == "# Demo shop, renamed\n"
    assert not list(tmp_path.glob(".repo.*"))  # no build folders left behind


def test_same_inputs_give_the_same_commits(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    first = materialize_demo_repo(app, history, tmp_path / "a", NOW)
    second = materialize_demo_repo(app, history, tmp_path / "b", NOW)
    assert git_out(first, "rev-parse", "HEAD") == git_out(second, "rev-parse", "HEAD")


def test_a_revert_that_does_not_match_exactly_once_names_pr_file_and_text(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    history.write_text(HISTORY.replace('find: "amount: order.total_cents"', 'find: "amount: order.subtotal"'))
    with pytest.raises(DemoRepoError, match=r"PR #490, file app/controllers/checkout_controller.rb: .*not found: 'amount: order.subtotal'"):
        materialize_demo_repo(app, history, tmp_path / "repo", NOW)
    history.write_text(HISTORY.replace('find: "amount: order.total_cents"', 'find: "order"'))
    with pytest.raises(DemoRepoError, match="found 5 times"):
        materialize_demo_repo(app, history, tmp_path / "repo", NOW)
    assert not (tmp_path / "repo").exists() and not list(tmp_path.glob(".repo.*"))


def test_invalid_history_and_foreign_destinations_are_refused(demo: tuple[Path, Path], tmp_path: Path) -> None:
    app, history = demo
    bad = tmp_path / "bad.yml"
    bad.write_text(textwrap.dedent("""\
        pull_requests:
          - number: 1
            title: x
    """))
    with pytest.raises(DemoRepoError, match="is invalid"):
        materialize_demo_repo(app, bad, tmp_path / "repo", NOW)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    with pytest.raises(DemoRepoError, match="is not a NightWatch demo repository"):
        materialize_demo_repo(app, history, mine, NOW)
    assert (mine / "thesis.tex").read_text() == "precious"
