"""NightWatch: nightly production-error analysis.

One importable namespace. The repository keeps the folders the project is organised in at its top level (`flows/`,
`tasks/`, `blocks/`, `deployments/`, `knowledge_store/`); they are imported as `nightwatch.flows`, `nightwatch.tasks`,
... everywhere. An installed wheel holds them inside this package (pyproject.toml's force-include), so NightWatch
puts no `tasks` or `flows` beside an application's own in site-packages. In a checkout, the finder below resolves
those five names to the folders beside this package; nothing else is added to the import path.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

EDGE_PACKAGES = ("flows", "tasks", "blocks", "deployments", "knowledge_store")
_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent


class _CheckoutFolders(importlib.abc.MetaPathFinder):
    """`nightwatch.<folder>` for each of EDGE_PACKAGES, from the checkout's top-level folder of that name."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in EDGE_PACKAGES:
            return None
        folder = _CHECKOUT / name
        return importlib.util.spec_from_file_location(fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])


if not (_HERE / "tasks").is_dir() and all((_CHECKOUT / name / "__init__.py").is_file() for name in EDGE_PACKAGES):
    sys.meta_path.append(_CheckoutFolders())
