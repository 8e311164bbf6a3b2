"""Reading JSON documents and JSON Lines as tables, every value kept exactly as the file holds it.

pandas' own reader turns a column of integers and floats into floats (``2**53 + 1`` comes back
as ``9007199254740992.0``) and a null beside text into NaN. Here the document is parsed by the
`json` module (integers exact, floats as written, ``null`` as ``None``), and each column is given
pandas' type only when that type keeps every value (`json_column`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import IO, Any

import pandas as pd

from numdiff_component.inputs.sources import check_width

# convert_axes=False keeps column names as written: pandas would turn a column "007" into 7.
_JSON_OPTIONS: dict[str, Any] = {"dtype": False, "precise_float": True, "convert_axes": False}
NOT_A_TABLE = (
    'not a table; give a list of records like [{"output": "3", "expected": "3"}] '
    "(JSON Lines: one record per line)"
)

NESTED_TOO_DEEP = "a value is nested deeper than Python's JSON reader goes (about 1,000 levels)"


def parse_json(text: str) -> Any:
    """``json.loads(text)``, where a value nested too deep is a `ValueError`, not a
    `RecursionError` (a 10 kB file can nest 5,000 levels)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(NESTED_TOO_DEEP) from None


def json_column(values: list[Any]) -> pd.Series:
    """A column of JSON values, each kept exactly: pandas' own type when it keeps every value
    (text, booleans, numbers a float holds exactly), else the values as they are (object), null
    as ``None``: an integer beyond 2**53 beside a float stays that integer.

    >>> json_column([2**53 + 1, 0.5]).tolist(), json_column([1, 0.5]).tolist()
    ([9007199254740993, 0.5], [1.0, 0.5])
    >>> json_column(["a", 5, None, True]).tolist()
    ['a', 5, None, True]
    """
    column = pd.Series(values)
    if column.dtype.kind == "f" and any(type(v) is int and float(v) != v for v in values):
        return pd.Series(values, dtype=object)
    return column


def json_table(document: Any) -> pd.DataFrame:
    """A parsed JSON document as a table: a list of records, or an object of columns (each a
    list, or an object from row key to value, as pandas writes them); `ValueError` otherwise."""
    if isinstance(document, list) and all(isinstance(r, dict) for r in document):
        names = dict.fromkeys(name for record in document for name in record)
        check_width(len(names))
        columns = {name: [r.get(name) for r in document] for name in names}
    elif isinstance(document, dict) and all(isinstance(c, dict) for c in document.values()):
        check_width(len(document))
        rows = dict.fromkeys(key for column in document.values() for key in column)
        columns = {name: [c.get(key) for key in rows] for name, c in document.items()}
    elif isinstance(document, dict) and all(isinstance(c, list) for c in document.values()):
        check_width(len(document))
        if len({len(c) for c in document.values()}) > 1:
            raise ValueError("its columns have different lengths; give a list of records")
        columns = document
    else:
        raise ValueError(NOT_A_TABLE)
    return pd.DataFrame({name: json_column(values) for name, values in columns.items()})


def mixed_columns(frame: pd.DataFrame) -> list[str]:
    """The columns whose values are of several JSON types (text and numbers, say): no Parquet
    type holds them all, so the results store each such value as its JSON text."""
    return [
        c
        for c in frame.columns
        if frame[c].dtype == object and pd.api.types.infer_dtype(frame[c]).startswith("mixed")
    ]


def json_batches(text: IO[str], batch_rows: int | None) -> Iterator[pd.DataFrame]:
    """JSON Lines, one record per line, in frames of ``batch_rows`` lines (``None``: all)."""
    number = 0
    while True:
        records = []
        for line in itertools.islice(text, batch_rows):
            number += 1
            if line.strip():
                try:
                    records.append(parse_json(line))
                except ValueError as exc:
                    raise ValueError(f"line {number}: {exc}") from None
        if not records:
            return
        yield json_table(records)


def json_frame(text: str | IO[str], fmt: str) -> pd.DataFrame:
    """A whole JSON document or JSON Lines from an open text, or from a URI pandas reads (whose
    numbers are then as pandas reads them), as a table."""
    if isinstance(text, str):
        frame = pd.read_json(text, lines=fmt == "jsonl", **_JSON_OPTIONS)
        if any(not isinstance(column, str) for column in frame.columns):
            raise ValueError(NOT_A_TABLE)
        check_width(len(frame.columns))
        return frame
    if fmt == "jsonl":
        return next(json_batches(text, None), pd.DataFrame())
    return json_table(parse_json(text.read()))
