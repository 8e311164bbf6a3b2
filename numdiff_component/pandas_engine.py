"""The pandas engine: streams the table on this machine, batch by batch, in bounded memory.

Each batch is scored by `score_frame` and appended to the results Parquet file under a
temporary name, renamed when complete, so no partial file ever looks complete. A table that
cannot be streamed (`StreamBroken`: a JSON Lines column changes type) is read again whole; the
job sees each row once all the same.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Generator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from numdiff_component.errors import InputError
from numdiff_component.request import JobConfig
from numdiff_component.results import file_metadata
from numdiff_component.scoring import check_columns, score_frame
from numdiff_component.tables import StreamBroken, Table, mixed_columns, open_table


class PandasEngine:
    """Reads with `numdiff_component.tables` and scores with `score_frame`."""

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

    def _write(
        self, table: Table, config: JobConfig, path: Path, batch_rows: int | None
    ) -> Generator[pd.DataFrame, None, None]:
        tmp = path.with_name(f".{path.name}.partial")
        writer: pq.ParquetWriter | None = None
        try:
            for batch in table.batches(batch_rows):
                if writer is None:
                    check_columns(
                        batch.columns, config.output_col, config.expected_col, config.id_col
                    )
                results = score_frame(batch, config.output_col, config.expected_col, config.options)
                arrow = _to_arrow(results)
                if writer is None:
                    metadata = {**(arrow.schema.metadata or {}), **file_metadata(config)}
                    writer = pq.ParquetWriter(tmp, arrow.schema.with_metadata(metadata))
                elif arrow.schema != writer.schema:
                    try:
                        arrow = arrow.cast(writer.schema)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise StreamBroken from exc  # a JSON Lines column changed type
                writer.write_table(arrow)
                yield results
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


def _to_arrow(results: pd.DataFrame) -> pa.Table:
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
