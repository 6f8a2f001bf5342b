"""One HTTP request to an error source, retried as such APIs ask: 429 after its Retry-After, 5xx and timeouts with
exponential backoff; what still fails becomes a `SourceError` naming the service and what failed, never the key."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from nightwatch.redact import clean
from nightwatch.sources.base import SourceError

MAX_RETRY_AFTER_S = 120.0


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


def retry_after(response: httpx.Response) -> float:
    """Seconds to wait before retrying a 429: Retry-After as seconds or an HTTP date (the server's clock)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds()
        except (TypeError, ValueError):
            seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def snippet(response: httpx.Response) -> str:
    return clean(response.text[:4_000], limit=300)[0]  # redacted before the cut


def json_body(response: httpx.Response, service: str, what: str) -> Any:
    """The decoded body of an answer under 400; a refusal or a body that is not JSON is a SourceError naming both."""
    status = response.status_code
    if status >= 400:
        raise SourceError(f"{service} refused the {what} with HTTP {status}: {snippet(response)}")
    try:
        return response.json()
    except ValueError:
        kind = response.headers.get("content-type", "no content-type")
        raise SourceError(f"{service} returned a malformed response for the {what}: the body is not JSON "
                          f"(HTTP {status}, {kind}): {snippet(response)!r}") from None


def send(http: httpx.Client, request: httpx.Request, service: str, what: str, max_retries: int, backoff_s: float,
         sleep: Callable[[float], None] = time.sleep) -> httpx.Response:
    """The first answer that is not a 429 or a 5xx; SourceError (kind unreachable or busy) when every attempt failed."""
    failure, kind = "no attempt made", ""
    for attempt in range(max_retries + 1):
        delay = backoff_s * 2**attempt
        try:
            response = http.send(request)
        except httpx.TimeoutException:
            failure, kind = f"timed out after {http.timeout.read}s", "unreachable"
        except httpx.TransportError as exc:
            failure, kind = f"could not reach {request.url.copy_with(query=None)} ({type(exc).__name__})", "unreachable"
        else:
            if not retryable(response.status_code):
                return response
            failure, kind = f"HTTP {response.status_code}", "busy"
            delay = retry_after(response) if response.status_code == 429 else delay
        if attempt < max_retries:
            sleep(delay)
    raise SourceError(f"{service} {what} failed after {max_retries + 1} attempt(s): {failure}", kind)
