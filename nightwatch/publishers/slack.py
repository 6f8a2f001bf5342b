"""Slack publishing of the nightly report and its follow-up, idempotent per run.

A run can be retried by Prefect or rerun by hand from the UI. Posting again would leave two reports
in the channel, so a small ledger file per run (`<ledger_dir>/<run_id>.json`) remembers the `ts` of
what was posted: a rerun updates the report in place (chat.update) and keeps exactly one follow-up
in the report's thread. Offline, `FileNotifier` writes the same payloads to files instead.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, SecretStr
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry import BackoffRetryIntervalCalculator, Jitter, RetryHandler
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from nightwatch.atomic import atomic_write_text
from nightwatch.models import RunReport
from nightwatch.render.blocks import fallback_text, followup_blocks, report_blocks
from nightwatch.render.markdown import followup_markdown, report_markdown
from nightwatch.render.summary import has_followup

SLACK_API_URL = "https://slack.com/api/"
CHANNEL_PLACEHOLDER = "YOUR_CHANNEL_ID"
THREAD_PLACEHOLDER = "REPORT_MESSAGE_TS"
# Errors meaning "the message we remember is gone": post a new one instead of updating.
_MESSAGE_GONE = {"message_not_found", "cant_update_message", "edit_window_closed"}
_HINTS = {
    "invalid_auth": "the Slack bot token is not valid; check NIGHTWATCH_SLACK_BOT_TOKEN (or SLACK_BOT_TOKEN)",
    "not_authed": "no Slack bot token was sent; set NIGHTWATCH_SLACK_BOT_TOKEN (or SLACK_BOT_TOKEN)",
    "token_revoked": "the Slack bot token was revoked; install the app again and update the token",
    "account_inactive": "the Slack bot token belongs to a deactivated app or user",
    "channel_not_found": "the bot cannot see this channel; check NIGHTWATCH_SLACK_CHANNEL (an ID like C0123ABC or #name)",
    "not_in_channel": "the bot is not a member of the channel; invite it with /invite",
    "is_archived": "the channel is archived",
    "missing_scope": "the bot token lacks a scope NightWatch needs (chat:write)",
    "invalid_blocks": "Slack rejected the message layout",
    "ratelimited": "Slack kept rate limiting after the retries; try again later",
    "connection_failed": "Slack could not be reached; check the network or NIGHTWATCH_SLACK_BASE_URL",
}
# Slack's answers that trying again cannot change: the token, the channel or the message is wrong.
PERMANENT = frozenset({"invalid_auth", "not_authed", "token_revoked", "account_inactive", "channel_not_found",
                       "not_in_channel", "is_archived", "missing_scope", "invalid_blocks"})
_PLAIN_CODE = re.compile(r"[a-z_]{2,60}")


class NotifyError(RuntimeError):
    """A Slack call failed; names the method and Slack's error code, never the token."""

    def __init__(self, method: str, code: str, detail: str = "") -> None:
        self.method, self.code = method, code
        hint = _HINTS.get(code, "")
        message = f"Slack {method} failed: {code}" + (f" ({detail})" if detail else "") + (f": {hint}" if hint else "")
        super().__init__(message)

    @property
    def permanent(self) -> bool:
        """Trying again cannot help (a bad token, a channel the bot cannot post to, a refused layout)."""
        return self.code in PERMANENT


class NotifyResult(BaseModel):
    """Where a message went: a Slack channel and ts, or a file."""

    target: Literal["slack", "file"]
    action: Literal["posted", "updated", "written"]
    channel: str | None = None
    ts: str | None = None
    path: str | None = None


class Notifier(Protocol):
    def post_report(self, report: RunReport) -> NotifyResult: ...

    def post_followup(self, report: RunReport) -> NotifyResult | None: ...


class RunLedger:
    """What was posted for one run: channel, report ts, follow-up ts. Written atomically."""

    def __init__(self, ledger_dir: Path, run_id: str) -> None:
        safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id).lstrip(".") or "run"
        self.path = Path(ledger_dir) / f"{safe_name}.json"

    def read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise NotifyError("ledger", "unreadable_ledger", f"{self.path}: {exc}") from None

    def write(self, entry: dict[str, Any]) -> None:
        atomic_write_text(self.path, json.dumps(entry, indent=2, sort_keys=True))


class SlackNotifier:
    """Posts the report with slack_sdk's WebClient; retries 429 (Retry-After), 500/503 and dropped connections."""

    def __init__(
        self,
        token: SecretStr,
        channel: str,
        *,
        ledger_dir: Path,
        base_url: str = SLACK_API_URL,
        retries: int = 3,
        backoff_s: float = 0.5,
        timeout_s: int = 30,
    ) -> None:
        if not token.get_secret_value().strip():
            raise NotifyError("setup", "not_authed", "the token is empty")
        if not channel.strip():
            raise NotifyError("setup", "channel_not_found", "no channel configured")
        self.channel, self.ledger_dir, self.base_url = channel.strip(), Path(ledger_dir), base_url
        self._client = WebClient(
            token=token.get_secret_value(),
            base_url=base_url,
            timeout=timeout_s,
            retry_handlers=_retry_handlers(retries, backoff_s),
        )

    def check(self) -> str:
        """Verify the token (auth.test); returns 'team / bot user' for the connect step."""
        data = self._call("auth_test")
        return f"{data.get('team', '?')} / {data.get('user', data.get('user_id', '?'))}"

    def post_report(self, report: RunReport) -> NotifyResult:
        """Post the report, or update the one already posted for this run."""
        ledger = RunLedger(self.ledger_dir, report.run_id)
        entry = ledger.read()
        message = {"text": fallback_text(report), "blocks": report_blocks(report)}
        result = self._update(entry, "report_ts", message)
        if result is None:
            data = self._call("chat_postMessage", channel=self.channel, unfurl_links=False, **message)
            result = NotifyResult(target="slack", action="posted", channel=data["channel"], ts=data["ts"])
            entry = {"run_id": report.run_id, "channel": result.channel, "report_ts": result.ts}
            ledger.write(entry)  # a fresh report starts a fresh thread: any older follow-up is forgotten
        return result

    def post_followup(self, report: RunReport) -> NotifyResult | None:
        """Issue and PR links in the report's thread, once per run; None when there is nothing to say."""
        if not has_followup(report):
            return None
        ledger = RunLedger(self.ledger_dir, report.run_id)
        entry = ledger.read()
        message = {"text": f"Follow-up: {fallback_text(report)}", "blocks": followup_blocks(report)}
        result = self._update(entry, "followup_ts", message)
        if result is None:
            thread = {"thread_ts": entry["report_ts"]} if entry.get("report_ts") else {}
            channel = entry.get("channel") or self.channel
            data = self._call("chat_postMessage", channel=channel, unfurl_links=False, **thread, **message)
            result = NotifyResult(target="slack", action="posted", channel=data["channel"], ts=data["ts"])
            ledger.write({**entry, "run_id": report.run_id, "channel": result.channel, "followup_ts": result.ts})
        return result

    def _update(self, entry: dict[str, Any], key: str, message: dict[str, Any]) -> NotifyResult | None:
        """Update the remembered message; None when there is none or Slack no longer has it."""
        if not entry.get(key):
            return None
        try:
            data = self._call("chat_update", channel=entry["channel"], ts=entry[key], **message)
        except NotifyError as err:
            if err.code in _MESSAGE_GONE:
                return None
            raise
        return NotifyResult(target="slack", action="updated", channel=data["channel"], ts=data["ts"])

    def _call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        """One Web API call; every failure becomes a NotifyError with Slack's error code."""
        api_name = method.replace("_", ".", 1)
        try:
            response = getattr(self._client, method)(**kwargs)
        except SlackApiError as exc:
            raise NotifyError(api_name, _error_code(exc), _where(exc, kwargs)) from None
        except (SlackClientError, OSError) as exc:
            raise NotifyError(api_name, "connection_failed", f"{self.base_url}: {type(exc).__name__}") from None
        return dict(response.data) if isinstance(response.data, dict) else {}


class ProportionalJitter(Jitter):
    """Up to +50% of the wait; slack_sdk's default adds up to a whole second whatever the backoff."""

    def recalculate(self, duration: float) -> float:
        return duration * (1 + random.random() / 2)


def _retry_handlers(retries: int, backoff_s: float) -> list[RetryHandler]:
    interval = BackoffRetryIntervalCalculator(backoff_factor=backoff_s, jitter=ProportionalJitter())
    return [
        RateLimitErrorRetryHandler(max_retry_count=retries),
        ServerErrorRetryHandler(max_retry_count=retries, interval_calculator=interval),
        ConnectionErrorRetryHandler(max_retry_count=retries, interval_calculator=interval),
    ]


def _where(exc: SlackApiError, kwargs: dict[str, Any]) -> str:
    status = exc.response.status_code
    return f"channel {kwargs.get('channel', '-')}" + (f", HTTP {status}" if status != 200 else "")


def _error_code(exc: SlackApiError) -> str:
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    code = str(data.get("error") or "")
    return code if _PLAIN_CODE.fullmatch(code) else f"http_{exc.response.status_code}"


class FileNotifier:
    """Offline: the exact chat.postMessage payloads and Markdown under <report_dir>/slack/, overwritten."""

    def __init__(self, report_dir: Path) -> None:
        self.dir = Path(report_dir) / "slack"

    def post_report(self, report: RunReport) -> NotifyResult:
        payload = {"channel": CHANNEL_PLACEHOLDER, "text": fallback_text(report), "blocks": report_blocks(report)}
        return self._write("report", payload, report_markdown(report))

    def post_followup(self, report: RunReport) -> NotifyResult | None:
        if not has_followup(report):
            return None
        payload = {
            "channel": CHANNEL_PLACEHOLDER,
            "thread_ts": THREAD_PLACEHOLDER,
            "text": f"Follow-up: {fallback_text(report)}",
            "blocks": followup_blocks(report),
        }
        return self._write("followup", payload, followup_markdown(report))

    def _write(self, name: str, payload: dict[str, Any], markdown: str) -> NotifyResult:
        path = self.dir / f"{name}.json"
        atomic_write_text(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        atomic_write_text(self.dir / f"{name}.md", markdown)
        return NotifyResult(target="file", action="written", path=str(path))
