"""Pattern detection and ignore suggestions over constructed results and history."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import yaml

from nightwatch.models import Analysis, DetectedPattern, ErrorAnalysisResult, ErrorGroup, TriageVerdict
from nightwatch.patterns import (
    detect_patterns,
    extract_tags,
    module_of,
    pattern_doc,
    rule_matches,
    suggest_ignore_updates,
)


def make_result(
    error_class: str,
    transaction: str = "Controller/orders/update",
    root_cause: str = "",
    has_fix: bool = False,
    confidence: str = "medium",
    occurrences: int = 10,
    message: str = "failure",
    category: str = "unknown",
    with_analysis: bool = True,
) -> ErrorAnalysisResult:
    error = ErrorGroup(error_class=error_class, transaction=transaction, message=message, occurrences=occurrences)
    analysis = Analysis(title="t", reasoning="r", root_cause=root_cause or f"{error_class} specific cause",
                        has_fix=has_fix, confidence=confidence)  # type: ignore[arg-type]
    verdict = TriageVerdict(fingerprint=error.fingerprint, category=category)  # type: ignore[arg-type]
    return ErrorAnalysisResult(run_id="run-9", error=error, verdict=verdict,
                               analysis=analysis if with_analysis else None)


def history_entry(error_class: str, transaction: str, run_count: int = 1, has_fix: bool = False,
                  confidence: str = "medium", fingerprint: str | None = None) -> dict:
    return {"error_class": error_class, "transaction": transaction, "run_count": run_count, "has_fix": has_fix,
            "fix_confidence": confidence, "occurrences": 5 * run_count,
            "fingerprint": fingerprint or hashlib.sha256(f"{error_class}|{transaction}".encode()).hexdigest()[:16],
            "tags": sorted(extract_tags(error_class, transaction))}


def by_type(patterns: list[DetectedPattern], pattern_type: str) -> list[DetectedPattern]:
    return [p for p in patterns if p.pattern_type == pattern_type]


def test_the_same_root_cause_behind_different_errors_is_one_systemic_issue() -> None:
    cause = "The orders table lacks an index on customer_id so the query times out under load"
    results = [
        make_result("ActiveRecord::QueryCanceled", "Controller/orders/index", root_cause=cause),
        make_result("Rack::Timeout::RequestTimeoutException", "Controller/orders/search",
                    root_cause="Orders table lacks an index on customer_id; the query times out under load"),
        make_result("NoMethodError", "Controller/users/show", root_cause="nil user when the session expired"),
    ]
    (pattern,) = [p for p in detect_patterns(results, []) if p.title.startswith("Shared root cause")]
    assert pattern.pattern_type == "systemic_issue"
    assert pattern.error_classes == ["ActiveRecord::QueryCanceled", "Rack::Timeout::RequestTimeoutException"]
    assert pattern.modules == ["orders"] and pattern.occurrences == 20
    assert cause in pattern.description


def test_unrelated_root_causes_make_no_shared_pattern() -> None:
    results = [make_result("KeyError", root_cause="missing locale key in the en.yml file"),
               make_result("TypeError", "Controller/carts/show", root_cause="price string added to an integer")]
    assert not [p for p in detect_patterns(results, []) if p.title.startswith("Shared root cause")]


def test_an_error_class_seen_in_three_runs_is_recurring() -> None:
    history = [history_entry("Net::ReadTimeout", "Controller/payments/create"),
               history_entry("Net::ReadTimeout", "Controller/payments/refund")]
    results = [make_result("Net::ReadTimeout", "Controller/payments/update")]
    assert by_type(detect_patterns(results, history[:1]), "recurring_error") == []
    (pattern,) = by_type(detect_patterns(results, history), "recurring_error")
    assert pattern.title == "Recurring Net::ReadTimeout"
    assert "appeared 3 times" in pattern.description and pattern.modules == ["payments"]
    assert "ignore rule" in pattern.suggestion

    history[0]["has_fix"] = True
    (fixed,) = by_type(detect_patterns(results, history), "recurring_error")
    assert "merged" in fixed.suggestion


def test_recurring_history_alone_is_not_reported_tonight() -> None:
    history = [history_entry("Net::ReadTimeout", "Controller/payments/create", run_count=5)]
    assert by_type(detect_patterns([make_result("KeyError")], history), "recurring_error") == []
    twice = [history_entry("KeyError", "Controller/orders/show")]
    assert by_type(detect_patterns([make_result("KeyError")], twice), "recurring_error") == []


def test_several_error_classes_in_one_module_form_a_cluster() -> None:
    results = [make_result("KeyError", "Controller/checkout/create"),
               make_result("TypeError", "Controller/checkout/update")]
    history = [history_entry("NoMethodError", "Controller/checkout/show")]
    (cluster,) = [p for p in detect_patterns(results, history) if p.title.startswith("Errors cluster")]
    assert cluster.title == "Errors cluster in checkout" and cluster.modules == ["checkout"]
    assert cluster.error_classes == ["KeyError", "NoMethodError", "TypeError"]
    assert not [p for p in detect_patterns(results, []) if p.title.startswith("Errors cluster")]


def test_transient_errors_are_grouped_as_noise() -> None:
    results = [make_result("Net::ReadTimeout", "OtherTransaction/SidekiqJob/SyncJob/perform"),
               make_result("Faraday::ConnectionFailed", "Controller/payments/create"),
               make_result("Redis::CannotConnectError", "Controller/carts/show", category="transient"),
               make_result("Net::ReadTimeout", "Controller/maps/show", has_fix=True)]
    (noise,) = by_type(detect_patterns(results, []), "transient_noise")
    assert noise.error_classes == ["Faraday::ConnectionFailed", "Net::ReadTimeout", "Redis::CannotConnectError"]
    assert noise.occurrences == 30
    assert by_type(detect_patterns(results[:1], []), "transient_noise") == []


def test_ignore_suggestions_for_transient_recurring_and_never_understood_errors() -> None:
    results = [make_result("Net::OpenTimeout", "Controller/maps/show"),
               make_result("Legacy::Oddity", "Controller/reports/show", confidence="low"),
               make_result("Flaky::Thing", "Controller/x/y"),
               make_result("KeyError")]
    history = [history_entry("Legacy::Oddity", "Controller/reports/show", confidence="low",
                             fingerprint=results[1].fingerprint, run_count=2),
               history_entry("Flaky::Thing", "Controller/x/y", fingerprint=results[2].fingerprint, run_count=3)]
    suggestions = {s.pattern: s for s in suggest_ignore_updates(results, history, [])}

    assert set(suggestions) == {"Net::OpenTimeout", "Legacy::Oddity", "Flaky::Thing"}
    assert "transient" in suggestions["Net::OpenTimeout"].reason
    assert "confidence always low" in suggestions["Legacy::Oddity"].reason
    assert "3 runs" in suggestions["Flaky::Thing"].reason
    assert all(s.match == "exact" for s in suggestions.values())
    assert "Controller/x/y" in suggestions["Flaky::Thing"].evidence


def test_no_suggestion_when_a_fix_exists_or_a_rule_already_covers_it() -> None:
    timeout = make_result("Net::OpenTimeout", "Controller/maps/show", message="execution expired")
    fixed = make_result("Net::ReadTimeout", has_fix=True)
    rules_by_class = [{"pattern": "Net::OpenTimeout", "match": "exact"}]
    rules_by_message = [{"pattern": "expired", "match": "contains", "field": "message"}]
    rules_by_prefix = [{"pattern": "Net::", "match": "prefix"}]
    rules_by_regex = [{"pattern": r"Open\w+", "match": "regex"}]
    assert suggest_ignore_updates([fixed], [], []) == []
    for rules in (rules_by_class, rules_by_message, rules_by_prefix, rules_by_regex):
        assert suggest_ignore_updates([timeout], [], rules) == [], rules
    unrelated = [{"pattern": "Controller/admin", "match": "prefix", "field": "transaction"},
                 {"pattern": "([unclosed", "match": "regex"}]
    assert [s.pattern for s in suggest_ignore_updates([timeout], [], unrelated)] == ["Net::OpenTimeout"]


def test_rule_matching_respects_the_field() -> None:
    result = make_result("Net::OpenTimeout", "Controller/maps/show", message="execution expired")
    assert rule_matches({"pattern": "maps", "match": "contains"}, result)
    assert not rule_matches({"pattern": "maps", "match": "contains", "field": "error_class"}, result)
    assert rule_matches({"pattern": "expired", "match": "contains", "field": "any", "reason": "r"}, result)


def test_pattern_doc_has_a_stable_name_and_valid_frontmatter() -> None:
    pattern = DetectedPattern(title="Errors cluster in checkout", description="3 errors", error_classes=["KeyError"],
                              modules=["checkout"], occurrences=3, suggestion="Review it.",
                              pattern_type="systemic_issue")
    name, text = pattern_doc(pattern)
    assert name == "errors-cluster-in-checkout.md"
    assert pattern_doc(pattern.model_copy(update={"occurrences": 9}))[0] == name
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["kind"] == "pattern" and front["modules"] == ["checkout"] and front["occurrences"] == 3
    assert "# Errors cluster in checkout" in text and "- `KeyError`" in text


def test_module_of_uses_the_first_meaningful_word() -> None:
    assert module_of("Controller/orders/update") == "orders"
    assert module_of("OtherTransaction/SidekiqJob/OrderSyncJob/perform") == "ordersyncjob"


def test_patterns_core_never_imports_the_knowledge_store() -> None:
    code = "import sys, nightwatch.patterns; print(any(m.startswith('nightwatch.knowledge_store') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
