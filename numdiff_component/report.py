"""Plots, a Markdown summary and an HTML report of a scored table, built in bounded memory.

`ReportBuilder` keeps, whatever the number of rows: pass/fail score histograms on fixed bins, a
uniform sample of (output value, expected value) pairs for the scatter plot, the counts of
failing and unparseable rows, the ``worst_k`` failing rows with the lowest scores and the first
``worst_k`` unparseable rows. Feeding a table in batches gives the same report as feeding it at
once.

Cells of the table are untrusted text. Every user-derived string (cells, ids, column names, the
source, notes) is shown as one line with control characters made visible, then escaped for its
medium: HTML-escaped in ``report.html``; in ``summary.md`` made inert, so that no HTML tag,
entity, emphasis, code span, link, image or autolink can come out of it.

Plots are drawn on a `matplotlib.figure.Figure` with the Agg canvas: no pyplot, no global
backend switch, no display needed. matplotlib is imported only when a report is written.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.aggregate import headline, pass_rate_stderr
from numdiff_component.errors import visible
from numdiff_component.options import Options
from numdiff_component.request import Scoring
from numdiff_component.scoring import UNPARSEABLE

HISTOGRAM_PNG = "score_histogram.png"
SCATTER_PNG = "output_vs_expected.png"
SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"

_ROW = "row"  # position of a row in the whole table, counted over all batches
_CELL_CHARS = 60
_PASS_COLOUR, _FAIL_COLOUR, _UNPARSEABLE_COLOUR = "#2b8cbe", "#e34a33", "#969696"


class ReportBuilder:
    """Collect what the report needs from scored batches, then write the plots and reports.

    ``add`` takes frames from `score_frame` (input columns and result columns); ``write``
    draws ``score_histogram.png`` and ``output_vs_expected.png`` and writes ``summary.md`` and
    ``report.html`` (the same content, with the plots embedded).

    >>> from numdiff_component import score_frame
    >>> builder = ReportBuilder(Options(), id_col="id")
    >>> df = pd.DataFrame({"id": ["a", "b"], "output": ["3", "n/a"], "expected": ["4", "1"]})
    >>> builder.add(score_frame(df))
    >>> builder.n_rows, builder.n_failed, builder.n_unparseable, builder.failing()["id"].tolist()
    (2, 1, 1, ['a'])
    """

    def __init__(
        self,
        options: Options,
        output_col: str = "output",
        expected_col: str = "expected",
        id_col: str | None = None,
        *,
        bins: int = 100,
        sample_size: int = 5_000,
        worst_k: int = 10,
        seed: int = 0,
    ) -> None:
        if bins < 1 or sample_size < 1 or worst_k < 1:
            raise ValueError("bins, sample_size and worst_k must be at least 1")
        self.options = options
        self.output_col = output_col
        self.expected_col = expected_col
        self.id_col = id_col
        self.worst_k = worst_k
        self.sample_size = sample_size
        self.edges = np.linspace(0.0, 1.0, bins + 1)
        self.passed_counts = np.zeros(bins, dtype=np.int64)
        self.failed_counts = np.zeros(bins, dtype=np.int64)
        self.n_rows = 0
        self.n_passed = 0
        self.n_failed = 0  # rows with numbers that failed; unparseable rows are counted apart
        self.n_unparseable = 0
        self._rng = np.random.default_rng(seed)
        # Bottom-k sample: each row with numbers gets a uniform key; the rows with the smallest
        # keys are a uniform sample, and the smallest keys of the batches are those of the whole.
        self._sample = pd.DataFrame(
            {"key": [], "output_value": [], "expected_value": [], "passed": []}
        ).astype({"key": float, "output_value": float, "expected_value": float, "passed": bool})
        self._failing = pd.DataFrame()
        self._unparseable = pd.DataFrame()

    @classmethod
    def of(cls, scoring: Scoring, title: str | None = None) -> ReportBuilder:
        """A builder for rows scored as ``scoring`` says."""
        return cls(scoring.options, scoring.output_col, scoring.expected_col, scoring.id_col)

    def add(self, batch: pd.DataFrame) -> None:
        """Take in one batch of scored rows (a frame from `score_frame`)."""
        n = len(batch)
        if n == 0:
            return
        scores = np.asarray(batch["score"], dtype=float)
        passed = np.asarray(batch["passed"], dtype=bool)
        parsed = np.asarray(batch["label"], dtype=object) != UNPARSEABLE
        failed = parsed & ~passed
        keys = self._rng.random(n)  # one draw per row, so the stream does not depend on batching
        first_row = self.n_rows
        self.n_rows += n
        self.n_passed += int(passed.sum())
        self.n_failed += int(failed.sum())
        self.n_unparseable += int((~parsed).sum())
        self.passed_counts += np.histogram(scores[passed], bins=self.edges)[0]
        self.failed_counts += np.histogram(scores[failed], bins=self.edges)[0]

        with_numbers = np.flatnonzero(parsed)
        drawn = with_numbers[_lowest(keys[with_numbers], self.sample_size)]
        candidates = pd.DataFrame(
            {
                "key": keys[drawn],
                "output_value": np.asarray(batch["output_value"], dtype=float)[drawn],
                "expected_value": np.asarray(batch["expected_value"], dtype=float)[drawn],
                "passed": passed[drawn],
            }
        )
        self._sample = _smallest(self._sample, candidates, ["key"], self.sample_size)
        failing = np.flatnonzero(failed)
        lowest = failing[_lowest(scores[failing], self.worst_k)]
        self._failing = _smallest(
            self._failing, self._rows(batch, lowest, first_row), ["score", _ROW], self.worst_k
        )
        if len(self._unparseable) < self.worst_k:
            first = np.flatnonzero(~parsed)[: self.worst_k - len(self._unparseable)]
            self._unparseable = _smallest(
                self._unparseable, self._rows(batch, first, first_row), [_ROW], self.worst_k
            )

    def _rows(self, batch: pd.DataFrame, index: np.ndarray, first_row: int) -> pd.DataFrame:
        """The columns shown for a row in the report, for the rows of ``batch`` at ``index``."""
        picked = batch.iloc[index]
        columns: dict[str, Any] = {_ROW: index + first_row}
        if self.id_col is not None:
            columns["id"] = picked[self.id_col].to_numpy(dtype=object)
        for name, column in (("output", self.output_col), ("expected", self.expected_col)):
            if column in picked.columns:
                columns[name] = picked[column].to_numpy(dtype=object)
        for name in ("output_value", "expected_value", "score", "label"):
            columns[name] = picked[name].to_numpy()
        return pd.DataFrame(columns)

    def failing(self) -> pd.DataFrame:
        """The failing rows (with numbers) that scored lowest, lowest first (ties: earlier row
        first); the unparseable rows are in `unparseable`."""
        return self._failing.reset_index(drop=True)

    def unparseable(self) -> pd.DataFrame:
        """The first unparseable rows, in table order."""
        return self._unparseable.reset_index(drop=True)

    def sample(self) -> pd.DataFrame:
        """The uniform sample of rows with numbers drawn for the scatter plot."""
        return self._sample.drop(columns="key").reset_index(drop=True)

    def write(
        self,
        folder: Path,
        aggregates: Mapping[str, float],
        source: str,
        notes: Sequence[str] = (),
    ) -> list[Path]:
        """Write the two plots, ``summary.md`` and ``report.html`` into ``folder``; the paths.

        ``notes`` are one-line messages shown under the headline of both reports. On an error
        (a full disk) no file of the report is left in ``folder`` and the error is raised.
        """
        # Axes near the float limits overflow inside matplotlib; the picture is right regardless.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            histogram, scatter = self._draw_histogram(), self._draw_scatter()
        files = {
            HISTOGRAM_PNG: histogram,
            SCATTER_PNG: scatter,
            SUMMARY_MD: self.summary(aggregates, source, notes).encode("utf-8"),
            REPORT_HTML: self.html(aggregates, source, notes, histogram, scatter).encode("utf-8"),
        }
        folder.mkdir(parents=True, exist_ok=True)
        try:
            for name, data in files.items():
                (folder / name).write_bytes(data)
        except BaseException:
            for name in files:  # a stale file of an earlier run would not match the others
                with contextlib.suppress(OSError):
                    (folder / name).unlink(missing_ok=True)
            raise
        return [folder / name for name in files]

    def _draw_histogram(self) -> bytes:
        fig, ax = _figure(8.0, 4.5)
        width = np.diff(self.edges)
        left = self.edges[:-1]
        bars = (
            (left, self.failed_counts, width, 0, _FAIL_COLOUR, "fail"),
            (left, self.passed_counts, width, self.failed_counts, _PASS_COLOUR, "pass"),
            (
                left[:1],
                [self.n_unparseable],
                width[:1],
                self.failed_counts[:1],
                _UNPARSEABLE_COLOUR,
                "unparseable (score 0)",
            ),
        )
        for x, height, bar_width, bottom, colour, label in bars:
            if np.any(np.asarray(height) > 0):
                ax.bar(x, height, bar_width, bottom=bottom, align="edge", color=colour, label=label)
        threshold = self.options.threshold
        ax.axvline(
            threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold:g}"
        )
        heights = self.passed_counts + self.failed_counts
        heights[0] += self.n_unparseable
        nonzero = heights[heights > 0]
        if nonzero.size and nonzero.max() / nonzero.min() > 100:
            ax.set_yscale("log")  # a tall bar at 1.0 would hide every failure otherwise
            ax.set_ylabel("rows (log scale)")
        else:
            ax.yaxis.get_major_locator().set_params(integer=True)
            ax.set_ylabel("rows")
        ax.set_xlim(0, 1)
        ax.set_xlabel("score (1 = exact)")
        rate = self.n_passed / self.n_rows if self.n_rows else math.nan
        ax.set_title(f"Scores of {self.n_rows:,} rows: {self.n_passed:,} passed ({rate:.1%})")
        ax.legend(loc="upper left", frameon=False)
        return _png(fig)

    def _draw_scatter(self) -> bytes:
        fig, ax = _figure(6.5, 6.5)
        sample = self.sample()
        x = sample["output_value"].to_numpy(dtype=float)
        y = sample["expected_value"].to_numpy(dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        x, y, passed = x[ok], y[ok], sample["passed"].to_numpy(dtype=bool)[ok]
        n_parsed = self.n_rows - self.n_unparseable
        shown = f"{len(x):,} of {n_parsed:,}" if len(x) < n_parsed else f"{len(x):,}"
        ax.set_title(
            f"Output vs expected: {shown} rows with numbers\n"
            f"{self.n_unparseable:,} unparseable rows not shown",
            fontsize=11,
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
        low, high = _limits(np.concatenate([x, y]), scale)
        ax.plot([low, high], [low, high], color="black", linewidth=1, label="output = expected")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        if scale == "symlog":
            ticks = _symlog_ticks(linthresh, max(abs(low), abs(high)))
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
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

    def summary(
        self, aggregates: Mapping[str, float], source: str, notes: Sequence[str] = ()
    ) -> str:
        """The Markdown summary: headline, notes, input, aggregates with standard errors,
        options, where the plots are, the failing rows and the unparseable rows."""
        lines = [
            "# Numeric diff report",
            "",
            f"**{headline(self._totals(aggregates))}**",
            "",
            *(f"- {_markdown(_text(note, None))}" for note in notes),
            *([""] if notes else []),
            f"Input: {_markdown(_text(source, None))}, {self._counts()}.",
            "",
            "## Aggregates",
            "",
            *_markdown_table(
                ["aggregate", "value", "standard error"], self._aggregates(aggregates)
            ),
            "",
            _STDERR_NOTE,
            "",
            "## Options",
            "",
            *_markdown_table(["option", "setting"], self._options()),
            "",
            "## Plots",
            "",
            f"The plots are in `{REPORT_HTML}` (with everything in this summary), "
            f"`{HISTOGRAM_PNG}` and `{SCATTER_PNG}`.",
            "",
            f"## {self._failing_title()}",
            "",
            *_markdown_table(*_cells(self.failing()), empty=self._no_failure()),
            "",
            f"## {self._unparseable_title()}",
            "",
            *_markdown_table(*_cells(self.unparseable()), empty="None."),
        ]
        return "\n".join(lines) + "\n"

    def html(
        self,
        aggregates: Mapping[str, float],
        source: str,
        notes: Sequence[str] = (),
        histogram: bytes = b"",
        scatter: bytes = b"",
    ) -> str:
        """The same content as `summary` as one self-contained HTML page: inline CSS, the PNG
        plots embedded as data URIs, no script and no external URL."""
        esc = html.escape
        plots = [
            _image(png, kind, alt, size)
            for png, kind, alt, size in (
                (histogram, "histogram", "Score histogram", (800, 450)),
                (scatter, "scatter", "Output vs expected", (650, 650)),
            )
            if png
        ]
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            "<title>Numeric diff report</title>",
            f"<style>{_CSS}</style>",
            "</head><body>",
            "<h1>Numeric diff report</h1>",
            f'<p class="headline">{esc(headline(self._totals(aggregates)))}</p>',
            *(f'<p class="note">{esc(_text(note, None))}</p>' for note in notes),
            f"<p>Input: <code>{esc(_text(source, None))}</code>, {esc(self._counts())}.</p>",
            "<h2>Aggregates</h2>",
            _html_table(["aggregate", "value", "standard error"], self._aggregates(aggregates)),
            f'<p class="muted">{esc(_STDERR_NOTE.replace("`", ""))}</p>',
            "<h2>Options</h2>",
            _html_table(["option", "setting"], self._options()),
            "<h2>Plots</h2>",
            f'<div class="plots">{"".join(plots)}</div>',
            f"<h2>{esc(self._failing_title())}</h2>",
            _html_table(*_cells(self.failing()), empty=self._no_failure()),
            f"<h2>{esc(self._unparseable_title())}</h2>",
            _html_table(*_cells(self.unparseable()), empty="None."),
            "</body></html>",
        ]
        return "\n".join(parts) + "\n"

    def _totals(self, aggregates: Mapping[str, float]) -> Mapping[str, float]:
        """``aggregates``, with the row and pass counts of the rows fed where it lacks them."""
        rate = self.n_passed / self.n_rows if self.n_rows else 0.0
        return {"n_rows": self.n_rows, "pass_rate": rate, **aggregates}

    def _counts(self) -> str:
        return f"{self.n_rows:,} rows ({self.n_unparseable:,} unparseable)"

    def _aggregates(self, aggregates: Mapping[str, float]) -> list[list[str]]:
        pass_rate = aggregates.get("pass_rate", math.nan)
        stderrs = {
            "mean_score": aggregates.get("mean_score_stderr", math.nan),
            "pass_rate": pass_rate_stderr(pass_rate, aggregates.get("n_rows", self.n_rows)),
        }
        return [
            [
                str(name),
                _number(name, value),
                _number(name, stderrs[name]) if name in stderrs else "",
            ]
            for name, value in aggregates.items()
            if name != "mean_score_stderr"
        ]

    def _options(self) -> list[list[str]]:
        columns = {
            "output_col": self.output_col,
            "expected_col": self.expected_col,
            "id_col": self.id_col,
        }
        return [
            [name, repr(value)] for name, value in {**self.options.as_dict(), **columns}.items()
        ]

    def _failing_title(self) -> str:
        if self.n_failed == 0:
            return "Failing rows"
        return (
            f"Failing rows ({len(self._failing):,} shown of {self.n_failed:,}, lowest scores first)"
        )

    def _no_failure(self) -> str:
        if self.n_unparseable:
            return "No row with a number on both sides failed."
        return "No row failed."

    def _unparseable_title(self) -> str:
        shown = min(self.worst_k, self.n_unparseable)
        return f"Unparseable rows ({shown:,} shown of {self.n_unparseable:,})"


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


def _limits(values: np.ndarray, scale: str) -> tuple[float, float]:
    """Common limits for both axes with a margin, never overflowing a float."""
    low, high = float(values.min()), float(values.max())
    big = float(np.finfo(float).max)
    if scale == "linear":
        span = high - low if math.isfinite(high - low) else big
        pad = span * 0.05 if span > 0 else max(abs(low) * 0.05, 1.0)
        return max(low - pad, -big), min(high + pad, big)
    # Log and symmetric log: widen the outer ends by a factor (within the float range).
    low = low / 2 if low > 0 else max(low * 2, -big)
    high = min(high * 2, big) if high > 0 else high / 2
    return low, high


def _symlog_ticks(linthresh: float, limit: float) -> list[float]:
    """Zero and about eight decades each side, from ``linthresh`` out to ``limit``."""
    first, last = math.ceil(math.log10(linthresh)), math.floor(math.log10(limit))
    step = max(1, math.ceil((last - first + 1) / 8))
    decades = [10.0**e for e in range(first, last + 1, step)]
    return [-d for d in reversed(decades)] + [0.0] + decades


def _lowest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest values, by value then position, in linear time."""
    if len(values) <= k:
        return np.argsort(values, kind="stable")
    kth = np.partition(values, k - 1)[k - 1]
    below = np.flatnonzero(values < kth)
    index = np.concatenate([below, np.flatnonzero(values == kth)[: k - len(below)]])
    return index[np.argsort(values[index], kind="stable")]


def _smallest(kept: pd.DataFrame, new: pd.DataFrame, by: list[str], k: int) -> pd.DataFrame:
    """The ``k`` rows of ``kept`` and ``new`` together with the smallest ``by`` values."""
    if new.empty:
        return kept
    both = new if kept.empty else pd.concat([kept, new], ignore_index=True)
    return both.sort_values(by, kind="stable").head(k).reset_index(drop=True)


def _figure(width: float, height: float) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _number(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if name.startswith("n_"):
        return f"{int(value):,}"
    return f"{float(value):.6g}"


_STDERR_NOTE = (
    "Standard error of `mean_score`: sample standard deviation of the scores / √n; of "
    "`pass_rate`: the same for the pass/fail indicator, √(p(1-p)/(n-1))."
)


def _text(value: Any, limit: int | None = _CELL_CHARS) -> str:
    """``value`` as one line of visible text (no control character), cut to ``limit``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    text = visible(str(value))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _cells(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of ``frame`` as text."""
    header = [str(c).replace("_", " ") for c in frame.columns]
    return header, [[_text(v) for v in row] for row in frame.itertuples(index=False)]


# Backslash escapes for what makes emphasis, strikethrough, code, links, images and table cells,
# and for the ":" of "http://" or "javascript:" and a "." not between digits ("www.example.com"),
# so that no autolink is recognised. "&", "<", ">" and the "@" of an e-mail become entities:
# CommonMark renderers and showdown (which shows "\@" as is) both show them as the character.
_MARKDOWN = re.compile(r"[\\`*_~\[\]()!|:]|(?<![0-9])\.|\.(?![0-9])")


def _markdown(text: str) -> str:
    """``text`` (one line) as inert Markdown: it shows as itself and makes no markup."""
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(), text)
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    )


def _markdown_table(header: list[str], rows: list[list[str]], empty: str = "") -> list[str]:
    if not rows:
        return [empty]
    lines = ["| " + " | ".join(map(_markdown, header)) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(map(_markdown, row)) + " |" for row in rows]
    return lines


_NUMERIC = {_ROW, "output value", "expected value", "score", "value", "standard error"}
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
       max-width: 1100px; margin: 24px auto; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 16px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
.headline { font-size: 19px; font-weight: 600; margin: 6px 0 10px; }
.note { margin: 4px 0; padding: 6px 10px; background: #fff8c5; border-left: 3px solid #d4a72c; }
.muted { color: #57606a; font-size: 12px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top;
         font-size: 13px; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text, code { font-family: ui-monospace, Menlo, Consolas, monospace; overflow-wrap: break-word; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.plots img { min-width: 0; height: auto; }
/* Side by side in proportion to their sizes while both fit at 60%, else one per line. */
img.histogram { flex: 800 1 480px; max-width: 800px; }
img.scatter { flex: 650 1 390px; max-width: 650px; }
"""


def _html_table(header: list[str], rows: list[list[str]], empty: str = "") -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    kinds = [
        "num" if h in _NUMERIC else "text" if h in ("id", "output", "expected") else ""
        for h in header
    ]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{kind}">{html.escape(cell)}</td>'
            if kind
            else f"<td>{html.escape(cell)}</td>"
            for kind, cell in zip(kinds, row, strict=True)
        )
        + "</tr>\n"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def _image(png: bytes, kind: str, alt: str, size: tuple[int, int]) -> str:
    data = base64.b64encode(png).decode("ascii")
    width, height = size
    return (
        f'<img class="{kind}" alt="{alt}" width="{width}" height="{height}" '
        f'src="data:image/png;base64,{data}">'
    )
