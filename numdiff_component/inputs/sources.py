"""Finding the input: what a source names (a local path, a ``file:`` URI, an ``http(s)://`` URL,
an MLflow ``runs:/`` artifact, another URI), its format, and a local regular file to read.

Limits, so that no input hangs the process or grows its memory without bound:

- ``http://`` and ``https://`` inputs are downloaded to a temporary file before reading, waiting
  at most `HTTP_TIMEOUT` seconds (30) to connect, for each read and for the status line and
  headers, and at most `DOWNLOAD_FACTOR` (10) times that for the whole download (environment
  variables ``NUMDIFF_HTTP_TIMEOUT`` and ``NUMDIFF_DOWNLOAD_TIMEOUT``), so a server that trickles
  bytes cannot hold the job.
- A ``runs:/`` artifact is downloaded within the tracking deadline (``NUMDIFF_TRACKING_TIMEOUT``):
  a server that fails or does not answer is a tracking failure, an artifact that is not there is
  bad input.
- A named pipe (``<(zcat t.csv.gz)``) is copied to a temporary file, waiting at most
  ``NUMDIFF_HTTP_TIMEOUT`` seconds for each read, so a pipe nobody writes to is refused. A device
  (``/dev/zero``) or a socket is refused.
- A download or pipe, and what is read whole into memory, is at most `MAX_INPUT_BYTES` bytes
  (4 GiB), decompressed (environment variable ``NUMDIFF_MAX_INPUT_BYTES``).
- A table has at most `MAX_COLUMNS` columns (10,000): `check_width`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import http.client
import math
import os
import select
import shutil
import signal
import stat
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import unquote, urlparse

from numdiff_component.errors import InputError, first_line

FORMATS = ("csv", "parquet", "json", "jsonl")
_EXTENSIONS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")
_PICKLE = (".pkl", ".pickle", ".joblib")
_MLFLOW_SCHEMES = ("runs", "models", "mlflow-artifacts")
_HTTP_SCHEMES = ("http", "https")

HTTP_TIMEOUT = 30.0
DOWNLOAD_FACTOR = 10
MAX_INPUT_BYTES = 4 << 30
MAX_ROW_BYTES = 32 << 20
MAX_COLUMNS = 10_000


def setting(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``, else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{name} must be a positive number, got {text!r}")
    return value


def max_input_bytes() -> int:
    return int(setting("NUMDIFF_MAX_INPUT_BYTES", MAX_INPUT_BYTES))


def max_row_bytes() -> int:
    """The longest CSV row read whole (``NUMDIFF_MAX_ROW_BYTES``): such a row takes about 10
    times its bytes of memory (benchmarks/bench_long_row.py: 32 MiB, 278 MiB)."""
    return int(setting("NUMDIFF_MAX_ROW_BYTES", MAX_ROW_BYTES))


def over_limit(limit: int) -> str:
    return (
        f"it is larger than the input limit of {limit:,} bytes; "
        "raise NUMDIFF_MAX_INPUT_BYTES to read it"
    )


def copy_within(source: IO[bytes], target: IO[bytes], limit: int) -> None:
    """Copy ``source`` to ``target``; `ValueError` past ``limit`` bytes."""
    total = 0
    while chunk := source.read(1 << 20):
        total += len(chunk)
        if total > limit:
            raise ValueError(over_limit(limit))
        target.write(chunk)


def check_width(n_columns: int, *, at_least: bool = False) -> None:
    """`ValueError` when a table has more than `MAX_COLUMNS` columns."""
    if n_columns > MAX_COLUMNS:
        count = f"at least {n_columns:,}" if at_least else f"{n_columns:,}"
        raise ValueError(
            f"it has {count} columns, more than the limit of {MAX_COLUMNS:,}; "
            "keep only the columns to score (output, expected, an id)"
        )


def sample_path() -> Path:
    """The sample prediction table shipped inside the package."""
    return Path(str(resources.files("numdiff_component") / "data" / "sample.csv"))


def local_path(source: str) -> str | None:
    """The local path ``source`` names (a path or a ``file:`` URI), or ``None`` for a URI.

    >>> local_path("file:///data/a%20b.csv"), local_path("C:\\\\t.csv"), local_path("s3://b/t.csv")
    ('/data/a b.csv', 'C:\\\\t.csv', None)
    """
    parsed = urlparse(source)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return source if len(parsed.scheme) <= 1 else None  # "C:" is a drive, not a scheme


def is_remote(source: str) -> bool:
    """Whether ``source`` is a URI (``s3://``, ``https://``, ``runs:/``...), not a local path.

    >>> is_remote("runs:/abc/t.csv"), is_remote("/data/http://t.csv"), is_remote("file:/t.csv")
    (True, False, False)
    """
    return local_path(source) is None


def _file_part(source: str) -> str:
    """The path part of ``source``: the local path, or the path inside the URI."""
    return local_path(source) or urlparse(source).path


def dataset_name(source: str) -> str:
    """The name of the table at ``source``: its file or folder name without extensions.

    >>> dataset_name("s3://bucket/preds.csv.gz"), dataset_name("out/run-1/")
    ('preds', 'run-1')
    """
    return Path(_file_part(source).rstrip("/\\")).name.split(".")[0] or "predictions"


def detect_format(source: str) -> str:
    """The format named by the extension of ``source``, compression suffixes ignored."""
    stem, ext = os.path.splitext(_file_part(source).lower())
    if ext in COMPRESSION:
        ext = os.path.splitext(stem)[1]
    if ext in _PICKLE:
        raise InputError(
            f"{source!r} is a pickle file, which is not read: unpickling runs code; "
            "save the table as parquet or csv"
        )
    if ext not in _EXTENSIONS:
        raise InputError(
            f"cannot tell the format of {source!r} from its extension; "
            f"pass --format with one of {', '.join(FORMATS)}"
        )
    return _EXTENSIONS[ext]


def _check_artifact_uri(source: str) -> None:
    """A ``runs:/`` URI names an artifact inside its run: a ``..`` that climbs out is refused."""
    path = urlparse(source).path
    for _ in range(3):  # %2e%2e, and %252e%252e encoded twice
        path = unquote(path)
    if ".." in path.replace("\\", "/").split("/"):
        raise InputError(
            f"{source!r} reaches outside its run with '..'; name an artifact inside the run, "
            "e.g. runs:/<run_id>/predictions.csv"
        )


def _temp_folder() -> str:
    folder = tempfile.mkdtemp(prefix="numdiff-input-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a copy: gone with the process
    return folder


class _Late(BaseException):
    """A download passed its deadline. Not an `Exception`, which a library may catch."""


@contextlib.contextmanager
def _deadline() -> Iterator[Callable[[float], None]]:
    """Yields ``arm(seconds)``: from then on, the block ends within ``seconds`` or raises `_Late`.
    A timer signal, so that a socket read that trickles on is interrupted. Outside the main
    thread no signal can be used: each read is then bounded by its own timeout only."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda seconds: None
        return

    def expired(signum: int, frame: Any) -> None:
        raise _Late

    def arm(seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))

    previous = signal.signal(signal.SIGALRM, expired)
    try:
        yield arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fetch(url: str) -> str:
    """Download ``url`` to a temporary file, within the timeouts and the input limit: the status
    line and headers within the HTTP timeout, the whole download within the download one."""
    timeout = setting("NUMDIFF_HTTP_TIMEOUT", HTTP_TIMEOUT)
    whole = setting("NUMDIFF_DOWNLOAD_TIMEOUT", DOWNLOAD_FACTOR * timeout)
    limit = max_input_bytes()
    name = PurePosixPath(urlparse(url).path).name  # keeps the extensions, e.g. t.csv.gz
    path = os.path.join(_temp_folder(), name if name not in ("", ".", "..") else "input")
    slow = f"no answer within {timeout:g} s; raise NUMDIFF_HTTP_TIMEOUT to wait longer"
    started, answered = time.monotonic(), False
    try:
        with _deadline() as arm:
            arm(timeout)
            with urllib.request.urlopen(url, timeout=timeout) as response, open(path, "wb") as out:
                answered = True
                arm(whole - (time.monotonic() - started))
                if (response.length or 0) > limit:
                    raise ValueError(over_limit(limit))
                copy_within(response, out, limit)
    except _Late:
        reason = (
            f"not complete within {whole:g} s; raise NUMDIFF_DOWNLOAD_TIMEOUT to wait longer"
            if answered
            else slow
        )
    except urllib.error.HTTPError as exc:
        reason = f"HTTP {exc.code} {exc.reason}"
    except urllib.error.URLError as exc:
        reason = slow if isinstance(exc.reason, TimeoutError) else str(exc.reason)
    except TimeoutError:
        reason = slow
    except (OSError, ValueError, http.client.HTTPException) as exc:
        reason = first_line(exc)
    else:
        return path
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # a partial download: up to the limit
    raise InputError(f"cannot download {url!r}: {reason}")


def _copy_pipe(path: str, source: str) -> str:
    """The named pipe ``path`` copied to a temporary file, waiting at most the HTTP timeout for
    each read: a pipe nobody writes to is refused, not waited on forever."""
    timeout = setting("NUMDIFF_HTTP_TIMEOUT", HTTP_TIMEOUT)
    limit = max_input_bytes()
    copy = os.path.join(_temp_folder(), os.path.basename(path))
    # Opened without blocking: a blocking open waits for a writer, without any deadline.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    total = 0
    try:
        with open(copy, "wb") as out:
            while True:
                if not poll.poll(timeout * 1000):
                    raise ValueError(
                        f"nothing to read within {timeout:g} s (a pipe nobody writes to?); "
                        "raise NUMDIFF_HTTP_TIMEOUT to wait longer"
                    )
                chunk = os.read(fd, 1 << 20)
                if not chunk:  # every writer closed the pipe
                    return copy
                total += len(chunk)
                if total > limit:
                    raise ValueError(over_limit(limit))
                out.write(chunk)
    except (OSError, ValueError) as exc:
        shutil.rmtree(os.path.dirname(copy), ignore_errors=True)
        raise InputError(f"cannot read {source!r}: {first_line(exc)}") from exc
    finally:
        os.close(fd)


def _local_file(path: str, source: str) -> str:
    """The regular file to read for the local ``path``: a pipe is copied to a temporary file;
    anything else that is not a readable regular file is refused."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(
                f"{source!r} is a symbolic link loop (it leads back to itself); "
                "point the link at a file"
            ) from exc
        if os.path.islink(path):
            raise InputError(
                f"{source!r} is a symbolic link to {os.path.realpath(path)!r}, which does not "
                "exist; point the link at a file"
            ) from exc
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            raise InputError(f"cannot read {source!r}: {exc.strerror}") from exc
        hint = ""
        if os.environ.get("MLFLOW_RUN_ID") and not os.path.isabs(path):
            hint = (
                f" (under `mlflow run`, a relative path is read from the project folder "
                f"{os.getcwd()!r}: pass an absolute path or a URI)"
            )
        raise InputError(f"predictions file not found: {source!r}{hint}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"{source!r} is a directory; give a file ({', '.join(FORMATS)}), "
            "or read a folder of files with --engine spark"
        )
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {source!r}: permission denied")
    if stat.S_ISREG(info.st_mode):
        return path
    if not stat.S_ISFIFO(info.st_mode):
        raise InputError(
            f"{source!r} is not a regular file (a device or a socket); give a file "
            f"({', '.join(FORMATS)})"
        )
    return _copy_pipe(path, source)


def locate(source: str, fmt: str | None) -> tuple[str | None, str]:
    """The local regular file to read for ``source`` (``None`` for a URI pandas reads) and the
    format (``fmt``, else from the extension).

    Checks what can be checked before reading (the file exists, is a file, is readable, has a
    known format); a ``runs:/`` artifact or an ``http(s)://`` URL is downloaded, a named pipe
    copied, to a temporary file removed at exit. Raises `InputError` with one line, and
    `TrackingError` when the tracking server fails to give a ``runs:/`` artifact.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    scheme = urlparse(source).scheme
    local: str | None
    if scheme in _MLFLOW_SCHEMES:
        from numdiff_component.tracking.boundary import download_artifact

        _check_artifact_uri(source)
        local = download_artifact(source, _temp_folder())
    elif scheme in _HTTP_SCHEMES:
        fmt = fmt or detect_format(source)  # before downloading what could not be read
        local = _fetch(source)
    else:
        local = local_path(source)
    if local is not None:
        local = _local_file(local, source)
    fmt = fmt or detect_format(source)
    if fmt == "parquet" and (local or source).lower().endswith(COMPRESSION):
        raise InputError(
            f"{source!r} is a compressed Parquet file; Parquet compresses its own pages: "
            "give the .parquet file uncompressed"
        )
    return local, fmt
