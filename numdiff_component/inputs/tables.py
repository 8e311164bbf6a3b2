"""Reading prediction tables batch by batch: CSV, Parquet, JSON and JSON Lines, from a local
file or a URI pandas reads. Finding and fetching the input (paths, URLs, ``runs:/`` artifacts,
pipes) is `numdiff_component.inputs.sources`.

Values are kept as the file holds them: CSV cells stay text (``"007"`` keeps its zeros, ``"1e999"``
is not turned into inf before the parser sees it), JSON keeps its own types and values (an integer
stays an integer, exactly, beside floats; null stays null). A Parquet index with a name
(``df.set_index("id").to_parquet(...)``) comes back as a column.

Compression follows the extension: ``.gz``, ``.bz2``, ``.xz``, ``.zst``, and ``.zip`` holding
exactly one file. A Parquet file is not read through outer compression (its pages are compressed).

Limits, so that no input grows the process's memory or time without bound:

- What is read whole into memory (a JSON document; a CSV row longer than a streaming block) is at
  most `sources.MAX_INPUT_BYTES` bytes (4 GiB), decompressed (``NUMDIFF_MAX_INPUT_BYTES``); a CSV
  row at most `sources.MAX_ROW_BYTES` (32 MiB, ``NUMDIFF_MAX_ROW_BYTES``), and never more than
  `_MAX_ROW` (1 GiB). Local CSV, Parquet and JSON Lines files are streamed in batches and have no
  size limit.
- A table has at most `MAX_COLUMNS` columns (10,000), checked on the CSV header (whatever its
  names; a header longer than `_HEADER_BYTES` is refused) and the Parquet schema before any row
  is read (on each batch for JSON).

Other URIs (``s3://``, ``gs://``...) are read whole by pandas through fsspec, without these limits.
"""

from __future__ import annotations

import codecs
import csv
import io
import lzma
import os
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from numdiff_component.errors import InputError, first_line
from numdiff_component.inputs.csv_stream import csv_reader, longest_row, regroup
from numdiff_component.inputs.json_tables import json_batches, json_frame, mixed_columns
from numdiff_component.inputs.sources import (
    check_width,
    copy_within,
    dataset_name,
    is_remote,
    locate,
    max_input_bytes,
    max_row_bytes,
    over_limit,
    sample_path,
)
from numdiff_component.task.arrow_frames import arrow_frame
from numdiff_component.task.config import DEFAULT_BATCH_ROWS

_ARROW_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}
_HEADER_BYTES = 16 << 20  # a CSV header of MAX_COLUMNS long names fits; a longer one is refused
_STREAM_BLOCK = 1 << 20  # pyarrow's CSV reader reads up to 32 blocks ahead: 32 MiB at most
_MAX_ROW = 1 << 30  # pyarrow's blocks and text arrays hold 2 GiB less a byte: a row, with room

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
            reason = (_is_decode_error(exc) and _not_utf8(self.path)) or _wide_text(self.path)
            reason = reason or first_line(exc)
            raise InputError(f"cannot read {self.source!r} as {self.format}: {reason}") from exc

    def read(self) -> pd.DataFrame:
        """The whole table as one frame."""
        return next(iter(self.batches(None)))


def _is_decode_error(exc: BaseException) -> bool:
    return isinstance(exc, UnicodeDecodeError) or "invalid utf8" in str(exc).lower()


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
                    if line == 1 and (utf16 := _utf16(chunk)):
                        return utf16
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
        copy_within(stream, data, max_input_bytes())
    return data.getvalue().decode("utf-8")


def _utf16(head: bytes) -> str | None:
    """Why text starting with ``head`` is not UTF-8 when it is UTF-16 or UTF-32, else ``None``."""
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32")):
        if head.startswith(bom):
            return f"it is {name} text (it starts with a {name} byte order mark); save it as UTF-8"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "it is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8"
    sample = head[:512]
    if len(sample) >= 4 and sample.count(0) >= len(sample) // 3:
        return "it looks like UTF-16 text (every other byte is NUL); save it as UTF-8"
    return None


def _wide_text(path: str) -> str | None:
    """`_utf16` of the local file ``path`` (NUL bytes decode as UTF-8: the reader fails later)."""
    if is_remote(path):
        return None
    try:
        with _open_bytes(path) as stream:
            return _utf16(stream.read(512))
    except _READ_ERRORS:
        return None


def _csv_width(path: str) -> None:
    """Refuse a CSV whose header has more than `MAX_COLUMNS` names, or is longer than
    `_HEADER_BYTES` (the count could not be known without reading on), reading only its start,
    whatever its names are: a name may be longer than the csv module's own field limit."""
    with _open_bytes(path) as stream:
        head = stream.read(_HEADER_BYTES)
    if reason := _utf16(head):
        raise ValueError(reason)
    text = io.StringIO(head.decode("utf-8", "replace"))  # only counted, never kept
    field_limit = csv.field_size_limit(_HEADER_BYTES)
    try:
        n_names = len(next(csv.reader(text), []))
        cut = len(head) == _HEADER_BYTES and text.tell() == len(text.getvalue())
    except csv.Error:  # counted as the delimiters of the first line: at least the names
        n_names, cut = head.split(b"\n", 1)[0].count(b",") + 1, False
    finally:
        csv.field_size_limit(field_limit)
    check_width(n_names, at_least=cut)
    if cut:
        raise ValueError(
            f"its header (the first row) is longer than {_HEADER_BYTES:,} bytes; "
            "keep only the columns to score (output, expected, an id)"
        )


def _csv_batches(
    path: str,
    block_size: int,
    batch_rows: int | None = None,
    batch_bytes: int = 0,
    max_row: int = 0,
) -> Iterator[pd.DataFrame]:
    """CSV cells as text, read in blocks of ``block_size`` bytes (the longest row that can be
    streamed), as frames of at most ``batch_rows`` rows and about ``batch_bytes`` bytes (one
    frame a block by default): every column typed string, empty cells ``""``. A row whose cells
    hold more than ``max_row`` bytes (when given) is `_RowTooLong`: pyarrow reads a row of up to
    two blocks."""
    _csv_width(path)
    # A quoted cell may hold newlines (a model's multi-line answer); without this option a block
    # boundary inside such a cell puts the reader out of sync. It costs no measurable time.
    parse = pa_csv.ParseOptions(newlines_in_values=True)
    read = pa_csv.ReadOptions(block_size=block_size)
    try:
        with _open_bytes(path) as stream, csv_reader(stream, read, parse) as head:
            names = head.schema.names
        # Read as bytes, made text here: a cell that is not UTF-8 fails in this thread, one
        # batch at a time, not in the reader's threads with blocks still in flight.
        convert = pa_csv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.binary()), strings_can_be_null=False
        )
        text = pa.schema([(name, pa.string()) for name in names])
        with _open_bytes(path) as stream, csv_reader(stream, read, parse, convert) as reader:
            for table in regroup(reader, batch_rows, batch_bytes):
                if max_row and table.num_rows and longest_row(table) > max_row:
                    raise _RowTooLong
                yield table.cast(text).to_pandas()
    except pa.ArrowInvalid as exc:
        if "straddl" in str(exc):  # a row longer than a block
            raise StreamBroken from exc
        raise


class _RowTooLong(Exception):
    """A CSV row longer than the row limit."""


def _csv_whole(path: str) -> pd.DataFrame:
    """The whole CSV file, in blocks that double until the longest row fits (compressed files
    do not say how long they are), up to the input limit."""
    row = min(max_row_bytes(), _MAX_ROW)
    cap = min(max_input_bytes(), row)
    block = min(max(1 << 20, os.path.getsize(path) + 1), cap)
    while True:
        try:
            frames = list(_csv_batches(path, block, max_row=cap))
        except (StreamBroken, _RowTooLong) as exc:
            if block >= cap or isinstance(exc, _RowTooLong):
                raise ValueError(
                    f"a row is longer than {cap:,} bytes{_row_limit(cap, row)}"
                ) from None
            block = min(2 * block, cap)
            continue
        if frames:
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        with _open_bytes(path) as stream, csv_reader(stream) as head:
            names = head.schema.names  # no rows: the columns all the same
        return pd.DataFrame({name: pd.Series(dtype=str) for name in names})


def _row_limit(cap: int, row: int) -> str:
    """What follows "a row is longer than ``cap`` bytes": which limit that is, and what to do."""
    if cap < row:
        return f"; {over_limit(cap)}"
    if row == _MAX_ROW:
        return ", the most any row may hold whatever NUMDIFF_MAX_ROW_BYTES says; split the cell"
    return (
        ", the row limit (a row read whole takes about 10 times its bytes of memory); "
        "raise NUMDIFF_MAX_ROW_BYTES to read it"
    )


def _index_as_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Named index levels (``df.set_index("id")`` written by pandas) back as columns; an
    unnamed index (a RangeIndex, the row numbers of a filtered frame) is dropped."""
    named = [name for name in frame.index.names if name is not None]
    if clash := [name for name in named if name in frame.columns]:
        raise ValueError(
            f"its index is named {clash[0]!r}, like a column; rename the index or the column "
            "(df.rename_axis(...)) or write it without its index (to_parquet(index=False))"
        )
    if named:
        frame = frame.reset_index(level=named)
    return frame.reset_index(drop=True)


def _check_no_bytes(schema: pa.Schema) -> None:
    """`ValueError` for a column of bytes: neither text nor a number, and not loggable."""
    for field in schema:
        kind = field.type
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            break
        if pa.types.is_fixed_size_binary(kind) or pa.types.is_binary_view(kind):
            break
    else:
        return
    raise ValueError(
        f"column {field.name!r} holds bytes ({field.type}), which are neither text nor numbers; "
        "store it as text (UTF-8 strings) or leave it out"
    )


def _parquet_batches(path: str, batch_rows: int | None) -> Iterator[pd.DataFrame]:
    with pq.ParquetFile(path) as file:
        check_width(len(file.schema_arrow.names))
        _check_no_bytes(file.schema_arrow)
        if batch_rows is None:
            yield _index_as_columns(arrow_frame(file.read()))
            return
        for batch in file.iter_batches(batch_size=batch_rows):
            yield _index_as_columns(arrow_frame(batch))


def _json_lines(path: str, batch_rows: int) -> Iterator[pd.DataFrame]:
    mixed = None
    with _open_text(path) as text:
        for frame in json_batches(text, batch_rows):
            if mixed is not None and mixed_columns(frame) != mixed:
                raise StreamBroken  # a column stored as JSON text in one batch, not another
            mixed = mixed_columns(frame)
            yield frame


def read_frame(path: str, fmt: str) -> pd.DataFrame:
    """Read a whole table of format ``fmt`` from a local path (within the limits of this module)
    or a URI pandas reads."""
    if not is_remote(path):
        if fmt == "csv":
            return _csv_whole(path)
        if fmt == "parquet":
            return next(_parquet_batches(path, None))
        return json_frame(io.StringIO(_read_whole(path)), fmt)
    if fmt == "csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    elif fmt == "parquet":
        frame = _index_as_columns(pd.read_parquet(path))
    else:
        return json_frame(path, fmt)
    check_width(len(frame.columns))
    return frame


def open_table(source: str | None = None, fmt: str | None = None) -> Table:
    """The prediction table at ``source`` (the packaged sample when ``None`` or empty).

    Checks what can be checked before reading, downloading or copying what is not a local
    regular file (`numdiff_component.inputs.sources.locate`); raises `InputError` with one line.
    """
    if not source:
        path = str(sample_path())
        return Table(path, path, "numdiff_sample", "csv")
    local, fmt = locate(source, fmt)
    return Table(source, local or source, dataset_name(source), fmt)
