"""Which errors deserve tonight's attention first.

    score = (0.45 * volume + 0.35 * severity + 0.20 * recency) * (1.25 if user-facing else 1.0)

- volume   = min(1, log10(1 + occurrences) / 4): log-scaled, so 10,000 occurrences do not drown
             out a crash that happened 40 times; 10,000 and more count the same. Where the source counts the
             users affected (Sentry), each user weighs ten occurrences: log10(1 + max(occurrences, 10 * users)).
- severity = from the error class first, then the HTTP status:
             crash classes (NoMethodError, NameError, TypeError, ZeroDivisionError, KeyError,
             AttributeError, NullPointerException, ...) 1.0; timeouts 0.6; client-side or validation
             classes (RecordNotFound, RoutingError, RecordInvalid, ParameterMissing, ...) 0.25, raised
             to 0.6 when they still reached users as a 5xx; otherwise 5xx 0.9, 408/504 0.6,
             other 4xx 0.25, unknown 0.7. A web request's error that nothing handled (a source that says so, as
             Sentry does, without recording the status) counts as the 500 it was answered with.
- recency  = 0.5 ** (hours since last_seen / 12): half weight after 12 hours; unknown counts 0.5.
- user-facing transactions (Controller/, WebTransaction/, Api/, Web/) weigh 25 % more than jobs.

Scores are rounded to six decimals and ties are broken by fingerprint, so the order is the same
on every machine and every rerun.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from nightwatch.models import ErrorGroup

WEIGHT_VOLUME = 0.45
WEIGHT_SEVERITY = 0.35
WEIGHT_RECENCY = 0.20
USER_FACING_BOOST = 1.25
VOLUME_SATURATION_LOG10 = 4.0
RECENCY_HALF_LIFE_H = 12.0
USER_WEIGHT = 10  # occurrences one affected user weighs

_CRASH = re.compile(
    r"NoMethodError|NameError|TypeError|ZeroDivisionError|KeyError|AttributeError|IndexError|"
    r"NullPointer|SystemStackError|NoMemoryError|StackOverflow|Segmentation|FrozenError|"
    r"StatementInvalid|Deadlock|UnboundLocalError|RecursionError|LocalJumpError|NotImplementedError"
)
_TIMEOUT = re.compile(r"(?i)time[ _-]?out|timedout|deadline ?exceeded")
_CLIENT = re.compile(
    r"RecordNotFound|RoutingError|RecordInvalid|ParameterMissing|InvalidAuthenticityToken|UnknownFormat|"
    r"UnpermittedParameters|BadRequest|NotFound|Unauthori[sz]ed|Forbidden|ValidationError|NotAuthorized|"
    r"InvalidCrossOriginRequest|MethodNotAllowed|Http404|PermissionDenied"
)


def severity_of(error: ErrorGroup) -> float:
    """0..1 severity inferred from the class name, then the HTTP status."""
    status = error.http_status or (500 if error.handled is False and error.user_facing else None)
    if _TIMEOUT.search(error.error_class):
        return 0.6
    if _CRASH.search(error.error_class):
        return 1.0
    if _CLIENT.search(error.error_class):
        return 0.6 if status and status >= 500 else 0.25
    return _status_severity(status)


def _status_severity(status: int | None) -> float:
    if status is None:
        return 0.7
    if status in (408, 504):
        return 0.6
    if status >= 500:
        return 0.9
    return 0.25 if status >= 400 else 0.7


def volume_of(error: ErrorGroup) -> float:
    weight = max(error.occurrences, USER_WEIGHT * (error.users or 0), 0)
    return min(1.0, math.log10(1 + weight) / VOLUME_SATURATION_LOG10)


def recency_of(error: ErrorGroup, now: datetime) -> float:
    if error.last_seen is None:
        return 0.5
    age_h = max(0.0, (_aware(now) - _aware(error.last_seen)).total_seconds() / 3600)
    return 0.5 ** (age_h / RECENCY_HALF_LIFE_H)


def score_of(error: ErrorGroup, now: datetime) -> float:
    base = (
        WEIGHT_VOLUME * volume_of(error)
        + WEIGHT_SEVERITY * severity_of(error)
        + WEIGHT_RECENCY * recency_of(error, now)
    )
    return round(base * (USER_FACING_BOOST if error.user_facing else 1.0), 6)


def rank_errors(errors: list[ErrorGroup], now: datetime) -> list[ErrorGroup]:
    """Copies of the errors with `rank_score` set, best first."""
    scored = [error.model_copy(update={"rank_score": score_of(error, now)}) for error in errors]
    return sorted(scored, key=_order)


def select_top(errors: list[ErrorGroup], n: int) -> list[ErrorGroup]:
    """The n best-ranked errors (by `rank_score`, then fingerprint)."""
    return sorted(errors, key=_order)[: max(n, 0)]


def _order(error: ErrorGroup) -> tuple[float, str]:
    return (-error.rank_score, error.fingerprint)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
