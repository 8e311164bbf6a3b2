"""Aggregates over scored rows (SPEC §3), from running totals so that batches can be added up."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
    "mean_score_stderr",
    "no_answer_rate",
    "n_rows",
    "n_unparseable",
)


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
        parsed = np.asarray(labels != UNPARSEABLE, dtype=bool)
        unparseable = n - int(np.count_nonzero(parsed))
        units = "output_unit" in results
        counts = labels.value_counts() if units else {}
        if units:  # mae is over the rows compared: not those whose units do not compare
            parsed = parsed & np.asarray(~labels.isin(UNIT_LABELS), dtype=bool)
        errors = np.asarray(results["abs_error"], dtype=float)
        mean = float(scores.mean())
        return cls(
            n=n,
            n_passed=int(np.count_nonzero(booleans(results["passed"]))),
            n_unparseable=unparseable,
            n_no_answer=int(np.count_nonzero(np.isnan(np.asarray(results["output_value"], float)))),
            score_mean=mean,
            score_m2=float(((scores - mean) ** 2).sum()),
            abs_error_sum=float(errors[parsed].sum()),
            units=units,
            n_unit_mismatch=int(counts.get(UNIT_MISMATCH, 0)),
            n_unit_missing=int(counts.get(UNIT_MISSING, 0)),
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

    def aggregates(self) -> dict[str, float]:
        """The SPEC §3 aggregates; `InputError` when there are no rows."""
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
            "mean_score_stderr": stderr,
            "no_answer_rate": self.n_no_answer / self.n,
            "n_rows": self.n,
            "n_unparseable": self.n_unparseable,
            **(units if self.units else {}),
        }


def pass_rate_stderr(pass_rate: float, n: float) -> float:
    """Standard error of a pass rate, as ``mean_score_stderr`` is of the mean scores: the
    sample standard deviation of the pass/fail indicator over √n, √(p(1-p)/(n-1)); NaN when
    n < 2.

    >>> round(pass_rate_stderr(0.75, 4), 4)
    0.25
    """
    return math.sqrt(pass_rate * (1 - pass_rate) / (n - 1)) if n > 1 else math.nan


def headline(aggregates: Mapping[str, float]) -> str:
    """The aggregates in one line: mean score ± its standard error, rows passed of all.

    >>> headline({"mean_score": 0.75, "mean_score_stderr": 0.25, "pass_rate": 0.5, "n_rows": 4})
    'Mean score 0.7500 ± 0.2500 · passed 2 of 4 rows (50.0%)'
    """
    n = int(aggregates["n_rows"])
    mean = aggregates.get("mean_score", math.nan)
    stderr = aggregates.get("mean_score_stderr", math.nan)
    text = "n/a" if math.isnan(mean) else f"{mean:.4f}"
    text += "" if math.isnan(stderr) else f" ± {stderr:.4f}"
    rate = aggregates["pass_rate"]
    return f"Mean score {text} · passed {round(rate * n):,} of {n:,} rows ({rate:.1%})"


def aggregate(results: Mapping[str, Any] | Iterable[ScoreResult]) -> dict[str, float]:
    """Aggregate scored rows: ``mean_score``, ``pass_rate``, ``mae``, ``mean_score_stderr``,
    ``n_rows``, ``n_unparseable`` (SPEC §3).

    ``results`` is the frame from `score_frame` (or any mapping of its result columns), or an
    iterable of `ScoreResult`. Unparseable rows count as 0 in ``mean_score`` and are left out of
    ``mae``; ``mae`` is NaN when no row has two numbers. No rows is an error.

    >>> from numdiff_component import score
    >>> aggregate([score("10", "10"), score("9", "10"), score("?", "1")])["pass_rate"]
    0.3333333333333333
    """
    if isinstance(results, Mapping) or hasattr(results, "columns"):
        return Totals.of(results).aggregates()  # type: ignore[arg-type]  # a DataFrame too
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
    return Totals.of(columns).aggregates()
