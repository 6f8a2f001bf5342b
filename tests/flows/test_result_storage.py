"""The night's results and cache live where every worker finds them (NIGHTWATCH_RESULT_STORAGE)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from nightwatch.tasks import result_storage
from nightwatch.tasks._prefect import CACHED_MESSAGE

from nightwatch.runtime import ConfigurationError
from nightwatch.settings import Settings

pytestmark = pytest.mark.timeout(1200)  # nights, on a worker and again on another: past the suite's hang guard

UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)


def _storage(spec: str | None, home):
    return result_storage.configured(Settings(home=home, result_storage=spec))


def test_a_path_a_file_url_and_the_default_are_local_folders(tmp_path):
    assert _storage(None, tmp_path).basepath == str(tmp_path.resolve() / "results")
    assert _storage(str(tmp_path / "shared"), tmp_path).basepath == str(tmp_path / "shared")
    assert _storage(f"file://{tmp_path}/shared", tmp_path).basepath == str(tmp_path / "shared")
    assert _storage("./relative/results", tmp_path).basepath.endswith("/relative/results")


def test_an_fsspec_url_is_remote_storage_and_an_unknown_protocol_is_named(tmp_path):
    remote = _storage("memory://nightwatch/results/", tmp_path)
    assert type(remote).__name__ == "RemoteFileSystem" and remote.basepath == "memory://nightwatch/results"
    with pytest.raises(ConfigurationError, match="NIGHTWATCH_RESULT_STORAGE=nosuchfs://x: fsspec cannot open nosuchfs://"):
        _storage("nosuchfs://x", tmp_path)


def test_the_setting_reads_its_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("NIGHTWATCH_RESULT_STORAGE", "memory://team")
    assert Settings().result_storage == "memory://team"


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_saved_filesystem_block_is_used_and_a_missing_one_is_named(tmp_path):
    from prefect.filesystems import LocalFileSystem

    LocalFileSystem(basepath=str(tmp_path / "team")).save("nightwatch-results-test", overwrite=True)
    block = _storage("local-file-system/nightwatch-results-test", tmp_path)
    assert block.basepath == str(tmp_path / "team")
    assert result_storage.describe(block) == "local-file-system/nightwatch-results-test"
    with pytest.raises(ConfigurationError, match="local-file-system/not-saved: no saved filesystem block"):
        _storage("local-file-system/not-saved", tmp_path)


@pytest.mark.flow
@pytest.mark.usefixtures("recorded_task_runs")
@pytest.mark.parametrize("shared", ["default", "path"])
def test_a_rerun_on_a_worker_with_an_empty_local_disk_repeats_no_model_call(tmp_path, monkeypatch, shared):
    """Two workers: each has its own Prefect result folder (its local disk), both see NIGHTWATCH_HOME (a shared
    volume) and, when set, NIGHTWATCH_RESULT_STORAGE. The second run of the night finds every finished step."""
    from nightwatch.flows.nightwatch import run_night
    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, temporary_settings

    if shared == "path":
        monkeypatch.setenv("NIGHTWATCH_RESULT_STORAGE", str(tmp_path / "team-results"))
    nights = []
    for worker in ("worker-a", "worker-b"):
        with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: tmp_path / worker / "storage"}):
            nights.append(run_night(until=UNTIL, max_errors=3))
    first, second = nights
    assert first.succeeded and second.succeeded and first.run_id == second.run_id
    assert first.totals.model_calls > 0 and second.totals.model_calls == 0
    assert [r.source for r in second.results] == ["cache"] * len(first.results)
    assert _cached_task_messages(second.attempt) and set(_cached_task_messages(second.attempt)) == {CACHED_MESSAGE}
    for worker in ("worker-a", "worker-b"):  # nothing went to a worker's own disk
        assert not any((tmp_path / worker / "storage").rglob("*")), worker


def _cached_task_messages(attempt: str) -> list[str | None]:
    """The state messages of the task runs answered from the cache in the night's flow run `attempt`."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, TaskRunFilter, TaskRunFilterStateName

    with get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs(limit=50) if r.id.hex.startswith(attempt)]
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id={"any_": [r.id for r in runs]}),
                                      task_run_filter=TaskRunFilter(state={"name": TaskRunFilterStateName(any_=["Cached"])}))
    return [t.state.message for t in tasks]


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_worker_that_does_not_share_the_storage_spends_again_and_the_report_says_so(tmp_path, monkeypatch):
    from nightwatch.flows.nightwatch import run_night

    from tests.views import rows

    nights = []
    for worker in ("worker-a", "worker-b"):  # each its own storage: the misconfiguration the setting exists for
        monkeypatch.setenv("NIGHTWATCH_RESULT_STORAGE", str(tmp_path / worker / "results"))
        nights.append(run_night(until=UNTIL, max_errors=3))
    first, second = nights
    assert second.totals.model_calls == first.totals.model_calls > 0  # paid again, in full
    again = [w for w in second.warnings if w.startswith("spent again:")]
    deep = [r for r in first.results if r.source == "model"]
    assert deep and len(again) == len(deep), second.warnings
    assert all(f"not in the result storage ({tmp_path / 'worker-b' / 'results'})" in line for line in again)
    assert not [w for w in first.warnings if w.startswith("spent again:")]
    home = Settings().resolved_home()  # the rows count every call once, the second spend included
    assert rows(home, "select model_calls, attempts from runs") == [(first.totals.model_calls * 2, 2)]


def test_a_cached_steps_key_carries_the_shape_of_the_results_it_stores(monkeypatch):
    from nightwatch.tasks import _prefect

    from nightwatch.models import ErrorAnalysisResult

    version = _prefect.results_version()
    assert _prefect.key("investigate", "f1", "run-1") == f"investigate:f1:run-1:{version}"
    schema = ErrorAnalysisResult.model_json_schema()
    monkeypatch.setattr(ErrorAnalysisResult, "model_json_schema",
                        classmethod(lambda cls, *a, **k: {**schema, "properties": {**schema["properties"], "new_field": {}}}))
    _prefect.results_version.cache_clear()
    try:
        assert _prefect.results_version() != version  # a field added: another version of the results
    finally:
        monkeypatch.undo()
        _prefect.results_version.cache_clear()
    assert _prefect.results_version() == version


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_night_rerun_after_an_upgrade_recomputes_what_the_old_version_cached(tmp_path, monkeypatch):
    """Results pickled by another version of NightWatch read back without the fields added since, and the step that
    used them failed (`'SuspectCommit' object has no attribute 'deploy'` in notify): they are not read back."""
    from nightwatch.flows.nightwatch import run_night
    from nightwatch.tasks import _prefect

    monkeypatch.setenv("NIGHTWATCH_RESULT_STORAGE", str(tmp_path / "results"))  # this test's own: no other night's
    current = _prefect.results_version
    monkeypatch.setattr(_prefect, "results_version", lambda: "r-older-version")
    first = run_night(until=UNTIL, max_errors=3)
    monkeypatch.setattr(_prefect, "results_version", current)  # the upgrade
    second = run_night(until=UNTIL, max_errors=3)
    assert first.succeeded and second.succeeded and first.run_id == second.run_id
    assert "cache" not in {r.source for r in second.results} and second.totals.model_calls == first.totals.model_calls > 0
    third = run_night(until=UNTIL, max_errors=3)  # the same version again: everything from the cache
    assert [r.source for r in third.results] == ["cache"] * len(first.results) and third.totals.model_calls == 0
