"""Aggregates per group (SPEC §3.1): for each ``by`` column, the rows cut by the column's value,
each group's aggregates, and the column's macro pass rate, worst group and gap.

`GroupTotals` adds scored batches up as `aggregate.Totals` does: a small sum per group per batch,
merged into one frame per column keyed by the value's text, so memory grows with the number of
groups, never with the rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.aggregate import counted
from numdiff_component.errors import InputError, missing_column
from numdiff_component.intervals import wilson
from numdiff_component.slices.keys import BY_PREFIX, key_part
from numdiff_component.slices.thresholds import ROW_THRESHOLD

GROUP_METRICS = (
    "n",
    "mean_score",
    "pass_rate",
    "pass_rate_ci_low",
    "pass_rate_ci_high",
    "mae",
    "no_answer_rate",
)
"""The aggregates of each group, in the order of ``groups.parquet``."""
COLUMN_METRICS = ("macro_pass_rate", "worst_pass_rate", "pass_rate_gap", "n_groups")
"""The aggregates of each ``by`` column over its groups."""
GROUP_COLUMNS = ("column", "value", "key", *GROUP_METRICS, "logged")
"""The columns of ``groups.parquet``: one row per group of each column."""
MAX_LOGGED_GROUPS = 100
"""Groups per column logged as metrics: the largest (every group is in ``groups.parquet``)."""

_SUMS = ("n", "n_passed", "score_sum", "n_no_answer", "n_compared", "abs_error_sum")


def by_columns(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """The ``by`` columns from a comma-separated text or a list of them, each once, in order.

    >>> by_columns("category, difficulty"), by_columns(["a", "b,a"]), by_columns("")
    (('category', 'difficulty'), ('a', 'b'), ())
    """
    if value is None:
        return ()
    texts = [value] if isinstance(value, str) else list(value)
    names = [name.strip() for text in texts for name in str(text).split(",")]
    if len(texts) == 1 and names == [""]:
        return ()
    if any(not name for name in names):
        raise InputError(f"by: an empty column name in {value!r}")
    return tuple(dict.fromkeys(names))


MERGED_PARTS = 16
"""Batches' sums per group kept before they are merged into one."""


def check_slices(columns: Iterable[Any], by: Sequence[str], threshold_col: str | None) -> None:
    """`InputError` when a ``by`` column or the threshold column is not among ``columns``, or
    an input column has the name of the threshold's result column (SPEC §3.2)."""
    names = [str(c) for c in columns]
    roles = [("by", name) for name in by]
    roles += [("threshold", threshold_col)] if threshold_col else []
    for role, name in roles:
        if name not in names:
            raise missing_column(role, name, names)
    if threshold_col and ROW_THRESHOLD in names:
        raise InputError(
            f"input column {ROW_THRESHOLD!r} has the name of a result column of "
            "--threshold-col; rename it"
        )


def value_text(value: Any) -> str | None:
    """A group's value as text (SPEC §3.1): a text as it is, another value as ``str`` gives it;
    None for null (None, NaN, ``pandas.NA``)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, str) else str(value)


def text_index(values: Any) -> pd.Index:
    """`value_text` of each value, as an index: a column of texts is taken as it is, with its
    nulls made None, instead of one call per value."""
    if isinstance(getattr(values, "dtype", None), pd.StringDtype):
        texts = np.asarray(values, dtype=object)
        texts[pd.isna(texts)] = None
        return pd.Index(texts, dtype=object)
    return pd.Index([value_text(v) for v in values], dtype=object)


def batch_sums(results: Mapping[str, Any], column: str) -> pd.DataFrame:
    """The sums of one batch per value of ``column``, indexed by the value's text (two values
    of one text, 1 and "1", are still two rows: `merge_sums` adds them up)."""
    labels = pd.Series(results["label"], copy=False)
    compared = counted(labels, "output_unit" in results)
    errors = np.asarray(results["abs_error"], dtype=float)
    values = pd.Series(results[column], copy=False)
    codes, uniques = pd.factorize(values, sort=False, use_na_sentinel=False)
    per_value = {
        "n": None,
        "n_passed": np.asarray(results["passed"], dtype=bool),
        "score_sum": np.asarray(results["score"], dtype=float),
        "n_no_answer": np.isnan(np.asarray(results["output_value"], dtype=float)),
        "n_compared": compared,
        "abs_error_sum": np.where(compared, errors, 0.0),
    }
    sums = {}
    for name, weights in per_value.items():
        found = np.bincount(codes, weights=weights, minlength=len(uniques))
        sums[name] = found if name.endswith("_sum") else found.astype(np.int64)  # counts
    return pd.DataFrame(sums, index=text_index(uniques))


def merge_sums(parts: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Sums per value's text (`text_index`; null is None) merged: one row per text."""
    return pd.concat(list(parts)).groupby(level=0, dropna=False, sort=False).sum()


class GroupTotals:
    """Running sums per group of each ``by`` column, batch by batch (`add`), then the groups'
    aggregates (`table`)."""

    def __init__(self, by: Sequence[str]) -> None:
        self.by = tuple(by)
        self.parts: dict[str, list[pd.DataFrame]] = {column: [] for column in by}

    def add(self, results: Mapping[str, Any]) -> None:
        """Take in a batch of results (the ``by`` columns and the result columns)."""
        for column in self.by:
            parts = self.parts[column]
            parts.append(batch_sums(results, column))
            if len(parts) >= MERGED_PARTS:  # merged now and then: as many rows as groups kept
                parts[:] = [merge_sums(parts)]

    def table(self) -> pd.DataFrame:
        """Every group of every column: `GROUP_COLUMNS`."""
        return group_table(
            {column: merge_sums(parts) for column, parts in self.parts.items() if parts}
        )


def group_table(sums: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The groups' aggregates (`GROUP_COLUMNS`) from sums per value's text, for each column:
    its groups by size, largest first, then by key; the first `MAX_LOGGED_GROUPS` logged."""
    frames = []
    for column, frame in sums.items():
        n = frame["n"].to_numpy(dtype=np.int64)
        passed = frame["n_passed"].to_numpy(dtype=np.int64)
        compared = frame["n_compared"].to_numpy(dtype=np.int64)
        bounds = np.array([wilson(p, k) for p, k in zip(passed, n, strict=True)]).reshape(-1, 2)
        with np.errstate(all="ignore"):
            mae = np.where(compared > 0, frame["abs_error_sum"].to_numpy() / compared, math.nan)
        values = [value_text(v) for v in frame.index]  # the null group: None
        table = pd.DataFrame(
            {
                "column": column,
                "value": pd.array(values, dtype="string"),
                "key": [key_part(v) for v in values],
                "n": n,
                "mean_score": frame["score_sum"].to_numpy() / n,
                "pass_rate": passed / n,
                "pass_rate_ci_low": bounds[:, 0],
                "pass_rate_ci_high": bounds[:, 1],
                "mae": mae,
                "no_answer_rate": frame["n_no_answer"].to_numpy() / n,
            }
        )
        table = table.sort_values(["n", "key"], ascending=[False, True], kind="stable")
        table["logged"] = np.arange(len(table)) < MAX_LOGGED_GROUPS
        frames.append(table)
    if not frames:
        return pd.DataFrame({name: [] for name in GROUP_COLUMNS})
    return pd.concat(frames, ignore_index=True)[list(GROUP_COLUMNS)]


def column_summaries(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """For each column of `group_table`: `COLUMN_METRICS`, and ``worst`` and ``worst_n``, the
    worst group's value and rows (the first of the lowest pass rate in the table's order)."""
    found = {}
    for column, groups in table.groupby("column", sort=False):
        rates = groups["pass_rate"].to_numpy(dtype=float)
        worst = int(np.argmin(rates))
        found[str(column)] = {
            "macro_pass_rate": float(rates.mean()),
            "worst_pass_rate": float(rates[worst]),
            "pass_rate_gap": float(rates.max() - rates.min()),
            "n_groups": len(rates),
            "worst": groups["value"].iloc[worst],
            "worst_n": int(groups["n"].iloc[worst]),
        }
    return found


def group_metrics(table: pd.DataFrame) -> dict[str, float]:
    """The metrics of `group_table` under their keys without the ``numeric_diff/`` prefix:
    ``by/<column>/<value>/<metric>`` for the logged groups and ``by/<column>/<name>`` for the
    column's; NaN is not logged."""
    found: dict[str, float] = {}
    for column, summary in column_summaries(table).items():
        part = f"{BY_PREFIX}/{key_part(column)}"
        for row in table[(table["column"] == column) & table["logged"]].itertuples(index=False):
            for name in GROUP_METRICS:
                value = float(getattr(row, name))
                if not math.isnan(value):
                    found[f"{part}/{row.key}/{name}"] = value
        for name in COLUMN_METRICS:
            found[f"{part}/{name}"] = float(summary[name])
    return found


def summary_lines(table: pd.DataFrame) -> list[str]:
    """One line per ``by`` column: its macro pass rate, worst group and gap.

    >>> sums = {"n": [2, 2], "n_passed": [2, 1], "score_sum": [2.0, 1.5], "n_no_answer": [0, 0],
    ...         "n_compared": [2, 2], "abs_error_sum": [0.0, 1.0]}
    >>> t = group_table({"c": pd.DataFrame(sums, index=["a", "b"])})
    >>> summary_lines(t)
    ["by c: macro pass rate 0.7500 over 2 groups; worst 'b' 0.5000 (n 2); gap 0.5000"]
    """
    lines = []
    for column, s in column_summaries(table).items():
        name = "null" if s["worst"] is pd.NA or s["worst"] is None else repr(s["worst"])
        lines.append(
            f"by {column}: macro pass rate {s['macro_pass_rate']:.4f} over {s['n_groups']:,} "
            f"groups; worst {name} {s['worst_pass_rate']:.4f} (n {s['worst_n']:,}); "
            f"gap {s['pass_rate_gap']:.4f}"
        )
    return lines
