"""The pull step of every deployment in prefect.yaml: work from the NightWatch checkout, or fail saying why.

Prefect's own `set_working_directory` renders an unset `{{ $NIGHTWATCH_CHECKOUT }}` as an empty string and a
worker would run from wherever it was started; this step refuses that with the variable's name.
"""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "NIGHTWATCH_CHECKOUT"


class CheckoutMissing(RuntimeError):
    """The worker cannot find the NightWatch checkout the deployment runs from."""


def checkout(directory: str | None = None) -> dict[str, str]:
    """chdir into the checkout (`directory`, else $NIGHTWATCH_CHECKOUT) after checking it holds prefect.yaml."""
    raw = (directory or "").strip() or os.environ.get(VARIABLE, "").strip()
    if not raw:
        raise CheckoutMissing(f"{VARIABLE} is not set on this worker: set it to the NightWatch checkout the deployments "
                              "run from (the folder holding prefect.yaml), then restart the worker")
    path = Path(raw).expanduser()
    if not (path / "prefect.yaml").is_file():
        raise CheckoutMissing(f"{VARIABLE}={raw} is not a NightWatch checkout: no prefect.yaml there")
    os.chdir(path)
    return {"directory": str(path.resolve())}
