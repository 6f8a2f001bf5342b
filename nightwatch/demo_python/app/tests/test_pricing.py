import pytest

from bookshop import pricing


def test_convert_rounds_to_cents():
    assert pricing.convert(10, "CHF") == 9.4


def test_line_total_multiplies():
    assert pricing.line_total(2.5, 4) == 10.0


def test_unknown_coupon_is_no_discount():
    assert pricing.discount("NOPE") == 0.0


@pytest.mark.parametrize("code", ["welcome10", " WELCOME10", "Welcome10 "])
def test_coupon_codes_are_normalised(code):
    assert pricing.normalise_coupon(code) == "WELCOME10"
