"""A subflow's bulky inputs travel by reference, not as flow-run parameters.

Prefect stores every flow run's parameters in its database and refuses more than 512 KB of them. A
night's errors, traces and research (file previews included) pass that at a few dozen errors, so
the triage subflow receives the path of a JSON file under NIGHTWATCH_HOME instead, written
atomically; its flow run page shows that path. A retried night writes the same file again.
"""

from __future__ import annotations

from pathlib import Path

from nightwatch.knowledge_store.metrics import safe_name
from nightwatch.tasks.context import RunContext, home

from nightwatch.atomic import atomic_write_bytes
from nightwatch.models import ErrorGroup, Model, TraceData
from nightwatch.research import ResearchContext


class NightInputs(Model):
    errors: list[ErrorGroup]
    traces: list[TraceData]
    research: list[ResearchContext]


class InputsMissing(FileNotFoundError):
    """The inputs file of a subflow run is gone (NIGHTWATCH_HOME moved or cleaned): rerun the night."""


def stash(ctx: RunContext, name: str, errors: list[ErrorGroup], traces: list[TraceData], research: list[ResearchContext]) -> str:
    path = home(ctx) / "runs" / safe_name(ctx.run_id) / f"{name}-inputs.json"
    inputs = NightInputs(errors=errors, traces=traces, research=research)
    return str(atomic_write_bytes(path, inputs.model_dump_json().encode("utf-8")))


def load(path: str) -> NightInputs:
    try:
        return NightInputs.model_validate_json(Path(path).read_bytes())
    except FileNotFoundError as exc:
        raise InputsMissing(f"subflow inputs {path} are missing; rerun the night to write them again") from exc
