"""The scoring job behind ``numdiff score`` and the MLproject: load, score, keep, log.

Tables are read and scored batch by batch, so memory is bounded by the batch size, not the
table. The per-item results are appended to a Parquet file in the local results folder (under a
temporary name, renamed when complete) before anything goes to the tracking server, so a
tracking failure loses nothing and no partial file looks complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from numdiff_component.aggregate import Totals
from numdiff_component.errors import InputError, TrackingError
from numdiff_component.options import Options
from numdiff_component.report import HISTOGRAM_PNG, SCATTER_PNG, SUMMARY_MD, ReportBuilder
from numdiff_component.scoring import RESULT_COLUMNS, check_columns, score_frame
from numdiff_component.tables import DEFAULT_BATCH_ROWS, StreamBroken, Table, open_table
from numdiff_component.tracking import (
    LOG_TABLE_MAX_ROWS,
    RESULTS_PARQUET,
    Evaluation,
    log_evaluation,
)


@dataclass(frozen=True)
class JobConfig:
    """Everything ``numdiff score`` was asked to do."""

    predictions: str | None = None
    output_col: str = "output"
    expected_col: str = "expected"
    id_col: str | None = None
    options: Options = field(default_factory=Options)
    format: str | None = None
    results_dir: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    track: bool = True
    plots: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS


@dataclass(frozen=True)
class JobOutcome:
    """What the job produced."""

    evaluation: Evaluation
    run_id: str | None

    @property
    def results_path(self) -> Path:
        return self.evaluation.results_dir / RESULTS_PARQUET


def results_folder(requested: str | None) -> Path:
    """The folder for the local copy of the results: the one asked for, or a new temporary one."""
    if not requested:
        return Path(tempfile.mkdtemp(prefix="numdiff-results-"))
    folder = Path(requested)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create results folder {requested!r}: {exc.strerror}") from exc
    if not os.access(folder, os.W_OK):
        raise InputError(f"cannot write to results folder {requested!r}: permission denied")
    return folder


@dataclass
class _Scored:
    totals: Totals
    kept: list[pd.DataFrame] | None  # every result row while there are few enough to log whole
    first: pd.DataFrame  # the first rows of the input, for the dataset's schema
    report: ReportBuilder | None


def _score_batches(
    table: Table,
    config: JobConfig,
    path: Path,
    batch_rows: int | None,
    progress: Callable[[int], None] | None,
) -> _Scored:
    """Score the table batch by batch, appending results to ``path`` through a temporary file."""
    tmp = path.with_name(f".{path.name}.partial")
    writer: pq.ParquetWriter | None = None
    totals, first = Totals(), None
    kept: list[pd.DataFrame] | None = []
    report = None
    if config.plots:
        report = ReportBuilder(
            config.options, config.output_col, config.expected_col, config.id_col
        )
    try:
        for batch in table.batches(batch_rows):
            if first is None:
                check_columns(batch.columns, config.output_col, config.expected_col)
                _check_id_column(batch, config.id_col)
                first = batch.head(1000)
            results = score_frame(batch, config.output_col, config.expected_col, config.options)
            arrow = _to_arrow(results)
            if writer is None:
                writer = pq.ParquetWriter(tmp, arrow.schema)
            elif arrow.schema != writer.schema:
                try:
                    arrow = arrow.cast(writer.schema)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise StreamBroken from exc  # a JSON Lines column changed type
            writer.write_table(arrow)
            if report is not None:
                report.add(results)
            totals += Totals.of(results)
            kept = kept if kept is not None and totals.n <= LOG_TABLE_MAX_ROWS else None
            if kept is not None:
                kept.append(results)
            if progress is not None:
                progress(totals.n)
        if writer is None or first is None:
            raise InputError(f"no rows to score in {table.source!r}")
        writer.close()
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write results to {str(path.parent)!r}: {exc}") from exc
    finally:
        if writer is not None and tmp.exists():
            with contextlib.suppress(Exception):  # closing fails again when the disk is full
                writer.close()
            tmp.unlink(missing_ok=True)
    return _Scored(totals, kept, first, report)


def _to_arrow(results: pd.DataFrame) -> pa.Table:
    """The results as an Arrow table; a column mixing types (JSON) is stored as its text."""
    try:
        return pa.Table.from_pandas(results, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        mixed = [
            c
            for c in results.columns
            if results[c].dtype == object
            and pd.api.types.infer_dtype(results[c]).startswith("mixed")
        ]
        as_text = {c: results[c].map(lambda v: v if v is None else str(v)) for c in mixed}
        return pa.Table.from_pandas(results.assign(**as_text), preserve_index=False)


def _check_id_column(batch: pd.DataFrame, id_col: str | None) -> None:
    if id_col and id_col not in [str(c) for c in batch.columns]:
        existing = ", ".join(repr(str(c)) for c in batch.columns)
        raise InputError(f"id column {id_col!r} not found; the columns are: {existing}")


def _write_report(
    report: ReportBuilder | None, path: Path, aggregates: dict[str, float], source: str
) -> list[Path]:
    """The plots and summary next to the results; on a write error (a full disk) none is left."""
    if report is None:
        return []
    try:
        return report.write(path.parent, aggregates, source)
    except OSError as exc:
        for name in (HISTOGRAM_PNG, SCATTER_PNG, SUMMARY_MD):
            (path.parent / name).unlink(missing_ok=True)
        raise InputError(
            f"cannot write the report to {str(path.parent)!r}: {exc}; "
            f"the complete results are in {str(path)!r}"
        ) from exc


def run_job(config: JobConfig, progress: Callable[[int], None] | None = None) -> JobOutcome:
    """Score the table batch by batch into the local results folder, then log to MLflow.

    ``progress`` is called with the number of rows scored so far after each batch.
    """
    table = open_table(config.predictions, config.format)
    path = results_folder(config.results_dir) / RESULTS_PARQUET
    try:
        scored = _score_batches(table, config, path, config.batch_rows, progress)
    except StreamBroken:
        scored = _score_batches(table, config, path, None, progress)
    results = pd.concat(scored.kept, ignore_index=True) if scored.kept else None
    aggregates = scored.totals.aggregates()
    reports = _write_report(scored.report, path, aggregates, table.source)
    evaluation = evaluation_of(
        config, table, aggregates, path.parent, scored.totals.n, reports=tuple(reports)
    )
    return JobOutcome(evaluation, track(config, evaluation, scored.first, results, path))


def evaluation_of(
    config: JobConfig,
    table: Any,
    aggregates: Mapping[str, float],
    folder: Path,
    n_rows: int,
    **extra: Any,
) -> Evaluation:
    """What a job logs, for ``table`` (anything with ``source`` and ``name``)."""
    return Evaluation(
        source=table.source,
        dataset_name=table.name,
        options=config.options,
        output_col=config.output_col,
        expected_col=config.expected_col,
        id_col=config.id_col,
        aggregates=aggregates,
        results_dir=folder,
        n_rows=n_rows,
        **extra,
    )


def track(
    config: JobConfig,
    evaluation: Evaluation,
    first: pd.DataFrame,
    results: pd.DataFrame | None,
    path: Path,
) -> str | None:
    """Log to MLflow when ``config.track``: the whole input and results when ``results`` holds
    them, else the schema of the ``first`` rows. A failure says where the results are."""
    if not config.track:
        return None
    inputs = first if results is None else results.drop(columns=list(RESULT_COLUMNS))
    try:
        return log_evaluation(
            evaluation,
            inputs,
            results,
            complete=results is not None,
            run_name=config.run_name,
            experiment_name=config.experiment_name,
        )
    except TrackingError as exc:  # say where the results are: the folder may be temporary
        raise TrackingError(f"{exc}; the complete results are in {str(path)!r}") from exc
