"""The tracking settings a job reads from its environment, checked before any work: the
deadline of each tracking call (``NUMDIFF_TRACKING_TIMEOUT``), MLflow's HTTP retries, and where
the tracking store is. No MLflow here: `numdiff_component.tracking.boundary` applies them."""

from __future__ import annotations

import fcntl
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlparse

from numdiff_component.errors import InputError

DEFAULT_TIMEOUT = 20.0
"""Seconds each tracking call may take (``NUMDIFF_TRACKING_TIMEOUT``); an upload gets at least
one more second per MiB."""


def tracking_timeout() -> float:
    """The deadline of each tracking call, in seconds (``NUMDIFF_TRACKING_TIMEOUT``): a number
    > 0 that a timer can hold, else `InputError` (a bad setting)."""
    text = os.environ.get("NUMDIFF_TRACKING_TIMEOUT", "")
    try:
        seconds = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= threading.TIMEOUT_MAX:
        raise InputError(
            "NUMDIFF_TRACKING_TIMEOUT must be a number of seconds > 0 and at most "
            f"{threading.TIMEOUT_MAX:.0f}, got {text!r}"
        )
    return seconds


_HTTP_SETTINGS = (
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
)


def check_settings() -> None:
    """Refuse at once a tracking setting that cannot work (`InputError`), before any scoring:
    ``NUMDIFF_TRACKING_TIMEOUT`` (`tracking_timeout`) and MLflow's HTTP retries and timeout,
    which MLflow itself would reject only at its first request, with a traceback."""
    tracking_timeout()
    for name in _HTTP_SETTINGS:
        value = os.environ.get(name)
        if value is not None and not value.strip().isdigit():
            raise InputError(f"{name} must be a whole number >= 0, got {value!r}")


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


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Hold a local sqlite store's file for this process alone: jobs started at once on a store
    that does not exist yet would each make its tables (MLflow's migrations) and fail. The wait
    is bounded by the deadline of the calls of the job holding it. Nothing for other stores, nor
    for a path that cannot be opened (MLflow then says why)."""
    path = uri.removeprefix("sqlite:///").split("?")[0] if uri.startswith("sqlite:///") else ""
    fd = None
    if path and path != ":memory:":
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # sqlite takes an empty file
        except OSError:
            fd = None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # not sqlite's own locks (fcntl's): independent
        yield
    finally:
        if fd is not None:
            os.close(fd)  # and with it the lock
