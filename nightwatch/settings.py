"""Settings: one pydantic-settings model, `NIGHTWATCH_` prefix, secrets as SecretStr.

The SDKs' own variables are honoured too (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, NEW_RELIC_API_KEY,
GITHUB_TOKEN, SLACK_BOT_TOKEN), so a machine already set up for those tools needs nothing new.
Prefect Blocks (blocks/) produce the same model at the Prefect edge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
DEMO_DIR = PACKAGE_DIR / "demo"

NERDGRAPH_ENDPOINTS = {
    "US": "https://api.newrelic.com/graphql",
    "EU": "https://api.eu.newrelic.com/graphql",
}


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="NIGHTWATCH_", env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True
    )

    home: Path = Field(default=Path(".nightwatch"), description="Where a run writes everything.")

    # Anthropic: a key switches from the offline model to Claude.
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
    )
    model: str = "claude-sonnet-4-6"
    triage_model: str = "claude-haiku-4-5"
    anthropic_max_retries: int = 4
    anthropic_timeout_s: float = 300.0

    # New Relic NerdGraph: key + account id + app name, or none of them.
    newrelic_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_API_KEY", "NEW_RELIC_API_KEY")
    )
    newrelic_account_id: int | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_ACCOUNT_ID", "NEW_RELIC_ACCOUNT_ID")
    )
    newrelic_app_name: str | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_APP_NAME", "NEW_RELIC_APP_NAME")
    )
    newrelic_region: Literal["US", "EU"] = Field(
        default="US", validation_alias=_env("NIGHTWATCH_NEWRELIC_REGION", "NEW_RELIC_REGION")
    )
    newrelic_endpoint: str | None = Field(default=None, description="Overrides the region's NerdGraph URL.")
    newrelic_timeout_s: float = 30.0

    # Errors from a NerdGraph export file instead of the API (the demo default when no key is set).
    errors_file: Path | None = None
    ignore_file: Path | None = None

    # Code host: GitHub (token + repo) or a local checkout.
    github_token: SecretStr | None = Field(default=None, validation_alias=_env("NIGHTWATCH_GITHUB_TOKEN", "GITHUB_TOKEN"))
    github_repo: str | None = Field(default=None, validation_alias=_env("NIGHTWATCH_GITHUB_REPO", "GITHUB_REPOSITORY"))
    github_base_url: str = Field(
        default="https://api.github.com", validation_alias=_env("NIGHTWATCH_GITHUB_BASE_URL", "GITHUB_API_URL")
    )
    code_path: Path | None = Field(default=None, description="A local git checkout used as the code host.")

    # Slack
    slack_bot_token: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN")
    )
    slack_channel: str | None = None
    slack_base_url: str = "https://slack.com/api/"

    # A night
    since_hours: float = 24.0
    max_errors: int = 8
    max_issues: int = 3
    open_issue_limit: int = Field(default=10, description="WIP limit: no new issues while this many are open.")
    mode: Literal["batch", "interactive"] = "interactive"
    agent: str = "base-analyzer"
    dry_run: bool = False
    analysis_concurrency: int = 4
    max_iterations: int = 12
    token_budget_per_error: int = 60_000
    token_budget_per_run: int = 400_000
    compound_enabled: bool = True
    patterns_enabled: bool = True

    @property
    def nerdgraph_url(self) -> str:
        return self.newrelic_endpoint or NERDGRAPH_ENDPOINTS[self.newrelic_region]

    @property
    def live_model(self) -> bool:
        return self.anthropic_api_key is not None and bool(self.anthropic_api_key.get_secret_value())

    def resolved_home(self) -> Path:
        return self.home.expanduser().resolve()


def load_settings(**overrides: object) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
