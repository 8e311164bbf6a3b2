"""Scoring rows (SPEC §2) and whole frames (§4). Aggregates: tests/test_aggregate.py."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from numdiff_component import (
    RESULT_COLUMNS,
    InputError,
    score,
    score_frame,
)

BIG = 1.7976931348623157e308

ROWS = [
    # (output, expected, options, score, label)
    ("0.0302", "0.03024", {}, 1 - 0.00004, "pass"),  # the seed's worked example first
    ("100", "100", {}, 1.0, "pass"),
    ("0", "0", {"floor": 0.0}, 1.0, "pass"),
    ("0", "0", {}, 1.0, "pass"),
    ("99", "100", {}, 0.99, "pass"),
    ("98", "100", {}, 0.98, "fail"),
    ("-5", "5", {}, 0.0, "fail"),
    ("0.5", "0.25", {}, 0.75, "fail"),
    ("0.5", "0.25", {"floor": 0.0}, 0.5, "fail"),
    (str(BIG), str(-BIG), {}, 0.0, "fail"),
    ("twelve", "12", {}, 0.0, "unparseable"),
    ("12", None, {}, 0.0, "unparseable"),
    ("The answer is 42.", 42, {}, 1.0, "pass"),
    ("0.9", "1", {"threshold": 0.9}, 0.9, "pass"),
]


@pytest.mark.parametrize(("output", "expected", "options", "value", "label"), ROWS)
def test_score_rows(
    output: object, expected: object, options: dict, value: float, label: str
) -> None:
    result = score(output, expected, **options)
    assert result.score == pytest.approx(value, abs=1e-12)
    assert result.label == label
    assert result.passed == (label == "pass")
    frame = score_frame(
        pd.DataFrame({"output": [output], "expected": [expected]}, dtype=object), **options
    )
    assert frame["score"].iloc[0] == result.score
    assert frame["label"].iloc[0] == result.label


def test_worked_example() -> None:
    result = score("0.0302", "0.03024")
    assert (result.output_value, result.expected_value) == (0.0302, 0.03024)
    assert result.abs_error == pytest.approx(0.00004)
    assert round(result.score, 5) == 0.99996 and result.passed


def test_overflow_scores_zero_with_infinite_error() -> None:
    result = score(str(BIG), str(-BIG))
    assert result.abs_error == math.inf and result.score == 0.0 and not result.passed


def test_result_is_immutable() -> None:
    result = score("1", "1")
    with pytest.raises(AttributeError):
        result.score = 0.5  # type: ignore[misc]


def test_score_frame_keeps_rows_columns_and_order() -> None:
    df = pd.DataFrame(
        {"id": ["b", "a", "c"], "output": ["1", "x", "3"], "expected": [1, 2, 4]}, index=[10, 5, 7]
    )
    before = df.copy()
    out = score_frame(df)
    pd.testing.assert_frame_equal(df, before)  # the input is not modified
    assert list(out.columns) == ["id", "output", "expected", *RESULT_COLUMNS]
    assert list(out["id"]) == ["b", "a", "c"] and list(out.index) == [10, 5, 7]
    assert list(out["label"]) == ["pass", "unparseable", "fail"]
    assert np.isnan(out["abs_error"].iloc[1]) and np.isnan(out["output_value"].iloc[1])


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            ["out", "expected"],
            r"output column 'output' not found; the columns are: 'out', 'expected'",
        ),
        (["output", "expected", "score"], r"input column 'score' has the name of a result column"),
        (["output", "output", "expected"], r"duplicate column name 'output'"),
    ],
)
def test_score_frame_column_errors(columns: list[str], message: str) -> None:
    df = pd.DataFrame([["1"] * len(columns)], columns=columns)
    with pytest.raises(InputError, match=message):
        score_frame(df)
