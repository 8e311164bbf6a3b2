"""The Spark engine: the same scores as `score_frame`, computed where the table lives.

Rows go to Python as Arrow record batches (``mapInArrow``) and through the same core
(`score_columns`), so every number equals the pandas engine's. The core sees each
column with its Arrow type, as it sees a Parquet file read by pandas: text is text, decimals are
read through their text, booleans and nulls have no number. Where the pandas engine has NaN (no
number), the Spark results have null, as the pandas engine's Parquet file does.

Needs the ``spark`` extra (``pip install 'numdiff_component[spark]'``); on a cluster, workers
with pyarrow, pandas and numpy (the package's code goes with the job: `engines.spark_cluster`).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from numdiff_component.aggregate import Totals
from numdiff_component.engines import spark_groups, spark_samples
from numdiff_component.engines.spark_cluster import (
    check_reachable,
    cluster_errors,
    remove_partial,
    ship_code,
    spark_uri,
)
from numdiff_component.errors import InputError, check_stopped, missing_column
from numdiff_component.inputs.sources import FORMATS, dataset_name, detect_format, local_path
from numdiff_component.inputs.tables import open_table
from numdiff_component.options import Options
from numdiff_component.scoring import (
    FAIL,
    PASS,
    UNPARSEABLE,
    check_columns,
    result_schema,
    score_columns,
)
from numdiff_component.slices.groups import check_slices
from numdiff_component.task.arrow_frames import arrow_frame
from numdiff_component.task.config import DEFAULT_BATCH_ROWS, JobConfig
from numdiff_component.task.results import ITEMS_PARQUET, write_folder_metadata
from numdiff_component.unit_scoring import UNIT_LABELS, UNIT_MISMATCH, UNIT_MISSING

try:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the Spark engine needs pyspark: pip install 'numdiff_component[spark]'"
    ) from exc

ROW_GROUP = 32 << 20
"""Bytes per row group of the results' part files (Spark's default is 128 MiB)."""


def result_fields(options: Options) -> tuple[StructField, ...]:
    """The result columns for these options, as Spark fields."""
    return tuple(StructField(f.name, from_arrow_type(f.type)) for f in result_schema(options))


def spark_session() -> SparkSession:
    """The active Spark session, or a new one: ``local[2]`` sized for a small machine.

    Under ``spark-submit``, on a cluster (``spark.master`` already set, e.g. by
    ``PYSPARK_SUBMIT_ARGS="--master spark://host:7077 pyspark-shell"``) or with Spark Connect
    (``SPARK_REMOTE``) only Arrow is switched on; the rest is the cluster's configuration.
    A cluster that cannot be reached within
    ``NUMDIFF_SPARK_TIMEOUT`` seconds is `ClusterUnreachable`; other failures are one line.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    with cluster_errors("cannot start Spark"):
        session = _new_session()
    return session


def _new_session() -> SparkSession:
    from pyspark import SparkConf, SparkContext

    builder = SparkSession.builder.appName("numdiff").config(
        "spark.sql.execution.arrow.pyspark.enabled", "true"
    )
    remote = os.environ.get("SPARK_REMOTE")
    if remote:
        check_reachable(remote)
        return builder.getOrCreate()
    # The JVM first: it holds the settings of spark-submit or PYSPARK_SUBMIT_ARGS (the master).
    SparkContext._ensure_initialized()
    conf = SparkConf()
    master = conf.get("spark.master", "") if conf.contains("spark.master") else ""
    if master.startswith("spark://"):
        check_reachable(master)
    if not master:
        builder = (
            builder.master("local[2]")
            # Workers run the interpreter that runs this code, so they import the same packages.
            .config("spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable))
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    return builder.getOrCreate()


def _check_spark_columns(
    sdf: DataFrame,
    output_col: str,
    expected_col: str,
    id_col: str | None = None,
    options: Options | None = None,
) -> None:
    check_columns(sdf.columns, output_col, expected_col, id_col, options)
    if (sdf.sparkSession.conf.get("spark.sql.caseSensitive") or "false").lower() == "true":
        return
    # Spark matches names ignoring case: 'Score' and 'score' could not both be in the results.
    results = result_schema(options or Options()).names
    for name in sdf.columns:
        if name.lower() in results:
            raise InputError(
                f"input column {name!r} has the name of a result column (Spark ignores case); "
                f"rename it (result columns: {', '.join(results)})"
            )


_NATIVE = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_decimal,
    pa.types.is_boolean,
    pa.types.is_null,
)


def _core_input(column: pa.Array) -> pa.Array | pd.Series:
    """The column as the core reads it: Arrow when the core reads that type, else pandas
    objects (dates, timestamps...), as `pandas.read_parquet` would give them."""
    if any(is_type(column.type) for is_type in _NATIVE):
        return column
    return column.to_pandas()


def _score_batch(
    batch: pa.RecordBatch,
    output_col: str,
    expected_col: str,
    options: Options,
    threshold_col: str | None = None,
) -> pa.RecordBatch:
    output = _core_input(batch.column(output_col))
    expected = _core_input(batch.column(expected_col))
    results = score_columns(output, expected, options)
    results, schema = spark_groups.row_threshold_columns(results, batch, threshold_col, options)
    # from_pandas: NaN (no number) becomes null, as in the pandas engine's Parquet file.
    arrays = [pa.array(results[f.name], type=f.type, from_pandas=True) for f in schema]
    return pa.RecordBatch.from_arrays(
        [*batch.columns, *arrays], names=[*batch.schema.names, *schema.names]
    )


def score_spark(
    sdf: DataFrame,
    output_col: str = "output",
    expected_col: str = "expected",
    options: Options | None = None,
    threshold_col: str | None = None,
    **overrides: Any,
) -> DataFrame:
    """Score every row of a Spark DataFrame: every input column, then the result columns.

    The result columns are those of `score_frame` (``output_value``, ``expected_value``,
    ``abs_error``, ``score`` doubles, ``passed`` boolean, ``label`` string) with the same values
    row for row; null where `score_frame` has NaN. With ``threshold_col``, each row passes
    against its own threshold and the column ``row_threshold`` follows (SPEC §3.2). Lazy, like
    any Spark transformation; columns are checked at once (`InputError`).

    >>> results = score_spark(spark.read.parquet("preds/"), threshold=0.95)  # doctest: +SKIP
    >>> results.groupBy("label").count().show()  # doctest: +SKIP
    """
    opts = Options.of(options, **overrides)
    _check_spark_columns(sdf, output_col, expected_col, options=opts)
    extra = spark_groups.threshold_fields(sdf.columns, threshold_col)  # checks the column
    ship_code(sdf.sparkSession)  # the workers import this package from the shipped zip
    schema = StructType([*sdf.schema.fields, *result_fields(opts), *extra])

    def score_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield _score_batch(batch, output_col, expected_col, opts, threshold_col)

    return sdf.mapInArrow(score_batches, schema)


def aggregate_spark(results: DataFrame) -> dict[str, float]:
    """The SPEC §3 aggregates of `score_spark` results, computed by Spark in one job.

    Equal to `aggregate` of the same rows up to float rounding; ``mae`` is NaN when no row has
    two numbers, ``mean_score_stderr`` NaN under two rows; no rows is an `InputError`.

    >>> aggregate_spark(score_spark(sdf))["pass_rate"]  # doctest: +SKIP
    0.75
    """
    needed = ("score", "passed", "label", "abs_error", "output_value")
    missing = [name for name in needed if name not in results.columns]
    if missing:
        hint = f"; aggregate the output of score_spark (needs {', '.join(needed)})"
        raise missing_column("results", missing[0], results.columns, hint)
    units = "output_unit" in results.columns
    compared = F.col("label").isin(PASS, FAIL) if units else F.col("label") != F.lit(UNPARSEABLE)
    row = results.agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(F.col("passed"), 1)).alias("n_passed"),
        F.count(F.when(F.col("label") == F.lit(UNPARSEABLE), 1)).alias("n_unparseable"),
        F.count(F.when(F.col("output_value").isNull() | F.isnan("output_value"), 1)).alias(
            "n_no_answer"
        ),
        F.avg("score").alias("score_mean"),
        F.var_pop("score").alias("score_var"),
        F.sum(F.when(compared, F.col("abs_error"))).alias("abs_error_sum"),
        # Spark's exact median (not percentile_approx), over the rows mae counts.
        F.median(F.when(compared, F.col("abs_error"))).alias("median_abs_error"),
        *(F.count(F.when(F.col("label") == F.lit(u), 1)).alias(u) for u in UNIT_LABELS),
    ).first()
    assert row is not None  # a global aggregate always has one row
    n = int(row["n"])
    totals = Totals(
        n=n,
        n_passed=int(row["n_passed"]),
        n_unparseable=int(row["n_unparseable"]),
        n_no_answer=int(row["n_no_answer"]),
        score_mean=float(row["score_mean"] or 0.0),
        score_m2=float(row["score_var"] or 0.0) * n,
        abs_error_sum=float(row["abs_error_sum"] or 0.0),
        units=units,
        n_unit_mismatch=int(row[UNIT_MISMATCH]),
        n_unit_missing=int(row[UNIT_MISSING]),
    )
    median = row["median_abs_error"]
    return totals.aggregates(math.nan if median is None else float(median))


# --- the job ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkTable:
    """A table read by Spark and where it came from (``source``: what the user gave)."""

    frame: DataFrame
    source: str
    name: str
    format: str


def _folder_format(folder: str, source: str) -> str:
    """The format of the data files in a folder (Spark's part files, a partitioned table)."""
    found = set()
    for _root, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith(("_", ".")):  # _SUCCESS, .crc files
                continue
            try:
                found.add(detect_format(name))
            except InputError:
                continue
    if len(found) != 1:
        raise InputError(
            f"cannot tell the format of the files in {source!r}; "
            f"pass --format with one of {', '.join(FORMATS)}"
        )
    fmt = found.pop()
    return "jsonl" if fmt == "json" else fmt  # Spark writes JSON lines as part-*.json


def spark_format(source: str, fmt: str | None = None) -> str:
    """The format to read ``source`` with: ``fmt``, the extension, or the files in the folder."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    local = local_path(source)
    if local is not None and os.path.isdir(local):
        try:
            found = detect_format(local.rstrip("/\\"))  # a folder named results.parquet
        except InputError:
            return _folder_format(local, source)
        return "jsonl" if found == "json" else found
    return detect_format(source.rstrip("/"))


def _reader(spark: SparkSession, fmt: str) -> Any:
    if fmt == "csv":
        # Like the pandas engine: every cell is text; quoted cells may hold newlines and "".
        read = spark.read.options(header=True, inferSchema=False, multiLine=True, escape='"').csv
        # Spark reads an empty cell as null; the pandas engine, as every CSV reader here, as "".
        return lambda path: read(path).na.fill("")
    if fmt == "parquet":
        return spark.read.parquet
    return spark.read.options(multiLine=fmt == "json").json


def load_spark_table(
    source: str | None = None, fmt: str | None = None, spark: SparkSession | None = None
) -> SparkTable:
    """Read ``source`` with Spark: a file or a folder of files (csv, parquet, json, jsonl), local
    or any URI Spark reads (``s3a://``, ``abfss://``, ``dbfs:/``...). Without ``source``, the
    packaged sample. CSV cells are read as text, as the pandas engine reads them.
    """
    spark = spark or spark_session()
    if not source:
        sample = open_table()
        return SparkTable(spark.createDataFrame(sample.read()), sample.source, sample.name, "csv")
    if urlparse(source).scheme in ("runs", "models", "mlflow-artifacts"):
        raise InputError(
            f"the Spark engine reads paths Spark can read, not {source!r}; download the artifact "
            "first (mlflow artifacts download) or use the pandas engine"
        )
    fmt = spark_format(source, fmt)
    local = local_path(source)
    if local is not None and not os.path.exists(local):
        raise InputError(f"predictions file not found: {source!r}")
    # Spark resolves a relative path where it runs (a Spark Connect server: on the server).
    with cluster_errors(f"cannot read {source!r} as {fmt}"):
        frame = _reader(spark, fmt)(spark_uri(source))
        frame.schema  # noqa: B018 - Spark Connect reads lazily: fail here, in one line
    return SparkTable(frame, source, dataset_name(source), fmt)


class SparkEngine(spark_groups.SparkGroups):
    """The job's Spark engine: reads with Spark, scores with `score_spark`, writes the results
    as a Parquet folder of part files, then hands them back to the job batch by batch (read on
    the driver with pyarrow, in bounded memory), so the job adds up and reports them as the
    pandas engine's. On a cluster, the driver and the executors share the results folder."""

    groups_items = True  # with --item-col, writes items.parquet itself (`spark_samples`)

    def __init__(self, spark: SparkSession | None = None) -> None:
        self.spark = spark

    def open(self, config: JobConfig) -> SparkTable:
        table = load_spark_table(config.predictions, config.format, self.spark)
        scoring = config.scoring
        _check_spark_columns(
            table.frame, scoring.output_col, scoring.expected_col, scoring.id_col, scoring.options
        )
        check_slices(table.frame.columns, scoring.by, scoring.threshold_col)
        return table

    def score(
        self, table: SparkTable, config: JobConfig, path: Path
    ) -> Generator[pd.DataFrame, None, None]:
        scoring = config.scoring
        columns = (scoring.output_col, scoring.expected_col)
        results = score_spark(table.frame, *columns, scoring.options, scoring.threshold_col)
        # Written under a hidden name, renamed once every batch is handed back: an interrupted
        # or failed job leaves no part of it (not even Spark's _temporary folder).
        partial = path.with_name(f".{path.name}.partial")
        try:
            with cluster_errors(f"cannot score {table.source!r} with Spark"):
                # Small row groups: the driver reads them back one at a time, in bounded memory.
                writer = results.write.mode("overwrite").option("parquet.block.size", ROW_GROUP)
                writer.parquet(spark_uri(str(partial)))
            if scoring.item_col is not None:  # SPEC §3.3, grouped by Spark
                items = path.parent / ITEMS_PARQUET
                spark_samples.write_items(results.sparkSession, partial, items, scoring)
            # Part files in name order are the partitions in order: the input's order.
            files = sorted(str(p) for p in partial.glob("part-*.parquet"))
            batches = ds.dataset(files, format="parquet").to_batches(
                batch_size=config.batch_rows or DEFAULT_BATCH_ROWS,
                batch_readahead=1,
                fragment_readahead=1,
            )
            yield from (arrow_frame(batch) for batch in batches if batch.num_rows)
            # What a results file keeps in its metadata, beside the part files.
            write_folder_metadata(partial, config.scoring)
            check_stopped()  # the last moment the folder can still be removed as partial
            os.replace(partial, path)
        except BaseException:  # also a signal, or the job closing the iterator early
            remove_partial(results.sparkSession, partial)
            raise


__all__ = ["SparkEngine", "aggregate_spark", "load_spark_table", "score_spark", "spark_session"]
