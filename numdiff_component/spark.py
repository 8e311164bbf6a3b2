"""The Spark engine: the same scores as `score_frame`, computed where the table lives.

Rows go to Python as Arrow record batches (``mapInArrow``) and through the same core
(`parse_column`, `score_values`), so every number equals the pandas engine's. The core sees each
column with its Arrow type, as it sees a Parquet file read by pandas: text is text, decimals are
read through their text, booleans and nulls have no number. Where the pandas engine has NaN (no
number), the Spark results have null, as the pandas engine's Parquet file does.

Needs the ``spark`` extra (``pip install 'numdiff_component[spark]'``); on a cluster, the package
must be installed on the executors too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa

from numdiff_component.aggregate import Totals
from numdiff_component.errors import InputError, first_line
from numdiff_component.job import JobConfig, evaluation_of, results_folder, track
from numdiff_component.options import Options
from numdiff_component.parse import parse_column
from numdiff_component.scoring import RESULT_COLUMNS, UNPARSEABLE, check_columns, score_values
from numdiff_component.tables import FORMATS, detect_format, local_path, open_table
from numdiff_component.tracking import (
    LOG_TABLE_MAX_ROWS,
    RESULTS_PARQUET,
    Evaluation,
)

try:
    from pyspark.errors import PySparkException
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, DoubleType, StringType, StructField, StructType
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the Spark engine needs pyspark: pip install 'numdiff_component[spark]'"
    ) from exc

try:  # classic Spark may raise a raw Java error (e.g. reading a broken Parquet footer)
    from py4j.protocol import Py4JJavaError

    _SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JJavaError, OSError)
except ImportError:  # pragma: no cover - a Spark Connect client has no py4j
    _SPARK_ERRORS = (PySparkException, OSError)

DATASET_SAMPLE_ROWS = 1_000
"""Rows of a large input whose schema is logged as the MLflow dataset, as the pandas engine does."""

_RESULT_TYPES = {
    "output_value": (DoubleType(), pa.float64()),
    "expected_value": (DoubleType(), pa.float64()),
    "abs_error": (DoubleType(), pa.float64()),
    "score": (DoubleType(), pa.float64()),
    "passed": (BooleanType(), pa.bool_()),
    "label": (StringType(), pa.string()),
}
RESULT_FIELDS = tuple(StructField(name, _RESULT_TYPES[name][0]) for name in RESULT_COLUMNS)


def spark_session() -> SparkSession:
    """The active Spark session, or a new one: ``local[2]`` sized for a small machine.

    Under ``spark-submit``, on a cluster (``spark.master`` already set) or with Spark Connect
    (``SPARK_REMOTE``) only Arrow is switched on; the rest is the cluster's configuration.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from pyspark import SparkConf

    # Workers run the interpreter that runs this code, so they import the same packages.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("numdiff").config(
        "spark.sql.execution.arrow.pyspark.enabled", "true"
    )
    if "SPARK_REMOTE" not in os.environ and not SparkConf().contains("spark.master"):
        builder = (
            builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    return builder.getOrCreate()


def _check_spark_columns(sdf: DataFrame, output_col: str, expected_col: str) -> None:
    check_columns(sdf.columns, output_col, expected_col)
    if (sdf.sparkSession.conf.get("spark.sql.caseSensitive") or "false").lower() == "true":
        return
    # Spark matches names ignoring case: 'Score' and 'score' could not both be in the results.
    for name in sdf.columns:
        if name.lower() in RESULT_COLUMNS:
            raise InputError(
                f"input column {name!r} has the name of a result column (Spark ignores case); "
                f"rename it (result columns: {', '.join(RESULT_COLUMNS)})"
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
    batch: pa.RecordBatch, output_col: str, expected_col: str, options: Options
) -> pa.RecordBatch:
    a = parse_column(_core_input(batch.column(output_col)), options)
    b = parse_column(_core_input(batch.column(expected_col)), options)
    results = score_values(a, b, options)
    arrays = [
        # from_pandas: NaN (no number) becomes null, as in the pandas engine's Parquet file.
        pa.array(results[name], type=_RESULT_TYPES[name][1], from_pandas=True)
        for name in RESULT_COLUMNS
    ]
    return pa.RecordBatch.from_arrays(
        [*batch.columns, *arrays], names=[*batch.schema.names, *RESULT_COLUMNS]
    )


def score_spark(
    sdf: DataFrame,
    output_col: str = "output",
    expected_col: str = "expected",
    options: Options | None = None,
    **overrides: Any,
) -> DataFrame:
    """Score every row of a Spark DataFrame: every input column, then the result columns.

    The result columns are those of `score_frame` (``output_value``, ``expected_value``,
    ``abs_error``, ``score`` doubles, ``passed`` boolean, ``label`` string) with the same values
    row for row; null where `score_frame` has NaN. Lazy, like any Spark transformation; columns
    are checked at once (`InputError`).

    >>> results = score_spark(spark.read.parquet("preds/"), threshold=0.95)  # doctest: +SKIP
    >>> results.groupBy("label").count().show()  # doctest: +SKIP
    """
    opts = Options.of(options, **overrides)
    _check_spark_columns(sdf, output_col, expected_col)
    schema = StructType([*sdf.schema.fields, *RESULT_FIELDS])

    def score_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield _score_batch(batch, output_col, expected_col, opts)

    return sdf.mapInArrow(score_batches, schema)


def aggregate_spark(results: DataFrame) -> dict[str, float]:
    """The SPEC §3 aggregates of `score_spark` results, computed by Spark in one job.

    Equal to `aggregate` of the same rows up to float rounding; ``mae`` is NaN when no row has
    two numbers, ``mean_score_stderr`` NaN under two rows; no rows is an `InputError`.

    >>> aggregate_spark(score_spark(sdf))["pass_rate"]  # doctest: +SKIP
    0.75
    """
    needed = ("score", "passed", "label", "abs_error")
    missing = [name for name in needed if name not in results.columns]
    if missing:
        raise InputError(
            f"results column {missing[0]!r} not found; aggregate the output of score_spark "
            f"(needs {', '.join(needed)})"
        )
    parsed = F.col("label") != F.lit(UNPARSEABLE)
    row = results.agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.when(F.col("passed"), 1)).alias("n_passed"),
        F.count(F.when(~parsed, 1)).alias("n_unparseable"),
        F.avg("score").alias("score_mean"),
        F.var_pop("score").alias("score_var"),
        F.sum(F.when(parsed, F.col("abs_error"))).alias("abs_error_sum"),
    ).first()
    assert row is not None  # a global aggregate always has one row
    n = int(row["n"])
    totals = Totals(
        n=n,
        n_passed=int(row["n_passed"]),
        n_unparseable=int(row["n_unparseable"]),
        score_mean=float(row["score_mean"] or 0.0),
        score_m2=float(row["score_var"] or 0.0) * n,
        abs_error_sum=float(row["abs_error_sum"] or 0.0),
    )
    return totals.aggregates()


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
        return spark.read.options(header=True, inferSchema=False, multiLine=True, escape='"').csv
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
    try:
        frame = _reader(spark, fmt)(source)
    except _SPARK_ERRORS as exc:
        raise InputError(f"cannot read {source!r} as {fmt}: {first_line(exc)}") from exc
    name = Path(urlparse(source).path.rstrip("/") if "://" in source else source.rstrip("/")).name
    return SparkTable(frame, source, name.split(".")[0] or "predictions", fmt)


@dataclass(frozen=True)
class SparkJobOutcome:
    """What the Spark job produced; ``results`` reads the written Parquet folder back."""

    evaluation: Evaluation
    results: DataFrame
    run_id: str | None

    @property
    def results_path(self) -> Path:
        return self.evaluation.results_dir / RESULTS_PARQUET


def run_spark_job(config: JobConfig, spark: SparkSession | None = None) -> SparkJobOutcome:
    """Read, score, write the results as a Parquet folder, aggregate, then log to MLflow.

    The Spark counterpart of `numdiff_component.job.run_job`, with the same `JobConfig`: the same
    options, columns, results folder and MLflow run contents. The results are written to
    ``<results_dir>/results.parquet/`` (a folder of part files) before anything goes to the
    tracking server; on a cluster, ``results_dir`` must be a folder the driver and the executors
    share. As in the pandas engine, tables of up to 100,000 rows are logged whole (dataset and
    results table); a larger one logs the schema of its first rows as the dataset.
    """
    spark = spark or spark_session()
    table = load_spark_table(config.predictions, config.format, spark)
    columns = table.frame.columns
    if config.id_col and config.id_col not in columns:
        existing = ", ".join(repr(c) for c in columns)
        raise InputError(f"id column {config.id_col!r} not found; the columns are: {existing}")
    results = score_spark(table.frame, config.output_col, config.expected_col, config.options)
    folder = results_folder(config.results_dir)
    path = folder / RESULTS_PARQUET
    try:
        sample = cast(pd.DataFrame, table.frame.limit(DATASET_SAMPLE_ROWS).toPandas())
        if sample.empty:
            raise InputError(f"no rows to score in {table.source!r}")
        # A file: URI, so that Spark writes where the driver (and MLflow) will read.
        results.write.mode("overwrite").parquet(path.resolve().as_uri())
        written = spark.read.parquet(path.resolve().as_uri())
        aggregates = aggregate_spark(written)
    except _SPARK_ERRORS as exc:
        raise InputError(f"cannot score {table.source!r} with Spark: {first_line(exc)}") from exc
    n_rows = int(aggregates["n_rows"])
    evaluation = evaluation_of(
        config, table, aggregates, folder, n_rows, extra_params={"engine": "spark"}
    )
    whole = pd.read_parquet(path) if config.track and n_rows <= LOG_TABLE_MAX_ROWS else None
    return SparkJobOutcome(evaluation, written, track(config, evaluation, sample, whole, path))
