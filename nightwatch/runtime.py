"""Step 1, connect: resolve settings into clients and say which sources are live or offline defaults.

Partially configured live credentials are an error naming what is missing, never a silent fallback
to demo data. Nothing here logs or returns a secret.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from nightwatch.models import SourceStatus
from nightwatch.settings import DEMO_DIR, DEMO_DIRS, Settings
from nightwatch.trace_paths import PathMap

DEMO_EXPORT = DEMO_DIR / "nerdgraph_export.json"
DEMO_IGNORE = DEMO_DIR / "ignore.yml"
DEMO_APP = DEMO_DIR / "app"
DEMO_HISTORY = DEMO_DIR / "history.yml"


def demo_file(s: Settings, name: str) -> Path:
    """A file of the demo the settings choose (NIGHTWATCH_DEMO): nerdgraph_export.json, ignore.yml, app, history.yml."""
    return DEMO_DIRS[s.demo] / name


class ConfigurationError(Exception):
    """Settings that cannot work as given; the message lists every problem."""


def _set(value: Any) -> bool:
    if value is None:
        return False
    if hasattr(value, "get_secret_value"):
        return bool(value.get_secret_value())
    return bool(str(value).strip())


def source_statuses(s: Settings) -> list[SourceStatus]:
    """Each external source: live, offline default, or misconfigured (and why). The first is the error source the
    settings choose (NIGHTWATCH_SOURCE): newrelic, sentry or bugsink."""
    out = [error_source_status(s)]
    out.append(SourceStatus(name="anthropic", state="live" if s.live_model else "offline",
                            detail=f"Claude {s.model} (triage {s.triage_model})" + (f" via {s.anthropic_base_url}" if s.anthropic_base_url else "")
                            if s.live_model else "offline model: deterministic, rule-based, no tokens billed"))
    gh = {"token": s.github_token, "repository": s.github_repo}
    local = f"local checkout {s.code_path}" if s.code_path else f"demo data: bundled {s.demo} demo application"
    out.append(_status("github", gh, f"{s.github_repo} on {s.github_base_url}", f"{local}; issues and PRs written as files"))
    out.append(_status("slack", {"bot token": s.slack_bot_token, "channel": s.slack_channel},
                       f"channel {s.slack_channel} via {s.slack_base_url}", "report written as Block Kit JSON + Markdown files"))
    if s.errors_file and not Path(s.errors_file).is_file():
        out[0] = SourceStatus(name=s.source, state="misconfigured", detail=f"errors file {s.errors_file} does not exist")
    if s.code_path and not Path(s.code_path).is_dir():
        out[2] = SourceStatus(name="github", state="misconfigured", detail=f"code path {s.code_path} is not a directory")
    elif s.code_path and not _in_git(Path(s.code_path)):
        out[2] = SourceStatus(name="github", state="misconfigured",
                              detail=f"code path {s.code_path} is not a git checkout (only files git tracks are read)")
    return out


def error_source_status(s: Settings) -> SourceStatus:
    """The error source's status; offline, a Sentry-protocol source needs a demo whose errors the real SDK sent."""
    status = _source_status(s)
    if status.state == "offline" and s.source != "newrelic" and not s.errors_file and \
            demo_errors_file(s).name != "sentry_events.json":
        return SourceStatus(name=s.source, state="misconfigured", detail=f"the {s.demo} demo has no Sentry events: run "
                            "the Python demo (NIGHTWATCH_DEMO=python), or set credentials")
    return status


def _source_status(s: Settings) -> SourceStatus:
    offline = f"errors from {s.errors_file}" if s.errors_file else f"demo data: {demo_errors_file(s).name} ({s.demo} demo)"
    if s.source == "newrelic":
        nr = {"API key": s.newrelic_api_key, "account id": s.newrelic_account_id, "app name": s.newrelic_app_name}
        return _status("newrelic", nr, f"NerdGraph {s.nerdgraph_url} ({s.newrelic_region})", offline)
    where = {"token": s.sentry_auth_token, "project": s.sentry_project}
    if s.source == "sentry":
        return _status("sentry", where | {"organization": s.sentry_org},
                       f"Sentry {s.sentry_api_url}, project {s.sentry_org}/{s.sentry_project}", offline)
    return _status("bugsink", where | {"URL": s.sentry_url}, f"Bugsink {s.sentry_url}, project {s.sentry_project}", offline)


def demo_errors_file(s: Settings) -> Path:
    """The demo's errors as the chosen source sends them: New Relic's NerdGraph export, or the events the real
    sentry-sdk sent (the Python demo has them; Sentry and Bugsink read the same events)."""
    sentry_events = demo_file(s, "sentry_events.json")
    if s.source != "newrelic" and sentry_events.is_file():
        return sentry_events
    return demo_file(s, "nerdgraph_export.json")


def _in_git(path: Path) -> bool:
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == "true"


def _status(name: str, fields: dict[str, Any], live_detail: str, offline_detail: str) -> SourceStatus:
    present = [k for k, v in fields.items() if _set(v)]
    if len(present) == len(fields):
        return SourceStatus(name=name, state="live", detail=live_detail)
    if present:
        missing = [k for k in fields if k not in present]
        return SourceStatus(name=name, state="misconfigured", detail=f"{', '.join(present)} set but {', '.join(missing)} missing")
    return SourceStatus(name=name, state="offline", detail=offline_detail)


def require_consistent(statuses: list[SourceStatus]) -> None:
    bad = [f"{st.name}: {st.detail}" for st in statuses if st.state == "misconfigured"]
    if bad:
        raise ConfigurationError("configuration is incomplete (set all of a service's settings, or none):\n  " + "\n  ".join(bad))


@dataclass
class Runtime:
    """The clients of one run, built once per process from settings."""

    settings: Settings
    statuses: list[SourceStatus]
    source: Any
    host: Any
    model_client: Any
    issues: Any
    pulls: Any
    notifier_factory: Any

    @cached_property
    def paths(self) -> PathMap:
        """Production paths of stack frames mapped to the code host's files (listed once per night)."""
        return PathMap.of_host(self.host, self.settings.path_prefixes)

    def state(self, name: str) -> str:
        return next(s.state for s in self.statuses if s.name == name)

    @property
    def source_state(self) -> str:
        """The error source's: live, offline (an errors file or the demo's) or misconfigured."""
        return self.statuses[0].state

    @cached_property
    def verifier(self) -> Any:
        """Runs fixes' regression tests in the sandbox, on a local checkout (NIGHTWATCH_CODE_PATH or the local host)."""
        return build_verifier(self.settings, self.host)

    @property
    def demo_data(self) -> bool:
        return bool(getattr(self.source, "demo", False)) or (self.state("github") == "offline" and not self.settings.code_path)

    def close(self) -> None:
        """Close every client that holds a connection; one that fails to close does not stop the others."""
        verifier = self.__dict__.get("verifier")  # made only where a night verified fixes: its tree goes with it
        for client in (self.source, self.host, self.model_client, self.issues, self.pulls, verifier):
            close = getattr(client, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()


def build_runtime(settings: Settings, anchor: datetime) -> Runtime:
    statuses = source_statuses(settings)
    require_consistent(statuses)
    home = settings.resolved_home()
    by_name = {s.name: s.state for s in statuses}
    from nightwatch.agent.client import build_model_client

    return Runtime(
        settings=settings,
        statuses=statuses,
        source=error_source(settings, statuses[0].state, anchor),
        host=_code_host(settings, by_name["github"], home, anchor),
        model_client=build_model_client(settings),
        issues=_issue_tracker(settings, by_name["github"], home),
        pulls=_pr_publisher(settings, by_name["github"], home),
        notifier_factory=lambda report_dir: _notifier(settings, by_name["slack"], home, report_dir),
    )


def build_verifier(s: Settings, host: Any) -> Any:
    from nightwatch.verify.sandbox import Limits
    from nightwatch.verify.verifier import TestSettings, Verifier

    root = Path(s.code_path).resolve() if s.code_path else getattr(host, "root", None)
    def files() -> list[str]:  # listed when a test first runs, never at start-up
        if root is None:
            return []
        from nightwatch.codehosts.local import LocalRepoHost

        local = host if getattr(host, "root", None) == root else LocalRepoHost(root)
        return sorted(local.tracked_files())
    env_path = s.test_env
    if env_path is None and not s.code_path and s.demo == "python" and not s.errors_file:
        env_path = Path(sys.prefix)  # the Python demo's tests need only what NightWatch's own environment has
    secrets = [v.get_secret_value() for v in (s.anthropic_api_key, s.newrelic_api_key, s.github_token, s.slack_bot_token) if v]
    return Verifier(root, files, s.resolved_home(), TestSettings(
        setup=s.test_setup, command=s.test_command, env_path=env_path, secrets=tuple(secrets), enabled=s.verify_fixes,
        limits=Limits(wall_s=s.test_timeout_s, cpu_s=int(s.test_timeout_s))))


def error_source(s: Settings, state: str, anchor: datetime) -> Any:
    """The source the settings choose: live with credentials, else the errors file, else the demo's errors."""
    if state == "live":
        return _live_source(s)
    path, demo = (Path(s.errors_file), False) if s.errors_file else (demo_errors_file(s), True)
    if _is_sentry_events(path):
        from nightwatch.sources.sentry_file import SentryEventsFileSource

        return SentryEventsFileSource(path, rebase_to=anchor if demo else None, demo=demo,
                                      events_per_issue=s.sentry_events_per_issue)
    from nightwatch.sources.export_file import ExportFileSource

    return ExportFileSource(path, rebase_to=anchor if demo else None, demo=demo)


def _is_sentry_events(path: Path) -> bool:
    """A file of Sentry events (its format is named in its first bytes), not a NerdGraph export."""
    from nightwatch.sources.sentry_file import EVENTS_FORMAT

    try:
        with path.open("rb") as handle:
            return EVENTS_FORMAT.encode() in handle.read(4096)
    except OSError:
        return False


def _live_source(s: Settings) -> Any:
    if s.source == "newrelic":
        from nightwatch.sources.nerdgraph import NerdGraphClient, NerdGraphSource

        assert s.newrelic_api_key is not None and s.newrelic_account_id is not None and s.newrelic_app_name
        client = NerdGraphClient(s.newrelic_api_key, s.newrelic_account_id, s.nerdgraph_url, timeout_s=s.newrelic_timeout_s)
        return NerdGraphSource(client, s.newrelic_app_name)
    return sentry_source(s)


def sentry_source(s: Settings, timeout_s: float | None = None, max_retries: int = 3) -> Any:
    """Sentry's or Bugsink's source over its web API, as the settings name it."""
    from nightwatch.sources.sentry import BugsinkSource, SentrySource, TrackerAPI

    assert s.sentry_auth_token is not None and s.sentry_project
    service = "Sentry" if s.source == "sentry" else "Bugsink"
    api = TrackerAPI(s.sentry_auth_token, s.sentry_api_url, service, timeout_s=timeout_s or s.sentry_timeout_s,
                     max_retries=max_retries)
    if s.source == "sentry":
        assert s.sentry_org
        return SentrySource(api, s.sentry_org, s.sentry_project, s.sentry_query, s.sentry_environment, s.sentry_events_per_issue)
    return BugsinkSource(api, s.sentry_project, s.sentry_query, s.sentry_events_per_issue, s.sentry_environment)


def _code_host(s: Settings, state: str, home: Path, anchor: datetime) -> Any:
    if state == "live":
        from nightwatch.codehosts.github import GitHubHost

        assert s.github_token is not None and s.github_repo
        return GitHubHost(s.github_repo, s.github_token, base_url=s.github_base_url)
    from nightwatch.codehosts.local import LocalRepoHost

    if s.code_path:
        return LocalRepoHost(Path(s.code_path))
    from nightwatch.codehosts.demo_repo import materialize_demo_repo

    with _DEMO_LOCK:
        repo = materialize_demo_repo(demo_file(s, "app"), demo_file(s, "history.yml"),
                                     home / ("demo-repo" if s.demo == "rails" else f"demo-repo-{s.demo}"), anchor)
    return LocalRepoHost(repo)


_DEMO_LOCK = threading.Lock()


def _issue_tracker(s: Settings, state: str, home: Path) -> Any:
    if state == "live":
        from nightwatch.publishers.issues import GitHubIssueTracker

        assert s.github_token is not None and s.github_repo
        return GitHubIssueTracker(s.github_repo, s.github_token, base_url=s.github_base_url)
    from nightwatch.publishers.issues import FileIssueTracker

    return FileIssueTracker(home / "tracker")


def _pr_publisher(s: Settings, state: str, home: Path) -> Any:
    if state == "live":
        from nightwatch.publishers.pull_requests import GitHubPRPublisher

        assert s.github_token is not None and s.github_repo
        return GitHubPRPublisher(s.github_repo, s.github_token, base_url=s.github_base_url)
    from nightwatch.publishers.pull_requests import FilePRPublisher

    return FilePRPublisher(home / "tracker")


def _notifier(s: Settings, state: str, home: Path, report_dir: Path) -> Any:
    if state == "live":
        from nightwatch.publishers.slack import SlackNotifier

        assert s.slack_bot_token is not None and s.slack_channel
        return SlackNotifier(s.slack_bot_token, s.slack_channel, base_url=s.slack_base_url, ledger_dir=home / "ledger" / "slack")
    from nightwatch.publishers.slack import FileNotifier

    return FileNotifier(report_dir)
