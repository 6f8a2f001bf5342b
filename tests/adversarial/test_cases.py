"""Every hostile case of the catalogue holds: injections are refused or withheld, bad input costs no night."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.cases import BAD_INPUTS, INJECTIONS, run_case


def test_the_catalogue_is_wide_enough():
    assert len(INJECTIONS) >= 20 and len(BAD_INPUTS) >= 15
    assert len({c.name for c in INJECTIONS + BAD_INPUTS}) == len(INJECTIONS) + len(BAD_INPUTS)


@pytest.mark.parametrize("case", INJECTIONS, ids=lambda c: c.name)
def test_injection_is_refused(case, tmp_path: Path):
    outcome = run_case(case, tmp_path)
    assert outcome.held, outcome.detail


@pytest.mark.slow  # megabytes and thousands of groups through the sources and the ranking
@pytest.mark.parametrize("case", BAD_INPUTS, ids=lambda c: c.name)
def test_bad_input_costs_no_night(case, tmp_path: Path):
    outcome = run_case(case, tmp_path)
    assert outcome.held, outcome.detail
