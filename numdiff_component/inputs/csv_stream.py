"""pyarrow's streaming CSV reader over a Python stream, which pyarrow reads ahead in threads of
its own: `csv_reader` makes sure that once its block ends no such thread reads the stream any
more (its file descriptor may be given to the next file opened), and that the process waits at
exit for the threads still holding one (a pyarrow thread that lets go of a Python buffer while
the interpreter finalizes aborts the process; the ``numdiff`` command ends before that)."""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from numdiff_component.process import at_exit_once


class _CrlfWhole(io.RawIOBase):
    r"""Reads that never end between the ``\r`` and ``\n`` of a line end: pyarrow's CSV reader
    drops the ``\n`` of a quoted ``"\r\n"`` that a block boundary splits (pyarrow 25).
    Once `end` returns, no read of the stream runs or starts."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.held, self.ended = stream, b"", False
        self._lock = threading.Lock()  # held while the stream is read
        _read_by_arrow.add(self)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        with self._lock:
            data, self.held = (b"" if self.ended else self.held + self.stream.read(size)), b""
        if len(data) > 1 and data.endswith(b"\r"):
            data, self.held = data[:-1], b"\r"
        return data

    def end(self) -> None:
        with self._lock:
            self.ended = True


_read_by_arrow: weakref.WeakSet[_CrlfWhole] = weakref.WeakSet()


def _let_go_of_streams(seconds: float = 5.0) -> None:
    if _read_by_arrow:
        gc.collect()  # a reader still held by an exception's reference cycle
        deadline = time.monotonic() + seconds
        while _read_by_arrow and time.monotonic() < deadline:
            time.sleep(0.005)


@contextmanager
def csv_reader(
    stream: IO[bytes],
    read: pa_csv.ReadOptions | None = None,
    parse: pa_csv.ParseOptions | None = None,
    convert: pa_csv.ConvertOptions | None = None,
) -> Iterator[pa_csv.CSVStreamingReader]:
    """pyarrow's streaming reader of the CSV text in ``stream``; once the block ends, whatever
    happened in it, the reader reads no more of ``stream``, which can be closed."""
    at_exit_once(_let_go_of_streams)
    source = _CrlfWhole(stream)
    reader = pa_csv.open_csv(source, read, parse, convert)
    try:
        yield reader
    finally:
        source.end()  # from here on, its reads are the end of the stream
        # Run out: fewer blocks left in flight for pyarrow's threads to let go of later.
        with contextlib.suppress(pa.ArrowException):
            for _ in reader:
                pass


def longest_row(table: pa.Table) -> int:
    """The bytes of the longest row's cells."""
    lengths = [pc.binary_length(column) for column in table.columns]
    return int(pc.max(functools.reduce(pc.add, lengths)).as_py() or 0)


def regroup(reader: pa.RecordBatchReader, rows: int | None, size: int) -> Iterator[pa.Table]:
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
