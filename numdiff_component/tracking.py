"""The MLflow boundary: runs start and end here, MLflow failures become `TrackingError` here,
and a scored table is logged here (SPEC §5). Only this module and the adapters import mlflow."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from numdiff_component.aggregate import headline, pass_rate_stderr
from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.options import OPTION_NAMES, Options

PREFIX = "numeric_diff"
RESULTS_PARQUET = "results.parquet"
RESULTS_JSON = "results.json"
RESULTS_METADATA = "_numdiff.json"
"""In a Spark results folder: what its file's metadata says in a pandas results file."""
LOG_TABLE_MAX_ROWS = 100_000


@contextmanager
def mlflow_errors(what: str) -> Iterator[None]:
    """Turn MLflow and network failures, and only those, into `TrackingError`: "could not
    {what} at {tracking URI}: {reason}"; a value MLflow refuses (a name too long, a bad
    character) is `InputError`. Anything else (a bug) goes through as it is."""
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        yield
    except (MlflowException, OSError) as exc:  # network errors (requests') are OSErrors
        if getattr(exc, "error_code", None) == "INVALID_PARAMETER_VALUE":  # the user's value
            raise InputError(f"MLflow refused a value: {first_line(exc)}") from exc
        raise TrackingError(
            f"could not {what} at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc


DEFAULT_TIMEOUT = 20.0
"""Seconds each tracking call may take (``NUMDIFF_TRACKING_TIMEOUT``); an upload gets at least
one more second per MiB."""


class _TimedOut(BaseException):
    """A tracking call passed its deadline. Not an `Exception`: MLflow's own ``except
    Exception`` (retries, cleanup) must not swallow it."""


def tracking_timeout() -> float:
    """The deadline of each tracking call, in seconds (``NUMDIFF_TRACKING_TIMEOUT``)."""
    text = os.environ.get("NUMDIFF_TRACKING_TIMEOUT", "")
    try:
        seconds = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise InputError(f"NUMDIFF_TRACKING_TIMEOUT must be a number of seconds > 0, got {text!r}")
    return seconds


@contextmanager
def deadline(what: str) -> Iterator[Callable[..., None]]:
    """Each tracking call in the block answers within `tracking_timeout` seconds, or the block
    raises `TrackingError` then. Yields ``arm(extra)``: call it before each call (``extra``: more
    seconds for a large upload). A server that hangs or trickles bytes cannot hold a run.

    A timer signal, so the main thread's blocking socket read is interrupted; in another thread
    calls are bounded only by MLflow's own HTTP timeout. The previous handler is put back.
    """
    import mlflow  # before the clock starts: importing it takes seconds, and is no call

    seconds = tracking_timeout()
    if threading.current_thread() is not threading.main_thread():
        yield lambda extra=0.0: None
        return

    def expired(signum: int, frame: Any) -> None:
        raise _TimedOut

    def arm(extra: float = 0.0) -> None:
        signal.setitimer(signal.ITIMER_REAL, seconds + extra)

    previous = signal.signal(signal.SIGALRM, expired)
    try:
        arm()
        yield arm
    except _TimedOut:
        raise TrackingError(
            f"could not {what} at {mlflow.get_tracking_uri()}: no answer within {seconds:g} s "
            "(NUMDIFF_TRACKING_TIMEOUT)"
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
    keeps the name it was given."""
    import mlflow
    from mlflow.environment_variables import MLFLOW_RUN_ID

    if not MLFLOW_RUN_ID.get():
        run_name = run_name or default_run_name
    with mlflow_errors(what):
        active = mlflow.active_run() if use_active else None
        run = active or mlflow.start_run(
            run_name=run_name, experiment_id=experiment_id(experiment_name)
        )
        try:
            yield run
        except BaseException as exc:
            if active is None and not isinstance(exc, _TimedOut):  # a hung server: no more
                with contextlib.suppress(Exception):  # the server may be gone: nothing to tell
                    mlflow.end_run(status="FAILED")
            raise
        if active is None:
            mlflow.end_run()


def check_store_location() -> None:
    """Refuse at once a relative tracking store path under ``mlflow run`` (`InputError`).

    ``mlflow run`` creates the run in the store the path names from the caller's folder, then
    runs the step in the project folder, where the same path names another store: the step
    would fail late ("Run … not found") and leave a stray store in the project.
    """
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if not os.environ.get("MLFLOW_RUN_ID") or not _relative_store(uri):
        return
    raise InputError(
        f"MLFLOW_TRACKING_URI {uri!r} is a relative path, which under `mlflow run` names "
        f"another store in the project folder {os.getcwd()!r}; give an absolute one, e.g. "
        "MLFLOW_TRACKING_URI=sqlite:///$PWD/mlflow.db"
    )


def _relative_store(uri: str) -> bool:
    if uri.startswith("sqlite:///"):
        path = uri.removeprefix("sqlite:///")
        return bool(path) and path != ":memory:" and not path.startswith("/")
    parsed = urlparse(uri)
    return parsed.scheme in ("", "file") and bool(parsed.path) and not parsed.path.startswith("/")


def record_failure(message: str, exit_code: int) -> None:
    """Tag the run ``mlflow run`` started with why its step failed, so that a pipeline can tell
    bad input from a failed gate (``numeric_diff.gate``). Best effort: the step fails anyway."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id or _relative_store(os.environ.get("MLFLOW_TRACKING_URI", "")):
        return
    from mlflow import MlflowClient

    what = "tag the run"
    with contextlib.suppress(TrackingError, InputError), deadline(what), mlflow_errors(what):
        client = MlflowClient()
        client.set_tag(run_id, f"{PREFIX}.error", message[:5000])
        client.set_tag(run_id, f"{PREFIX}.exit_code", str(exit_code))


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
    fail_under: float | None = None  # the quality gate, when one was asked for
    notes: tuple[str, ...] = ()  # one-line hints shown with the results
    reports: tuple[Path, ...] = ()  # plots and summary, logged next to the results

    @property
    def gate(self) -> str | None:
        """``"passed"`` or ``"failed"`` when a gate was asked for (pass rate >= fail_under)."""
        if self.fail_under is None:
            return None
        return "passed" if self.aggregates["pass_rate"] >= self.fail_under else "failed"

    def description(self) -> str:
        """The run's description (Markdown): the headline, the input, the gate."""
        unparseable = int(self.aggregates["n_unparseable"])
        summary = f"{headline(self.aggregates)}; {unparseable:,} unparseable"
        lines = [f"**Numeric diff**: {summary}.", "", f"Input: `{self.source}`"]
        lines += [line for note in self.notes for line in ("", f"Note: {note}.")]
        if self.gate is not None:
            rate = self.aggregates["pass_rate"]
            sign = ">=" if self.gate == "passed" else "<"
            lines += ["", f"Gate {self.gate}: pass rate {rate:.4f} {sign} {self.fail_under:g}."]
        return "\n".join(lines)


def params(evaluation: Evaluation) -> dict[str, str]:
    """Run params, under ``numeric_diff/`` so they never clash with what ``mlflow run`` logs."""
    return {
        **scoring_params(
            evaluation.options, evaluation.output_col, evaluation.expected_col, evaluation.id_col
        ),
        f"{PREFIX}/predictions": evaluation.source,
        f"{PREFIX}/engine": evaluation.engine,
    }


def scoring_params(
    options: Options, output_col: str, expected_col: str, id_col: str | None
) -> dict[str, str]:
    """How rows were scored, as params (and in a results file's metadata); booleans spelled as
    the MLproject spells them (``true``/``false``)."""
    values: dict[str, Any] = {
        **options.as_dict(),
        "output_col": output_col,
        "expected_col": expected_col,
        "id_col": id_col or "",
    }
    return {
        f"{PREFIX}/{k}": str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in values.items()
    }


def metrics(aggregates: Mapping[str, float]) -> dict[str, float]:
    """``numeric_diff/<name>`` for each aggregate that is a number (NaN is not logged), and the
    pass rate's standard error, ``numeric_diff/pass_rate_stderr``."""
    values = dict(aggregates)
    if "pass_rate" in values and "n_rows" in values:
        values["pass_rate_stderr"] = pass_rate_stderr(values["pass_rate"], values["n_rows"])
    return {f"{PREFIX}/{k}": float(v) for k, v in values.items() if not math.isnan(v)}


def tags(evaluation: Evaluation) -> dict[str, str]:
    """Run tags: the description, the input, the engine, and the gate when there is one."""
    values = {
        "mlflow.note.content": evaluation.description(),
        f"{PREFIX}.input": evaluation.source,
        f"{PREFIX}.engine": evaluation.engine,
    }
    if evaluation.gate is not None:
        values[f"{PREFIX}.gate"] = evaluation.gate
    return values


def table_for_ui(results: pd.DataFrame, id_col: str | None) -> pd.DataFrame:
    """The results ordered for reading: id, label, score, the numbers read, then the input."""
    first = [id_col] if id_col else []
    first += ["label", "score", "output_value", "expected_value", "abs_error", "passed"]
    return results[first + [c for c in results.columns if c not in first]]


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
    """Log params, metrics, the input as a dataset and the results to an MLflow run; its id.

    The run is the one ``mlflow run`` started (``MLFLOW_RUN_ID``) or a new one. ``results`` (the
    per-item frame) is logged as a table when not ``None``, and ``input_frame`` is then the whole
    input; otherwise ``input_frame`` is the input's first rows, and only its schema is logged.
    The complete Parquet copy is read from ``evaluation.results_dir``. A tracking failure raises
    `TrackingError`, and the run, when it was started, is marked FAILED.
    """
    import mlflow

    results_file = evaluation.results_dir / RESULTS_PARQUET
    with (
        deadline("log to MLflow") as arm,
        mlflow_run(
            run_name=run_name, default_run_name=default_run_name, experiment_name=experiment_name
        ) as run,
    ):
        arm()
        mlflow.log_params(params(evaluation))
        arm()
        mlflow.log_metrics(metrics(evaluation.aggregates))
        arm()
        mlflow.set_tags(tags(evaluation))
        dataset = _dataset(input_frame, evaluation, complete=results is not None)
        arm()
        mlflow.log_input(dataset, context="evaluation")
        arm(upload_seconds(results_file))
        mlflow.log_artifact(str(results_file), artifact_path=PREFIX)
        if results is not None:
            arm(results.memory_usage(deep=True).sum() / 2**20)
            mlflow.log_table(
                data=table_for_ui(results, evaluation.id_col),
                artifact_file=f"{PREFIX}/{RESULTS_JSON}",
            )
        for report in evaluation.reports:
            arm(upload_seconds(report))
            mlflow.log_artifact(str(report), artifact_path=PREFIX)
        _log_plots([r for r in evaluation.reports if r.suffix == ".png"], arm)
        arm()
    return str(run.info.run_id)


def _log_plots(plots: list[Path], arm: Callable[..., None]) -> None:
    """The plots where compared runs show them side by side: at the artifact root (the compare
    page lists only those) and as images with a key (the chart view)."""
    import mlflow
    from PIL import Image

    for plot in plots:
        arm(upload_seconds(plot))
        mlflow.log_artifact(str(plot))
        arm(upload_seconds(plot))
        with Image.open(plot) as image:
            mlflow.log_image(image.convert("RGB"), key=f"{PREFIX}/{plot.stem}", step=0)


# --- reading a run's results, and logging a comparison ------------------------------------------


@dataclass(frozen=True)
class RunResults:
    """The per-item results of one run (or one local Parquet file) and what it was scored with."""

    frame: pd.DataFrame
    source: str
    params: Mapping[str, str] = field(default_factory=dict)
    status: str | None = None  # of a run: FINISHED, RUNNING, FAILED, KILLED
    deleted: bool = False  # a run in the trash of its experiment

    @property
    def id_col(self) -> str | None:
        return self.params.get(f"{PREFIX}/id_col") or None

    @property
    def options(self) -> dict[str, str]:
        """The scoring options it was made with, as recorded (empty when unknown)."""
        recorded = {name: self.params.get(f"{PREFIX}/{name}") for name in OPTION_NAMES}
        return {name: value for name, value in recorded.items() if value is not None}


_NOT_THERE = ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE")


def load_results(ref: str) -> RunResults:
    """The results of run ``ref`` (a run id), or of a local results file or folder (a Spark
    engine's) when ``ref`` is one; the id column they were scored with comes along."""
    path = Path(ref)
    if path.suffix == ".parquet" or path.exists():
        if not path.exists() or (path.is_dir() and not any(path.glob("*.parquet"))):
            raise InputError(f"results file not found: {ref!r}")
        try:
            return _local_results(path, ref)
        except (OSError, ValueError, pa.ArrowException) as exc:  # a bad or foreign file
            raise InputError(f"cannot read {ref!r} as parquet: {first_line(exc)}") from exc

    import mlflow
    from mlflow.exceptions import MlflowException

    with deadline(f"read run {ref!r}") as arm, mlflow_errors(f"read run {ref!r}"):
        try:
            client = mlflow.MlflowClient()
            run = client.get_run(ref)
            arm()
            sizes = [f.file_size or 0 for f in client.list_artifacts(ref, PREFIX)]
            arm(sum(sizes) / 2**20)
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
    deleted = run.info.lifecycle_stage == "deleted"
    return RunResults(frame, ref, dict(run.data.params), run.info.status, deleted)


def download_artifact(uri: str, folder: str) -> str:
    """Download the artifact ``uri`` (``runs:/<run_id>/<path>``...) into ``folder``; its local
    path. Within the tracking deadline: a server that fails or does not answer is
    `TrackingError`; a run or artifact that is not there is `InputError`."""
    import mlflow
    from mlflow.exceptions import MlflowException

    what = f"download {uri!r}"
    with deadline(what), mlflow_errors(what):
        try:
            return str(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=folder))
        except MlflowException as exc:
            if exc.error_code not in _NOT_THERE:
                raise  # the server failed, not the artifact: a tracking failure
            raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc
        except FileNotFoundError as exc:  # a local artifact store without that file
            raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc


def _local_results(path: Path, ref: str) -> RunResults:
    """A results file (its id column in its metadata) or folder (in `RESULTS_METADATA`)."""
    if path.is_dir():
        files = sorted(str(p) for p in path.glob("*.parquet"))
        table = ds.dataset(files, format="parquet").to_table()
        sidecar = path / RESULTS_METADATA
        recorded = json.loads(sidecar.read_text()) if sidecar.exists() else {}
    else:
        table = pq.read_table(path)
        recorded = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    params = {k: v for k, v in recorded.items() if k.startswith(f"{PREFIX}/")}
    return RunResults(table.to_pandas(), ref, params)


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
    name = f"compare {a[:8]} {b[:8]}"
    with (
        deadline("log to MLflow"),
        mlflow_run(run_name=name, experiment_name=experiment_name) as run,
    ):
        mlflow.log_params({"compare/run_a": a, "compare/run_b": b})
        mlflow.log_metrics(metrics)
        mlflow.log_text(json.dumps(summary, indent=2), "compare/comparison.json")
        return str(run.info.run_id)
