"""The report's two plots, drawn from what `ReportBuilder` collected: the score histogram and
output against expected.

Plots are drawn on a `matplotlib.figure.Figure` with the Agg canvas: no pyplot, no global
backend switch, no display needed. matplotlib is imported only when a plot is drawn.

The report (these plots and the rendered text) may be made in a forked child process
(`ReportBuilder.render_in_child`), so that its second of CPU overlaps with the job's own slow
work (importing MLflow); Python threads would take turns instead, both holding the GIL.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

PASS_COLOUR, FAIL_COLOUR, UNPARSEABLE_COLOUR = "#2b8cbe", "#e34a33", "#969696"
_PASS_COLOUR, _FAIL_COLOUR = PASS_COLOUR, FAIL_COLOUR
SCORE_EDGES = np.array(
    [*np.linspace(0.0, 0.9, 10), 0.99, 0.999, 0.9999, 0.99999, 0.999999, 1.0, np.nextafter(1, 2)]
)
"""Score bins of the histogram: tenths up to 0.9, then each further nine (0.99, 0.999...), then
exactly 1: when most rows pass, the bars show how close they came, not one sliver at 1.0."""


def plural(n: int, noun: str, *, count: bool = False) -> str:
    """``noun`` for ``n`` of them (``"row"``, ``"rows"``), with the number when ``count``.

    >>> plural(1, "unparseable row", count=True), plural(2, "row")
    ('1 unparseable row', 'rows')
    """
    word = noun if n == 1 else noun + "s"
    return f"{n:,} {word}" if count else word


def bin_labels(edges: np.ndarray = SCORE_EDGES) -> list[str]:
    """A short label for each score bin: ``0-0.1`` ... ``0.999999-1``, ``1 (exact)``."""
    labels = [f"{a:g}-{b:g}" for a, b in itertools.pairwise(edges[:-1])]
    return [*labels, "1 (exact)"]


class Histogram(NamedTuple):
    """One run's rows per score bin (`SCORE_EDGES`): passed and failed (with numbers), the
    unparseable rows (score 0), the threshold they were held to, and the title naming them."""

    passed: np.ndarray
    failed: np.ndarray
    n_unparseable: int
    threshold: float
    title: str


def histogram_counts(
    scores: np.ndarray, passed: np.ndarray, parsed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows per score bin, passed and failed (of those with numbers, ``parsed``), and the
    count of unparseable rows: what a `Histogram` draws, for one batch of rows."""
    failed = parsed & ~passed
    return (
        np.histogram(scores[passed], bins=SCORE_EDGES)[0],
        np.histogram(scores[failed], bins=SCORE_EDGES)[0],
        int((~parsed).sum()),
    )


def draw_histogram(
    passed: np.ndarray,
    failed: np.ndarray,
    n_unparseable: int,
    threshold: float,
    title: str,
) -> bytes:
    """Rows per score bin (`SCORE_EDGES`), passed and failed stacked; unparseable rows (score
    0) in the first bin; a dashed line where the threshold falls."""
    return draw_histograms([Histogram(passed, failed, n_unparseable, threshold, title)])


def draw_histograms(histograms: Sequence[Histogram]) -> bytes:
    """`draw_histogram` for each run, side by side on one y scale (one log or linear choice,
    the same limits), so that bars of two runs compare by height, not by their titles."""
    return _png(histogram_figure(histograms))


def histogram_figure(histograms: Sequence[Histogram]) -> Any:
    """The figure `draw_histograms` draws (a matplotlib ``Figure``, one axes per run)."""
    fig = _figure(8.0 * len(histograms), 4.5, panels=len(histograms))
    axes = fig.axes
    tallest = [h.passed + h.failed + _first(h.n_unparseable, len(h.passed)) for h in histograms]
    nonzero = np.concatenate(tallest)[np.concatenate(tallest) > 0]
    log = bool(nonzero.size and nonzero.max() / nonzero.min() > 100)
    for ax, histogram in zip(axes, histograms, strict=True):
        _draw_bars(ax, histogram, log)
    if log:
        axes[0].set_ylim(bottom=0.5)  # from 1 (matplotlib's choice), a bar of one row is not seen
    return fig


def _first(n: int, bins: int) -> np.ndarray:
    """``n`` rows in the first of ``bins`` bins (the unparseable rows, at score 0)."""
    counts = np.zeros(bins, dtype=np.int64)
    counts[0] = n
    return counts


def _draw_bars(ax: Any, histogram: Histogram, log: bool) -> None:
    passed, failed = histogram.passed, histogram.failed
    x = np.arange(len(passed))
    unparseable = _first(histogram.n_unparseable, len(passed))
    bars = (
        (failed, 0, FAIL_COLOUR, "fail"),
        (unparseable, failed, UNPARSEABLE_COLOUR, "unparseable (score 0)"),
        (passed, failed + unparseable, PASS_COLOUR, "pass"),
    )
    for height, bottom, colour, label in bars:
        if np.any(height > 0):
            ax.bar(x, height, 0.9, bottom=bottom, color=colour, label=label)
    threshold = histogram.threshold
    ax.axvline(
        _position(threshold),
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"threshold {threshold:g}",
    )
    if log:
        ax.set_yscale("log")  # a tall bar at 1.0 would hide every failure otherwise
        ax.yaxis.set_major_formatter(power_of_ten)
        ax.set_ylabel("rows (log scale)")
    else:
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("rows")
    ax.set_xticks(x, bin_labels(), rotation=45, ha="right", fontsize=8)
    ax.set_xlim(-0.6, len(x) - 0.4)
    ax.set_xlabel("score (1 = exact); the bins narrow towards 1")
    n_rows = int((passed + failed + unparseable).sum())
    n_passed = int(passed.sum())
    rate = n_passed / n_rows if n_rows else math.nan
    ax.set_title(
        f"{histogram.title}\nScores of {plural(n_rows, 'row', count=True)}: "
        f"{n_passed:,} passed ({rate:.1%})",
        fontsize=10,
    )
    ax.legend(loc="upper left", frameon=False)


def _position(score: float) -> float:
    """Where ``score`` falls on the histogram's bin axis (bin centres are 0, 1, 2...)."""
    i = int(np.clip(np.searchsorted(SCORE_EDGES, score, side="right") - 1, 0, len(SCORE_EDGES) - 2))
    low, high = SCORE_EDGES[i], SCORE_EDGES[i + 1]
    return i - 0.5 + (score - low) / (high - low) if high > low else float(i)


_DRAWABLE = 1e300
"""The largest magnitude the scatter draws."""


def draw_scatter(sample: pd.DataFrame, n_rows: int, n_unparseable: int, title: str) -> bytes:
    """The sampled (output, expected) pairs, pass and fail, on axes fitted to the data."""
    fig = _figure(6.5, 6.5)
    ax = fig.axes[0]
    x = sample["output_value"].to_numpy(dtype=float)
    y = sample["expected_value"].to_numpy(dtype=float)
    # matplotlib cannot lay out axes near the float limit: such rows are counted, not drawn.
    ok = (np.abs(x) <= _DRAWABLE) & (np.abs(y) <= _DRAWABLE)
    x, y, passed = x[ok], y[ok], sample["passed"].to_numpy(dtype=bool)[ok]
    n_parsed = n_rows - n_unparseable
    shown = f"{len(x):,} of {n_parsed:,}" if len(x) < n_parsed else f"{len(x):,}"
    ax.set_title(
        f"{title}\nOutput vs expected: {shown} {plural(n_parsed, 'row')} with numbers; "
        f"{plural(n_unparseable, 'unparseable row', count=True)} not shown",
        fontsize=10,
    )
    ax.set_xlabel("output value")
    ax.set_ylabel("expected value")
    if len(x) == 0:
        ax.text(
            0.5,
            0.5,
            "no row has a number on both sides",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        ax.set_yticks([])
        return _png(fig)
    scale, linthresh = axis_scale(np.concatenate([x, y]))
    for axis_set in (ax.set_xscale, ax.set_yscale):
        if scale == "symlog":
            axis_set("symlog", linthresh=linthresh, linscale=2)
        else:
            axis_set(scale)
    if scale != "linear":
        ax.xaxis.set_major_formatter(power_of_ten)
        ax.yaxis.set_major_formatter(power_of_ten)
    if scale == "symlog":
        ax.tick_params(axis="x", labelrotation=45)  # labels crowd around zero otherwise
    size = 12 if len(x) > 1000 else 24
    points = ((passed, _PASS_COLOUR, "pass"), (~passed, _FAIL_COLOUR, "fail"))
    for mask, colour, label in points:  # failures on top
        if mask.any():
            ax.scatter(
                x[mask],
                y[mask],
                s=size,
                alpha=0.6,
                color=colour,
                label=label,
                linewidths=0,
                clip_on=False,
            )  # a point at the float limit stays
    low, high = _limits(np.concatenate([x, y]), scale, linthresh)
    ax.plot([low, high], [low, high], color="black", linewidth=1, label="output = expected")
    if scale == "symlog":  # ticks first: setting ticks widens the limits to show them
        ticks = [t for t in _symlog_ticks(linthresh, max(abs(low), abs(high))) if low <= t <= high]
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_aspect("equal", adjustable="box")
    ax.grid(True, linewidth=0.3, alpha=0.5)
    ax.legend(loc="upper left", frameon=False)
    if scale != "linear":
        ax.text(
            0.99,
            0.01,
            f"{scale} axes",
            ha="right",
            va="bottom",
            fontsize=8,
            color="dimgray",
            transform=ax.transAxes,
        )
    return _png(fig)


def axis_scale(values: np.ndarray) -> tuple[str, float]:
    """``("linear" | "log" | "symlog", linthresh)`` for the finite values shown on both axes.

    Log when all values are positive and span more than two decades; symmetric log when they
    span more than two decades and are not all positive. ``linthresh`` (the half-width of the
    linear part around zero) is a power of ten at most the smallest nonzero magnitude, and at
    least a billionth of the largest, so that a stray 1e-300 does not take up the whole plot.

    >>> axis_scale(np.array([1.0, 5.0])), axis_scale(np.array([0.01, 1e6]))
    (('linear', 0.0), ('log', 0.0))
    >>> axis_scale(np.array([-1e6, 0.0, 0.5]))
    ('symlog', 0.1)
    """
    magnitudes = np.abs(values[np.isfinite(values)])
    nonzero = magnitudes[magnitudes > 0]
    if nonzero.size == 0 or np.log10(nonzero.max()) - np.log10(nonzero.min()) <= 2:
        return "linear", 0.0
    if (values > 0).all():
        return "log", 0.0
    smallest = max(float(nonzero.min()), float(nonzero.max()) * 1e-9)
    return "symlog", float(10.0 ** math.floor(math.log10(smallest)))


def _limits(values: np.ndarray, scale: str, linthresh: float = 0.0) -> tuple[float, float]:
    """Common limits for both axes: the data and a 5% margin of the span as drawn (linear,
    log or symmetric log), never overflowing a float.

    >>> [round(v, 2) for v in _limits(np.array([-17.0, 3.0]), "symlog", 1.0)]
    [-21.29, 3.95]
    """
    low, high = float(values.min()), float(values.max())
    big = float(np.finfo(float).max)
    if scale == "linear":
        span = high - low if math.isfinite(high - low) else big
        pad = span * 0.05 if span > 0 else max(abs(low) * 0.05, 1.0)
        return max(low - pad, -big), min(high + pad, big)
    c = linthresh  # symmetric log: linear within c of zero, logarithmic beyond

    def forward(v: float) -> float:
        return math.log10(v) if scale == "log" else math.copysign(math.log10(1 + abs(v) / c), v)

    def inverse(t: float) -> float:
        if scale == "log":
            return 10.0**t
        return math.copysign(c * (10.0 ** abs(t) - 1), t)

    t_low, t_high = forward(low), forward(high)
    pad = (t_high - t_low) * 0.05 or 0.1
    try:
        return max(inverse(t_low - pad), -big), min(inverse(t_high + pad), big)
    except OverflowError:  # a margin past the float range: the range itself
        return max(min(low, inverse(t_low - pad)) if low > -big else -big, -big), big


def _symlog_ticks(linthresh: float, limit: float) -> list[float]:
    """Zero and about eight decades each side, from ``linthresh`` out to ``limit``."""
    first, last = math.ceil(math.log10(linthresh)), math.floor(math.log10(limit))
    step = max(1, math.ceil((last - first + 1) / 8))
    decades = [10.0**e for e in range(first, last + 1, step)]
    return [-d for d in reversed(decades)] + [0.0] + decades


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float, _position: object = None) -> str:
    """The label of a tick on a log or symlog axis: ``10³``, ``10⁻¹``, ``0``, negative powers
    after matplotlib's minus sign (U+2212); none between powers of ten. Unicode superscripts,
    not matplotlib's mathtext (``$10^{3}$``): they read the same, and building mathtext's parser
    takes a fifth of the time spent drawing both plots.

    >>> power_of_ten(1000.0), power_of_ten(0.1), power_of_ten(0.0), power_of_ten(20.0)
    ('10³', '10⁻¹', '0', '')
    >>> power_of_ten(-10.0) == "\N{MINUS SIGN}10¹"
    True
    """
    if value == 0:
        return "0"
    exponent = round(math.log10(abs(value)))
    if not math.isclose(abs(value), 10.0**exponent):
        return ""
    sign = "\N{MINUS SIGN}" if value < 0 else ""
    return f"{sign}10{str(exponent).translate(_SUPERSCRIPT)}"


def _figure(width: float, height: float, panels: int = 1) -> Any:
    """A figure of ``panels`` axes side by side on one y scale (``fig.axes``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    fig.subplots(1, panels, sharey=True, squeeze=False)
    return fig


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
