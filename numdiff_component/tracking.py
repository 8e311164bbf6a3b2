"""Logging a scored table to MLflow (SPEC §5). Only this module and the adapters import mlflow."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from numdiff_component.errors import TrackingError, first_line
from numdiff_component.options import Options

PREFIX = "numeric_diff"
RESULTS_PARQUET = "results.parquet"
RESULTS_JSON = "results.json"
LOG_TABLE_MAX_ROWS = 100_000

# Fail fast when the tracking server is down: a pipeline step should not retry for minutes.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


def bound_http_retries() -> None:
    """Cap MLflow's HTTP retries and timeout unless the user set them."""
    for key, value in _HTTP_DEFAULTS.items():
        os.environ.setdefault(key, value)


def experiment_id(name: str | None) -> str | None:
    """The id of the experiment ``name``, made when missing (``None`` for no name).

    Not ``mlflow.set_experiment``: that would stay set for the rest of the process.
    """
    if not name:
        return None
    from mlflow import MlflowClient

    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found else client.create_experiment(name)


@dataclass(frozen=True)
class Evaluation:
    """What one scoring job logs: where the table came from, how it was scored, what came out."""

    source: str
    dataset_name: str
    options: Options
    output_col: str
    expected_col: str
    id_col: str | None
    aggregates: Mapping[str, float]
    results_dir: Path
    n_rows: int
    extra_params: Mapping[str, Any] = field(default_factory=dict)
    reports: tuple[Path, ...] = ()  # plots and summary, logged next to the results


def params(evaluation: Evaluation) -> dict[str, str]:
    """Run params, under ``numeric_diff/`` so they never clash with what ``mlflow run`` logs."""
    values: dict[str, Any] = {
        **evaluation.options.as_dict(),
        "output_col": evaluation.output_col,
        "expected_col": evaluation.expected_col,
        "id_col": evaluation.id_col or "",
        "predictions": evaluation.source,
        **evaluation.extra_params,
    }
    return {f"{PREFIX}/{k}": str(v) for k, v in values.items()}


def metrics(aggregates: Mapping[str, float]) -> dict[str, float]:
    """``numeric_diff/<name>`` for each aggregate that is a number (NaN is not logged)."""
    return {f"{PREFIX}/{k}": float(v) for k, v in aggregates.items() if not math.isnan(v)}


def _dataset(frame: pd.DataFrame, evaluation: Evaluation, complete: bool) -> Any:
    """The input as an MLflow dataset: the data itself when ``complete``, else its schema."""
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.pandas_dataset import from_pandas
    from mlflow.models import infer_signature

    warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted")
    source: Any  # from_pandas takes None for "the code's location"
    try:
        source = resolve_dataset_source(evaluation.source)
    except Exception:  # a source mlflow cannot resolve (e.g. a custom URI scheme)
        source = None
    if not complete and source is not None:
        schema = infer_signature(frame).inputs
        return MetaDataset(source, name=evaluation.dataset_name, schema=schema)  # type: ignore[abstract]
    return from_pandas(
        frame,
        source=source,
        name=evaluation.dataset_name,
        targets=evaluation.expected_col,
        predictions=evaluation.output_col,
    )


def log_evaluation(
    evaluation: Evaluation,
    input_frame: pd.DataFrame,
    results: pd.DataFrame | None,
    *,
    complete: bool = True,
    run_name: str | None = None,
    experiment_name: str | None = None,
) -> str:
    """Log params, metrics, the input as a dataset and the results to an MLflow run; its id.

    The run is the one ``mlflow run`` started (``MLFLOW_RUN_ID``) or a new one. ``input_frame``
    is the input table, or its first rows when not ``complete`` (then only its schema is
    logged). ``results`` (the per-item frame) is logged as a table when not ``None``; the
    complete Parquet copy is read from ``evaluation.results_dir``. Any tracking failure raises
    `TrackingError`, and the run, when it was started, is marked FAILED.
    """
    bound_http_retries()
    import mlflow

    run = None
    try:
        run = mlflow.start_run(run_name=run_name, experiment_id=experiment_id(experiment_name))
        mlflow.log_params(params(evaluation))
        mlflow.log_metrics(metrics(evaluation.aggregates))
        mlflow.log_input(_dataset(input_frame, evaluation, complete), context="evaluation")
        mlflow.log_artifact(str(evaluation.results_dir / RESULTS_PARQUET), artifact_path=PREFIX)
        if results is not None:
            mlflow.log_table(data=results, artifact_file=f"{PREFIX}/{RESULTS_JSON}")
        for report in evaluation.reports:
            mlflow.log_artifact(str(report), artifact_path=PREFIX)
        mlflow.end_run()
        return str(run.info.run_id)
    except Exception as exc:
        if run is not None:
            with contextlib.suppress(Exception):  # the server is gone; nothing more can be told
                mlflow.end_run(status="FAILED")
        raise TrackingError(
            f"could not log to MLflow at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc
