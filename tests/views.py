"""What an analyst sees: a query against NIGHTWATCH_HOME/nightwatch.duckdb, opened read-only as they would."""

from __future__ import annotations

from pathlib import Path

import duckdb


def rows(home: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(home / "nightwatch.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
