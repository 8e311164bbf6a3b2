"""Aggregates over scored rows (SPEC §3), from running totals so that batches can be added up."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from numdiff_component.errors import InputError
from numdiff_component.intervals import mean_interval, wilson
from numdiff_component.scoring import (
    UNPARSEABLE,
    ScoreResult,
)
from numdiff_component.unit_scoring import UNIT_LABELS, UNIT_MISMATCH, UNIT_MISSING

AGGREGATE_NAMES = (
    "mean_score",
    "mean_score_ci_low",
    "mean_score_ci_high",
    "pass_rate",
    "pass_rate_ci_low",
    "pass_rate_ci_high",
    "mae",
    "median_abs_error",
    "mean_score_stderr",
    "no_answer_rate",
    "n_rows",
    "n_unparseable",
)


BOUNDS = ("ci_low", "ci_high")
"""The suffixes of an aggregate's 95% interval bounds (``pass_rate_ci_low``); they are shown
beside their aggregate (`interval`), not as aggregates of their own."""

DOMINANT_ROWS = 3
"""At most this many rows holding more than half of the summed absolute error make ``mae``
"come from" them (`AbsErrors.note`)."""


def interval(aggregates: Mapping[str, float], name: str) -> tuple[float, float] | None:
    """The 95% interval of aggregate ``name``, or None when it has none (or it is NaN)."""
    bounds = tuple(aggregates.get(f"{name}_{b}", math.nan) for b in BOUNDS)
    return None if any(math.isnan(b) for b in bounds) else (bounds[0], bounds[1])


def booleans(values: Any, what: str = "the 'passed' column") -> np.ndarray:
    """``values`` as a bool array; `InputError` unless they are all True/False (a text
    ``"False"`` would otherwise count as true)."""
    array = np.asarray(values)
    if array.dtype == bool:
        return array
    if array.dtype == object and all(isinstance(v, (bool, np.bool_)) for v in array):
        return array.astype(bool)
    example = next((v for v in array if not isinstance(v, (bool, np.bool_))), None)
    raise InputError(f"{what} must hold True or False, got {example!r}")


@dataclass(frozen=True)
class Totals:
    """Running totals of scored rows; ``a + b`` is the totals of both (Chan et al.'s update)."""

    n: int = 0
    n_passed: int = 0
    n_unparseable: int = 0
    n_no_answer: int = 0  # rows whose output has no number
    score_mean: float = 0.0
    score_m2: float = 0.0  # sum of squared deviations from the mean
    abs_error_sum: float = 0.0
    units: bool = False  # results with units on (SPEC §2.2): the unit labels are counted
    n_unit_mismatch: int = 0
    n_unit_missing: int = 0

    @classmethod
    def of(cls, results: Mapping[str, Any]) -> Totals:
        """Totals of a batch of results: columns ``score``, ``passed``, ``label``, ``abs_error``,
        ``output_value``."""
        scores = np.asarray(results["score"], dtype=float)
        n = len(scores)
        if n == 0:
            return cls()
        # Compared as a Series: a string column compares in Arrow, not as Python objects.
        labels = pd.Series(results["label"], copy=False)
        units = "output_unit" in results
        counts = labels.value_counts() if units else {}
        compared = counted(labels, units)
        mismatch, missing = (int(counts.get(label, 0)) for label in (UNIT_MISMATCH, UNIT_MISSING))
        unparseable = n - int(np.count_nonzero(compared)) - mismatch - missing
        errors = np.asarray(results["abs_error"], dtype=float)
        mean = float(scores.mean())
        return cls(
            n=n,
            n_passed=int(np.count_nonzero(booleans(results["passed"]))),
            n_unparseable=unparseable,
            n_no_answer=int(np.count_nonzero(np.isnan(np.asarray(results["output_value"], float)))),
            score_mean=mean,
            score_m2=float(((scores - mean) ** 2).sum()),
            abs_error_sum=float(errors[compared].sum()),
            units=units,
            n_unit_mismatch=mismatch,
            n_unit_missing=missing,
        )

    def __add__(self, other: Totals) -> Totals:
        n = self.n + other.n
        if n == 0:
            return self
        delta = other.score_mean - self.score_mean
        return Totals(
            n=n,
            n_passed=self.n_passed + other.n_passed,
            n_unparseable=self.n_unparseable + other.n_unparseable,
            n_no_answer=self.n_no_answer + other.n_no_answer,
            score_mean=self.score_mean + delta * other.n / n,
            score_m2=self.score_m2 + other.score_m2 + delta**2 * self.n * other.n / n,
            abs_error_sum=self.abs_error_sum + other.abs_error_sum,
            units=self.units or other.units,
            n_unit_mismatch=self.n_unit_mismatch + other.n_unit_mismatch,
            n_unit_missing=self.n_unit_missing + other.n_unit_missing,
        )

    def aggregates(self, median_abs_error: float = math.nan) -> dict[str, float]:
        """The SPEC §3 aggregates; `InputError` when there are no rows. The median does not
        add up batch by batch: it comes from `AbsErrors`, NaN when not given."""
        if self.n == 0:
            raise InputError("no rows to score")
        n_parsed = self.n - self.n_unparseable - self.n_unit_mismatch - self.n_unit_missing
        units = {"n_unit_mismatch": self.n_unit_mismatch, "n_unit_missing": self.n_unit_missing}
        stderr = (
            math.sqrt(self.score_m2 / (self.n - 1)) / math.sqrt(self.n) if self.n > 1 else math.nan
        )
        mean_low, mean_high = mean_interval(self.score_mean, stderr, self.n)
        pass_low, pass_high = wilson(self.n_passed, self.n)
        return {
            "mean_score": self.score_mean,
            "mean_score_ci_low": mean_low,
            "mean_score_ci_high": mean_high,
            "pass_rate": self.n_passed / self.n,
            "pass_rate_ci_low": pass_low,
            "pass_rate_ci_high": pass_high,
            "mae": self.abs_error_sum / n_parsed if n_parsed else math.nan,
            "median_abs_error": median_abs_error,
            "mean_score_stderr": stderr,
            "no_answer_rate": self.n_no_answer / self.n,
            "n_rows": self.n,
            "n_unparseable": self.n_unparseable,
            **(units if self.units else {}),
        }


def counted(labels: pd.Series, units: bool) -> np.ndarray:
    """The rows ``mae`` counts, by their labels: those with a number on both sides and, with
    units on, units that compare (SPEC §2.2)."""
    compared = np.asarray(labels != UNPARSEABLE, dtype=bool)
    if units:
        compared = compared & np.asarray(~labels.isin(UNIT_LABELS), dtype=bool)
    return compared


def lowest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest values, by value then position, in linear time."""
    if len(values) <= k:
        return np.argsort(values, kind="stable")
    kth = np.partition(values, k - 1)[k - 1]
    below = np.flatnonzero(values < kth)
    index = np.concatenate([below, np.flatnonzero(values == kth)[: k - len(below)]])
    return index[np.argsort(values[index], kind="stable")]


class Values(Protocol):
    """Numbers kept for their exact median: `HeldValues` in memory; the job's in bounded
    memory (`numdiff_component.job.median.Median`)."""

    n: int

    def add(self, values: np.ndarray) -> None: ...

    def median(self) -> float: ...


class HeldValues:
    """Numbers kept in memory for their exact median (`numpy.median`)."""

    def __init__(self) -> None:
        self.n = 0
        self._parts: list[np.ndarray] = []

    def add(self, values: np.ndarray) -> None:
        self._parts.append(np.asarray(values, dtype=float))
        self.n += len(values)

    def median(self) -> float:
        """The exact median (NaN when there is none)."""
        return float(np.median(np.concatenate(self._parts))) if self.n else math.nan


class AbsErrors:
    """The absolute errors of the rows ``mae`` counts, kept batch by batch, for their exact
    median (in ``values``: `HeldValues` unless given) and for the few rows ``mae`` may come
    from (`AbsErrors.note`): their sum and the `DOMINANT_ROWS` largest errors with their row
    (counted from 1) and id.
    """

    def __init__(self, id_col: str | None = None, values: Values | None = None) -> None:
        self.id_col = id_col
        self.n_rows = 0
        self.errors: Values = HeldValues() if values is None else values
        self.total = 0.0  # their sum
        self.n_inf = 0  # infinite ones
        self.largest: list[tuple[float, int, Any]] = []  # (error, row, id), largest first

    def add(self, results: Mapping[str, Any]) -> None:
        """Take in a batch of results (columns ``label``, ``abs_error``, and the id column)."""
        errors = np.asarray(results["abs_error"], dtype=float)
        labels = pd.Series(results["label"], copy=False)
        rows = np.flatnonzero(counted(labels, "output_unit" in results))
        kept = errors[rows]
        self.errors.add(kept)
        self.total += float(kept.sum())
        self.n_inf += int(np.count_nonzero(np.isinf(kept)))
        top = rows[lowest(-kept, DOMINANT_ROWS)]
        ids = None if self.id_col is None else pd.Series(results[self.id_col]).iloc[top].tolist()
        found = [
            (float(errors[i]), self.n_rows + int(i) + 1, None if ids is None else ids[n])
            for n, i in enumerate(top)
        ]
        self.largest = sorted(self.largest + found, key=lambda x: (-x[0], x[1]))[:DOMINANT_ROWS]
        self.n_rows += len(errors)

    def median(self) -> float:
        """The exact median (NaN when no row is counted)."""
        return self.errors.median()

    def note(self, mae: float) -> str | None:
        """One line when ``mae`` comes from a few rows: at most `DOMINANT_ROWS` rows whose
        errors make more than half of their sum (all of it when it is infinite), of more than
        `DOMINANT_ROWS` counted rows; else None.

        >>> errors = AbsErrors("id")
        >>> errors.add(pd.DataFrame({"id": ["a", "b", "c", "d"], "label": ["fail"] * 4,
        ...                          "abs_error": [4e8, 0.0, 1.0, 3.0]}))
        >>> errors.note(1e8)
        'mae 1e+08 comes from 1 row (id a): 100% of the summed absolute error'
        """
        total = self.total
        if not total > 0 or math.isnan(total):
            return None
        if math.isinf(total):
            k = self.n_inf if self.n_inf <= DOMINANT_ROWS else None
        else:
            sums = np.cumsum([error for error, _, _ in self.largest])
            k = next((i + 1 for i, s in enumerate(sums) if s > total / 2), None)
        if k is None or self.errors.n <= DOMINANT_ROWS:
            return None
        rows = self.largest[:k]
        names = ", ".join(str(row if self.id_col is None else name) for _, row, name in rows)
        which = f"{'row' if self.id_col is None else 'id'} {names}"
        share = sum(e for e, _, _ in rows) / total
        share_text = "" if math.isinf(total) else f": {share:.0%} of the summed absolute error"
        return f"mae {mae:.3g} comes from {k} row{'s' if k > 1 else ''} ({which}){share_text}"


def pass_rate_stderr(pass_rate: float, n: float) -> float:
    """Standard error of a pass rate, as ``mean_score_stderr`` is of the mean scores: the
    sample standard deviation of the pass/fail indicator over √n, √(p(1-p)/(n-1)); NaN when
    n < 2.

    >>> round(pass_rate_stderr(0.75, 4), 4)
    0.25
    """
    return math.sqrt(pass_rate * (1 - pass_rate) / (n - 1)) if n > 1 else math.nan


def headline(aggregates: Mapping[str, float]) -> str:
    """The aggregates in one line: mean score and rows passed of all, each with its 95%
    interval where the aggregates hold one.

    >>> headline({"mean_score": 0.75, "mean_score_ci_low": 0.5, "mean_score_ci_high": 1.0,
    ...           "pass_rate": 0.5, "pass_rate_ci_low": 0.15, "pass_rate_ci_high": 0.85,
    ...           "n_rows": 4})
    'Mean score 0.7500 [0.5000, 1.0000] · passed 2 of 4 rows, 50.0% [15.0%, 85.0%] (95% intervals)'
    """
    n = int(aggregates["n_rows"])
    mean = aggregates.get("mean_score", math.nan)
    text = "n/a" if math.isnan(mean) else f"{mean:.4f}"
    mean_bounds = interval(aggregates, "mean_score")
    text += "" if mean_bounds is None else " [{:.4f}, {:.4f}]".format(*mean_bounds)
    rate = aggregates["pass_rate"]
    text += f" · passed {round(rate * n):,} of {n:,} rows, {rate:.1%}"
    rate_bounds = interval(aggregates, "pass_rate")
    text += "" if rate_bounds is None else " [{:.1%}, {:.1%}]".format(*rate_bounds)
    return f"Mean score {text}" + (" (95% intervals)" if mean_bounds or rate_bounds else "")


def aggregate(results: Mapping[str, Any] | Iterable[ScoreResult]) -> dict[str, float]:
    """Aggregate scored rows: the names of `AGGREGATE_NAMES` (SPEC §3).

    ``results`` is the frame from `score_frame` (or any mapping of its result columns), or an
    iterable of `ScoreResult`. Unparseable rows count as 0 in ``mean_score`` and are left out of
    ``mae``; ``mae`` is NaN when no row has two numbers. No rows is an error.

    >>> from numdiff_component import score
    >>> aggregate([score("10", "10"), score("9", "10"), score("?", "1")])["pass_rate"]
    0.3333333333333333
    """
    if isinstance(results, Mapping) or hasattr(results, "columns"):
        errors = AbsErrors()
        errors.add(results)  # type: ignore[arg-type]  # a DataFrame too
        return Totals.of(results).aggregates(errors.median())  # type: ignore[arg-type]
    rows = list(results)
    columns = {
        "score": [r.score for r in rows],
        "passed": [r.passed for r in rows],
        "label": [r.label for r in rows],
        "abs_error": [r.abs_error for r in rows],
        "output_value": [math.nan if r.output_value is None else r.output_value for r in rows],
    }
    # Results read with units on hold a unit or a unit's label somewhere: then they are counted.
    if any(r.output_unit or r.expected_unit or r.label in UNIT_LABELS for r in rows):
        columns["output_unit"] = [r.output_unit for r in rows]
    return aggregate(columns)
