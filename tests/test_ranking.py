"""Ranking: volume, severity, recency and user-facing weight, in a stable order."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from nightwatch.models import ErrorGroup
from nightwatch.ranking import rank_errors, select_top, severity_of

NOW = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


def error(
    error_class: str = "RuntimeError",
    transaction: str = "Controller/orders/show",
    occurrences: int = 10,
    hours_ago: float = 1,
    status: int | None = None,
    message: str = "",
) -> ErrorGroup:
    return ErrorGroup(
        error_class=error_class,
        transaction=transaction,
        occurrences=occurrences,
        last_seen=NOW - timedelta(hours=hours_ago),
        http_status=status,
        message=message,
    )


def labels(errors: list[ErrorGroup]) -> list[str]:
    return [e.error_class for e in errors]


def test_severity_inference() -> None:
    assert severity_of(error("NoMethodError")) == 1.0
    assert severity_of(error("Net::ReadTimeout", status=500)) == 0.6
    assert severity_of(error("ActiveRecord::RecordNotFound", status=404)) == 0.25
    assert severity_of(error("ActiveRecord::RecordInvalid", status=500)) == 0.6
    assert severity_of(error("Custom::Boom", status=502)) == 0.9
    assert severity_of(error("Custom::Boom", status=422)) == 0.25
    assert severity_of(error("Custom::Boom")) == 0.7


def test_crash_outranks_a_noisier_not_found() -> None:
    ranked = rank_errors(
        [error("ActiveRecord::RecordNotFound", occurrences=300, status=404), error("NoMethodError", occurrences=40)],
        NOW,
    )
    assert labels(ranked) == ["NoMethodError", "ActiveRecord::RecordNotFound"]


def test_volume_counts_on_a_log_scale() -> None:
    ranked = rank_errors([error("A", occurrences=5), error("B", occurrences=5000)], NOW)
    assert labels(ranked) == ["B", "A"]
    assert ranked[0].rank_score < 2 * ranked[1].rank_score  # 1000x the volume is not 1000x the score


def test_recent_beats_stale() -> None:
    ranked = rank_errors([error("Old", hours_ago=23), error("Fresh", hours_ago=0.5)], NOW)
    assert labels(ranked) == ["Fresh", "Old"]


def test_user_facing_beats_a_background_job() -> None:
    ranked = rank_errors(
        [
            error("Job", transaction="OtherTransaction/Sidekiq/SyncJob"),
            error("Web", transaction="WebTransaction/Uri/cart"),
        ],
        NOW,
    )
    assert labels(ranked) == ["Web", "Job"]
    assert abs(ranked[0].rank_score / ranked[1].rank_score - 1.25) < 1e-4


def test_ties_break_by_fingerprint_and_inputs_are_untouched() -> None:
    twins = [error(message="a"), error(message="b"), error(message="c")]
    ranked = rank_errors(twins, NOW)
    assert [e.fingerprint for e in ranked] == sorted(e.fingerprint for e in twins)
    assert labels(rank_errors(list(reversed(twins)), NOW)) == labels(ranked)
    assert all(e.rank_score == 0.0 for e in twins)
    assert len({e.rank_score for e in ranked}) == 1 and ranked[0].rank_score > 0


def test_unknown_last_seen_and_naive_now_do_not_fail() -> None:
    unknown = ErrorGroup(error_class="X", transaction="Controller/x", occurrences=1)
    [ranked] = rank_errors([unknown], NOW.replace(tzinfo=None))
    assert ranked.rank_score > 0


def test_select_top() -> None:
    ranked = rank_errors(
        [error("A", occurrences=1), error("NoMethodError", occurrences=900), error("B", occurrences=50)], NOW
    )
    assert labels(select_top(ranked, 2)) == ["NoMethodError", "B"]
    assert labels(select_top(list(reversed(ranked)), 1)) == ["NoMethodError"]
    assert select_top(ranked, 0) == [] and len(select_top(ranked, 10)) == 3
