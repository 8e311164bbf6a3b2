"""pyarrow's CSV reader reads ahead in threads of its own: once `csv_reader`'s block ends, it
must not read the stream any more (its file descriptor may already belong to the next file)."""

from __future__ import annotations

import io
import threading
import time

import pyarrow.csv as pa_csv

from numdiff_component.inputs.csv_stream import csv_reader


class SlowRows(io.RawIOBase):
    """Endless CSV rows, each read taking a little time; counts reads after `closed_at`."""

    def __init__(self) -> None:
        self.reads_after_close = 0
        self.closed_at: float | None = None
        self.lock = threading.Lock()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        time.sleep(0.002)
        with self.lock:
            if self.closed_at is not None:
                self.reads_after_close += 1
        return b"1,1\n" * (max(size, 4) // 4)


def test_no_read_of_the_stream_once_the_block_ends() -> None:
    stream = SlowRows()
    read = pa_csv.ReadOptions(block_size=1 << 12, column_names=["output", "expected"])
    with csv_reader(stream, read) as reader:
        reader.read_next_batch()  # the reader now reads ahead, in its own thread
    with stream.lock:
        stream.closed_at = time.monotonic()
    time.sleep(0.3)  # a reader still reading ahead would read a hundred times by now
    assert stream.reads_after_close == 0


def test_rows_are_read_whole_through_it() -> None:
    text = b"output,expected\n" + b"".join(b'"a\r\nb %d",%d\r\n' % (i, i) for i in range(5000))
    read = pa_csv.ReadOptions(block_size=1 << 12)
    parse = pa_csv.ParseOptions(newlines_in_values=True)
    with csv_reader(io.BytesIO(text), read, parse) as reader:
        table = reader.read_all()
    assert table.num_rows == 5000
    assert table.column("output")[4999].as_py() == "a\r\nb 4999"
