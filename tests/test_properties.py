"""Properties of the score for any values and options, and adversarial text (issue: hardening)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numdiff_component import Options, parse_column, parse_number, score, score_frame
from numdiff_component.job import JobConfig, run_job
from tests.conftest import READING_STRATEGIES

finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(finite, st.integers(), st.text(max_size=12), st.none(), st.booleans())
options = st.builds(
    Options,
    threshold=st.floats(0, 1),
    floor=st.one_of(st.just(1.0), st.just(0.0), st.floats(0, 1e6)),
    **READING_STRATEGIES,
)


@settings(max_examples=300, deadline=None)
@given(a=values, b=values, opts=options)
def test_score_is_a_symmetric_number_in_unit_interval(a: object, b: object, opts: Options) -> None:
    result = score(a, b, opts)
    assert 0.0 <= result.score <= 1.0 and not math.isnan(result.score)
    assert result.score == score(b, a, opts).score
    parsed = None not in (result.output_value, result.expected_value)
    # An unparseable row never passes, even at threshold 0 (SPEC §2).
    assert result.passed == (parsed and result.score >= opts.threshold)
    assert result.label == ("pass" if result.passed else "fail" if parsed else "unparseable")


@settings(max_examples=200, deadline=None)
@given(x=finite, opts=options)
def test_equal_numbers_score_one(x: float, opts: Options) -> None:
    assert score(x, x, opts).score == 1.0
    assert score(repr(x), x, opts).score == 1.0 or parse_number(repr(x), opts) != x


@settings(max_examples=300, deadline=None)
@given(
    b=finite,
    steps=st.lists(st.floats(0, 1e300), min_size=2, max_size=2),
    up=st.booleans(),
    floor=st.floats(0, 10),
)
def test_score_does_not_rise_as_the_difference_grows(
    b: float, steps: list[float], up: bool, floor: float
) -> None:
    near, far = sorted(steps)
    sign = 1 if up else -1
    a_near, a_far = b + sign * near, b + sign * far
    if not (math.isfinite(a_near) and math.isfinite(a_far)):
        return
    opts = Options(floor=floor)
    assert score(a_far, b, opts).score <= score(a_near, b, opts).score + 1e-12


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(values, values), min_size=1, max_size=20), opts=options)
def test_score_frame_equals_scoring_row_by_row(
    rows: list[tuple[object, object]], opts: Options
) -> None:
    frame = score_frame(
        pd.DataFrame(rows, columns=["output", "expected"], dtype=object), options=opts
    )
    plain = [score(a, b, opts) for a, b in rows]
    assert frame["score"].tolist() == [r.score for r in plain]
    assert frame["passed"].tolist() == [r.passed for r in plain]
    assert frame["label"].tolist() == [r.label for r in plain]
    np.testing.assert_array_equal(frame["abs_error"].to_numpy(), [r.abs_error for r in plain])


MB = 1 << 20
ADVERSARIAL: dict[str, tuple[str, float | None]] = {
    "10 MB of prose then a number": (("x" * (10 * MB)) + " 42", 42.0),
    "a million digits": ("9" * 1_000_000, None),
    "a million digits and a fraction": ("1" * 1_000_000 + ".5", None),
    "a long run of signs": ("-" * MB + "5", -5.0),
    "a long run of commas": ("," * MB + "1,234", 1234.0),
    "a long run of dots": ("." * MB + "5", 0.5),
    "a long run of e": ("e" * MB + "7", 7.0),
    "200,000 groups, the last one broken": ("1" + ",234" * 200_000 + "5", None),  # too large
    "a long run of one-digit groups": ("1," * 500_000 + "x", 1.0),
    "NUL bytes around a number": ("\x00\x00-5\x00", -5.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL, ids=list(ADVERSARIAL))
def test_adversarial_text_reads_as_the_contract_says(case: str) -> None:
    text, expected = ADVERSARIAL[case]
    assert parse_number(text) == expected
    got = parse_column([text, "1"])
    assert (math.isnan(got[0]) if expected is None else got[0] == expected) and got[1] == 1.0


READINGS = Options(pick="answer", scale="words", thousands="any", fractions=True)
ADVERSARIAL_READINGS: dict[str, tuple[str, float | None]] = {
    "a million boxes": ("\\boxed{" * 200_000 + "5", 5.0),
    "a box, then a million braces": ("\\boxed{" + "{" * MB + "5", 5.0),
    "answer is, many times": ("answer is " * 100_000 + "-5", -5.0),
    "an answer, then 1 MB of prose": ("answer: 5 " + "x" * MB, 5.0),
    "a number, then 1 MB of prose": ("5 " + "x " * (MB // 2), 5.0),
    "a million groups": ("1" + " 000" * 250_000, None),  # 1e750000: too large
    "1/1/1/...": ("1/" * 500_000 + "1", 1.0),
    "5k5k5k...": ("5k" * 500_000, 5000.0),
    "fractions, opened and never closed": ("\\frac{1}{" * 100_000, 1.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL_READINGS, ids=list(ADVERSARIAL_READINGS))
def test_adversarial_text_with_every_reading(case: str) -> None:
    text, expected = ADVERSARIAL_READINGS[case]
    assert parse_number(text, READINGS) == expected
    got = parse_column([text, "1"], READINGS)
    assert (math.isnan(got[0]) if expected is None else got[0] == expected) and got[1] == 1.0


def test_a_10_mb_csv_cell_is_scored_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "big-cell.csv"
    path.write_text('id,output,expected\na,"' + "y" * (10 * MB) + ' 42",42\nb,7,7\n')
    run_job(JobConfig(predictions=str(path), results_dir=str(tmp_path), track=False))
    out = pd.read_parquet(tmp_path / "results.parquet")
    assert out["id"].tolist() == ["a", "b"] and out["passed"].all()
    assert len(out["output"][0]) == 10 * MB + 3  # the cell is kept whole
