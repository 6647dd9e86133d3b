"""A small SVG line chart for benchmark reports (no plotting library).

``scale_svg(report)`` draws p95 latency against corpus size for every search channel and the
rank-bm25 baseline of the same run, both axes logarithmic.
"""

from __future__ import annotations

import math
from html import escape

from core.bench.scale import CHANNELS

COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#7f7f7f")
WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 200, 40, 60


def _ticks(low: float, high: float) -> list[float]:
    """Powers of ten (and 2×, 5× when the range is short) covering [low, high]."""
    out = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for factor in (1,) if math.log10(high / low) > 2 else (1, 2, 5):
            value = factor * 10**exponent
            if low <= value <= high:
                out.append(value)
    return out


def _label(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def line_chart(title: str, x_label: str, y_label: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """An SVG document: one polyline per series over log-log axes."""
    points = [p for values in series.values() for p in values if p[0] > 0 and p[1] > 0]
    if not points:
        raise ValueError("nothing to plot")
    x_low, x_high = min(p[0] for p in points), max(p[0] for p in points)
    y_low, y_high = min(p[1] for p in points), max(p[1] for p in points)
    x_low, x_high = 10 ** math.floor(math.log10(x_low)), 10 ** math.ceil(math.log10(x_high))
    y_low, y_high = 10 ** math.floor(math.log10(y_low)), 10 ** math.ceil(math.log10(y_high))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(value: float) -> float:
        return LEFT + plot_w * (math.log10(value) - math.log10(x_low)) / (math.log10(x_high) - math.log10(x_low))

    def y(value: float) -> float:
        return TOP + plot_h * (1 - (math.log10(value) - math.log10(y_low)) / (math.log10(y_high) - math.log10(y_low)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    for value in _ticks(x_low, x_high):
        out.append(f'<line x1="{x(value):.1f}" y1="{TOP}" x2="{x(value):.1f}" y2="{TOP + plot_h}" stroke="#ddd"/>')
        out.append(f'<text x="{x(value):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{_label(value)}</text>')
    for value in _ticks(y_low, y_high):
        out.append(f'<line x1="{LEFT}" y1="{y(value):.1f}" x2="{LEFT + plot_w}" y2="{y(value):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">{_label(value)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 15}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(
        f'<text x="18" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {TOP + plot_h / 2})">{escape(y_label)}</text>'
    )
    for index, (name, values) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        kept = [(a, b) for a, b in sorted(values) if a > 0 and b > 0]
        dash = ' stroke-dasharray="6 4"' if index == len(series) - 1 else ""
        coords = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in kept)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for a, b in kept:
            out.append(f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3.5" fill="{colour}"/>')
        legend_y = TOP + 10 + 22 * index
        out.append(
            f'<line x1="{LEFT + plot_w + 15}" y1="{legend_y}" x2="{LEFT + plot_w + 40}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{LEFT + plot_w + 46}" y="{legend_y + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def scale_svg(report: dict) -> str:
    """p95 latency (ms) against corpus size for every channel and the baseline of a scale report."""

    rows = report["results"]
    series: dict[str, list[tuple[float, float]]] = {}
    for channel in CHANNELS:
        series[channel] = [(row["messages"], row["latency_ms"][channel]["p95"]) for row in rows.values()]
    series["rank-bm25 (baseline)"] = [
        (row["messages"], row["baseline_latency_ms"]["p95"]) for row in rows.values() if row.get("baseline_latency_ms")
    ]
    return line_chart(
        "Search latency (p95) against corpus size", "messages in the namespace", "p95 latency, ms (log)", series
    )
