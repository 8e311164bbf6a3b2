"""The job's samples per item (SPEC §3.3), in bounded memory: kept on disk by item, then
grouped two buckets at a time into ``items.parquet`` and the run's item totals.

A job scores batch by batch and an item's samples may be anywhere in the table. `ItemSamples`
keeps what the vote needs of each row (`numdiff_component.samples.samples_of`: a few numbers)
in `BUCKETS` Arrow files by a hash of the item, so each bucket holds whole items and is grouped
on its own by `numdiff_component.samples.items_of`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from numdiff_component.options import Options
from numdiff_component.samples import ItemTotals, items_of, samples_of

BUCKETS = 128
"""Bucket files the samples are spread over by their item's hash: each is grouped alone."""
WRITTEN_ROWS = 400_000
"""Samples kept in memory before they are written, a record batch per bucket."""
MOSTLY_DISTINCT = ("first_row", "mean_at_k", "maj_value", "maj_score")
"""The columns of ``items.parquet`` (`samples.ITEM_COLUMNS`) written without a dictionary, as
the item column: the others (counts, booleans, fractions of a few samples) take few values."""
ONE_GROUP_ROWS = 1_000_000
"""Up to this many samples are grouped at once, so their items come out in first-row order."""


def buckets(items: pa.Array) -> np.ndarray:
    """Each item's bucket, from 0 to `BUCKETS` - 1 (uint8: sorted by radix): the same for
    equal items. Text is hashed on its UTF-8 bytes in numpy (no Python object per row),
    anything else by pandas."""
    if not (pa.types.is_string(items.type) or pa.types.is_large_string(items.type)):
        keys = pd.util.hash_array(items.to_numpy(zero_copy_only=False))
        return (keys % BUCKETS).astype(np.uint8)
    width = np.int64 if pa.types.is_large_string(items.type) else np.int32
    offsets = np.frombuffer(items.buffers()[1], dtype=width)  # no null: samples_of refuses them
    offsets = offsets[items.offset : items.offset + len(items) + 1].astype(np.int64)
    data = np.frombuffer(items.buffers()[2] or b"", dtype=np.uint8)[offsets[0] : offsets[-1]]
    lengths = np.diff(offsets)
    starts = offsets[:-1] - offsets[0]
    where = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
    weights = _mixed(np.arange(1, int(lengths.max(initial=0)) + 1, dtype=np.uint64))
    with np.errstate(over="ignore"):  # wrapping arithmetic is the hash
        terms = (data.astype(np.uint64) + np.uint64(1)) * weights[where]
        keys = np.zeros(len(lengths), dtype=np.uint64)
        full = lengths > 0
        if len(data):
            keys[full] = np.add.reduceat(terms, starts[full])
    return (_mixed(keys) % np.uint64(BUCKETS)).astype(np.uint8)


def _mixed(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every bit of a key moves every bit of the result."""
    with np.errstate(over="ignore"):
        keys = (keys ^ (keys >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        keys = (keys ^ (keys >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return keys ^ (keys >> np.uint64(31))


class ItemSamples:
    """The samples of a job's scored batches, kept on disk by item (`BUCKETS` files, by a hash
    of the item), then grouped bucket by bucket into ``items.parquet`` (`write`)."""

    def __init__(
        self,
        item_col: str,
        ks: tuple[int, ...],
        options: Options,
        one_group_rows: int = ONE_GROUP_ROWS,
        beside: Path | None = None,
        written_rows: int = WRITTEN_ROWS,
    ) -> None:
        self.item_col, self.ks, self.options = item_col, ks, options
        self.one_group_rows, self.written_rows = one_group_rows, written_rows
        self.rows = 0
        # Beside the results (``beside``), not in a temporary folder that may be in memory.
        self._folder = Path(tempfile.mkdtemp(prefix=".numdiff-items-", dir=beside))
        self._writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
        self._schema: pa.Schema | None = None  # the first batch's: later ones are cast to it
        self._pending: list[tuple[pa.Table, np.ndarray]] = []  # sorted batches, bucket starts
        self._pending_rows = 0
        # Sorting and writing go on in a thread while the job scores the next batch, one call
        # at a time: what the job holds in memory for them is one batch.
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="numdiff-items")
        self._aside_call: Future[None] | None = None

    def add(self, results: Mapping[str, Any]) -> None:
        """Keep the samples of a batch of results (the item column and the result columns)."""
        table = samples_of(results, self.item_col, self.options, self.rows)
        self._schema = self._schema or table.schema
        self.rows += table.num_rows
        self._aside(self._keep, table.cast(self._schema))

    def _aside(self, call: Callable[..., None], *args: Any) -> None:
        """``call(*args)`` in the thread, once the call before it has ended (its error is raised
        here)."""
        self._wait()
        self._aside_call = self._pool.submit(call, *args)

    def _wait(self) -> None:
        if self._aside_call is not None:
            call, self._aside_call = self._aside_call, None
            call.result()

    def _keep(self, table: pa.Table) -> None:
        bucket = buckets(table.column(self.item_col).combine_chunks())
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(BUCKETS + 1))
        self._pending.append((table.take(order), bounds))  # each bucket a slice of it
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.written_rows:
            self._write_pending()

    def _write_pending(self) -> None:
        """Each bucket's rows of the batches kept, as one record batch of its file."""
        for b in range(BUCKETS):
            parts = [
                t.slice(at[b], at[b + 1] - at[b]) for t, at in self._pending if at[b] < at[b + 1]
            ]
            if parts:
                if b not in self._writers:
                    sink = str(self._folder / f"{b}.arrow")
                    self._writers[b] = pa.ipc.new_file(sink, self._schema)
                self._writers[b].write_table(pa.concat_tables(parts).combine_chunks())
        self._pending, self._pending_rows = [], 0

    def _groups(self) -> list[list[Path]]:
        """The bucket files, complete, in the groups they are grouped in: all at once (items
        in first-row order) when they are few, else one by one."""
        self._wait()
        self._write_pending()
        for writer in self._writers.values():
            writer.close()
        buckets = [self._folder / f"{b}.arrow" for b in sorted(self._writers)]
        return [buckets] if self.rows <= self.one_group_rows else [[b] for b in buckets]

    def write(self, path: Path) -> ItemTotals:
        """Group the samples into ``path`` (Parquet, one row per item), written under a hidden
        name and renamed once complete; the buckets go. Returns the items' totals."""
        totals = ItemTotals(self.item_col, self.ks)
        partial = path.with_name(f".{path.name}.partial")
        writer = None
        try:
            # Closed on an error too, so that no grouping goes on.
            with closing(self._grouped(self._groups())) as grouped:
                for table, files in grouped:
                    if writer is None:  # a dictionary of mostly distinct values saves nothing
                        distinct = {self.item_col, *MOSTLY_DISTINCT}
                        few = [name for name in table.column_names if name not in distinct]
                        writer = pq.ParquetWriter(partial, table.schema, use_dictionary=few)
                    self._written(writer, table, totals, files)  # while two groups are grouped
            if writer is not None:
                writer.close()
                writer = None
                partial.replace(path)
        finally:
            self._pool.shutdown()  # its last grouping has ended
            if writer is not None:
                writer.close()
            partial.unlink(missing_ok=True)
            self.close()
        return totals

    def _items(self, files: list[Path]) -> pa.Table:
        """The items of a group of bucket files."""
        read = (pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in files)
        return items_of(pa.concat_tables(read), self.item_col, self.ks, self.options)

    def _grouped(self, groups: list[list[Path]]) -> Generator[tuple[pa.Table, list[Path]]]:
        """Each group's items, in order, grouped two at a time: in turn by the thread that kept
        the samples and by one more."""
        with ThreadPoolExecutor(1, thread_name_prefix="numdiff-items") as other:
            pending: deque[tuple[Future[pa.Table], list[Path]]] = deque()
            for i, files in enumerate(groups):
                pool = other if i % 2 else self._pool
                pending.append((pool.submit(self._items, files), files))
                if len(pending) == 3:  # two groupings go on while this one is written
                    future, done = pending.popleft()
                    yield future.result(), done
            for future, done in pending:
                yield future.result(), done

    @staticmethod
    def _written(
        writer: pq.ParquetWriter, table: pa.Table, totals: ItemTotals, files: list[Path]
    ) -> None:
        """Write a group's items, add them to ``totals`` and remove its bucket files."""
        writer.write_table(table.cast(writer.schema))
        totals.add(table)
        for file in files:
            file.unlink()

    def close(self) -> None:
        """Remove the bucket files, once the thread's call has ended."""
        self._pool.shutdown()
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
        shutil.rmtree(self._folder, ignore_errors=True)


def item_aggregates(path: Path, item_col: str, ks: tuple[int, ...]) -> ItemTotals:
    """The item aggregates of an ``items.parquet`` file, read a row group at a time."""
    totals = ItemTotals(item_col, ks)
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        totals.add(file.read_row_group(group))
    return totals
