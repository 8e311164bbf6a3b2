"""95% intervals for the aggregates: Wilson's for a pass rate, Student's t for a mean score.

Every entry point and engine takes its intervals from here, so they agree to the last digit.
"""

from __future__ import annotations

import math
from statistics import NormalDist

LEVEL = 0.95
"""The confidence level of every interval numdiff reports."""

Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
"""The two-sided normal quantile of `LEVEL` (1.959964…)."""


def wilson(passed: float, n: float) -> tuple[float, float]:
    """Wilson's score interval for ``passed`` successes of ``n`` at `LEVEL`; NaNs when n is 0.

    Unlike p ± z·se it stays inside [0, 1] and is not empty when every row passes or none does.

    >>> [round(x, 4) for x in wilson(8, 10)]
    [0.4902, 0.9433]
    >>> wilson(0, 0)
    (nan, nan)
    """
    if n <= 0:
        return math.nan, math.nan
    p = passed / n
    middle = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return max(0.0, middle - half), min(1.0, middle + half)


def mean_interval(
    mean: float, stderr: float, n: float, bounds: tuple[float, float] = (0.0, 1.0)
) -> tuple[float, float]:
    """The t interval of a mean of scores at `LEVEL`: mean ± t(n - 1)·stderr, clipped to
    ``bounds`` (a score lies in [0, 1], a difference of two in [-1, 1]); NaNs when n < 2 or the
    mean is NaN.

    >>> [round(x, 4) for x in mean_interval(0.5, 0.1, 10)]
    [0.2738, 0.7262]
    """
    if n < 2 or math.isnan(mean) or math.isnan(stderr):
        return math.nan, math.nan
    # Student's t quantile: scipy.stats.t.ppf is this function; importing scipy.stats takes a
    # second of every command's start, scipy.special a quarter of that.
    from scipy.special import stdtrit

    half = float(stdtrit(n - 1, 0.5 + LEVEL / 2)) * stderr
    return max(bounds[0], mean - half), min(bounds[1], mean + half)
