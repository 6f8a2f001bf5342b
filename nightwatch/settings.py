"""Settings: one pydantic-settings model, `NIGHTWATCH_` prefix, secrets as SecretStr.

The SDKs' own variables are honoured too (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, NEW_RELIC_API_KEY, SENTRY_AUTH_TOKEN,
SLACK_BOT_TOKEN), so a machine already set up for those tools needs nothing new. GitHub Actions' own variables
(GITHUB_REPOSITORY and GITHUB_API_URL, set in every job, and GITHUB_TOKEN) are read only when
NIGHTWATCH_GITHUB_ACTIONS=true says so: a job's own repository is not where a night files issues unless you say it is.

Precedence, one for every setting: a value given for this run (a flow parameter, a command's option), then an
environment variable (or the `.env` file of the current folder), then the NightWatch Config block, then the default.
Prefect Blocks (blocks/) produce the same model at the Prefect edge; `origins` says where each value came from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent
DEMO_DIR = PACKAGE_DIR / "demo"
DEMO_DIRS = {"rails": DEMO_DIR, "python": PACKAGE_DIR / "demo_python"}

NERDGRAPH_ENDPOINTS = {
    "US": "https://api.newrelic.com/graphql",
    "EU": "https://api.eu.newrelic.com/graphql",
}
# sentry.io's regions (each organization lives in one); a self-hosted Sentry, GlitchTip or Bugsink sets its own URL
SENTRY_URLS = {"US": "https://us.sentry.io", "EU": "https://de.sentry.io"}
SOURCES = ("newrelic", "sentry", "bugsink")
# NIGHTWATCH_INVESTIGATION_PROFILE=deep: where long investigations finish and context editing acts (measured on the
# marathon corpus: benchmarks/default_budgets.py); standard is the fields' own defaults.
PROFILES: dict[str, dict[str, int]] = {"deep": {"max_iterations": 60, "token_budget_per_error": 500_000,
                                                "token_budget_per_run": 3_000_000}}


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="NIGHTWATCH_", env_file=".env", env_file_encoding="utf-8", extra="ignore", populate_by_name=True,
        env_ignore_empty=True,  # an empty variable (a CI secret that is not defined) is unset, never a value
    )

    home: Path = Field(default=Path(".nightwatch"), description="Where a run writes everything.")
    result_storage: str | None = Field(
        default=None, description="Where task results and the night's cache live, shared by every worker: a path, an "
                                  "fsspec URL or a saved filesystem block (type/name); default <home>/results.")

    # Anthropic: a key switches from the offline model to Claude.
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
        description="An Anthropic API key; unset, a night uses the deterministic offline model."
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
        description="Another address for the Anthropic API (a proxy or gateway); unset, the public API."
    )
    model: str = Field(default="claude-sonnet-4-6", description="The model that investigates.")
    triage_model: str = Field(default="claude-haiku-4-5", description="The model that triages every selected error.")
    anthropic_max_retries: int = Field(default=4, description="The SDK's retries of 408, 409, 429, 5xx answers and lost "
                                                              "connections.")
    anthropic_timeout_s: float = Field(default=300.0, description="Seconds one Anthropic request may take.")

    # New Relic NerdGraph: key + account id + app name, or none of them.
    newrelic_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_API_KEY", "NEW_RELIC_API_KEY"),
        description="A New Relic user key that may query NerdGraph."
    )
    newrelic_account_id: int | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_ACCOUNT_ID", "NEW_RELIC_ACCOUNT_ID"),
        description="The New Relic account that holds the application."
    )
    newrelic_app_name: str | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_NEWRELIC_APP_NAME", "NEW_RELIC_APP_NAME"),
        description="The application's name in New Relic (appName in NRQL)."
    )
    newrelic_region: Literal["US", "EU"] = Field(
        default="US", validation_alias=_env("NIGHTWATCH_NEWRELIC_REGION", "NEW_RELIC_REGION"),
        description="The account's region, which picks the NerdGraph URL."
    )
    newrelic_endpoint: str | None = Field(default=None, description="Overrides the region's NerdGraph URL.")
    newrelic_timeout_s: float = Field(default=30.0, description="Seconds one NerdGraph request may take.")

    # Where the night's errors come from: one source per deployment.
    source: Literal["newrelic", "sentry", "bugsink"] = Field(
        default="newrelic", description="The error source: New Relic (NerdGraph), Sentry's web API (sentry.io, a "
                                        "self-hosted Sentry, or GlitchTip), or Bugsink's canonical API.")

    # Sentry (and the trackers that speak its API): token + organization + project, or none of them; Bugsink needs
    # no organization, and its project is the number in its URLs.
    sentry_auth_token: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_SENTRY_AUTH_TOKEN", "SENTRY_AUTH_TOKEN"),
        description="An auth token that may read the project's issues and events (Sentry: event:read and project:read; "
                    "Bugsink: a token from its API settings).")
    sentry_org: str | None = Field(default=None, validation_alias=_env("NIGHTWATCH_SENTRY_ORG", "SENTRY_ORG"),
                                   description="The organization's slug (Sentry only).")
    sentry_project: str | None = Field(default=None, validation_alias=_env("NIGHTWATCH_SENTRY_PROJECT", "SENTRY_PROJECT"),
                                       description="The project's slug (Sentry) or id (Bugsink).")
    sentry_region: Literal["US", "EU"] = Field(default="US", description="sentry.io's region of the organization.")
    sentry_url: str | None = Field(default=None, validation_alias=_env("NIGHTWATCH_SENTRY_URL", "SENTRY_URL"),
                                   description="A self-hosted Sentry's, GlitchTip's or Bugsink's address "
                                               "(https://sentry.example.com); overrides the region.")
    sentry_environment: str | None = Field(default=None, description="Only errors of this environment (e.g. production).")
    sentry_query: str = Field(default="is:unresolved", description="Sentry's issue search for the night (Sentry's own "
                              "default); Bugsink reads is:unresolved as its open issues and an empty query as all.")
    sentry_events_per_issue: int = Field(default=3, ge=1, le=100, description="Recent events read in full per selected error.")
    sentry_timeout_s: float = Field(default=30.0, description="Seconds one request to Sentry, GlitchTip or Bugsink may take.")

    # Errors from a NerdGraph export file instead of the API (the demo default when no key is set).
    errors_file: Path | None = Field(default=None, description="Read the night's errors from this file instead of the "
                                    "API: a NerdGraph export, or events as sentry-sdk sent them.")
    demo: Literal["rails", "python"] = Field(
        default="rails", description="The bundled demo an offline night reads: the Rails storefront (nightwatch/demo) or "
                                     "the Python bookshop, a FastAPI service (nightwatch/demo_python).")
    ignore_file: Path | None = Field(default=None, description="Your ignore rules (YAML: contains, exact, prefix or "
                                     "regex, each with a reason), applied before the shipped noise rules.")
    noise_defaults: bool = Field(default=True, description="Apply NightWatch's shipped noise rules (nightwatch/noise.yml) "
                                                            "after the ignore file, to every source.")

    # Code host: GitHub (token + repo) or a local checkout.
    github_token: SecretStr | None = Field(default=None, description="A GitHub token that may read the code and write "
                                                                     "issues and pull requests of the repository.")
    github_repo: str | None = Field(default=None, description="The application's repository, owner/name: where issues "
                                                              "and pull requests are filed.")
    github_base_url: str = Field(default="https://api.github.com", description="GitHub's API address; GitHub "
                                                                               "Enterprise: https://HOST/api/v3.")
    github_actions: bool = Field(default=False, description="Inside a GitHub Actions job: take the token, repository "
                                 "and API address from GITHUB_TOKEN, GITHUB_REPOSITORY and GITHUB_API_URL where "
                                 "NIGHTWATCH_GITHUB_TOKEN, _REPO and _BASE_URL are unset. Off: those variables are "
                                 "never read.")
    code_path: Path | None = Field(default=None, description="A local git checkout used as the code host.")
    path_prefixes: str = Field(
        default="", description="Comma-separated deploy roots stripped from trace paths before they are matched to the "
                                "repository's files, e.g. /var/www/shop/current/ (matched by longest suffix without them).")

    # Slack
    slack_bot_token: SecretStr | None = Field(
        default=None, validation_alias=_env("NIGHTWATCH_SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN"),
        description="A Slack bot token that may post to the channel."
    )
    slack_channel: str | None = Field(default=None, description="The channel the night's report goes to.")
    slack_base_url: str = Field(default="https://slack.com/api/", description="Slack's Web API address, for a proxy.")

    # A night
    since_hours: float = Field(default=24.0, description="The length of the night's window, in hours (--since).")
    max_errors: int = Field(default=8, description="Errors selected for analysis, the top of the ranking (--max-errors).")
    max_issues: int = Field(default=3, description="New issues a night may open, over every attempt at it (--max-issues).")
    open_issue_limit: int = Field(default=10, description="WIP limit: no new issues while this many are open.")
    pr_min_confidence: Literal["high", "medium", "low"] = Field(
        default="high", description="A draft PR is opened only for a fix at or above this confidence; below it the "
                                    "proposed change stays in the issue.")
    mode: Literal["batch", "interactive"] = Field(default="interactive", description="Triage through Message Batches "
                                                  "(batch) or direct calls, when the run or deployment does not say.")
    agent: str = Field(default="base-analyzer", description="The agent definition that investigates (--agent; "
                                                          "nightwatch agents list).")
    dry_run: bool = Field(default=False, description="Analyse and report, but send and file nothing (--dry-run).")
    analysis_concurrency: int = Field(default=4, description="Slots of the nightwatch-investigations concurrency limit "
                                                             "when NightWatch creates it.")
    investigation_profile: Literal["standard", "deep"] = Field(
        default="standard", description="standard: 12 turns and 60,000 tokens per investigation, 400,000 per night; "
        "prompt caching and lean tool results pay there, and no investigation's context reaches the clearing trigger. "
        "deep: 60 turns, 500,000 tokens per investigation and 3,000,000 per night, where long investigations finish and "
        "context editing acts (benchmarks/default_budgets.py). A limit set on its own wins over the profile's.")
    max_iterations: int = Field(default=12, description="Most model turns of an investigation, scaled down by the "
                                                        "triage's complexity (the profile's, unless set).")
    token_budget_per_error: int = Field(default=60_000, description="Per investigation, in input-equivalent tokens (cost / "
                                                                    "input price; the profile's, unless set).")
    token_budget_per_run: int = Field(default=400_000, description="Per night, in input-equivalent tokens; past it, deep "
                                                                   "errors keep their triage verdict (the profile's, unless set).")

    # Context management of investigations: each layer a switch (see nightwatch/agent/policy.py).
    prompt_caching: bool = Field(default=True, description="Cache breakpoints on the system prompt, tools, research "
                                                           "and the newest turn.")
    shared_cache_ttl: Literal["5m", "1h"] = Field(
        default="5m", description="TTL of the prefix the night's investigations share (tools, system prompt). 1h pays only "
                                  "when investigations sit more than five minutes apart (benchmarks/token_efficiency.py).")
    lean_tool_results: bool = Field(default=True, description="read_file of a long file without a range answers a window "
                                                              "around the trace's line and an outline of the rest.")
    context_editing: bool = Field(default=True, description="Server-side clear_tool_uses / clear_thinking edits.")
    clear_tool_uses_trigger: int | None = Field(default=None, ge=1, description="Tokens from which old tool results may be "
                                                "cleared; default: 20% of the model's context window.")
    clear_tool_uses_keep: int = Field(default=4, ge=0, description="The newest tool uses a clearing keeps.")
    clear_tool_uses_at_least: int | None = Field(default=None, ge=0, description="Least tokens a clearing removes; default: "
                                                 "the break-even of each request (agent/break_even.py).")
    clear_thinking_keep: str = Field(default="all", pattern=r"^(all|\d+)$", description="Thinking turns kept: 'all' or a number.")
    compaction: bool = Field(default=True, description="Server-side compaction where the model has it, else NightWatch's summariser.")
    compaction_trigger: int | None = Field(default=None, ge=50_000, description="Tokens from which the history may be "
                                           "compacted (when it pays); default: 25% of the window, at least 50,000.")
    summary_model: str | None = Field(default=None, description="Model of NightWatch's own summaries; default: the investigation's.")
    context_watcher: bool = Field(default=True, description="The proactive watcher: keeps headroom by compacting the "
                                                            "lowest priority x relevance x recency first.")
    context_budget_tokens: int | None = Field(default=None, ge=4_000, description="Working context of an investigation; "
                                              "default: 40% of the model's context window.")
    context_reserve_ratio: float = Field(default=0.15, ge=0.0, lt=1.0, description="Headroom the watcher keeps free.")
    checkpoints: bool = Field(default=True, description="A checkpoint per model turn under <home>/checkpoints; a retried "
                                                        "task resumes from the last one.")
    cross_error_context: bool = Field(default=True, description="Later investigations of a night see short notes on "
                                                                "the errors analysed before them.")
    investigation_concurrency_limit: str = Field(default="nightwatch-investigations",
                                                 description="Prefect global concurrency limit over investigations "
                                                             "(created with analysis_concurrency slots if missing).")
    compound_enabled: bool = Field(default=True, description="Step 12 writes knowledge documents (metrics are always written).")
    regression_lag_hours: float = Field(default=24.0, ge=0, description="Time a merged fix is given to reach production: an "
                                        "error seen later than this after its fix merged is a regression.")

    # Triage traffic: direct calls under a Prefect global concurrency limit, batches within a budget.
    api_concurrency: int = Field(default=16, ge=1, description="Slots of the `anthropic-api` concurrency limit when NightWatch creates it.")
    batch_token_budget: int = Field(default=5_000_000, ge=1, description="Estimated tokens per Message Batch.")
    batch_poll_initial_s: float = Field(default=15.0, gt=0, description="First wait between batch status checks; doubles.")
    batch_poll_max_s: float = Field(default=300.0, gt=0, description="Longest wait between batch status checks.")
    batch_hold_s: float = Field(default=600.0, ge=0, description="In a deployment: wait this long, then hand the night to `collect`.")
    batch_deadline_s: float = Field(default=6 * 3600.0, gt=0, description="Cancel a batch still processing after this; finish directly.")
    patterns_enabled: bool = Field(default=True, description="Step 13 looks for patterns and ignore-rule suggestions.")

    # Verified fixes: each proposed fix's regression test runs in a bubblewrap sandbox (nightwatch/verify).
    verify_fixes: bool = Field(default=True, description="Step 8.5 runs each fix's regression test before and after the fix.")
    pr_require_verified: bool = Field(default=True, description="A draft PR opens only for a verified fix; an unverified "
                                      "one stays in the issue with why.")
    test_setup: str | None = Field(default=None, description="Makes the application's test environment, once per set of "
                                   "lock files (e.g. `uv sync --frozen`); it may use the network, never NightWatch's "
                                   "secrets. Never guessed: unset, nightwatch check suggests one from uv.lock or "
                                   "requirements*.txt.")
    test_command: str | None = Field(default=None, description="Runs the application's tests (e.g. `python -m pytest`); "
                                     "default: detected (pytest, manage.py test, unittest, rspec, rails test).")
    test_env: Path | None = Field(default=None, description="An existing virtual environment to run the tests with "
                                  "instead of making one.")
    test_timeout_s: float = Field(default=120.0, gt=0, description="Wall clock of one test run in the sandbox.")
    run_test_limit: int = Field(default=3, ge=0, description="run_test calls an investigation may make.")

    @model_validator(mode="before")
    @classmethod
    def _profile(cls, data: Any) -> Any:
        """The investigation profile's limits, where no limit of its own is given."""
        if not isinstance(data, dict) or str(data.get("investigation_profile", "standard")) not in PROFILES:
            return data
        return {**PROFILES[str(data["investigation_profile"])], **{k: v for k, v in data.items() if v is not None}}

    @model_validator(mode="before")
    @classmethod
    def _from_github_actions(cls, data: Any) -> Any:
        """GitHub Actions' own variables, where the job said to read them, fill what NIGHTWATCH_GITHUB_* left unset."""
        if not isinstance(data, dict) or str(data.get("github_actions", "")).lower() not in ("1", "true", "yes", "on"):
            return data
        taken = {field: os.environ[name] for field, name in GITHUB_ACTIONS_VARIABLES.items()
                 if data.get(field) is None and os.environ.get(name)}
        return {**data, **taken}

    @property
    def nerdgraph_url(self) -> str:
        return self.newrelic_endpoint or NERDGRAPH_ENDPOINTS[self.newrelic_region]

    @property
    def sentry_api_url(self) -> str:
        """The tracker's address: the configured one, else sentry.io's region."""
        return (self.sentry_url or SENTRY_URLS[self.sentry_region]).rstrip("/")

    @property
    def live_model(self) -> bool:
        return self.anthropic_api_key is not None and bool(self.anthropic_api_key.get_secret_value())

    def resolved_home(self) -> Path:
        return self.home.expanduser().resolve()


def load_settings(**overrides: Any) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


GITHUB_ACTIONS_VARIABLES = {"github_token": "GITHUB_TOKEN", "github_repo": "GITHUB_REPOSITORY",
                            "github_base_url": "GITHUB_API_URL"}


def env_names(name: str, field: FieldInfo) -> list[str]:
    """The variables that set a field, in the order they are read: its aliases, else NIGHTWATCH_ and its name."""
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    if isinstance(alias, str):
        return [alias]
    return [f"{Settings.model_config.get('env_prefix', '')}{name}".upper()]


def env_file() -> Path:
    """The `.env` file a Settings() reads: the current folder's."""
    return Path(str(Settings.model_config.get("env_file") or ".env")).resolve()


def origins(block: str | None = None, block_values: dict[str, Any] | None = None,
            given: dict[str, Any] | None = None) -> dict[str, str]:
    """Where each setting's value comes from, in the precedence settings are resolved by (module docstring): `given`
    (this run's parameters or options), an environment variable, the `.env` file, GitHub Actions' variables (where
    github_actions says so), the block `block` (its `block_values`), else the default."""
    from dotenv import dotenv_values

    dotenv = {k.upper(): v for k, v in dotenv_values(env_file()).items() if v} if env_file().is_file() else {}
    environ = {k.upper(): v for k, v in os.environ.items() if v}  # names are not case-sensitive; empty is unset
    current = Settings()
    profile = PROFILES.get(current.investigation_profile, {})
    out = {}
    for name, field in Settings.model_fields.items():
        names = [n.upper() for n in env_names(name, field)]
        from_env = next((n for n in names if n in environ), None)
        from_file = next((n for n in names if n in dotenv), None)
        if given and given.get(name) is not None:
            out[name] = "this run's parameters"
        elif from_env:
            out[name] = f"environment {from_env}"
        elif from_file:
            out[name] = f"{env_file()} {from_file}"
        elif current.github_actions and name in GITHUB_ACTIONS_VARIABLES and os.environ.get(GITHUB_ACTIONS_VARIABLES[name]):
            out[name] = f"GitHub Actions {GITHUB_ACTIONS_VARIABLES[name]}"
        elif block_values and block_values.get(name) is not None:
            out[name] = f"block {block}"
        elif name in profile:
            out[name] = f"profile {current.investigation_profile}"
        else:
            out[name] = "default"
    return out
