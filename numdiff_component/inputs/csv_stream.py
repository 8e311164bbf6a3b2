"""pyarrow's streaming CSV reader over a stream that pyarrow reads from threads of its own.

pyarrow reads a Python stream ahead of the rows asked for, in a thread of its own, and lets
go of it there. Two things can then go wrong:

- a reader stopped early (an error in a row, a signal) may still be reading when the stream is
  closed; the stream's file descriptor, given again to the next file opened, would then be read
  by that reader, and the next file loses bytes (measured: rows missing from the CSV file read
  right after the header's reader);
- a pyarrow thread that lets go of a block it read (a Python buffer) or enters Python while the
  interpreter finalizes aborts the process ("terminate called without an active exception",
  exit 134). The ``numdiff`` command ends before finalization (`numdiff_component.cli.main`);
  in other processes (the tests) the streams are waited for at exit, and a reader stopped early
  is run out before it is let go, which leaves few blocks in flight.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pyarrow as pa
import pyarrow.csv as pa_csv


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


@atexit.register
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
