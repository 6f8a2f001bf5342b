"""Blocks produce the same Settings as the environment; secrets stay SecretStr."""

from __future__ import annotations

from pydantic import SecretStr

from blocks import AnthropicCredentials, GitHubCredentials, NewRelicCredentials, NightWatchConfig, SlackCredentials
from nightwatch.runtime import source_statuses
from nightwatch.settings import Settings


def test_config_block_maps_onto_settings():
    config = NightWatchConfig(
        anthropic=AnthropicCredentials(api_key="sk-ant-block", model="claude-opus-4-6"),
        newrelic=NewRelicCredentials(api_key="NRAK-X", account_id=42, app_name="storefront", region="EU"),
        github=GitHubCredentials(token="ghp_x", repo="acme/storefront", base_url="https://ghe.acme.test/api/v3"),
        slack=SlackCredentials(bot_token="xoxb-x", channel="C123"),
        max_errors=5,
    )
    settings = Settings(**(Settings().model_dump() | config.settings_values()))
    assert isinstance(settings.anthropic_api_key, SecretStr) and settings.live_model and settings.model == "claude-opus-4-6"
    assert settings.nerdgraph_url == "https://api.eu.newrelic.com/graphql"
    assert settings.github_base_url == "https://ghe.acme.test/api/v3" and settings.max_errors == 5
    assert {s.name: s.state for s in source_statuses(settings)} == {"newrelic": "live", "anthropic": "live", "github": "live", "slack": "live"}
    assert "sk-ant-block" not in repr(settings) and "ghp_x" not in settings.model_dump_json()


def test_empty_block_changes_nothing():
    assert NightWatchConfig().settings_values() == {}


def test_environment_names_the_sdks_use(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("NEW_RELIC_REGION", "EU")
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example/api/v3")
    monkeypatch.setenv("NIGHTWATCH_SLACK_BASE_URL", "http://127.0.0.1:2/api/")
    s = Settings()
    assert (s.anthropic_base_url, s.newrelic_region, s.github_base_url, s.slack_base_url) == (
        "http://127.0.0.1:1", "EU", "https://ghe.example/api/v3", "http://127.0.0.1:2/api/")
