"""Model clients: one protocol, so the offline model, a fake server and Claude run through one loop.

A client takes the Messages API's parameters and returns the SDK's own `BetaMessage`. The live client
is the anthropic SDK (its retries, timeouts and beta headers); the offline model builds the same type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import anthropic
from anthropic.types.beta import BetaMessage

from nightwatch.agent import metering
from nightwatch.settings import Settings
from nightwatch.triage.backends import AnthropicBatches, BatchBackend


class ModelClient(Protocol):
    """A model behind the Messages API. It owns its identity: what its rows are recorded as, its batch backend and how
    often a batch of its is polled; `offline` is for the report's labels."""

    name: str
    offline: bool

    def create(self, **params: Any) -> BetaMessage: ...

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        """The (model, mode) a call for `model` in `mode` is recorded and priced as."""
        ...

    def batch_backend(self, home: Path) -> BatchBackend: ...

    def poll_interval(self, initial_s: float, max_s: float) -> tuple[float, float]:
        """How often a batch of this client's is polled, given the settings' interval."""
        ...


class AnthropicModelClient:
    """Claude through the anthropic SDK; honours ANTHROPIC_BASE_URL and the SDK's retry policy."""

    offline = False

    def __init__(self, api_key: str, base_url: str | None = None, max_retries: int = 4, timeout_s: float = 300.0) -> None:
        self.sdk = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s)
        self.name = "anthropic"

    def create(self, **params: Any) -> BetaMessage:
        """One Messages call. Each HTTP attempt is watched (metering.AttemptWatch): one whose answer was lost is noted
        for the caller to meter as `unconfirmed`, and a 200 whose body is not a readable Message is retried like a
        transient error (the SDK alone raises its JSON error at once, without a retry)."""
        return self.sdk.with_middleware(metering.AttemptWatch()).beta.messages.create(**params)

    def close(self) -> None:
        """Close the SDK's HTTP client (the night is over)."""
        self.sdk.close()

    def recorded_as(self, model: str, mode: str) -> tuple[str, str]:
        return model, mode

    def batch_backend(self, home: Path) -> BatchBackend:
        return AnthropicBatches(self.sdk)

    def poll_interval(self, initial_s: float, max_s: float) -> tuple[float, float]:
        return initial_s, max_s


_CONFIGURATION_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (anthropic.AuthenticationError, "the Anthropic API key was refused (401): check ANTHROPIC_API_KEY"),
    (anthropic.PermissionDeniedError, "the Anthropic API key may not use this model or feature (403)"),
    (anthropic.NotFoundError, "the Anthropic API does not know this model (404): check NIGHTWATCH_MODEL / NIGHTWATCH_TRIAGE_MODEL"),
)


def configuration_problem(exc: BaseException) -> str | None:
    """What to fix when a model call failed because of configuration (never worth a retry), else None."""
    for kind, advice in _CONFIGURATION_ERRORS:
        if isinstance(exc, kind):
            return advice
    return None


def build_model_client(settings: Settings) -> ModelClient:
    """Claude when a key is configured, the deterministic offline model otherwise."""
    if settings.live_model:
        assert settings.anthropic_api_key is not None
        return AnthropicModelClient(
            settings.anthropic_api_key.get_secret_value(),
            base_url=settings.anthropic_base_url,
            max_retries=settings.anthropic_max_retries,
            timeout_s=settings.anthropic_timeout_s,
        )
    from nightwatch.offline.model import OfflineModel

    return OfflineModel()


def assistant_content(message: BetaMessage) -> list[dict[str, Any]]:
    """The response's blocks as request params, unmodified (thinking signatures included)."""
    return [block.to_dict(mode="json") for block in message.content]
