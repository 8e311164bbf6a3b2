"""A report of a scored table, built batch by batch in bounded memory: plots, ``summary.md``
and ``report.html``.

`ReportBuilder` collects, whatever the number of rows: pass/fail score counts on fixed bins, a
uniform sample of (output value, expected value) pairs for the scatter plot, the counts of
failing and unparseable rows, the ``worst_k`` failing rows with the lowest scores and the first
``worst_k`` unparseable rows. Feeding a table in batches gives the same report as feeding it at
once. The plots are drawn by `numdiff_component.report.plots`, the text is rendered from
templates by `numdiff_component.report.render` (every user string escaped for its medium).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.aggregate import BOUNDS, headline, interval, lowest
from numdiff_component.options import Options
from numdiff_component.process import ForkedCall
from numdiff_component.report.group_plots import draw_group_pass_rates, png_size
from numdiff_component.report.plots import (
    SCORE_EDGES,
    draw_histogram,
    draw_scatter,
    histogram_counts,
    plural,
)
from numdiff_component.report.render import cells, image, kind, number, render, text
from numdiff_component.scoring import UNPARSEABLE
from numdiff_component.slices.groups import summary_lines as group_lines
from numdiff_component.task.config import Scoring
from numdiff_component.task.results import (
    GROUPS_PNG,
    HISTOGRAM_PNG,
    REPORT_HTML,
    SCATTER_PNG,
    SUMMARY_MD,
)

__all__ = ["ReportBuilder"]

_ROW = "row"  # position of a row in the whole table, counted from 1 over all batches
_INTERVAL_NOTE = (
    "95% intervals: of `mean_score`, Student's t on `mean_score_stderr` (the sample standard "
    "deviation of the scores / √n), clipped to [0, 1]; of `pass_rate`, Wilson's score interval. "
    "`mae` and `median_abs_error` are over the rows with a number on both sides; "
    "`no_answer_rate` is the share of outputs with no number."
)


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
        title: str = "",
        sample_size: int = 5_000,
        worst_k: int = 10,
        seed: int = 0,
    ) -> None:
        if sample_size < 1 or worst_k < 1:
            raise ValueError("sample_size and worst_k must be at least 1")
        self.scoring = Scoring(
            options=options, output_col=output_col, expected_col=expected_col, id_col=id_col
        )
        self.options = options
        self.output_col = output_col
        self.expected_col = expected_col
        self.id_col = id_col
        self.title = title  # names the input (and run) on the plots, to tell runs apart
        self.worst_k = worst_k
        self.sample_size = sample_size
        self.edges = SCORE_EDGES
        self.passed_counts = np.zeros(len(SCORE_EDGES) - 1, dtype=np.int64)
        self.failed_counts = np.zeros(len(SCORE_EDGES) - 1, dtype=np.int64)
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
        self._in_child: tuple[tuple[Any, ...], ForkedCall] | None = None
        self.groups: pd.DataFrame | None = None  # with ``--by``, set before writing (SPEC §3.1)

    @classmethod
    def of(cls, scoring: Scoring, title: str | None = None) -> ReportBuilder:
        """A builder for rows scored as ``scoring`` says; ``title`` names them on the plots."""
        return cls(
            scoring.options,
            scoring.output_col,
            scoring.expected_col,
            scoring.id_col,
            title=title or "",
        )

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
        passed_counts, failed_counts, n_unparseable = histogram_counts(scores, passed, parsed)
        self.n_unparseable += n_unparseable
        self.passed_counts += passed_counts
        self.failed_counts += failed_counts

        with_numbers = np.flatnonzero(parsed)
        drawn = with_numbers[lowest(keys[with_numbers], self.sample_size)]
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
        worst = failing[lowest(scores[failing], self.worst_k)]
        self._failing = _smallest(
            self._failing, self._rows(batch, worst, first_row), ["score", _ROW], self.worst_k
        )
        if len(self._unparseable) < self.worst_k:
            first = np.flatnonzero(~parsed)[: self.worst_k - len(self._unparseable)]
            self._unparseable = _smallest(
                self._unparseable, self._rows(batch, first, first_row), [_ROW], self.worst_k
            )

    def _rows(self, batch: pd.DataFrame, index: np.ndarray, first_row: int) -> pd.DataFrame:
        """The columns shown for a row in the report, for the rows of ``batch`` at ``index``."""
        picked = batch.iloc[index]
        columns: dict[str, Any] = {_ROW: index + first_row + 1}  # as a person counts
        if self.id_col is not None:
            columns["id"] = picked[self.id_col].to_numpy(dtype=object)
        for name, column in (("output", self.output_col), ("expected", self.expected_col)):
            if column in picked.columns:
                columns[name] = picked[column].to_numpy(dtype=object)
                for end in ("start", "end"):  # where its number was read (SPEC §1.4)
                    if f"{name}_{end}" in picked.columns:
                        columns[f"{name}_{end}"] = picked[f"{name}_{end}"].array
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
        made = self._in_child
        if made is not None and made[0] == (aggregates, source, notes):
            files = made[1].result()
        else:
            files = self.files(aggregates, source, notes)
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

    def files(
        self, aggregates: Mapping[str, float], source: str, notes: Sequence[str] = ()
    ) -> dict[str, bytes]:
        """What `write` writes: each file's name and content, in that order."""
        histogram, scatter = self.plots(source)
        groups = {}
        if self.groups is not None:
            groups[GROUPS_PNG] = draw_group_pass_rates(self.groups, self.title or source)
        html = self.html(aggregates, source, notes, histogram, scatter, groups.get(GROUPS_PNG, b""))
        return {
            HISTOGRAM_PNG: histogram,
            SCATTER_PNG: scatter,
            SUMMARY_MD: self.summary(aggregates, source, notes).encode("utf-8"),
            REPORT_HTML: html.encode("utf-8"),
            **groups,
        }

    @contextlib.contextmanager
    def render_in_child(
        self, aggregates: Mapping[str, float], source: str, notes: Sequence[str] = ()
    ) -> Iterator[None]:
        """Within the block, a child process makes the report's `files` while this one goes on
        (`ForkedCall`), and `write` with the same arguments takes them from it. Add no row within
        the block: the child has the rows added before it. On the way out the child is gone."""
        with ForkedCall(lambda: self.files(aggregates, source, notes)) as child:
            self._in_child = ((aggregates, source, notes), child)
            try:
                yield
            finally:
                self._in_child = None

    def plots(self, source: str) -> tuple[bytes, bytes]:
        """The score histogram and the output-vs-expected scatter as PNG, titled with the
        builder's title, else ``source``."""
        title = self.title or text(source, None)
        # Axes near the float limits overflow inside matplotlib; the picture is right regardless.
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            histogram = draw_histogram(
                self.passed_counts,
                self.failed_counts,
                self.n_unparseable,
                self.options.threshold,
                title,
            )
            return histogram, draw_scatter(self.sample(), self.n_rows, self.n_unparseable, title)

    def _context(
        self, aggregates: Mapping[str, float], source: str, notes: Sequence[str]
    ) -> dict[str, Any]:
        """What both reports show, as text (not yet escaped)."""
        return {
            "headline": headline(self._totals(aggregates)),
            "notes": [text(note, None) for note in notes],
            "source": text(source, None),
            "counts": self._counts(),
            "aggregates": self._aggregates(aggregates),
            "interval_note": _INTERVAL_NOTE,
            "options": self._options(),
            "failing_title": self._failing_title(),
            "failing": cells(self.failing()),
            "no_failure": self._no_failure(),
            "unparseable_title": self._unparseable_title(),
            "unparseable": cells(self.unparseable()),
            "groups": [] if self.groups is None else group_lines(self.groups),
        }

    def summary(
        self, aggregates: Mapping[str, float], source: str, notes: Sequence[str] = ()
    ) -> str:
        """The Markdown summary: the headline, notes and input, the failing rows and the
        unparseable rows, where the plots are, the aggregates with their intervals, the
        options."""
        names = {"report": REPORT_HTML, "histogram": HISTOGRAM_PNG, "scatter": SCATTER_PNG}
        return render("summary.md.j2", names=names, **self._context(aggregates, source, notes))

    def html(
        self,
        aggregates: Mapping[str, float],
        source: str,
        notes: Sequence[str] = (),
        histogram: bytes = b"",
        scatter: bytes = b"",
        groups: bytes = b"",
    ) -> str:
        """The same content as `summary` as one self-contained HTML page: inline CSS, the PNG
        plots embedded as data URIs, no script and no external URL."""
        plots = [
            {"kind": k, "alt": alt, "width": w, "height": h, "src": image(png)}
            for png, k, alt, (w, h) in (
                (histogram, "histogram", "Score histogram", (800, 450)),
                (scatter, "scatter", "Output vs expected", (650, 650)),
                (groups, "groups", "Pass rate per group", png_size(groups)),
            )
            if png
        ]
        context = self._context(aggregates, source, notes)
        kinds = {h: kind(h) for h in [*context["failing"][0], *context["unparseable"][0]]}
        kinds |= {h: kind(h) for h in ("aggregate", "value", "95% interval", "option", "setting")}
        return render("report.html.j2", plots=plots, kinds=kinds, **context)

    def _totals(self, aggregates: Mapping[str, float]) -> Mapping[str, float]:
        """``aggregates``, with the row and pass counts of the rows fed where it lacks them."""
        rate = self.n_passed / self.n_rows if self.n_rows else 0.0
        return {"n_rows": self.n_rows, "pass_rate": rate, **aggregates}

    def _counts(self) -> str:
        return f"{plural(self.n_rows, 'row', count=True)} ({self.n_unparseable:,} unparseable)"

    def _aggregates(self, aggregates: Mapping[str, float]) -> list[list[str]]:
        """Each aggregate with its 95% interval beside it (the bounds are not rows of their own)."""
        rows = []
        for name, value in aggregates.items():
            if name.endswith(BOUNDS):
                continue
            bounds = interval(aggregates, name)
            shown = (
                "" if bounds is None else f"[{number(name, bounds[0])}, {number(name, bounds[1])}]"
            )
            rows.append([str(name), number(name, value), shown])
        return rows

    def _options(self) -> list[list[str]]:
        """Each option and column as the run's params say it (``true``, ``answer``)."""
        return [[name, text(value, None)] for name, value in self.scoring.params().items()]

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


def _smallest(kept: pd.DataFrame, new: pd.DataFrame, by: list[str], k: int) -> pd.DataFrame:
    """The ``k`` rows of ``kept`` and ``new`` together with the smallest ``by`` values."""
    if new.empty:
        return kept
    both = new if kept.empty else pd.concat([kept, new], ignore_index=True)
    return both.sort_values(by, kind="stable").head(k).reset_index(drop=True)
