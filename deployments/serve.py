"""Serve the nightly and manual deployments from this process (`make ui` runs this)."""

from __future__ import annotations

import os
from pathlib import Path

from nightwatch import environment


def main() -> None:
    environment.configure(Path(os.environ.get("NIGHTWATCH_HOME", ".nightwatch")).resolve(), log_level="INFO")
    from prefect import serve

    from deployments.definitions import build_collect_deployment, build_deployments

    block = os.environ.get("NIGHTWATCH_SETTINGS_BLOCK")
    serve(*build_deployments(block), build_collect_deployment(block))


if __name__ == "__main__":
    main()
