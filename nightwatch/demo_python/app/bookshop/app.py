"""The HTTP API of the bookshop."""

from __future__ import annotations

from datetime import date

from fastapi import FastAPI, HTTPException, Request

from bookshop import orders, pricing, reports, storage

app = FastAPI(title="bookshop")


@app.get("/books/{isbn}/price")
def book_price(isbn: str, currency: str = "EUR") -> dict:
    row = storage.book(isbn)
    if row is None:
        raise HTTPException(404, "no such book")
    return {"isbn": isbn, "price": pricing.convert(row["price_eur"], currency), "currency": currency}


@app.get("/books/new")
def new_books(since: str = "last-month") -> list[dict]:
    cutoff = date.fromisoformat(since)
    return [dict(row) for row in storage.books_published_since(cutoff.isoformat())]


@app.get("/authors/{slug}/debut")
def author_debut(slug: str) -> dict:
    return dict(storage.books_by(slug)[0])


@app.post("/orders/total")
def order_total(order: orders.Order) -> dict:
    return {"total": orders.cart_total(order)}


@app.post("/orders/shipping")
def order_shipping(order: orders.Order) -> dict:
    return {"per_item": orders.shipping_per_item(order)}


@app.post("/coupons/check")
async def check_coupon(request: Request) -> dict:
    payload = await request.json()
    return {"discount": pricing.discount(payload.get("code"))}


@app.post("/reports/weekly")
async def weekly_report(request: Request) -> dict:
    return reports.weekly_units((await request.body()).decode("utf-8"))


@app.post("/stock/{isbn}/reserve")
def reserve(isbn: str, quantity: int = 1) -> dict:
    storage.reserve(isbn, quantity)
    return {"reserved": quantity}


@app.post("/covers/{isbn}")
async def upload_cover(isbn: str, request: Request) -> dict:
    return {"bytes": len(await request.body())}
