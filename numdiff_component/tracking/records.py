"""What goes through the MLflow boundary (SPEC §5): a job's run logged (`log_evaluation`:
params, metrics and tags in one batch, the input as a dataset, the files, the plots), a run's
results read back (`load_results`), an artifact downloaded (`download_artifact`), a comparison
logged (`log_comparison`). Each call through `numdiff_component.tracking.boundary.within`."""

from __future__ import annotations

import datetime
import json
import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from numdiff_component.errors import InputError, first_line
from numdiff_component.task.results import (
    GROUPS_JSON,
    PLOTS,
    PREFIX,
    RESULTS_JSON,
    RESULTS_PARQUET,
    RunResults,
    read_local,
    recorded,
)
from numdiff_component.tracking.boundary import (
    LOG_TABLE_MAX_ROWS,
    mlflow_run,
    upload_seconds,
    within,
)
from numdiff_component.tracking.evaluation import (
    Evaluation,
    new_params,
    params,
    run_metrics,
    table_for_ui,
    tags,
)

T = TypeVar("T")
BATCH_ENTITIES = 1000
"""Metrics, params and tags MLflow takes in one ``log_batch`` (``MAX_ENTITIES_PER_BATCH``)."""


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
        targets=evaluation.scoring.expected_col,
        predictions=evaluation.scoring.output_col,
    )


def log_evaluation(
    evaluation: Evaluation,
    input_frame: pd.DataFrame,
    results: pd.DataFrame | None,
    *,
    run_name: str | None = None,
    default_run_name: str | None = None,
    experiment_name: str | None = None,
) -> str:
    """Log params, metrics, tags, the input as a dataset and the results to an MLflow run; its
    id.

    The run is the one ``mlflow run`` started (``MLFLOW_RUN_ID``) or a new one. Params, metrics
    and tags go in one ``log_batch``; each value once (`new_params`). ``results`` (the per-item
    frame) is logged as a table when not ``None``, and ``input_frame`` is then the whole input;
    otherwise ``input_frame`` is the input's first rows, and only its schema is logged. The
    complete Parquet copy and the summaries are read from ``evaluation.results_dir`` and logged
    under ``numeric_diff/``; each plot is logged once at the artifact root (the compare-runs page
    shows only those) and once as an image with a key (the chart view of compared runs). A
    tracking failure raises `TrackingError`, and the run, when it was started, is marked FAILED.
    """
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    what = "log to MLflow"
    results_file = evaluation.results_dir / RESULTS_PARQUET
    with mlflow_run(
        run_name=run_name, default_run_name=default_run_name, experiment_name=experiment_name
    ) as run:
        run_id = str(run.info.run_id)
        client = mlflow.MlflowClient()
        logged = run.data.params  # a run `mlflow run` started holds its parameters
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in run_metrics(evaluation).items()]
        new = [Param(k, v) for k, v in new_params(params(evaluation), logged).items()]
        run_tags = [RunTag(k, v) for k, v in tags(evaluation).items()]
        first = BATCH_ENTITIES - len(new) - len(run_tags)  # MLflow's limit per log_batch
        within(
            what,
            client.log_batch,
            run_id,
            metrics=metrics[:first],
            params=new,
            tags=run_tags,
            synchronous=True,
        )
        for start in range(first, len(metrics), BATCH_ENTITIES):  # many groups (SPEC §3.1)
            batch = metrics[start : start + BATCH_ENTITIES]
            within(what, client.log_batch, run_id, metrics=batch, synchronous=True)
        dataset = _dataset(input_frame, evaluation, complete=results is not None)
        within(what, mlflow.log_input, dataset, context="evaluation")
        plots = [r for r in evaluation.reports if r.name in PLOTS]
        for path in [results_file, *(r for r in evaluation.reports if r not in plots)]:
            within(what, client.log_artifact, run_id, str(path), PREFIX, extra=upload_seconds(path))
        if results is not None:
            within(
                what,
                client.log_table,
                run_id,
                data=table_for_ui(results, evaluation.scoring.id_col),
                artifact_file=f"{PREFIX}/{RESULTS_JSON}",
                extra=results.memory_usage(deep=True).sum() / 2**20,
            )
        groups = evaluation.groups
        if groups is not None and len(groups) <= LOG_TABLE_MAX_ROWS:  # as the results' table
            within(
                what,
                client.log_table,
                run_id,
                data=groups,
                artifact_file=f"{PREFIX}/{GROUPS_JSON}",
            )
        _log_plots(client, run_id, plots)
    return run_id


def _log_plots(client: Any, run_id: str, plots: list[Path]) -> None:
    """Each plot once where compared runs show it side by side (the compare page lists only
    root artifacts), and once as an image with a key (the chart view)."""
    from PIL import Image

    what = "log to MLflow"
    for plot in plots:
        key, size = f"{PREFIX}/{plot.stem}", upload_seconds(plot)
        within(what, client.log_artifact, run_id, str(plot), extra=size)
        with Image.open(plot) as image:
            rgb = image.convert("RGB")
        within(what, client.log_image, run_id, rgb, key=key, step=0, synchronous=True, extra=size)


# --- reading a run's results, and logging a comparison ------------------------------------------


_NOT_THERE = ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE")


_RUN_ID = re.compile(r"[0-9a-f]{32}")
"""What MLflow's run ids look like: anything else is a run name."""


def find_run(ref: str) -> Any:
    """The MLflow run ``ref`` names: a run id (32 hex digits), else a run name, looked up in
    every active experiment of the tracking store (not the run of this process under
    ``mlflow run``). No run of that name, or more than one, is `InputError`; the latter lists
    them (id, experiment, start time) so that one can be given by id."""
    import mlflow

    what = f"read run {ref!r}"
    client = mlflow.MlflowClient()
    if _RUN_ID.fullmatch(ref):
        return within(what, _not_there_is_input, ref, client.get_run, ref)
    quote = "'" if "'" not in ref else '"'
    if quote in ref:
        raise InputError(f"run name {ref!r} holds both kinds of quote; give the run's id")
    experiments = {e.experiment_id: e.name for e in within(what, client.search_experiments)}
    found = within(
        what,
        client.search_runs,
        list(experiments),
        f"attributes.run_name = {quote}{ref}{quote}",
        order_by=["attributes.start_time DESC"],
    )
    runs = [r for r in found if r.info.run_id != os.environ.get("MLFLOW_RUN_ID")]
    if not runs:
        raise InputError(
            f"no run named {ref!r} in any experiment of {mlflow.get_tracking_uri()}, and no "
            "results file of that name; give a run id, a run name or a results file"
        )
    if len(runs) > 1:
        listed = "; ".join(
            f"{r.info.run_id} (experiment {experiments[r.info.experiment_id]!r}, started "
            f"{_utc(r.info.start_time)})"
            for r in runs
        )
        raise InputError(
            f"run name {ref!r} is ambiguous: {len(runs):,} runs have it: {listed}; "
            "give the run's id"
        )
    return runs[0]


def _utc(milliseconds: int | None) -> str:
    """A run's start time as ``2026-12-04 18:40:12 UTC``."""
    if milliseconds is None:
        return "at an unknown time"
    moment = datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def load_results(ref: str) -> RunResults:
    """The results of run ``ref`` (a run id or name, `find_run`), or of a local results file
    or folder (a Spark engine's) when ``ref`` is one; the id column they were scored with and
    the run's name come along."""
    path = Path(ref)
    if path.suffix == ".parquet" or path.exists():
        if not path.exists() or (path.is_dir() and not any(path.glob("*.parquet"))):
            raise InputError(f"results file not found: {ref!r}")
        return read_local(path, ref)

    import mlflow

    run = find_run(ref)
    ref = str(run.info.run_id)
    what = f"read run {ref!r}"
    client = mlflow.MlflowClient()
    files = within(what, _not_there_is_input, ref, client.list_artifacts, ref, PREFIX)
    size = sum(f.file_size or 0 for f in files) / 2**20
    with tempfile.TemporaryDirectory(prefix="numdiff-compare-") as folder:
        local = within(
            what,
            _not_there_is_input,
            ref,
            mlflow.artifacts.download_artifacts,
            run_id=ref,
            artifact_path=f"{PREFIX}/{RESULTS_PARQUET}",
            dst_path=folder,
            extra=size,
        )
        name = f"the results of run {ref!r} ({PREFIX}/{RESULTS_PARQUET})"
        frame = read_local(Path(local), ref, name).frame
    deleted = run.info.lifecycle_stage == "deleted"
    named = run.info.run_name or None
    return RunResults(frame, ref, recorded(run.data.params), run.info.status, deleted, named)


def _not_there_is_input(ref: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call``, where a run or artifact that is not there is the user's `InputError`."""
    from mlflow.exceptions import MlflowException

    try:
        return call(*args, **kwargs)
    except MlflowException as exc:
        if exc.error_code not in _NOT_THERE:
            raise  # the server failed, not the run: a tracking failure
        raise InputError(
            f"cannot read the results of run {ref!r} ({PREFIX}/{RESULTS_PARQUET}): "
            f"{first_line(exc)}"
        ) from exc


def download_artifact(uri: str, folder: str) -> str:
    """Download the artifact ``uri`` (``runs:/<run_id>/<path>``...) into ``folder``; its local
    path. Within the tracking deadline: a server that fails or does not answer is
    `TrackingError`; a run or artifact that is not there is `InputError`."""
    import mlflow
    from mlflow.exceptions import MlflowException

    def download() -> str:
        try:
            return str(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=folder))
        except MlflowException as exc:
            if exc.error_code not in _NOT_THERE:
                raise  # the server failed, not the artifact: a tracking failure
            raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc
        except FileNotFoundError as exc:  # a local artifact store without that file
            raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc

    return within(f"download {uri!r}", download)


def log_comparison(
    summary: Mapping[str, Any], a: str, b: str, *, experiment_name: str | None = None
) -> str:
    """Record a comparison (`compare.render.to_json`) in a new MLflow run; its run id.

    Metrics ``compare/<aggregate>_diff``, the intervals of the paired differences
    ``compare/{pass_rate,mean_score}_diff_ci_{low,high}``, ``compare/p_value``,
    ``compare/n_regressed`` and ``compare/n_improved``; params ``compare/run_a`` and
    ``compare/run_b``; the summary as the artifact ``compare/comparison.json``.
    """
    import mlflow

    figures = {
        f"compare/{name}_diff": values["diff"]
        for name, values in summary["aggregates"].items()
        if values.get("diff") is not None
    }
    figures |= {
        f"compare/{name}_diff_{bound}": delta[bound]
        for name, delta in summary["deltas"].items()
        for bound in ("ci_low", "ci_high")
        if delta[bound] is not None
    }
    test = summary["test"]
    figures.update(
        {
            "compare/p_value": test["p_value"],
            "compare/n_regressed": test["n_regressed"],
            "compare/n_improved": test["n_improved"],
        }
    )
    from mlflow.entities import Metric, Param

    name = f"compare {a[:8]} {b[:8]}"
    what = "log to MLflow"
    with mlflow_run(run_name=name, experiment_name=experiment_name) as run:
        run_id = str(run.info.run_id)
        client = mlflow.MlflowClient()
        now = int(time.time() * 1000)
        within(
            what,
            client.log_batch,
            run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in figures.items()],
            params=[Param("compare/run_a", a), Param("compare/run_b", b)],
            synchronous=True,
        )
        text = json.dumps(summary, indent=2)
        within(what, client.log_text, run_id, text, "compare/comparison.json")
        return run_id
