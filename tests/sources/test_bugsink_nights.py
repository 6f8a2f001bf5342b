"""Ten nights on a real Bugsink: what the team does there (resolve in the next release, mute) is read back as
outcomes, once; a fix that did not hold is one regression; an error the team muted is never investigated again.

The Python demo's traffic goes to Bugsink through the real sentry-sdk each night (tests/bugsink/send_bookshop_night.py,
the events dated inside the night's window by the SDK's `before_send` hook: the test's clock, never the calendar's);
the team's CI creates each release through Bugsink's API at the night's deploy time, and a person resolves and mutes
issues through it, with a token of the team's. NightWatch reads the project back through `BugsinkSource` with its own
read-only token (issues, events, releases), night after night in one NIGHTWATCH_HOME:

1. release bookshop@1.0: four of the planted bugs; NightWatch files issues and one fix PR (the later nights' traffic is
   the requests of three errors: the fixed one, one the team mutes, one that goes on);
2. the PR merges (the offline tracker, as a person merges it), the team resolves its error in Bugsink "in the next
   release" and mutes another error; release 1.1 ships without the fixed route's failures;
3. nights 2-4: the merge and the mute are outcomes, once each; the muted error is not looked at;
4. release 1.2 brings the fixed error back: Bugsink marks it regressed; night 5 announces one regression, and nights
   6-10 say it is still regressing without counting it again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import httpx
import pytest

from nightwatch.models import RunReport
from tests.bugsink_server import Bugsink
from tests.sources.test_bugsink_night import APP, _environment

pytestmark = [pytest.mark.slow, pytest.mark.flow, pytest.mark.timeout(1800),
              pytest.mark.usefixtures("prefect_harness", "flow_results")]

ROOT = Path(__file__).resolve().parents[2]
SEND = ROOT / "tests" / "bugsink" / "send_bookshop_night.py"
UNTIL = datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc)
# The first night's traffic: four of the planted bugs' routes (three of them with a fix the offline analyst can make and
# the sandbox can verify, so one gets the night's PR)
FIRST_NIGHT = "/books/{isbn}/price,/coupons/check,/authors/{slug}/debut,/orders/shipping"
SEND_GUARD_S = 120  # a hang guard: one night's traffic is sent and digested in a few seconds


class Team:
    """What the team and its CI do in Bugsink, through its API with their own token."""

    def __init__(self, server: Bugsink) -> None:
        self.server, self.project = server, server.nights["project"]
        self.http = httpx.Client(base_url=server.url, timeout=30,
                                 headers={"Authorization": f"Bearer {server.nights['team_token']}"})

    def release(self, version: str, at: datetime) -> None:
        answer = self.http.post("/api/canonical/0/releases/", json={"project": self.project, "version": version,
                                                                     "timestamp": at.isoformat()})
        assert answer.status_code == 201, answer.text

    def act(self, issue: str, action: str) -> dict:
        answer = self.http.post(f"/api/canonical/0/issues/{issue}/{action}/")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def issue(self, issue: str) -> dict:
        return self.http.get(f"/api/canonical/0/issues/{issue}/").raise_for_status().json()


def _send(server: Bugsink, work: Path, release: str, at: datetime, fixed: str = "", only: str = "") -> None:
    done = subprocess.run([sys.executable, str(SEND), str(work)], cwd=work, capture_output=True, text=True, timeout=SEND_GUARD_S,
                          env=_environment(BOOKSHOP_SENTRY_DSN=server.nights["dsn"], BOOKSHOP_RELEASE=release,
                                           BOOKSHOP_EVENTS_AT=at.isoformat(), BOOKSHOP_FIXED=fixed, BOOKSHOP_ONLY=only,
                                           BOOKSHOP_ONCE="1"))
    assert done.returncode == 0 and "sent " in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]


def _merge(home: Path, number: int, at: datetime) -> None:
    """A person merges the PR (the offline tracker's file, as test_flow_outcomes does)."""
    pulls = home / "tracker" / "pulls" / "index.json"
    entries = json.loads(pulls.read_text())
    next(e for e in entries["pulls"] if e["number"] == number).update(state="merged", merged_at=at.isoformat())
    pulls.write_text(json.dumps(entries))


def test_ten_nights_a_merged_fix_that_came_back_is_one_regression_and_a_muted_error_is_left_alone(
        bugsink_server: Bugsink, nightwatch_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nightwatch.flows.nightwatch import run_night

    work = tmp_path / "deployed"
    shutil.copytree(APP, work / "srv" / "bookshop", ignore=shutil.ignore_patterns("tests", "__pycache__", "*.sqlite3"))
    for name, value in {"NIGHTWATCH_DEMO": "python", "NIGHTWATCH_SOURCE": "bugsink", "NIGHTWATCH_SENTRY_URL": bugsink_server.url,
                        "NIGHTWATCH_SENTRY_AUTH_TOKEN": bugsink_server.nights["token"],
                        "NIGHTWATCH_SENTRY_PROJECT": str(bugsink_server.nights["project"]),
                        "NIGHTWATCH_PR_MIN_CONFIDENCE": "medium", "NIGHTWATCH_PR_REQUIRE_VERIFIED": "false"}.items():
        monkeypatch.setenv(name, value)
    team = Team(bugsink_server)
    nights: list[RunReport] = []

    def night(k: int, release: str, fixed: str = "", only: str = "") -> RunReport:
        until = UNTIL + timedelta(days=k - 1)
        _send(bugsink_server, work, release, until - timedelta(hours=3), fixed, only)
        nights.append(run_night(until=until, max_errors=8, max_issues=3))
        assert nights[-1].succeeded, (nights[-1].steps_failed, nights[-1].warnings[-5:])
        return nights[-1]

    team.release("bookshop@1.0", UNTIL - timedelta(days=3))
    first = night(1, "bookshop@1.0", only=FIRST_NIGHT)
    assert first.pr is not None and first.pr.action == "created", first.pr
    results = {r.fingerprint: r for r in first.results}
    fixed = results[first.pr.fingerprint].error
    assert fixed.issue_id and fixed.first_release == "bookshop@1.0"
    assert results[first.pr.fingerprint].release_window is not None
    assert results[first.pr.fingerprint].release_window.line == "first seen in release bookshop@1.0"
    others = [r.error for r in first.results if r.analysis is not None and r.error.issue_id
              and r.error.transaction != fixed.transaction]
    muted = others[0]
    steady = next(e for e in others if e.transaction != muted.transaction)  # an error that goes on every night
    only = ",".join((fixed.transaction, muted.transaction, steady.transaction))  # the later nights' traffic: these routes

    monkeypatch.setenv("NIGHTWATCH_VERIFY_FIXES", "false")  # the PR is made; the sandbox's runs are tested elsewhere
    _merge(nightwatch_home, first.pr.pr_number, UNTIL + timedelta(hours=2))
    assert team.act(fixed.issue_id, "resolve-next")["is_resolved_by_next_release"] is True
    assert team.act(muted.issue_id, "mute")["is_muted"] is True
    team.release("bookshop@1.1", UNTIL + timedelta(hours=4))
    assert team.issue(fixed.issue_id)["fixed_at"] == ["bookshop@1.1"]  # Bugsink's own: the next release came

    for k in (2, 3, 4):
        night(k, "bookshop@1.1", fixed=fixed.transaction, only=only)
    team.release("bookshop@1.2", UNTIL + timedelta(days=3, hours=4))
    for k in range(5, 11):
        night(k, "bookshop@1.2", only=only)
    assert team.issue(fixed.issue_id)["is_resolved"] is False  # Bugsink saw it in 1.2 and reopened it as regressed

    said = [line for n in nights for line in n.outcomes]
    assert sum(f"PR #{first.pr.pr_number} merged" in line for line in said) == 1, said
    assert sum(line.startswith("ignored in the error tracker") for line in said) == 1, said
    assert sum(line.startswith("marked regressed by the error tracker") for line in said) == 1, said
    for n in nights[1:]:
        assert muted.fingerprint not in {r.fingerprint for r in n.results}  # never investigated again
        assert steady.fingerprint in {r.fingerprint for r in n.results}  # the night goes on around it
    regressions = [[r.fingerprint for r in n.regressions] for n in nights]
    assert regressions == [[]] * 4 + [[fixed.fingerprint]] + [[]] * 5, regressions
    assert all(any(r.fingerprint == fixed.fingerprint and r.still_regressing for r in n.results) for n in nights[5:])

    con = duckdb.connect(str(nightwatch_home / "nightwatch.duckdb"), read_only=True)
    try:
        rows = con.execute("select fingerprint, kind, fix_state from outcomes where fix_state is not null "
                           "order by changed_at").fetchall()
        announced = con.execute("select count(*) from analyses where regression is not null").fetchone()[0]
    finally:
        con.close()
    assert [r for r in rows if r[2] == "regressed"] == [(fixed.fingerprint, "tracker", "regressed")]
    assert [r for r in rows if r[2] == "ignored"] == [(muted.fingerprint, "tracker", "ignored")]
    assert announced == 1
