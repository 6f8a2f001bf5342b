from nightwatch.fingerprint import fingerprint_of, mask_message, normalise_transaction
from nightwatch.models import ErrorGroup


def test_ids_numbers_uuids_are_masked():
    masked = mask_message("Couldn't find Order 5f1c2e3a-1111-2222-3333-444455556666 for user 42 at 10.0.0.1")
    assert "5f1c2e3a" not in masked and "42" not in masked and "10.0.0.1" not in masked
    assert "<uuid>" in masked and "<n>" in masked and "<ip>" in masked


def test_same_defect_same_fingerprint_across_ids():
    a = fingerprint_of("ActiveRecord::RecordNotFound", "Controller/orders/update", "Couldn't find Order with 'id'=12345")
    b = fingerprint_of("ActiveRecord::RecordNotFound", "Controller/orders/update", "Couldn't find Order with 'id'=999")
    assert a == b


def test_transaction_ids_normalised():
    assert normalise_transaction("WebTransaction/Uri/api/v1/orders/1001/refund") == normalise_transaction(
        "WebTransaction/Uri/api/v1/orders/2002/refund"
    )
    assert normalise_transaction("Controller/orders/show") == "Controller/orders/show"


def test_different_class_or_transaction_differs():
    base = fingerprint_of("NoMethodError", "Controller/orders/show", "undefined method `email' for nil")
    assert base != fingerprint_of("NameError", "Controller/orders/show", "undefined method `email' for nil")
    assert base != fingerprint_of("NoMethodError", "Controller/orders/index", "undefined method `email' for nil")


def test_fingerprint_is_a_valid_batch_custom_id():
    fp = ErrorGroup(error_class="Foo::Bar::Baz", transaction="Controller/a/b", message="x").fingerprint
    assert len(fp) == 16 and all(c in "0123456789abcdef" for c in fp)


def test_report_json_round_trips():
    from datetime import datetime, timezone

    from nightwatch.models import ErrorAnalysisResult, RunReport, Window

    now = datetime(2026, 11, 21, tzinfo=timezone.utc)
    error = ErrorGroup(error_class="A", transaction="Controller/a/b", message="m 1")
    report = RunReport(run_id="r", started_at=now, window=Window(start=now, end=now),
                       results=[ErrorAnalysisResult(run_id="r", error=error)])
    again = RunReport.model_validate_json(report.model_dump_json())
    assert again == report and again.results[0].error.fingerprint == error.fingerprint
