"""`nightwatch metrics`: what the last N nights cost and achieved, from the DuckDB views, as a table, CSV or JSON.

Every figure is one SQL query over the views analysts use (knowledge_store/duck.py), so what this prints
is what anyone can check with `--sql`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

# The last N nights, by the night's row; every figure below is restricted to their run ids.
NIGHTS = "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT $nights"

SUMMARY = f"""
WITH nights AS ({NIGHTS}),
calls AS (SELECT * FROM model_calls WHERE run_id IN (SELECT run_id FROM nights)),
runs_n AS (SELECT * FROM runs WHERE run_id IN (SELECT run_id FROM nights)),
deep AS (SELECT * FROM analyses WHERE run_id IN (SELECT run_id FROM nights) AND source = 'model'),
back AS (SELECT * FROM analyses WHERE run_id IN (SELECT run_id FROM nights) AND regression IS NOT NULL)
SELECT
    (SELECT count(*) FROM nights) AS nights,
    (SELECT min(window_start) FROM runs_n) AS since,
    (SELECT round(coalesce(sum(cost_usd), 0), 4) FROM calls) AS cost_usd,
    (SELECT round(coalesce(sum(cost_usd), 0) / greatest((SELECT count(*) FROM nights), 1), 4) FROM calls) AS cost_per_night_usd,
    (SELECT count(*) FROM calls) AS model_calls,
    (SELECT coalesce(sum(input_tokens), 0) FROM calls) AS input_tokens,
    (SELECT coalesce(sum(output_tokens), 0) FROM calls) AS output_tokens,
    (SELECT coalesce(sum(cache_write_tokens), 0) FROM calls) AS cache_write_tokens,
    (SELECT coalesce(sum(cache_read_tokens), 0) FROM calls) AS cache_read_tokens,
    (SELECT coalesce(sum(thinking_tokens), 0) FROM calls) AS thinking_tokens,
    (SELECT round(sum(cache_read_tokens) / nullif(sum(input_tokens + cache_read_tokens + cache_write_tokens), 0), 4)
     FROM calls) AS cache_hit_rate,
    (SELECT round(avg(iterations), 2) FROM deep) AS iterations_per_investigation,
    (SELECT coalesce(sum(errors_analysed), 0) FROM runs_n) AS errors_analysed,
    (SELECT round(sum(from_knowledge + from_cache) / nullif(sum(errors_analysed), 0), 4) FROM runs_n) AS knowledge_hit_rate,
    (SELECT round(avg(CASE WHEN mode = 'batch' THEN 1 ELSE 0 END), 4) FROM calls WHERE phase = 'triage') AS batch_share_of_triage,
    (SELECT count(DISTINCT (run_id, fingerprint)) FROM back) AS regressions  -- once per night, however many attempts
"""

# Fixes proposed (a draft PR) and what people did with them, by the model and agent definition of the analysis.
ACCEPTANCE = f"""
WITH nights AS ({NIGHTS}),
prs AS (
    SELECT fingerprint, arg_max(fix_state, changed_at) AS fix_state
    FROM outcomes WHERE kind = 'pr' AND fix_state IS NOT NULL GROUP BY fingerprint),
proposed AS (
    SELECT fingerprint, arg_max(model, analysed_at) AS model, arg_max(agent, analysed_at) AS agent
    FROM analyses WHERE has_fix AND source = 'model' AND run_id IN (SELECT run_id FROM nights) GROUP BY fingerprint)
SELECT coalesce(p.model, '?') AS model, coalesce(p.agent, '?') AS agent, count(*) AS fixes_judged,
       count(*) FILTER (WHERE o.fix_state = 'merged') AS merged,
       count(*) FILTER (WHERE o.fix_state = 'rejected') AS rejected,
       count(*) FILTER (WHERE o.fix_state = 'reverted') AS reverted,
       round(count(*) FILTER (WHERE o.fix_state = 'merged') / count(*), 4) AS acceptance_rate
FROM prs o JOIN proposed p USING (fingerprint)
GROUP BY ALL ORDER BY fixes_judged DESC, model, agent
"""

# Cost per night and cache hit rate, oldest first: the trend picture's data.
TREND = f"""
WITH nights AS ({NIGHTS})
SELECT r.run_id, any_value(r.window_end) AS night, round(coalesce(sum(c.cost_usd), 0), 6) AS cost_usd,
       round(sum(c.cache_read_tokens) / nullif(sum(c.input_tokens + c.cache_read_tokens + c.cache_write_tokens), 0), 4)
           AS cache_hit_rate
FROM runs r LEFT JOIN model_calls c USING (run_id)
WHERE r.run_id IN (SELECT run_id FROM nights)
GROUP BY r.run_id ORDER BY night
"""


@dataclass
class Table:
    columns: list[str]
    rows: list[tuple[Any, ...]]


@dataclass
class Summary:
    figures: dict[str, Any]
    acceptance: Table = field(default_factory=lambda: Table([], []))


def run_query(con: duckdb.DuckDBPyConnection, sql: str, parameters: dict[str, Any] | None = None) -> Table:
    result = con.execute(sql, parameters or {})
    return Table([d[0] for d in result.description], result.fetchall())


def summarise(con: duckdb.DuckDBPyConnection, nights: int) -> Summary:
    figures = run_query(con, SUMMARY, {"nights": nights})
    return Summary(dict(zip(figures.columns, figures.rows[0])), run_query(con, ACCEPTANCE, {"nights": nights}))


def read_only(sql: str) -> str:
    """The one statement of `--sql`, refused unless it is a SELECT (EXPLAIN is refused too: EXPLAIN ANALYZE runs what
    it explains). The connection is read-only and confined to the metrics folder as well (duck.confine)."""
    statements = list(duckdb.extract_statements(sql))
    if len(statements) != 1 or statements[0].type.name != "SELECT":
        raise ValueError("--sql takes one SELECT statement over the views")
    return sql


# ---------------------------------------------------------------- formats


def as_text(table: Table) -> str:
    cells = [[_cell(v) for v in row] for row in table.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(table.columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(table.columns, widths)), "  ".join("-" * w for w in widths)]
    return "\n".join(lines + ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]) + "\n"


def as_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([[_cell(v) for v in row] for row in table.rows])
    return out.getvalue()


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str) + "\n"


def summary_tables(summary: Summary) -> tuple[Table, Table]:
    return Table(["metric", "value"], list(summary.figures.items())), summary.acceptance


def render(summary: Summary, fmt: str) -> str:
    figures, acceptance = summary_tables(summary)
    if fmt == "json":
        return as_json({"summary": summary.figures, "fix_acceptance": records(acceptance)})
    if fmt == "csv":
        rows = [("summary", k, v) for k, v in summary.figures.items()]
        rows += [("fix_acceptance", f"{r[0]} / {r[1]}", json.dumps(dict(zip(acceptance.columns[2:], r[2:])))) for r in acceptance.rows]
        return as_csv(Table(["section", "key", "value"], rows))
    text = as_text(figures)
    return text + ("\nFix acceptance by model and agent definition\n" + as_text(acceptance) if acceptance.rows
                   else "\nNo fix proposed in these nights has an outcome yet.\n")


def records(table: Table) -> list[dict[str, Any]]:
    return [dict(zip(table.columns, row)) for row in table.rows]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"
    return str(value)


def render_table(table: Table, fmt: str) -> str:
    return as_json(records(table)) if fmt == "json" else as_csv(table) if fmt == "csv" else as_text(table)


def trend_rows(con: duckdb.DuckDBPyConnection, nights: int = 30) -> Sequence[tuple[Any, ...]]:
    return run_query(con, TREND, {"nights": nights}).rows
