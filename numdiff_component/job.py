"""The scoring job behind ``numdiff score`` and the MLproject: load, score, keep, log.

The per-item results are written to the local results folder before anything goes to the
tracking server, so a tracking failure loses nothing.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from numdiff_component.aggregate import aggregate
from numdiff_component.errors import InputError
from numdiff_component.options import Options
from numdiff_component.scoring import score_frame
from numdiff_component.tables import load_table
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
    options: Options = Options()
    format: str | None = None
    results_dir: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    track: bool = True


@dataclass(frozen=True)
class JobOutcome:
    """What the job produced."""

    evaluation: Evaluation
    results: pd.DataFrame
    run_id: str | None

    @property
    def results_path(self) -> Path:
        return self.evaluation.results_dir / RESULTS_PARQUET


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` through a temporary name, so no partial file looks complete."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write results to {str(path.parent)!r}: {exc.strerror}") from exc


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


def run_job(config: JobConfig) -> JobOutcome:
    """Load, score, write the results locally, then log them to MLflow (when ``track``)."""
    table = load_table(config.predictions, config.format)
    if config.id_col and config.id_col not in [str(c) for c in table.frame.columns]:
        existing = ", ".join(repr(str(c)) for c in table.frame.columns)
        raise InputError(f"id column {config.id_col!r} not found; the columns are: {existing}")
    results = score_frame(table.frame, config.output_col, config.expected_col, config.options)
    folder = results_folder(config.results_dir)
    write_parquet(results, folder / RESULTS_PARQUET)
    evaluation = Evaluation(
        source=table.source,
        dataset_name=table.name,
        options=config.options,
        output_col=config.output_col,
        expected_col=config.expected_col,
        id_col=config.id_col,
        aggregates=aggregate(results),
        results_dir=folder,
        n_rows=len(results),
    )
    run_id = None
    if config.track:
        run_id = log_evaluation(
            evaluation,
            table.frame,
            results if len(results) <= LOG_TABLE_MAX_ROWS else None,
            run_name=config.run_name,
            experiment_name=config.experiment_name,
        )
    return JobOutcome(evaluation, results, run_id)
