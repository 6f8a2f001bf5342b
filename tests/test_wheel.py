"""The installed NightWatch is one name in site-packages: a wheel built from this checkout, put into a fresh
environment beside an application's own `tasks` package, imports as `nightwatch.*` and leaves `tasks` to the
application."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.prefect_processes import PROCESS_GUARD_S

ROOT = Path(__file__).resolve().parents[1]

IMPORTS = """
import sys, tasks
import nightwatch, nightwatch.tasks.api_limits, nightwatch.knowledge_store
from nightwatch.flows.nightwatch import nightwatch_flow
from nightwatch.deployments.definitions import build_deployments
assert tasks.OWNER == "the application", tasks.__file__
assert nightwatch.__file__.startswith(sys.argv[1]), nightwatch.__file__
print(nightwatch_flow.name, nightwatch.tasks.api_limits.__name__, sorted(m for m in sys.modules if m.split(".")[0] in
      ("flows", "blocks", "deployments", "knowledge_store")))
"""


@pytest.mark.slow
def test_the_wheel_installs_one_namespace_beside_an_applications_own_tasks_package(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-c", "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))",
                            str(tmp_path / "dist")], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = tmp_path / "dist" / built.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"nightwatch", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert {"nightwatch/tasks/api_limits.py", "nightwatch/flows/nightwatch.py", "nightwatch/knowledge_store/SCHEMA.md",
            "nightwatch/agent/catalog/base-analyzer.md"} <= set(names)

    env = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    zipfile.ZipFile(wheel).extractall(site)  # a pure-Python wheel's files, where an installer puts them
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # NightWatch's dependencies, read only
    app = tmp_path / "app"
    (app / "tasks").mkdir(parents=True)
    (app / "tasks" / "__init__.py").write_text('OWNER = "the application"\n')  # a Celery project's tasks, say
    done = subprocess.run([str(python), "-c", IMPORTS, str(site)], cwd=app, capture_output=True, text=True,
                          timeout=PROCESS_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["nightwatch", "nightwatch.tasks.api_limits", "[]"]
