"""NerdGraphClient and NerdGraphSource over HTTP against the fake NerdGraph."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from pydantic import SecretStr

from nightwatch.models import Window
from nightwatch.settings import Settings
from nightwatch.sources.base import ErrorSource, SourceError
from nightwatch.sources.nerdgraph import NerdGraphClient, NerdGraphSource
from tests.fakes.http import Reply
from tests.fakes.nerdgraph import (
    FAKE_API_KEY,
    SAMPLE_EXPORTED_AT,
    WEIRD_CLASS,
    FakeNerdGraph,
    NerdGraphDataset,
    nerdgraph_response,
    sample_export,
)

WINDOW = Window.ending_at(SAMPLE_EXPORTED_AT, timedelta(hours=24))
APP = "storefront-production"


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeNerdGraph]:
    """One server for the module: stopping a server costs half a second."""
    with FakeNerdGraph(NerdGraphDataset.from_export(sample_export())) as server:
        yield server


@pytest.fixture
def fake(shared_fake: FakeNerdGraph) -> Iterator[FakeNerdGraph]:
    shared_fake.queries.clear()
    shared_fake.server.requests.clear()
    yield shared_fake
    assert not any(shared_fake.server._faults.values()), "a test left injected faults unused"


def make_client(fake: FakeNerdGraph, key: str = FAKE_API_KEY, **options: float) -> NerdGraphClient:
    options.setdefault("backoff_s", 0.01)
    return NerdGraphClient(SecretStr(key), fake.account_id, fake.url, **options)  # type: ignore[arg-type]


def test_happy_path_returns_rows(fake: FakeNerdGraph) -> None:
    rows, warnings = make_client(fake).nrql(
        f"SELECT * FROM ErrorTrace WHERE error.class = 'NoMethodError' SINCE 0 UNTIL {10**13} LIMIT 3", "traces"
    )
    assert warnings == []
    assert [r["error.class"] for r in rows] == ["NoMethodError"]
    request = fake.server.calls("POST", "/graphql")[0]
    assert request.headers["api-key"] == FAKE_API_KEY
    assert request.json()["variables"]["accountId"] == fake.account_id


def test_429_with_retry_after_is_honoured_then_succeeds(fake: FakeNerdGraph) -> None:
    fake.fail_next(Reply(429, {"errors": [{"message": "slow down"}]}, {"Retry-After": "0.3"}))
    # A retry on the backoff (an hour) instead of Retry-After (0.3 s) would take an hour: 5 minutes tell them apart on
    # any machine, however slow, where a bound of a few seconds is a speed test
    client = make_client(fake, backoff_s=3600)
    started = time.monotonic()
    rows, _ = client.nrql(f"SELECT * FROM TransactionError WHERE appName = '{APP}' SINCE 0 UNTIL {10**13} LIMIT 5", "q")
    assert 0.3 <= time.monotonic() - started < 300
    assert len(rows) == 5
    assert len(fake.server.calls("POST")) == 2


def test_500_then_success(fake: FakeNerdGraph) -> None:
    fake.fail_next(Reply(500, {"errors": [{"message": "internal"}]}), Reply(503, "unavailable"))
    rows, _ = make_client(fake).nrql(
        f"SELECT * FROM ErrorTrace WHERE appName = '{APP}' SINCE 0 UNTIL {10**13} LIMIT 3", "q"
    )
    assert rows
    assert len(fake.server.calls("POST")) == 3


def test_timeout_is_retried(fake: FakeNerdGraph) -> None:
    # The timeout guards the retry's answer too (at 0.2 s a loaded core could miss it); the slow reply outlasts it
    fake.fail_next(Reply(200, nerdgraph_response([]), delay_s=30.0))
    rows, _ = make_client(fake, timeout_s=3.0).nrql(
        f"SELECT * FROM ErrorTrace WHERE appName = '{APP}' SINCE 0 UNTIL {10**13} LIMIT 3", "q"
    )
    assert rows, "the retry, not the slow reply, answered"


def test_persistent_500_becomes_a_source_error(fake: FakeNerdGraph) -> None:
    fake.fail_next(*[Reply(500, {"errors": [{"message": "internal"}]})] * 3)
    with pytest.raises(SourceError, match=r"errors query failed after 3 attempt\(s\): HTTP 500"):
        make_client(fake, max_retries=2).nrql("SELECT 1", "errors query")
    assert len(fake.server.calls("POST")) == 3


def test_non_json_body_is_malformed(fake: FakeNerdGraph) -> None:
    fake.fail_next(Reply(200, raw=b"<html>gateway hiccup</html>", headers={"content-type": "text/html"}))
    with pytest.raises(SourceError, match="malformed response for the errors query: the body is not JSON") as info:
        make_client(fake).nrql("SELECT 1", "errors query")
    assert "gateway hiccup" in str(info.value)


def test_json_without_data_is_malformed_and_says_what_is_missing(fake: FakeNerdGraph) -> None:
    fake.fail_next(Reply(200, {"errors": [{"message": "Field 'nrql' is missing"}]}))
    with pytest.raises(SourceError) as info:
        make_client(fake).nrql("SELECT 1", "errors query")
    message = str(info.value)
    assert (
        "malformed response for the errors query: missing data.actor.account.nrql.results (top-level keys: errors)"
        in message
    )
    assert "Field 'nrql' is missing" in message


def test_partial_result_keeps_rows_and_warns(fake: FakeNerdGraph) -> None:
    fake.fail_next(Reply(200, nerdgraph_response([{"a": 1}, {"a": 2}], errors=["Some facets timed out"])))
    rows, warnings = make_client(fake).nrql("SELECT 1", "errors query")
    assert rows == [{"a": 1}, {"a": 2}]
    assert warnings == ["NerdGraph reported a partial result for the errors query: Some facets timed out"]


def test_rejected_key_names_the_problem_not_the_key(fake: FakeNerdGraph) -> None:
    wrong_key = "NRAK-WRONGKEY9876543210ZYXWVU"
    client = make_client(fake, key=wrong_key)
    with pytest.raises(SourceError, match=r"rejected the API key \(HTTP 401\)") as info:
        client.nrql("SELECT 1", "errors query")
    assert wrong_key not in str(info.value)
    assert wrong_key not in repr(client)
    assert len(fake.server.calls("POST")) == 1, "a rejected key is not retried"


def test_wrong_account_is_a_clear_error(fake: FakeNerdGraph) -> None:
    client = NerdGraphClient(SecretStr(FAKE_API_KEY), 42, fake.url, backoff_s=0.01)
    with pytest.raises(SourceError, match="Account 42 not found or not authorized"):
        client.nrql("SELECT 1", "errors query")


def test_endpoint_follows_the_region_setting() -> None:
    eu = Settings(newrelic_region="EU")
    client = NerdGraphClient(SecretStr("NRAK-X"), 1, eu.nerdgraph_url)
    assert client.endpoint == "https://api.eu.newrelic.com/graphql"
    assert Settings().nerdgraph_url == "https://api.newrelic.com/graphql"
    custom = Settings(newrelic_endpoint="https://nerdgraph.example.test/graphql").nerdgraph_url
    assert NerdGraphClient(SecretStr("NRAK-X"), 1, custom).endpoint == custom
    with pytest.raises(SourceError, match="not an http"):
        NerdGraphClient(SecretStr("NRAK-X"), 1, "api.newrelic.com/graphql")


def test_source_fetches_ranks_nothing_but_merges_and_filters(fake: FakeNerdGraph) -> None:
    source = NerdGraphSource(make_client(fake), APP)
    assert isinstance(source, ErrorSource) and (source.name, source.demo) == ("newrelic", False)
    batch = source.fetch_errors(WINDOW, limit=50)
    by_class = {e.error_class: e for e in batch.errors}
    assert set(by_class) == {"NoMethodError", "ActiveRecord::RecordNotFound", WEIRD_CLASS}
    assert by_class["ActiveRecord::RecordNotFound"].occurrences == 42
    assert batch.rows_seen == 4  # the timeout was last seen 30 h ago, outside the window
    assert fake.queries[0].startswith("SELECT count(*) AS 'occurrences'")
    assert f"appName = '{APP}'" in fake.queries[0] and fake.queries[0].endswith("LIMIT 50")


def test_traces_of_a_merged_group_cover_every_transaction(fake: FakeNerdGraph) -> None:
    source = NerdGraphSource(make_client(fake), APP)
    merged = next(e for e in source.fetch_errors(WINDOW).errors if e.error_class == "ActiveRecord::RecordNotFound")
    traces = source.fetch_traces(merged, WINDOW)
    assert "transactionName IN ('Controller/products/123/edit', 'Controller/products/456/edit')" in fake.queries[-1]
    assert len(traces.transaction_errors) == 2
    assert traces.stack_frames[0].file == "app/controllers/products_controller.rb"


def test_traces_of_a_name_with_quotes_and_backslashes_are_found(fake: FakeNerdGraph) -> None:
    source = NerdGraphSource(make_client(fake), APP)
    weird = next(e for e in source.fetch_errors(WINDOW).errors if e.error_class == WEIRD_CLASS)
    traces = source.fetch_traces(weird, WINDOW)
    assert len(traces.transaction_errors) == 1
    assert traces.stack_frames[0].method == "Order#total"
    assert "error.class = 'Weird\\'Error\\\\'" in fake.queries[-1]


def test_trace_query_failure_keeps_the_occurrences(fake: FakeNerdGraph) -> None:
    source = NerdGraphSource(make_client(fake, max_retries=0), APP)
    error = source.fetch_errors(WINDOW).errors[0]
    fake.fail_next(Reply(200, nerdgraph_response([{"timestamp": 1, "host": "web-1"}])), Reply(500, "down"))
    traces = source.fetch_traces(error, WINDOW)
    assert traces.transaction_errors == [{"timestamp": "1970-01-01T00:00:00.001000+00:00", "host": "web-1"}]
    assert any("error traces query" in note and "HTTP 500" in note for note in traces.notes)


def test_both_detail_queries_failing_raise(fake: FakeNerdGraph) -> None:
    source = NerdGraphSource(make_client(fake, max_retries=0), APP)
    error = source.fetch_errors(WINDOW).errors[0]
    fake.fail_next(Reply(500, "down"), Reply(500, "down"))
    with pytest.raises(SourceError, match="transaction errors query"):
        source.fetch_traces(error, WINDOW)


# --- deploy markers (change tracking) --------------------------------------------------------------


def _deploy_row(hours_before: float, **fields: object) -> dict:
    moment = SAMPLE_EXPORTED_AT - timedelta(hours=hours_before)
    return {"timestamp": int(moment.timestamp() * 1000), "entity.name": APP, **fields}


def test_deploy_markers_are_read_oldest_first_within_the_window_and_their_text_is_cleaned() -> None:
    dataset = NerdGraphDataset.from_export(sample_export())
    dataset.deploys = [
        _deploy_row(3, commit="9f1c2e3d4b5a", version="v2.14.0", deploymentId="d-2", user="ci-bot",
                    description="Deploy with token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        _deploy_row(20, commit="1a2b3c4d5e6f", version="v2.13.1", deploymentId="d-1", user="priya"),
        _deploy_row(500, version="v1.0.0"),  # before the window
        {"entity.name": "another-app", "timestamp": _deploy_row(5)["timestamp"], "version": "theirs"},
    ]
    with FakeNerdGraph(dataset) as server:
        deploys, notes = NerdGraphSource(make_client(server), APP).fetch_deploys(WINDOW)
        query = server.queries[-1]
    assert "FROM Deployment WHERE entity.name = 'storefront-production'" in query and "LIMIT 100" in query
    assert [d.version for d in deploys] == ["v2.13.1", "v2.14.0"] and notes == []
    assert deploys[1].commit == "9f1c2e3d4b5a" and deploys[1].user == "ci-bot" and deploys[1].label == "v2.14.0"
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in deploys[1].description


def test_a_failing_deploy_markers_query_gives_none_with_the_reason_never_an_error(fake: FakeNerdGraph) -> None:
    fake.fail_next(*[Reply(500, {"errors": [{"message": "internal"}]})] * 3)
    deploys, notes = NerdGraphSource(make_client(fake, max_retries=2), APP).fetch_deploys(WINDOW)
    assert deploys == [] and any("deploy markers query failed" in n for n in notes)


def test_deploy_rows_without_a_readable_time_are_skipped_with_a_note() -> None:
    from nightwatch.sources.parse import parse_deploys

    deploys, notes = parse_deploys([{"version": "v1"}, {"timestamp": "yesterday"}, "not a row",
                                    {"timestamp": 1_700_000_000_000, "commit": "abc1234"}])
    assert [d.commit for d in deploys] == ["abc1234"] and notes == ["3 deploy marker row(s) without a readable timestamp skipped"]
