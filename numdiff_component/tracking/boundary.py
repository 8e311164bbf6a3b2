"""The MLflow boundary: runs start and end here, MLflow failures become `TrackingError` here,
and a scored table is logged here (SPEC §5). Only this module and the adapters import mlflow."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.job.results import (
    PLOTS,
    PREFIX,
    RESULTS_JSON,
    RESULTS_PARQUET,
    Evaluation,
    RunResults,
    metrics,
    new_params,
    params,
    read_local,
    recorded,
    table_for_ui,
    tags,
)
from numdiff_component.tracking.settings import _relative_store, store_lock, tracking_timeout

LOG_TABLE_MAX_ROWS = 100_000
T = TypeVar("T")


@contextmanager
def mlflow_errors(what: str) -> Iterator[None]:
    """Turn MLflow and network failures, and only those, into `TrackingError`: "could not
    {what} at {tracking URI}: {reason}"; a value MLflow refuses (a name too long, a bad
    character) is `InputError`. Anything else (a bug) goes through as it is."""
    import mlflow
    from mlflow.exceptions import MlflowException

    failures: tuple[type[Exception], ...] = (MlflowException, OSError)  # network: OSErrors
    with contextlib.suppress(ImportError):  # a sqlite store's own errors ("database is locked")
        from alembic.util.exc import CommandError  # its tables, made by another at the same time
        from sqlalchemy.exc import SQLAlchemyError

        failures = (*failures, SQLAlchemyError, CommandError)
    try:
        yield
    except failures as exc:
        if getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE":  # the user's value
            raise InputError(f"MLflow refused a value: {first_line(exc)}") from exc
        raise TrackingError(
            f"could not {what} at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc


class _TimedOut(BaseException):
    """A tracking call passed its deadline. Not an `Exception`: MLflow's own ``except
    Exception`` (retries, cleanup) must not swallow it."""


class _NoAnswer(TrackingError):
    """The tracking store did not answer within the deadline: ask it nothing more."""


_OFF_MAIN_THREAD = (
    "NUMDIFF_TRACKING_TIMEOUT is not applied off the main thread (no timer signal there); "
    "MLflow's own MLFLOW_HTTP_REQUEST_TIMEOUT bounds each request instead"
)


def within(what: str, call: Callable[..., T], *args: Any, extra: float = 0.0, **kwargs: Any) -> T:
    """``call(*args, **kwargs)``, the one tracking call, answered within `tracking_timeout`
    seconds (plus ``extra``: e.g. one more per MiB uploaded), else `TrackingError`: a server that
    hangs or trickles bytes cannot hold a run. MLflow's failures become `TrackingError` too
    (`mlflow_errors`). The deadline is a timer signal, so that a blocking socket read is
    interrupted; it reaches the main thread only, so in another thread the call is bounded by
    MLflow's HTTP timeout alone, and a `RuntimeWarning` says so (once per process)."""
    import mlflow  # before the clock starts: importing it takes seconds, and is no call

    seconds = tracking_timeout() + extra
    with mlflow_errors(what):
        if threading.current_thread() is not threading.main_thread():
            warnings.warn(_OFF_MAIN_THREAD, RuntimeWarning, stacklevel=2)
            return call(*args, **kwargs)

        def expired(signum: int, frame: Any) -> None:
            raise _TimedOut

        previous = signal.signal(signal.SIGALRM, expired)
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            return call(*args, **kwargs)
        except _TimedOut:
            raise _NoAnswer(
                f"could not {what} at {mlflow.get_tracking_uri()}: no answer within "
                f"{seconds:g} s (NUMDIFF_TRACKING_TIMEOUT)"
            ) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def import_mlflow() -> None:
    """MLflow and what a run is logged with: seconds, so a job does it beside other work."""
    import mlflow.data.pandas_dataset
    from mlflow.store.db.db_types import DATABASE_ENGINES

    if mlflow.get_tracking_uri().startswith(tuple(DATABASE_ENGINES)):  # MLflow's own list
        import mlflow.store.tracking.sqlalchemy_store


def upload_seconds(path: Path) -> float:
    """Extra seconds for uploading ``path`` (a file or a folder): one per MiB."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


@contextmanager
def mlflow_run(
    *,
    run_name: str | None = None,
    experiment_name: str | None = None,
    use_active: bool = False,
    default_run_name: str | None = None,
    what: str = "log to MLflow",
) -> Iterator[Any]:
    """The one place runs start and end: a new run (or the one ``mlflow run`` started, through
    ``MLFLOW_RUN_ID``; with ``use_active``, the active run), ended when the block ends and
    marked FAILED when it raises. MLflow failures inside become `TrackingError`.

    ``default_run_name`` names a new run that has no ``run_name``; a run ``mlflow run`` started
    takes ``run_name`` when given, keeps a name given to ``mlflow run --run-name``, and takes
    ``default_run_name`` instead of the random name MLflow made up."""
    import mlflow
    from mlflow.environment_variables import MLFLOW_RUN_ID

    if not MLFLOW_RUN_ID.get():
        run_name = run_name or default_run_name
    active = mlflow.active_run() if use_active else None
    run = active
    if run is None:
        with store_lock(mlflow.get_tracking_uri()):  # one job at a time makes a new store's tables
            experiment = within(what, experiment_id, experiment_name)
            run = within(what, mlflow.start_run, run_name=run_name, experiment_id=experiment)
    try:
        if active is None and not run_name and default_run_name and _made_up(run.info.run_name):
            within(what, mlflow.set_tag, "mlflow.runName", default_run_name, synchronous=True)
        with mlflow_errors(what):
            yield run
    except BaseException as exc:
        if active is None and isinstance(exc, _NoAnswer):  # a hung server: ask it no more,
            mlflow.tracking.fluent._active_run_stack.get().pop()  # nor MLflow's exit handler
        elif active is None:
            with contextlib.suppress(Exception):  # the server may be gone: nothing to tell
                within(what, mlflow.end_run, status="FAILED")
        raise
    if active is None:
        within(what, mlflow.end_run)


def _made_up(name: str | None) -> bool:
    """Whether ``name`` is one MLflow makes up for a run nobody named (``glamorous-wolf-831``)."""
    from mlflow.utils import name_utils

    parts = (name or "").split("-")
    return (
        len(parts) == 3
        and parts[0] in {p.lower() for p in name_utils._GENERATOR_PREDICATES}
        and parts[1] in {n.lower() for n in name_utils._GENERATOR_NOUNS}
        and parts[2].isdigit()
    )


def record_failure(message: str, exit_code: int) -> None:
    """Tag the run ``mlflow run`` started with why its step failed, so that a pipeline can tell
    bad input from a failed gate (``numeric_diff.gate``). Best effort: the step fails anyway."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id or _relative_store(os.environ.get("MLFLOW_TRACKING_URI", "")):
        return
    from mlflow import MlflowClient
    from mlflow.entities import RunTag

    tags = [RunTag(f"{PREFIX}.error", message[:5000])]
    tags.append(RunTag(f"{PREFIX}.exit_code", str(exit_code)))
    with contextlib.suppress(TrackingError, InputError):
        within("tag the run", MlflowClient().log_batch, run_id, tags=tags, synchronous=True)


def experiment_id(name: str | None) -> str | None:
    """The id of the experiment ``name``, made when missing (``None`` for no name). Not
    ``mlflow.set_experiment``, which stays set for the rest of the process; one that another
    process makes at the same moment is looked up again."""
    if not name:
        return None
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient()
    found = client.get_experiment_by_name(name)
    if found:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name, artifact_location=_artifact_root()))
    except MlflowException:
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


def _artifact_root() -> str | None:
    """Where a new experiment keeps its artifacts: for a sqlite store, the folder
    ``mlartifacts`` beside the store; MLflow's default, ``./mlruns``, is in the working folder,
    which the job does not write. Other stores: their own default (``None``)."""
    import mlflow

    path = mlflow.get_tracking_uri().removeprefix("sqlite:///")
    if path.startswith("sqlite:") or path in ("", ":memory:") or "://" in path:
        return None
    return (Path(path).resolve().parent / "mlartifacts").as_uri()


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
        within(
            what,
            client.log_batch,
            run_id,
            metrics=[Metric(k, v, now, 0) for k, v in metrics(evaluation.aggregates).items()],
            params=[Param(k, v) for k, v in new_params(params(evaluation), logged).items()],
            tags=[RunTag(k, v) for k, v in tags(evaluation).items()],
            synchronous=True,
        )
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
                data=table_for_ui(results, evaluation.id_col),
                artifact_file=f"{PREFIX}/{RESULTS_JSON}",
                extra=results.memory_usage(deep=True).sum() / 2**20,
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


def load_results(ref: str) -> RunResults:
    """The results of run ``ref`` (a run id), or of a local results file or folder (a Spark
    engine's) when ``ref`` is one; the id column they were scored with comes along."""
    path = Path(ref)
    if path.suffix == ".parquet" or path.exists():
        if not path.exists() or (path.is_dir() and not any(path.glob("*.parquet"))):
            raise InputError(f"results file not found: {ref!r}")
        return read_local(path, ref)

    import mlflow

    what = f"read run {ref!r}"
    client = mlflow.MlflowClient()
    run = within(what, _not_there_is_input, ref, client.get_run, ref)
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
    return RunResults(frame, ref, recorded(run.data.params), run.info.status, deleted)


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
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            params=[Param("compare/run_a", a), Param("compare/run_b", b)],
            synchronous=True,
        )
        text = json.dumps(summary, indent=2)
        within(what, client.log_text, run_id, text, "compare/comparison.json")
        return run_id
