"""What ``numdiff score`` prints: the aggregates as a table (`summary_lines`), the progress on
one terminal line (`Progress`) and the summary of a finished job (`print_outcome`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from numdiff_component.job.run import JobOutcome


def summary_lines(aggregates: Mapping[str, float], threshold: float) -> list[str]:
    """The aggregates as an aligned table, each with its standard error where one exists."""
    from numdiff_component.aggregate import pass_rate_stderr

    n = aggregates["n_rows"]
    rate = aggregates["pass_rate"]
    rows = [
        ("mean_score", f"{aggregates['mean_score']:.4f}", aggregates["mean_score_stderr"], ""),
        ("pass_rate", f"{rate:.4f}", pass_rate_stderr(rate, n), f"score >= {threshold:g}"),
        (
            "mae",
            "n/a" if math.isnan(aggregates["mae"]) else f"{aggregates['mae']:.6g}",
            math.nan,
            "",  # when inf, a note says what MLflow holds instead (job.INFINITE_MAE)
        ),
        ("rows", f"{int(n):,}", math.nan, ""),
        ("unparseable", f"{int(aggregates['n_unparseable']):,}", math.nan, "no number on a side"),
    ]
    if "n_unit_mismatch" in aggregates:  # units on (SPEC §2.2)
        rows += [
            ("mismatched", f"{int(aggregates['n_unit_mismatch']):,}", math.nan, "unit_mismatch"),
            ("unit missing", f"{int(aggregates['n_unit_missing']):,}", math.nan, "unit_missing"),
        ]
    lines = [f"  {'':<12} {'value':>10}  {'std. error':>10}"]
    for name, value, stderr, note in rows:
        err = "" if math.isnan(stderr) else f"{stderr:.4f}"
        lines.append(f"  {name:<12} {value:>10}  {err:>10}  {note}".rstrip())
    return lines


class Progress:
    """Rows scored and rows per second on one terminal line, redrawn at most 5 times a second."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.rows = 0

    def __call__(self, rows: int) -> None:
        self.rows = rows
        now = time.monotonic()
        if now - self.last >= 0.2:
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.rows / max(now - self.start, 1e-9)
        click.echo(f"\rscored {self.rows:,} rows ({rate:,.0f} rows/s)", nl=False, err=True)

    def done(self) -> None:
        self._draw(time.monotonic())
        click.echo(err=True)


def print_outcome(outcome: JobOutcome) -> None:
    """The summary of a finished job on stdout: its source, aggregates, notes, run and results.
    Paths are the user's text: an escape sequence or U+202E is shown, not obeyed."""
    from numdiff_component.errors import visible

    click.echo(f"numeric diff: {visible(outcome.evaluation.source)}")
    evaluation = outcome.evaluation
    threshold = evaluation.scoring.options.threshold
    click.echo("\n".join(summary_lines(evaluation.aggregates, threshold)))
    for note in outcome.evaluation.notes:
        click.echo(f"  note: {note}")
    if evaluation.vs_baseline is not None:
        click.echo(f"  {'baseline':<12} {visible(evaluation.vs_baseline.message)}")
    if outcome.run_id:
        click.echo(f"  {'run':<12} {outcome.run_id}")
        click.echo(f"  {'artifacts':<12} runs:/{outcome.run_id}/numeric_diff/")
    click.echo(f"  {'results':<12} {visible(str(outcome.results))}")
