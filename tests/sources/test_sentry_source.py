"""Sentry's web API as NightWatch reads it: the real `sentry-sdk`'s events (tests/captured/sentry_python, 1.x, 2.x and
3.x under Django, Flask, FastAPI, Celery and gunicorn) served by the fake Sentry in the shapes Sentry publishes, every
answer checked against Sentry's OpenAPI document; then the faults a night meets (a refused token, an unknown project,
429, 5xx, a body that is not JSON) through the real client."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.models import Window
from nightwatch.sources.base import SourceError
from nightwatch.sources.sentry import SentrySource, TrackerAPI
from nightwatch.sources.sentry_event import canonical, exceptions_of, moment, trace_of
from nightwatch.trace_paths import PathMap, locate_frames
from tests.fakes.http import Reply
from tests.fakes.sentry import CONTRACT, FAKE_TOKEN, ORG, PROJECT, FakeSentry, api_event

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "tests" / "captured" / "sentry_python"
APPS = ROOT / "scripts" / "newrelic_capture" / "apps"
CAPTURES = sorted(p.stem for p in CAPTURED.glob("*.json"))


def events_of(name: str) -> list[dict]:
    return json.loads((CAPTURED / f"{name}.json").read_text(encoding="utf-8"))["events"]


def window_of(events: list[dict]) -> Window:
    newest = max(t for t in map(moment, events) if t)
    return Window.ending_at(newest.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1), timedelta(hours=24))


def source_for(fake: FakeSentry, **kwargs) -> SentrySource:
    return SentrySource(TrackerAPI(SecretStr(FAKE_TOKEN), fake.url, backoff_s=0.01, **kwargs), ORG, PROJECT)


def night(name: str, page_size: int = 100) -> tuple[FakeSentry, list, dict]:
    events = events_of(name)
    with FakeSentry(events, page_size=page_size) as fake:
        source = source_for(fake)
        batch = source.fetch_errors(window_of(events))
        traces = {g.fingerprint: source.fetch_traces(g, window_of(events)) for g in batch.errors}
    return fake, batch.errors, traces


@pytest.mark.parametrize("name", CAPTURES)
def test_every_capture_reads_back_through_the_api_with_every_answer_as_sentry_publishes_it(name: str) -> None:
    fake, errors, traces = night(name)
    assert fake.violations == []
    assert errors and all(g.issue_id and g.occurrences > 0 for g in errors)
    for group in errors:
        trace = traces[group.fingerprint]
        if group.error_class:  # an exception: its chain, frames and occurrences came through
            assert trace.exceptions and trace.exceptions[-1].error_class.split(":")[-1] == group.error_class
            assert trace.stack_frames and trace.transaction_errors
            assert trace.stack_trace.startswith("Traceback (most recent call last):")


def test_the_api_shape_and_the_sdk_shape_read_the_same() -> None:
    """Bugsink serves an event as the SDK sent it, Sentry as its API serialises it: one reading of both."""
    for name in CAPTURES:
        for event in events_of(name):
            if not exceptions_of(event):
                continue
            as_sdk, as_api = trace_of("f", [event]), trace_of("f", [api_event(event, "1")])
            assert as_api.stack_frames == as_sdk.stack_frames, name
            assert as_api.exceptions == as_sdk.exceptions, name
            same = {"error.class", "error.message", "request.method", "request.uri", "release", "environment", "handled"}
            assert {k: v for k, v in as_api.transaction_errors[0].items() if k in same} == \
                {k: v for k, v in as_sdk.transaction_errors[0].items() if k in same}, name


def test_the_mapping_gives_events_the_keys_of_sentrys_published_example() -> None:
    example = CONTRACT["endpoints"]["issue_event"]["examples"]["ReturnAnIssueEvent"]
    mine = api_event(next(e for e in events_of("django-sdk2") if exceptions_of(e)), "1")
    assert set(example) <= set(mine)
    theirs = example["entries"][0]["data"]["values"][0]
    ours = next(e for e in mine["entries"] if e["type"] == "exception")["data"]["values"][-1]
    assert set(theirs) <= set(ours) and set(theirs["stacktrace"]) <= set(ours["stacktrace"])
    assert set(theirs["stacktrace"]["frames"][0]) <= set(ours["stacktrace"]["frames"][0])
    assert all(isinstance(n, int) and isinstance(t, str) for n, t in ours["stacktrace"]["frames"][-1]["context"])


def test_frames_map_to_the_application_and_old_sdks_in_app_flags_are_checked() -> None:
    """sentry-sdk 1.x marks every frame in_app, Django's own included: a site-packages frame is never the app's."""
    for name in ("django-sdk1", "django-sdk2", "django-sdk3"):
        _, errors, traces = night(name)
        for group in errors:
            frames = traces[group.fingerprint].stack_frames
            assert not any(f.in_app and "site-packages" in f.file for f in frames), name
    app = sorted(str(p.relative_to(APPS / "django_shop")) for p in (APPS / "django_shop").rglob("*.py"))
    _, errors, traces = night("django-sdk2")
    key_error = next(g for g in errors if g.error_class == "KeyError")
    frames = locate_frames(traces[key_error.fingerprint], PathMap(app)).stack_frames
    top = next(f for f in frames if f.in_app)
    assert top.located and top.file == "shop/pricing.py" and top.deployed_path.endswith("/django_shop/shop/pricing.py")


def test_the_window_counts_and_users_are_those_of_the_period_asked() -> None:
    events = events_of("fastapi-sdk2")
    window = window_of(events)
    with FakeSentry(events) as fake:
        source = source_for(fake)
        inside = source.fetch_errors(window)
        before = source.fetch_errors(Window.ending_at(window.start, timedelta(hours=24)))
    assert sum(g.occurrences for g in inside.errors) == sum(1 for _ in events) and before.errors == []
    listed = [r for r in fake.api_requests() if r.path.endswith("/issues/")]
    assert listed[0].query["start"] == [window.start.strftime("%Y-%m-%dT%H:%M:%S")]


def test_every_page_is_read_and_the_requests_stay_within_the_bound() -> None:
    events = [e for n in CAPTURES if n.endswith("sdk2") for e in events_of(n)]
    with FakeSentry(events, page_size=2) as fake:
        source = source_for(fake)
        window = Window(start=datetime(2000, 1, 1, tzinfo=timezone.utc), end=max(map(moment, events)) + timedelta(hours=1))
        batch = source.fetch_errors(window)
        pages = len(fake.api_requests())
        source.fetch_traces(batch.errors[0], window)
    issues = len({e for e in fake._ids.values()})
    assert len(batch.errors) == issues and pages == -(-issues // 2)
    assert source.api.requests == pages + 1  # one request per page, one per selected error's events


@pytest.mark.parametrize(("reply", "kind", "words"), [
    (Reply(401, {"detail": "Invalid token"}), "rejected", "refused the auth token"),
    (Reply(403, {"detail": "You do not have permission"}), "rejected", "refused the auth token"),
    (Reply(404, {"detail": "The requested resource does not exist"}), "not_found", "check the organization and project"),
    (Reply(200, raw=b"<html>maintenance</html>"), "", "not JSON"),
])
def test_a_refusal_is_one_clear_error_that_names_it(reply: Reply, kind: str, words: str) -> None:
    with FakeSentry(events_of("flask-sdk2")) as fake:
        fake.server.fail_next("GET", f"/api/0/organizations/{ORG}/issues/", reply)
        with pytest.raises(SourceError) as caught:
            source_for(fake).fetch_errors(window_of(events_of("flask-sdk2")))
    assert caught.value.kind == kind and words in str(caught.value) and FAKE_TOKEN not in str(caught.value)


def test_a_page_that_fails_after_the_first_keeps_what_was_read_and_says_so() -> None:
    events = [e for n in CAPTURES if n.endswith("sdk2") for e in events_of(n)]
    window = Window(start=datetime(2000, 1, 1, tzinfo=timezone.utc), end=max(map(moment, events)) + timedelta(hours=1))
    with FakeSentry(events, page_size=2) as fake:
        fake.later_pages = [Reply(200, raw=b"<html>upstream timed out</html>")]
        batch = source_for(fake).fetch_errors(window)
    assert len(batch.errors) == 2 and batch.rows_seen == 2
    assert any("stopped after 2 issue(s)" in w and "not JSON" in w for w in batch.warnings), batch.warnings


def test_429_waits_for_retry_after_and_5xx_is_retried_then_fails_loudly() -> None:
    events = events_of("flask-sdk2")
    path = f"/api/0/organizations/{ORG}/issues/"
    with FakeSentry(events) as fake:
        fake.server.fail_next("GET", path, Reply(429, {"detail": "slow down"}, {"Retry-After": "0.2"}), Reply(502, {}))
        assert source_for(fake).fetch_errors(window_of(events)).errors  # the third attempt is answered
        fake.server.fail_next("GET", path, *[Reply(503, {"detail": "down"})] * 4)
        with pytest.raises(SourceError) as caught:
            source_for(fake).fetch_errors(window_of(events))
    assert caught.value.kind == "busy" and "4 attempt(s): HTTP 503" in str(caught.value)


def test_an_unknown_project_and_a_wrong_token_fail_the_check() -> None:
    with FakeSentry([]) as fake:
        assert "bookshop" in source_for(fake).check()
        wrong = SentrySource(TrackerAPI(SecretStr("sntryu_wrong"), fake.url), ORG, PROJECT)
        with pytest.raises(SourceError, match="refused the auth token"):
            wrong.check()
        with pytest.raises(SourceError, match="404"):
            SentrySource(TrackerAPI(SecretStr(FAKE_TOKEN), fake.url), ORG, "no-such-project").check()


def test_a_message_event_has_no_class_and_a_chain_is_read_whole() -> None:
    """What a night must not mistake: a logged message is not an exception, and the error of a chain is its last."""
    for name in CAPTURES:
        for event in map(canonical, events_of(name)):
            chain = exceptions_of(event)
            trace = trace_of("f", [event])
            if not chain:
                assert trace.stack_frames == [] and trace.exceptions == []
            elif len(chain) > 1:
                assert [c.error_class.split(":")[-1] for c in trace.exceptions] == [c["type"] for c in chain]
                assert "direct cause" in trace.stack_trace or "During handling" in trace.stack_trace or "is chained to" in trace.stack_trace


def _cli(*args: str, env: dict[str, str]) -> tuple[int, str, str, float]:
    import os
    import subprocess
    import sys
    import time

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "nightwatch.cli", *args], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


@pytest.mark.slow  # starts the CLI
def test_a_wrong_token_an_unknown_project_and_a_closed_port_exit_2_with_one_line(nightwatch_home: Path) -> None:
    """`nightwatch run` checks the tracker before Prefect starts: exit 2, one line on stderr naming the problem, nothing
    on stdout and nothing analysed. The CLI's start-up is most of the seconds (the hang guard is the timeout)."""
    with FakeSentry(events_of("flask-sdk2")) as fake:
        base = {"NIGHTWATCH_SOURCE": "sentry", "NIGHTWATCH_SENTRY_URL": fake.url, "NIGHTWATCH_SENTRY_ORG": ORG,
                "NIGHTWATCH_SENTRY_PROJECT": PROJECT, "NIGHTWATCH_SENTRY_AUTH_TOKEN": "sntryu_wrong"}
        code, out, err, seconds = _cli("run", env=base)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "refused the auth token (HTTP 401)" in err and "sntryu_wrong" not in err
        code, _, err, _ = _cli("run", env={**base, "NIGHTWATCH_SENTRY_AUTH_TOKEN": FAKE_TOKEN, "NIGHTWATCH_SENTRY_PROJECT": "nope"})
        assert code == 2 and "404" in err and len(err.strip().splitlines()) == 1
        checked = _cli("check", env={**base, "NIGHTWATCH_SENTRY_AUTH_TOKEN": FAKE_TOKEN})
        assert checked[0] == 0 and checked[1].splitlines()[0].split()[:2] == ["sentry", "live"], checked[1]
        url = fake.url
    code, _, err, seconds = _cli("run", env={**base, "NIGHTWATCH_SENTRY_URL": url})  # the port is closed now
    assert code == 2 and "could not reach" in err and len(err.strip().splitlines()) == 1
    assert not (nightwatch_home / "reports").exists()
