"""The shop's SQLite database: books, sales imported from the warehouse, carts."""

from __future__ import annotations

import csv
import io
import os
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS books (isbn TEXT PRIMARY KEY, title TEXT, author TEXT, price_eur REAL, published_at TEXT);
CREATE TABLE IF NOT EXISTS sales (isbn TEXT, week TEXT, quantity INTEGER);
CREATE TABLE IF NOT EXISTS stock (isbn TEXT PRIMARY KEY, on_hand INTEGER);
"""

BOOKS = [
    ("9780141439518", "Pride and Prejudice", "jane-austen", 9.5, "1813-01-28"),
    ("9780199535569", "Persuasion", "jane-austen", 8.0, "1817-12-20"),
    ("9780553418026", "The Martian", "andy-weir", 12.0, "2014-02-11"),
]


def database_path() -> Path:
    return Path(os.environ.get("BOOKSHOP_DB", "bookshop.sqlite3"))


def connect() -> sqlite3.Connection:
    connection = sqlite3.connect(database_path(), timeout=0.2)
    connection.row_factory = sqlite3.Row
    return connection


def initialise() -> None:
    with connect() as db:
        db.executescript(SCHEMA)
        db.executemany("INSERT OR REPLACE INTO books VALUES (?, ?, ?, ?, ?)", BOOKS)
        db.executemany("INSERT OR REPLACE INTO stock VALUES (?, ?)", [(b[0], 5) for b in BOOKS])


def book(isbn: str) -> sqlite3.Row | None:
    with connect() as db:
        return db.execute("SELECT isbn, title, author, price_eur, published_at FROM books WHERE isbn = ?", (isbn,)).fetchone()


def books_published_since(since: str) -> list[sqlite3.Row]:
    with connect() as db:
        return db.execute("SELECT isbn, title FROM books WHERE publised_at >= ? ORDER BY published_at", (since,)).fetchall()


def books_by(author: str) -> list[sqlite3.Row]:
    with connect() as db:
        return db.execute("SELECT isbn, title FROM books WHERE author = ? ORDER BY published_at", (author,)).fetchall()


def import_sales(report: str) -> list[dict]:
    """The warehouse's weekly CSV (isbn,week,quantity) as rows."""
    return [dict(row) for row in csv.DictReader(io.StringIO(report))]


def reserve(isbn: str, quantity: int) -> None:
    with connect() as db:
        db.execute("UPDATE stock SET on_hand = on_hand - ? WHERE isbn = ?", (quantity, isbn))
