"""Comparing two runs group by group (SPEC §3.1): for each ``by`` column both runs' results
hold, the pairs cut by A's value of the column, and in each group the pass/fail changes with
McNemar's exact test, so that the groups that regressed are named."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from numdiff_component.aggregate import booleans
from numdiff_component.compare.comparison import mcnemar_p_value
from numdiff_component.slices.groups import by_columns, value_text

GROUP_CHANGE_COLUMNS = (
    "column",
    "value",
    "n",
    "pass_rate_a",
    "pass_rate_b",
    "n_regressed",
    "n_improved",
    "p_value",
    "verdict",
)


def shared_by(recorded: Iterable[str | None], a: pd.DataFrame, b: pd.DataFrame) -> tuple[str, ...]:
    """The ``by`` columns recorded by either run (comma-separated texts) that both results
    hold: compare cuts by those."""
    names = by_columns([text for text in recorded if text])
    return tuple(name for name in names if name in a.columns and name in b.columns)


def group_changes(
    a: pd.DataFrame, b: pd.DataFrame, by: Sequence[str], alpha: float = 0.05
) -> pd.DataFrame:
    """For the pairs of `align` (``a`` and ``b`` row by row), each group of each column (by
    A's value; null is a group): `GROUP_CHANGE_COLUMNS`. ``verdict`` is ``worse`` (McNemar's
    p below ``alpha`` and more regressions than improvements), ``better``, or ``no significant
    difference``; the groups of a column by most regressions first, then by value.

    >>> a = pd.DataFrame({"g": ["x", "x", "y"], "passed": [True, True, True]})
    >>> b = pd.DataFrame({"g": ["x", "x", "y"], "passed": [False, False, True]})
    >>> group_changes(a, b, ["g"])[["value", "n_regressed", "pass_rate_b"]].values.tolist()
    [['x', 2, 0.0], ['y', 0, 1.0]]
    """
    passed_a, passed_b = booleans(a["passed"]), booleans(b["passed"])
    frames = []
    for column in by:
        values = [value_text(v) for v in a[column]]
        frame = pd.DataFrame(
            {
                "value": pd.Series(values, dtype=object).fillna("\0"),  # null: a group too
                "a": passed_a.astype(np.int64),
                "b": passed_b.astype(np.int64),
                "regressed": (passed_a & ~passed_b).astype(np.int64),
                "improved": (~passed_a & passed_b).astype(np.int64),
            }
        )
        sums = frame.groupby("value", sort=True).agg(
            n=("a", "size"),
            a=("a", "sum"),
            b=("b", "sum"),
            regressed=("regressed", "sum"),
            improved=("improved", "sum"),
        )
        rows = []
        for value, s in sums.iterrows():
            p = mcnemar_p_value(int(s["regressed"]), int(s["improved"]))
            verdict = "no significant difference"
            if p < alpha:
                verdict = "worse" if s["regressed"] > s["improved"] else "better"
            rows.append(
                {
                    "column": column,
                    "value": None if value == "\0" else value,
                    "n": int(s["n"]),
                    "pass_rate_a": s["a"] / s["n"],
                    "pass_rate_b": s["b"] / s["n"],
                    "n_regressed": int(s["regressed"]),
                    "n_improved": int(s["improved"]),
                    "p_value": p,
                    "verdict": verdict,
                }
            )
        table = pd.DataFrame(rows, columns=list(GROUP_CHANGE_COLUMNS))
        frames.append(table.sort_values("n_regressed", ascending=False, kind="stable"))
    if not frames:
        return pd.DataFrame(columns=list(GROUP_CHANGE_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def group_change_lines(changes: pd.DataFrame, alpha: float, limit: int | None = 20) -> list[str]:
    """The groups in words: per column, those that regressed (judged worse), else the group
    with the most regressions."""
    lines = []
    for column, rows in changes.groupby("column", sort=False):
        worse = rows[rows["verdict"] == "worse"]
        if len(worse):
            lines.append(f"  by {column}: {len(worse):,} of {len(rows):,} groups regressed")
            shown = worse if limit is None else worse.head(limit)
        else:
            lines.append(
                f"  by {column}: no group significantly worse (alpha {alpha:g}) of {len(rows):,}"
            )
            shown = rows[rows["n_regressed"] > 0].head(1)
        for row in shown.itertuples(index=False):
            name = "null" if row.value is None else repr(row.value)
            lines.append(
                f"    {name}: pass rate {row.pass_rate_a:.4f} -> {row.pass_rate_b:.4f} "
                f"(n {row.n:,}; {row.n_regressed:,} regressed, {row.n_improved:,} improved, "
                f"p = {row.p_value:.4g})"
            )
    return lines
