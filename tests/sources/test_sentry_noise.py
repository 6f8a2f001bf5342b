"""The shipped noise rules (nightwatch/noise.yml) on what the real `sentry-sdk` sent, read as a night reads it.

Each capture of tests/captured/sentry_python (see tests/sources/test_sentry_captures.py) is written as a file of Sentry events
(`nightwatch.sentry-sdk-events/1`), read by the file source for Sentry events over the events' own times, and
filtered by the team's rules (none here) and the shipped ones through `select_errors`, which records the rule that
dropped each error. What a tracker reports besides crashes (a handled exception logged as a warning, a message logged
with no exception) and the transient noise must be dropped, each by its own rule; no crash may be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nightwatch.ignore import noise_rules
from nightwatch.models import ErrorGroup, Window
from nightwatch.selection import Selection, select_errors
from nightwatch.sources.sentry_event import moment
from nightwatch.sources.sentry_file import EVENTS_FORMAT, SentryEventsFileSource

CAPTURED = Path(__file__).resolve().parents[1] / "captured" / "sentry_python"
NAMES = sorted(p.stem for p in CAPTURED.glob("*.json"))
CRASHES = {"KeyError", "AttributeError", "ZeroDivisionError", "ValueError", "AssertionError", "NoReverseMatch"}


def night(name: str, folder: Path) -> Selection:
    """A night over one capture's events: the file source over their own times, the shipped rules, every error
    that is kept selected."""
    events = json.loads((CAPTURED / f"{name}.json").read_text(encoding="utf-8"))["events"]
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"format": EVENTS_FORMAT, "events": events}), encoding="utf-8")
    source = SentryEventsFileSource(path)
    window = Window(start=min(moment(e) for e in events), end=source.exported_at)  # the hour after the newest
    return select_errors(source, window, noise_rules(None, defaults=True), max_errors=100, now=window.end)


def dropped_by(selection: Selection) -> dict[str, str]:
    """Each dropped error's fingerprint and the name of the rule that dropped it (`ignored` reads `name (reason)`)."""
    names = {rule.label for rule in noise_rules(None, defaults=True)}
    out = {}
    for fingerprint, why in selection.ignored.items():
        out[fingerprint] = next(n for n in names if why.startswith(f"{n} ("))
    return out


def rule_of(selection: Selection, error: ErrorGroup) -> str | None:
    return dropped_by(selection).get(error.fingerprint)


def test_a_logged_warning_and_a_logged_message_are_counted_by_their_rules_and_the_crashes_kept(tmp_path: Path) -> None:
    selection = night("flask-sdk2-logging", tmp_path)
    by_class = {e.error_class: e for e in selection.found}
    assert set(by_class) == {"ZeroDivisionError", "ValueError", "ConnectionRefusedError", ""}
    warning, message = by_class["ConnectionRefusedError"], by_class[""]
    assert (warning.level, warning.handled) == ("warning", True)
    assert rule_of(selection, warning) == "logged-below-error"
    assert (message.level, message.handled) == ("error", None) and "returned no entries" in message.message
    assert rule_of(selection, message) == "message-without-stack"
    assert {e.error_class for e in selection.selected} == {"ZeroDivisionError", "ValueError"}
    assert {(d.rule, d.errors) for d in selection.noise} == {("logged-below-error", 1), ("message-without-stack", 1)}


@pytest.mark.parametrize("name", ["flask-sdk2", "flask-sdk1-15"])
def test_the_error_message_the_sdks_send_by_default_is_counted_as_a_message(name: str, tmp_path: Path) -> None:
    """1.x and 2.x send an ERROR log record with no exception as an event by default (tests/sources/test_sentry_captures.py)."""
    selection = night(name, tmp_path)
    (message,) = [e for e in selection.found if not e.error_class]
    assert message.level == "error" and rule_of(selection, message) == "message-without-stack"
    assert {e.error_class for e in selection.selected} == {"ZeroDivisionError", "ValueError"}


# The class of each error the captures hold that is noise, and the rule that must drop it (a database error by its
# message as well: `OperationalError` is also what a broken query raises)
NOISE = {("ClientDisconnect", ""): "client-disconnected", ("UnreadablePostError", "request data read error"): "client-disconnected",
         ("OperationalError", "database is locked"): "database-locked", ("DisallowedHost", None): "disallowed-host",
         ("SystemExit", "1"): "worker-timeout"}


def noise_rule_for(error: ErrorGroup) -> str | None:
    return next((rule for (cls, message), rule in NOISE.items()
                 if error.error_class == cls and (message is None or error.message == message)), None)


def test_across_every_capture_the_noise_is_dropped_by_its_rule_and_no_crash_is(tmp_path: Path) -> None:
    seen: dict[str, set[str]] = {}
    for name in NAMES:
        selection = night(name, tmp_path)
        assert selection.found, name
        for error in selection.found:
            rule = rule_of(selection, error)
            if error.error_class in CRASHES:
                assert rule is None and error.fingerprint in {e.fingerprint for e in selection.selected}, (name, error.label, rule)
            elif (expected := noise_rule_for(error)) is not None:
                assert rule == expected, (name, error.error_class, error.message, error.level, rule)
            else:  # what a tracker reports besides crashes: the two rules of the previous tests
                assert rule in {"logged-below-error", "message-without-stack"}, (name, error.label, error.level, rule)
            seen.setdefault(error.error_class, set()).add(rule or "kept")
    assert {cls for cls, rules in seen.items() if rules == {"kept"}} == CRASHES
    assert seen["ClientDisconnect"] == seen["UnreadablePostError"] == {"client-disconnected"}
    assert seen["OperationalError"] == {"database-locked"} and seen["DisallowedHost"] == {"disallowed-host"}
    assert seen["SystemExit"] == {"worker-timeout"}
    assert seen["ConnectionRefusedError"] == {"logged-below-error"} and seen[""] == {"message-without-stack"}
