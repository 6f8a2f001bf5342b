"""ExportFileSource: NerdGraph responses from a file, rebased and filtered by the window."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from nightwatch.models import Window
from nightwatch.sources.base import ErrorSource, SourceError
from nightwatch.sources.export_file import ExportFileSource
from tests.fakes.nerdgraph import SAMPLE_EXPORTED_AT, WEIRD_CLASS, sample_export

WINDOW = Window.ending_at(SAMPLE_EXPORTED_AT, timedelta(hours=24))


def write(tmp_path: Path, export: object, name: str = "errors.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(export) if not isinstance(export, str) else export, encoding="utf-8")
    return path


def test_valid_file_gives_the_window_errors(tmp_path: Path) -> None:
    source = ExportFileSource(write(tmp_path, sample_export(), "nightly.json"))
    assert isinstance(source, ErrorSource) and (source.name, source.demo) == ("file:nightly.json", False)
    batch = source.fetch_errors(WINDOW)
    assert batch.rows_seen == 5
    assert [e.error_class for e in batch.errors] == ["NoMethodError", "ActiveRecord::RecordNotFound", WEIRD_CLASS]
    merged = batch.errors[1]
    assert merged.occurrences == 42
    assert merged.first_seen == SAMPLE_EXPORTED_AT - timedelta(hours=22)
    assert merged.last_seen == SAMPLE_EXPORTED_AT - timedelta(hours=2)
    assert merged.last_seen.tzinfo is not None and merged.app_name == "storefront-production"
    assert any("1 error group(s)" in w and "outside the window" in w for w in batch.warnings)


def test_demo_flag_names_the_source_demo(tmp_path: Path) -> None:
    source = ExportFileSource(write(tmp_path, sample_export()), demo=True)
    assert (source.name, source.demo) == ("demo", True)


def test_limit_keeps_the_most_frequent(tmp_path: Path) -> None:
    batch = ExportFileSource(write(tmp_path, sample_export())).fetch_errors(WINDOW, limit=1)
    assert [e.error_class for e in batch.errors] == ["NoMethodError"]


def test_window_filtering_is_honest(tmp_path: Path) -> None:
    source = ExportFileSource(write(tmp_path, sample_export()))
    earlier = Window.ending_at(SAMPLE_EXPORTED_AT - timedelta(hours=30), timedelta(hours=24))
    assert [e.error_class for e in source.fetch_errors(earlier).errors] == ["Net::ReadTimeout"]
    later = Window.ending_at(SAMPLE_EXPORTED_AT + timedelta(days=3), timedelta(hours=24))
    assert source.fetch_errors(later).errors == []


def test_rebase_moves_every_timestamp(tmp_path: Path) -> None:
    now = SAMPLE_EXPORTED_AT + timedelta(days=10, minutes=7)
    source = ExportFileSource(write(tmp_path, sample_export()), rebase_to=now, demo=True)
    batch = source.fetch_errors(Window.ending_at(now, timedelta(hours=24)))
    assert len(batch.errors) == 3
    assert batch.errors[0].last_seen == now - timedelta(hours=1)
    traces = source.fetch_traces(batch.errors[0], Window.ending_at(now, timedelta(hours=24)))
    assert traces.transaction_errors[0]["timestamp"] == (now - timedelta(hours=1)).isoformat()


def test_traces_are_filtered_cleaned_and_parsed(tmp_path: Path) -> None:
    source = ExportFileSource(write(tmp_path, sample_export()))
    crash = source.fetch_errors(WINDOW).errors[0]
    traces = source.fetch_traces(crash, WINDOW)
    assert traces.fingerprint == crash.fingerprint
    assert len(traces.transaction_errors) == 2  # the third occurrence is 30 h old
    assert any("1 transaction error row(s) outside the window" in note for note in traces.notes)
    assert [(f.file, f.line, f.in_app) for f in traces.stack_frames][:2] == [
        ("app/models/order.rb", 42, True),
        ("app/controllers/orders_controller.rb", 12, True),
    ]
    assert traces.stack_frames[2].in_app is False


def test_traces_of_a_merged_group_gather_every_detail(tmp_path: Path) -> None:
    source = ExportFileSource(write(tmp_path, sample_export()))
    merged = source.fetch_errors(WINDOW).errors[1]
    traces = source.fetch_traces(merged, WINDOW)
    assert len(traces.transaction_errors) == 2
    assert traces.stack_frames[0].method == "edit"


def test_a_group_without_details_says_so(tmp_path: Path) -> None:
    export = sample_export()
    export["details"] = []
    source = ExportFileSource(write(tmp_path, export, "bare.json"))
    traces = source.fetch_traces(source.fetch_errors(WINDOW).errors[0], WINDOW)
    assert traces.transaction_errors == [] and traces.stack_frames == []
    assert any("bare.json holds no details for NoMethodError" in note for note in traces.notes)


def test_a_broken_detail_is_a_note_not_a_failure(tmp_path: Path) -> None:
    export = sample_export()
    export["details"][0]["error_traces"] = {"data": None}
    source = ExportFileSource(write(tmp_path, export))
    traces = source.fetch_traces(source.fetch_errors(WINDOW).errors[0], WINDOW)
    assert len(traces.transaction_errors) == 2
    assert any("error_traces of details[0]" in note and "malformed" in note for note in traces.notes)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"errors file .*nowhere\.json does not exist"):
        ExportFileSource(tmp_path / "nowhere.json")


def test_invalid_json(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"broken\.json is not valid JSON: .* line 1"):
        ExportFileSource(write(tmp_path, '{"format": ', "broken.json"))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"format": "something/2"}, "format 'something/2'"),
        ({"format": None}, "format None"),
        ({"app_name": ""}, "'app_name' must be a non-empty string"),
        ({"errors": [1, 2]}, "'errors' must hold the NerdGraph response"),
        (
            {"errors": {"data": {"actor": None}}},
            "malformed response for the errors query in errors.json: missing data.actor",
        ),
        ({"exported_at": "last tuesday"}, "'exported_at' must be an ISO-8601 time"),
        ({"details": {"not": "a list"}}, "'details' must be a list"),
    ],
)
def test_wrong_format_names_the_file_and_the_problem(tmp_path: Path, change: dict, problem: str) -> None:
    path = write(tmp_path, {**sample_export(), **change})
    with pytest.raises(SourceError) as info:
        ExportFileSource(path)
    assert problem in str(info.value)
    assert "errors.json" in str(info.value)


def test_not_an_export_at_all(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no 'format' key"):
        ExportFileSource(write(tmp_path, {"data": {}}))
    with pytest.raises(SourceError, match="the top level is a list"):
        ExportFileSource(write(tmp_path, [1, 2, 3]))


def test_an_export_holds_its_deploy_markers_as_the_query_answered_them(tmp_path: Path) -> None:
    """`deploys`: the deploy markers query's response, read in the window and moved with the rest on a rebase."""
    from tests.fakes.nerdgraph import nerdgraph_response

    def at(hours_before: float) -> int:
        return int((SAMPLE_EXPORTED_AT - timedelta(hours=hours_before)).timestamp() * 1000)

    export = sample_export() | {"deploys": nerdgraph_response([
        {"timestamp": at(5), "commit": "9f1c2e3d4b5a", "version": "v2.14.0"},
        {"timestamp": at(400), "version": "v2.0.0"},
        {"version": "no time"}])}
    deploys, notes = ExportFileSource(write(tmp_path, export)).fetch_deploys(WINDOW)
    assert [d.version for d in deploys] == ["v2.14.0"] and notes == ["1 deploy marker row(s) without a readable timestamp skipped"]
    later = SAMPLE_EXPORTED_AT + timedelta(days=3)
    moved, _ = ExportFileSource(write(tmp_path, export), rebase_to=later).fetch_deploys(Window.ending_at(later, timedelta(hours=24)))
    assert [d.at for d in moved] == [later - timedelta(hours=5)]
    assert ExportFileSource(write(tmp_path, sample_export())).fetch_deploys(WINDOW) == ([], [])
    broken = sample_export() | {"deploys": {"data": {"actor": None}}}
    none, why = ExportFileSource(write(tmp_path, broken)).fetch_deploys(WINDOW)
    assert none == [] and why and "deploy markers query" in why[0]
