"""YAML read with the safe loader, in C where PyYAML was built with libyaml (about ten times faster than the pure-Python
one: a night reads the demo history, ignore rules, agent definitions and knowledge documents)."""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, with the C loader where there is one; it raises yaml.YAMLError as that does."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)
