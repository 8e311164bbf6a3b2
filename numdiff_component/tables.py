"""Loading prediction tables: local paths, ``http(s)://`` URLs, URIs pandas reads, and MLflow
``runs:/`` artifacts.

Values are kept as the file holds them: CSV cells stay text (``"007"`` keeps its zeros, ``"1e999"``
is not turned into inf before the parser sees it), JSON keeps its own types. A Parquet index with
a name (``df.set_index("id").to_parquet(...)``) comes back as a column.

Compression follows the extension: ``.gz``, ``.bz2``, ``.xz``, ``.zst``, and ``.zip`` holding
exactly one file. A Parquet file is not read through outer compression (its pages are compressed).

Limits, so that no input hangs the process or grows its memory without bound:

- ``http://`` and ``https://`` inputs are downloaded to a temporary file before reading, waiting
  at most `HTTP_TIMEOUT` seconds (30) to connect and for each read (environment variable
  ``NUMDIFF_HTTP_TIMEOUT``). A named pipe is copied the same way; a device (``/dev/zero``) or a
  socket is refused.
- A download or pipe, and what is read whole into memory (a JSON document; a CSV row longer than a
  streaming block), is at most `MAX_INPUT_BYTES` bytes (4 GiB), decompressed (environment variable
  ``NUMDIFF_MAX_INPUT_BYTES``). Local CSV, Parquet and JSON Lines files are streamed in batches and
  have no size limit.
- A table has at most `MAX_COLUMNS` columns (10,000), checked on the CSV header and the Parquet
  schema before any row is read (on the frame for JSON).

Other URIs (``s3://``, ``gs://``...) are read whole by pandas through fsspec, without these limits.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import csv
import errno
import http.client
import io
import lzma
import math
import os
import shutil
import stat
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import unquote, urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

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
_COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")
_ARROW_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_PICKLE = (".pkl", ".pickle", ".joblib")
_MLFLOW_SCHEMES = ("runs", "models", "mlflow-artifacts")
_HTTP_SCHEMES = ("http", "https")

DEFAULT_BATCH_ROWS = 200_000
_STREAM_BLOCK = 1 << 20  # pyarrow's CSV reader reads up to 32 blocks ahead: 32 MiB at most
MAX_COLUMNS = 10_000
HTTP_TIMEOUT = 30.0
MAX_INPUT_BYTES = 4 << 30
_HEADER_BYTES = 1 << 20  # enough for a header of MAX_COLUMNS columns; a longer one is refused
_MAX_BLOCK = (1 << 31) - 1  # pyarrow's CSV block size is an int32

# What the readers raise for a file they cannot read. Anything else (TypeError, AttributeError,
# KeyError...) is a bug here, and is not passed off as bad input.
_READ_ERRORS = (
    pa.ArrowException,  # ArrowInvalid (bad CSV or Parquet), ArrowTypeError, ...
    OSError,  # unreadable file, corrupt gzip or bz2
    ValueError,  # pandas' ParserError, EmptyDataError and bad JSON; UnicodeDecodeError
    EOFError,  # a compressed file cut short
    lzma.LZMAError,
    zipfile.BadZipFile,
    zlib.error,
    ImportError,  # pandas: the fsspec package for a URI scheme is not installed
)


class StreamBroken(Exception):
    """The table cannot be read batch by batch (a cell larger than a block; a JSON Lines
    column whose type changes): read it whole instead."""


@dataclass(frozen=True)
class Table:
    """A prediction table to read: ``source`` is what the user gave, ``path`` what is read."""

    source: str
    path: str
    name: str
    format: str

    def batches(self, batch_rows: int | None = DEFAULT_BATCH_ROWS) -> Iterator[pd.DataFrame]:
        """The rows in order, as frames of about ``batch_rows`` rows (``None``: one frame).

        CSV, Parquet and JSON Lines files on this machine are streamed, in bounded memory;
        a JSON document and URIs pandas reads are read whole. Raises `InputError` for a file
        that cannot be read, `StreamBroken` when it must be read whole instead.
        """
        try:
            if batch_rows is None or self.format == "json" or is_remote(self.path):
                yield read_frame(self.path, self.format)
            elif self.format == "csv":
                size = max(1 << 12, batch_rows * 64)
                yield from _csv_batches(self.path, min(size, _STREAM_BLOCK), batch_rows, size)
            elif self.format == "parquet":
                yield from _parquet_batches(self.path, batch_rows)
            else:
                yield from _json_lines(self.path, batch_rows)
        except (InputError, StreamBroken):
            raise
        except _READ_ERRORS as exc:
            reason = (_is_decode_error(exc) and _not_utf8(self.path)) or first_line(exc)
            raise InputError(f"cannot read {self.source!r} as {self.format}: {reason}") from exc

    def read(self) -> pd.DataFrame:
        """The whole table as one frame."""
        return next(iter(self.batches(None)))


# convert_axes=False keeps column names as written: pandas would turn a column "007" into 7.
_JSON_OPTIONS: dict[str, Any] = {
    "dtype": False,
    "convert_dates": False,
    "precise_float": True,
    "convert_axes": False,
}
_NOT_A_TABLE = (
    'not a table; give a list of records like [{"output": "3", "expected": "3"}] '
    "(JSON Lines: one record per line)"
)
# What pandas says when the JSON document is a scalar or an object of scalars.
_SCALAR_JSON = ("DataFrame constructor not properly called", "If using all scalar values")


def _records(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` when it came from records or columns; numbered columns mean a list of scalars
    or of arrays, which has no column names to score."""
    if any(not isinstance(column, str) for column in frame.columns):
        raise ValueError(_NOT_A_TABLE)
    return frame


def _is_decode_error(exc: BaseException) -> bool:
    return isinstance(exc, UnicodeDecodeError) or "invalid UTF8" in str(exc)


def _not_utf8(path: str) -> str | None:
    """Why ``path`` cannot be read, naming the first byte that is not UTF-8 and its line;
    ``None`` when every byte is UTF-8 after all (the reader's message is then the one to give).

    Only called after a read failed, so reading the file again costs nothing in the normal case.
    Cells are never decoded with replacement characters: that would change the user's data.
    """
    where = ""
    if not is_remote(path):
        decoder = codecs.getincrementaldecoder("utf-8")()
        line = 1
        try:
            with _open_bytes(path) as stream:
                while chunk := stream.read(1 << 20):
                    pending = decoder.getstate()[0]
                    try:
                        decoder.decode(chunk)
                    except UnicodeDecodeError as exc:
                        at = max(exc.start - len(pending), 0)
                        line += chunk.count(b"\n", 0, at)
                        where = f": byte 0x{(pending + chunk)[exc.start]:02x} on line {line}"
                        break
                    line += chunk.count(b"\n")
                else:
                    if not decoder.getstate()[0]:
                        return None
                    where = f": a character cut short on line {line}, at the end"
        except _READ_ERRORS:  # the position is a courtesy; the message stands without it
            where = ""
    return f"it is not valid UTF-8{where}; save it as UTF-8"


def _setting(name: str, default: float) -> float:
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


def _max_input_bytes() -> int:
    return int(_setting("NUMDIFF_MAX_INPUT_BYTES", MAX_INPUT_BYTES))


def _over_limit(limit: int) -> str:
    return (
        f"it is larger than the input limit of {limit:,} bytes; "
        "raise NUMDIFF_MAX_INPUT_BYTES to read it"
    )


def _copy(source: IO[bytes], target: IO[bytes], limit: int) -> None:
    """Copy ``source`` to ``target``; `ValueError` past ``limit`` bytes."""
    total = 0
    while chunk := source.read(1 << 20):
        total += len(chunk)
        if total > limit:
            raise ValueError(_over_limit(limit))
        target.write(chunk)


def _check_width(n_columns: int, *, at_least: bool = False) -> None:
    """`ValueError` when a table has more than `MAX_COLUMNS` columns."""
    if n_columns > MAX_COLUMNS:
        count = f"at least {n_columns:,}" if at_least else f"{n_columns:,}"
        raise ValueError(
            f"it has {count} columns, more than the limit of {MAX_COLUMNS:,}; "
            "keep only the columns to score (output, expected, an id)"
        )


def _open_bytes(path: str) -> IO[bytes]:
    """The bytes of the local file ``path``, decompressed as its extension says."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".xz":
        return lzma.open(path)
    if ext == ".zip":
        with zipfile.ZipFile(path) as archive:  # the member stays readable once this closes
            files = [info for info in archive.infolist() if not info.is_dir()]
            if len(files) != 1:
                raise ValueError(
                    f"a .zip must hold exactly one file, this one holds {len(files)}; "
                    "zip the table alone, or give it unzipped"
                )
            return archive.open(files[0])
    return pa.input_stream(path, compression=_ARROW_CODECS.get(ext))


def _open_text(path: str) -> IO[str]:
    return io.TextIOWrapper(_open_bytes(path), encoding="utf-8")


def _read_whole(path: str) -> str:
    """The text of ``path``, decompressed; `ValueError` past the input limit."""
    data = io.BytesIO()
    with _open_bytes(path) as stream:
        _copy(stream, data, _max_input_bytes())
    return data.getvalue().decode("utf-8")


def _csv_width(path: str) -> None:
    """Refuse a CSV whose header has more than `MAX_COLUMNS` names, reading only its start."""
    with _open_bytes(path) as stream:
        head = stream.read(_HEADER_BYTES)
    text = io.StringIO(head.decode("utf-8", "replace"))  # only counted, never kept
    try:
        header = next(csv.reader(text), [])
    except csv.Error:  # a name longer than csv's field limit: the reader will say what is wrong
        return
    cut = len(head) == _HEADER_BYTES and text.tell() == len(text.getvalue())
    _check_width(len(header), at_least=cut)


class _CrlfWhole(io.RawIOBase):
    r"""Reads that never end between the ``\r`` and ``\n`` of a line end: pyarrow's CSV reader
    drops the ``\n`` of a quoted ``"\r\n"`` that a block boundary splits (pyarrow 25)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.held = stream, b""

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data, self.held = self.held + self.stream.read(size), b""
        if len(data) > 1 and data.endswith(b"\r"):
            data, self.held = data[:-1], b"\r"
        return data


def _csv_batches(
    path: str, block_size: int, batch_rows: int | None = None, batch_bytes: int = 0
) -> Iterator[pd.DataFrame]:
    """CSV cells as text, read in blocks of ``block_size`` bytes (the longest row that can be
    streamed), as frames of at most ``batch_rows`` rows and about ``batch_bytes`` bytes (one
    frame a block by default): every column typed string, empty cells ``""``."""
    _csv_width(path)
    # A quoted cell may hold newlines (a model's multi-line answer); without this option a block
    # boundary inside such a cell puts the reader out of sync. It costs no measurable time.
    parse = pa_csv.ParseOptions(newlines_in_values=True)
    read = pa_csv.ReadOptions(block_size=block_size)
    try:
        with _open_bytes(path) as stream:
            names = pa_csv.open_csv(stream, read, parse_options=parse).schema.names
        with _open_bytes(path) as stream:
            convert = pa_csv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            )
            reader = pa_csv.open_csv(_CrlfWhole(stream), read, parse, convert)
            for table in _regroup(reader, batch_rows, batch_bytes):
                yield table.to_pandas()
    except pa.ArrowInvalid as exc:
        if "straddl" in str(exc):  # a row longer than a block
            raise StreamBroken from exc
        raise


def _regroup(reader: pa.RecordBatchReader, rows: int | None, size: int) -> Iterator[pa.Table]:
    """The reader's rows in order, as tables of at most ``rows`` rows (``None``: no limit) that
    end once they hold ``size`` bytes or more; sliced and chunked, never copied."""
    held: list[pa.RecordBatch] = []
    n = nbytes = 0
    for batch in reader:
        if not held and batch.num_rows == 0:
            held.append(batch)  # an empty file's single batch still gives a frame
        while batch.num_rows:
            part = batch.slice(0, batch.num_rows if rows is None else rows - n)
            batch = batch.slice(part.num_rows)
            held.append(part)
            n, nbytes = n + part.num_rows, nbytes + part.nbytes
            if n == rows or nbytes >= size:
                yield pa.Table.from_batches(held, reader.schema)
                held, n, nbytes = [], 0, 0
    if held:
        yield pa.Table.from_batches(held, reader.schema)


def _csv_whole(path: str) -> pd.DataFrame:
    """The whole CSV file, in blocks that double until the longest row fits (compressed files
    do not say how long they are), up to the input limit."""
    cap = min(_max_input_bytes(), _MAX_BLOCK)
    block = min(max(1 << 20, os.path.getsize(path) + 1), cap)
    while True:
        try:
            frames = list(_csv_batches(path, block))
        except StreamBroken:
            if block >= cap:
                raise ValueError(
                    f"a row is longer than {cap:,} bytes; {_over_limit(cap)}"
                ) from None
            block = min(2 * block, cap)
            continue
        if frames:
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        with _open_bytes(path) as stream:  # no rows: the columns all the same
            schema = pa_csv.open_csv(stream).schema
        return pd.DataFrame({name: pd.Series(dtype=str) for name in schema.names})


def _index_as_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Named index levels (``df.set_index("id")`` written by pandas) back as columns; an
    unnamed index (a RangeIndex, the row numbers of a filtered frame) is dropped."""
    named = [name for name in frame.index.names if name is not None]
    if named:
        frame = frame.reset_index(level=named)
    return frame.reset_index(drop=True)


def _parquet_batches(path: str, batch_rows: int | None) -> Iterator[pd.DataFrame]:
    with pq.ParquetFile(path) as file:
        _check_width(len(file.schema_arrow.names))
        if batch_rows is None:
            yield _index_as_columns(file.read().to_pandas())
            return
        for batch in file.iter_batches(batch_size=batch_rows):
            yield _index_as_columns(batch.to_pandas())


@contextlib.contextmanager
def _pandas_json() -> Iterator[None]:
    """pandas raises TypeError for records mixed with scalars or arrays: not a table."""
    try:
        yield
    except TypeError as exc:
        raise ValueError(_NOT_A_TABLE) from exc


def _json_lines(path: str, batch_rows: int) -> Iterator[pd.DataFrame]:
    with _open_text(path) as text:
        chunks = iter(pd.read_json(text, lines=True, chunksize=batch_rows, **_JSON_OPTIONS))
        while True:
            with _pandas_json():
                chunk = next(chunks, None)
            if chunk is None:
                return
            _check_width(len(chunk.columns))
            yield _records(chunk)


def _json_frame(text: str | IO[str], fmt: str) -> pd.DataFrame:
    """A JSON document or JSON Lines from an open text or a URI pandas reads, as a table."""
    try:
        with _pandas_json():
            frame = pd.read_json(text, lines=fmt == "jsonl", **_JSON_OPTIONS)
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError) or not any(s in str(exc) for s in _SCALAR_JSON):
            raise
        raise ValueError(_NOT_A_TABLE) from exc
    if not isinstance(frame, pd.DataFrame):  # pragma: no cover - read_json returns frames here
        raise ValueError(_NOT_A_TABLE)
    _check_width(len(frame.columns))
    return _records(frame)


def read_frame(path: str, fmt: str) -> pd.DataFrame:
    """Read a whole table of format ``fmt`` from a local path (within the limits of this module)
    or a URI pandas reads."""
    if not is_remote(path):
        if fmt == "csv":
            return _csv_whole(path)
        if fmt == "parquet":
            return next(_parquet_batches(path, None))
        return _json_frame(io.StringIO(_read_whole(path)), fmt)
    if fmt == "csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    elif fmt == "parquet":
        frame = _index_as_columns(pd.read_parquet(path))
    else:
        return _json_frame(path, fmt)
    _check_width(len(frame.columns))
    return frame


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
    if ext in _COMPRESSION:
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


def _download(uri: str) -> str:
    import mlflow

    try:
        return str(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=_temp_folder()))
    except Exception as exc:  # MlflowException, OSError: all mean the artifact is not there
        raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc


def _fetch(url: str) -> str:
    """Download ``url`` to a temporary file, within the timeout and the input limit."""
    timeout = _setting("NUMDIFF_HTTP_TIMEOUT", HTTP_TIMEOUT)
    limit = _max_input_bytes()
    name = PurePosixPath(urlparse(url).path).name  # keeps the extensions, e.g. t.csv.gz
    path = os.path.join(_temp_folder(), name if name not in ("", ".", "..") else "input")
    slow = f"no answer within {timeout:g} s; raise NUMDIFF_HTTP_TIMEOUT to wait longer"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(path, "wb") as out:
            if (response.length or 0) > limit:
                raise ValueError(_over_limit(limit))
            _copy(response, out, limit)
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
    copy = os.path.join(_temp_folder(), os.path.basename(path))
    try:
        with open(path, "rb") as pipe, open(copy, "wb") as out:
            _copy(pipe, out, _max_input_bytes())
    except (OSError, ValueError) as exc:
        shutil.rmtree(os.path.dirname(copy), ignore_errors=True)
        raise InputError(f"cannot read {source!r}: {first_line(exc)}") from exc
    return copy


def open_table(source: str | None = None, fmt: str | None = None) -> Table:
    """The prediction table at ``source`` (the packaged sample when ``None`` or empty).

    Checks what can be checked before reading (the file exists, is a file, is readable, has a
    known format; a ``runs:/`` artifact or an ``http(s)://`` URL is downloaded, a named pipe
    copied, to a temporary file removed at exit); raises `InputError` with one line.
    """
    if not source:
        path = str(sample_path())
        return Table(path, path, "numdiff_sample", "csv")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    scheme = urlparse(source).scheme
    local: str | None
    if scheme in _MLFLOW_SCHEMES:
        _check_artifact_uri(source)
        local = _download(source)
    elif scheme in _HTTP_SCHEMES:
        fmt = fmt or detect_format(source)  # before downloading what could not be read
        local = _fetch(source)
    else:
        local = local_path(source)
    if local is not None:
        local = _local_file(local, source)
    fmt = fmt or detect_format(source)
    if fmt == "parquet" and (local or source).lower().endswith(_COMPRESSION):
        raise InputError(
            f"{source!r} is a compressed Parquet file; Parquet compresses its own pages: "
            "give the .parquet file uncompressed"
        )
    return Table(source, local or source, dataset_name(source), fmt)


def load_table(source: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """The whole prediction table at ``source`` as one frame; `InputError` when it is empty."""
    table = open_table(source, fmt)
    frame = table.read()
    if len(frame) == 0:
        raise InputError(f"no rows to score in {table.source!r}")
    return frame
