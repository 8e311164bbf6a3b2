"""Groups and thresholds per row in Spark (SPEC §3.1, §3.2): each row's threshold applied inside
the Spark engine's batches, and every group's aggregates computed by Spark (``groupBy``/``agg``)
equal to `slices.groups`' of the same results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from numdiff_component.engines.spark_cluster import cluster_errors, spark_uri
from numdiff_component.errors import missing_column
from numdiff_component.options import Options
from numdiff_component.scoring import FAIL, PASS, UNPARSEABLE, result_schema
from numdiff_component.slices.groups import check_slices, group_table, merge_sums, text_index
from numdiff_component.slices.thresholds import ROW_THRESHOLD, row_passes
from numdiff_component.task.config import JobConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField


def threshold_fields(columns: Sequence[str], threshold_col: str | None) -> list[StructField]:
    """The Spark field of `ROW_THRESHOLD`, when rows have their own threshold; `InputError`
    when its column is not among ``columns`` (`check_slices`)."""
    from pyspark.sql.types import DoubleType, StructField  # pyspark: only where Spark runs

    check_slices(columns, (), threshold_col)
    return [StructField(ROW_THRESHOLD, DoubleType())] if threshold_col else []


def row_threshold_columns(
    results: dict[str, Any], batch: pa.RecordBatch, threshold_col: str | None, options: Options
) -> tuple[dict[str, Any], pa.Schema]:
    """A batch's result columns and their schema, each row passed against its own threshold
    (`row_passes`) when ``threshold_col`` is given. Spark counts no rows: a bad threshold is
    named by its value."""
    schema = result_schema(options)
    if not threshold_col:
        return results, schema
    limits = batch.column(threshold_col).to_pandas()
    passes = row_passes(results, limits, threshold_col, options.threshold, first_row=None)
    return passes, schema.append(pa.field(ROW_THRESHOLD, pa.float64()))


class SparkGroups:
    """What the Spark engine (`engines.spark.SparkEngine`) does for groups: the job's groups
    (SPEC §3.1) computed by Spark from the results it wrote."""

    spark: Any  # the engine's session, or None: the active one

    def groups(self, path: Path, config: JobConfig) -> pd.DataFrame | None:
        """See `Engine.groups`: `groups_spark` of the results folder at ``path``."""
        if not config.scoring.by:
            return None
        from pyspark.sql import SparkSession

        spark = self.spark or SparkSession.getActiveSession()
        assert spark is not None  # the results were just written with it
        with cluster_errors("cannot add up the groups with Spark"):
            return groups_spark(spark.read.parquet(spark_uri(str(path))), config.scoring.by)


def groups_spark(results: DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Every group of each ``by`` column of `score_spark` results (SPEC §3.1), summed by Spark
    (one ``groupBy``/``agg`` per column), as `slices.groups.group_table` makes them: equal to
    the pandas engine's groups up to the order of float additions.

    >>> groups_spark(score_spark(sdf), ["category"])  # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    for column in by:
        if column not in results.columns:
            raise missing_column("by", column, results.columns)
    units = "output_unit" in results.columns
    compared = F.col("label").isin(PASS, FAIL) if units else F.col("label") != F.lit(UNPARSEABLE)
    no_answer = F.col("output_value").isNull() | F.isnan("output_value")
    sums = {}
    for column in by:
        rows = results.groupBy(F.col(column).alias("value")).agg(
            F.count(F.lit(1)).alias("n"),
            F.count(F.when(F.col("passed"), 1)).alias("n_passed"),
            F.sum("score").alias("score_sum"),
            F.count(F.when(no_answer, 1)).alias("n_no_answer"),
            F.count(F.when(compared, 1)).alias("n_compared"),
            F.coalesce(F.sum(F.when(compared, F.col("abs_error"))), F.lit(0.0)).alias(
                "abs_error_sum"
            ),
        )
        frame = pd.DataFrame([row.asDict() for row in rows.collect()])
        index = text_index(frame.pop("value").tolist())
        sums[column] = merge_sums([frame.set_axis(index)])
    return group_table(sums)
