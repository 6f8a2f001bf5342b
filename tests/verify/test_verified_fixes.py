"""Verified fixes end to end on the Python demo, offline: the offline model writes each regression test by rule (the
production request replayed through the project's `client` fixture), step 8.5 runs it in the real sandbox without and
with the fix, and only a verified fix becomes the draft PR, with its test. Without bubblewrap nothing runs and no PR
opens."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from nightwatch.knowledge_store.documents import read_doc
from typer.testing import CliRunner

from nightwatch.agent.recall import EventLog
from nightwatch.agent.tools import CodeCache, ToolRunner
from nightwatch.cli import app
from nightwatch.models import RunReport, TraceData
from nightwatch.offline.python_tests import Handler, fix_by_rule, regression_test
from nightwatch.verify import sandbox

NOW = datetime(2026, 11, 26, 6, tzinfo=timezone.utc)
needs_sandbox = pytest.mark.skipif(sandbox.unavailable_reason() is not None and not os.environ.get("CI"),
                                   reason=f"{sandbox.unavailable_reason()} (CI installs it: .ci/run)")


def night(monkeypatch) -> RunReport:
    monkeypatch.setenv("NIGHTWATCH_DEMO", "python")
    result = CliRunner().invoke(app, ["run", "--output", "json", "--until", NOW.isoformat()[:19]])
    assert result.exit_code == 0, result.stderr
    return RunReport.model_validate_json(result.stdout)


def file_of(url: str) -> Path:
    return Path(url.removeprefix("file://"))


@pytest.mark.timeout(1200)  # nights: past the suite's hang guard (pyproject.toml)
@needs_sandbox
@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_the_python_demo_verifies_three_fixes_and_its_one_pr_carries_its_test(monkeypatch) -> None:
    report = night(monkeypatch)
    verified = {r.error.transaction.rsplit(":", 1)[-1]: r.verification for r in report.results if r.verification}
    statuses = {name: v.status for name, v in verified.items()}
    assert sum(s == "verified" for s in statuses.values()) >= 3, statuses
    assert "not reproduced" in statuses.values(), statuses  # a replayed request that does not fail is said so
    for v in verified.values():
        if v.status == "verified":
            labels = [r.label for r in v.runs]
            assert labels[:2] == ["regression test without the fix", "regression test with the fix"]
            assert v.runs[0].outcome.startswith("failed") and v.runs[1].outcome == "passed"
    assert report.pr is not None and report.pr.action == "created", report.pr
    pr = file_of(report.pr.url).read_text()
    assert "**verified**" in pr and "- passed: `verified`" in pr
    assert "+++ b/tests/test_regression_" in pr  # the regression test is part of the change
    assert "regression test without the fix" in pr and "failed (exit 1)" in pr
    for issue in [i for i in report.issues if i.action == "created"]:
        text = file_of(issue.url).read_text()
        if "**verified**" in text:
            assert "Regression test `tests/test_regression_" in text and "Reproduction (regression test without the fix)" in text
    home = Path(os.environ["NIGHTWATCH_HOME"])
    rows = duckdb.sql(f"select verification, count(*) from read_parquet('{home}/metrics/analyses/**/*.parquet', "
                      "union_by_name=true) where verification is not null group by 1").fetchall()
    assert dict(rows).get("verified", 0) >= 3
    docs = [read_doc(p)[0] for p in (home / "knowledge").rglob("*.md") if p.parent.name != "patterns"]
    assert sum(str(d.get("verification", "")).startswith("verified") for d in docs) >= 3


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness", "flow_results")
def test_without_bubblewrap_nothing_runs_and_no_unverified_pr_opens(monkeypatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a, **k))
    report = night(monkeypatch)
    assert report.succeeded
    assert not [r for r in report.results if r.verification and r.verification.status != "not run"]
    assert report.pr is None or report.pr.action == "skipped"
    assert not any(r.analysis and r.analysis.regression_test for r in report.results)  # run_test was never offered


CONFTEST = "import pytest\n\n\n@pytest.fixture()\ndef client(tmp_path):\n    return make_client()\n"
APP = {
    1: "from fastapi import FastAPI, HTTPException, Request",
    2: "from bookshop import pricing, storage",
    5: '@app.get("/books/{isbn}/price")',
    6: 'def book_price(isbn: str, currency: str = "EUR") -> dict:',
    7: "    row = storage.book(isbn)",
    8: '    return {"price": pricing.convert(row["price_eur"], currency)}',
    11: '@app.post("/coupons/check")',
    12: "async def check_coupon(request: Request) -> dict:",
    13: "    payload = await request.json()",
    14: '    return {"discount": pricing.discount(payload.get("code"))}',
}
PRICING = {5: 'RATES = {"EUR": 1.0}', 9: "def convert(amount, currency):", 10: "    return round(amount * RATES[currency], 2)",
           13: "def normalise(code):", 14: "    return code.strip().upper()"}


def test_the_replayed_request_carries_the_quoted_value_to_the_parameter_that_reached_the_crash_line() -> None:
    handler = Handler("bookshop/app.py", "book_price", APP)
    traces = "occurrence: request.method=GET, request.uri=/books/978/price, http.statusCode=500"
    test = regression_test("builtins:KeyError", "'GBP'", traces, handler, CONFTEST, ("bookshop/pricing.py", 10, "convert"), PRICING)
    assert test is not None and "client.get('/books/978/price?currency=GBP')" in test.content
    assert test.test == "tests/test_regression_book_price.py::test_book_price_request_does_not_fail_on_the_server"
    changes, why = fix_by_rule("builtins:KeyError", "'GBP'", handler, ("bookshop/pricing.py", 10, "convert"), PRICING)
    assert "if currency not in pricing.RATES:" in changes[0].after and "status_code=422" in changes[0].after
    assert changes[0].before == APP[7]


def test_a_body_without_the_key_is_sent_when_none_came_from_get_and_the_fix_defaults_it() -> None:
    handler = Handler("bookshop/app.py", "check_coupon", APP)
    traces = "occurrence: request.method=POST, request.uri=/coupons/check"
    message = "'NoneType' object has no attribute 'strip'"
    test = regression_test("builtins:AttributeError", message, traces, handler, CONFTEST, ("bookshop/pricing.py", 14, "normalise"),
                           PRICING)
    assert "client.post('/coupons/check', json={})" in test.content
    changes, _ = fix_by_rule("builtins:AttributeError", message, handler, ("bookshop/pricing.py", 14, "normalise"), PRICING)
    assert changes[0].after == '    return {"discount": pricing.discount((payload.get("code") or ""))}'


def test_production_text_never_becomes_code_in_a_regression_test() -> None:
    handler = Handler("bookshop/app.py", "book_price", APP)
    hostile = "occurrence: request.method=GET, request.uri=/books/1/price')\nimport os; os.system('x')#"
    test = regression_test("builtins:KeyError", "'GBP\\'); import os'", hostile, handler, CONFTEST,
                           ("bookshop/pricing.py", 10, "convert"), PRICING)
    assert test is not None and "os.system" not in test.content and "import os" not in test.content
    compile(test.content, test.path, "exec")
    assert regression_test("builtins:KeyError", "'GBP'", hostile, handler, "def not_a_client(): ...",
                           ("bookshop/pricing.py", 10, "convert"), PRICING) is None  # no client fixture, no test


def test_run_test_is_limited_checked_and_metered_like_any_tool(tmp_path) -> None:
    ran: list[tuple[str, str, str]] = []
    runner = ToolRunner(cache=CodeCache(host=None), traces=TraceData(fingerprint="f"), events=EventLog(tmp_path / "e"),  # type: ignore[arg-type]
                        run_id="r", fingerprint="f", allowed=["run_test"], test_limit=2,
                        tester=lambda p, c, t: ran.append((p, c, t)) or "reproduces the production error: KeyError")
    assert "reproduces" in runner.run("run_test", {"path": "tests/test_x.py", "content": "def test(): 1/0"}, 1).text
    refused = runner.run("run_test", {"path": "bookshop/pricing.py", "content": "RATES = {}"}, 2)
    assert refused.is_error and "not a test file path" in refused.text
    assert not runner.run("run_test", {"path": "tests/unit/test_y.py", "content": "x"}, 3).is_error
    over = runner.run("run_test", {"path": "tests/test_z.py", "content": "x"}, 4)
    assert over.is_error and "its limit" in over.text
    assert len(ran) == 2 and [c.name for c in runner.calls] == ["run_test"] * 4
