"""What `nightwatch check` says about the settings: where the night writes issues and pull requests, and where each
value it will use came from (nightwatch.settings.origins), secrets shown only as set."""

from __future__ import annotations

import os
from typing import Any

from pydantic import SecretStr

from nightwatch.models import SourceStatus
from nightwatch.redact import redact
from nightwatch.settings import GITHUB_ACTIONS_VARIABLES, Settings


def writes_to(settings: Settings, github: SourceStatus) -> str:
    """Where the night's issues and pull requests go: the repository and its API, or files under the home."""
    if github.state == "live":
        return f"{settings.github_repo} on {settings.github_base_url}"
    return f"files under {settings.resolved_home()} (no GitHub repository is configured)"


def shown(value: Any) -> str:
    """A setting's value as check prints it: a secret only as set, and any other value redacted (a URL's user and
    password, a token inside a set-up command)."""
    if isinstance(value, SecretStr):
        return "set (secret)" if value.get_secret_value() else "empty"
    return redact(str(value))


def origin_rows(settings: Settings, origins: dict[str, str]) -> list[tuple[str, str, str]]:
    """(setting, value, origin) of every setting not at its default, the home always (its path resolved)."""
    rows = [("home", str(settings.resolved_home()), origins["home"] + ("" if settings.home.is_absolute() else
                                                                       f", relative to {os.getcwd()}"))]
    for name in Settings.model_fields:
        if name != "home" and origins[name] != "default":  # a profile's limits are shown, with the profile named
            rows.append((name, shown(getattr(settings, name)), origins[name]))
    return rows


def unread_variables(settings: Settings) -> list[str]:
    """GitHub Actions' variables present but not read (NIGHTWATCH_GITHUB_ACTIONS is off), each said once."""
    if settings.github_actions:
        return []
    present = [name for name in GITHUB_ACTIONS_VARIABLES.values() if os.environ.get(name)]
    return [f"{', '.join(present)} set but not read: NightWatch reads GitHub Actions' variables only with "
            "NIGHTWATCH_GITHUB_ACTIONS=true (or set NIGHTWATCH_GITHUB_TOKEN and NIGHTWATCH_GITHUB_REPO)"] if present else []


def check_report(settings: Settings, statuses: list[SourceStatus], checks: list[Any], found: dict[str, str]) -> dict[str, Any]:
    """`nightwatch check`'s findings (its JSON): the sources, where the night writes, each value's origin, the checks."""
    return {"sources": [s.model_dump() for s in statuses],
            "writes_to": writes_to(settings, next(s for s in statuses if s.name == "github")),
            "settings": [{"name": n, "value": v, "origin": o} for n, v, o in origin_rows(settings, found)],
            "unread": unread_variables(settings),
            "checks": [{"name": c.name, "state": c.state, "detail": c.detail} for c in checks]}


def check_text(report: dict[str, Any]) -> str:
    lines = [f"{s['name']:<10} {s['state']:<14} {s['detail']}" for s in report["sources"]]
    lines += ["", f"issues and pull requests go to {report['writes_to']}", ""]
    lines += [f"{s['name']:<28} {s['value'][:60]:<60} {s['origin']}" for s in report["settings"]]
    lines += [f"note: {line}" for line in report["unread"]] + [""]
    lines += [f"{c['name']:<14} {c['state']:<8} {c['detail']}" for c in report["checks"]]
    return "\n".join(lines)
