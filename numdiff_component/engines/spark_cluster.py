"""The Spark engine on a cluster: the code that goes with the job, paths a cluster understands,
a cluster's failures as one line, and output that is whole or absent.

A cluster's workers have Python, pyarrow, pandas and numpy, not this package: the package goes
with the job as a zip of its installed files, built once per process (`code_zip`), added to each
session once (`ship_code`): ``SparkSession.addArtifacts(..., pyfile=True)`` on Spark Connect,
``SparkContext.addPyFile`` on a classic session. Spark reads a relative path where it runs (a
Spark Connect server resolves it on the server), so local paths go to Spark as absolute
``file:`` URIs (`spark_uri`) and remote URIs as given.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import io
import os
import re
import shutil
import socket
import tempfile
import time
import weakref
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.inputs.tables import local_path

CONNECT_PORT = 15002
"""Spark Connect's port when ``sc://host`` names none."""
TIMEOUT_ENV = "NUMDIFF_SPARK_TIMEOUT"
DEFAULT_TIMEOUT_S = 10.0
"""Seconds to reach a Spark Connect server or a standalone master before giving up (exit 3)."""


class ClusterUnreachable(TrackingError):
    """The Spark cluster (a Spark Connect server, a standalone master) could not be reached.
    A `TrackingError`, so the CLI exits with 3, as when the tracking server is down."""


# --- the code that goes with the job ----------------------------------------------------------


@functools.cache
def code_zip() -> Path:
    """A zip of the installed ``numdiff_component`` package (its ``.py`` files, subpackages
    included), built once per process in a temporary folder removed at exit. The name holds a
    hash of the content, so a cluster never mixes two versions under one name."""
    package = Path(__file__).resolve().parents[1]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name = (Path(package.name) / path.relative_to(package)).as_posix()
            # A fixed time: the same files make the same bytes, hence the same name.
            archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), path.read_bytes())
    data = buffer.getvalue()
    folder = Path(tempfile.mkdtemp(prefix="numdiff-code-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / f"numdiff_component-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    path.write_bytes(data)
    return path


_shipped: weakref.WeakSet[Any] = weakref.WeakSet()


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext, no JVM here)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def ship_code(spark: Any) -> None:
    """Make the package importable by the workers of ``spark``'s jobs (once per session)."""
    if spark in _shipped:
        return
    path = str(code_zip())
    with cluster_errors("cannot send the numdiff_component code to the Spark cluster"):
        if is_connect(spark):
            spark.addArtifacts(path, pyfile=True)
        else:
            spark.sparkContext.addPyFile(path)
    _shipped.add(spark)


# --- paths ------------------------------------------------------------------------------------


def spark_uri(source: str) -> str:
    """``source`` as Spark should get it: a local path as an absolute ``file:`` URI (not
    percent-encoded: Spark takes the characters as they are), a remote URI as given.

    >>> spark_uri("/data/a b.csv"), spark_uri("s3://bucket/t.csv"), spark_uri("dbfs:/t.csv")
    ('file:///data/a b.csv', 's3://bucket/t.csv', 'dbfs:/t.csv')
    """
    local = local_path(source)
    if local is None:
        return source
    return "file://" + os.path.abspath(local)


# --- reaching the cluster ---------------------------------------------------------------------


def _timeout() -> float:
    text = os.environ.get(TIMEOUT_ENV, "")
    try:
        seconds = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 3600:
        raise InputError(f"{TIMEOUT_ENV} must be a number of seconds in (0, 3600), got {text!r}")
    return seconds


def _addresses(url: str) -> list[tuple[str, int]]:
    """The host:port pairs of ``sc://host[:port]/;params`` or ``spark://h1:p1,h2:p2``."""
    scheme, _, rest = url.partition("://")
    hosts = rest.split("/", 1)[0].split(";", 1)[0]
    default = CONNECT_PORT if scheme == "sc" else 7077
    found = []
    for host in hosts.split(","):
        parsed = urlparse(f"//{host}")
        if parsed.hostname:
            found.append((parsed.hostname, parsed.port or default))
    return found


def check_reachable(url: str) -> None:
    """Raise `ClusterUnreachable` unless one address of ``url`` (``sc://`` or ``spark://``)
    accepts a connection within the deadline (``NUMDIFF_SPARK_TIMEOUT``, 10 s by default).
    Spark itself would retry for minutes."""
    timeout = _timeout()
    addresses = _addresses(url)
    deadline = time.monotonic() + timeout
    reason = "no host in the URL"
    for host, port in addresses:
        try:
            left = max(deadline - time.monotonic(), 0.1)
            with socket.create_connection((host, port), timeout=left):
                return
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise ClusterUnreachable(
        f"cannot reach the Spark cluster at {url!r} within {timeout:g} s: {reason} "
        f"(is it running? {TIMEOUT_ENV} sets the deadline)"
    )


# --- failures ---------------------------------------------------------------------------------

_PYTHON_ERROR = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", re.MULTILINE)
_MODULE = re.compile(r"No module named '([^']+)'")
_UNREACHABLE = ("UNAVAILABLE", "failed to connect", "Connection refused", "DEADLINE_EXCEEDED")


def cause(exc: BaseException) -> str:
    """The line of a Spark failure that names its cause.

    A Python worker's failure comes as "An exception was thrown from the Python worker" and its
    traceback: the cause is the traceback's last error line.
    """
    text = str(exc)
    errors = _PYTHON_ERROR.findall(text)
    if "Python worker" in text and errors:
        kind, message = errors[-1]
        module = _MODULE.search(message)
        if module:
            return (
                f"the Spark workers' Python cannot import {module.group(1)!r} ({kind}); "
                "they need Python with pyarrow, pandas and numpy"
            )
        return f"{kind.rsplit('.', 1)[-1]}: {message.strip()} (in a Spark worker)"
    return first_line(exc)


def cluster_error(exc: BaseException, doing: str) -> Exception:
    """The one-line error to raise for a Spark failure while ``doing`` something: a cluster
    that cannot be reached is `ClusterUnreachable` (exit 3), anything else an `InputError`."""
    line = cause(exc)
    if type(exc).__name__ == "SparkConnectGrpcException" and any(
        word in str(exc) for word in _UNREACHABLE
    ):
        return ClusterUnreachable(f"{doing}: the Spark cluster cannot be reached: {line}")
    return InputError(f"{doing}: {line}")


@contextlib.contextmanager
def cluster_errors(doing: str) -> Iterator[None]:
    """Turn a Spark, py4j or grpc failure inside the block into `cluster_error` (one line)."""
    try:
        yield
    except Exception as exc:
        if _ours(exc) or not _spark_failure(exc):
            raise
        raise cluster_error(exc, doing) from exc


def _ours(exc: BaseException) -> bool:
    return isinstance(exc, (InputError, TrackingError))


def _spark_failure(exc: BaseException) -> bool:
    """Errors of pyspark, py4j, grpc, or the JVM (not the package's own errors)."""
    module = type(exc).__module__ or ""
    return module.startswith(("pyspark", "py4j", "grpc")) or isinstance(exc, OSError)


# --- output that is whole or absent -----------------------------------------------------------


def stop_jobs(spark: Any) -> None:
    """Cancel what the session runs (best effort: on the way out of an interrupted job)."""
    try:
        if is_connect(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:  # the job is being abandoned anyway
        pass


def remove_partial(spark: Any, folder: Path, settle_s: float = 5.0) -> None:
    """Cancel the session's jobs and remove ``folder`` (a half-written results folder).

    A cancelled task may still be writing for a moment, and a write recreates its parent
    folders, so the folder is removed until it stays gone (within ``settle_s``)."""
    stop_jobs(spark)
    deadline = time.monotonic() + settle_s
    gone_since: float | None = None
    while True:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
            gone_since = None
        elif gone_since is None:
            gone_since = time.monotonic()
        now = time.monotonic()
        if (gone_since is not None and now - gone_since >= 0.5) or now > deadline:
            break
        time.sleep(0.1)
    shutil.rmtree(folder, ignore_errors=True)
