"""The MLflow boundary: runs start and end here (`mlflow_run`), MLflow failures become
`TrackingError` here (`mlflow_errors`), and each tracking call gets its deadline (`within`).
What is logged and read through it is `numdiff_component.tracking.records`'."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.process import Late, deadline, on_main_thread
from numdiff_component.task.results import (
    PREFIX,
)
from numdiff_component.tracking.settings import relative_store, store_lock, tracking_timeout

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
        if not on_main_thread():
            warnings.warn(_OFF_MAIN_THREAD, RuntimeWarning, stacklevel=2)
            return call(*args, **kwargs)

        try:
            with deadline() as arm:
                arm(seconds)
                return call(*args, **kwargs)
        except Late:
            raise _NoAnswer(
                f"could not {what} at {mlflow.get_tracking_uri()}: no answer within "
                f"{seconds:g} s (NUMDIFF_TRACKING_TIMEOUT)"
            ) from None


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
    """Whether ``name`` is one MLflow makes up for a run nobody named (``glamorous-wolf-831``).

    No public API says so: MLflow's own word lists are read, and without them (a later MLflow)
    no name is taken for made up, so a run is never renamed."""
    from mlflow.utils import name_utils

    predicates = getattr(name_utils, "_GENERATOR_PREDICATES", ())
    nouns = getattr(name_utils, "_GENERATOR_NOUNS", ())
    parts = (name or "").split("-")
    return (
        len(parts) == 3
        and parts[0] in {p.lower() for p in predicates}
        and parts[1] in {n.lower() for n in nouns}
        and parts[2].isdigit()
    )


def record_failure(message: str, exit_code: int) -> None:
    """Tag the run ``mlflow run`` started with why its step failed, so that a pipeline can tell
    bad input from a failed gate (``numeric_diff.gate``). Best effort: the step fails anyway."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id or relative_store(os.environ.get("MLFLOW_TRACKING_URI", "")):
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
