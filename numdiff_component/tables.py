"""Loading prediction tables: local paths, URIs pandas reads, and MLflow ``runs:/`` artifacts.

Values are kept as the file holds them: CSV cells stay text (``"007"`` keeps its zeros, ``"1e999"``
is not turned into inf before the parser sees it), JSON keeps its own types.
"""

from __future__ import annotations

import atexit
import codecs
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
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
_PICKLE = (".pkl", ".pickle", ".joblib")
_MLFLOW_SCHEMES = ("runs", "models", "mlflow-artifacts")


DEFAULT_BATCH_ROWS = 200_000


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

        CSV and Parquet files on this machine and JSON Lines are streamed, in bounded memory;
        a JSON document and remote URIs are read whole. Read errors raise `InputError`.
        """
        try:
            if self.format == "csv" and "://" not in self.path:
                # Whole (batch_rows None): one block the size of the file.
                size = os.path.getsize(self.path) + 1 if batch_rows is None else batch_rows * 64
                yield from _csv_batches(self.path, max(1 << 12, size))
            elif batch_rows is None or (self.format == "parquet" and "://" in self.path):
                yield read_frame(self.path, self.format)
            elif self.format == "parquet":
                for batch in pq.ParquetFile(self.path).iter_batches(batch_size=batch_rows):
                    yield batch.to_pandas()
            elif self.format == "jsonl":
                for chunk in pd.read_json(
                    self.path, lines=True, chunksize=batch_rows, **_JSON_OPTIONS
                ):
                    yield _records(chunk)
            else:
                yield read_frame(self.path, self.format)
        except (InputError, StreamBroken):
            raise
        except Exception as exc:  # pandas and pyarrow raise many types for a bad file
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
    if "://" not in path:
        decoder = codecs.getincrementaldecoder("utf-8")()
        line = 1
        try:
            with pa.input_stream(path, compression="detect") as stream:
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
        except OSError:  # the position is a courtesy; the message stands without it
            where = ""
    return f"it is not valid UTF-8{where}; save it as UTF-8"


def _csv_batches(path: str, block_size: int) -> Iterator[pd.DataFrame]:
    """CSV cells as text, in blocks of bytes: every column typed string, empty cells ``""``."""
    # A quoted cell may hold newlines (a model's multi-line answer); without this option a block
    # boundary inside such a cell puts the reader out of sync. It costs no measurable time.
    parse = pa_csv.ParseOptions(newlines_in_values=True)
    try:
        names = pa_csv.open_csv(
            path, pa_csv.ReadOptions(block_size=block_size), parse_options=parse
        ).schema.names
        reader = pa_csv.open_csv(
            path,
            read_options=pa_csv.ReadOptions(block_size=block_size),
            parse_options=parse,
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            ),
        )
        for batch in reader:
            yield batch.to_pandas()
    except pa.ArrowInvalid as exc:
        if "straddl" in str(exc):  # a row longer than a block
            raise StreamBroken from exc
        raise


def sample_path() -> Path:
    """The sample prediction table shipped inside the package."""
    return Path(str(resources.files("numdiff_component") / "data" / "sample.csv"))


def detect_format(source: str) -> str:
    """The format named by the extension of ``source``, compression suffixes ignored."""
    path = urlparse(source).path if "://" in source else source
    stem, ext = os.path.splitext(path.lower())
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


def _is_mlflow_uri(source: str) -> bool:
    return urlparse(source).scheme in _MLFLOW_SCHEMES


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


def _download(uri: str) -> str:
    import mlflow

    folder = tempfile.mkdtemp(prefix="numdiff-input-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a copy: gone with the process
    try:
        return str(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=folder))
    except Exception as exc:  # MlflowException, OSError: all mean the artifact is not there
        raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc


def local_path(source: str) -> str | None:
    """The local path ``source`` names (a path or a ``file:`` URI), or ``None`` for a URI."""
    parsed = urlparse(source)
    if parsed.scheme == "file":
        return parsed.path
    return source if len(parsed.scheme) <= 1 else None  # "C:" is a drive, not a scheme


def _check_local(path: str, source: str) -> None:
    if os.path.isdir(path):
        raise InputError(
            f"{source!r} is a directory; give a file ({', '.join(FORMATS)}), "
            "or read a folder of files with --engine spark"
        )
    if not os.path.exists(path):
        hint = ""
        if os.environ.get("MLFLOW_RUN_ID") and not os.path.isabs(path):
            hint = (
                f" (under `mlflow run`, a relative path is read from the project folder "
                f"{os.getcwd()!r}: pass an absolute path or a URI)"
            )
        raise InputError(f"predictions file not found: {source!r}{hint}")
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {source!r}: permission denied")


def read_frame(path: str, fmt: str) -> pd.DataFrame:
    """Read a whole table of format ``fmt`` from a local path or a URI pandas reads."""
    if fmt == "csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    if fmt == "parquet":
        return pd.read_parquet(path)
    try:
        frame = pd.read_json(path, lines=fmt == "jsonl", **_JSON_OPTIONS)
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError) or not any(s in str(exc) for s in _SCALAR_JSON):
            raise
        raise ValueError(_NOT_A_TABLE) from exc
    if not isinstance(frame, pd.DataFrame):  # pragma: no cover - read_json returns frames here
        raise ValueError(_NOT_A_TABLE)
    return _records(frame)


def open_table(source: str | None = None, fmt: str | None = None) -> Table:
    """The prediction table at ``source`` (the packaged sample when ``None`` or empty).

    Checks what can be checked before reading (the file exists, is a file, is readable, has a
    known format; a ``runs:/`` artifact is downloaded); raises `InputError` with one line.
    """
    if not source:
        path = str(sample_path())
        return Table(path, path, "numdiff_sample", "csv")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if _is_mlflow_uri(source):
        _check_artifact_uri(source)
    local = _download(source) if _is_mlflow_uri(source) else local_path(source)
    if local is not None:
        _check_local(local, source)
    fmt = fmt or detect_format(source)
    name = Path(urlparse(source).path if "://" in source else source).name
    return Table(source, local or source, name.split(".")[0] or "predictions", fmt)


def load_table(source: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """The whole prediction table at ``source`` as one frame; `InputError` when it is empty."""
    table = open_table(source, fmt)
    frame = table.read()
    if len(frame) == 0:
        raise InputError(f"no rows to score in {table.source!r}")
    return frame
