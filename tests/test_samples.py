"""Samples per item (SPEC §3.3): the items and the run's item aggregates against a reference
computed apart (tests/fixtures/samples.py), the vote's edge cases, the errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numdiff_component import Options, score_frame
from numdiff_component.errors import InputError, OptionError
from numdiff_component.options import sample_ks
from numdiff_component.samples import (
    FEW_SAMPLES,
    ItemTotals,
    item_table,
    samples_of,
    vote,
    vote_by_clusters,
    vote_by_pairs,
)
from tests.fixtures.run import EXAMPLES
from tests.fixtures.samples import (
    items_table,
    reference_aggregates,
    reference_items,
    reference_vote,
)

KS = (1, 2, 5, 10)
ANSWERS = Options(preset="answers")


def items_of(table: pd.DataFrame, options: Options = ANSWERS, ks: tuple[int, ...] = KS) -> Any:
    results = score_frame(table, options=options)
    return results, item_table(
        samples_of(results, "item", options, 0).to_pandas(), "item", ks, options
    )


def test_items_equal_the_reference() -> None:
    results, items = items_of(items_table())
    want = reference_items(results, KS)
    assert items["n_samples"].min() == 1 and items["n_samples"].max() == 8
    assert items["maj_value"].isna().any()  # an item with no number
    assert items["pass_at_10"].isna().any() and items["pass_at_1"].notna().all()
    pd.testing.assert_frame_equal(items.drop(columns="mean_at_k"), want.drop(columns="mean_at_k"))
    assert items["mean_at_k"].tolist() == pytest.approx(want["mean_at_k"].tolist(), rel=1e-15)


def test_run_aggregates_equal_the_reference() -> None:
    _, items = items_of(items_table())
    totals = ItemTotals("item", KS)
    for part in np.array_split(np.arange(len(items)), 3):  # added up in parts, as the job does
        totals.add(pa.Table.from_pandas(items.iloc[part], preserve_index=False))
    want = reference_aggregates(items, KS)
    got = totals.aggregates()
    assert set(got) == set(want)
    assert got == pytest.approx(want, rel=1e-12, nan_ok=True)
    short = int((items["n_samples"] < 10).sum())
    assert totals.notes()[-1].startswith(f"pass_at_10 leaves out {short:,} items")


@pytest.mark.parametrize(
    ("outputs", "maj_value", "agreement"),
    [
        (["1,000", "1000", "1e3", "999.5", "5"], 1000.0, 0.8),  # one number, four spellings
        (["100", "100.5", "98"], 100.0, 2 / 3),  # 98 scores 0.98 against 100: a cluster of its own
        (["7", "8"], 7.0, 0.5),  # a tie: the first cluster seen
        (["n/a", "8", "7", "7"], 7.0, 0.5),  # no number casts no vote, is counted in n
        (["n/a", ""], math.nan, 0.0),  # no number at all
        (["98", "100", "101"], 100.0, 2 / 3),  # 101 joins 100's cluster, not 98's
    ],
)
def test_the_vote(outputs: list[str], maj_value: float, agreement: float) -> None:
    table = pd.DataFrame({"item": "q", "output": outputs, "expected": "1000"})
    _, items = items_of(table)
    assert items["maj_value"].tolist() == pytest.approx([maj_value], nan_ok=True)
    assert items["agreement"].tolist() == pytest.approx([agreement])
    if math.isnan(maj_value):
        assert items["maj_score"].tolist() == [0.0] and not items["maj_at_k"].any()


def test_different_expected_numbers_name_the_item() -> None:
    table = pd.DataFrame(
        {"item": ["a", "b", "b"], "output": "1", "expected": ["1", "1,000", "1e3"]}
    )
    items_of(table)  # 1,000 and 1e3 are one number
    table.loc[2, "expected"] = "999"
    with pytest.raises(InputError, match=r"^item 'b' has samples with different expected numbers"):
        items_of(table)


def test_an_empty_item_names_its_row() -> None:
    table = pd.DataFrame({"item": ["a", None], "output": "1", "expected": "1"})
    with pytest.raises(InputError, match=r"^row 2 has no item in column 'item'"):
        items_of(table)


@pytest.mark.parametrize("k", ["0", "1,x", "", "-1", "1.5", [True]])
def test_bad_k(k: object) -> None:
    with pytest.raises(OptionError, match=r"^k must be integers >= 1"):
        sample_ks(k)


@pytest.mark.parametrize("n_items", [3, 2**16, 2**16 + 1])  # item codes sorted by radix or not
def test_samples_come_together_whatever_the_number_of_items(n_items: int) -> None:
    rows = np.arange(2 * n_items)
    samples = pd.DataFrame(
        {
            "item": rows % n_items,  # item i: rows i and n_items + i
            "row": rows,
            "vote_value": (rows % n_items).astype(float),
            "expected_value": (rows % n_items).astype(float),
            "score": 1.0,
            "passed": True,
        }
    )
    table = item_table(samples, "item", (1, 2), Options())
    assert table["item"].tolist() == list(range(n_items))
    assert (table["n_samples"] == 2).all() and (table["agreement"] == 1.0).all()
    assert table["maj_value"].tolist() == list(map(float, range(n_items)))


NUMBERS = st.sampled_from([0.0, -0.0, 1.0, 100.0, 100.5, 99.2, 98.0, math.nan, 1e308, -1e308])
NUMBERS |= st.floats(allow_infinity=False)


CLOSE = st.sampled_from([7.0, 7.05, 7.07, 7.1, 7.2, -7.0, np.nan])
"""Numbers a few of which are within a threshold of each other: clusters of several."""


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.integers(1, FEW_SAMPLES + 4).flatmap(
        lambda n: st.lists(
            st.lists(NUMBERS | CLOSE, min_size=n, max_size=n), min_size=1, max_size=20
        )
    ),
    st.sampled_from([0.0, 0.5, 0.99, 1.0]) | st.floats(0, 1),
    st.sampled_from([0.0, 1.0]) | st.floats(0, 1e3),
)
def test_vote_equals_the_reference(rows: list[list[float]], threshold: float, floor: float) -> None:
    """`vote` (pair by pair up to `FEW_SAMPLES` samples an item, cluster by cluster beyond) and
    each of its two ways, on any number of samples, against the reference."""
    values = np.array(rows, dtype=float)
    want = [reference_vote(row, threshold, floor) for row in rows]
    ways = [way(values, threshold, floor) for way in (vote, vote_by_pairs, vote_by_clusters)]
    for winner, size in ways:
        assert list(zip(winner.tolist(), size.tolist(), strict=True)) == want
    assert [a.dtype for a in ways[1]] == [a.dtype for a in ways[2]]
