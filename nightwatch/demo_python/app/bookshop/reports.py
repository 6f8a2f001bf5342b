"""Weekly sales reports for the publishers."""

from __future__ import annotations

from bookshop import storage


def weekly_units(report: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in storage.import_sales(report):
        totals[row["isbn"]] = totals.get(row["isbn"], 0) + row["quantity"]
    return totals
