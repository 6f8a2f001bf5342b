"""Prefect Blocks: NightWatch's credentials and settings, editable in the Prefect UI."""

from nightwatch.blocks.settings_block import (
    AnthropicCredentials,
    GitHubCredentials,
    NewRelicCredentials,
    NightWatchConfig,
    SentryCredentials,
    SlackCredentials,
    resolve_settings,
)

__all__ = ["AnthropicCredentials", "GitHubCredentials", "NewRelicCredentials", "NightWatchConfig", "SentryCredentials",
           "SlackCredentials", "resolve_settings"]
