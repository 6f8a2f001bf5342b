"""The trend picture: cost per night (bars) and cache hit rate (line) over the last nights, as a standalone SVG.

Plain SVG text, no plotting library: it opens in any browser, in the Prefect artifact's link and on GitHub.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from nightwatch.knowledge_store.duck import connect_readonly
from nightwatch.knowledge_store.summary import trend_rows

from nightwatch.atomic import atomic_write_text

TREND_FILE = "trend.svg"
WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 60, 40, 50


def trend_svg(rows: Sequence[tuple[Any, ...]], title: str = "NightWatch: cost per night and cache hit rate") -> str:
    """`rows`: (run_id, night end, cost in USD, cache hit rate or None), oldest first."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top_cost = max([float(r[2] or 0) for r in rows] + [0.0001]) * 1.1
    step = plot_w / max(len(rows), 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
             'font-family="sans-serif" font-size="11">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>',
             _axes(plot_w, plot_h, top_cost)]
    points = []
    for i, (run_id, night, cost, hit) in enumerate(rows):
        x = LEFT + i * step
        bar = plot_h * float(cost or 0) / top_cost
        label = escape(f"{_day(night)}: ${float(cost or 0):.4f}, cache hit {_percent(hit)} ({run_id})")
        parts.append(f'<rect x="{x + step * 0.15:.1f}" y="{TOP + plot_h - bar:.1f}" width="{step * 0.7:.1f}" '
                     f'height="{bar:.1f}" fill="#5b8def"><title>{label}</title></rect>')
        if hit is not None:
            points.append(f"{x + step / 2:.1f},{TOP + plot_h * (1 - float(hit)):.1f}")
        if len(rows) <= 12 or i % max(len(rows) // 6, 1) == 0:
            parts.append(f'<text x="{x + step / 2:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{escape(_day(night))}</text>')
    if points:
        parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="#e8743b" stroke-width="2"/>')
    if not rows:
        parts.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" text-anchor="middle">no nights yet</text>')
    parts.append(_legend())
    return "\n".join(parts + ["</svg>"]) + "\n"


def write_trend(home: Path, target: Path, nights: int = 30) -> Path:
    """The picture of the last `nights` nights, from the views, written to `target`."""
    with connect_readonly(home) as con:
        rows = trend_rows(con, nights)
    return atomic_write_text(target, trend_svg(rows, f"NightWatch: cost per night and cache hit rate, last {len(rows)} nights"))


def _axes(plot_w: float, plot_h: float, top_cost: float) -> str:
    lines = [f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#333"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>',
             f'<line x1="{LEFT + plot_w}" y1="{TOP}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#333"/>']
    for share in (0, 0.5, 1):
        y = TOP + plot_h * (1 - share)
        lines.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">${top_cost * share:.3g}</text>')
        lines.append(f'<text x="{LEFT + plot_w + 6}" y="{y + 4:.1f}">{share:.0%}</text>')
    lines.append(f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
                 'text-anchor="middle">cost per night (USD)</text>')
    lines.append(f'<text x="{WIDTH - 14}" y="{TOP + plot_h / 2}" transform="rotate(90 {WIDTH - 14} {TOP + plot_h / 2})" '
                 'text-anchor="middle">cache hit rate</text>')
    return "\n".join(lines)


def _legend() -> str:
    y = HEIGHT - 12
    return (f'<rect x="{LEFT}" y="{y - 9}" width="12" height="10" fill="#5b8def"/><text x="{LEFT + 16}" y="{y}">cost</text>'
            f'<line x1="{LEFT + 70}" y1="{y - 4}" x2="{LEFT + 88}" y2="{y - 4}" stroke="#e8743b" stroke-width="2"/>'
            f'<text x="{LEFT + 92}" y="{y}">cache hit rate</text>')


def _day(value: object) -> str:
    return f"{value:%m-%d}" if isinstance(value, datetime) else str(value or "")[:10]


def _percent(value: object) -> str:
    return f"{float(value):.0%}" if value is not None else "n/a"
