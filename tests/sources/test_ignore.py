"""Ignore rules: matching, field selection, and errors that say which rule is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from nightwatch.ignore import IgnoreRule, InvalidIgnoreRules, apply_ignore_rules, load_ignore_rules
from nightwatch.models import ErrorGroup

ROUTING = ErrorGroup(
    error_class="ActionController::RoutingError",
    transaction="Controller/application/not_found",
    message="No route matches [GET] /wp-login.php",
)
CRASH = ErrorGroup(
    error_class="NoMethodError", transaction="Controller/orders/show", message="undefined method `total'"
)
JOB = ErrorGroup(
    error_class="Net::ReadTimeout", transaction="OtherTransaction/Sidekiq/SyncJob", message="Net::ReadTimeout"
)


def rule(pattern: str, match: str = "contains", field: str = "any") -> IgnoreRule:
    return IgnoreRule(pattern=pattern, match=match, field=field, reason="test")  # type: ignore[arg-type]


def ignored_classes(*rules: IgnoreRule) -> list[str]:
    return [error.error_class for error, _ in apply_ignore_rules([ROUTING, CRASH, JOB], list(rules))[1]]


def test_each_match_kind() -> None:
    assert ignored_classes(rule("RoutingError")) == ["ActionController::RoutingError"]
    assert ignored_classes(rule("RoutingError", "exact")) == []
    assert ignored_classes(rule("ActionController::RoutingError", "exact")) == ["ActionController::RoutingError"]
    assert ignored_classes(rule("Net::", "prefix")) == ["Net::ReadTimeout"]
    assert ignored_classes(rule("Timeout", "prefix")) == []
    assert ignored_classes(rule(r"wp-(login|admin)\.php$", "regex")) == ["ActionController::RoutingError"]


def test_matching_is_case_sensitive_unless_the_regex_says_otherwise() -> None:
    assert ignored_classes(rule("routingerror")) == []
    assert ignored_classes(rule("(?i)routingerror", "regex")) == ["ActionController::RoutingError"]


def test_field_selection() -> None:
    assert ignored_classes(rule("Sidekiq", field="transaction")) == ["Net::ReadTimeout"]
    assert ignored_classes(rule("Sidekiq", field="error_class")) == []
    assert ignored_classes(rule("undefined method", field="message")) == ["NoMethodError"]
    assert ignored_classes(rule("NoMethodError", field="message")) == []
    assert ignored_classes(rule("orders", field="any")) == ["NoMethodError"]


def test_apply_keeps_order_and_reports_the_first_matching_rule() -> None:
    first, second = rule("Error"), rule("NoMethod")
    kept, ignored = apply_ignore_rules([ROUTING, CRASH, JOB], [first, second])
    assert kept == [JOB]
    assert [(e.error_class, r) for e, r in ignored] == [(ROUTING.error_class, first), (CRASH.error_class, first)]
    assert apply_ignore_rules([CRASH], []) == ([CRASH], [])


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ignore.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_a_valid_file(tmp_path: Path) -> None:
    rules = load_ignore_rules(
        write(
            tmp_path,
            """
ignore:
  - pattern: "ActionController::RoutingError"
    match: exact
    field: error_class
    reason: bots probing URLs
  - pattern: Sidekiq
    reason: jobs retry by themselves
""",
        )
    )
    assert [(r.pattern, r.match, r.field) for r in rules] == [
        ("ActionController::RoutingError", "exact", "error_class"),
        ("Sidekiq", "contains", "any"),
    ]


@pytest.mark.parametrize("text", ["", "ignore:\n", "ignore: []\n", "# nothing yet\n"])
def test_empty_or_missing_list_is_fine(tmp_path: Path, text: str) -> None:
    assert load_ignore_rules(write(tmp_path, text)) == []


def test_no_path_means_no_rules() -> None:
    assert load_ignore_rules(None) == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            "- pattern: '(unclosed'\n    match: regex\n    reason: r",
            "ignore[1] (pattern '(unclosed'): invalid regex '(unclosed': missing ) at position 9",
        ),
        (
            "- pattern: x\n    match: glob\n    reason: r",
            "ignore[1] (pattern 'x'): unknown match kind 'glob' (expected contains, exact, prefix or regex)",
        ),
        ("- pattern: x", "ignore[1] (pattern 'x'): missing required key 'reason'"),
        ("- pattern: x\n    reason: '  '", "ignore[1] (pattern 'x'): 'reason' must not be empty"),
        ("- pattern: x\n    reason: r\n    regex: true", "ignore[1] (pattern 'x'): unknown key 'regex'"),
        ("- pattern: x\n    reason: r\n    field: stack", "ignore[1] (pattern 'x'): unknown field 'stack'"),
        ("- just a string", "ignore[1] (no pattern): a rule must be a mapping"),
    ],
)
def test_invalid_rule_messages_name_the_file_and_the_rule(tmp_path: Path, entry: str, problem: str) -> None:
    path = write(tmp_path, f"ignore:\n  - pattern: fine\n    reason: ok\n  {entry}\n")
    with pytest.raises(InvalidIgnoreRules) as info:
        load_ignore_rules(path)
    assert str(path) in str(info.value)
    assert problem in str(info.value)


def test_every_invalid_rule_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, "ignore:\n  - pattern: a\n  - pattern: b\n    match: fuzzy\n    reason: r\n")
    with pytest.raises(InvalidIgnoreRules, match="2 invalid rule"):
        load_ignore_rules(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ignore: [", "is not valid YAML"),
        ("- pattern: x\n", "must be a mapping with an 'ignore:' list"),
        ("ignore:\n  pattern: x\n", "'ignore' must be a list of rules"),
        ("ignores:\n  - pattern: x\n", "unknown top-level key(s) ignores"),
    ],
)
def test_invalid_file_shapes(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(InvalidIgnoreRules) as info:
        load_ignore_rules(write(tmp_path, text))
    assert problem in str(info.value)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidIgnoreRules, match="does not exist"):
        load_ignore_rules(tmp_path / "nope.yml")
