"""Comparing two runs: pairing rows, McNemar's exact test, regressions, and the CLI command."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest, ttest_rel

from numdiff_component import InputError, score_frame
from numdiff_component.compare.comparison import (
    align,
    compare_results,
    mcnemar_p_value,
    mean_score_delta,
    pass_rate_delta,
)
from numdiff_component.compare.render import to_json
from numdiff_component.intervals import LEVEL
from numdiff_component.job.baseline import VsBaseline
from tests.fixtures.commands import invoke, numdiff_process, one_line_error


def results(ids: list[str], outputs: list[str], expected: list[str]) -> pd.DataFrame:
    return score_frame(pd.DataFrame({"id": ids, "output": outputs, "expected": expected}))


def pair(n: int, regress: set[int], improve: set[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs A and B over ``n`` items: rows in ``regress`` pass in A only, in ``improve`` B only.

    Every other row passes on both sides, except every fifth, which fails on both.
    """
    ids = [f"item-{i:04d}" for i in range(n)]
    expected = [str(i + 10) for i in range(n)]

    def output(i: int, good: bool) -> str:
        return expected[i] if good else str(i + 20)

    both_fail = {i for i in range(0, n, 5)} - regress - improve
    a = [output(i, i not in improve and i not in both_fail) for i in range(n)]
    b = [output(i, i not in regress and i not in both_fail) for i in range(n)]
    return results(ids, a, expected), results(ids, b, expected)


def test_planted_regressions_and_improvements_are_found_by_id() -> None:
    a, b = pair(60, regress={3, 17, 44}, improve={8})
    shuffled = b.sample(frac=1, random_state=3)  # B's rows in another order
    comparison = compare_results(a, shuffled, id_col="id")
    assert comparison.regressed()["id"].tolist() == ["item-0003", "item-0017", "item-0044"]
    assert comparison.improved()["id"].tolist() == ["item-0008"]
    assert (comparison.n_regressed, comparison.n_improved) == (3, 1)
    assert comparison.n_expected_differ == 0
    drops = comparison.largest_drops(2)
    assert set(drops["id"]) <= {"item-0003", "item-0017", "item-0044"}
    assert (drops["score_change"] < 0).all()
    assert comparison.aggregates["pass_rate"]["diff"] == pytest.approx(-2 / 60)


def test_rows_are_matched_by_position_without_an_id() -> None:
    a, b = pair(10, regress={2}, improve={7})
    comparison = compare_results(a.drop(columns="id"), b.drop(columns="id"))
    assert comparison.matched_by is None
    assert comparison.regressed()["id"].tolist() == [2]
    assert comparison.improved()["id"].tolist() == [7]


def test_a_shuffled_table_matched_by_position_is_pointed_out() -> None:
    a, b = pair(30, regress=set(), improve=set())
    comparison = compare_results(a, b.iloc[::-1])
    assert comparison.n_expected_differ == 30


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.iloc[:-1], "run A has 20 rows and run B 19"),
        (lambda b: b.drop(columns="id"), "id column 'id' not in run B"),
        (
            lambda b: b.assign(id=b["id"].where(b.index != 4, "item-9999")),
            r"1 only in A \(e.g. 'item-0004'\), 1 only in B \(e.g. 'item-9999'\)",
        ),
        (
            lambda b: b.assign(id=b["id"].where(b.index != 4, "item-0005")),
            "run B has duplicate ids in 'id' \\(e.g. 'item-0005'",
        ),
        (lambda b: b.assign(id=b["id"].where(b.index != 4, None)), "run B has rows with no 'id'"),
        (lambda b: b.drop(columns="score"), "run B is not a numeric diff results table"),
    ],
    ids=["length", "no id column", "ids differ", "duplicate id", "missing id", "not results"],
)
def test_tables_that_do_not_line_up_are_refused(
    change: Callable[[pd.DataFrame], pd.DataFrame], message: str
) -> None:
    a, b = pair(20, regress=set(), improve=set())
    id_col = None if message.startswith("run A has 20 rows") else "id"
    with pytest.raises(InputError, match=message):
        align(a, change(b), id_col)


def test_noise_is_not_flagged_and_a_large_change_is() -> None:
    a, b = pair(1000, regress={1, 2, 3, 4, 6}, improve={7, 8, 9, 11})
    noisy = compare_results(a, b, id_col="id")
    assert not noisy.beyond_noise and noisy.p_value == pytest.approx(1.0)
    planted = set(range(1, 200, 5))  # 40 regressions against 2 improvements
    large = compare_results(*pair(1000, regress=planted, improve={2, 3}), id_col="id")
    assert large.beyond_noise and large.p_value < 1e-8
    assert to_json(large)["test"]["beyond_noise"] is True


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (1, 0, 1.0),
        (3, 1, 0.625),
        (10, 0, 2 / 1024),
        (0, 10, 2 / 1024),
        (12, 2, 2 * sum(math.comb(14, i) for i in range(3)) / 2**14),
    ],
)
def test_mcnemar_exact_p_values(b: int, c: int, p: float) -> None:
    assert mcnemar_p_value(b, c) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize(("n", "k"), [(40, 3), (5000, 2400), (5000, 2500), (4000, 10)])
def test_p_value_equals_the_exact_binomial_sum(n: int, k: int) -> None:
    exact = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
    assert mcnemar_p_value(n - k, k) == pytest.approx(exact, rel=1e-9)


def test_large_counts_stay_in_range() -> None:
    assert mcnemar_p_value(500_000, 500_000) == pytest.approx(1.0)
    assert 0.0 <= mcnemar_p_value(600_000, 400_000) < 1e-300


def test_to_dict_is_json_with_ids_and_no_nan() -> None:
    a = results(["x", "y", "z"], ["1", "?", "3"], ["1", "2", "3"])
    b = results(["x", "y", "z"], ["9", "2", "?"], ["1", "2", "3"])
    summary = json.loads(json.dumps(to_json(compare_results(a, b, id_col="id")), allow_nan=False))
    assert [r["id"] for r in summary["regressed"]] == ["x", "z"]  # z: unparseable in B
    assert [r["id"] for r in summary["improved"]] == ["y"]
    assert summary["aggregates"]["n_unparseable"] == {"a": 1, "b": 1, "diff": 0}
    assert summary["test"]["name"] == "McNemar exact test"
    regressed_z = next(r for r in summary["largest_score_drops"] if r["id"] == "z")
    assert regressed_z["output_value_b"] is None  # NaN becomes null


# --- the CLI on real runs in a sqlite store ---------------------------------------------------


def _compare(*args: str) -> tuple[int, str, str]:
    done = invoke("compare", *args)
    return done.returncode, done.stdout, done.stderr


def log_run(table: pd.DataFrame, tmp_path: Path, name: str) -> str:
    """A run holding what ``numdiff score --id-col id`` logs for compare: params and results."""
    import mlflow

    folder = tmp_path / name
    folder.mkdir()
    score_frame(table).to_parquet(folder / "results.parquet", index=False)
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params(
            {
                "numeric_diff/id_col": "id",
                "numeric_diff/output_col": "output",
                "numeric_diff/expected_col": "expected",
                "numeric_diff/threshold": 0.99,
            }
        )
        mlflow.log_artifact(str(folder / "results.parquet"), artifact_path="numeric_diff")
    return str(run.info.run_id)


@pytest.fixture
def scored_runs_a_b(tracking_uri: str, tmp_path: Path) -> tuple[str, str]:
    """Runs A and B in a sqlite store: B has q02 and q05 wrong, q04 right, rows reversed."""
    table = pd.DataFrame(
        {
            "id": [f"q{i:02d}" for i in range(1, 9)],
            "output": ["1", "2", "3", "four", "5", "6", "7", "8"],
            "expected": ["1", "2", "3", "4", "5", "6", "7", "8"],
        }
    )
    changed = table.assign(output=["1", "20", "3", "4", "-5", "6", "7", "8"])
    return log_run(table, tmp_path, "a"), log_run(changed.iloc[::-1], tmp_path, "b")


@pytest.mark.slow
def test_cli_compare_json_on_two_runs(scored_runs_a_b: tuple[str, str]) -> None:
    code, out, err = _compare(*scored_runs_a_b, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["matched_by"] == {"id_col": "id"}  # from the runs' numeric_diff/id_col
    assert [r["id"] for r in summary["regressed"]] == ["q02", "q05"]
    assert [r["id"] for r in summary["improved"]] == ["q04"]
    assert summary["test"]["name"] == "McNemar exact test"
    assert summary["test"]["p_value"] == pytest.approx(1.0)
    expected_rates = {"a": 7 / 8, "b": 6 / 8, "diff": -1 / 8}
    assert summary["aggregates"]["pass_rate"] == pytest.approx(expected_rates)


@pytest.mark.slow
def test_cli_compare_text_and_log(scored_runs_a_b: tuple[str, str]) -> None:
    code, out, err = _compare(*scored_runs_a_b, "--log", "--experiment-name", "comparisons")
    assert code == 0, err
    assert "8 rows matched by id column 'id'" in out
    assert "regressed (passed in A, failed in B): 2" in out and "McNemar exact test" in out
    from mlflow import MlflowClient

    run_id = out.split("logged to run ")[1].split()[0]
    run = MlflowClient().get_run(run_id)
    assert run.data.metrics["compare/n_regressed"] == 2
    assert run.data.metrics["compare/pass_rate_diff"] == pytest.approx(-1 / 8)
    assert run.data.metrics["compare/pass_rate_diff_ci_low"] < -1 / 8
    assert run.data.params["compare/run_a"] == scored_runs_a_b[0]
    logged = json.loads(
        Path(MlflowClient().download_artifacts(run_id, "compare/comparison.json")).read_text()
    )
    assert [r["id"] for r in logged["regressed"]] == ["q02", "q05"]


@pytest.mark.slow
def test_cli_compare_bad_input_is_one_line_and_exit_2(
    scored_runs_a_b: tuple[str, str], tmp_path: Path
) -> None:
    one_line_error(invoke("compare", scored_runs_a_b[0], "no-such-run"), 2, "'no-such-run'")
    one_line_error(
        invoke("compare", *scored_runs_a_b, "--id-col", "question"),
        2,
        "id column 'question' not in run A",
    )
    local_b = tmp_path / "b" / "results.parquet"
    # A local file has no params: the id column of run A is used, as both tables hold it.
    code, out, err = _compare(scored_runs_a_b[0], str(local_b), "--json")
    assert code == 0 and json.loads(out)["matched_by"] == {"id_col": "id"}, err
    code, out, err = _compare(
        str(tmp_path / "a" / "results.parquet"), str(local_b), "--id-col", "id", "--json"
    )
    assert code == 0 and [r["id"] for r in json.loads(out)["regressed"]] == ["q02", "q05"]


def test_many_rows_in_another_order_are_paired_by_id() -> None:
    n = 200_000
    rng = np.random.default_rng(0)
    a = pd.DataFrame(
        {
            "id": rng.permutation(n).astype(str),
            "score": rng.random(n),
            "abs_error": 0.1,
            "output_value": 1.0,
            "expected_value": 1.0,
        }
    )
    b = a.assign(score=rng.random(n))
    for side in (a, b):
        side["passed"] = side["score"] >= 0.5
        side["label"] = np.where(side["passed"], "pass", "fail")
    regressed = set(a["id"][a["passed"] & ~b["passed"]])
    comparison = compare_results(a, b.sample(frac=1, random_state=1), id_col="id")
    assert set(comparison.regressed()["id"]) == regressed
    assert comparison.n_regressed == len(regressed) > 40_000


def test_local_results_are_paired_by_the_id_column_they_were_scored_with(tmp_path: Path) -> None:
    from numdiff_component.job.run import run_job
    from numdiff_component.task.config import JobConfig, Scoring

    a, b = pair(30, regress={4}, improve={9})
    for name, frame in (("a", a), ("b", b.sample(frac=1, random_state=1))):
        inputs = frame[["id", "output", "expected"]]
        inputs.to_csv(tmp_path / f"{name}.csv", index=False)
        config = JobConfig(
            predictions=str(tmp_path / f"{name}.csv"),
            scoring=Scoring(id_col="id"),
            results_dir=str(tmp_path / name),
            track=False,
            baseline=str(tmp_path / "a" / "results.parquet") if name == "b" else None,
        )
        outcome = run_job(config)
    vs_baseline = outcome.evaluation.vs_baseline  # B's job, against A's results file
    assert vs_baseline is not None and vs_baseline.comparison.verdict == "no significant difference"
    assert (vs_baseline.comparison.n_regressed, vs_baseline.comparison.n_improved) == (1, 1)
    assert (tmp_path / "b" / "vs_baseline_histograms.png").read_bytes().startswith(b"\x89PNG")
    a_file, b_file = (str(tmp_path / name / "results.parquet") for name in "ab")
    done = invoke("compare", a_file, b_file, "--json", "--plot", str(tmp_path / "ab.png"))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["matched_by"] == {"id_col": "id"} and summary["n_expected_differ"] == 0
    assert [r["id"] for r in summary["regressed"]] == ["item-0004"]
    assert summary["deltas"]["pass_rate"]["diff"] == 0 and summary["test"]["verdict"]
    assert (tmp_path / "ab.png").read_bytes().startswith(b"\x89PNG")


def test_compare_shows_the_options_each_side_was_scored_with(tmp_path: Path) -> None:
    from numdiff_component.job.run import run_job
    from numdiff_component.options import Options
    from numdiff_component.task.config import JobConfig, Scoring

    b = Options(pick="last", threshold=0.9, markers=["Result", "Final answer"])
    for name, options in (("a", Options()), ("b", b)):
        config = JobConfig(
            scoring=Scoring(options=options), results_dir=str(tmp_path / name), track=False
        )
        run_job(config)
    a_file, b_file = (str(tmp_path / name / "results.parquet") for name in "ab")
    text = invoke("compare", a_file, b_file).stdout
    assert (
        "options differ: threshold 0.99 in A, 0.9 in B; pick first in A, last in B; "
        "markers none in A, Result,Final answer in B"
    ) in text
    summary = json.loads(invoke("compare", a_file, b_file, "--json").stdout)
    assert summary["options"]["b"]["pick"] == "last" and summary["options"]["a"]["pick"] == "first"
    assert (
        "options (A and B): preset none, threshold 0.99" in invoke("compare", a_file, a_file).stdout
    )


def test_ids_that_differ_only_in_type_are_named() -> None:
    a = results(["1", "2", "3"], ["1", "2", "3"], ["1", "2", "3"])
    b = a.assign(id=[1, 2, 3])
    message = r"differ only in type \(string in A, integer in B, e.g. '1' and 1\)"
    with pytest.raises(InputError, match=message):
        compare_results(a, b, id_col="id")


@pytest.mark.parametrize("passed", [["True", "False", "True"], [1, 0, 1]], ids=["text", "ints"])
def test_a_passed_column_that_is_not_true_or_false_is_refused(passed: list[object]) -> None:
    a = results(["x", "y", "z"], ["1", "?", "3"], ["1", "2", "3"])
    b = a.assign(passed=passed)  # "False" would count as passed if read as a truth value
    with pytest.raises(InputError, match="'passed' column of run B must hold True or False"):
        compare_results(a, b, id_col="id")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"score": [1.0, 1.5, 1.0]}, r"impossible scores \(e.g. 1.5 in row 1\)"),
        ({"score": [1.0, -2.0, 1.0]}, r"impossible scores \(e.g. -2 in row 1\)"),
        ({"score": [1.0, math.nan, 1.0]}, r"impossible scores \(e.g. nan in row 1\)"),
        ({"label": ["pass", "pass", "pass"]}, r"'pass' with passed=False in row 1"),
        ({"label": ["fail", "unparseable", "pass"]}, r"'fail' with passed=True in row 0"),
        ({"label": ["pass", "maybe", "pass"]}, r"'maybe' with passed=False in row 1"),
    ],
)
def test_impossible_values_in_an_edited_results_file_are_refused(
    edit: dict[str, list[object]], message: str, tmp_path: Path
) -> None:
    a = results(["x", "y", "z"], ["1", "?", "3"], ["1", "2", "3"])
    with pytest.raises(InputError, match=message):
        compare_results(a, a.assign(**edit), id_col="id")
    # The same through the command, on a hand-edited results file: exit 2, one line.
    a.to_parquet(tmp_path / "a.parquet")
    a.assign(**edit).to_parquet(tmp_path / "b.parquet")
    done = invoke("compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"))
    one_line_error(done, 2, "run B has 1 ")


@pytest.mark.slow
def test_runs_not_finished_or_deleted_are_warned_of(
    scored_runs_a_b: tuple[str, str], tmp_path: Path
) -> None:
    """Compared all the same, with a warning each; and the runs' results, downloaded to compare
    them, leave no temporary copy (a process of its own: TMPDIR is read once per process)."""
    from mlflow import MlflowClient

    client = MlflowClient()
    a, b = scored_runs_a_b
    client.update_run(a, status="RUNNING")
    client.set_terminated(b, status="FAILED")
    client.delete_run(b)
    temp = tmp_path / "temp"
    temp.mkdir()
    done = numdiff_process("compare", a, b, env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []
    warnings = done.stderr.strip().splitlines()
    a, b = f"a (run {a})", f"b (run {b})"  # each run's name, and its id
    assert warnings == [
        f"numdiff: warning: run A {a!r} is RUNNING: its results may not be complete yet",
        f"numdiff: warning: run B {b!r} is FAILED: its results may be from a failed job",
        f"numdiff: warning: run B {b!r} is deleted (in the trash of its experiment)",
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            {"expected_value": ["abc", "2", "3"]},
            "'expected_value' column of run B must hold numbers",
        ),
        ({"score": ["1", "0", "1"]}, "the 'score' column of run B must hold numbers, got '1'"),
        ({"id": [[1], [2], [3]]}, "the id column 'id' of run B holds ndarray values"),
        ({"id": [{"k": 1}, {"k": 2}, {"k": 3}]}, "the id column 'id' of run B holds dict values"),
    ],
    ids=["text for numbers", "text for scores", "lists for ids", "structs for ids"],
)
def test_a_results_file_edited_to_the_wrong_types_is_one_line_and_exit_2(
    edit: dict[str, list[object]], message: str, tmp_path: Path
) -> None:
    a = results(["x", "y", "z"], ["1", "?", "3"], ["1", "2", "3"])
    a.to_parquet(tmp_path / "a.parquet")
    a.assign(**edit).to_parquet(tmp_path / "b.parquet")
    # The command in this process; as a real process on a bad results file (one line, exit 2):
    # test_a_run_whose_results_artifact_is_truncated_is_one_line_and_exit_2.
    done = invoke(
        "compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--id-col", "id"
    )
    one_line_error(done, 2, message)


def test_a_run_whose_results_artifact_is_truncated_is_one_line_and_exit_2(
    tracking_uri: str, tmp_path: Path
) -> None:
    """As the same truncated file given as a local path is."""
    import mlflow

    a = results(["x", "y"], ["1", "2"], ["1", "2"])
    a.to_parquet(tmp_path / "a.parquet")
    data = (tmp_path / "a.parquet").read_bytes()
    (tmp_path / "run" / "numeric_diff").mkdir(parents=True)
    (tmp_path / "run" / "numeric_diff" / "results.parquet").write_bytes(data[: len(data) // 2])
    with mlflow.start_run() as run:
        mlflow.log_artifacts(str(tmp_path / "run"))
    done = numdiff_process("compare", str(tmp_path / "a.parquet"), run.info.run_id)
    one_line_error(
        done,
        2,
        f"cannot read the results of run {run.info.run_id!r} (numeric_diff/results.parquet)",
        "Parquet magic bytes not found",
    )


def test_integer_ids_with_a_null_keep_every_bit_through_score_and_compare(
    tracking_uri: str, tmp_path: Path
) -> None:
    """A Parquet int64 or uint64 column holding a null (as Spark and pandas write a nullable
    integer) stays that integer in results.parquet: 2**53 + 1 is not 2**53, so ids do not
    collide in compare."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [2**53 + 1, 2**53, None]
    big = [2**64 - 1, 2**64 - 2, None]
    source = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "big": pa.array(big, pa.uint64()),
            "output": ["1", "2", "3"],
            "expected": ["1", "2", "3"],
        }
    )
    pq.write_table(source, tmp_path / "t.parquet")
    folder = tmp_path / "res"
    done = invoke("score", str(tmp_path / "t.parquet"), "-q", "--results-dir", str(folder))
    assert done.returncode == 0, done.stderr
    kept = pq.read_table(folder / "results.parquet")
    assert kept.column("id").type == pa.int64() and kept.column("id").to_pylist() == ids
    assert kept.column("big").type == pa.uint64() and kept.column("big").to_pylist() == big
    only_ids = kept.filter(pa.compute.is_valid(kept.column("big")))
    pq.write_table(only_ids, tmp_path / "a.parquet")  # compare needs an id on every row
    done = invoke(
        "compare", str(tmp_path / "a.parquet"), str(tmp_path / "a.parquet"), "--id-col", "big"
    )
    assert done.returncode == 0, done.stderr


# --- the paired differences, their intervals and the verdict ---------------------------------


def _newcombe_reference(passed_a: np.ndarray, passed_b: np.ndarray) -> tuple[float, float]:
    """Newcombe's method 10 written out apart: scipy's Wilson intervals of each side, numpy's
    correlation of the paired outcomes (phi) corrected for continuity (a positive ad - bc less
    n/2), his two square roots."""
    n = len(passed_a)
    k_a, k_b = int(passed_a.sum()), int(passed_b.sum())
    ci_a = binomtest(k_a, n).proportion_ci(confidence_level=LEVEL, method="wilson")
    ci_b = binomtest(k_b, n).proportion_ci(confidence_level=LEVEL, method="wilson")
    constant = passed_a.all() or not passed_a.any() or passed_b.all() or not passed_b.any()
    phi = 0.0 if constant else float(np.corrcoef(passed_a, passed_b)[0, 1])
    if phi > 0:  # the correlation is ad - bc over the margins' root: take n/2 off ad - bc
        ad_bc = phi * math.sqrt(k_a * (n - k_a) * k_b * (n - k_b))
        phi = max(0.0, ad_bc - n / 2) / math.sqrt(k_a * (n - k_a) * k_b * (n - k_b))
    p_a, p_b = k_a / n, k_b / n
    d_low = math.sqrt(
        max(0, (p_b - ci_b.low) ** 2 - 2 * phi * (p_b - ci_b.low) * (ci_a.high - p_a)
            + (ci_a.high - p_a) ** 2)
    )  # fmt: skip
    d_high = math.sqrt(
        max(0, (ci_b.high - p_b) ** 2 - 2 * phi * (ci_b.high - p_b) * (p_a - ci_a.low)
            + (p_a - ci_a.low) ** 2)
    )  # fmt: skip
    return max(-1, p_b - p_a - d_low), min(1, p_b - p_a + d_high)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300))
def test_pass_rate_delta_equals_newcombes_interval_computed_apart(
    pairs: list[tuple[bool, bool]],
) -> None:
    passed_a, passed_b = (np.array(side, dtype=bool) for side in zip(*pairs, strict=True))
    delta = pass_rate_delta(passed_a, passed_b)
    assert delta.diff == pytest.approx(passed_b.mean() - passed_a.mean(), abs=1e-12)
    assert (delta.low, delta.high) == pytest.approx(_newcombe_reference(passed_a, passed_b))
    assert -1 <= delta.low <= delta.diff <= delta.high <= 1


def test_pass_rate_delta_of_a_known_table() -> None:
    """36 rows pass on both sides, 12 in B only, 2 in A only, none on neither: B - A = 0.2; and
    the two tables of Fagerland, Lydersen and Laake's chapter 8 (B first, A second)."""
    a = np.array([True] * 36 + [False] * 12 + [True] * 2)
    b = np.array([True] * 36 + [True] * 12 + [False] * 2)
    delta = pass_rate_delta(a, b)
    assert (delta.diff, delta.low, delta.high) == pytest.approx((0.2, 0.0569, 0.3404), abs=5e-5)
    for table, expected in [
        ((1, 1, 7, 12), (-0.2857, -0.5069, -0.0256)),  # Bentur et al.
        ((59, 6, 16, 80), (-0.0621, -0.1186, -0.0046)),  # Cavo et al.
    ]:
        # the counts passing on both sides, in B only, in A only, on neither
        b = np.repeat([True, True, False, False], table)
        a = np.repeat([True, False, True, False], table)
        delta = pass_rate_delta(a, b)
        assert (delta.diff, delta.low, delta.high) == pytest.approx(expected, abs=5e-5)
    unchanged = pass_rate_delta(np.ones(40, bool), np.ones(40, bool))  # not an empty interval
    assert unchanged.low < 0 < unchanged.high


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=200, unique_by=lambda p: p
    )
)
def test_mean_score_delta_equals_scipys_paired_t_interval(pairs: list[tuple[float, float]]) -> None:
    score_a, score_b = (np.array(side) for side in zip(*pairs, strict=True))
    delta = mean_score_delta(score_a, score_b)
    assert delta.diff == pytest.approx(float(np.mean(score_b - score_a)), abs=1e-12)
    if np.ptp(score_b - score_a) < 1e-9:  # every row changed alike: no spread, no t
        return
    ci = ttest_rel(score_b, score_a).confidence_interval(LEVEL)
    expected = (max(-1.0, ci.low), min(1.0, ci.high))
    assert (delta.low, delta.high) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("regress", "improve", "verdict"),
    [
        (set(range(1, 40, 5)), set(), "worse"),  # 8 against 0: p = 0.008
        (set(), set(range(1, 40, 5)), "better"),
        ({1, 2, 3}, {6, 7}, "no significant difference"),
    ],
)
def test_the_verdict_and_the_gate(regress: set[int], improve: set[int], verdict: str) -> None:
    a, b = pair(50, regress=regress, improve=improve)
    comparison = compare_results(a, b, id_col="id")
    assert comparison.verdict == verdict
    assert to_json(comparison)["test"]["verdict"] == verdict
    gated = VsBaseline(comparison, "v1", fail_if_worse=True)
    assert gated.passed is (verdict != "worse")
    assert VsBaseline(comparison, "v1").passed  # no gate asked for
    metrics = gated.metrics()
    assert metrics["numeric_diff/vs_baseline/n_regressed"] == len(regress)
    assert metrics["numeric_diff/vs_baseline/n_shared"] == 50
    rate = comparison.deltas["pass_rate"]
    assert metrics["numeric_diff/vs_baseline/pass_rate_delta_ci_low"] == rate.low
    assert metrics["numeric_diff/vs_baseline/mcnemar_p"] == comparison.p_value
    start = {"worse": "Worse than", "better": "Better than"}.get(
        verdict, "No significant difference from"
    )
    assert gated.message.startswith(f"{start} the baseline 'v1': pass rate")


def test_shared_ids_are_paired_and_the_others_counted() -> None:
    a, b = pair(20, regress={3}, improve=set())
    comparison = compare_results(a.iloc[2:], b.iloc[:-5], id_col="id", shared=True)
    assert len(comparison.rows) == 13
    assert (comparison.n_only_a, comparison.n_only_b) == (5, 2)
    assert comparison.regressed()["id"].tolist() == ["item-0003"]
    with pytest.raises(InputError, match="the runs share no id in 'id' \\(10 in A"):
        compare_results(a.iloc[:10], b.iloc[10:], id_col="id", shared=True)


@pytest.mark.parametrize("tallest", [30, 100_000])  # linear, then log: the same on both sides
def test_histograms_side_by_side_share_their_y_scale(tallest: int) -> None:
    from numdiff_component.report.plots import SCORE_EDGES, Histogram, histogram_figure

    bins = len(SCORE_EDGES) - 1
    big, small = np.zeros(bins, dtype=np.int64), np.zeros(bins, dtype=np.int64)
    big[-1], small[-1], small[3] = tallest, 20, 21  # 20 vs 21: read from the bars' heights
    figure = histogram_figure(
        [Histogram(big, small * 0, 1, 0.99, "A"), Histogram(small, small * 0, 0, 0.9, "B")]
    )
    a, b = figure.axes
    assert a.get_ylim() == b.get_ylim() and a.get_ylim()[1] >= tallest
    assert a.get_yscale() == b.get_yscale() == ("log" if tallest > 100 else "linear")
