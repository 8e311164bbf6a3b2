"""Comparing the per-item results of two scoring runs: what changed, and is it beyond noise.

The comparison is plain functions over two results frames (from `score_frame`): `align` pairs
the rows (by an id column, or by position), `compare_results` computes the aggregates of each
side, McNemar's exact test on the pass/fail changes, and the rows that regressed, improved or
dropped most. Rendering is in `numdiff_component.compare.render`; reading a run's results and
logging a comparison are at the MLflow boundary, `numdiff_component.tracking.boundary`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from numdiff_component.aggregate import aggregate, booleans
from numdiff_component.errors import InputError
from numdiff_component.intervals import mean_interval, wilson
from numdiff_component.scoring import RESULT_SCHEMA, SPAN_COLUMNS

TEST_NAME = "McNemar exact test"  # two-sided binomial test on the discordant pairs
_ROW_FIELDS = ("score", "label", "output_value", "expected_value")
_INTERVAL_BOUND = re.compile(r"_ci_(low|high)$")


@dataclass(frozen=True)
class Comparison:
    """Run B against run A, row by row. ``rows``: one row per pair, in A's order."""

    matched_by: str | None  # the id column, or None when matched by position
    aggregates: dict[str, dict[str, float]]
    n_regressed: int
    n_improved: int
    p_value: float
    alpha: float
    rows: pd.DataFrame
    n_expected_differ: int  # pairs whose expected numbers differ: a hint of misaligned rows
    deltas: dict[str, Delta]  # the paired differences B - A: pass_rate, mean_score
    n_only_a: int = 0  # rows left out, their id on one side only (``shared``)
    n_only_b: int = 0

    @property
    def beyond_noise(self) -> bool:
        return self.p_value < self.alpha

    @property
    def verdict(self) -> str:
        """``"better"`` or ``"worse"`` (B than A: McNemar's p below alpha, more improvements or
        more regressions), else ``"no significant difference"``."""
        if not self.beyond_noise:
            return "no significant difference"
        return "worse" if self.n_regressed > self.n_improved else "better"

    def regressed(self) -> pd.DataFrame:
        """Pairs that passed in A and failed in B, in A's order."""
        return self.rows[self.rows["passed_a"] & ~self.rows["passed_b"]]

    def improved(self) -> pd.DataFrame:
        """Pairs that failed in A and passed in B, in A's order."""
        return self.rows[~self.rows["passed_a"] & self.rows["passed_b"]]

    def largest_drops(self, k: int) -> pd.DataFrame:
        """The ``k`` pairs whose score fell most from A to B (ties: A's order)."""
        dropped = self.rows[self.rows["score_change"] < 0]
        return dropped.sort_values("score_change", kind="stable").head(k)


@dataclass(frozen=True)
class Delta:
    """A paired difference B - A and its `LEVEL` interval (NaNs when there is none)."""

    diff: float
    low: float
    high: float


def pass_rate_delta(passed_a: np.ndarray, passed_b: np.ndarray) -> Delta:
    """The difference of two pass rates on the same rows, B - A, with Newcombe's square-and-add
    interval for paired proportions (his method 10, 1998): each rate's `wilson` interval,
    combined with the correlation phi of the paired outcomes, corrected for continuity (a
    positive ad - bc less n/2), as Fagerland, Lydersen and Laake give it. It stays within
    [-1, 1] and is not empty when no pass/fail changed, unlike Wald's (c - b)/n ± z·se.

    >>> d = pass_rate_delta(np.array([1, 1, 0, 0] * 5, bool), np.array([1, 1, 1, 0] * 5, bool))
    >>> round(d.diff, 4), round(d.low, 4), round(d.high, 4)
    (0.25, 0.0319, 0.4337)
    """
    n = len(passed_a)
    if n == 0:
        return Delta(math.nan, math.nan, math.nan)
    both = int(np.count_nonzero(passed_a & passed_b))
    only_a = int(np.count_nonzero(passed_a & ~passed_b))
    only_b = int(np.count_nonzero(~passed_a & passed_b))
    neither = n - both - only_a - only_b
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    (low_a, high_a), (low_b, high_b) = wilson(both + only_a, n), wilson(both + only_b, n)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    excess = float(both * neither - only_a * only_b)
    if excess > 0:
        excess = max(0.0, excess - n / 2)
    phi = excess / math.sqrt(margins) if margins else 0.0

    def half(x: float, y: float) -> float:
        return math.sqrt(max(0.0, x * x - 2 * phi * x * y + y * y))

    diff = p_b - p_a
    below = half(p_b - low_b, high_a - p_a)
    above = half(high_b - p_b, p_a - low_a)
    return Delta(diff, max(-1.0, diff - below), min(1.0, diff + above))


def mean_score_delta(score_a: np.ndarray, score_b: np.ndarray) -> Delta:
    """The difference of two mean scores on the same rows, B - A, with the paired t interval:
    the mean of the rows' differences ± t(n - 1)·their standard error (`mean_interval`)."""
    change = score_b - score_a
    n = len(change)
    if n == 0:
        return Delta(math.nan, math.nan, math.nan)
    diff = float(change.mean())
    stderr = float(np.std(change, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return Delta(diff, *mean_interval(diff, stderr, n, bounds=(-1.0, 1.0)))


def mcnemar_p_value(n_regressed: int, n_improved: int) -> float:
    """Two-sided p-value of McNemar's exact test: the discordant pairs against Binomial(n, ½).

    Twice the binomial distribution function at the smaller count, at most 1
    (``scipy.special.bdtr``: ``scipy.stats.binomtest``'s p-value to 1e-10, at a third of its
    import time); 1 with no discordant pair.

    >>> mcnemar_p_value(0, 0), mcnemar_p_value(5, 5)
    (1.0, 1.0)
    >>> round(mcnemar_p_value(10, 0), 6)  # 2 / 2**10
    0.001953
    """
    from scipy.special import bdtr

    n = n_regressed + n_improved
    if n == 0:
        return 1.0
    return min(1.0, 2 * float(bdtr(min(n_regressed, n_improved), n, 0.5)))


def _check_results(frame: pd.DataFrame, side: str) -> None:
    scored = [field for field in RESULT_SCHEMA if field.name not in SPAN_COLUMNS]  # v4's spans:
    missing = [f.name for f in scored if f.name not in frame.columns]  # not in older results
    if missing:
        raise InputError(
            f"run {side} is not a numeric diff results table: column {missing[0]!r} is missing "
            f"(expected the columns {', '.join(f.name for f in scored)})"
        )
    for field in scored:
        column = frame[field.name]
        numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        if pa.types.is_floating(field.type) and not numeric and column.notna().any():
            value = column[column.notna()].iloc[0]
            raise InputError(
                f"the {field.name!r} column of run {side} must hold numbers, got {value!r} "
                f"({column.dtype}); was the results file edited?"
            )
    passed = booleans(frame["passed"], f"the 'passed' column of run {side}")
    scores = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    bad = ~((scores >= 0) & (scores <= 1))  # NaN too
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"run {side} has {int(bad.sum()):,} impossible scores (e.g. {scores[row]:g} in row "
            f"{row}): a score is a number from 0 to 1; was the results file edited?"
        )
    labels = frame["label"].astype(object).to_numpy()
    wrong = ~np.where(passed, labels == "pass", np.isin(labels, ["fail", "unparseable"]))
    if wrong.any():
        row = int(np.flatnonzero(wrong)[0])
        raise InputError(
            f"run {side} has {int(wrong.sum()):,} labels that contradict 'passed' (e.g. "
            f"{labels[row]!r} with passed={bool(passed[row])} in row {row}): 'pass' goes with "
            "true, 'fail' and 'unparseable' with false; was the results file edited?"
        )


def _check_ids(frame: pd.DataFrame, id_col: str, side: str) -> pd.Index:
    if id_col not in frame.columns:
        existing = ", ".join(repr(str(c)) for c in frame.columns)
        raise InputError(f"id column {id_col!r} not in run {side}; the columns are: {existing}")
    column = frame[id_col]
    # A Parquet list or struct column holds arrays or dicts: no id can match them.
    odd = [v for v in column if not pd.api.types.is_scalar(v)] if column.dtype == object else []
    if odd:
        raise InputError(
            f"the id column {id_col!r} of run {side} holds {type(odd[0]).__name__} values "
            f"(e.g. {odd[0]!r}); an id is text or a number"
        )
    ids = pd.Index(column)
    if ids.hasnans:
        raise InputError(f"run {side} has rows with no {id_col!r}; every row needs an id to match")
    duplicated = ids[ids.duplicated()]
    if len(duplicated):
        raise InputError(
            f"run {side} has duplicate ids in {id_col!r} (e.g. {duplicated[0]!r}, "
            f"{len(duplicated):,} repeated); ids must be unique to match rows"
        )
    return ids


def align(
    a: pd.DataFrame, b: pd.DataFrame, id_col: str | None = None, *, shared: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The rows of ``a`` and ``b`` paired up, in ``a``'s order, and the id of each pair.

    With ``id_col`` rows are paired by that column (the position in ``a`` otherwise). A table
    that does not line up (different lengths, an id on one side only, a duplicate or missing
    id) raises `InputError`; with ``shared``, the ids on both sides are paired and the others
    left out (none in common is the error then).
    """
    _check_results(a, "A")
    _check_results(b, "B")
    if id_col is None:
        if len(a) != len(b):
            raise InputError(
                f"run A has {len(a):,} rows and run B {len(b):,}: matching rows by position "
                "needs tables of the same length (match by id with --id-col)"
            )
        return a.reset_index(drop=True), b.reset_index(drop=True), np.arange(len(a))
    ids_a, ids_b = _check_ids(a, id_col, "A"), _check_ids(b, id_col, "B")
    position = ids_b.get_indexer(ids_a)
    only_a = ids_a[position < 0]
    only_b = ids_b.difference(ids_a, sort=False)
    if shared and len(only_a) < len(ids_a):
        keep = position >= 0
        pairs = b.iloc[position[keep]].reset_index(drop=True)
        return a[keep].reset_index(drop=True), pairs, ids_a[keep].to_numpy()
    if len(only_a) or len(only_b):
        if sorted(map(str, ids_a)) == sorted(map(str, ids_b)):
            raise InputError(
                f"the ids in {id_col!r} differ only in type ({ids_a.inferred_type} in A, "
                f"{ids_b.inferred_type} in B, e.g. {ids_a.tolist()[0]!r} and "
                f"{ids_b.tolist()[0]!r}); store them with one type on both sides"
            )
        examples = [
            f"{len(ids):,} only in {side}" + (f" (e.g. {ids[0]!r})" if len(ids) else "")
            for side, ids in (("A", only_a), ("B", only_b))
        ]
        if shared:
            raise InputError(
                f"the runs share no id in {id_col!r} ({len(ids_a):,} in A, e.g. "
                f"{ids_a.tolist()[0]!r}; {len(ids_b):,} in B, e.g. {ids_b.tolist()[0]!r})"
            )
        raise InputError(
            f"the runs hold different items by {id_col!r}: {examples[0]}, {examples[1]}; "
            "compare needs the same ids on both sides"
        )
    return a.reset_index(drop=True), b.iloc[position].reset_index(drop=True), ids_a.to_numpy()


def compare_results(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    id_col: str | None = None,
    alpha: float = 0.05,
    shared: bool = False,
) -> Comparison:
    """Compare run B's results with run A's, row by row (see `align` for the pairing and
    ``shared``).

    Aggregates of both sides and their difference (B - A; for ``mean_score`` also the paired
    standard error of the difference), the paired differences of pass rate and mean score with
    their intervals, McNemar's exact test on the rows whose pass/fail changed, and every pair's
    scores.

    >>> from numdiff_component import score_frame
    >>> a = score_frame(pd.DataFrame({"output": ["1", "2", "3"], "expected": ["1", "2", "3"]}))
    >>> b = score_frame(pd.DataFrame({"output": ["1", "9", "3"], "expected": ["1", "2", "3"]}))
    >>> c = compare_results(a, b)
    >>> c.n_regressed, c.n_improved, c.regressed()["id"].tolist()
    (1, 0, [1])
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}")
    n_a, n_b = len(a), len(b)
    a, b, ids = align(a, b, id_col, shared=shared)
    passed_a, passed_b = booleans(a["passed"]), booleans(b["passed"])
    rows = pd.DataFrame({"id": ids, "passed_a": passed_a, "passed_b": passed_b})
    for name in _ROW_FIELDS:
        rows[f"{name}_a"] = a[name].to_numpy()
        rows[f"{name}_b"] = b[name].to_numpy()
    change = b["score"].to_numpy(dtype=float) - a["score"].to_numpy(dtype=float)
    rows["score_change"] = change
    agg_a, agg_b = aggregate(a), aggregate(b)
    aggregates = {
        name: {"a": float(agg_a[name]), "b": float(agg_b[name])}
        | ({} if _INTERVAL_BOUND.search(name) else {"diff": float(agg_b[name] - agg_a[name])})
        for name in agg_a
    }  # no difference of interval bounds: the paired differences have their own (`deltas`)
    n = len(change)
    aggregates["mean_score"]["diff_stderr"] = (
        float(np.std(change, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    )
    expected_a = a["expected_value"].to_numpy(dtype=float)
    expected_b = b["expected_value"].to_numpy(dtype=float)
    same = (expected_a == expected_b) | (np.isnan(expected_a) & np.isnan(expected_b))
    n_regressed = int(np.count_nonzero(passed_a & ~passed_b))
    n_improved = int(np.count_nonzero(~passed_a & passed_b))
    return Comparison(
        matched_by=id_col,
        aggregates=aggregates,
        n_regressed=n_regressed,
        n_improved=n_improved,
        p_value=mcnemar_p_value(n_regressed, n_improved),
        alpha=alpha,
        rows=rows,
        n_expected_differ=int(np.count_nonzero(~same)),
        deltas={
            "pass_rate": pass_rate_delta(passed_a, passed_b),
            "mean_score": mean_score_delta(a["score"].to_numpy(float), b["score"].to_numpy(float)),
        },
        n_only_a=n_a - len(rows),
        n_only_b=n_b - len(rows),
    )


def run_warnings(side: str, ref: str, status: str | None, deleted: bool) -> list[str]:
    """What to say about a run whose results may not be final: still running, failed, deleted.

    >>> run_warnings("B", "abc", "RUNNING", False)
    ["run B 'abc' is RUNNING: its results may not be complete yet"]
    """
    warnings = []
    if status == "RUNNING":
        warnings.append(f"run {side} {ref!r} is RUNNING: its results may not be complete yet")
    elif status in ("FAILED", "KILLED"):
        warnings.append(f"run {side} {ref!r} is {status}: its results may be from a failed job")
    if deleted:
        warnings.append(f"run {side} {ref!r} is deleted (in the trash of its experiment)")
    return warnings


def resolve_id_col(
    explicit: str | None, recorded: Iterable[str | None], a: pd.DataFrame, b: pd.DataFrame
) -> str | None:
    """The id column to match on: the one given, else a ``recorded`` one both tables hold."""
    if explicit:
        return explicit
    for name in recorded:
        if name and name in a.columns and name in b.columns:
            return name
    return None
