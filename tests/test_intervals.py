"""The intervals equal scipy's own computations of the same intervals."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest
from scipy.stats import t as student

from numdiff_component.intervals import LEVEL, mean_interval, wilson


@given(st.integers(1, 10_000), st.data())
def test_wilson_equals_scipy(n: int, data: st.DataObject) -> None:
    passed = data.draw(st.integers(0, n))
    ci = binomtest(passed, n).proportion_ci(confidence_level=LEVEL, method="wilson")
    assert wilson(passed, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


@given(st.floats(0, 1), st.floats(0, 0.5), st.integers(2, 10**6))
def test_mean_interval_equals_scipy_t_clipped(mean: float, stderr: float, n: int) -> None:
    low, high = student.interval(LEVEL, n - 1, loc=mean, scale=stderr) if stderr else (mean, mean)
    assert mean_interval(mean, stderr, n) == pytest.approx((max(0, low), min(1, high)), abs=1e-12)


@pytest.mark.parametrize("args", [(0.5, 0.1, 1), (math.nan, 0.1, 5), (0.5, math.nan, 5)])
def test_mean_interval_undefined(args: tuple[float, float, int]) -> None:
    assert all(math.isnan(x) for x in mean_interval(*args))
