"""The exact median in bounded memory (`Median`) equals numpy's median over the same numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numdiff_component.aggregate import AbsErrors
from numdiff_component.job.median import Median, keys, number

FLOATS = st.floats(allow_nan=False, width=64)
# Numbers whose keys share their top bits: the selection goes past its first step.
NEAR = st.integers(0, 2**20).map(lambda low: 1.5 + low * 2.0**-52)
BATCHES = st.lists(st.lists(st.one_of(FLOATS, NEAR, st.sampled_from([0.0, -0.0, 7.0]))), max_size=6)


def _same(found: float, expected: float) -> bool:
    return (math.isnan(found) and math.isnan(expected)) or found == expected


@given(batches=BATCHES, held=st.integers(1, 8))
def test_median_is_numpys_whatever_is_held_in_memory(batches: list[list[float]], held: int) -> None:
    median = Median(held=held)
    for batch in batches:
        median.add(np.array(batch, dtype=float))
    numbers = np.array([x for batch in batches for x in batch], dtype=float)
    expected = float(np.median(numbers)) if len(numbers) else math.nan
    assert _same(median.median(), expected), (median.median(), expected)


@pytest.mark.parametrize("repeated", [0.0, 0.25, 1e300])
def test_many_equal_numbers_are_found_from_their_key_alone(repeated: float) -> None:
    median = Median(held=10)
    numbers = np.concatenate([np.full(500, repeated), np.linspace(-1, 2, 301)])
    for batch in np.array_split(numbers, 7):
        median.add(batch)
    assert median.median() == np.median(numbers)


def test_a_nan_makes_the_median_nan() -> None:
    median = Median(held=1)
    median.add(np.array([1.0, 2.0, 3.0]))
    median.add(np.array([np.nan]))
    assert math.isnan(median.median())


@given(FLOATS)
def test_a_key_gives_its_number_back(x: float) -> None:
    assert number(int(keys(np.array([x]))[0])) == x


def test_abs_errors_keep_the_exact_median_beyond_what_is_held(tmp_path) -> None:
    errors = AbsErrors(values=Median(tmp_path, held=100))
    rng = np.random.default_rng(1)
    values = np.abs(rng.normal(0, 1, 1_000))
    for batch in np.array_split(values, 9):
        errors.add({"abs_error": batch, "label": ["fail"] * len(batch)})
    assert errors.median() == np.median(values)
    assert errors.total == pytest.approx(values.sum())
