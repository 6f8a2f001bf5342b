"""The deployments of one application: `nightly` (scheduled, batch triage), `manual`, and `collect`
(which resumes a batch night whose batch outlived the nightly run's wait).

`python -m nightwatch.deployments.serve` serves all three from this process (what `make ui` runs); `prefect deploy`
with prefect.yaml registers the same on a work pool for a platform team. One set per application:
give each its own `settings_block`.

Entrypoints are module paths (`nightwatch.flows.nightwatch:nightwatch_flow`), not file paths: Prefect loads a
file path as a script named after the file, and a script named `nightwatch` would shadow the package.
"""

from __future__ import annotations

import os

NIGHTLY_CRON = os.environ.get("NIGHTWATCH_CRON", "0 6 * * *")
TIMEZONE = os.environ.get("NIGHTWATCH_TIMEZONE", "UTC")


def nightly_parameters() -> dict:
    return {"since_hours": 24.0, "mode": "batch", "dry_run": False}


def manual_parameters() -> dict:
    return {"since_hours": 24.0, "mode": "interactive", "dry_run": False}


def build_deployments(settings_block: str | None = None) -> list:
    from nightwatch.flows.nightwatch import nightwatch_flow
    from prefect.schedules import Cron
    from prefect.types.entrypoint import EntrypointType

    extra = {"settings_block": settings_block} if settings_block else {}
    nightly = nightwatch_flow.to_deployment(
        name="nightly", schedule=Cron(NIGHTLY_CRON, timezone=TIMEZONE), parameters=nightly_parameters() | extra,
        description="Every night: the last 24 h of production errors, triaged through Message Batches.", tags=["nightwatch"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    manual = nightwatch_flow.to_deployment(
        name="manual", parameters=manual_parameters() | extra,
        description="Run or rerun a night by hand; finished steps are reused from the cache.", tags=["nightwatch"],
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
    return [nightly, manual]


def build_collect_deployment(settings_block: str | None = None):
    """`collect`: no schedule of its own. A batch night whose triage batch is still processing schedules
    a run of it for later, with that night's parameters; the run resumes the night (tasks/batch_handoff.py)."""
    from nightwatch.flows.nightwatch import nightwatch_flow
    from prefect.types.entrypoint import EntrypointType

    extra = {"settings_block": settings_block} if settings_block else {}
    return nightwatch_flow.to_deployment(
        name="collect", parameters={"mode": "batch"} | extra, tags=["nightwatch"], entrypoint_type=EntrypointType.MODULE_PATH,
        description="Resumes a night whose triage batch was still processing: polls it again, then finishes the night.",
    )
