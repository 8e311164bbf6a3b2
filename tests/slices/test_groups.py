"""Groups (SPEC §3.1) and thresholds per row (SPEC §3.2): every metric against a reference
computed apart with plain pandas, batch by batch as whole, through the CLI and its run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mlflow import MlflowClient

from numdiff_component import score_frame
from numdiff_component.errors import InputError
from numdiff_component.slices.groups import (
    COLUMN_METRICS,
    GROUP_COLUMNS,
    GROUP_METRICS,
    MAX_LOGGED_GROUPS,
    GroupTotals,
    by_columns,
    group_metrics,
    text_index,
    value_text,
)
from numdiff_component.slices.keys import key_part
from numdiff_component.slices.thresholds import ROW_THRESHOLD, apply_row_thresholds
from tests.fixtures.commands import invoke, one_line_error
from tests.fixtures.tables import (
    reference_groups,
    reference_passed,
    sliced_table,
    write_table,
)

THRESHOLD = 0.99


def scored(table: pd.DataFrame) -> pd.DataFrame:
    return apply_row_thresholds(score_frame(table), "tol", THRESHOLD)


def assert_groups_equal(got: pd.DataFrame, column: str, want: pd.DataFrame) -> None:
    rows = got[got["column"] == column]
    values = [None if pd.isna(v) else v for v in rows["value"]]
    wanted = {
        None if pd.isna(v) else v: row
        for v, row in zip(want.index, want.to_dict("records"), strict=True)
    }
    assert sorted(values, key=str) == sorted(wanted, key=str)
    for value, row in zip(values, rows.itertuples(index=False), strict=True):
        for name in GROUP_METRICS:
            expected, found = wanted[value][name], getattr(row, name)
            if isinstance(expected, float) and math.isnan(expected):
                assert math.isnan(found), (value, name)
            else:
                assert found == pytest.approx(expected, rel=1e-12, abs=1e-15), (value, name)


def test_row_thresholds_equal_the_reference() -> None:
    results = scored(sliced_table())
    want = reference_passed(results, "tol", THRESHOLD)
    assert (results["passed"] == want).all()
    assert set(results.loc[want, "label"]) == {"pass"}
    tol = pd.to_numeric(results["tol"].replace(r"^\s*$", None, regex=True)).fillna(THRESHOLD)
    assert (results[ROW_THRESHOLD] == tol).all()


@pytest.mark.parametrize("batch_rows", [400, 37, 7])  # 7: merged on the way (MERGED_PARTS)
def test_groups_equal_the_reference_whole_and_in_batches(batch_rows: int) -> None:
    results = scored(sliced_table())
    totals = GroupTotals(["category", "level"])
    for start in range(0, len(results), batch_rows):
        totals.add(results.iloc[start : start + batch_rows])
    table = totals.table()
    assert list(table.columns) == list(GROUP_COLUMNS)
    passed = reference_passed(results, "tol", THRESHOLD)
    for column in ("category", "level"):
        want = reference_groups(results, column, passed)
        assert_groups_equal(table, column, want)
        metrics = group_metrics(table)
        part = f"by/{column}"
        rates = want["pass_rate"]
        assert metrics[f"{part}/macro_pass_rate"] == pytest.approx(rates.mean(), rel=1e-12)
        assert metrics[f"{part}/worst_pass_rate"] == rates.min()
        assert metrics[f"{part}/pass_rate_gap"] == pytest.approx(rates.max() - rates.min())
        assert metrics[f"{part}/n_groups"] == len(want)


@given(st.lists(st.none() | st.text(max_size=3)), st.sampled_from(["str", "string", object]))
def test_a_column_of_texts_has_the_texts_value_text_gives(
    values: list[str | None], dtype: object
) -> None:
    """The shortcut for a column of texts (no call per value) equals `value_text` of each."""
    column = pd.array(values, dtype=dtype)
    assert list(text_index(column)) == [value_text(v) for v in column]


def test_the_null_group_and_the_empty_text_are_groups_of_their_own() -> None:
    results = scored(sliced_table())
    totals = GroupTotals(["category"])
    totals.add(results)
    groups = totals.table()
    keys = set(groups["key"])
    assert {"_null", "_empty", "a_2Fb", "x_3D1", "Z_C3_BCrich", "geo metry"} <= keys
    null = groups[groups["key"] == "_null"]
    assert null["value"].isna().all() and int(null["n"].iloc[0]) == results["category"].isna().sum()


def test_at_most_100_groups_per_column_are_metrics_the_largest() -> None:
    sizes = np.arange(1, 131)  # group g has g rows: the 100 largest are 31..130
    values = np.repeat([f"g{g}" for g in sizes], sizes)
    results = score_frame(pd.DataFrame({"output": "1", "expected": "1", "g": values}))
    totals = GroupTotals(["g"])
    totals.add(results)
    table = totals.table()
    assert len(table) == 130 and table["logged"].sum() == MAX_LOGGED_GROUPS
    assert set(table.loc[table["logged"], "value"]) == {f"g{g}" for g in range(31, 131)}
    metrics = group_metrics(table)
    logged = {k.split("/")[2] for k in metrics if k.count("/") == 3}
    assert logged == {f"g{g}" for g in range(31, 131)}
    assert set(COLUMN_METRICS) <= {k.split("/")[2] for k in metrics if k.count("/") == 2}


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("abc", "'abc'"), ("1.5", "'1.5'"), ("-0.1", "'-0.1'"), ("inf", "'inf'"), ("nan", "'nan'")],
)
def test_a_threshold_that_is_not_one_names_the_row(value: str, fragment: str) -> None:
    table = pd.DataFrame({"output": ["1", "2", "3"], "expected": "1", "tol": ["", "0.5", value]})
    with pytest.raises(InputError, match=f"row 3 of column 'tol': threshold {fragment}"):
        apply_row_thresholds(score_frame(table), "tol", THRESHOLD)


def test_by_columns_are_read_from_lists_and_commas() -> None:
    assert by_columns(("category,difficulty", "category")) == ("category", "difficulty")
    with pytest.raises(InputError, match="empty column name"):
        by_columns("a,,b")


def test_cli_by_and_threshold_col_log_the_reference(tracking_uri: str, tmp_path: Path) -> None:
    table = sliced_table()
    path = write_table(table, tmp_path / "sliced.parquet")
    folder = tmp_path / "out"
    done = invoke(
        "score", str(path), "--by", "category", "--by", "level", "--threshold-col", "tol",
        "--results-dir", str(folder),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "by category: macro pass rate" in done.stdout
    results = pd.read_parquet(folder / "results.parquet")
    passed = reference_passed(results, "tol", THRESHOLD)
    assert (results["passed"] == passed).all()
    groups = pd.read_parquet(folder / "groups.parquet")
    assert (folder / "group_pass_rates.png").stat().st_size > 0
    run = MlflowClient().search_runs(
        [MlflowClient().get_experiment_by_name("tests").experiment_id]
    )[0]
    metrics, params = run.data.metrics, run.data.params
    assert params["by"] == "category,level" and params["threshold_col"] == "tol"
    assert metrics["numeric_diff/pass_rate"] == pytest.approx(passed.mean(), rel=1e-12)
    for column in ("category", "level"):
        want = reference_groups(results, column, passed)
        assert_groups_equal(groups, column, want)
        for value, row in want.iterrows():
            key = (
                f"numeric_diff/by/{column}/{key_part(None if pd.isna(value) else value)}/pass_rate"
            )
            assert metrics[key] == pytest.approx(row["pass_rate"], rel=1e-12)
    logged = MlflowClient().download_artifacts(run.info.run_id, "numeric_diff/groups.json")
    assert len(pd.read_json(logged, orient="split")) == len(groups)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--by", "nope"), ("by column 'nope' not found", "'category'")),
        (("--threshold-col", "nope"), ("threshold column 'nope' not found",)),
        (("--threshold-col", "output"), ("row 1 of column 'output'",)),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, args: tuple[str, ...], fragments: tuple) -> None:
    path = write_table(sliced_table(20), tmp_path / "sliced.csv")
    done = invoke("score", str(path), "--no-plots", *args, env={"MLFLOW_TRACKING_URI": "x"})
    one_line_error(done, 2, *fragments)


def test_more_metrics_than_one_batch_takes_are_all_logged(
    tracking_uri: str, tmp_path: Path
) -> None:
    """Two columns of 130 groups: 1,400 group metrics, more than MLflow's log_batch takes."""
    values = [f"g{i % 130}" for i in range(390)]
    table = pd.DataFrame({"output": "1", "expected": "1", "a": values, "b": values[::-1]})
    path = write_table(table, tmp_path / "many.csv")
    done = invoke("score", str(path), "--by", "a,b", "--no-plots", "-q")
    assert done.returncode == 0, done.stderr
    run = MlflowClient().search_runs(
        [MlflowClient().get_experiment_by_name("tests").experiment_id]
    )[0]
    by = [k for k in run.data.metrics if k.startswith("numeric_diff/by/")]
    assert len(by) == 2 * (MAX_LOGGED_GROUPS * len(GROUP_METRICS) + len(COLUMN_METRICS))


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([0.5, float("nan"), 1.0], [0.5, THRESHOLD, 1.0]),  # a float column: NaN is empty
        ([0, 1, 1], [0.0, 1.0, 1.0]),  # integers
        (pd.array([1, None, 0], dtype="Int64"), [1.0, THRESHOLD, 0.0]),  # nullable integers
        (["1e-1", "  ", None], [0.1, THRESHOLD, THRESHOLD]),
    ],
)
def test_thresholds_of_every_column_type(values: object, want: list[float]) -> None:
    table = pd.DataFrame({"output": ["1", "2", "3"], "expected": "1", "tol": values})
    assert (
        apply_row_thresholds(score_frame(table), "tol", THRESHOLD)[ROW_THRESHOLD].tolist() == want
    )


@pytest.mark.parametrize("values", [[0.5, True, 0.5], [0.5, 2.0, 0.5], [0.5, -1, 0.5]])
def test_a_column_of_non_thresholds_names_its_row(values: list[object]) -> None:
    table = pd.DataFrame({"id": ["a", "b", "c"], "output": "1", "expected": "1", "tol": values})
    with pytest.raises(InputError, match="row id 'b' of column 'tol'"):
        apply_row_thresholds(score_frame(table), "tol", THRESHOLD, id_col="id")
