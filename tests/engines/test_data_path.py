"""The job's data path (CSV frames regrouped from blocks, results written by a thread of their
own) against the plain path: the whole table read as one frame, scored by `score_frame`, and
converted to Arrow, as the pandas engine did before it streamed through a writer thread."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from numdiff_component import Options, score_frame
from numdiff_component.engines.pandas_engine import PandasEngine, to_arrow
from numdiff_component.inputs.csv_stream import regroup
from numdiff_component.inputs.tables import open_table
from numdiff_component.job.run import run_job
from numdiff_component.task.config import DEFAULT_BATCH_ROWS, JobConfig, Scoring
from numdiff_component.task.results import file_metadata
from tests.fixtures.tables import write_table

CELLS = [
    ("42", "42"),
    ("about -3.5 units", "-3.5"),
    ("", "7"),  # an empty cell
    ("n/a", ""),
    ("1e999", "1"),  # too large for a float: no number
    ("007", "7"),
    ("  3 ", "3.0"),
    ("The answer is 1,234.5\nso there", "1234.5"),  # a newline inside a quoted cell
    ("½ of 8 is 4 ✓", "4"),
    ("-0", "0"),
    ("x=-3e-2", "-0.03"),
    ("NaN", "nan"),
]
N = 997  # not a multiple of any batch size below
MIXED = pd.DataFrame(
    {
        "id": [f"row-{i:04d}" for i in range(N)],
        "output": [CELLS[i % len(CELLS)][0] if i % 5 else f"{i / 7:.6f}" for i in range(N)],
        "expected": [CELLS[i % len(CELLS)][1] if i % 5 else f"{i / 7:.5f}" for i in range(N)],
        "note": ["" if i % 3 else f"note {i}" for i in range(N)],
    }
)


def plain_results(source: str, config: JobConfig) -> pa.Table:
    """The results file's table by the plain path: read whole, score whole, convert."""
    results = score_frame(open_table(source).read(), options=config.scoring.options)
    arrow = to_arrow(results)
    return arrow.replace_schema_metadata(
        {**(arrow.schema.metadata or {}), **file_metadata(config.scoring)}
    )


@pytest.mark.parametrize("batch_rows", [7, 100, DEFAULT_BATCH_ROWS])
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet", ".jsonl"])
def test_results_file_equals_the_plain_path_cell_for_cell(
    suffix: str, batch_rows: int, tmp_path: Path
) -> None:
    source = tmp_path / f"t{suffix}"
    if suffix == ".csv.gz":
        source.write_bytes(gzip.compress(MIXED.to_csv(index=False).encode()))
    else:
        write_table(MIXED, source, row_group_size=100)
    config = JobConfig(
        str(source),
        scoring=Scoring(id_col="id", options=Options(threshold=0.9)),
        results_dir=str(tmp_path / "res"),
        track=False,
        plots=False,
        batch_rows=batch_rows,
    )
    outcome = run_job(config)
    got = pq.read_table(outcome.results_path)
    want = plain_results(str(source), config)
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)
    pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas(), check_exact=True)


def _batches(sizes: list[int]) -> list[pa.RecordBatch]:
    start = 0
    out = []
    for size in sizes:
        values = [f"value {i}" for i in range(start, start + size)]
        a, b = pa.array(values, pa.string()), pa.array(values[::-1], pa.string())
        out.append(pa.record_batch({"a": a, "b": b}))
        start += size
    return out


@pytest.mark.parametrize("rows", [1, 3, 5, 100, None])
@pytest.mark.parametrize("size", [0, 200, 1 << 30])
def test_regroup_keeps_every_row_in_order_in_bounded_tables(rows: int | None, size: int) -> None:
    batches = _batches([0, 5, 1, 13, 0, 7, 2])
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
    tables = list(regroup(reader, rows, size))
    whole = pa.Table.from_batches(batches)
    assert pa.concat_tables(tables).equals(whole)  # every row once, in order
    for table in tables:
        assert rows is None or table.num_rows <= rows
    for table in tables[:-1]:  # a table ends at the row limit or once it holds ``size`` bytes
        assert table.num_rows == rows or sum(b.nbytes for b in table.to_batches()) >= size
    if rows == 100 and size == 1 << 30:
        assert len(tables) == 1
    # Sliced, not copied: the first table's text is the first batch's buffer itself.
    first = next(t for t in tables if t.num_rows)
    source = next(b for b in batches if b.num_rows).column("a").buffers()[2]
    chunk = next(c for c in first.column("a").chunks if len(c))
    assert chunk.buffers()[2].address == source.address


def test_closing_the_engine_early_leaves_no_file_and_no_writer_thread(tmp_path: Path) -> None:
    source = write_table(MIXED, tmp_path / "t.csv")
    config = JobConfig(str(source), results_dir=str(tmp_path), track=False, batch_rows=64)
    engine = PandasEngine()
    path = tmp_path / "results.parquet"
    batches = engine.score(engine.open(config), config, path)
    first = next(batches)
    pd.testing.assert_frame_equal(
        first, score_frame(MIXED.head(64), options=config.scoring.options), check_exact=True
    )
    batches.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    assert not [t for t in threading.enumerate() if t.name.startswith("numdiff-results")]
