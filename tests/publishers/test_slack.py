"""SlackNotifier against a fake Slack Web API (the real slack_sdk WebClient), and the FileNotifier."""

from __future__ import annotations

import json
import logging
import socket
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import SecretStr

from nightwatch.models import (
    Analysis,
    CreatedIssueResult,
    CreatedPRResult,
    ErrorAnalysisResult,
    ErrorGroup,
    RunReport,
    TriageVerdict,
    Window,
)
from nightwatch.publishers.slack import CHANNEL_PLACEHOLDER, FileNotifier, NotifyError, SlackNotifier
from nightwatch.render.blocks import fallback_text, report_blocks
from tests.fakes.slack import FakeSlack

END = datetime(2025, 3, 14, 6, 0, tzinfo=timezone.utc)


def make_report(run_id: str = "run-1", n_results: int = 2, with_followup: bool = True, root_cause: str = "") -> RunReport:
    results = []
    for i in range(n_results):
        error = ErrorGroup(error_class=f"NoMethodError{i}", transaction=f"Controller/carts/update{i}", occurrences=10 + i)
        results.append(ErrorAnalysisResult(
            run_id=run_id, error=error,
            verdict=TriageVerdict(fingerprint=error.fingerprint, route="deep", route_reason="stack points at app code"),
            analysis=Analysis(title=f"nil cart {i}", reasoning="r", root_cause=root_cause or f"cart is nil ({i})", has_fix=False, confidence="medium"),
        ))
    issues = [CreatedIssueResult(fingerprint="f1", action="created", issue_number=5, url="https://github.com/acme/shop/issues/5", title="nil cart")]
    pr = CreatedPRResult(fingerprint="f1", action="created", pr_number=6, url="https://github.com/acme/shop/pull/6", branch="nightwatch/f1", base_branch="main")
    return RunReport(
        run_id=run_id, started_at=END, window=Window.ending_at(END, timedelta(hours=24)),
        errors_found=n_results, errors_selected=n_results, results=results,
        issues=issues if with_followup else [], pr=pr if with_followup else None,
    )


@pytest.fixture
def slack():  # type: ignore[no-untyped-def]
    with FakeSlack() as fake:
        yield fake


def notifier(slack: FakeSlack, tmp_path: Path, token: str | None = None, channel: str = "#nightwatch", retries: int = 2) -> SlackNotifier:
    return SlackNotifier(
        SecretStr(token or slack.token), channel, base_url=slack.url + "/api/",
        ledger_dir=tmp_path / "ledger", retries=retries, backoff_s=0.01, timeout_s=5,
    )


# posting and idempotency ------------------------------------------------------------------------
def test_report_is_posted_once_with_blocks_and_fallback_text(slack: FakeSlack, tmp_path: Path) -> None:
    report = make_report()
    result = notifier(slack, tmp_path).post_report(report)
    assert (result.target, result.action, result.channel) == ("slack", "posted", "C0NIGHTWATCH")
    [message] = slack.top_level()
    assert message.ts == result.ts
    assert message.blocks == report_blocks(report) and message.text == fallback_text(report)
    ledger = json.loads((tmp_path / "ledger" / "run-1.json").read_text())
    assert ledger == {"run_id": "run-1", "channel": "C0NIGHTWATCH", "report_ts": result.ts}


def test_rerun_of_the_same_run_updates_the_report_instead_of_posting(slack: FakeSlack, tmp_path: Path) -> None:
    first = notifier(slack, tmp_path).post_report(make_report(n_results=1))
    second = notifier(slack, tmp_path).post_report(make_report(n_results=3))  # a new process, same ledger
    assert second.action == "updated" and second.ts == first.ts
    [message] = slack.top_level()
    assert message.edits == 1 and "3 errors analysed" in message.text
    assert len(slack.calls("chat.postMessage")) == 1 and len(slack.calls("chat.update")) == 1


def test_different_runs_get_their_own_messages(slack: FakeSlack, tmp_path: Path) -> None:
    nw = notifier(slack, tmp_path)
    nw.post_report(make_report(run_id="run-a"))
    nw.post_report(make_report(run_id="run-b"))
    assert len(slack.top_level()) == 2


def test_followup_goes_in_the_report_thread_once(slack: FakeSlack, tmp_path: Path) -> None:
    report = make_report()
    posted = notifier(slack, tmp_path).post_report(report)
    first = notifier(slack, tmp_path).post_followup(report)
    notifier(slack, tmp_path).post_report(report)
    again = notifier(slack, tmp_path).post_followup(report)
    assert first is not None and again is not None
    assert (first.action, again.action, again.ts) == ("posted", "updated", first.ts)
    [reply] = slack.thread(posted.ts or "")
    assert "https://github.com/acme/shop/issues/5|#5 nil cart" in json.dumps(reply.blocks)
    assert len(slack.top_level()) == 1


def test_no_followup_when_nothing_was_filed(slack: FakeSlack, tmp_path: Path) -> None:
    report = make_report(with_followup=False)
    nw = notifier(slack, tmp_path)
    nw.post_report(report)
    assert nw.post_followup(report) is None
    assert len(slack.messages) == 1


def test_a_deleted_report_is_posted_again_and_the_ledger_follows(slack: FakeSlack, tmp_path: Path) -> None:
    report = make_report()
    old = notifier(slack, tmp_path).post_report(report)
    del slack.messages[old.ts or ""]
    new = notifier(slack, tmp_path).post_report(report)
    assert new.action == "posted" and new.ts != old.ts
    assert json.loads((tmp_path / "ledger" / "run-1.json").read_text())["report_ts"] == new.ts


def test_forty_results_with_long_root_causes_are_accepted_by_slack(slack: FakeSlack, tmp_path: Path) -> None:
    report = make_report(n_results=40, root_cause="the cart & <the session> disagree " * 300)
    assert notifier(slack, tmp_path).post_report(report).action == "posted"  # the fake enforces Block Kit limits


# faults ------------------------------------------------------------------------------------------
def test_rate_limit_is_retried_after_retry_after(slack: FakeSlack, tmp_path: Path) -> None:
    slack.rate_limit_next("chat.postMessage", retry_after=1)
    result = notifier(slack, tmp_path).post_report(make_report())
    assert result.action == "posted"
    assert len(slack.calls("chat.postMessage")) == 2 and len(slack.top_level()) == 1


def test_server_error_is_retried(slack: FakeSlack, tmp_path: Path) -> None:
    slack.fail_next("chat.postMessage", status=500)
    assert notifier(slack, tmp_path).post_report(make_report()).action == "posted"
    assert len(slack.calls("chat.postMessage")) == 2


def test_persistent_server_errors_raise_notify_error_and_leave_no_ledger(slack: FakeSlack, tmp_path: Path) -> None:
    slack.fail_next("chat.postMessage", status=500, times=3)
    with pytest.raises(NotifyError) as err:
        notifier(slack, tmp_path, retries=2).post_report(make_report())
    assert err.value.code == "fatal_error" and "chat.postMessage" in str(err.value) and "HTTP 500" in str(err.value)
    assert len(slack.calls("chat.postMessage")) == 3
    assert not (tmp_path / "ledger" / "run-1.json").exists()


def test_invalid_token_raises_notify_error_without_the_token(slack: FakeSlack, tmp_path: Path) -> None:
    bad = "xoxb-9999999999-wrongwrongwrong"
    with pytest.raises(NotifyError) as err:
        notifier(slack, tmp_path, token=bad).post_report(make_report())
    assert err.value.code == "invalid_auth"
    assert "invalid_auth" in str(err.value) and "SLACK_BOT_TOKEN" in str(err.value)
    assert bad not in str(err.value) and bad not in repr(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert slack.messages == {}


def test_unknown_channel_is_named_in_the_error(slack: FakeSlack, tmp_path: Path) -> None:
    with pytest.raises(NotifyError) as err:
        notifier(slack, tmp_path, channel="#nowhere").post_report(make_report())
    assert err.value.code == "channel_not_found" and "#nowhere" in str(err.value)


def test_unreachable_slack_is_a_connection_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nw = SlackNotifier(SecretStr("xoxb-1-2"), "#x", base_url=f"http://127.0.0.1:{port}/api/",
                       ledger_dir=tmp_path, retries=1, backoff_s=0.01, timeout_s=2)
    with pytest.raises(NotifyError) as err:
        nw.post_report(make_report())
    assert err.value.code == "connection_failed"


def test_the_token_never_reaches_the_logs(slack: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    notifier(slack, tmp_path).post_report(make_report())
    assert slack.token not in caplog.text


def test_check_verifies_the_token(slack: FakeSlack, tmp_path: Path) -> None:
    assert notifier(slack, tmp_path).check() == "Fake Team / nightwatch"
    with pytest.raises(NotifyError, match="invalid_auth"):
        notifier(slack, tmp_path, token="xoxb-0-nope").check()


# offline files -------------------------------------------------------------------------------------
def test_file_notifier_writes_payloads_and_markdown(tmp_path: Path) -> None:
    report = make_report()
    files = FileNotifier(tmp_path / "reports")
    result = files.post_report(report)
    followup = files.post_followup(report)
    slack_dir = tmp_path / "reports" / "slack"
    assert result.target == "file" and result.action == "written" and result.path == str(slack_dir / "report.json")
    assert followup is not None and followup.path == str(slack_dir / "followup.json")
    payload = json.loads((slack_dir / "report.json").read_text())
    assert payload == {"channel": CHANNEL_PLACEHOLDER, "text": fallback_text(report), "blocks": report_blocks(report)}
    assert "https://github.com/acme/shop/pull/6" in (slack_dir / "followup.md").read_text()
    assert "thread_ts" in json.loads((slack_dir / "followup.json").read_text())


def test_file_notifier_overwrites_on_a_second_call(tmp_path: Path) -> None:
    files = FileNotifier(tmp_path)
    files.post_report(make_report(n_results=1))
    files.post_followup(make_report(n_results=1))
    files.post_report(make_report(n_results=4))
    files.post_followup(make_report(n_results=4))
    slack_dir = tmp_path / "slack"
    assert sorted(p.name for p in slack_dir.iterdir()) == ["followup.json", "followup.md", "report.json", "report.md"]
    markdown = (slack_dir / "report.md").read_text()
    assert markdown.count("# NightWatch report") == 1 and "4 analysed" in markdown
    assert "4 errors analysed" in json.loads((slack_dir / "report.json").read_text())["text"]


def test_file_notifier_skips_an_empty_followup(tmp_path: Path) -> None:
    assert FileNotifier(tmp_path).post_followup(make_report(with_followup=False)) is None
    assert not (tmp_path / "slack" / "followup.json").exists()


def test_a_refusal_is_permanent_and_a_server_error_is_worth_a_retry():
    from nightwatch.publishers.slack import NotifyError

    assert NotifyError("chat.postMessage", "channel_not_found").permanent
    assert NotifyError("chat.postMessage", "is_archived").permanent
    assert not NotifyError("chat.postMessage", "fatal_error", "HTTP 500").permanent
    assert not NotifyError("chat.postMessage", "ratelimited").permanent


def test_two_writers_of_the_ledger_never_collide(tmp_path):
    """Each write has a temporary file of its own (a fixed `.tmp` name made concurrent writers replace each other's)."""
    import json
    import threading

    from nightwatch.publishers.slack import RunLedger

    ledger, failures = RunLedger(tmp_path, "20261121T0600-24h-x"), []

    def write(n: int) -> None:
        try:
            for i in range(200):
                ledger.write({"writer": n, "i": i})
        except OSError as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures and json.loads(ledger.path.read_text())["i"] == 199
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(("exc", "retried"), [
    (AttributeError("'SuspectCommit' object has no attribute 'deploy'"), False),  # a fault of NightWatch: fails again
    (TypeError("unsupported operand"), False),
    (NotifyError("chat.postMessage", "fatal_error", "HTTP 500"), True),
    (NotifyError("chat.postMessage", "channel_not_found"), False),
    (ConnectionResetError("reset by peer"), True),
    (TimeoutError("timed out"), True),
    (FileNotFoundError("no such file"), False),  # an OSError that stays as it is
    (PermissionError("denied"), False),
])
def test_a_step_retries_what_may_work_later_and_not_a_fault_of_its_own(exc, retried) -> None:
    import httpx
    from nightwatch.tasks.steps_publish import unless_permanent

    class State:  # what Prefect hands a retry condition: a failed state whose result is the exception
        def __init__(self, exc: BaseException) -> None:
            self.exc = exc

        def result(self, raise_on_failure=False):
            return self.exc

    assert unless_permanent(None, None, State(exc)) is retried
    api = httpx.HTTPStatusError("503", request=httpx.Request("POST", "http://api/artifacts"), response=httpx.Response(503))
    assert unless_permanent(None, None, State(api))  # Prefect's own API, answering 503 for now
    refused = httpx.HTTPStatusError("422", request=api.request, response=httpx.Response(422))
    assert not unless_permanent(None, None, State(refused))  # refused for what was sent: the same again is refused
    from nightwatch.knowledge_store.duck import ViewsLockedError
    assert unless_permanent(None, None, State(ViewsLockedError("the views are being rebuilt")))
