"""Deployments load the flow the way a worker does: in a fresh interpreter, from the entrypoint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.prefect_processes import PROCESS_GUARD_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_prefect_yaml_entrypoints_load_in_a_fresh_interpreter():
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    names = {d["name"] for d in config["deployments"]}
    assert {"nightly", "manual"} <= names
    nightly = next(d for d in config["deployments"] if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] and nightly["parameters"]["mode"] == "batch"
    for entrypoint in {d["entrypoint"] for d in config["deployments"]}:
        code = (
            "from prefect.flows import load_flow_from_entrypoint\n"
            f"flow = load_flow_from_entrypoint({entrypoint!r}, use_placeholder_flow=False)\n"
            "import nightwatch.models\n"
            "print(flow.name)"
        )
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().endswith("nightwatch")


def test_served_deployments_use_module_entrypoints():
    from nightwatch.deployments.definitions import build_deployments

    nightly, manual = build_deployments("storefront")
    assert nightly.entrypoint == manual.entrypoint == "nightwatch.flows.nightwatch.nightwatch_flow"
    assert nightly.parameters["settings_block"] == "storefront" and nightly.parameters["mode"] == "batch"
    assert manual.parameters["mode"] == "interactive"


@pytest.mark.slow
def test_the_pull_step_runs_from_the_checkout_or_fails_naming_the_variable(tmp_path, monkeypatch, prefect_harness):
    import asyncio

    import yaml
    from prefect.deployments.steps.core import StepExecutionError, run_steps

    steps = yaml.safe_load((Path(__file__).resolve().parents[2] / "prefect.yaml").read_text())["pull"]
    monkeypatch.delenv("NIGHTWATCH_CHECKOUT", raising=False)
    with pytest.raises(StepExecutionError) as unset:  # Prefect logs the cause with the flow run
        asyncio.run(run_steps(steps))
    assert "NIGHTWATCH_CHECKOUT is not set on this worker" in str(unset.value.__cause__)
    monkeypatch.setenv("NIGHTWATCH_CHECKOUT", str(tmp_path))
    with pytest.raises(StepExecutionError) as elsewhere:
        asyncio.run(run_steps(steps))
    assert "no prefect.yaml there" in str(elsewhere.value.__cause__)
    (tmp_path / "prefect.yaml").write_text("name: nightwatch\n")
    outputs = asyncio.run(run_steps(steps))
    assert outputs["directory"] == str(tmp_path.resolve()) and Path.cwd() == tmp_path.resolve()


def test_task_run_names_shorten_transactions_like_rails_routes():
    from nightwatch.tasks._prefect import short_transaction

    assert short_transaction("Controller/orders/show") == "orders#show"
    assert short_transaction("Controller/api/v1/orders/create") == "api/v1/orders#create"
    assert short_transaction("OtherTransaction/SidekiqJob/InvoiceJob/perform") == "InvoiceJob/perform"


def test_prefect_yaml_and_the_served_deployments_agree():
    """The same three deployments whether registered on a pool (prefect.yaml) or served (`make ui`)."""
    from nightwatch.deployments.definitions import NIGHTLY_CRON, TIMEZONE, build_collect_deployment, build_deployments

    declared = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
    served = {d.name: d for d in [*build_deployments(), build_collect_deployment()]}
    assert set(declared) == set(served) == {"nightly", "manual", "collect"}
    for name, deployment in served.items():
        yaml_params = {k: v for k, v in declared[name]["parameters"].items() if v is not None}
        assert {k: v for k, v in deployment.parameters.items() if v is not None} == yaml_params, name
        assert declared[name]["entrypoint"].replace(":", ".") == deployment.entrypoint, name
        assert set(declared[name]["tags"]) == set(deployment.tags), name
    (schedule,) = declared["nightly"]["schedules"]
    assert (schedule["cron"], schedule["timezone"]) == (NIGHTLY_CRON, TIMEZONE)
    assert served["nightly"].schedules[0].schedule.cron == NIGHTLY_CRON
    assert not declared["manual"].get("schedules") and not declared["collect"].get("schedules")


@pytest.mark.slow
def test_no_core_module_loads_prefect():
    """nightwatch/ and knowledge_store/ are the core: importing every module of theirs never imports Prefect."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import nightwatch, nightwatch.knowledge_store as knowledge_store\n"
        "for package in (nightwatch, knowledge_store):\n"
        "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'prefect' or m.startswith('prefect.'))\n"
        "print(len(loaded), loaded[:5])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("0 "), done.stdout
