"""The bundled demo workspace agrees with itself: export, application, history, ignore rules, answer key.

The offline night is only useful if its traces point at real lines, its planted defects are where
the answer key says, its history replays, and its noise is exactly what the shipped rules drop.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from nightwatch.fingerprint import fingerprint_of
from nightwatch.redact import clean, redact
from tests.prefect_processes import PROCESS_GUARD_S

DEMO = Path(__file__).resolve().parents[1] / "nightwatch" / "demo"
APP = DEMO / "app"
FRAME = re.compile(r"^(?P<file>.+?):(?P<line>\d+):in `(?P<method>[^']+)'$")
TRANSACTION = re.compile(r"^(Controller/[\w/:.-]+|OtherTransaction/SidekiqJob/[A-Z]\w+/perform|OtherTransaction/Rake/[\w:]+)$")
EXPECTED = yaml.safe_load((DEMO / "expected.yml").read_text(encoding="utf-8"))
BUGS = EXPECTED["bugs"]


def results(answer: dict) -> list[dict]:
    return answer["data"]["actor"]["account"]["nrql"]["results"]


@pytest.fixture(scope="module")
def export() -> dict:
    return json.loads((DEMO / "nerdgraph_export.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows(export: dict) -> list[dict]:
    return results(export["errors"])


@pytest.fixture(scope="module")
def traces(export: dict) -> dict[tuple[str, str], str]:
    return {(d["error_class"], d["transaction"]): results(d["error_traces"])[0]["stackTrace"] for d in export["details"]}


@pytest.fixture(scope="module")
def expected() -> dict:
    return EXPECTED


@pytest.fixture(scope="module")
def history() -> dict:
    return yaml.safe_load((DEMO / "history.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ignore_rules() -> list[dict]:
    return yaml.safe_load((DEMO / "ignore.yml").read_text(encoding="utf-8"))["ignore"]


def app_files() -> dict[str, str]:
    return {p.relative_to(APP).as_posix(): p.read_text(encoding="utf-8") for p in sorted(APP.rglob("*")) if p.is_file()}


def frames_of(stack_trace: str) -> list[re.Match[str]]:
    frames = []
    for line in stack_trace.split("\n"):
        frame = FRAME.match(line)
        assert frame, f"not a Ruby backtrace line (file:line:in `method'): {line!r}"
        frames.append(frame)
    return frames


def in_app(frame: re.Match[str]) -> bool:
    return not frame["file"].startswith("/")


# --- the export -------------------------------------------------------------------------------


def test_export_has_the_nerdgraph_export_format(export: dict, rows: list[dict]) -> None:
    assert export["format"] == "nightwatch.nerdgraph-export/1"
    assert isinstance(export["account_id"], int)
    assert export["app_name"] == "storefront-production"
    keys = {"facet", "error.class", "transactionName", "occurrences", "message", "first_seen", "last_seen", "http_status"}
    for row in rows:
        assert set(row) == keys, row["facet"]
        assert row["facet"] == [row["error.class"], row["transactionName"]]
        assert isinstance(row["occurrences"], int) and 1 <= row["occurrences"] <= 2000
        assert row["http_status"] is None or 400 <= row["http_status"] <= 599
    assert len({tuple(r["facet"]) for r in rows}) == len(rows), "facets must be unique"


def test_details_follow_the_error_list(export: dict, rows: list[dict]) -> None:
    details = export["details"]
    assert [(d["error_class"], d["transaction"]) for d in details] == [tuple(r["facet"]) for r in rows]
    for row, detail in zip(rows, details):
        samples = results(detail["transaction_errors"])
        assert 1 <= len(samples) <= row["occurrences"]
        for sample in samples:
            assert sample["error.class"] == row["error.class"]
            assert sample["transactionName"] == row["transactionName"]
            assert row["first_seen"] <= sample["timestamp"] <= row["last_seen"]
            if row["transactionName"].startswith("OtherTransaction/"):
                assert "request.uri" not in sample
            else:
                assert sample["request.uri"].startswith("/") and sample["http.statusCode"] == row["http_status"]
        trace = results(detail["error_traces"])[0]
        assert trace["error.class"] == row["error.class"] and trace["stackTrace"]


def test_timestamps_lie_in_the_day_before_the_export(export: dict, rows: list[dict]) -> None:
    end = datetime.fromisoformat(export["exported_at"].replace("Z", "+00:00"))
    start_ms, end_ms = int((end - timedelta(hours=24)).timestamp() * 1000), int(end.timestamp() * 1000)
    for row in rows:
        assert start_ms <= row["first_seen"] <= row["last_seen"] < end_ms, row["facet"]


def test_the_night_is_varied(rows: list[dict]) -> None:
    counts = [r["occurrences"] for r in rows]
    assert 35 <= len(rows) <= 45
    assert min(counts) == 1 and max(counts) >= 1000
    assert any(r["transactionName"].startswith("OtherTransaction/SidekiqJob/") for r in rows)
    assert any(r["transactionName"].startswith("OtherTransaction/Rake/") for r in rows)
    assert any(r["http_status"] and 400 <= r["http_status"] < 500 for r in rows)


def test_transaction_names_follow_new_relic_ruby_conventions(rows: list[dict]) -> None:
    for row in rows:
        assert TRANSACTION.match(row["transactionName"]), row["transactionName"]


def test_stack_traces_are_ruby_backtraces(traces: dict[tuple[str, str], str], expected: dict) -> None:
    huge = (expected["huge_trace"]["error_class"], expected["huge_trace"]["transaction"])
    for key, stack_trace in traces.items():
        frames = frames_of(stack_trace)
        if key != huge:
            assert 10 <= len(frames) <= 40, f"{key}: {len(frames)} frames"
        for frame in frames:
            assert in_app(frame) or frame["file"].startswith(("/usr/local/bundle/", "/usr/local/lib/ruby/")), frame[0]


def test_in_app_frames_point_at_existing_lines(traces: dict[tuple[str, str], str]) -> None:
    files = app_files()
    for key, stack_trace in traces.items():
        for frame in filter(in_app, frames_of(stack_trace)):
            assert frame["file"] in files, f"{key}: {frame['file']} is not in the demo application"
            assert 1 <= int(frame["line"]) <= len(files[frame["file"]].splitlines()), f"{key}: {frame[0]}"


def test_export_is_current_with_the_application() -> None:
    done = subprocess.run([sys.executable, str(DEMO / "build_export.py"), "--check"], capture_output=True, text=True,
                          timeout=PROCESS_GUARD_S)
    assert done.returncode == 0, done.stderr


def test_a_stale_export_is_reported(tmp_path: Path) -> None:
    stale = tmp_path / "export.json"
    stale.write_text("{}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(DEMO / "build_export.py"), "--check", "--output", str(stale)],
                          capture_output=True, text=True, timeout=PROCESS_GUARD_S)
    assert done.returncode == 1 and "stale" in done.stderr


# --- the planted defects --------------------------------------------------------------------------


def test_the_answer_key_plants_enough_defects(expected: dict) -> None:
    bugs = expected["bugs"]
    assert len(bugs) >= 7
    assert sum(1 for b in bugs if b["has_in_app_frame"]) >= 6
    assert any(b["kind"] == "transient" for b in bugs)
    assert any(b["fix"] and "\n" not in b["fix"]["find"] for b in bugs), "one fix should be a one-line replacement"


@pytest.mark.parametrize("bug", BUGS, ids=[b["id"] for b in BUGS])
def test_each_defect_is_where_the_key_says(bug: dict, rows: list[dict], traces: dict[tuple[str, str], str]) -> None:
    lines = (APP / bug["file"]).read_text(encoding="utf-8").splitlines()
    assert bug["buggy_text"] in lines[bug["line"] - 1], f"line {bug['line']} is {lines[bug['line'] - 1]!r}"
    row = next(r for r in rows if r["facet"] == [bug["error_class"], bug["transaction"]])
    assert row["message"] == bug["message"]
    frames = [f for f in frames_of(traces[(bug["error_class"], bug["transaction"])]) if in_app(f)]
    assert bool(frames) == bug["has_in_app_frame"]
    if frames:
        assert f"{frames[0]['file']}:{frames[0]['line']}" == bug["top_in_app_frame"]
        assert (bug["file"], str(bug["line"])) in {(f["file"], f["line"]) for f in frames}


@pytest.mark.parametrize("bug", [b for b in BUGS if b["fix"]], ids=[b["id"] for b in BUGS if b["fix"]])
def test_each_fix_is_an_exact_edit_at_the_defect(bug: dict) -> None:
    text = (APP / bug["file"]).read_text(encoding="utf-8")
    find, replace = bug["fix"]["find"], bug["fix"]["replace"]
    assert text.count(find) == 1 and find != replace
    edit_line = text[: text.index(find)].count("\n") + 1
    assert abs(edit_line - bug["line"]) <= 3, f"the fix edits line {edit_line}, the defect is on line {bug['line']}"


RUBY_STRING = re.compile(r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")


def test_the_application_holds_no_secrets() -> None:
    """String literals, comments and non-Ruby files carry nothing redaction would remove.

    Ruby code as a whole is not a fair test: redact() also masks expressions such as `token: params[:token]`.
    """
    for path, text in app_files().items():
        if path.endswith((".rb", ".rake")) or path == "Gemfile":
            pieces = [m.group() for m in RUBY_STRING.finditer(text)]
            pieces += [line for line in text.splitlines() if line.strip().startswith("#")]
        else:
            pieces = text.splitlines()
        leaks = [piece for piece in pieces if redact(piece) != piece]
        assert not leaks, f"{path} holds what looks like a credential: {leaks}"


# --- repeats, secrets, the huge trace -----------------------------------------------------------


def test_repeated_defect_merges_into_one_fingerprint(expected: dict, rows: list[dict]) -> None:
    group = expected["repeat_group"]
    members = [r for r in rows if r["transactionName"] in group["transactions"]]
    assert len(members) == len(group["transactions"]) == 3
    prints = {fingerprint_of(r["error.class"], r["transactionName"], r["message"]) for r in members}
    assert len(prints) == 1
    others = {fingerprint_of(r["error.class"], r["transactionName"], r["message"]) for r in rows if r not in members}
    assert prints.isdisjoint(others)
    assert len(others) + 1 == expected["totals"]["distinct_fingerprints"]


def test_secrets_in_an_error_are_removed_by_redaction(expected: dict, export: dict) -> None:
    secret = expected["secret_bearing"]
    detail = next(d for d in export["details"]
                  if (d["error_class"], d["transaction"]) == (secret["error_class"], secret["transaction"]))
    texts = [json.dumps(detail)]
    assert all(any(s in t for t in texts) for s in secret["secrets"]), "the demo must carry the secrets"
    trace = results(detail["error_traces"])[0]
    assert secret["secrets"][1] in trace[secret["trace_attribute"]]
    for text in texts:
        for s in secret["secrets"]:
            assert s not in redact(text) and s not in clean(text, limit=10**6)[0]


def test_one_trace_is_huge(expected: dict, traces: dict[tuple[str, str], str]) -> None:
    huge = expected["huge_trace"]
    size = len(traces[(huge["error_class"], huge["transaction"])].encode("utf-8"))
    assert huge["min_bytes"] < size < huge["max_bytes"]
    assert sum(1 for t in traces.values() if len(t) > 20_000) == 1


# --- ignore rules ---------------------------------------------------------------------------------


def rule_matches(rule: dict, row: dict) -> bool:
    fields = {"error_class": row["error.class"], "message": row["message"], "transaction": row["transactionName"]}
    field = rule.get("field", "any")
    values = list(fields.values()) if field == "any" else [fields[field]]
    pattern, how = rule["pattern"], rule.get("match", "contains")
    test = {
        "contains": lambda v: pattern in v,
        "exact": lambda v: v == pattern,
        "prefix": lambda v: v.startswith(pattern),
        "regex": lambda v: re.search(pattern, v) is not None,
    }[how]
    return any(test(v) for v in values)


def test_ignore_rules_are_well_formed(ignore_rules: list[dict]) -> None:
    assert len(ignore_rules) >= 6
    for rule in ignore_rules:
        assert set(rule) <= {"pattern", "match", "field", "reason"} and rule["pattern"] and rule["reason"]
        assert rule.get("match", "contains") in {"contains", "exact", "prefix", "regex"}
        assert rule.get("field", "any") in {"error_class", "message", "transaction", "any"}
        if rule.get("match") == "regex":
            re.compile(rule["pattern"])


def test_each_ignore_rule_matches_a_group(ignore_rules: list[dict], rows: list[dict]) -> None:
    for rule in ignore_rules:
        assert any(rule_matches(rule, row) for row in rows), f"rule {rule['pattern']!r} matches nothing"


def test_ignore_rules_drop_exactly_the_noise(ignore_rules: list[dict], rows: list[dict], expected: dict) -> None:
    dropped = [r for r in rows if any(rule_matches(rule, r) for rule in ignore_rules)]
    noise = expected["noise"]
    assert len(dropped) == len(noise) >= 8
    for entry in noise:
        assert any(r["error.class"] == entry["error_class"] and r["transactionName"] == entry["transaction"]
                   and r["message"] == entry.get("message", r["message"]) for r in dropped), entry
    assert len(rows) - len(dropped) == expected["totals"]["after_ignore_rows"]


# --- history --------------------------------------------------------------------------------------


def replay(history: dict) -> dict[int, dict[str, str]]:
    """Undo the pull requests newest first; returns the files as they were before each one."""
    state, before = app_files(), {}
    for pr in reversed(history["pull_requests"]):
        for change in pr["files"]:
            assert change["path"] in state, f"#{pr['number']}: {change['path']} does not exist at that point"
            if change.get("created"):
                del state[change["path"]]
                continue
            for edit in change["revert"]:
                count = state[change["path"]].count(edit["find"])
                assert count == 1, f"#{pr['number']} {change['path']}: find occurs {count} times: {edit['find']!r}"
                state[change["path"]] = state[change["path"]].replace(edit["find"], edit["replace"])
        before[pr["number"]] = dict(state)
    return before


def test_history_lists_recent_pull_requests_oldest_first(history: dict) -> None:
    prs = history["pull_requests"]
    assert history["default_branch"] == "main"
    assert 5 <= len(prs) <= 8
    ages = [pr["merged_hours_ago"] for pr in prs]
    assert ages == sorted(ages, reverse=True) and 0 < ages[-1] and ages[0] <= 240
    assert [pr["number"] for pr in prs] == sorted(pr["number"] for pr in prs)
    for pr in prs:
        assert pr["title"] and pr["author"] and pr["branch"] and pr["files"]


def states_around(history: dict) -> list[tuple[dict, dict[str, str], dict[str, str]]]:
    """(pull request, files before it, files after it), oldest first."""
    before = replay(history)
    prs = history["pull_requests"]
    afters = [before[p["number"]] for p in prs[1:]] + [app_files()]
    return [(pr, before[pr["number"]], after) for pr, after in zip(prs, afters)]


def test_history_reverts_apply_cleanly_newest_first(history: dict) -> None:
    for pr, before, after in states_around(history):
        for change in pr["files"]:
            path = change["path"]
            assert (path in before) != bool(change.get("created")), (pr["number"], path)
            assert before.get(path) != after[path], f"#{pr['number']} does not change {path}"
            lines = before.get(path, "").splitlines()
            assert not [n for n, line in enumerate(lines, 1) if line != line.rstrip()], (
                f"before #{pr['number']}, {path} has trailing whitespace: a revert left part of a line behind"
            )


def test_the_project_loaders_accept_the_demo_files() -> None:
    demo_repo = pytest.importorskip("nightwatch.codehosts.demo_repo")
    ignore = pytest.importorskip("nightwatch.ignore")
    assert len(demo_repo.load_history(DEMO / "history.yml").pull_requests) >= 5
    assert len(ignore.load_ignore_rules(DEMO / "ignore.yml")) >= 6


def test_pull_requests_introduce_the_planted_defects(history: dict, expected: dict) -> None:
    around = {pr["number"]: (pr, before, after) for pr, before, after in states_around(history)}
    culprits = {bug["introduced_by"] for bug in expected["bugs"] if bug["introduced_by"]}
    assert len(culprits) >= 3 and culprits <= set(around)
    for bug in expected["bugs"]:
        if not bug["introduced_by"]:
            continue
        pr, before, after = around[bug["introduced_by"]]
        touched = {f["path"] for f in pr["files"]}
        assert touched & {bug["file"], bug["top_in_app_frame"].split(":")[0]}, bug["id"]
        if bug["line_added_by_pr"]:
            assert bug["buggy_text"] not in before.get(bug["file"], ""), bug["id"]
            assert bug["buggy_text"] in after[bug["file"]], bug["id"]


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby is not installed")
def test_every_historical_state_is_valid_ruby(history: dict, tmp_path: Path) -> None:
    states = [app_files(), *replay(history).values()]
    versions = {(path, text) for state in states for path, text in state.items()
                if path.endswith((".rb", ".rake")) or path == "Gemfile"}
    for index, (path, text) in enumerate(sorted(versions)):
        target = tmp_path / str(index) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        done = subprocess.run(["ruby", "-wc", str(target)], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and not done.stderr.strip(), f"{path}: {done.stderr}"
