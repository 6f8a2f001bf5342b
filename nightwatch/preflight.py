"""Checks that cost seconds before a night that would cost minutes: run by `nightwatch check` and at the
start of every `nightwatch run`, before Prefect starts.

Each check is a `Check`: what was checked, whether it passed, and what to do if it did not. A failed
`fatal` check is a configuration error (exit 2). The Anthropic key is verified with one
`count_tokens` call per configured model (free, and it also proves the model name exists). An API
that cannot be reached (a closed port, a wrong host, a timeout after one retry) is a configuration
error too: every model call of the night would fail the same way. An API that answers but is busy
(429, 5xx) is a warning: the night's own retries may still get through.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nightwatch import clock
from nightwatch.models import SourceStatus
from nightwatch.settings import Settings

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fatal: bool = True

    @property
    def state(self) -> str:
        return "ok" if self.ok else ("error" if self.fatal else "warning")


def run_checks(settings: Settings, statuses: list[SourceStatus], *, probe_api: bool = True) -> list[Check]:
    """Every cheap check, in the order a person would fix them."""
    checks = [_sources(statuses), _writable("NIGHTWATCH_HOME", settings.resolved_home())]
    prefect_home = os.environ.get("PREFECT_HOME")
    checks.append(_writable("PREFECT_HOME", Path(prefect_home) if prefect_home else settings.resolved_home() / "prefect"))
    checks += [_agent(settings.agent, settings.verify_fixes), _ignore_file(settings), _tests(settings)]
    if probe_api and any(s.name == "newrelic" and s.state == "live" for s in statuses):
        checks += newrelic_checks(settings)
    if probe_api and any(s.name in ("sentry", "bugsink") and s.state == "live" for s in statuses):
        checks += sentry_checks(settings)
    if probe_api and settings.live_model:
        checks += anthropic_checks(settings)
    return checks


def problems(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.ok and c.fatal]


def _sources(statuses: list[SourceStatus]) -> Check:
    bad = [f"{s.name}: {s.detail}" for s in statuses if s.state == "misconfigured"]
    if bad:
        return Check("sources", False, "set all of a service's settings, or none: " + "; ".join(bad))
    return Check("sources", True, ", ".join(f"{s.name} {s.state}" for s in statuses))


def _writable(label: str, folder: Path) -> Check:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".nightwatch-check-"):
            pass
    except OSError as exc:
        return Check(label, False, f"{folder} is not writable ({exc.strerror or exc}); set {label} to a writable folder")
    return Check(label, True, str(folder))


def _agent(name: str, verifying: bool = True) -> Check:
    from nightwatch.agent.definitions import AgentDefinitionError, list_definitions, load_definition

    try:
        definition = load_definition(name)
    except AgentDefinitionError as exc:
        try:
            known = ", ".join(d.name for d in list_definitions())
        except AgentDefinitionError:
            known = "none readable"
        return Check("agent", False, f"{exc} (known agents: {known})")
    if verifying and "run_test" not in definition.tools:  # it is offered only to a definition that lists it
        return Check("agent", False, f"{definition.name} ({len(definition.tools)} tools; without run_test: its "
                     "investigations cannot run a test they write, so no fix is verified before the night's own run; list "
                     "run_test in its tools to offer it)", fatal=False)
    return Check("agent", True, f"{definition.name} ({len(definition.tools)} tools)")


def _ignore_file(settings: Settings) -> Check:
    from nightwatch.ignore import InvalidIgnoreRules, load_ignore_rules

    if settings.ignore_file is None:
        return Check("ignore rules", True, "none configured")
    try:
        rules = load_ignore_rules(Path(settings.ignore_file))
    except InvalidIgnoreRules as exc:
        return Check("ignore rules", False, str(exc))
    return Check("ignore rules", True, f"{len(rules)} rules in {settings.ignore_file}")


def _tests(settings: Settings) -> Check:
    """How fixes are verified: the test command (configured or detected), the environment, the sandbox; a warning
    (not an error) when they cannot be, since the night goes on and says so."""
    verifier = verifier_for(settings)
    return Check("verified fixes", verifier.unavailable is None, verifier.describe(), fatal=False)


def verifier_for(settings: Settings) -> Any:
    """The verifier a night would use, without the night: the checkout NIGHTWATCH_CODE_PATH names, else the demo
    application's files."""
    from types import SimpleNamespace

    from nightwatch.runtime import build_verifier
    from nightwatch.settings import DEMO_DIRS

    demo = (DEMO_DIRS[settings.demo] / "app").resolve() if not settings.code_path and not settings.github_repo else None
    files = frozenset(str(p.relative_to(demo)) for p in demo.rglob("*") if p.is_file()) if demo else frozenset()
    host = SimpleNamespace(root=demo, tracked_files=lambda: files)
    return build_verifier(settings, host)


def test_environment_check(settings: Settings) -> tuple[list[str], int]:
    """`nightwatch check --test-env`: make (or reuse) the test environment, even where its set-up failed before, and
    run one existing test of the application in the sandbox. Lines to print, and the exit code: 0 the test passed,
    1 it ran and did not pass, 2 nothing could run (and why)."""
    verifier = verifier_for(settings)
    if verifier.unavailable:
        return [f"not run: {verifier.unavailable}"], 2
    env = verifier.environment(retry=True)
    lines = [f"environment: {env.detail}"]
    if not env.ready:
        lines += [f"  | {line}" for line in env.output.splitlines()]
        return lines + ([f"the set-up's whole output: {env.log}"] if env.log else []), 2
    test = verifier.an_existing_test()
    if test is None:
        return lines + ["no existing test file to run (tests/, test_*.py, *_test.py, spec/)"], 2
    run = verifier.run_existing(test)
    lines += [f"$ {run.command}", f"{run.outcome} in {run.seconds:g} s"]
    if run.outcome != "passed":
        lines += [f"  | {line}" for line in run.output.splitlines()[-15:]]
    return lines, 0 if run.outcome == "passed" else 1


def newrelic_checks(settings: Settings) -> list[Check]:
    """One NRQL query (errors of the last hour, counted): a refused key, an unknown account or an endpoint where
    nothing answers is caught in seconds; a busy NerdGraph (429, 5xx) is a warning."""

    from nightwatch.sources.base import SourceError
    from nightwatch.sources.nerdgraph import NerdGraphClient
    from nightwatch.sources.nrql import probe_query

    assert settings.newrelic_api_key is not None and settings.newrelic_account_id is not None
    client = NerdGraphClient(settings.newrelic_api_key, settings.newrelic_account_id, settings.nerdgraph_url,
                             timeout_s=PROBE_TIMEOUT_S, max_retries=1)
    try:
        client.nrql(probe_query(settings.newrelic_app_name or "", clock.now()), "connection check")
    except SourceError as exc:
        hint = "; check NEW_RELIC_REGION or NIGHTWATCH_NEWRELIC_ENDPOINT and the network" if exc.kind == "unreachable" else ""
        return [Check("newrelic", False, f"{exc}{hint}", fatal=exc.kind != "busy")]
    finally:
        client.close()
    return [Check("newrelic", True, f"key accepted; account {settings.newrelic_account_id} answers ({settings.nerdgraph_url})")]


def sentry_checks(settings: Settings) -> list[Check]:
    """One request for the project (Sentry or Bugsink): a refused token, an unknown organization or project, or an
    address where nothing answers is caught in seconds; a busy tracker (429, 5xx) is a warning."""
    from nightwatch.runtime import sentry_source
    from nightwatch.sources.base import SourceError

    source = sentry_source(settings, timeout_s=PROBE_TIMEOUT_S, max_retries=1)
    try:
        found = source.check()
    except SourceError as exc:
        hint = "; check NIGHTWATCH_SENTRY_URL (or NIGHTWATCH_SENTRY_REGION) and the network" if exc.kind == "unreachable" else ""
        return [Check(settings.source, False, f"{exc}{hint}", fatal=exc.kind != "busy")]
    finally:
        source.close()
    return [Check(settings.source, True, f"token accepted; {found} answers ({settings.sentry_api_url})")]


def anthropic_checks(settings: Settings, client: Any = None) -> list[Check]:
    """One count_tokens call per configured model: a refused key or an unknown model is caught in seconds."""
    import anthropic

    from nightwatch.agent.client import configuration_problem

    assert settings.anthropic_api_key is not None
    sdk = client or anthropic.Anthropic(api_key=settings.anthropic_api_key.get_secret_value(), base_url=settings.anthropic_base_url,
                                        max_retries=1, timeout=PROBE_TIMEOUT_S)
    where = settings.anthropic_base_url or "the Anthropic API"
    checks: list[Check] = []
    for model in dict.fromkeys([settings.model, settings.triage_model]):
        try:
            sdk.messages.count_tokens(model=model, messages=[{"role": "user", "content": "ping"}])
        except anthropic.APIStatusError as exc:
            problem = configuration_problem(exc)
            if problem:
                return checks + [Check("anthropic", False, f"{problem} (model {model}, {where})")]
            checks.append(Check("anthropic", False, f"{where} answered {exc.status_code} for model {model}; the night may fail",
                                fatal=False))
        except anthropic.APIError as exc:  # nothing answers there (closed port, wrong host, timeout): no call can succeed
            return checks + [Check("anthropic", False, f"{where} could not be reached ({type(exc).__name__}); check "
                                   "ANTHROPIC_BASE_URL and the network")]
        else:
            checks.append(Check("anthropic", True, f"key accepted; model {model} known ({where})"))
    return checks
