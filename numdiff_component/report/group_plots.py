"""The plot of pass rate per group (SPEC §3.1): one panel per ``by`` column, a point per group
with its Wilson interval, the largest groups first. matplotlib's Agg canvas, no pyplot."""

from __future__ import annotations

import io

import pandas as pd

PLOTTED_GROUPS = 30
"""Groups per column drawn: the largest (``groups.parquet`` holds them all)."""


def png_size(png: bytes) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header; (0, 0) for no image."""
    if len(png) < 24:
        return 0, 0
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def draw_group_pass_rates(table: pd.DataFrame, title: str) -> bytes:
    """A PNG of each column's groups (`slices.groups.group_table`): pass rate and interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = list(dict.fromkeys(table["column"]))
    shown = [table[table["column"] == c].head(PLOTTED_GROUPS) for c in columns]
    height = 1.2 + sum(0.25 * len(rows) + 0.6 for rows in shown)
    fig = Figure(figsize=(7.0, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(columns), 1, squeeze=False, height_ratios=[len(r) + 2 for r in shown])
    for ax, column, rows in zip(axes[:, 0], columns, shown, strict=True):
        y = list(range(len(rows)))[::-1]
        rate = rows["pass_rate"].to_numpy(dtype=float)
        low = rate - rows["pass_rate_ci_low"].to_numpy(dtype=float)
        high = rows["pass_rate_ci_high"].to_numpy(dtype=float) - rate
        ax.errorbar(rate, y, xerr=[low, high], fmt="o", color="#2b8cbe", capsize=3)
        names = ["(null)" if pd.isna(v) else str(v)[:40] for v in rows["value"]]
        ax.set_yticks(y, [f"{name} (n={n:,})" for name, n in zip(names, rows["n"], strict=True)])
        ax.set_xlim(-0.02, 1.02)
        more = len(table[table["column"] == column]) - len(rows)
        ax.set_title(f"by {column}" + (f" (largest {len(rows)}; {more:,} more)" if more else ""))
        ax.set_xlabel("pass rate (95% interval)")
    fig.suptitle(title)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
