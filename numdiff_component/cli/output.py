"""What ``numdiff score`` prints: the aggregates as a table (`summary_lines`), the progress on
one terminal line (`Progress`) and the summary of a finished job (`print_outcome`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from numdiff_component.job.run import JobOutcome


def summary_lines(
    aggregates: Mapping[str, float], threshold: float, threshold_col: str | None = None
) -> list[str]:
    """The aggregates as an aligned table, each with its 95% interval where one exists."""
    from numdiff_component.aggregate import interval

    def number(name: str, digits: str = ".4f") -> str:
        value = aggregates[name]
        return "n/a" if math.isnan(value) else f"{value:{digits}}"

    rows = [
        ("mean_score", number("mean_score"), "mean_score", ""),
        ("pass_rate", number("pass_rate"), "pass_rate", f"score >= {threshold:g}"),
        # when inf, a note says what MLflow holds instead (job.INFINITE_MAE)
        ("mae", number("mae", ".6g"), "", f"median {number('median_abs_error', '.6g')}"),
        ("no answer", number("no_answer_rate"), "", "no_answer_rate: outputs with no number"),
        ("rows", f"{int(aggregates['n_rows']):,}", "", ""),
        ("unparseable", f"{int(aggregates['n_unparseable']):,}", "", "no number on a side"),
    ]
    if "n_unit_mismatch" in aggregates:  # units on (SPEC §2.2)
        rows += [
            ("mismatched", f"{int(aggregates['n_unit_mismatch']):,}", "", "unit_mismatch"),
            ("unit missing", f"{int(aggregates['n_unit_missing']):,}", "", "unit_missing"),
        ]
    if threshold_col:  # SPEC §3.2
        held = f"score >= each row's threshold ({threshold_col}; empty: {threshold:g})"
        rows[1] = (*rows[1][:3], held)
    if "n_items" in aggregates:  # samples per item (SPEC §3.3)
        rows += _item_rows(aggregates, number)
    lines = [f"  {'':<12} {'value':>10}  95% interval"]
    for name, value, of, note in rows:
        bounds = interval(aggregates, of) if of else None
        shown = "" if bounds is None else f"[{bounds[0]:.4f}, {bounds[1]:.4f}]"
        lines.append(f"  {name:<12} {value:>10}  {shown:<16}  {note}".rstrip())
    return lines


def _item_rows(aggregates: Mapping[str, float], number: Any) -> list[tuple[str, str, str, str]]:
    """The item aggregates' rows: mean@k, maj@k, each pass@k, agreement, items."""
    rows = [
        ("mean@k", number("mean_at_k"), "mean_at_k", "mean score of an item's samples"),
        ("maj@k", number("maj_at_k"), "maj_at_k", "items whose vote passed"),
    ]
    for name in aggregates:
        k = name.removeprefix("pass_at_")
        if k.isdigit():
            n = int(aggregates[name + "_n_items"])
            counted = f"{n:,} item{'' if n == 1 else 's'}"
            rows.append((f"pass@{k}", number(name), name, f"unbiased estimator, {counted}"))
    rows.append(("agreement", number("agreement"), "", "share of samples in the winning cluster"))
    rows.append(("items", f"{int(aggregates['n_items']):,}", "", ""))
    return rows


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
    threshold_col = evaluation.scoring.threshold_col
    click.echo("\n".join(summary_lines(evaluation.aggregates, threshold, threshold_col)))
    if evaluation.groups is not None:
        from numdiff_component.slices.groups import summary_lines as group_lines

        for line in group_lines(evaluation.groups):
            click.echo(f"  {visible(line)}")
    for note in outcome.evaluation.notes:
        click.echo(f"  note: {note}")
    if evaluation.vs_baseline is not None:
        click.echo(f"  {'baseline':<12} {visible(evaluation.vs_baseline.message)}")
    if outcome.run_id:
        click.echo(f"  {'run':<12} {outcome.run_id}")
        click.echo(f"  {'artifacts':<12} runs:/{outcome.run_id}/numeric_diff/")
    click.echo(f"  {'results':<12} {visible(str(outcome.results))}")
