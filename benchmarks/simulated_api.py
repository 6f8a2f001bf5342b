"""What the context benchmarks share: the model they price, a simulated clock for the prompt cache, and the emulated
Messages API billed as Claude, enforcing the model's window as the API does (token_efficiency.py, marathon_restart.py)."""

from __future__ import annotations

from typing import Any, Callable

from nightwatch.agent.break_even import context_window
from nightwatch.offline.emulated_api import EmulatedAPIError, EmulatedMessagesAPI
from nightwatch.offline.emulated_cache import PromptCache, prompt_blocks

MODEL = "claude-sonnet-4-6"
UNLIMITED = 10**9


class SimClock:
    """Simulated time for the prompt cache: each model call takes `per_call_s`; `gap` adds idle time."""

    def __init__(self, per_call_s: float = 8.0) -> None:
        self.now, self.per_call_s = 0.0, per_call_s

    def __call__(self) -> float:
        return self.now

    def gap(self, seconds: float) -> None:
        self.now += seconds


class BenchmarkAPI(EmulatedMessagesAPI):
    """The emulated API billed as Claude (not as the offline model), recording what was sent."""

    name, offline = "benchmark", False

    def __init__(self, brain: Any, cache: PromptCache, transform: Callable[[dict], dict] | None,
                 clock: SimClock | None = None, window: int | None = None) -> None:
        super().__init__(Windowed(brain, window) if window else brain, cache)
        self.transform = transform
        self.clock = clock
        self.sent: list[dict[str, Any]] = []

    def create(self, **params: Any):
        params = self.transform(params) if self.transform else params
        self.sent.append(params)
        if self.clock:
            self.clock.gap(self.clock.per_call_s)
        return super().create(**params)


class Windowed:
    """The model's context window, as the API enforces it on the prompt the model would see (after the server's
    edits): a 400 `invalid_request_error` when the prompt, or the prompt with `max_tokens`, does not fit."""

    def __init__(self, brain: Any, window: int) -> None:
        self.brain, self.window = brain, window

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tokens = prompt_tokens(request)
        if tokens > self.window:
            raise EmulatedAPIError(f"prompt is too long: {tokens} tokens > {self.window} maximum")
        if tokens + request["max_tokens"] > self.window:
            raise EmulatedAPIError(f"input length and `max_tokens` exceed context limit: {tokens} + {request['max_tokens']} > "
                                   f"{self.window}, decrease input length or `max_tokens` and try again")
        return self.brain.respond(request)

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return self.brain.summarise(request, instructions)


def prompt_tokens(params: dict[str, Any]) -> int:
    return sum(b.tokens for b in prompt_blocks(params.get("tools"), params.get("system"), params["messages"]))


WINDOW = context_window(MODEL)  # the window the API enforces on the marathons


def check_line(label: str, value: float, limit: float, shown: str | None = None) -> str:
    """One target's line: ok or MISS (the value at most the limit), and the value as `shown`, else a ratio to two
    places or a count of what is missing."""
    shown = shown or (f"{value:.2f}" if isinstance(value, float) else f"{value} missing")
    return f"  {'ok  ' if value <= limit else 'MISS'} {label}: {shown}"
