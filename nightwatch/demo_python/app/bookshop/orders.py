"""Orders: what a cart costs, and what shipping each item costs."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bookshop import pricing

SHIPPING_EUR = 4.5


class CartLine(BaseModel):
    isbn: str
    unit_price: float
    quantity: int = Field(ge=0)


class Order(BaseModel):
    lines: list[CartLine]
    coupon: str | None = None
    backordered: list[str] = Field(default_factory=list)


def cart_total(order: Order) -> float:
    gross = sum(pricing.line_total(line.unit_price, line.quantity) for line in order.lines)
    return round(gross * (1 - pricing.discount(order.coupon)), 2)


def shipping_per_item(order: Order) -> float:
    shipped = [line for line in order.lines if line.isbn not in order.backordered]
    items = sum(line.quantity for line in shipped)
    return round(SHIPPING_EUR / items, 2)
