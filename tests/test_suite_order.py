"""The suite's own order (tests/slowest_first.py): the longest known tests first, the rest as collected."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.slowest_first import DURATIONS, Recorder, known_durations, merged, slowest_first


def test_the_longest_known_tests_start_first_and_the_others_keep_their_order() -> None:
    items = [SimpleNamespace(nodeid=n) for n in ("a::quick", "b::slow", "c::new", "d::slower", "e::new")]
    slowest_first(items, {"a::quick": 0.6, "b::slow": 30.0, "d::slower": 90.0})
    assert [i.nodeid for i in items] == ["d::slower", "b::slow", "a::quick", "c::new", "e::new"]


def test_a_run_s_figures_replace_the_old_ones_and_keep_those_it_did_not_run() -> None:
    out = merged({"a::t": 10.0, "b::t": 4.0, "gone::t": 0.2}, {"a::t": 2.04, "c::t": 0.1, "d::t": 7.0})
    assert out == {"d::t": 7.0, "b::t": 4.0, "a::t": 2.0}  # longest first; tests under half a second left out
    assert list(out) == ["d::t", "b::t", "a::t"]


def test_a_grouped_test_is_recorded_under_its_own_id_and_a_parameter_with_an_at_sign_is_kept(monkeypatch, tmp_path) -> None:
    recorder = Recorder()
    for nodeid, seconds in (("tests/x.py::t@prefect-server", 1.0), ("tests/x.py::t@prefect-server", 2.5),
                            ("tests/y.py::t[user@example.com]", 3.0)):
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    assert dict(recorder.seconds) == {"tests/x.py::t": 3.5, "tests/y.py::t[user@example.com]": 3.0}
    target = tmp_path / "durations.json"
    monkeypatch.setattr("tests.slowest_first.DURATIONS", target)
    recorder.pytest_sessionfinish(SimpleNamespace())
    assert json.loads(target.read_text()) == {"tests/x.py::t": 3.5, "tests/y.py::t[user@example.com]": 3.0}


def test_a_missing_or_damaged_durations_file_is_no_order_not_an_error(tmp_path: Path) -> None:
    assert known_durations(tmp_path / "absent.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert known_durations(tmp_path / "bad.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert known_durations(tmp_path / "list.json") == {}


def test_the_recorded_file_names_tests_of_this_suite() -> None:
    known = known_durations(DURATIONS)
    slowest = list(known)[:20]
    assert len(slowest) == 20
    missing = [n for n in slowest if not (DURATIONS.parents[1] / n.split("::")[0]).is_file()]
    assert not missing, f"tests/durations.json names files that are gone (make test-durations records it again): {missing}"
