"""What watches a real application's reproduction: the New Relic agent, or the Sentry SDK.

Copied beside the case drivers (`ctfd_drive.py`, `healthchecks_drive.py`) into the case's venv as
`capture_server/monitors.py`. A driver is given either the path of a New Relic ini file (the agent in developer mode,
whose audit log the builder reads) or `sentry` (the SDK started by `capture_server.sentry_drive.start_sdk`, whose
capturing transport writes each event where CAPTURE_SENTRY_EVENTS_TO says); it starts that one before the
application is imported, calls `between` after each step that harvests, and `finish` at the end.
"""

from __future__ import annotations

from collections.abc import Callable

SENTRY = "sentry"


def start(config: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """Start the agent or SDK `config` names; (between steps, finish)."""
    if config == SENTRY:
        import sentry_sdk
        from capture_server.sentry_drive import start_sdk

        start_sdk()
        return (lambda: None), (lambda: sentry_sdk.flush(timeout=10))
    import newrelic.agent
    from capture_server.drive import harvest_cycle

    newrelic.agent.initialize(config)
    newrelic.agent.register_application(timeout=10.0)
    return harvest_cycle, (lambda: newrelic.agent.shutdown_agent(timeout=10.0))
