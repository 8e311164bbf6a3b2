"""Groups and thresholds per row in the Spark engine (SPEC §3.1, §3.2): a real local Spark
session; the same results, groups and metrics as the pandas engine."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("pyspark.sql", reason="needs the spark extra", exc_type=ImportError)

from numdiff_component import score_frame
from numdiff_component.engines.pandas_engine import PandasEngine
from numdiff_component.engines.spark import SparkEngine, load_spark_table, score_spark
from numdiff_component.errors import InputError
from numdiff_component.job.run import run_job
from numdiff_component.scoring import SPAN_COLUMNS
from numdiff_component.slices.groups import GroupTotals
from numdiff_component.slices.thresholds import apply_row_thresholds
from numdiff_component.spark import groups_spark
from numdiff_component.task.config import JobConfig, Scoring
from tests.engines.test_spark import spark  # noqa: F401 - the one session of the Spark tests
from tests.fixtures.tables import sliced_table, write_table

SPAN_POSITIONS = [name for name in SPAN_COLUMNS if not name.endswith("_rule")]

pytestmark = pytest.mark.slow

SCORING = Scoring(id_col="id", by=("category", "level"), threshold_col="tol")


def assert_same_groups(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Cell for cell: texts and counts exactly, sums of floats up to their order of addition."""
    assert list(got.columns) == list(want.columns)
    for name in ("column", "value", "key", "n", "logged"):
        assert got[name].tolist() == want[name].tolist(), name
    floats = ["mean_score", "pass_rate", "pass_rate_ci_low", "pass_rate_ci_high", "mae"]
    for name in [*floats, "no_answer_rate"]:
        pd.testing.assert_series_equal(got[name], want[name], rtol=1e-12, atol=0, check_names=False)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_spark_job_equals_pandas_job(spark: Any, tmp_path: Path, suffix: str) -> None:  # noqa: F811
    path = write_table(sliced_table(), tmp_path / f"sliced.{suffix}")
    config = JobConfig(predictions=str(path), scoring=SCORING, track=False, plots=False)
    pandas = run_job(replace(config, results_dir=str(tmp_path / "pandas")))
    on_spark = run_job(
        replace(config, engine="spark", results_dir=str(tmp_path / "spark")),
        engine=SparkEngine(spark),
    )
    want = pd.read_parquet(pandas.results_path)
    # Spark writes no pandas metadata: its span positions come back as floats, NaN for null.
    got = pd.read_parquet(on_spark.results_path).astype(dict.fromkeys(SPAN_POSITIONS, "Int64"))
    pd.testing.assert_frame_equal(got, want)
    assert "row_threshold" in got.columns
    assert_same_groups(
        pd.read_parquet(on_spark.results_path.parent / "groups.parquet"),
        pd.read_parquet(pandas.results_path.parent / "groups.parquet"),
    )
    assert on_spark.evaluation.aggregates == pytest.approx(
        pandas.evaluation.aggregates, nan_ok=True
    )
    # The job's groups are Spark's own (Engine.groups), from the results folder it wrote.
    by_spark = SparkEngine(spark).groups(on_spark.results_path, config)
    assert by_spark is not None
    assert_same_groups(by_spark, pd.read_parquet(pandas.results_path.parent / "groups.parquet"))
    assert PandasEngine().groups(pandas.results_path, config) is None


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_groups_by_spark_aggregations_equal_pandas(spark: Any, tmp_path: Path, suffix: str) -> None:  # noqa: F811
    path = write_table(sliced_table(), tmp_path / f"sliced.{suffix}")
    table = load_spark_table(str(path), spark=spark)
    results = score_spark(table.frame, threshold_col="tol")
    totals = GroupTotals(["category", "level"])
    frame = (
        pd.read_parquet(path)
        if suffix == "parquet"
        else pd.read_csv(path, dtype=str, keep_default_na=False)
    )
    totals.add(apply_row_thresholds(score_frame(frame), "tol", 0.99))
    assert_same_groups(groups_spark(results, ["category", "level"]), totals.table())


def test_a_bad_threshold_in_spark_is_one_line(spark: Any, tmp_path: Path) -> None:  # noqa: F811
    table = sliced_table(20).assign(tol="abc")
    path = write_table(table, tmp_path / "bad.csv")
    config = JobConfig(predictions=str(path), scoring=SCORING, track=False, plots=False)
    with pytest.raises(InputError, match="threshold 'abc' is not a number between 0 and 1"):
        run_job(replace(config, engine="spark"), engine=SparkEngine(spark))


def test_a_missing_by_column_in_spark(spark: Any, tmp_path: Path) -> None:  # noqa: F811
    path = write_table(sliced_table(20), tmp_path / "t.csv")
    scoring = replace(SCORING, by=("nope",))
    config = JobConfig(predictions=str(path), scoring=scoring, track=False, plots=False)
    with pytest.raises(InputError, match="by column 'nope' not found"):
        run_job(replace(config, engine="spark"), engine=SparkEngine(spark))
