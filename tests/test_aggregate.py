"""Aggregates over scored rows (SPEC §3), and the running totals that add batches up."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from scipy.stats import t as student

from numdiff_component import AGGREGATE_NAMES, InputError, Totals, aggregate, score, score_frame
from numdiff_component.aggregate import AbsErrors
from tests.fixtures.tables import SPEC_ROWS, spec_table

BIG = "1.7976931348623157e308"


def _frame(outputs: list[Any], expected: list[Any]) -> pd.DataFrame:
    return score_frame(pd.DataFrame({"output": outputs, "expected": expected}, dtype=object))


def test_spec_table_scores_as_the_spec_says() -> None:
    results = score_frame(spec_table())
    _, _, _, scores, labels = zip(*SPEC_ROWS, strict=True)
    assert results["score"].tolist() == pytest.approx(scores, abs=1e-12)
    assert results["label"].tolist() == list(labels)


# Each table's aggregates worked out by hand from SPEC §3's definitions.
SPEC_SCORES = [1 - 0.00004, 1.0, 1.0, 1.0, 0.99, 0.98, 0.0, 0.0, 0.0]
SMALL_SCORES = [1.0, 0.9, 0.0, 1.0]


def _stderr(scores: list[float]) -> float:
    mean = sum(scores) / len(scores)
    variance = sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)  # ddof=1
    return math.sqrt(variance / len(scores))


def _with_intervals(expected: dict[str, float], no_answer: int) -> dict[str, float]:
    """``expected`` with the no-answer rate and the 95% intervals, as scipy computes them."""
    n, rate, stderr = (expected[k] for k in ("n_rows", "pass_rate", "mean_score_stderr"))
    ci = binomtest(round(rate * n), n).proportion_ci(method="wilson")
    low, high = student.interval(0.95, n - 1, loc=expected["mean_score"], scale=stderr)
    return {
        **expected,
        "pass_rate_ci_low": ci.low,
        "pass_rate_ci_high": ci.high,
        "mean_score_ci_low": max(0, low),
        "mean_score_ci_high": min(1, high),
        "no_answer_rate": no_answer / n,
    }


HAND_COMPUTED = {
    "spec table": (
        spec_table,
        {
            "mean_score": 5.96996 / 9,
            "pass_rate": 5 / 9,  # seed, sign, hyphen, grouping, near
            "mae": (0.00004 + 0 + 0 + 0 + 1 + 2 + 10) / 7,  # the 7 rows with two numbers
            "median_abs_error": 0.00004,  # the 4th of 0, 0, 0, 0.00004, 1, 2, 10
            "mean_score_stderr": _stderr(SPEC_SCORES),
            "n_rows": 9,
            "n_unparseable": 2,
        },
        2,  # twelve, 1e999
    ),
    "small table": (
        lambda: pd.DataFrame({"output": ["10", "9", "?", "0"], "expected": ["10", "10", "1", "0"]}),
        {
            "mean_score": 2.9 / 4,
            "pass_rate": 0.5,
            "mae": 1 / 3,  # |10-10|, |9-10|, |0-0| over the three rows with two numbers
            "median_abs_error": 0.0,
            "mean_score_stderr": _stderr(SMALL_SCORES),
            "n_rows": 4,
            "n_unparseable": 1,
        },
        1,  # ?
    ),
}


@pytest.mark.parametrize("case", HAND_COMPUTED, ids=list(HAND_COMPUTED))
def test_aggregates_follow_the_definitions(case: str) -> None:
    make, expected, no_answer = HAND_COMPUTED[case]
    results = score_frame(make())
    got = aggregate(results)
    assert list(got) == list(AGGREGATE_NAMES)
    assert got == pytest.approx(_with_intervals(expected, no_answer), rel=1e-9)
    assert type(got["n_rows"]) is int and type(got["n_unparseable"]) is int
    # The same from a list of results and from a plain mapping of the result columns.
    rows = [score(o, e) for o, e in zip(results["output"], results["expected"], strict=True)]
    assert aggregate(rows) == pytest.approx(got, rel=1e-12)
    names = ("score", "passed", "label", "abs_error", "output_value")
    columns = {name: results[name].tolist() for name in names}
    assert aggregate(columns) == pytest.approx(got, rel=1e-12)


@pytest.mark.parametrize(
    "no_rows",
    [
        _frame([], []),
        [],
        {"score": [], "passed": [], "label": [], "abs_error": [], "output_value": []},
    ],
    ids=["frame", "list", "mapping"],
)
def test_no_rows_is_an_error(no_rows: Any) -> None:
    with pytest.raises(InputError, match=r"^no rows to score$"):
        aggregate(no_rows)


def test_totals_of_nothing_is_an_error_and_adds_as_zero() -> None:
    with pytest.raises(InputError, match="no rows to score"):
        Totals().aggregates()
    with pytest.raises(InputError, match="no rows to score"):
        (Totals() + Totals()).aggregates()
    some = Totals.of(_frame(["1", "x"], ["1", "2"]))
    assert Totals() + some == some == some + Totals()
    assert Totals.of(_frame([], [])) == Totals()


EDGES = {
    # name: (outputs, expected, aggregates that must hold)
    "nothing parses": (
        ["x", None, "twelve"],
        ["1", "2", None],
        {"mae": math.nan, "mean_score": 0.0, "pass_rate": 0.0, "n_unparseable": 3},
    ),
    "one row": (["3"], ["4"], {"mae": 1.0, "mean_score_stderr": math.nan, "n_rows": 1}),
    "one unparseable row": (
        ["x"],
        ["1"],
        {"mae": math.nan, "mean_score_stderr": math.nan, "mean_score": 0.0},
    ),
    "two equal rows": (["1", "1"], ["1", "1"], {"mean_score_stderr": 0.0, "mae": 0.0}),
    "two rows": (["1", "0"], ["1", "5"], {"mean_score_stderr": 0.5, "mean_score": 0.5}),
    "overflow": ([BIG, "1"], ["-" + BIG, "1"], {"mae": math.inf, "n_unparseable": 0}),
}


@pytest.mark.parametrize("case", EDGES, ids=list(EDGES))
def test_edge_tables(case: str) -> None:
    outputs, expected, want = EDGES[case]
    got = aggregate(_frame(outputs, expected))
    assert {name: got[name] for name in want} == pytest.approx(want, nan_ok=True)


# --- batches add up to the whole ------------------------------------------------------------------

ROW = st.tuples(
    st.floats(0, 1),  # score
    st.booleans(),  # passed
    st.booleans(),  # unparseable (then score 0 and abs_error NaN, as score_frame gives)
    st.floats(0, 1e6),  # abs_error
)


def _results(rows: list[tuple[float, bool, bool, float]], label_dtype: str) -> pd.DataFrame:
    scores, passed, labels, errors = [], [], [], []
    for score_, passed_, unparseable, error in rows:
        scores.append(0.0 if unparseable else score_)
        passed.append(passed_ and not unparseable)
        labels.append("unparseable" if unparseable else "pass" if passed_ else "fail")
        errors.append(math.nan if unparseable else error)
    return pd.DataFrame(
        {
            "score": scores,
            "passed": passed,
            "label": pd.Series(labels, dtype=label_dtype),
            "abs_error": errors,
            "output_value": [math.nan if u else 1.0 for _, _, u, _ in rows],
        }
    )


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(ROW, min_size=1, max_size=80),
    cuts=st.lists(st.integers(0, 80), max_size=6),
    label_dtype=st.sampled_from(["object", "string[pyarrow]", "category"]),
)
def test_totals_of_random_splits_add_up_to_the_totals_of_the_whole(
    rows: list[tuple[float, bool, bool, float]], cuts: list[int], label_dtype: str
) -> None:
    whole = _results(rows, label_dtype)
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    parts = [whole.iloc[a:b] for a, b in itertools.pairwise(bounds)]
    added = sum((Totals.of(part) for part in parts), Totals())
    once = Totals.of(whole)
    assert (added.n, added.n_passed, added.n_unparseable, added.n_no_answer) == (
        once.n,
        once.n_passed,
        once.n_unparseable,
        once.n_no_answer,
    )
    assert once.n_passed == int(whole["passed"].sum())
    assert once.n_unparseable == int((whole["label"].astype(str) == "unparseable").sum())
    for name in ("score_mean", "score_m2", "abs_error_sum"):
        assert getattr(added, name) == pytest.approx(getattr(once, name), rel=1e-9, abs=1e-9)
    assert added.aggregates() == pytest.approx(once.aggregates(), nan_ok=True, rel=1e-9, abs=1e-12)
    # The median, kept batch by batch, is numpy's over the rows mae counts.
    errors = AbsErrors()
    for part in parts:
        errors.add(part)
    compared = whole["abs_error"][whole["label"].astype(str) != "unparseable"]
    want = float(np.median(compared)) if len(compared) else math.nan
    assert errors.median() == pytest.approx(want, nan_ok=True, rel=1e-15)
    # Labels compared in Arrow or as categories count as Python strings do.
    assert Totals.of(whole.astype({"label": object})) == once
    assert once.aggregates()["mean_score"] == pytest.approx(float(np.mean(whole["score"])))


# --- where mae comes from -------------------------------------------------------------------------

NOTES = {
    # name: (abs errors, None for an unparseable row; the note with ids a, b, c, ...)
    "one row": (
        [4e8, 0, 1, None, 3],
        "mae 1e+08 comes from 1 row (id a): 100% of the summed absolute error",
    ),
    "two rows": (
        [40, 0, 45, 20],
        "mae 26.2 comes from 2 rows (id c, a): 81% of the summed absolute error",
    ),
    "spread": ([1, 1, 1, 1, 1, 1, 1], None),
    "half, not more": ([10] * 5 + [1] * 10, None),  # the 3 largest hold 30 of 60
    "few rows": ([5, 1, 0], None),  # 1 row holds most, of no more than 3 rows
    "no error": ([0, 0, 0], None),
    "infinite": ([math.inf, 1, 2, 0], "mae inf comes from 1 row (id a)"),
    "too many infinite": ([math.inf] * 4 + [1], None),
}


@pytest.mark.parametrize("case", NOTES, ids=list(NOTES))
def test_mae_note_names_the_few_rows_it_comes_from(case: str) -> None:
    values, want = NOTES[case]
    ids = [chr(ord("a") + i) for i in range(len(values))]
    frame = pd.DataFrame(
        {
            "id": ids,
            "label": ["unparseable" if v is None else "fail" for v in values],
            "abs_error": [math.nan if v is None else v for v in values],
        }
    )
    errors = AbsErrors("id")
    for start in range(0, len(frame), 2):  # in batches of two rows
        errors.add(frame.iloc[start : start + 2].reset_index(drop=True))
    counted = [v for v in values if v is not None]
    assert errors.note(sum(counted) / len(counted)) == want
