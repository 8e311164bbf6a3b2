"""The pandas engine: streams the table on this machine, batch by batch, in bounded memory.

Each batch is scored by `score_frame` and appended to the results Parquet file under a
temporary name, renamed when complete, so no partial file ever looks complete. A batch is
written by a thread of its own while the next one is read and scored (Arrow writes without the
GIL), with at most one write in flight: about three batches are alive at a time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from numdiff_component.errors import InputError
from numdiff_component.scoring import check_columns, score_frame
from numdiff_component.tables import StreamBroken, Table, open_table

if TYPE_CHECKING:
    from numdiff_component.job import JobConfig


class PandasEngine:
    """Reads with `numdiff_component.tables` and scores with `score_frame`."""

    def open(self, config: JobConfig) -> Table:
        return open_table(config.predictions, config.format)

    def score(
        self, table: Table, config: JobConfig, path: Path, batch_rows: int | None
    ) -> Generator[pd.DataFrame, None, None]:
        """Score ``table`` into ``path``, yielding each batch's results once its write has
        started: the frames must not be modified (the write may still be reading them)."""
        tmp = path.with_name(f".{path.name}.partial")
        writer: pq.ParquetWriter | None = None
        writing: Future[None] | None = None
        try:
            # Leaving this block waits for the write in flight, so the writer is never closed
            # under it, whether the batches ran out, failed or were abandoned.
            with ThreadPoolExecutor(1, thread_name_prefix="numdiff-results") as pool:
                for batch in table.batches(batch_rows):
                    if writer is None:
                        check_columns(
                            batch.columns, config.output_col, config.expected_col, config.id_col
                        )
                    results = score_frame(
                        batch, config.output_col, config.expected_col, config.options
                    )
                    arrow = _to_arrow(results)
                    if writer is None:
                        metadata = {**(arrow.schema.metadata or {}), **config.results_metadata()}
                        writer = _writer(tmp, arrow.schema.with_metadata(metadata))
                    elif arrow.schema != writer.schema:
                        try:
                            arrow = arrow.cast(writer.schema)
                        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                            raise StreamBroken from exc  # a JSON Lines column changed type
                    if writing is not None:
                        writing.result()  # one write in flight; its error (a full disk) here
                    writing = pool.submit(writer.write_table, arrow)
                    del arrow
                    yield results
                if writing is not None:
                    writing.result()
            if writer is not None:
                writer.close()
                os.replace(tmp, path)
        except OSError as exc:
            raise InputError(f"cannot write results to {str(path.parent)!r}: {exc}") from exc
        finally:
            if writer is not None and tmp.exists():
                with contextlib.suppress(Exception):  # closing fails again when the disk is full
                    writer.close()
                tmp.unlink(missing_ok=True)


def _writer(path: Path, schema: pa.Schema) -> pq.ParquetWriter:
    """The results file's writer. A column's dictionary is given up once it passes 64 KiB
    (pyarrow: 1 MiB): a column of distinct numbers or texts then costs little to try, and a
    column of few values (labels, ids, repeated answers) is still stored as a dictionary."""
    return pq.ParquetWriter(path, schema, dictionary_pagesize_limit=64 << 10)


def _to_arrow(results: pd.DataFrame) -> pa.Table:
    """The results as an Arrow table; a column mixing types (JSON) is stored as its text."""
    try:
        return pa.Table.from_pandas(results, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        mixed = [
            c
            for c in results.columns
            if results[c].dtype == object
            and pd.api.types.infer_dtype(results[c]).startswith("mixed")
        ]
        as_text = {c: results[c].map(lambda v: v if v is None else str(v)) for c in mixed}
        return pa.Table.from_pandas(results.assign(**as_text), preserve_index=False)
