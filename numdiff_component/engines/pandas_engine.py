"""The pandas engine: streams the table on this machine, batch by batch, in bounded memory.

Each batch is scored by `score_frame` and appended to the results Parquet file under a
temporary name, renamed when complete, so no partial file ever looks complete. A table that
cannot be streamed (`StreamBroken`: a JSON Lines column changes type) is read again whole; the
job sees each row once all the same. A batch is
written by a thread of its own while the next one is read and scored, with at most one write in
flight: about three batches are alive at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from numdiff_component.errors import InputError, check_stopped
from numdiff_component.inputs.json_tables import mixed_columns
from numdiff_component.inputs.tables import StreamBroken, Table, open_table
from numdiff_component.scoring import RESULT_COLUMNS, check_columns, score_frame
from numdiff_component.slices.groups import check_slices
from numdiff_component.slices.thresholds import apply_row_thresholds
from numdiff_component.task.config import JobConfig
from numdiff_component.task.results import file_metadata


class PandasEngine:
    """Reads with `numdiff_component.inputs.tables` and scores with `score_frame`."""

    def open(self, config: JobConfig) -> Table:
        return open_table(config.predictions, config.format)

    def score(
        self, table: Table, config: JobConfig, path: Path
    ) -> Generator[pd.DataFrame, None, None]:
        """See `Engine.score`. Streams in ``config.batch_rows``; when the table cannot be
        streamed, writes the file again from the table read whole and yields the rows not
        yielded yet."""
        done = 0
        try:
            for results in self._write(table, config, path, config.batch_rows):
                done += len(results)
                yield results
        except StreamBroken:
            for results in self._write(table, config, path, None):
                if len(results) > done:
                    yield results.iloc[done:] if done else results
                done = max(0, done - len(results))

    def groups(self, path: Path, config: JobConfig) -> None:
        """See `Engine.groups`: none here; the job adds them up from the batches."""
        return None

    def _write(
        self, table: Table, config: JobConfig, path: Path, batch_rows: int | None
    ) -> Generator[pd.DataFrame, None, None]:
        """Score ``table`` into ``path``, yielding each batch's results once its write has
        started: the frames must not be modified (the write may still be reading them)."""
        scoring = config.scoring
        tmp = _ResultsFile(path.with_name(f".{path.name}.partial"))
        done = 0
        try:
            for batch in table.batches(batch_rows):
                if tmp.schema is None:
                    check_columns(
                        batch.columns,
                        scoring.output_col,
                        scoring.expected_col,
                        scoring.id_col,
                        scoring.options,
                    )
                    check_slices(batch.columns, scoring.by, scoring.threshold_col)
                results = score_frame(
                    batch, scoring.output_col, scoring.expected_col, scoring.options
                )
                if scoring.threshold_col:
                    results = apply_row_thresholds(
                        results,
                        scoring.threshold_col,
                        scoring.options.threshold,
                        done + 1,
                        scoring.id_col,
                    )
                done += len(batch)
                arrow = to_arrow(results)
                if tmp.schema is None:
                    metadata = {**(arrow.schema.metadata or {}), **file_metadata(scoring)}
                    tmp.open(arrow.schema.with_metadata(metadata))
                elif arrow.schema != tmp.schema:
                    try:
                        arrow = arrow.cast(tmp.schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise StreamBroken from exc  # a JSON Lines column changed type
                tmp.append(arrow)
                yield results
            if tmp.close():
                check_stopped()  # the last moment the file can still be removed as partial
                os.replace(tmp.path, path)
        except OSError as exc:
            raise InputError(f"cannot write results to {str(path.parent)!r}: {exc}") from exc
        finally:
            tmp.discard()


class _ResultsFile:
    """The results Parquet file under its temporary name, appended to by a thread of its own
    (Arrow writes without the GIL), one write in flight.

    `close` completes it; `discard` removes it whatever the writing was doing, since a signal
    can stop the main thread anywhere (inside `open`, while the thread starts). The thread holds
    the lock while it writes, so the writer is never closed under a write.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.schema: pa.Schema | None = None
        self._writer: pq.ParquetWriter | None = None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="numdiff-results")
        self._writing: Future[None] | None = None

    def open(self, schema: pa.Schema) -> None:
        # A dictionary is given up once it passes 64 KiB (pyarrow: 1 MiB): a column of distinct
        # numbers or texts costs little to try, and a column of few values is still stored as one.
        # Statistics (each page's min and max, what a filter skips pages by) for the result
        # columns only: the input's texts cost a tenth of the write for a min and a max of prose.
        self.schema = schema
        self._writer = pq.ParquetWriter(
            self.path,
            schema,
            dictionary_pagesize_limit=64 << 10,
            write_statistics=list(RESULT_COLUMNS),
        )

    def append(self, table: pa.Table) -> None:
        self._wait()
        self._writing = self._pool.submit(self._write, table)

    def _wait(self) -> None:
        if self._writing is not None:
            self._writing.result()  # the write's error (a full disk) is raised here

    def _write(self, table: pa.Table) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.write_table(table)

    def _take(self) -> pq.ParquetWriter | None:
        """The writer, once no write is running; none starts after."""
        with self._lock:
            writer, self._writer = self._writer, None
        self._pool.shutdown()
        return writer

    def close(self) -> bool:
        """Wait for the writes and complete the file; whether there is one (rows were read)."""
        self._wait()
        writer = self._take()
        if writer is not None:
            writer.close()
        return writer is not None

    def discard(self) -> None:
        """Remove the file, unless `close` completed it and it was renamed."""
        writer = self._take()
        if writer is not None:
            with contextlib.suppress(Exception):  # closing fails again when the disk is full
                writer.close()
        self.path.unlink(missing_ok=True)


def to_arrow(results: pd.DataFrame) -> pa.Table:
    """The results as an Arrow table. A column mixing JSON types (text and numbers, an integer
    beyond 2**53 beside a float) fits no Parquet type: each of its values is stored as its JSON
    text (``5``, ``"5"``, ``true``, ``9007199254740993``), null as null, nothing lost; the
    column's field metadata says so (``numdiff.encoding``: ``json``)."""
    try:
        return pa.Table.from_pandas(results, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        mixed = mixed_columns(results)
        as_text = {c: results[c].map(lambda v: v if v is None else json.dumps(v)) for c in mixed}
        table = pa.Table.from_pandas(results.assign(**as_text), preserve_index=False)
        fields = [
            f.with_metadata({"numdiff.encoding": "json"}) if f.name in mixed else f
            for f in table.schema
        ]
        return table.cast(pa.schema(fields, metadata=table.schema.metadata))
