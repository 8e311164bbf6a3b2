"""Samples per item (SPEC §3.3): mean@k, the vote maj@k on the numbers read, pass@k, agreement.

`items_of` is the one function that turns the scored samples of some items into one row per
item: the pandas job (`numdiff_component.job.items`) and the evaluate metric call it, the Spark
engine through `item_table` (its pandas form, in a grouped pandas UDF). `samples_of` is what a
sample keeps for its item: the item, its row number, the number it votes with, the expected
number, the score and passed. `ItemTotals` adds tables of items up into the run's metrics.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from numdiff_component.errors import InputError, missing_column
from numdiff_component.intervals import mean_interval, wilson
from numdiff_component.options import Options
from numdiff_component.scoring import RESULT_COLUMNS, pair_scores
from numdiff_component.unit_scoring import UNIT_SCHEMA

RESULTS = {*RESULT_COLUMNS, *UNIT_SCHEMA.names}

ITEM_COLUMNS: tuple[str, ...] = ("n_samples", "n_passed", "first_row", "mean_at_k")
ITEM_COLUMNS += ("maj_value", "maj_score", "maj_at_k", "agreement")
"""The columns of `item_table` after the item and before the ``pass_at_<k>`` ones."""
SAMPLE_COLUMNS = ("row", "vote_value", "expected_value", "score", "passed")
"""What a sample keeps for its item, beside the item itself."""


def pass_at(k: int) -> str:
    """The name of pass@k's column and metric: ``pass_at_5``."""
    return f"pass_at_{k}"


def vote_column(options: Options) -> str:
    """The number a sample votes with: the output's number, in the expected side's unit with
    units on (SPEC §3.3)."""
    return "output_converted" if options.units != "none" else "output_value"


FEW_SAMPLES = 8
"""Up to this many samples an item, `vote` compares samples pair by pair (`vote_by_pairs`)."""


def vote(values: np.ndarray, threshold: float, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """The vote of items that have n samples each: ``values`` is (items, n), NaN for no number.

    Greedy clusters in sample order (a number joins the first cluster whose first number it
    scores >= ``threshold`` against, else starts one); the largest wins, the first started on a
    tie. Returns the winner's first sample's position (-1 when no sample has a number) and the
    winner's size.

    >>> vote(np.array([[100.0, 98.0, 100.5], [7.0, 8.0, np.nan]]), 0.99, 1.0)
    (array([0, 0]), array([2, 1]))
    """
    if values.shape[1] <= FEW_SAMPLES:
        return vote_by_pairs(values, threshold, floor)
    return vote_by_clusters(values, threshold, floor)


def vote_by_pairs(
    values: np.ndarray, threshold: float, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """`vote` on a few samples an item, column by column: each sample against each earlier
    one that started a cluster, in the rows where it has not joined one yet (most samples join
    the first cluster, so the later pairs are scored on few rows)."""
    m, n = values.shape
    columns = np.ascontiguousarray(values.T)
    heads = np.full((n, m), -1)  # each sample's cluster, by its first sample's position
    for j, number in enumerate(columns):
        free = np.flatnonzero(~np.isnan(number))  # the rows where it has joined no cluster
        for h in range(j):
            candidate = heads[h, free] == h
            rows = free[candidate]
            joins = pair_scores(columns[h, rows], number[rows], floor)[0] >= threshold
            heads[j, rows[joins]] = h
            candidate[candidate] = joins
            free = free[~candidate]
        heads[j, free] = j
    at = (np.arange(m) * n + heads)[heads >= 0]  # flat (row, cluster) positions
    sizes = np.bincount(at, minlength=m * n).reshape(m, n)
    winner = np.argmax(sizes, axis=1)  # the first of the largest
    size = sizes[np.arange(m), winner]
    return np.where(size > 0, winner, -1), size


def vote_by_clusters(
    values: np.ndarray, threshold: float, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """`vote` on any number of samples an item: each sample against the clusters so far."""
    m, n = values.shape
    rows = np.arange(m)
    heads = np.full((m, n), np.nan)  # each cluster's first number
    starts = np.full((m, n), -1)  # each cluster's first sample's position
    sizes = np.zeros((m, n), dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)  # clusters so far
    # Flat positions (row * n + cluster) index faster than (row, cluster) pairs.
    flat_heads, flat_starts, flat_sizes = heads.ravel(), starts.ravel(), sizes.ravel()
    for j in range(n):
        number = values[:, j]
        has = ~np.isnan(number)
        known = heads[:, : int(count.max(initial=0))]  # the clusters started in some row
        scores, _ = pair_scores(known, number[:, None], floor)
        joins = (scores >= threshold) & ~np.isnan(known)
        first = np.argmax(joins, axis=1) if joins.shape[1] else np.zeros(m, dtype=np.int64)
        found = joins[rows, first] if joins.shape[1] else np.zeros(m, dtype=bool)
        join = np.flatnonzero(has & found)
        flat_sizes[join * n + first[join]] += 1
        new = np.flatnonzero(has & ~found)
        at = new * n + count[new]
        flat_heads[at], flat_starts[at], flat_sizes[at] = number[new], j, 1
        count[new] += 1
    winner = np.argmax(sizes, axis=1)  # the first of the largest
    return starts[rows, winner], sizes[rows, winner]


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """1 - C(n - c, k) / C(n, k) for each item (n samples, c passing), computed exactly once per
    distinct (n, c); NaN where k > n.

    >>> pass_at_k(np.array([5, 5, 3]), np.array([1, 0, 3]), 2).tolist()
    [0.4, 0.0, 1.0]
    """
    n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    width = int(n.max(initial=0)) + 1
    where, pairs = pd.factorize(n * width + c)
    values = [
        1 - math.comb(ni - ci, k) / math.comb(ni, k) if k <= ni else math.nan
        for ni, ci in (divmod(int(pair), width) for pair in pairs)
    ]
    return np.asarray(values, dtype=float)[where]


def item_table(
    samples: pd.DataFrame, item_col: str, ks: Iterable[int], options: Options
) -> pd.DataFrame:
    """`items_of` on a pandas table of samples (Spark's groups)."""
    table = pa.Table.from_pandas(samples[[item_col, *SAMPLE_COLUMNS]], preserve_index=False)
    return items_of(table, item_col, ks, options).to_pandas()


def items_of(samples: pa.Table, item_col: str, ks: Iterable[int], options: Options) -> pa.Table:
    """One row per item of ``samples`` (columns ``item_col`` and `SAMPLE_COLUMNS`, any order):
    the item, `ITEM_COLUMNS`, then ``pass_at_<k>`` for each k; items in first-row order.

    An item whose samples read different expected numbers is an `InputError` naming it.
    """
    samples = samples.combine_chunks()
    rows = samples.column("row").to_numpy()
    if not np.all(rows[1:] > rows[:-1]):  # a bucket's samples come in row order
        samples = samples.take(np.argsort(rows, kind="stable"))
    encoded = samples.column(item_col).combine_chunks().dictionary_encode()  # first seen first
    items, codes = encoded.dictionary, encoded.indices.to_numpy()
    # Each item's samples together, in row order; by radix when codes fit 16 bits.
    order = np.argsort(codes.astype(np.uint16) if len(items) <= 1 << 16 else codes, kind="stable")
    code = codes[order]
    n = np.bincount(code, minlength=len(items))
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    column = {name: samples.column(name).to_numpy()[order] for name in SAMPLE_COLUMNS}
    _check_expected(column["expected_value"], start, code, items)
    passed = column["passed"].astype(bool)
    table: dict[str, Any] = {
        item_col: items,
        "n_samples": n,
        "n_passed": np.bincount(code, weights=passed, minlength=len(items)).astype(np.int64),
        "first_row": column["row"][start].astype(np.int64),
        "mean_at_k": np.bincount(code, weights=column["score"], minlength=len(items)) / n,
    }
    winner, size = np.full(len(items), -1), np.zeros(len(items), dtype=np.int64)
    for width in np.unique(n):
        which = np.flatnonzero(n == width)
        values = column["vote_value"][start[which, None] + np.arange(width)].astype(float)
        winner[which], size[which] = vote(values, options.threshold, options.floor)
    has = winner >= 0
    at = np.where(has, start + winner, 0)
    table["maj_value"] = np.where(has, column["vote_value"][at].astype(float), np.nan)
    table["maj_score"] = np.where(has, column["score"][at], 0.0)
    table["maj_at_k"] = has & passed[at]
    table["agreement"] = size / n
    for k in ks:
        table[pass_at(k)] = pass_at_k(n, table["n_passed"], k)
    return pa.table(table)


def _check_expected(expected: np.ndarray, start: np.ndarray, code: np.ndarray, items: Any) -> None:
    first = expected[start][code]
    same = (expected == first) | (np.isnan(expected) & np.isnan(first))
    if not same.all():
        at = int(np.argmin(same))
        raise InputError(
            f"item {items[code[at]].as_py()!r} has samples with different expected numbers "
            f"({first[at]:g} and {expected[at]:g}); the samples of one item share one expected"
        )


def samples_of(results: Mapping[str, Any], item_col: str, options: Options, row: int) -> pa.Table:
    """What `item_table` needs of a batch of results whose first row is ``row`` (from 0); an
    empty item is an `InputError` naming its row (counted from 1)."""
    if item_col not in results:
        hint = " (choose with --item-col)"
        raise missing_column("item", item_col, [c for c in results if c not in RESULTS], hint)
    items = pa.array(pd.Series(results[item_col], copy=False), from_pandas=True)
    if items.null_count:
        missing = int(np.argmax(np.asarray(items.is_null())))
        raise InputError(f"row {row + missing + 1:,} has no item in column {item_col!r}")
    n = len(items)
    arrays = {
        item_col: items,
        "row": pa.array(np.arange(row, row + n, dtype=np.int64)),
        "vote_value": pa.array(np.asarray(results[vote_column(options)], dtype=float)),
        "expected_value": pa.array(np.asarray(results["expected_value"], dtype=float)),
        "score": pa.array(np.asarray(results["score"], dtype=float)),
        "passed": pa.array(np.asarray(results["passed"], dtype=bool)),
    }
    return pa.table(arrays)


@dataclass
class _Mean:
    """A mean with its running sums (Chan et al.'s update), over a column of per-item values."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, values: np.ndarray) -> None:
        values = values[~np.isnan(values)]
        if not len(values):
            return
        mean = float(values.mean())
        n = self.n + len(values)
        delta = mean - self.mean
        self.m2 += float(((values - mean) ** 2).sum()) + delta**2 * self.n * len(values) / n
        self.mean += delta * len(values) / n
        self.n = n

    def with_interval(self, name: str) -> dict[str, float]:
        if self.n == 0:
            return {name: math.nan, f"{name}_ci_low": math.nan, f"{name}_ci_high": math.nan}
        stderr = math.sqrt(self.m2 / (self.n - 1) / self.n) if self.n > 1 else math.nan
        low, high = mean_interval(self.mean, stderr, self.n)
        return {name: self.mean, f"{name}_ci_low": low, f"{name}_ci_high": high}


@dataclass
class ItemTotals:
    """The run's item aggregates (SPEC §3.3), added up over tables of items."""

    item_col: str
    ks: tuple[int, ...]
    n_items: int = 0
    maj_passed: int = 0
    agreement_sum: float = 0.0
    means: dict[str, _Mean] = field(default_factory=dict)
    short: dict[int, tuple[int, Any]] = field(default_factory=dict)  # k: (items, first item)

    def add(self, items: pa.Table) -> None:
        """Take in a table of items (`items_of`'s columns)."""

        def column(name: str) -> np.ndarray:
            return np.asarray(items.column(name).to_numpy())

        self.n_items += items.num_rows
        self.maj_passed += int(np.count_nonzero(column("maj_at_k")))
        self.agreement_sum += float(column("agreement").sum())
        for name in ["mean_at_k", *map(pass_at, self.ks)]:
            self.means.setdefault(name, _Mean()).add(column(name).astype(float))
        for k in self.ks:
            left_out = np.flatnonzero(column("n_samples") < k)
            if len(left_out):
                first = items.column(self.item_col)[int(left_out[0])].as_py()
                count, first = self.short.get(k, (0, first))
                self.short[k] = (count + len(left_out), first)

    def aggregates(self) -> dict[str, float]:
        """``mean_at_k``, ``maj_at_k``, ``pass_at_<k>`` with their intervals, ``agreement``,
        ``n_items`` and ``pass_at_<k>_n_items``."""
        if self.n_items == 0:
            raise InputError("no items to aggregate")
        low, high = wilson(self.maj_passed, self.n_items)
        found = self.means["mean_at_k"].with_interval("mean_at_k")
        found |= {"maj_at_k": self.maj_passed / self.n_items}
        found |= {"maj_at_k_ci_low": low, "maj_at_k_ci_high": high}
        for k in self.ks:
            found |= self.means[pass_at(k)].with_interval(pass_at(k))
            found[f"{pass_at(k)}_n_items"] = self.means[pass_at(k)].n
        return found | {"agreement": self.agreement_sum / self.n_items, "n_items": self.n_items}

    def notes(self) -> tuple[str, ...]:
        """One line per k that some items have fewer samples than: how many were left out."""
        return tuple(
            f"{pass_at(k)} leaves out {count:,} item{'s' if count > 1 else ''} with fewer than "
            f"{k} samples (first: {first!r})"
            for k, (count, first) in sorted(self.short.items())
        )


def rows_item_aggregates(
    results: Mapping[str, Any], item_col: str, ks: Iterable[int], options: Options
) -> dict[str, float]:
    """The item aggregates of scored ``results`` held in memory, whose column ``item_col``
    names each row's item (the evaluate metric's case; the job groups on disk, `job.items`)."""
    ks = tuple(ks)
    totals = ItemTotals(item_col, ks)
    totals.add(items_of(samples_of(results, item_col, options, 0), item_col, ks, options))
    return totals.aggregates()


def items_line(aggregates: Mapping[str, float]) -> str:
    """The item aggregates in one line, each with its 95% interval (SPEC §3.3).

    >>> items_line({"n_items": 2, "mean_at_k": 0.5, "maj_at_k": 0.5, "pass_at_1": 0.25,
    ...             "agreement": 0.75})
    'Samples per item: 2 items; mean@k 0.5000 · maj@k 0.5000 · pass@1 0.2500 · agreement 0.7500'
    """
    names = ["mean_at_k", "maj_at_k"]
    names += [name for name in aggregates if name.removeprefix("pass_at_").isdigit()]
    said = []
    for name in names:
        value = aggregates[name]
        shown = "n/a" if math.isnan(value) else f"{value:.4f}"
        low, high = (aggregates.get(f"{name}_{b}", math.nan) for b in ("ci_low", "ci_high"))
        shown += "" if math.isnan(low) or math.isnan(high) else f" [{low:.4f}, {high:.4f}]"
        said.append(f"{name.replace('_at_', '@')} {shown}")
    said.append(f"agreement {aggregates['agreement']:.4f}")
    return f"Samples per item: {int(aggregates['n_items']):,} items; " + " · ".join(said)
