"""A night on a real Bugsink, fed by the real sentry-sdk over HTTP.

The Python demo (nightwatch/demo_python/app) is deployed in a temporary folder and served by uvicorn under
sentry-sdk 2.x (tests/bugsink/serve_bookshop.py: DSN, release, environment, server name, default integrations); the
demo's night of traffic (`drive_bookshop` of scripts/app_traffic.py, the requests its New Relic and Sentry captures
made) is sent to it over HTTP (tests/bugsink/drive_bookshop.py), every planted bug and both kinds of noise: the
client that goes away mid-upload is a connection closed mid-body, the locked database a real exclusive lock on the
server's SQLite file. The SDK posts each error to the real Bugsink of `bugsink_server` (tests/bugsink_server.py),
which digests it; then NightWatch reads the project back through `BugsinkSource`, and `nightwatch run` runs a whole
night on it, compared with the offline New Relic night on the same demo. Nothing stands in for Bugsink, and no event
is written by hand: what NightWatch reads is what Bugsink made of what the SDK sent.

The events carry the real clock's timestamps, so both nights read the real calendar (NIGHTWATCH_NOW is not passed
on, also under `make test-calendar`) and cover the 24 hours up to the next whole hour, which holds the traffic.

Measured on two cores: the application served, its traffic and the digestion 10 s, each night 37 s, the module 90 s
(with Bugsink's provisioning and startup, tests/bugsink_server.py) and 52 s of CPU; with the machine's load at 10,
17 s, 78 s and 195 s.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
import yaml
from pydantic import SecretStr

from nightwatch.models import ErrorGroup, RunReport, TraceData, Window
from nightwatch.sources.base import SourceError
from nightwatch.sources.sentry import BugsinkSource, TrackerAPI
from nightwatch.sources.sentry_event import class_of, exceptions_of
from nightwatch.trace_paths import PathMap, locate_frames
from tests.bugsink_server import Bugsink
from tests.prefect_processes import PROCESS_GUARD_S, free_port, run_process_group, seed_database, stop_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # a real Bugsink started, then whole nights on it

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "nightwatch" / "demo_python"
APP = DEMO / "app"
KEY = yaml.safe_load((DEMO / "expected.yml").read_text(encoding="utf-8"))
# The same night under the same SDK, captured with a transport that kept each event (scripts/capture_sentry_python.py)
CAPTURED = json.loads((DEMO / "sentry_events.json").read_text(encoding="utf-8"))
RELEASE = CAPTURED["captured"]["init_options"]["release"]  # the deployed commit, as the capture names it
SERVE = ROOT / "tests" / "bugsink" / "serve_bookshop.py"
DRIVE = ROOT / "tests" / "bugsink" / "drive_bookshop.py"
REPO_FILES = {p.relative_to(APP).as_posix() for p in APP.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
# Hang guards, never speed tests, five times (or more) the slowest seen on one core shared with a busy loop: the
# application answered 7.7 s after it started, the traffic took 9 s, stopping it (the SDK sending what it held) 5.1 s,
# and Bugsink had digested every event 0.3 s later (on two busy cores: 2.2, 4.5, 3 and 0.1 s).
APP_GUARD_S = 60
TRAFFIC_GUARD_S = 120
DIGEST_GUARD_S = 60
NIGHT_GUARD_S = PROCESS_GUARD_S


@dataclass
class Traffic:
    requests: list[str]  # what the driver asked and what it was answered, one line per kind of request
    digested: int  # events Bugsink digested into the project
    until: datetime  # the end of the nights' window: the first whole hour after the traffic


@dataclass
class ReadBack:
    check: str  # what BugsinkSource.check said
    errors: list[tuple[ErrorGroup, TraceData]]  # every error of the window, with its traces mapped to the demo's files
    requests: int  # what reading them cost


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # not inherited as ignored (a suite run as a background job)


def _environment(**extra: str) -> dict[str, str]:
    """This machine's environment with nothing NightWatch, an SDK, Prefect or the services read from it (and so
    no NIGHTWATCH_NOW: the real calendar), plus `extra`."""
    drop = ("NIGHTWATCH_", "SENTRY_", "PREFECT_", "ANTHROPIC_", "NEW_RELIC_", "SLACK_", "GITHUB_", "BOOKSHOP_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)} | extra


def _wait_until(what: Callable[[], str], ready: Callable[[], bool], guard_s: float, log: Path,
                proc: subprocess.Popen | None = None) -> None:
    """Until `ready()`; a failure saying `what()` and the log's tail if `proc` exits or `guard_s` pass first."""
    deadline = time.monotonic() + guard_s
    while not ready():
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            pytest.fail(f"{what()} within {guard_s} s:\n{log.read_text()[-3000:]}", pytrace=False)
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _digested(server: Bugsink) -> int:
    answer = httpx.get(f"{server.url}/api/canonical/0/projects/{server.project_id}/",
                       headers={"Authorization": f"Bearer {server.token}"}, timeout=10)
    answer.raise_for_status()
    return answer.json()["digested_event_count"]


@pytest.fixture(scope="module")
def traffic(bugsink_server: Bugsink, tmp_path_factory: pytest.TempPathFactory) -> Traffic:
    """The demo deployed and served under the SDK, its night of traffic driven at it over HTTP, the server stopped
    (the SDK sends what it holds), and every event digested by Bugsink."""
    work = tmp_path_factory.mktemp("bookshop")
    root = work / "srv" / "bookshop"  # where the captures deployed it too
    shutil.copytree(APP, root, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.sqlite3"))
    port = free_port()
    log = work / "bookshop.log"
    env = _environment(BOOKSHOP_SENTRY_DSN=bugsink_server.dsn, BOOKSHOP_RELEASE=RELEASE, BOOKSHOP_PORT=str(port),
                       BOOKSHOP_DB=str(root / "bookshop.sqlite3"))
    marks = [time.monotonic()]
    with log.open("w") as out:
        app = subprocess.Popen([sys.executable, str(SERVE)], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_interruptible)
    try:
        _wait_until(lambda: "the bookshop did not answer", lambda: _answers(f"http://127.0.0.1:{port}/openapi.json"),
                    APP_GUARD_S, log, app)
        marks.append(time.monotonic())
        driven = run_process_group([sys.executable, str(DRIVE), str(work)], cwd=work, timeout=TRAFFIC_GUARD_S,
                                   env=_environment(BOOKSHOP_URL=f"http://127.0.0.1:{port}"))
        assert driven.returncode == 0, f"the traffic failed:\n{driven.stdout[-2000:]}{driven.stderr[-3000:]}"
        marks.append(time.monotonic())
        app.send_signal(signal.SIGINT)  # as Ctrl-C or a service manager stops it: uvicorn stops, the SDK flushes
        _wait_until(lambda: "the bookshop did not stop on SIGINT", lambda: app.poll() is not None, APP_GUARD_S, log)
    finally:
        if app.poll() is None:
            stop_group(app, 5)
    assert app.returncode == 0 and "sentry-sdk flushed" in log.read_text(), log.read_text()[-3000:]
    marks.append(time.monotonic())
    expected = len(CAPTURED["events"])
    _wait_until(lambda: f"Bugsink did not digest the {expected} events the capture of the same night holds (it has "
                f"{_digested(bugsink_server)})", lambda: _digested(bugsink_server) >= expected, DIGEST_GUARD_S,
                bugsink_server.log)
    marks.append(time.monotonic())
    print("bookshop under sentry-sdk: answering {:.1f} s after it started, the traffic {:.1f} s, stopped and flushed "
          "{:.1f} s, every event digested {:.1f} s later".format(*(b - a for a, b in zip(marks, marks[1:]))))
    now = datetime.now(timezone.utc)
    return Traffic(requests=driven.stdout.splitlines(), digested=_digested(bugsink_server),
                   until=now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1))


def _source(server: Bugsink, token: str | None = None) -> BugsinkSource:
    return BugsinkSource(TrackerAPI(SecretStr(token or server.token), server.url, "Bugsink"), str(server.project_id))


def _window(until: datetime) -> Window:
    return Window(start=until - timedelta(hours=24), end=until)


@pytest.fixture(scope="module")
def read_back(bugsink_server: Bugsink, traffic: Traffic) -> ReadBack:
    """Every error of the night as NightWatch's Bugsink source reads it, its frames mapped to the demo's files."""
    source = _source(bugsink_server)
    window = _window(traffic.until)
    try:
        check = source.check()
        batch = source.fetch_errors(window, limit=50)
        paths = PathMap(REPO_FILES)
        errors = [(group, locate_frames(source.fetch_traces(group, window), paths)) for group in batch.errors]
        return ReadBack(check=check, errors=errors, requests=source.api.requests)
    finally:
        source.close()


def _night(home: Path, prefect_db_template: Path, until: datetime, **env: str) -> RunReport:
    """`nightwatch run --output json` on the Python demo in a process of its own, as a person runs it."""
    seed_database(home / "prefect", prefect_db_template)  # the CLI's own Prefect starts without migrating
    done = run_process_group([sys.executable, "-m", "nightwatch.cli", "run", "--output", "json", "--until",
                              f"{until:%Y-%m-%dT%H:%M}"], cwd=home.parent, timeout=NIGHT_GUARD_S,
                             env=_environment(NIGHTWATCH_HOME=str(home), NIGHTWATCH_DEMO="python", PYTHONPATH=str(ROOT), **env))
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    return RunReport.model_validate_json(done.stdout)


@pytest.fixture(scope="module")
def bugsink_night(bugsink_server: Bugsink, traffic: Traffic, prefect_db_template: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> RunReport:
    return _night(tmp_path_factory.mktemp("bugsink-night") / "home", prefect_db_template, traffic.until,
                  NIGHTWATCH_SOURCE="bugsink", NIGHTWATCH_SENTRY_URL=bugsink_server.url,
                  NIGHTWATCH_SENTRY_AUTH_TOKEN=bugsink_server.token, NIGHTWATCH_SENTRY_PROJECT=str(bugsink_server.project_id))


@pytest.fixture(scope="module")
def newrelic_night(traffic: Traffic, prefect_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> RunReport:
    """The offline night on the demo's New Relic capture, over the same window."""
    return _night(tmp_path_factory.mktemp("newrelic-night") / "home", prefect_db_template, traffic.until)


def _crash_frame(traces: TraceData) -> tuple[str, int | None] | None:
    """The newest application frame: where the error was raised in the application's code."""
    frames = traces.in_app_frames
    return (frames[0].file, frames[0].line) if frames else None


def _handler(traces: TraceData) -> str:
    """The outermost application frame, the function the framework called for the request, as `module:function`."""
    frames = traces.in_app_frames
    return f"{frames[-1].module}:{frames[-1].method}" if frames else ""


def _sdk_class(error_class: str) -> str:
    """The answer key's class as the SDK names it: Python's own without a module (New Relic's `builtins:`)."""
    return error_class.removeprefix("builtins:")


def test_the_night_went_over_http_as_the_capture_recorded_it_and_bugsink_digested_every_event(traffic: Traffic) -> None:
    """The driver asked what the capture asked, as often, and every request that raised in the capture was
    answered 500 by the served application (the locked database's too: the lock held the server's write); Bugsink
    digested as many events as the SDK's capture of the same night holds."""
    assert traffic.requests == [re.sub(r"'raised \w+'", "'500'", line) for line in CAPTURED["captured"]["requests"]]
    assert traffic.digested == len(CAPTURED["events"])


def test_bugsink_gives_back_every_planted_bug_crashing_where_the_answer_key_says(read_back: ReadBack) -> None:
    """Each planted bug of expected.yml comes back through BugsinkSource as an error whose newest application frame
    is the answer key's crash line, every application frame mapped from where it was deployed to a file of the demo;
    every error's count is the number of events the captured night holds for it (grouped by class and route, as the
    SDK named them)."""
    assert read_back.check == "project bookshop-production"
    by_crash = {(traces.exceptions[-1].error_class, _crash_frame(traces)): group for group, traces in read_back.errors
                if traces.exceptions}
    for defect in KEY["defects"]:
        crash = (_sdk_class(defect["error_class"]), (defect["crash"]["file"], defect["crash"]["line"]))
        assert crash in by_crash, f"{defect['error_class']} at {crash[1]} is not among {sorted(by_crash, key=str)}"
    for group, traces in read_back.errors:
        assert traces.in_app_frames, (group.label, traces.stack_frames)
        assert all(f.located and f.deployed_path.endswith(f"/srv/bookshop/{f.file}") for f in traces.in_app_frames), \
            (group.label, traces.in_app_frames)
    captured = Counter((class_of(exceptions_of(e)[-1]), e["transaction"]) for e in CAPTURED["events"])
    counted = {(traces.exceptions[-1].error_class, group.transaction): group.occurrences for group, traces in read_back.errors}
    assert counted == dict(captured)
    # the project, the issues (one page), each issue's events (one page each), and each one's newest three in full
    assert read_back.requests == 2 + sum(1 + min(3, group.occurrences) for group, _ in read_back.errors)


def test_an_environment_reads_through_bugsinks_tag_search(bugsink_server: Bugsink, traffic: Traffic,
                                                          read_back: ReadBack) -> None:
    """NIGHTWATCH_SENTRY_ENVIRONMENT becomes Bugsink's `environment:"..."` tag filter on issues and events: the
    environment the SDK named gives the same errors, counted alike; another gives none."""
    window = _window(traffic.until)
    found = {}
    for environment in ("production", "staging"):
        source = BugsinkSource(TrackerAPI(SecretStr(bugsink_server.token), bugsink_server.url, "Bugsink"),
                               str(bugsink_server.project_id), environment=environment)
        try:
            found[environment] = {g.issue_id: g.occurrences for g in source.fetch_errors(window, limit=50).errors}
        finally:
            source.close()
    assert found == {"production": {g.issue_id: g.occurrences for g, _ in read_back.errors}, "staging": {}}


def test_a_token_bugsink_refuses_is_one_clear_error(bugsink_server: Bugsink) -> None:
    source = _source(bugsink_server, token="0" * 40)
    try:
        with pytest.raises(SourceError) as refused:
            source.check()
    finally:
        source.close()
    assert refused.value.kind == "rejected" and "HTTP 401" in str(refused.value) and "0" * 40 not in str(refused.value)


def test_a_night_on_bugsink_finds_and_fixes_what_the_new_relic_night_does(bugsink_night: RunReport,
                                                                          newrelic_night: RunReport,
                                                                          read_back: ReadBack) -> None:
    """The whole night on Bugsink analyses every planted bug as the offline New Relic night does: the same crash
    sites and origins, the same fixes verified in the sandbox, each error counted as often, every file it names a
    file of the repository (Bugsink reported the deployed paths, /tmp/.../srv/bookshop/bookshop/pricing.py).

    The two name a route differently: New Relic's agent after the handler function
    (`WebTransaction/Function/bookshop.app:book_price`), Sentry's SDK after the route's template
    (`/books/{isbn}/price`). The errors are paired by the handler, the function the framework called for the
    request, and the class: for New Relic the `module:function` its transaction names, for Bugsink the outermost
    application frame of the error's newest event (its module and function, as the SDK sent them). Both name the code
    that answered the request, and neither is taken from the crash site or from anything the nights concluded, so
    the pairing does not presuppose what is compared."""
    assert bugsink_night.error_source == "bugsink" and bugsink_night.sources[0].state == "live", bugsink_night.sources
    handlers = {group.issue_id: _handler(traces) for group, traces in read_back.errors}
    pairs: dict[tuple[str, str], dict[str, object]] = {}
    for result in newrelic_night.results:
        pairs.setdefault((result.error.transaction.removeprefix("WebTransaction/Function/"),
                          result.error.error_class.split(":")[-1]), {})["newrelic"] = result
    for result in bugsink_night.results:
        pairs.setdefault((handlers[result.error.issue_id], result.error.error_class), {})["bugsink"] = result
    unpaired = [key for key, both in pairs.items() if len(both) != 2]
    assert not unpaired, f"errors of one night only: {unpaired}"

    for night in (bugsink_night, newrelic_night):
        assert night.succeeded and night.errors_selected == len(KEY["defects"]) == len(night.results)
        assert {n.rule for n in night.noise} == {n["rule"] for n in KEY["noise"]}
    key = {(d["transaction"].removeprefix("WebTransaction/Function/"), d["error_class"].split(":")[-1]): d
           for d in KEY["defects"]}
    verified = []
    for pair, both in pairs.items():
        bugsink, newrelic = both["bugsink"], both["newrelic"]
        assert bugsink.analysis and newrelic.analysis and not bugsink.failed, (pair, bugsink.failure)
        crash, origin = bugsink.analysis.crash_site, bugsink.analysis.origin
        assert crash and origin, pair
        assert (crash.file, crash.line) == (key[pair]["crash"]["file"], key[pair]["crash"]["line"]), pair
        assert (crash.file, crash.line) == (newrelic.analysis.crash_site.file, newrelic.analysis.crash_site.line), pair
        assert (origin.file, origin.line) == (newrelic.analysis.origin.file, newrelic.analysis.origin.line), pair
        assert bugsink.error.occurrences == newrelic.error.occurrences, pair
        assert _fix(bugsink) == _fix(newrelic), pair
        assert {crash.file, origin.file, *bugsink.files_examined} <= REPO_FILES, pair
        verified += [pair] if bugsink.verification and bugsink.verification.status == "verified" else []
    assert verified, ("no fix was verified on either night: is bubblewrap installed (`bwrap`)? "
                      f"{shutil.which('bwrap') or 'bwrap is not on PATH'}")


def _fix(result) -> tuple:  # type: ignore[no-untyped-def]
    """What a night proposed for an error and what the sandbox made of it."""
    analysis, verification = result.analysis, result.verification
    return (analysis.has_fix, sorted(c.path for c in analysis.file_changes),
            analysis.regression_test.path if analysis.regression_test else None,
            verification.status if verification else None)


def test_each_error_links_to_its_page_in_bugsink(bugsink_server: Bugsink, bugsink_night: RunReport) -> None:
    """The link a night gives each error (in its report, its issue and its Slack message) opens the error's page in
    Bugsink for a person signed in to it."""
    with httpx.Client(base_url=bugsink_server.url, follow_redirects=True, timeout=30) as browser:
        form = browser.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
        assert token, form.text[:2000]
        signed_in = browser.post("/accounts/login/", data={"username": bugsink_server.user, "password": bugsink_server.password,
                                                           "csrfmiddlewaretoken": token.group(1)})
        assert signed_in.status_code == 200 and "/accounts/login/" not in str(signed_in.url), signed_in.text[:2000]
        dead = {}
        for result in bugsink_night.results:
            page = browser.get(result.error.url)
            if page.status_code != 200 or result.error.message[:40] not in html.unescape(page.text):
                issue = result.error.issue_id
                dead[result.error.url] = (page.status_code, browser.get(f"/issues/issue/{issue}/event/last/").status_code)
    assert not dead, (
        "Bugsink has no page at the links BugsinkSource gives errors ({base}issues/issue/<issue id>/): its signed-in "
        "user is answered (HTTP status at the link, at <link>event/last/): "
        + "; ".join(f"{url} {a} {b}" for url, (a, b) in dead.items())
        + ". Bugsink's issue page is issues/issue/<issue id>/event/last/ (its issues/urls.py routes issue/<uuid>/ "
          "only with a suffix): BugsinkSource._group should link there.")


def test_an_error_is_first_seen_no_later_than_its_first_event(bugsink_server: Bugsink, read_back: ReadBack) -> None:
    """An error's first_seen is not after the moment its first event happened: last_seen is the newest event's own
    timestamp, so a first_seen dated otherwise can come after it."""
    late = []
    with httpx.Client(base_url=bugsink_server.url, headers={"Authorization": f"Bearer {bugsink_server.token}"},
                      timeout=30) as api:
        for group, _ in read_back.errors:
            oldest = api.get("/api/canonical/0/events/", params={"issue": group.issue_id, "order": "asc"}).json()["results"][0]
            happened = datetime.fromisoformat(oldest["timestamp"].replace("Z", "+00:00"))
            if group.first_seen is None or group.first_seen > happened:
                late.append(f"{group.label}: first_seen {_clock(group.first_seen)}, its first event happened at "
                            f"{_clock(happened)} (received {oldest['ingested_at']}), last_seen {_clock(group.last_seen)}")
    assert not late, (
        "BugsinkSource dates first_seen by Bugsink's issue first_seen, which is when Bugsink received the issue's first "
        "event, while last_seen is the newest event's own timestamp; the first_seen of an error should be the oldest "
        "of its events' own timestamps where the events read reach its first (else no later than the oldest read):\n"
        + "\n".join(late))


def _clock(moment: datetime | None) -> str:
    return f"{moment:%H:%M:%S.%f}" if moment else "none"
