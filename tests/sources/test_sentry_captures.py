"""What the real Sentry Python SDK sends, as NightWatch's Sentry source will read it.

Every event here was captured from `sentry-sdk` itself (2.x, 3.x, and 1.x for Django and Flask) by
`scripts/capture_sentry_python.py`, which runs the small applications the New Relic captures run, with the same
requests, and keeps each event payload the SDK handed its transport, verbatim; `--demo` does the same for the
Python demo's night (nightwatch/demo_python/sentry_events.json). These tests state the facts about those payloads
that a parser relies on, and where the SDK's majors differ, so a regenerated capture that changes them fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "tests" / "captured" / "sentry_python"
NEWRELIC = ROOT / "tests" / "captured" / "newrelic_python"
DEMO = ROOT / "nightwatch" / "demo_python"
WEB = {"django", "flask", "fastapi", "gunicorn"}
FRAME_KEYS = {"filename", "abs_path", "module", "function", "lineno", "context_line", "pre_context", "post_context",
              "vars"}  # and in_app, but on a standard-library frame (`standard_library`)
NAMES = sorted(p.stem for p in CAPTURED.glob("*.json"))
# The Flask traffic's requests added after tests/captured/newrelic_python/flask.json was captured: a newsletter whose
# SMTP relay refuses the connection (logged as a warning with the exception, answered 202) and a blogroll feed with
# no entries (logged as an error message, answered 200). The agent records neither as an error: run again, its
# capture differs only by these two lines.
ADDED_SINCE_NEWRELIC = {"flask": ["POST /newsletter/send 202 ACCEPTED", "POST /blogroll/refresh 200 OK"]}


def load(name: str) -> dict:
    return json.loads((CAPTURED / f"{name}.json").read_text(encoding="utf-8"))


def major(capture: dict) -> int:
    return int(capture["sdk_version"].split(".")[0])


def raised(event: dict) -> dict:
    """The exception that was raised: Sentry lists a chain oldest first, so it is the last value."""
    return event["exception"]["values"][-1]


def frames(event: dict) -> list[dict]:
    return [f for value in event.get("exception", {}).get("values", []) for f in value.get("stacktrace", {}).get("frames", [])]


def standard_library(frame: dict) -> bool:
    """A frame of Python's own library: under lib/python3.N, not its site-packages."""
    return re.search(r"/lib/python3\.\d+/", frame["abs_path"]) is not None and "/site-packages/" not in frame["abs_path"]


def is_message(event: dict) -> bool:
    """A message the application logged (`logentry`), with no exception."""
    return "exception" not in event and "logentry" in event


def lowered_logging(capture: dict) -> bool:
    """The capture's SDK sends logged warnings as events (LoggingIntegration(event_level=logging.WARNING))."""
    return capture["init_options"].get("integrations", {}).get("logging", {}).get("event_level") == "WARNING"


def top_in_app(value: dict) -> dict:
    return [f for f in value["stacktrace"]["frames"] if f.get("in_app")][-1]


def demo() -> dict:
    return json.loads((DEMO / "sentry_events.json").read_text(encoding="utf-8"))


def test_every_framework_is_captured_under_both_current_sdk_majors_and_an_old_one() -> None:
    captures = [load(n) for n in NAMES]
    frameworks = {c["framework"] for c in captures}
    assert frameworks == {"django", "flask", "fastapi", "celery", "gunicorn"}
    for sdk in (2, 3):
        assert {c["framework"] for c in captures if major(c) == sdk} == frameworks, sdk
    assert any(major(c) == 1 for c in captures)
    assert any(c["init_options"].get("send_default_pii") for c in captures if major(c) == 2)
    for capture in captures:
        assert capture["events"], capture["framework"]
        for event in capture["events"]:  # what the SDK itself stamped on each event
            assert event["sdk"]["version"] == capture["versions"]["sentry-sdk"] == capture["sdk_version"]
            assert event["sdk"]["name"].startswith("sentry.python")
            assert re.fullmatch(r"[0-9a-f]{32}", event["event_id"])
            assert event["platform"] == "python"
            assert event["level"] == "error" or (lowered_logging(capture) and event["level"] == "warning")


@pytest.mark.parametrize("name", NAMES)
def test_the_same_requests_got_the_same_answers_as_under_the_new_relic_agent(name: str) -> None:
    capture = load(name)
    newrelic = {"gunicorn": "gunicorn-timeout"}.get(capture["framework"], capture["framework"])
    asked = json.loads((NEWRELIC / f"{newrelic}.json").read_text(encoding="utf-8"))["requests"]
    assert capture["requests"] == asked + ADDED_SINCE_NEWRELIC.get(capture["framework"], [])


@pytest.mark.parametrize("name", NAMES)
def test_each_error_event_carries_its_stack_with_source_context_and_locals(name: str) -> None:
    for event in load(name)["events"]:
        if is_message(event):  # a logged message: its template and parameters, no stack at all
            assert event["logentry"]["message"] and isinstance(event["logentry"]["params"], list)
            assert "stacktrace" not in event and "threads" not in event and event["logger"]
            continue
        assert raised(event)["type"] and "value" in raised(event)
        assert raised(event)["stacktrace"]["frames"]
        for frame in frames(event):
            assert FRAME_KEYS <= set(frame), (name, sorted(FRAME_KEYS - set(frame)))
            assert "in_app" in frame or standard_library(frame), (name, frame["abs_path"])
            assert isinstance(frame["lineno"], int) and isinstance(frame["vars"], dict)
            assert isinstance(frame["pre_context"], list) and isinstance(frame["post_context"], list)
            assert frame["abs_path"].endswith(frame["filename"])
        for value in event["exception"]["values"]:
            assert isinstance(value["mechanism"]["handled"], bool)


@pytest.mark.parametrize("name", NAMES)
def test_release_environment_and_server_name_are_what_the_deployment_set(name: str) -> None:
    capture = load(name)
    for event in capture["events"]:
        assert re.fullmatch(r"[0-9a-f]{40}", event["release"])
        assert event["release"] == capture["init_options"]["release"]
        assert event["environment"] == "production"
        assert event["server_name"] == capture["init_options"]["server_name"]


def test_a_task_event_is_tagged_with_its_task_and_a_request_event_with_its_method_and_url() -> None:
    for name in NAMES:
        capture = load(name)
        for event in capture["events"]:
            if capture["framework"] == "celery":
                assert event["tags"]["celery_task_id"] and event["transaction"] == "jobs.send_digest"
                assert "request" not in event
            elif capture["framework"] in WEB and not is_message(event) and raised(event)["mechanism"]["type"] != "logging":
                assert event["request"]["method"] in {"GET", "POST"}
                assert re.match(r"https?://([a-z.]+\.example\.com|127\.0\.0\.1:\d+)/", event["request"]["url"])


def test_today_s_sdks_flag_library_frames_not_in_app_and_the_old_one_flags_every_frame() -> None:
    """In-app is decided by the SDK: since 1.16 a frame under site-packages is not the application's. Before, with
    no in_app_include, every frame was flagged in_app, the framework's included. 2.x leaves a frame of the standard
    library unflagged, neither under the working folder nor under site-packages (smtplib's and socket's, below the
    blog's newsletter, whose refused connection is the one exception raised inside the standard library here)."""
    seen = set()
    for name in NAMES:
        capture = load(name)
        for frame in (f for e in capture["events"] for f in frames(e)):
            library = "/site-packages/" in frame["abs_path"]
            old = tuple(int(p) for p in capture["sdk_version"].split(".")[:2]) < (1, 16)
            if "in_app" not in frame:
                assert standard_library(frame) and major(capture) == 2, (name, frame["abs_path"])
                seen.add("standard library, unflagged")
                continue
            assert frame["in_app"] is (True if old else not library), (name, frame["abs_path"])
            seen.add((old, library))
    assert seen == {(False, False), (False, True), (True, True), (True, False), "standard library, unflagged"}


def test_chained_exceptions_are_listed_cause_first_and_3x_links_them_in_the_mechanism() -> None:
    """3.x numbers the chain from the raised exception (id 0, listed last); each cause names its effect as parent."""
    for name in ("django-sdk2", "django-sdk3"):
        chained = [e for e in load(name)["events"] if len(e["exception"]["values"]) > 1]
        locked = [e for e in chained if raised(e)["value"] == "database is locked"]
        assert locked, name
        first, last = locked[0]["exception"]["values"][0], raised(locked[0])
        assert (first["module"], first["type"]) == ("sqlite3", "OperationalError")
        assert (last["module"], last["type"]) == ("django.db.utils", "OperationalError")
        mechanisms = [v["mechanism"] for v in locked[0]["exception"]["values"]]
        if name.endswith("sdk3"):
            assert mechanisms[-1]["exception_id"] == 0 and "parent_id" not in mechanisms[-1]
            assert (mechanisms[0]["exception_id"], mechanisms[0]["parent_id"]) == (1, 0)
            assert (mechanisms[0]["type"], mechanisms[0]["source"]) == ("chained", "__cause__")
        else:
            assert all("exception_id" not in m for m in mechanisms)


def test_what_each_major_sends_of_the_request_by_default() -> None:
    """2.x without send_default_pii drops cookies (the header is replaced, `_meta` says so) and the client's
    address; with it, cookies come parsed and the address becomes the user. 3.x sends both by default, filtering
    only the values of sensitive-looking keys, and writes no `_meta`."""
    def shop_events(name: str) -> list[dict]:
        return [e for e in load(name)["events"] if raised(e)["mechanism"]["type"] == "django"
                and "Cookie" in e["request"]["headers"]]  # the requests a signed-in browser made

    assert all(len(shop_events(n)) == 5 for n in ("django-sdk2", "django-sdk2-pii", "django-sdk3"))

    for event in shop_events("django-sdk2"):
        assert "cookies" not in event["request"] and "user" not in event
        assert event["request"]["headers"]["Cookie"] == "[Filtered]"
        assert event["_meta"]["request"]["headers"]["Cookie"] == {"": {"rem": [["!config", "s"]]}}
    for name in ("django-sdk2-pii", "django-sdk3"):
        for event in shop_events(name):
            assert event["request"]["cookies"]["django_language"] == "en-gb"
            assert event["request"]["cookies"]["sessionid"] == "[Filtered]"
            assert event["user"]["ip_address"] == event["request"]["env"]["REMOTE_ADDR"]
    assert not any("_meta" in e for n in NAMES if n.endswith("sdk3") for e in load(n)["events"])


def test_3x_no_longer_turns_error_log_records_into_events() -> None:
    """2.x's logging integration sends an ERROR record as an event (Django logs a bad Host header so); 3.x keeps it
    as a breadcrumb only."""
    def logged(name: str) -> list[dict]:
        return [e for e in load(name)["events"] if raised(e)["mechanism"]["type"] == "logging"]

    assert [e["logger"] for e in logged("django-sdk2")] == ["django.security.DisallowedHost"]
    assert logged("django-sdk3") == []
    assert "bad host 400 Bad Request" in load("django-sdk3")["requests"]


def test_a_flask_transaction_is_its_endpoint_under_2x_and_its_url_rule_under_3x() -> None:
    def named(name: str) -> set[tuple[str, str]]:
        return {(e["transaction"], e["transaction_info"]["source"]) for e in load(name)["events"]}

    assert named("flask-sdk2") == {("reading_time", "component"), ("archive", "component"),
                                   ("services.refresh_blogroll", "component")}  # a blueprint's endpoint
    assert named("flask-sdk3") == {("/posts/<int:post_id>/reading-time", "route"), ("/archive", "route")}


def test_what_each_sdk_sends_of_a_logged_warning_with_its_exception_and_a_logged_error_message() -> None:
    """The blog's newsletter logs a refused SMTP connection as a warning (exc_info) and answers 202; its blogroll logs
    an empty feed as an error message and answers 200. 1.15 and 2.x send an ERROR record as an event, a WARNING one as a
    breadcrumb only; 3.x sends neither; with the logging integration's event_level lowered to WARNING, 2.x sends both,
    the warning with its exception, caught by the application (handled) and reported by the logging integration."""
    def logged(name: str) -> tuple[list[dict], list[dict]]:
        events = load(name)["events"]
        return ([e for e in events if is_message(e)],
                [e for e in events if not is_message(e) and raised(e)["type"] == "ConnectionRefusedError"])

    for name in ("flask-sdk1-15", "flask-sdk2", "flask-sdk2-logging", "flask-sdk3"):
        assert ADDED_SINCE_NEWRELIC["flask"] == load(name)["requests"][-2:], name
        messages, warnings = logged(name)
        assert len(messages) == (0 if name == "flask-sdk3" else 1), name
        assert len(warnings) == (1 if name == "flask-sdk2-logging" else 0), name
        for message in messages:
            assert (message["level"], message["logger"]) == ("error", "services")
            assert message["logentry"]["message"] == "feed %s returned no entries"
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/feed\.xml", message["logentry"]["params"][0])
    (warning,) = logged("flask-sdk2-logging")[1]
    assert (warning["level"], warning["logger"]) == ("warning", "services")
    assert warning["logentry"]["message"] == "newsletter not sent, kept for the next send: %d unsent"
    assert raised(warning)["value"] == "[Errno 111] Connection refused"
    assert raised(warning)["mechanism"]["type"] == "logging" and raised(warning)["mechanism"]["handled"] is True
    assert top_in_app(raised(warning))["function"] == "send_newsletter"
    # 1.15 keeps the warning as a breadcrumb; its events here share one scope across requests (they carry no request
    # and no transaction), so the message logged by the next request carries it (2.x's scope is the request's own)
    breadcrumbs = [b for b in logged("flask-sdk1-15")[0][0]["breadcrumbs"]["values"] if b.get("category") == "services"]
    assert [(b["level"], b["message"]) for b in breadcrumbs] == [("warning", warning["logentry"]["formatted"])]


def test_the_noise_rules_facts_a_logged_warning_is_below_error_and_a_logged_message_has_no_exception() -> None:
    """What nightwatch/noise.yml's last two rules read (tests/sources/test_sentry_noise.py applies them): the level an event
    was reported at, and whether it holds an exception at all."""
    events = load("flask-sdk2-logging")["events"]
    warnings = [e for e in events if e["level"] == "warning"]
    assert warnings and all(not is_message(e) and raised(e)["mechanism"]["handled"] is True for e in warnings)
    messages = [e for e in events if is_message(e)]
    assert messages and all(e["level"] == "error" and "exception" not in e and e["logentry"]["message"] for e in messages)
    crashes = [e for e in events if not is_message(e) and e["level"] == "error"]
    assert {raised(e)["type"] for e in crashes} == {"ZeroDivisionError", "ValueError"}
    assert all(raised(e)["mechanism"]["handled"] is False for e in crashes)


def test_the_gunicorn_worker_timeout_reaches_sentry_as_the_worker_s_system_exit() -> None:
    for name in ("gunicorn-timeout-sdk2", "gunicorn-timeout-sdk3"):
        (event,) = load(name)["events"]
        assert raised(event)["type"] == "SystemExit" and raised(event)["mechanism"] == {
            **raised(event)["mechanism"], "type": "wsgi", "handled": False}
        assert top_in_app(raised(event))["function"] == "export"


def expected() -> dict:
    return yaml.safe_load((DEMO / "expected.yml").read_text(encoding="utf-8"))


def test_the_demo_night_holds_an_event_for_every_planted_bug_at_its_crash_line() -> None:
    night = demo()
    assert night["format"] == "nightwatch.sentry-sdk-events/1"
    for defect in expected()["defects"]:
        module, _, error_type = defect["error_class"].partition(":")
        found = [e for e in night["events"] if raised(e)["type"] == error_type
                 and raised(e)["module"] in ({None, "builtins"} if module == "builtins" else {module})
                 and top_in_app(raised(e))["filename"].endswith(defect["crash"]["file"])
                 and top_in_app(raised(e))["lineno"] == defect["crash"]["line"]]
        assert found, defect
        assert all(defect["crash"]["snippet"] in top_in_app(raised(e))["context_line"] for e in found)


def test_the_demo_night_holds_the_noise_a_client_that_went_away_and_a_locked_database() -> None:
    events = demo()["events"]
    assert any((raised(e)["module"], raised(e)["type"]) == ("starlette.requests", "ClientDisconnect") for e in events)
    locked = [e for e in events if (raised(e)["module"], raised(e)["type"]) == ("sqlite3", "OperationalError")
              and raised(e)["value"] == "database is locked"]
    assert locked and all(e["request"]["method"] == "POST" and "/reserve" in e["request"]["url"] for e in locked)


def test_the_demo_night_sends_one_event_per_failed_request() -> None:
    """No sampling and no grouping on the SDK's side: each request that raised is an event (the driver prints
    `METHOD PATH TIMES ANSWERS` per kind of request)."""
    night = demo()
    answered = {}
    for line in night["captured"]["requests"]:
        found = re.match(r"(GET|POST) (\S+) (\d+) \['raised \w+'\]$", line)
        if found:
            answered[(found.group(1), found.group(2))] = int(found.group(3))
    assert len(answered) == 8
    for (method, path), times in answered.items():
        url = "https://events.example.com" + path.partition("?")[0]
        query = path.partition("?")[2] or None
        hits = [e for e in night["events"] if e["request"]["method"] == method and e["request"]["url"] == url
                and e["request"].get("query_string") == query]
        assert len(hits) == times, (method, path)


def test_the_demo_frames_carry_the_deployed_paths() -> None:
    night = demo()
    root = night["captured"]["deployed_at"]
    for event in night["events"]:
        for frame in frames(event):
            if frame["in_app"]:
                assert frame["abs_path"].startswith(root + "/bookshop/"), frame["abs_path"]
            else:
                assert frame["abs_path"].startswith(root + "/venv/lib/"), frame["abs_path"]


EVAL_CASES = sorted(p.parent.name for p in (ROOT / "evals").glob("*/sentry_events.json"))


def deployed_frames(event: dict, captured: dict) -> list[dict]:
    """The raised exception's frames of the deployed tree, not its venv. Code compiled from a string (SQLAlchemy's
    generated methods) is `<string>`, which the SDK makes absolute against the working directory: not a file."""
    root, venv = captured["deployed_at"].rstrip("/") + "/", captured["venv"].rstrip("/") + "/"
    return [f for f in raised(event)["stacktrace"]["frames"] if f["abs_path"].startswith(root)
            and not f["abs_path"].startswith(venv) and not f["filename"].startswith("<")]


@pytest.mark.parametrize("case", EVAL_CASES)
def test_an_eval_case_s_sentry_events_hold_its_error_at_its_crash_line(case: str) -> None:
    folder = ROOT / "evals" / case
    night = json.loads((folder / "sentry_events.json").read_text(encoding="utf-8"))
    answer = yaml.safe_load((folder / "expected.yml").read_text(encoding="utf-8"))
    assert night["format"] == "nightwatch.sentry-sdk-events/1"
    module, _, error_type = answer["error"]["error_class"].partition(":")
    root = night["captured"]["deployed_at"].rstrip("/") + "/"
    crashes = {(deployed_frames(e, night["captured"])[-1]["abs_path"].removeprefix(root),
                deployed_frames(e, night["captured"])[-1]["lineno"])
               for e in night["events"] if raised(e)["type"] == error_type
               and (raised(e)["module"] or "builtins") == module and deployed_frames(e, night["captured"])}
    assert (answer["crash"]["file"], answer["crash"]["line"]) in crashes, crashes
    for event in night["events"]:  # the deployment's release is the commit it runs
        assert event["release"] == answer["source"]["commit"] and event["environment"] == "production"
