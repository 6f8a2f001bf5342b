"""The fix gate: applies, parses, is not a symptom-only patch, clears the confidence bar; each check listed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nightwatch.codehosts.local import LocalRepoHost
from nightwatch.fix_gate import check_fix, parse_check
from nightwatch.models import FileChange
from nightwatch.symptom_patch import Crash, symptom_only_reason
from tests.builders import analysis
from tests.gitrepo import commit_all

CHANNEL = """class ChannelsController < ApplicationController
  def read
    @channel = Channel.find_by(slug: params[:slug])
    @channel.touch_all
    @channel.of_messages.update_all(read: true)
    head :ok
  end
end
"""
TOKENS = """class TokensController < ApplicationController
  def show
    @user = User.find_by(id: params[:id])
    render json: { token: @user.token, name: @user.username }
  end
end
"""
GUARDED = """class ProfilesController < ApplicationController
  def show
    @user = User.find_by(id: params[:id])
    render json: { name: @user.username }
  end
end
"""
ORDERS_PY = """def receipt(order_id):
    order = Order.objects.filter(pk=order_id).first()
    total = order.total
    return {"total": total, "items": order.items.count()}
"""


def modify(path: str, before: str, after: str) -> FileChange:
    return FileChange(path=path, action="modify", before=before, after=after)


def new_texts(original: str, change: FileChange) -> dict[str, str]:
    return {change.path: original.replace(change.before or "", change.after or "", 1)}


def reason(original: str, change: FileChange, crash: Crash | None) -> str | None:
    return symptom_only_reason([change], new_texts(original, change), crash)


def test_safe_navigation_with_the_receiver_unguarded_on_the_next_line_is_symptom_only() -> None:
    change = modify("app/controllers/channels_controller.rb", "    @channel.touch_all\n", "    @channel&.touch_all\n")
    found = reason(CHANNEL, change, Crash("app/controllers/channels_controller.rb", 4))
    assert found and "`@channel`" in found and "@channel.of_messages" in found and "line 5" in found


def test_safe_navigation_with_the_receiver_unguarded_on_the_same_line_is_symptom_only() -> None:
    change = modify("app/controllers/tokens_controller.rb", "token: @user.token", "token: @user&.token")
    found = reason(TOKENS, change, Crash("app/controllers/tokens_controller.rb", 4))
    assert found and "@user.username" in found and "same line" in found


def test_a_guard_that_covers_every_use_is_a_fix() -> None:
    change = modify("app/controllers/profiles_controller.rb", "    render json: { name: @user.username }\n",
                    "    return head(:not_found) unless @user\n    render json: { name: @user.username }\n")
    assert reason(GUARDED, change, Crash("app/controllers/profiles_controller.rb", 4)) is None
    whole_line = modify("app/controllers/tokens_controller.rb", "token: @user.token, name: @user.username",
                        "token: @user&.token, name: @user&.username")
    assert reason(TOKENS, whole_line, Crash("app/controllers/tokens_controller.rb", 4)) is None


def test_rescue_nil_and_a_swallowing_except_are_symptom_only() -> None:
    change = modify("app/controllers/channels_controller.rb", "    @channel.touch_all\n", "    @channel.touch_all rescue nil\n")
    assert "swallows every error" in reason(CHANNEL, change, Crash("app/controllers/channels_controller.rb", 4))
    py = modify("orders/views.py", "    total = order.total\n", "    try:\n        total = order.total\n    except AttributeError:\n        pass\n")
    assert "swallows every error" in reason(ORDERS_PY, py, Crash("orders/views.py", 3))


def test_python_getattr_and_early_return() -> None:
    getattr_patch = modify("orders/views.py", "    total = order.total\n", '    total = getattr(order, "total", None)\n')
    found = reason(ORDERS_PY, getattr_patch, Crash("orders/views.py", 3))
    assert found and "order.items" in found
    early = modify("orders/views.py", "    total = order.total\n", "    if order is None:\n        return None\n    total = order.total\n")
    assert reason(ORDERS_PY, early, Crash("orders/views.py", 3)) is None


def test_a_change_away_from_the_crash_line_is_not_judged_a_symptom_patch() -> None:
    change = modify("app/controllers/channels_controller.rb", "    @channel.touch_all\n", "    @channel&.touch_all\n")
    assert reason(CHANNEL, change, Crash("app/models/channel.rb", 10)) is None
    assert reason(CHANNEL, change, None) is not None  # an unknown crash site is judged


@pytest.mark.parametrize("path,good,bad", [
    ("app.py", "x = 1\n", "x = (\n"),
    ("app.js", "const x = 1;\n", "const x = (;\n"),
    ("app.rb", "x = 1\n", "def x(\n"),
])
def test_parse_check(path: str, good: str, bad: str) -> None:
    tool = {"app.py": "python", "app.js": "node", "app.rb": "ruby"}[path]
    if tool != "python" and shutil.which(tool) is None:
        check = parse_check(path, good)
        assert check.status == "not_checked" and "not installed" in check.detail
        return
    assert parse_check(path, good).status == "passed"
    failed = parse_check(path, bad)
    assert failed.status == "failed" and failed.detail
    assert parse_check("README.md", "#").status == "not_checked"


def test_the_gate_runs_every_check_and_refuses_on_any_failure(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "app/controllers").mkdir(parents=True)
    (root / "app/controllers/tokens_controller.rb").write_text(TOKENS)
    (root / "orders").mkdir()
    (root / "orders/views.py").write_text(ORDERS_PY)
    host = LocalRepoHost(commit_all(root))
    symptom = analysis(has_fix=True, confidence="high",
                       file_changes=[modify("app/controllers/tokens_controller.rb", "token: @user.token", "token: @user&.token")])
    gate, fix = check_fix(symptom, host, "medium", Crash("app/controllers/tokens_controller.rb", 4))
    assert fix is not None and not gate.passed
    assert [c.name for c in gate.checks] == ["confidence", "applies", "parses: app/controllers/tokens_controller.rb", "not symptom-only"]
    assert "not symptom-only" in gate.refusal
    broken = symptom.model_copy(update={"confidence": "medium", "file_changes": [
        modify("orders/views.py", "    if order is None:\n", "x"), modify("orders/views.py", "    total = order.total\n", "    total = (\n")]})
    gate, fix = check_fix(broken, host, "high", Crash("orders/views.py", 3))
    assert fix is None and [c.status for c in gate.checks] == ["failed", "failed"]
    good = broken.model_copy(update={"confidence": "high", "file_changes": [
        modify("orders/views.py", "    total = order.total\n", "    if order is None:\n        return None\n    total = order.total\n")]})
    gate, fix = check_fix(good, host, "high", Crash("orders/views.py", 3))
    assert gate.passed and fix is not None and [c.status for c in gate.checks] == ["passed"] * 4


STORY = """class Story
  def other(t)
    t.tag.valid?
  end

  def title=(t)
    self[:title] = t.strip.gsub(/x/, '')
  end
end
"""


def test_safe_navigation_that_goes_on_with_a_plain_dot_is_symptom_only_and_a_setter_is_not_an_endless_def() -> None:
    chain = modify("app/models/story.rb", "t.strip.gsub", "t&.strip.gsub")
    found = reason(STORY, chain, Crash("app/models/story.rb", 7))
    assert found and "goes on with a plain `.` after `&.`" in found
    whole = modify("app/models/story.rb", "t.strip.gsub", "t&.strip&.gsub")
    assert reason(STORY, whole, Crash("app/models/story.rb", 7)) is None  # `other`'s `t.tag` is another method's `t`


@pytest.mark.parametrize("body", ["-" * 100_000 + "1", "1+" * 100_000 + "1", "a." * 100_000 + "b", "'a'\0"])
def test_a_python_change_the_parser_gives_up_on_fails_its_check_and_raises_nothing(body: str) -> None:
    check = parse_check("app/pricing.py", f"def total():\n    return {body}\n")
    assert check.status == "failed" and ("cannot parse" in check.detail or "null bytes" in check.detail)
