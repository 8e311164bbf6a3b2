"""A threshold per row (SPEC §3.2): each row passes when its score is at least its own
threshold, read from a column; an empty cell means the global threshold."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.errors import InputError
from numdiff_component.scoring import FAIL, PASS, passes

ROW_THRESHOLD = "row_threshold"
"""The result column holding the threshold each row was held to."""


def _threshold(value: Any) -> float | None:
    """The threshold ``value`` says: a number in [0, 1]; NaN for "the global one"; None when
    it is not a threshold."""
    if value is None or value is pd.NA:
        return math.nan
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if math.isnan(number):
            return math.nan
    elif isinstance(value, str):
        if not value.strip():
            return math.nan
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None


def row_thresholds(
    values: Any, threshold: float, column: str, first_row: int | None = 1, ids: Any = None
) -> np.ndarray:
    """Each row's threshold from ``values`` (a column), ``threshold`` where it is empty.

    `InputError` naming the first row that holds no threshold: by its id when ``ids`` are
    given, else counted from ``first_row`` (None: where the rows are counted nowhere, Spark).

    >>> row_thresholds(["0.5", "", None, 1], 0.99, "tol").tolist()
    [0.5, 0.99, 0.99, 1.0]
    """
    series = pd.Series(values, copy=False)
    if pd.api.types.is_float_dtype(series.dtype) or pd.api.types.is_integer_dtype(series.dtype):
        found = series.to_numpy(dtype=float, na_value=math.nan)
        bad = ~(np.isnan(found) | ((found >= 0.0) & (found <= 1.0)))
        if bad.any():
            _refuse(series, int(np.flatnonzero(bad)[0]), column, threshold, first_row, ids)
    else:
        found = np.empty(len(series))
        for i, value in enumerate(series.tolist()):
            number = _threshold(value)
            if number is None:
                _refuse(series, i, column, threshold, first_row, ids)
            found[i] = number
    return np.where(np.isnan(found), threshold, found)


def _refuse(
    series: pd.Series, i: int, column: str, threshold: float, first_row: int | None, ids: Any
) -> None:
    if ids is not None:
        row = f"row id {pd.Series(ids).iloc[i]!r}"
    else:
        row = "a row" if first_row is None else f"row {first_row + i}"
    value = series.iloc[i]
    value = value.item() if isinstance(value, np.generic) else value  # as the user wrote it
    raise InputError(
        f"{row} of column {column!r}: threshold {value!r} is not a number between 0 "
        f"and 1 (empty: the global threshold {threshold:g})"
    )


def row_passes(
    results: dict[str, Any],
    values: Any,
    column: str,
    threshold: float,
    first_row: int | None = None,
    ids: Any = None,
) -> dict[str, Any]:
    """The result columns of `score_columns` with each row passed against its threshold from
    ``values`` (`row_thresholds`), and `ROW_THRESHOLD`; labels other than pass and fail stay."""
    limits = row_thresholds(values, threshold, column, first_row, ids)
    labels = pd.Series(results["label"], copy=False)
    compared = np.asarray(labels.isin([PASS, FAIL]), dtype=bool)
    passed = passes(results["score"], labels, limits)
    relabelled = np.where(compared, np.where(passed, PASS, FAIL), labels.to_numpy(dtype=object))
    label = pd.array(relabelled, dtype=labels.dtype)
    return {**results, "passed": passed, "label": label, ROW_THRESHOLD: limits}


def apply_row_thresholds(
    results: pd.DataFrame,
    column: str,
    threshold: float,
    first_row: int | None = 1,
    id_col: str | None = None,
) -> pd.DataFrame:
    """``results`` (of `score_frame`) with each row passed against its own threshold, and the
    column `ROW_THRESHOLD` (`row_passes`)."""
    ids = None if id_col is None else results[id_col]
    columns = {name: results[name] for name in ("score", "label")}
    passes = row_passes(columns, results[column], column, threshold, first_row, ids)
    return results.assign(
        passed=passes["passed"],
        label=pd.Series(passes["label"], index=results.index),
        **{ROW_THRESHOLD: passes[ROW_THRESHOLD]},
    )
