"""Blocks mirror `nightwatch.settings.Settings`; they are read only here, at the Prefect edge.

A platform team saves one `NightWatchConfig` block per application (with its credential blocks)
and names it in the deployment's `settings_block` parameter. The precedence is nightwatch.settings's: a flow
parameter, then an environment variable set on the worker, then the block, then the default; a block's value never
hides a variable someone set on purpose.
"""

from __future__ import annotations

from typing import Any, Literal

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from nightwatch.runtime import ConfigurationError
from nightwatch.settings import Settings, origins


class AnthropicCredentials(Block):
    _block_type_name = "NightWatch Anthropic"
    api_key: SecretStr
    base_url: str | None = Field(default=None, description="Leave empty for the public API.")
    model: str = "claude-sonnet-4-6"
    triage_model: str = "claude-haiku-4-5"


class NewRelicCredentials(Block):
    _block_type_name = "NightWatch New Relic"
    api_key: SecretStr
    account_id: int
    app_name: str
    region: Literal["US", "EU"] = "US"
    endpoint: str | None = Field(default=None, description="Overrides the region's NerdGraph URL.")


class SentryCredentials(Block):
    """Sentry (sentry.io or self-hosted), or a tracker that speaks its API: Bugsink needs `url` and its project's
    id, and no organization."""

    _block_type_name = "NightWatch Sentry"
    auth_token: SecretStr
    project: str = Field(description="The project's slug (Sentry) or id (Bugsink).")
    org: str | None = Field(default=None, description="The organization's slug (Sentry only).")
    region: Literal["US", "EU"] = "US"
    url: str | None = Field(default=None, description="A self-hosted Sentry's or Bugsink's address; overrides the region.")
    environment: str | None = Field(default=None, description="Only errors of this environment.")


class GitHubCredentials(Block):
    _block_type_name = "NightWatch GitHub"
    token: SecretStr
    repo: str = Field(description="owner/name")
    base_url: str = Field(default="https://api.github.com", description="GitHub Enterprise: https://HOST/api/v3")


class SlackCredentials(Block):
    _block_type_name = "NightWatch Slack"
    bot_token: SecretStr
    channel: str
    base_url: str = "https://slack.com/api/"


class NightWatchConfig(Block):
    _block_type_name = "NightWatch Config"
    anthropic: AnthropicCredentials | None = None
    source: Literal["newrelic", "sentry", "bugsink"] | None = Field(
        default=None, description="Where the errors come from; default: the environment's NIGHTWATCH_SOURCE (newrelic).")
    newrelic: NewRelicCredentials | None = None
    sentry: SentryCredentials | None = None
    github: GitHubCredentials | None = None
    slack: SlackCredentials | None = None
    home: str | None = None
    result_storage: str | None = Field(default=None, description="Path, fsspec URL or filesystem block (type/name) "
                                                                 "every worker shares; default <home>/results.")
    max_errors: int | None = None
    max_issues: int | None = None
    open_issue_limit: int | None = None
    token_budget_per_error: int | None = None
    token_budget_per_run: int | None = None

    def settings_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {k: getattr(self, k) for k in
                                  ("source", "home", "result_storage", "max_errors", "max_issues", "open_issue_limit", "token_budget_per_error", "token_budget_per_run")}
        if self.anthropic:
            values |= {"anthropic_api_key": self.anthropic.api_key, "anthropic_base_url": self.anthropic.base_url,
                       "model": self.anthropic.model, "triage_model": self.anthropic.triage_model}
        if self.newrelic:
            values |= {"newrelic_api_key": self.newrelic.api_key, "newrelic_account_id": self.newrelic.account_id,
                       "newrelic_app_name": self.newrelic.app_name, "newrelic_region": self.newrelic.region,
                       "newrelic_endpoint": self.newrelic.endpoint}
        if self.sentry:
            values |= {"sentry_auth_token": self.sentry.auth_token, "sentry_project": self.sentry.project,
                       "sentry_org": self.sentry.org, "sentry_region": self.sentry.region, "sentry_url": self.sentry.url,
                       "sentry_environment": self.sentry.environment}
        if self.github:
            values |= {"github_token": self.github.token, "github_repo": self.github.repo, "github_base_url": self.github.base_url}
        if self.slack:
            values |= {"slack_bot_token": self.slack.bot_token, "slack_channel": self.slack.channel, "slack_base_url": self.slack.base_url}
        return {k: v for k, v in values.items() if v is not None}


def _load(block_name: str) -> "NightWatchConfig":
    """The named block, or a configuration error that says how to create it."""
    try:
        return NightWatchConfig.load(block_name)
    except ValueError as exc:  # Prefect: "Unable to find block document named …"
        raise ConfigurationError(f"settings block {block_name!r} could not be loaded ({exc}); save one with "
                                 f"NightWatchConfig(...).save({block_name!r}) or drop --settings-block") from None


def resolve_settings(block_name: str | None, overrides: dict[str, Any] | None = None) -> Settings:
    """The run's overrides, then what the environment (or .env) sets, then the named block, then the defaults."""
    values: dict[str, Any] = {}
    if block_name:  # what the environment (or .env) sets on purpose is read by Settings itself, and wins over the block
        explicit = {name for name, origin in origins().items() if not origin.startswith(("default", "profile"))}
        values |= {k: v for k, v in _load(block_name).settings_values().items() if k not in explicit}
    values |= {k: v for k, v in (overrides or {}).items() if v is not None}  # this run's: above everything
    return Settings(**values)


def block_values(block_name: str) -> dict[str, Any]:
    """What the named block sets, by setting name (for `nightwatch check`'s origins)."""
    return _load(block_name).settings_values()
