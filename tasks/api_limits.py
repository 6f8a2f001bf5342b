"""The bound on model traffic: a Prefect global concurrency limit named for the API.

Every NightWatch deployment shares `anthropic-api`, so model calls across applications stay within
what the account allows. NightWatch creates the limit when it is missing (`api_concurrency` slots)
and leaves an existing one alone, so an operator can resize or pause it in the UI. It works the same
against the ephemeral local server of an offline run.

A direct pass takes its slots in one acquisition and shares them among its tasks through a
semaphore: acquiring a slot is a round trip to the Prefect API, serialised per limit, which would
otherwise cost more than the calls it guards. A task running outside such a pass (on another
worker) takes one slot around each call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
from prefect.client.schemas.responses import GlobalConcurrencyLimitResponse
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from nightwatch.night import Night

API_LIMIT = "anthropic-api"


class ApiPaused(RuntimeError):
    """The operator set the API's concurrency limit to zero: no model call may start."""


def release_orphaned_slots(names: list[str]) -> list[str]:
    """Free the slots still held on these limits; call it only when no other night can hold them (a local
    server this process alone uses): a night killed mid-call leaves its slots taken for good otherwise,
    because the ephemeral server that held their leases died with it. Returns what was freed."""
    freed = []
    with get_client(sync_client=True) as client:
        for name in names:
            try:
                found = client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                continue
            if found.active_slots:
                client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active_slots=0))
                freed.append(f"{name}: {found.active_slots} slot(s) left by a killed run")
    return freed


def limit_named(name: str, size: int) -> GlobalConcurrencyLimitResponse:
    """The global concurrency limit `name` as the server has it, created with `size` slots if missing. An existing
    limit is left as it is: operators tune it in the Prefect UI, across deployments."""
    with get_client(sync_client=True) as client:
        try:
            return client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # created meanwhile by a concurrent night: it exists now
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=size))
            return client.read_global_concurrency_limit_by_name(name)


def ensure_api_limit(size: int, name: str = API_LIMIT) -> int:
    """Create the limit if missing; return how many slots it has (an inactive limit bounds nothing: `size`)."""
    found = limit_named(name, size)
    if found.active and found.limit < 1:
        raise ApiPaused(f"the Prefect concurrency limit {name!r} has 0 slots: model calls are paused until it is raised")
    return found.limit if found.active else size


@contextlib.contextmanager
def api_slots(night: Night | None, wanted: int, size: int) -> Iterator[int]:
    """Hold min(wanted, limit) slots for a whole direct pass; yields how many calls may run at once (the night's
    tasks share them through its gate)."""
    slots = max(1, min(wanted, ensure_api_limit(size)))
    with concurrency(API_LIMIT, occupy=slots, strict=True):
        if night is None:
            yield slots
            return
        with night.gate(API_LIMIT, slots):
            yield slots


@contextlib.contextmanager
def api_call(night: Night | None) -> Iterator[None]:
    """Around one model call: a slot of the night's pass if one is open, else one of the global limit."""
    gate = night.open_gate(API_LIMIT) if night is not None else None
    if gate is not None:
        with gate:
            yield
        return
    with concurrency(API_LIMIT, occupy=1):
        yield
