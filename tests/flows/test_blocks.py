"""Blocks produce the same Settings as the environment, never above a variable set on purpose; secrets stay SecretStr;
`origins` names where each value came from."""

from __future__ import annotations

from nightwatch.blocks import (
    AnthropicCredentials,
    GitHubCredentials,
    NewRelicCredentials,
    NightWatchConfig,
    SlackCredentials,
    settings_block,
)
from pydantic import SecretStr

from nightwatch.render.origins import unread_variables
from nightwatch.runtime import source_statuses
from nightwatch.settings import Settings, origins


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
    monkeypatch.setenv("NIGHTWATCH_GITHUB_BASE_URL", "https://ghe.example/api/v3")
    monkeypatch.setenv("NIGHTWATCH_SLACK_BASE_URL", "http://127.0.0.1:2/api/")
    s = Settings()
    assert (s.anthropic_base_url, s.newrelic_region, s.github_base_url, s.slack_base_url) == (
        "http://127.0.0.1:1", "EU", "https://ghe.example/api/v3", "http://127.0.0.1:2/api/")


# precedence: this run's values, then the environment, then the block, then the default -----------------------------


def a_block(monkeypatch) -> None:
    config = NightWatchConfig(anthropic=AnthropicCredentials(api_key="sk-ant-block"),  # model left at its default
                              github=GitHubCredentials(token="ghp_block", repo="acme/from-block"), max_errors=5)
    monkeypatch.setattr(settings_block, "_load", lambda name: config)


def test_a_block_never_hides_a_variable_set_on_purpose(monkeypatch):
    a_block(monkeypatch)
    monkeypatch.setenv("NIGHTWATCH_MODEL", "claude-opus-4-6")  # the block's credentials carry a default model
    monkeypatch.setenv("NIGHTWATCH_MAX_ERRORS", "7")
    s = settings_block.resolve_settings("shop")
    assert (s.model, s.max_errors, s.github_repo) == ("claude-opus-4-6", 7, "acme/from-block")
    assert s.anthropic_api_key.get_secret_value() == "sk-ant-block"  # what the environment leaves unset, the block sets
    assert settings_block.resolve_settings("shop", {"max_errors": 2, "model": None}).max_errors == 2  # this run's value
    monkeypatch.delenv("NIGHTWATCH_MODEL")
    assert settings_block.resolve_settings("shop").model == "claude-sonnet-4-6"  # the block's, which is the default


def test_origins_name_where_each_value_came_from(monkeypatch, tmp_path):
    a_block(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("NIGHTWATCH_MAX_ISSUES=1\nSLACK_BOT_TOKEN=xoxb-file\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    found = origins("shop", settings_block.block_values("shop"), {"since_hours": 6.0})
    assert found["anthropic_api_key"] == "environment ANTHROPIC_API_KEY"
    assert found["max_issues"] == f"{tmp_path / '.env'} NIGHTWATCH_MAX_ISSUES"
    assert found["slack_bot_token"] == f"{tmp_path / '.env'} SLACK_BOT_TOKEN"
    assert found["github_repo"] == found["max_errors"] == "block shop"
    assert found["since_hours"] == "this run's parameters" and found["mode"] == "default"
    assert found["triage_model"] == "block shop"  # its credentials carry a model of their own, set or not
    assert Settings().max_issues == 1  # the .env file read is the one named


def test_github_actions_variables_are_read_only_when_asked(monkeypatch):
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/the-ci-job")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_" + "a" * 36)
    monkeypatch.setenv("GITHUB_API_URL", "https://ghe.example/api/v3")
    s = Settings()
    assert (s.github_repo, s.github_token, s.github_base_url) == (None, None, "https://api.github.com")
    assert {st.name: st.state for st in source_statuses(s)}["github"] == "offline"
    assert unread_variables(s) and "NIGHTWATCH_GITHUB_ACTIONS=true" in unread_variables(s)[0]
    monkeypatch.setenv("NIGHTWATCH_GITHUB_ACTIONS", "true")
    s = Settings()
    assert (s.github_repo, s.github_base_url) == ("acme/the-ci-job", "https://ghe.example/api/v3") and s.github_token
    assert origins()["github_repo"] == "GitHub Actions GITHUB_REPOSITORY" and not unread_variables(s)
    monkeypatch.setenv("NIGHTWATCH_GITHUB_REPO", "acme/shop")  # NightWatch's own variable still wins
    assert Settings().github_repo == "acme/shop" and origins()["github_repo"] == "environment NIGHTWATCH_GITHUB_REPO"


def test_the_deep_profile_sets_the_limits_no_one_set(monkeypatch):
    from nightwatch.agent.budgets import iteration_limit

    monkeypatch.setenv("NIGHTWATCH_INVESTIGATION_PROFILE", "deep")
    s = Settings()
    assert (s.max_iterations, s.token_budget_per_error, s.token_budget_per_run) == (60, 500_000, 3_000_000)
    assert iteration_limit(None, "complex", s.max_iterations) == 60  # the shipped definitions name no maximum
    assert iteration_limit(8, "complex", s.max_iterations) == 8  # a definition that names one keeps to it
    monkeypatch.setenv("NIGHTWATCH_MAX_ITERATIONS", "30")
    assert Settings().max_iterations == 30  # a limit set on its own wins
    config = NightWatchConfig(token_budget_per_error=90_000)  # so does a block's: the profile's are defaults
    monkeypatch.setattr(settings_block, "_load", lambda name: config)
    resolved = settings_block.resolve_settings("shop")
    assert (resolved.token_budget_per_error, resolved.token_budget_per_run, resolved.max_iterations) == (90_000, 3_000_000, 30)
    monkeypatch.delenv("NIGHTWATCH_INVESTIGATION_PROFILE")
    assert (Settings().max_iterations, Settings().token_budget_per_error) == (30, 60_000)


def test_a_profile_given_for_this_run_sets_its_limits_and_a_lower_case_or_empty_variable_is_read_as_pydantic_reads_it(
        monkeypatch):
    a_block(monkeypatch)
    deep = settings_block.resolve_settings("shop", {"investigation_profile": "deep"})
    assert (deep.max_iterations, deep.token_budget_per_error, deep.max_errors) == (60, 500_000, 5)
    monkeypatch.setenv("nightwatch_max_errors", "9")  # names are not case-sensitive: a variable set on purpose
    assert settings_block.resolve_settings("shop").max_errors == 9
    assert origins()["max_errors"] == "environment NIGHTWATCH_MAX_ERRORS"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")  # an undefined CI secret: unset, so the block's key is used
    resolved = settings_block.resolve_settings("shop")
    assert resolved.live_model and resolved.anthropic_api_key.get_secret_value() == "sk-ant-block"
    assert origins("shop", settings_block.block_values("shop"))["anthropic_api_key"] == "block shop"
