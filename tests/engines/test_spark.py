"""The Spark engine equals the pandas engine: row for row, aggregate for aggregate, end to end.

One local Spark session for the module; the table is a Parquet file that both engines read, so
each sees the values it would see in a real job.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# ImportError too, not only a missing module: a pyspark that cannot be imported is no Spark.
pytest.importorskip("pyspark.sql", reason="needs the spark extra", exc_type=ImportError)

from numdiff_component import InputError, OptionError, aggregate, score_frame
from numdiff_component.engines.spark import (
    SparkEngine,
    aggregate_spark,
    load_spark_table,
    score_spark,
    spark_format,
    spark_session,
)
from numdiff_component.inputs.tables import open_table
from numdiff_component.job.run import JobOutcome, run_job
from numdiff_component.options import Options
from numdiff_component.scoring import RESULT_COLUMNS, SPAN_COLUMNS
from numdiff_component.task.config import JobConfig, Scoring
from numdiff_component.tracking.evaluation import metrics
from numdiff_component.tracking.records import load_results
from tests.fixtures.commands import numdiff_popen
from tests.fixtures.tables import LIST_READINGS, SPEC_READINGS, assert_spans_read_again

# One local Spark session (a session fixture per xdist worker): this file goes to one worker
# (--dist loadscope).
pytestmark = pytest.mark.slow

TEXTS = [
    "The answer is $1,234.50.",
    "x=-3",
    "COVID-19",
    "\u22122",
    "(\u22122)",
    "$-3.50",
    "--5",
    "1,2345",
    "1234,567",
    "3,14",
    "1.234,5",
    "12.5",
    "50 %",
    "12%",
    "30\t%",
    "Between 3 and 4, final answer 4",
    "12345",
    "1e5",
    "1e",
    "1e999",
    "1e-400",
    "\u22121.5e\u22123",
    "twelve",
    "inf",
    "nan",
    "",
    "   ",
    None,
    "0x1F",
    "3/4",
    ".5",
    ",5",
    "5.",
    "0",
    "-0",
    "0.0302",
    "0.03024",
    "1_000",
    "a-5",
    "E-5",
    "\u0661\u0662",
    "\uff11\uff12",
    "line one\nanswer: 42",
    "\ue000 7 and 8",
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "about 1,234,567.5 units",
    "12 apples, 13 pears",
    *dict.fromkeys(text for text, _, _ in SPEC_READINGS),  # SPEC §1.1
]
N = len(TEXTS)


def _cycle(values: list[Any]) -> list[Any]:
    return [values[i % len(values)] for i in range(N)]


def typed_table() -> pa.Table:
    """Prose against prose (shifted, so pairs vary), and a column of each type Spark has."""
    expected = TEXTS[1:] + TEXTS[:1]
    expected[::5] = TEXTS[::5]  # some exact matches
    return pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "output": pa.array(TEXTS, pa.string()),
            "expected": pa.array(expected, pa.string()),
            "double": pa.array(
                _cycle([1234.5, -3.0, None, math.nan, math.inf, 0.0, 1e308, -1e308, 0.5, 2.0]),
                pa.float64(),
            ),
            "long": pa.array(_cycle([12345, None, -3, 0, 2**60 + 1, 1234, 2]), pa.int64()),
            "decimal": pa.array(
                _cycle(
                    [
                        Decimal("1234.5000"),
                        None,
                        Decimal("-3.0000"),
                        Decimal("0.0302"),
                        Decimal("99999999999999.9999"),
                    ]
                ),
                pa.decimal128(18, 4),
            ),
            "boolean": pa.array(_cycle([True, False, None]), pa.bool_()),
            "null": pa.nulls(N),
        }
    )


@pytest.fixture(scope="session")
def spark() -> Any:
    session = spark_session()
    # Small Arrow batches: every partition is scored in several batches.
    session.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "16")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("table") / "typed.parquet"
    pq.write_table(typed_table(), path)
    return path


@pytest.fixture(scope="module")
def frames(spark: Any, table_path: Path) -> tuple[pd.DataFrame, Any]:
    """The same file as each engine reads it."""
    return pd.read_parquet(table_path), spark.read.parquet(str(table_path))


def collect(sdf: Any) -> pd.DataFrame:
    return pd.DataFrame(sdf.toPandas())


def assert_same_results(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got = got.astype({"id": "int64"}).sort_values("id").reset_index(drop=True)
    want = want.astype({"id": "int64"}).sort_values("id").reset_index(drop=True)
    assert got["id"].tolist() == want["id"].tolist()
    for name in ("output_value", "expected_value", "abs_error", "score"):
        np.testing.assert_array_equal(got[name].to_numpy(float), want[name].to_numpy(float), name)
    assert got["passed"].tolist() == want["passed"].tolist()
    assert got["label"].tolist() == want["label"].tolist()
    for name in SPAN_COLUMNS:  # SPEC §1.4: null where no number, as pandas' NA
        assert _cells(got[name]) == _cells(want[name]), name


def _cells(column: pd.Series) -> list[Any]:
    return [None if pd.isna(value) else value for value in column]


READINGS = {"pick": "answer", "scale": "words", "thousands": "any", "fractions": True}
OPTION_SETS = [
    {},
    {"decimal_comma": True},
    {"pick": "last"},
    {"percent": "fraction"},
    {"floor": 0.0},
    {"decimal_comma": True, "pick": "last", "percent": "fraction", "floor": 0.0, "threshold": 0.5},
    {"pick": "answer"},
    {"scale": "words"},
    {"thousands": "any"},
    {"fractions": True},
    {
        "pick": "answer",
        "scale": "words",
        "thousands": "any",
        "fractions": True,
        "percent": "fraction",
    },
    {
        "pick": "answer",
        "scale": "words",
        "thousands": "any",
        "fractions": True,
        "decimal_comma": True,
    },
]


def test_every_spec_reading_through_spark(spark: Any) -> None:
    """Each SPEC §1.1 example (and v4's markers and scale words, given as a list and a dict),
    scored by Spark with its options, reads the number written.

    One Spark job: the examples that share options are rows of one table, scored with them, and
    the tables' results are one union."""
    by_options: dict[str, list[tuple[str, float | None]]] = {}
    for text, options, number in SPEC_READINGS + LIST_READINGS:
        by_options.setdefault(json.dumps(options, sort_keys=True), []).append((text, number))
    scored = []
    for key, examples in by_options.items():
        rows = [(key, i, text, 1.0) for i, (text, _) in enumerate(examples)]
        sdf = spark.createDataFrame(rows, "options string, i int, output string, expected double")
        scored.append(score_spark(sdf, **json.loads(key)).select("options", "i", "output_value"))
    got = collect(functools.reduce(lambda a, b: a.unionByName(b), scored))
    read = {(key, i): value for key, i, value in got.itertuples(index=False)}
    assert len(read) == len(got) == sum(map(len, by_options.values()))
    for key, examples in by_options.items():
        for i, (text, number) in enumerate(examples):
            want = math.nan if number is None else number
            assert read[key, i] == pytest.approx(want, rel=1e-15, nan_ok=True), (text, key)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "defaults")
def test_prose_equals_pandas(frames: tuple[pd.DataFrame, Any], options: dict[str, Any]) -> None:
    pdf, sdf = frames
    want = score_frame(pdf, **options)
    got = collect(score_spark(sdf, **options))
    assert list(got.columns) == list(pdf.columns) + list(RESULT_COLUMNS)
    assert_same_results(got, want)


@pytest.mark.parametrize("options", OPTION_SETS[6:], ids=lambda o: ",".join(o))
def test_spans_read_again_through_spark(
    frames: tuple[pd.DataFrame, Any], options: dict[str, Any]
) -> None:
    """SPEC §1.4: each row's span holds its number, through Spark as through pandas."""
    _, sdf = frames
    assert_spans_read_again(collect(score_spark(sdf, **options)), options)


TYPED_PAIRS = [
    ("double", "output"),
    ("long", "decimal"),
    ("decimal", "expected"),
    ("boolean", "double"),
    ("null", "long"),
]


@pytest.mark.parametrize("options", [OPTION_SETS[0], OPTION_SETS[-1]], ids=["defaults", "all"])
@pytest.mark.parametrize("pair", TYPED_PAIRS, ids=lambda p: "-".join(p))
def test_typed_columns_equal_pandas(
    frames: tuple[pd.DataFrame, Any], pair: tuple[str, str], options: dict[str, Any]
) -> None:
    pdf, sdf = frames
    want = score_frame(pdf, *pair, **options)
    assert_same_results(collect(score_spark(sdf, *pair, **options)), want)


def test_result_types_and_nulls(frames: tuple[pd.DataFrame, Any]) -> None:
    _, sdf = frames
    results = score_spark(sdf)
    types = {f.name: f.dataType.simpleString() for f in results.schema.fields}
    assert [types[name] for name in RESULT_COLUMNS] == [
        "double",
        "double",
        "double",
        "double",
        "boolean",
        "string",
        *["bigint"] * 4,
        *["string"] * 2,
    ]
    row = results.selectExpr(
        "count_if(label = 'unparseable') AS unparseable",
        "count_if(abs_error IS NULL) AS no_error",
        "count_if(isnan(abs_error) OR isnan(output_value)) AS nans",
        "count_if(score IS NULL OR passed IS NULL OR label IS NULL) AS null_results",
    ).first()
    assert row is not None
    assert row["unparseable"] == row["no_error"] > 0  # no number is null, as in Parquet
    assert row["nans"] == 0 and row["null_results"] == 0


@pytest.mark.parametrize("options", [OPTION_SETS[0], OPTION_SETS[-1]], ids=["defaults", "all"])
def test_aggregates_equal_pandas(frames: tuple[pd.DataFrame, Any], options: dict[str, Any]) -> None:
    pdf, sdf = frames
    scored = score_frame(pdf, **options)
    want = aggregate(scored)
    got = aggregate_spark(score_spark(sdf, **options))
    assert list(got) == list(want)  # the intervals, no_answer_rate and median_abs_error too
    assert got == pytest.approx(want, rel=1e-12, nan_ok=True)
    # Spark's exact median, not an approximate percentile: numpy's over the rows mae counts.
    errors = scored["abs_error"][scored["label"] != "unparseable"]
    assert got["median_abs_error"] == pytest.approx(float(np.median(errors)), rel=1e-15)
    assert isinstance(got["n_rows"], int) and isinstance(got["n_unparseable"], int)


@pytest.mark.parametrize("units", ["lenient", "strict"])
def test_quantities_equal_pandas(spark: Any, units: str) -> None:
    """SPEC §2.2's pairs (equal quantities in other units, other dimensions, a bare side,
    offset temperatures, compound units, currencies) through Spark: the same labels, scores,
    units and aggregates as `score_frame`."""
    from tests.test_units import SCORED

    pdf = pd.DataFrame(
        [(i, output, expected) for i, (output, expected, *_) in enumerate(SCORED)],
        columns=["id", "output", "expected"],
    )
    sdf = spark.createDataFrame(pdf, "id long, output string, expected string")
    want = score_frame(pdf, units=units)
    results = score_spark(sdf, units=units)
    got = collect(results)
    assert list(got.columns) == list(want.columns)
    assert_same_results(got, want)
    got = got.sort_values("id").reset_index(drop=True)
    for name in ("output_unit", "expected_unit"):
        assert got[name].fillna("-").tolist() == want[name].fillna("-").tolist()
    np.testing.assert_array_equal(got["output_converted"].to_numpy(float), want["output_converted"])
    expected_labels = [lenient if units == "lenient" else strict for *_, lenient, strict in SCORED]
    assert got["label"].tolist() == [label for label, _ in expected_labels]
    assert aggregate_spark(results) == pytest.approx(aggregate(want), rel=1e-12, nan_ok=True)


def test_aggregates_of_one_unparseable_row(spark: Any) -> None:
    sdf = spark.createDataFrame([(None, "12")], "output void, expected string")  # NullType
    got = aggregate_spark(score_spark(sdf))
    assert math.isnan(got["mae"]) and math.isnan(got["mean_score_stderr"])
    assert math.isnan(got["median_abs_error"])
    assert (got["n_rows"], got["n_unparseable"], got["mean_score"]) == (1, 1, 0.0)


def test_no_rows_is_an_error(frames: tuple[pd.DataFrame, Any]) -> None:
    _, sdf = frames
    with pytest.raises(InputError, match="no rows to score"):
        aggregate_spark(score_spark(sdf.limit(0)))


@pytest.mark.parametrize(
    "columns, output_col",
    [
        (["answer", "expected"], "output"),  # missing: lists the columns that exist
        (["output", "expected", "score"], "output"),  # a result column's name
    ],
)
def test_column_errors_match_pandas(spark: Any, columns: list[str], output_col: str) -> None:
    pdf = pd.DataFrame([["1"] * len(columns)], columns=columns)
    with pytest.raises(InputError) as pandas_error:
        score_frame(pdf, output_col)
    with pytest.raises(InputError) as spark_error:
        score_spark(spark.createDataFrame(pdf), output_col)
    assert str(spark_error.value) == str(pandas_error.value)


def test_result_name_in_other_case_is_an_error(spark: Any) -> None:
    sdf = spark.createDataFrame(pd.DataFrame({"output": ["1"], "expected": ["1"], "Label": ["x"]}))
    with pytest.raises(InputError, match="'Label' has the name of a result column"):
        score_spark(sdf)


def test_bad_option_and_bad_results(spark: Any) -> None:
    sdf = spark.createDataFrame(pd.DataFrame({"output": ["1"], "expected": ["1"]}))
    with pytest.raises(OptionError, match="pick must be one of"):
        score_spark(sdf, pick="middle")
    with pytest.raises(InputError, match="results column 'score' not found"):
        aggregate_spark(sdf)


@pytest.mark.parametrize(
    "files, expected",
    [
        (["part-00000-x.snappy.parquet", "part-00001-x.snappy.parquet", "_SUCCESS"], "parquet"),
        (["part-00000-x.json", ".part-00000-x.json.crc"], "jsonl"),
        (["a.csv", "b.csv.gz"], "csv"),
    ],
)
def test_format_of_a_folder(tmp_path: Path, files: list[str], expected: str) -> None:
    for name in files:
        (tmp_path / name).touch()
    assert spark_format(str(tmp_path)) == expected


def test_format_errors(tmp_path: Path) -> None:
    (tmp_path / "a.csv").touch()
    (tmp_path / "b.parquet").touch()
    with pytest.raises(InputError, match="pass --format"):
        spark_format(str(tmp_path))
    with pytest.raises(InputError, match="format must be one of"):
        spark_format(str(tmp_path), "xlsx")
    assert spark_format(str(tmp_path), "csv") == "csv"
    assert spark_format("s3a://bucket/preds.parquet/") == "parquet"


def test_text_files_read_as_pandas_reads_them(spark: Any, tmp_path: Path) -> None:
    """CSV cells are text in both engines (quotes, commas, newlines); JSON lines keep types."""
    frame = pd.DataFrame(
        {
            "id": range(6),
            "output": ['He said "about 1,234.5"', "line one\nline 2", "", "007", "1e999", "-3"],
            "expected": ["1234.5", "2", "1", "7", "1", "\u22123"],
        }
    )
    frame.to_csv(tmp_path / "preds.csv", index=False)
    jsonl = frame.assign(expected=[1234.5, 2, None, 7, 1, -3])
    jsonl.to_json(tmp_path / "preds.jsonl", orient="records", lines=True)
    for name in ("preds.csv", "preds.jsonl"):
        source = str(tmp_path / name)
        want = score_frame(open_table(source).read())
        got = collect(score_spark(load_spark_table(source, spark=spark).frame))
        assert_same_results(got, want)


def test_unreadable_sources(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="predictions file not found"):
        load_spark_table(str(tmp_path / "missing.parquet"), spark=spark)
    with pytest.raises(InputError, match="Spark engine reads paths Spark can read"):
        load_spark_table("runs:/abc/preds.parquet", spark=spark)
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="cannot read"):
        load_spark_table(str(tmp_path / "broken.parquet"), spark=spark).frame.count()


def run_spark_job(config: JobConfig, spark: Any) -> JobOutcome:
    return run_job(replace(config, engine="spark"), engine=SparkEngine(spark))


def test_run_spark_job_empty_table(spark: Any, tmp_path: Path) -> None:
    pq.write_table(typed_table().slice(0, 0), tmp_path / "empty.parquet")
    config = JobConfig(predictions=str(tmp_path / "empty.parquet"), track=False)
    with pytest.raises(InputError, match="no rows to score in"):
        run_spark_job(config, spark)


def test_integer_ids_with_a_null_keep_every_bit(spark: Any, tmp_path: Path) -> None:
    """A nullable int64 id (2**53 + 1 beside a null) is the same integer in the Spark results,
    in the batches the job adds up, and in what compare reads back: never a float."""
    ids = [2**53 + 1, 2**53, None]
    source = pa.table({"id": pa.array(ids, pa.int64()), "output": ["1", "2", "3"]})
    pq.write_table(source.append_column("expected", pa.array(["1", "2", "3"])), tmp_path / "t.pq")
    config = JobConfig(str(tmp_path / "t.pq"), results_dir=str(tmp_path / "out"), track=False)
    outcome = run_spark_job(replace(config, plots=False), spark)
    read = load_results(str(outcome.results_path)).frame["id"]
    assert [None if pd.isna(v) else v for v in read] == ids and read.dtype == "Int64"


def test_spark_job_honours_no_plots(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = JobConfig(results_dir=str(out), track=False, plots=False)
    outcome = run_spark_job(config, spark)
    assert outcome.evaluation.reports == ()
    assert sorted(p.name for p in out.iterdir()) == [".numdiff", "results.parquet"]


def test_run_spark_job_end_to_end(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)  # the sqlite store puts artifacts in ./mlruns
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    folder = tmp_path / "preds"  # a folder of Parquet files, as Spark writes a table
    folder.mkdir()
    table = typed_table()
    for i, start in enumerate(range(0, N, 20)):
        pq.write_table(table.slice(start, 20), folder / f"part-{i:05d}.parquet")
    (folder / "_SUCCESS").touch()
    options = Options(threshold=0.9, pick="last")

    outcome = run_spark_job(
        JobConfig(
            predictions=str(folder),
            scoring=Scoring(id_col="id", options=options),
            results_dir=str(tmp_path / "out"),
            experiment_name="spark-e2e",
            run_name="spark",
        ),
        spark,
    )

    want = score_frame(table.to_pandas(), options=options)
    written = pd.read_parquet(outcome.results_path)
    assert outcome.results_path.is_dir() and (outcome.results_path / "_SUCCESS").exists()
    assert len(written) == N and list(written.columns) == table.column_names + list(RESULT_COLUMNS)
    assert_same_results(written, want)
    want_aggregates = aggregate(want)
    assert outcome.evaluation.aggregates == pytest.approx(want_aggregates, rel=1e-12, nan_ok=True)
    assert spark.read.parquet(str(outcome.results_path)).count() == N
    local = load_results(str(outcome.results_path))  # the folder, as compare reads it
    assert local.id_col == "id" and len(local.frame) == N

    assert outcome.run_id is not None
    assert mlflow.get_tracking_uri().startswith("sqlite:")
    client = MlflowClient()
    run = client.get_run(outcome.run_id)
    # MLflow stores an infinite metric (mae here: one pair overflows) as the largest float.
    logged_metrics = {k: min(v, sys.float_info.max) for k, v in metrics(want_aggregates).items()}
    assert run.data.metrics == pytest.approx(logged_metrics, rel=1e-12)
    assert run.data.tags["numeric_diff.engine"] == "spark"
    assert run.data.params["pick"] == "last"  # params named as the MLproject names them
    assert run.data.params["predictions"] == str(folder)
    assert run.inputs is not None
    [dataset] = run.inputs.dataset_inputs
    assert dataset.dataset.name == "preds"
    assert [tag.value for tag in dataset.tags] == ["evaluation"]
    logged = {a.path for a in client.list_artifacts(outcome.run_id, "numeric_diff")}
    report = {"score_histogram.png", "output_vs_expected.png", "summary.md"}
    assert {"numeric_diff/results.parquet", "numeric_diff/results.json"} <= logged
    assert "numeric_diff/summary.md" in logged  # the plots: at the root (once)
    assert {"score_histogram.png", "output_vs_expected.png"} <= {
        a.path for a in client.list_artifacts(outcome.run_id)
    }
    assert report <= {p.name for p in (tmp_path / "out").iterdir()}
    parts = client.list_artifacts(outcome.run_id, "numeric_diff/results.parquet")
    local = Path(
        mlflow.artifacts.download_artifacts(
            run_id=outcome.run_id,
            artifact_path="numeric_diff/results.parquet",
            dst_path=str(tmp_path / "download"),
        )
    )
    assert any(p.path.endswith(".parquet") for p in parts)
    assert len(pd.read_parquet(local)) == N


def test_pyfunc_model_as_a_spark_udf(spark: Any, tracking_uri: str) -> None:
    import mlflow

    from numdiff_component.adapters.pyfunc import log_numeric_diff_model

    info = log_numeric_diff_model(threshold=0.9)
    rows = pd.DataFrame(
        {
            "output": ["It is 41.", "x=-3", "twelve", "1,234.5"],
            "expected": ["42", "-3", "12", "1234"],
        }
    )
    udf = mlflow.pyfunc.spark_udf(
        spark,
        info.model_uri,
        env_manager="local",
        result_type="score double, passed boolean, label string, "
        "output_value double, expected_value double, abs_error double",
    )
    sdf = (
        spark.createDataFrame(rows)
        .withColumn("r", udf("output", "expected"))
        .select("output", "r.*")
    )
    got = collect(sdf).set_index("output").loc[rows["output"]]
    want = score_frame(rows, threshold=0.9)
    np.testing.assert_array_equal(got["score"].to_numpy(float), want["score"].to_numpy(float))
    assert got["label"].tolist() == want["label"].tolist()


RUN_NAMES = (["run"], ["artifacts"], ["results"])
"""The first words of the summary's lines naming the run and where its results are."""


def test_cli_engine_spark(spark: Any, tmp_path: Path, tracking_uri: str) -> None:
    """``numdiff score --engine spark`` prints the pandas engine's summary line for line, but
    for the lines naming its run (docs/spark.md shows two of them)."""
    from tests.fixtures.commands import invoke

    table = str(Path(__file__).resolve().parents[2] / "examples" / "candidate.csv")
    printed = {}
    for engine in ("pandas", "spark"):
        out = str(tmp_path / engine)
        args = (table, "--id-col", "id", "--threshold", "0.95", "--results-dir", out)
        result = invoke("score", "--engine", engine, *args)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        printed[engine] = [line for line in lines if line.split()[:1] not in RUN_NAMES]
        assert len(lines) - len(printed[engine]) == len(RUN_NAMES), result.stdout
    assert printed["spark"] == printed["pandas"]
    assert any(line.split()[:1] == ["note:"] for line in printed["spark"])  # notes too
    written = pd.read_parquet(tmp_path / "spark" / "results.parquet")
    assert len(written) == len(open_table(table).read())


def test_csv_results_equal_pandas_engine_cell_for_cell(spark: Any, tmp_path: Path) -> None:
    """Empty CSV cells stay "" (not null) in the Spark results, as in the pandas engine's."""
    frame = pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "output": ["", "42", "about 7", ""],
            "expected": ["1", "", "7", ""],
            "note": ["", "x", "", '""'],
        }
    )
    frame.to_csv(tmp_path / "preds.csv", index=False)
    config = JobConfig(predictions=str(tmp_path / "preds.csv"), track=False, plots=False)
    pandas = run_job(replace(config, results_dir=str(tmp_path / "pandas")))
    spark_outcome = run_spark_job(replace(config, results_dir=str(tmp_path / "spark")), spark)
    want = pd.read_parquet(pandas.results_path)
    assert want["note"].tolist() == ["", "x", "", '""']
    # pandas keeps its nullable integers in the file's metadata, which Spark does not write.
    positions = dict.fromkeys([c for c in SPAN_COLUMNS if not c.endswith("_rule")], "Int64")
    got = pd.read_parquet(spark_outcome.results_path).astype(positions)
    pd.testing.assert_frame_equal(got, want.astype(positions))


def test_sigterm_during_a_spark_job_leaves_no_partial_output(tmp_path: Path) -> None:
    """A real SIGTERM while Spark writes the results: exit 143, nothing but the claim left."""
    import signal
    import subprocess
    import time

    rows = 400_000
    texts = ["The answer is $1,234.50.", "x=-3", "twelve", "about 2.5"]
    pd.DataFrame(
        {"output": [texts[i % 4] for i in range(rows)], "expected": ["1234.5"] * rows}
    ).to_parquet(tmp_path / "big.parquet")
    job = numdiff_popen(
        *("score", "big.parquet", "--engine", "spark", "--results-dir", "out"),
        env={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    partial = tmp_path / "out" / ".results.parquet.partial"
    deadline = time.monotonic() + 300
    while not (partial / "_temporary").exists() and job.poll() is None:
        assert time.monotonic() < deadline, "Spark never started writing"
        time.sleep(0.05)
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode == 143, stderr[-3000:]
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr, stderr[-3000:]
    time.sleep(2)  # a straggling task would show up now
    assert [p.name for p in (tmp_path / "out").iterdir()] == [".numdiff"]


@pytest.mark.parametrize("options", [{}, {"preset": "answers"}, {"preset": "prose"}])
def test_rows_beyond_a_float_fail_no_spark_job(spark: Any, options: dict[str, Any]) -> None:
    """Issue 33: a digit run beyond a float before a fraction, a 5,000-digit side of A/B, a lone
    row of the batch: no number for that row, the job and the other rows as ever."""
    huge, five_thousand = "1" * 400, "1" * 5000
    texts = [huge + " 1/2", huge + "\u00bd", f"{five_thousand}/3", "1/" + "0" * 5000 + "1", "5"]
    rows = [(i, text, "5") for i, text in enumerate(texts)]
    sdf = spark.createDataFrame(rows, "id long, output string, expected string")
    want = score_frame(pd.DataFrame(rows, columns=["id", "output", "expected"]), **options)
    assert_same_results(collect(score_spark(sdf, **options)), want)
    assert want["label"].tolist()[-1] == "pass"


def test_items_equal_pandas_engine_cell_for_cell(spark: Any, tmp_path: Path) -> None:
    """SPEC §3.3 grouped by Spark: items.parquet equals the pandas engine's, cell for cell, and
    the item aggregates agree; the input is read in several partitions (several part files)."""
    from tests.fixtures.samples import items_table

    pq.write_table(pa.Table.from_pandas(items_table()), tmp_path / "t.parquet", row_group_size=30)
    scoring = Scoring(options=Options(preset="answers"), item_col="item", k=(1, 4, 8))
    config = JobConfig(str(tmp_path / "t.parquet"), scoring, track=False, plots=False)
    pandas = run_job(replace(config, results_dir=str(tmp_path / "pandas")))
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1000")
    try:
        outcome = run_spark_job(replace(config, results_dir=str(tmp_path / "spark")), spark)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert len(list((tmp_path / "spark" / "results.parquet").glob("part-*"))) > 2
    want = pd.read_parquet(tmp_path / "pandas" / "items.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "spark" / "items.parquet"), want)
    got = outcome.evaluation.aggregates
    assert got == pytest.approx(pandas.evaluation.aggregates, rel=1e-12, nan_ok=True)
    assert outcome.evaluation.notes == pandas.evaluation.notes


def test_items_with_different_expected_numbers_fail_in_one_line(spark: Any, tmp_path: Path) -> None:
    frame = pd.DataFrame({"item": ["a", "b", "b"], "output": "1", "expected": ["1", "2", "3"]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    config = JobConfig(str(tmp_path / "t.csv"), Scoring(item_col="item"), track=False)
    with pytest.raises(
        InputError, match=r"^item 'b' has samples with different expected numbers \(2 and 3\)"
    ):
        run_spark_job(replace(config, results_dir=str(tmp_path / "out")), spark)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".numdiff"]
