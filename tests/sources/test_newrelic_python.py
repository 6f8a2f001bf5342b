"""The New Relic Python agent as it really reports, read through the real NerdGraph client.

Every payload here was captured from the `newrelic` agent itself (developer mode, its audit log) running small
Django, Django REST framework, Flask, FastAPI and Celery applications: `scripts/capture_newrelic_python.py`
regenerates them. The fake NerdGraph stores them as New Relic does (one event per error, every attribute) and
answers the errors query by aggregating those events, so a status the query does not ask for is a status missed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.ignore import noise_rules
from nightwatch.models import Window
from nightwatch.selection import select_errors
from nightwatch.sources.nerdgraph import NerdGraphClient, NerdGraphSource
from nightwatch.sources.parse import stack_frames_with_notes
from nightwatch.trace_paths import PathMap, locate_frames
from tests.fakes.nerdgraph import FAKE_API_KEY, FakeNerdGraph
from tests.fakes.newrelic_agent import captures, dataset, error_traces, load_capture, transaction_errors

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "scripts" / "newrelic_capture" / "apps"
APP_FOLDERS = {"django": "django_shop", "flask": "flask_blog", "fastapi": "fastapi_events", "celery": "celery_jobs",
               "gunicorn": "flask_blog"}
NOW = datetime(2026, 11, 26, 6, 0, tzinfo=timezone.utc)
WINDOW = Window(start=NOW - timedelta(days=1), end=NOW)
CAPTURES = captures()


@contextmanager
def source_of(capture: dict) -> Iterator[tuple[FakeNerdGraph, NerdGraphSource]]:
    """The real NerdGraph source, reading the captured account through the fake NerdGraph."""
    fake = FakeNerdGraph(dataset(capture, NOW))
    with fake, NerdGraphClient(SecretStr(FAKE_API_KEY), fake.account_id, fake.url) as client:
        yield fake, NerdGraphSource(client, capture["app_name"])


def night_of(name: str):
    capture = load_capture(name)
    with source_of(capture) as (fake, source):
        batch = source.fetch_errors(WINDOW)
        traces = {g.fingerprint: source.fetch_traces(g, WINDOW) for g in batch.errors}
    return capture, fake, batch, traces


def test_the_captures_cover_every_framework_and_an_agent_that_reports_status_only_as_response_status() -> None:
    assert {load_capture(n)["framework"] for n in CAPTURES} == set(APP_FOLDERS)
    old = load_capture("django-agent8")
    assert old["versions"]["newrelic"].startswith("8.")
    events = transaction_errors(old)
    assert events and all("http.statusCode" not in e and e["response.status"] == "500" for e in events)


@pytest.mark.parametrize("name", CAPTURES)
def test_every_status_the_agent_reported_is_read_and_none_is_made_up(name: str) -> None:
    capture, fake, batch, _ = night_of(name)
    assert batch.errors and not batch.warnings
    assert "response.status" in fake.queries[0]
    reported = {(e["error.class"], e["transactionName"]): e.get("http.statusCode", e.get("response.status"))
                for e in transaction_errors(capture)}
    for group in batch.errors:
        status = reported[(group.error_class, group.transaction)]
        assert group.http_status == (int(status) if status is not None else None), group
        if group.transaction.startswith("WebTransaction/") and group.error_class != "builtins:SystemExit":
            assert group.http_status == 500  # a worker aborted at its timeout never answered: no status to report


@pytest.mark.parametrize("name", CAPTURES)
def test_python_error_classes_and_transactions_are_kept_as_the_agent_names_them(name: str) -> None:
    capture, _, batch, _ = night_of(name)
    reported = {(e["error.class"], e["transactionName"]) for e in transaction_errors(capture)}
    assert {(g.error_class, g.transaction) for g in batch.errors} == reported
    assert all(":" in g.error_class for g in batch.errors)  # `builtins:KeyError`, `django.urls.exceptions:NoReverseMatch`
    assert sum(g.occurrences for g in batch.errors) == len(transaction_errors(capture))


@pytest.mark.parametrize("name", CAPTURES)
def test_the_crash_frame_is_the_one_the_agent_names_and_every_application_frame_maps_to_the_code(name: str) -> None:
    capture, _, batch, traces = night_of(name)
    folder = APPS / APP_FOLDERS[capture["framework"]]
    paths = PathMap([p.relative_to(folder).as_posix() for p in folder.rglob("*.py")])
    by_class = {t["error.class"]: t for t in error_traces(capture)}
    for group in batch.errors:
        located = locate_frames(traces[group.fingerprint], paths)
        frames = located.stack_frames
        agent = by_class[group.error_class]
        assert frames and (frames[0].deployed_path or frames[0].file, frames[0].line) == (agent["code.filepath"],
                                                                                            agent["code.lineno"])
        in_app = [f for f in frames if f.in_app]
        assert in_app and all(f.located and (folder / f.file).is_file() for f in in_app), group.error_class
        assert not any("site-packages" in f.deployed_path for f in in_app)


def test_both_stack_formats_parse_alike_a_list_of_lines_and_one_newline_joined_string() -> None:
    for trace in error_traces(load_capture("django")):
        as_list, _ = stack_frames_with_notes(trace["stackTrace"])
        as_text, _ = stack_frames_with_notes("\n".join(trace["stackTrace"]))
        assert as_list == as_text and len(as_list) == len(trace["stackTrace"]) - 1  # the heading is not a frame


def test_python_noise_is_counted_with_its_rule_and_never_investigated() -> None:
    expected = {
        "django.http.request:UnreadablePostError": "client-disconnected",
        "starlette.requests:ClientDisconnect": "client-disconnected",
        "django.db.utils:OperationalError": "database-locked",
        "builtins:SystemExit": "worker-timeout",  # gunicorn's WORKER TIMEOUT, captured under the real gunicorn
    }
    dropped: dict[str, str] = {}
    kept: list[str] = []
    for name in ("django", "fastapi", "flask", "celery", "gunicorn-timeout"):
        with source_of(load_capture(name)) as (_, source):
            selection = select_errors(source, WINDOW, noise_rules(None), 50, NOW)
        found = {g.fingerprint: g.error_class for g in selection.found}
        dropped |= {found[fp]: why.split(" ")[0] for fp, why in selection.ignored.items()}
        kept += [g.error_class for g in selection.selected]
    assert dropped == expected
    assert "builtins:KeyError" in kept and "django.urls.exceptions:NoReverseMatch" in kept
    assert all(cls not in kept for cls in expected)


@pytest.mark.parametrize("message, rule", [
    ("database is locked", "database-locked"),
    ("(1205, 'Lock wait timeout exceeded; try restarting transaction')", "database-locked"),
    ("canceling statement due to lock timeout\nCONTEXT:  while updating tuple (0,1) in relation \"shop_product\"",
     "database-locked"),
    ("deadlock detected\nDETAIL:  Process 4242 waits for ShareLock on transaction 991; blocked by process 4243.",
     "deadlock-or-serialization-failure"),
    ("(1213, 'Deadlock found when trying to get lock; try restarting transaction')", "deadlock-or-serialization-failure"),
    ("could not serialize access due to concurrent update", "deadlock-or-serialization-failure"),
    ("write error", "client-disconnected-uwsgi"),
])
def test_transient_database_and_connection_messages_match_their_rule(message: str, rule: str) -> None:
    from tests.builders import error_group

    error = error_group("django.db.utils:OperationalError", "WebTransaction/Function/shop.views:stock_update", message=message)
    assert [r.name for r in noise_rules(None) if r.matches(error)] == [rule]


@pytest.mark.parametrize("message", [
    "no such table: shop_product", "database is locked by migration 0042? no: column \"stock\" does not exist",
    "deadlock detected in the order allocator's own retry loop", "could not serialize the invoice to JSON",
    "write error: disk full while exporting the report",
])
def test_a_real_defect_that_mentions_locks_or_writes_is_not_noise(message: str) -> None:
    from tests.builders import error_group

    error = error_group("django.db.utils:OperationalError", "WebTransaction/Function/shop.views:stock_update", message=message)
    assert [r.name for r in noise_rules(None) if r.matches(error)] == []


def test_research_opens_the_view_module_the_task_module_and_for_a_routing_error_the_url_configuration(tmp_path) -> None:
    """Transaction names of the real captures lead research to the files a reader would open first."""
    import shutil

    from nightwatch.codehosts.local import LocalRepoHost
    from nightwatch.research import files_from_transaction, research_error
    from tests.gitrepo import commit_all

    assert files_from_transaction("WebTransaction/Function/shop.views:ProductViewSet.retrieve")[0] == "shop/views.py"
    assert files_from_transaction("OtherTransaction/Celery/jobs.send_digest")[0] == "jobs.py"
    assert files_from_transaction("WebTransaction/Function/blog:reading_time")[0] == "blog.py"
    assert files_from_transaction("OtherTransaction/SidekiqJob/ImportJob/perform")[0] == "app/jobs/import_job.rb"
    capture, _, batch, traces = night_of("django")
    shutil.copytree(APPS / "django_shop", tmp_path / "shop")
    host = LocalRepoHost(commit_all(tmp_path / "shop"))
    report = next(g for g in batch.errors if g.error_class.endswith("NoReverseMatch"))
    research = research_error(report, traces[report.fingerprint], host, [], [])
    assert "shop/urls.py" in research.likely_files and "shop/views.py" in research.likely_files
    crash = next(g for g in batch.errors if g.error_class == "builtins:KeyError")
    assert "shop/urls.py" not in research_error(crash, traces[crash.fingerprint], host, [], []).likely_files
