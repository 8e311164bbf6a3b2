"""Samples per item (SPEC §3.3) in Spark: the items of a results folder, grouped by Spark.

Spark groups the samples by item (``groupBy(...).applyInPandas``) and each group goes through
the same core function as in the pandas job (`numdiff_component.samples.item_table`), so every
cell of ``items.parquet`` equals the pandas engine's. A sample's row number is its place in the
results folder: the part files in name order (the input's order), then the row inside its
file (Spark's ``_metadata.row_index``). The checks (an empty item, different expected numbers)
are Spark aggregations, said as one line before any item is grouped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StructField,
    StructType,
)

from numdiff_component.engines.spark_cluster import cluster_errors, remove_partial, spark_uri
from numdiff_component.errors import InputError, missing_column
from numdiff_component.samples import ITEM_COLUMNS, item_table, pass_at, vote_column
from numdiff_component.task.config import Scoring

_LONG = ("n_samples", "n_passed", "first_row")


def samples_spark(spark: SparkSession, folder: str, scoring: Scoring) -> DataFrame:
    """The samples of the results folder ``folder`` (a URI): the item, ``row`` (from 0), then
    the columns `numdiff_component.samples.item_table` reads."""
    item_col = scoring.item_col
    assert item_col is not None
    results = spark.read.parquet(folder)
    if item_col not in results.columns:
        hint = " (choose with --item-col)"
        raise missing_column("item", item_col, results.columns, hint)
    located = results.select(
        F.col(item_col),
        F.col(vote_column(scoring.options)).alias("vote_value"),
        "expected_value",
        "score",
        "passed",
        F.col("_metadata.file_name").alias("_file"),
        F.col("_metadata.row_index").alias("_index"),
    )
    counts = sorted((r["_file"], r["count"]) for r in located.groupBy("_file").count().collect())
    offsets, start = [], 0
    for name, count in counts:
        offsets.append((name, start))
        start += count
    offset = spark.createDataFrame(offsets, "_file string, _offset long")
    located = located.join(F.broadcast(offset), "_file")
    row = (F.col("_offset") + F.col("_index")).alias("row")
    return located.select(item_col, row, "vote_value", "expected_value", "score", "passed")


def check_samples(samples: DataFrame, item_col: str) -> None:
    """`InputError` for the first row with no item, or an item whose samples read different
    expected numbers (null, no number, is one value), as the pandas job says them."""
    empty = samples.filter(F.col(item_col).isNull()).agg(F.min("row")).first()
    if empty is not None and empty[0] is not None:
        raise InputError(f"row {int(empty[0]) + 1:,} has no item in column {item_col!r}")
    expected = F.col("expected_value")
    spread = samples.groupBy(item_col).agg(
        F.min(expected).alias("low"),
        F.max(expected).alias("high"),
        F.count(F.lit(1)).alias("n"),
        F.count(expected).alias("numbers"),
        F.min("row").alias("first"),
    )
    differ = (F.col("low") != F.col("high")) | (
        (F.col("numbers") > 0) & (F.col("numbers") < F.col("n"))
    )
    found = spread.filter(differ).orderBy("first").first()
    if found is not None:
        low, high = (float("nan") if v is None else v for v in (found["low"], found["high"]))
        raise InputError(
            f"item {found[item_col]!r} has samples with different expected numbers "
            f"({low:g} and {high:g}); the samples of one item share one expected"
        )


def items_spark(samples: DataFrame, scoring: Scoring) -> DataFrame:
    """One row per item, in first-row order: `item_table` on each item's samples."""
    item_col, options, ks = scoring.item_col, scoring.options, scoring.k
    assert item_col is not None
    fields = [samples.schema[item_col]]
    for name in ITEM_COLUMNS:
        kind = LongType() if name in _LONG else BooleanType() if name == "maj_at_k" else None
        fields.append(StructField(name, kind or DoubleType()))
    fields += [StructField(pass_at(k), DoubleType()) for k in ks]

    def group(frame: pd.DataFrame) -> pd.DataFrame:
        return item_table(frame, item_col, ks, options)

    grouped = samples.groupBy(item_col).applyInPandas(group, StructType(fields))
    return grouped.orderBy("first_row")


def write_items(spark: SparkSession, results: Path, path: Path, scoring: Scoring) -> None:
    """Group the samples of the results folder ``results`` into the one Parquet file ``path``:
    Spark writes a hidden folder, copied a part file at a time (in first-row order) into the
    file, which is renamed once complete."""
    folder, partial = (path.with_name(f".{path.name}.{end}") for end in ("parts", "partial"))
    try:
        with cluster_errors("cannot group the samples per item with Spark"):
            samples = samples_spark(spark, spark_uri(str(results)), scoring)
            check_samples(samples, str(scoring.item_col))
            items = items_spark(samples, scoring)
            items.write.mode("overwrite").parquet(spark_uri(str(folder)))
        files = sorted(str(p) for p in folder.glob("part-*.parquet"))
        with pq.ParquetWriter(partial, ds.dataset(files, format="parquet").schema) as writer:
            for name in files:
                writer.write_table(pq.read_table(name))
        partial.replace(path)
    except BaseException:
        remove_partial(spark, folder)
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        partial.unlink(missing_ok=True)
