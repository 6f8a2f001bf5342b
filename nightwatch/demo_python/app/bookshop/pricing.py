"""Prices: currencies, coupons and line totals."""

from __future__ import annotations

RATES = {"EUR": 1.0, "USD": 1.08, "CHF": 0.94}
COUPONS = {"WELCOME10": 0.10, "BOOKWORM": 0.15}


def convert(amount_eur: float, currency: str) -> float:
    return round(amount_eur * RATES[currency], 2)


def normalise_coupon(code: str | None) -> str:
    return code.strip().upper()


def discount(code: str | None) -> float:
    return COUPONS.get(normalise_coupon(code), 0.0)


def line_total(unit_price: float, quantity: int) -> float:
    assert quantity > 0, f"quantity must be positive, got {quantity}"
    return unit_price * quantity
