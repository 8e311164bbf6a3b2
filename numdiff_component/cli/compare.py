"""The ``numdiff compare`` command: two scoring runs' per-item results, B against A, as text
or JSON, optionally recorded in a new MLflow run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from numdiff_component.cli.options import guarded


@click.command("compare")
@guarded
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--id-col",
    default="",
    help="Column matching rows of A and B  [default: the runs' id column; else row position]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Rows listed per section (0: all).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Significance level of the pass/fail change test.",
)
@click.option(
    "--plot",
    default=None,
    metavar="FILE.png",
    help="Write A's and B's score histograms side by side, on one y scale, to FILE.png.",
)
@click.option("--log", "log_run", is_flag=True, help="Record the comparison in a new MLflow run.")
@click.option("--experiment-name", default=None, help="MLflow experiment for --log.")
def compare(
    run_a: str,
    run_b: str,
    id_col: str,
    as_json: bool,
    limit: int,
    alpha: float,
    plot: str | None,
    log_run: bool,
    experiment_name: str | None,
) -> None:
    """Compare the per-item results of two scoring runs: B against A.

    RUN_A and RUN_B are MLflow run ids or run names (their numeric_diff/results.parquet is
    read; a name is looked up in every experiment and must name one run) or local results
    Parquet files. Rows are matched by id when the runs have an id column, by position
    otherwise. Shows the aggregates side by side, the paired differences of pass rate and mean
    score with 95% intervals, McNemar's exact test on the pass/fail changes, and the rows that
    regressed, improved or dropped most.
    """
    import json

    from numdiff_component.compare.comparison import (
        align,
        compare_results,
        resolve_id_col,
        run_warnings,
    )
    from numdiff_component.compare.groups import group_change_lines, group_changes, shared_by
    from numdiff_component.compare.render import format_text, to_json
    from numdiff_component.errors import InputError, visible
    from numdiff_component.tracking.records import load_results, log_comparison

    a, b = load_results(run_a), load_results(run_b)
    for side, run in (("A", a), ("B", b)):
        for warning in run_warnings(side, run.label, run.status, run.deleted):
            click.echo(f"numdiff: warning: {visible(warning)}", err=True)
    matched_by = resolve_id_col(id_col or None, (a.id_col, b.id_col), a.frame, b.frame)
    comparison = compare_results(a.frame, b.frame, id_col=matched_by, alpha=alpha)
    by = shared_by((a.params.get("by"), b.params.get("by")), a.frame, b.frame)
    changes = None
    if by:  # SPEC §3.1: which groups regressed, on the same pairs
        paired_a, paired_b, _ = align(a.frame, b.frame, matched_by)
        changes = group_changes(paired_a, paired_b, by, alpha)
    if plot:
        from numdiff_component.job.baseline import recorded_threshold, score_histograms

        png = score_histograms(
            comparison, (a.label, b.label), (recorded_threshold(a), recorded_threshold(b))
        )
        try:
            Path(plot).write_bytes(png)
        except OSError as exc:
            raise InputError(f"cannot write the plot to {plot!r}: {exc.strerror}") from exc
    summary: dict[str, Any] = {"a": a.label, "b": b.label}
    summary["options"] = {"a": a.options, "b": b.options}
    summary.update(to_json(comparison, limit or None))
    if changes is not None:
        summary["groups"] = json.loads(changes.to_json(orient="records", double_precision=15))
    if log_run:
        summary["run_id"] = log_comparison(
            summary, a.source, b.source, experiment_name=experiment_name
        )
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(format_text(comparison, a.label, b.label, limit or None, (a.options, b.options)))
    if changes is not None:
        click.echo("\n" + "\n".join(group_change_lines(changes, alpha, limit or None)))
    if log_run:
        click.echo(f"\n  logged to run {summary['run_id']}")
