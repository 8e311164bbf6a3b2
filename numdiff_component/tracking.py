"""The MLflow boundary: runs start and end here, MLflow failures become `TrackingError` here,
and a scored table is logged here (SPEC §5). Only this module and the adapters import mlflow."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.options import Options

PREFIX = "numeric_diff"
RESULTS_PARQUET = "results.parquet"
RESULTS_JSON = "results.json"
LOG_TABLE_MAX_ROWS = 100_000


def _failures() -> tuple[type[BaseException], ...]:
    from mlflow.exceptions import MlflowException

    return (MlflowException, OSError)  # network errors (requests') are OSErrors


@contextmanager
def mlflow_errors(what: str) -> Iterator[None]:
    """Turn MLflow and network failures, and only those, into `TrackingError`: "could not
    {what} at {tracking URI}: {reason}". Anything else (a bug) goes through as it is."""
    import mlflow

    try:
        yield
    except _failures() as exc:
        raise TrackingError(
            f"could not {what} at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc


@contextmanager
def mlflow_run(
    *,
    run_name: str | None = None,
    experiment_name: str | None = None,
    use_active: bool = False,
    what: str = "log to MLflow",
) -> Iterator[Any]:
    """The one place runs start and end: a new run (or the one ``mlflow run`` started, through
    ``MLFLOW_RUN_ID``; with ``use_active``, the active run), ended when the block ends and
    marked FAILED when it raises. MLflow failures inside become `TrackingError`."""
    import mlflow

    with mlflow_errors(what):
        active = mlflow.active_run() if use_active else None
        run = active or mlflow.start_run(
            run_name=run_name, experiment_id=experiment_id(experiment_name)
        )
        try:
            yield run
        except BaseException:
            if active is None:
                with contextlib.suppress(Exception):  # the server may be gone: nothing to tell
                    mlflow.end_run(status="FAILED")
            raise
        if active is None:
            mlflow.end_run()


def experiment_id(name: str | None) -> str | None:
    """The id of the experiment ``name``, made when missing (``None`` for no name).

    Not ``mlflow.set_experiment``: that would stay set for the rest of the process. Another
    process may create it at the same moment: then it is looked up again.
    """
    if not name:
        return None
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    if found:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name))
    except MlflowException:
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


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
    engine: str = "pandas"
    reports: tuple[Path, ...] = ()  # plots and summary, logged next to the results


def params(evaluation: Evaluation) -> dict[str, str]:
    """Run params, under ``numeric_diff/`` so they never clash with what ``mlflow run`` logs."""
    values: dict[str, Any] = {
        **evaluation.options.as_dict(),
        "output_col": evaluation.output_col,
        "expected_col": evaluation.expected_col,
        "id_col": evaluation.id_col or "",
        "predictions": evaluation.source,
        "engine": evaluation.engine,
    }
    return {f"{PREFIX}/{k}": str(v) for k, v in values.items()}


def metrics(aggregates: Mapping[str, float]) -> dict[str, float]:
    """``numeric_diff/<name>`` for each aggregate that is a number (NaN is not logged)."""
    return {f"{PREFIX}/{k}": float(v) for k, v in aggregates.items() if not math.isnan(v)}


def _dataset(frame: pd.DataFrame, evaluation: Evaluation, complete: bool) -> Any:
    """The input as an MLflow dataset: the data itself when ``complete``, else its schema."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.pandas_dataset import from_pandas
    from mlflow.exceptions import MlflowException
    from mlflow.models import infer_signature

    source: Any  # from_pandas takes None for "the code's location"
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The specified dataset source can be")
            source = resolve_dataset_source(evaluation.source)
    except MlflowException:  # a source mlflow cannot resolve (e.g. a custom URI scheme)
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
    run_name: str | None = None,
    experiment_name: str | None = None,
) -> str:
    """Log params, metrics, the input as a dataset and the results to an MLflow run; its id.

    The run is the one ``mlflow run`` started (``MLFLOW_RUN_ID``) or a new one. ``results`` (the
    per-item frame) is logged as a table when not ``None``, and ``input_frame`` is then the whole
    input; otherwise ``input_frame`` is the input's first rows, and only its schema is logged.
    The complete Parquet copy is read from ``evaluation.results_dir``. A tracking failure raises
    `TrackingError`, and the run, when it was started, is marked FAILED.
    """
    import mlflow

    with mlflow_run(run_name=run_name, experiment_name=experiment_name) as run:
        mlflow.log_params(params(evaluation))
        mlflow.log_metrics(metrics(evaluation.aggregates))
        dataset = _dataset(input_frame, evaluation, complete=results is not None)
        mlflow.log_input(dataset, context="evaluation")
        mlflow.log_artifact(str(evaluation.results_dir / RESULTS_PARQUET), artifact_path=PREFIX)
        if results is not None:
            mlflow.log_table(data=results, artifact_file=f"{PREFIX}/{RESULTS_JSON}")
        for report in evaluation.reports:
            mlflow.log_artifact(str(report), artifact_path=PREFIX)
        return str(run.info.run_id)


# --- reading a run's results, and logging a comparison ------------------------------------------


@dataclass(frozen=True)
class RunResults:
    """The per-item results of one run (or one local Parquet file) and what it was scored with."""

    frame: pd.DataFrame
    source: str
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def id_col(self) -> str | None:
        return self.params.get(f"{PREFIX}/id_col") or None


_NOT_THERE = ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE")


def load_results(ref: str) -> RunResults:
    """The results of run ``ref`` (a run id), or of a local Parquet file when ``ref`` is one."""
    path = Path(ref)
    if path.suffix == ".parquet" or path.exists():
        if not path.is_file():
            raise InputError(f"results file not found: {ref!r}")
        try:
            return RunResults(pd.read_parquet(path), ref)
        except (OSError, ValueError, pa.ArrowException) as exc:  # a bad or foreign file
            raise InputError(f"cannot read {ref!r} as parquet: {first_line(exc)}") from exc

    import mlflow
    from mlflow.exceptions import MlflowException

    with mlflow_errors(f"read run {ref!r}"):
        try:
            run = mlflow.MlflowClient().get_run(ref)
            with tempfile.TemporaryDirectory(prefix="numdiff-compare-") as folder:
                local = mlflow.artifacts.download_artifacts(
                    run_id=ref, artifact_path=f"{PREFIX}/{RESULTS_PARQUET}", dst_path=folder
                )
                frame = pd.read_parquet(local)
        except MlflowException as exc:
            if exc.error_code not in _NOT_THERE:
                raise  # the server failed, not the run: a tracking failure
            raise InputError(
                f"cannot read the results of run {ref!r} ({PREFIX}/{RESULTS_PARQUET}): "
                f"{first_line(exc)}"
            ) from exc
    return RunResults(frame, ref, dict(run.data.params))


def log_comparison(
    summary: Mapping[str, Any], a: str, b: str, *, experiment_name: str | None = None
) -> str:
    """Record a comparison (`compare_render.to_json`) in a new MLflow run; its run id.

    Metrics ``compare/<aggregate>_diff``, ``compare/p_value``, ``compare/n_regressed`` and
    ``compare/n_improved``; params ``compare/run_a`` and ``compare/run_b``; the summary as the
    artifact ``compare/comparison.json``.
    """
    import mlflow

    metrics = {
        f"compare/{name}_diff": values["diff"]
        for name, values in summary["aggregates"].items()
        if values["diff"] is not None
    }
    test = summary["test"]
    metrics.update(
        {
            "compare/p_value": test["p_value"],
            "compare/n_regressed": test["n_regressed"],
            "compare/n_improved": test["n_improved"],
        }
    )
    with mlflow_run(run_name=f"compare {a[:8]} {b[:8]}", experiment_name=experiment_name) as run:
        mlflow.log_params({"compare/run_a": a, "compare/run_b": b})
        mlflow.log_metrics(metrics)
        mlflow.log_text(json.dumps(summary, indent=2), "compare/comparison.json")
        return str(run.info.run_id)
