"""Loading prediction tables: local paths, URIs pandas reads, and MLflow ``runs:/`` artifacts.

Values are kept as the file holds them: CSV cells stay text (``"007"`` keeps its zeros, ``"1e999"``
is not turned into inf before the parser sees it), JSON keeps its own types.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

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


@dataclass(frozen=True)
class Table:
    """A loaded table and where it came from (``source``: what the user gave)."""

    frame: pd.DataFrame
    source: str
    name: str
    format: str


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


def _download(uri: str) -> str:
    import mlflow

    try:
        return str(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=tempfile.mkdtemp()))
    except Exception as exc:  # MlflowException, OSError: all mean the artifact is not there
        raise InputError(f"cannot download {uri!r}: {first_line(exc)}") from exc


def _local_path(source: str) -> str | None:
    parsed = urlparse(source)
    if parsed.scheme == "file":
        return parsed.path
    return source if len(parsed.scheme) <= 1 else None  # "C:" is a drive, not a scheme


def _check_local(path: str, source: str) -> None:
    if os.path.isdir(path):
        raise InputError(f"{source!r} is a directory; give a file ({', '.join(FORMATS)})")
    if not os.path.exists(path):
        raise InputError(f"predictions file not found: {source!r}")
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {source!r}: permission denied")


def read_frame(path: str, fmt: str) -> pd.DataFrame:
    """Read a whole table of format ``fmt`` from a local path or a URI pandas reads."""
    if fmt == "csv":
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    if fmt == "parquet":
        return pd.read_parquet(path)
    frame = pd.read_json(
        path, lines=fmt == "jsonl", dtype=False, convert_dates=False, precise_float=True
    )
    if not isinstance(frame, pd.DataFrame):  # pragma: no cover - read_json returns frames here
        raise ValueError("not a table")
    return frame


def load_table(source: str | None = None, fmt: str | None = None) -> Table:
    """Load the prediction table at ``source`` (the packaged sample when ``None`` or empty).

    Raises `InputError` with one line for a missing, unreadable or empty table.
    """
    if not source:
        path = str(sample_path())
        return Table(read_frame(path, "csv"), path, "numdiff_sample", "csv")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    local = _download(source) if _is_mlflow_uri(source) else _local_path(source)
    if local is not None:
        _check_local(local, source)
    fmt = fmt or detect_format(source)
    try:
        frame = read_frame(local or source, fmt)
    except Exception as exc:  # pandas and pyarrow raise many types for a bad file
        raise InputError(f"cannot read {source!r} as {fmt}: {first_line(exc)}") from exc
    if len(frame) == 0:
        raise InputError(f"no rows to score in {source!r}")
    name = Path(urlparse(source).path if "://" in source else source).name
    return Table(frame, source, name.split(".")[0] or "predictions", fmt)
