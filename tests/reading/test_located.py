"""SPEC §1.4: where a number was read and by which rule, in the one-value and column readers.

The differential tests draw their texts and options from the generators the reading tests
share (`tests.test_properties`: pieces of every rule's table, and the presets); the examples
are SPEC §1.4's own.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numdiff_component import (
    ColumnReading,
    Options,
    Reading,
    parse_number,
    read_column,
    read_number,
)
from numdiff_component.reading.spans import RULES
from tests.fixtures.run import EXAMPLES
from tests.test_properties import long_texts, v3_options, v3_texts

SPEC = Path(__file__).parents[2] / "docs" / "SPEC.md"


def test_the_rules_are_the_specs_table() -> None:
    section = SPEC.read_text().split("### 1.4")[1].split("## 2.")[0]
    listed = re.findall(r"^\| `(\w+)` \|", section, flags=re.M)
    assert listed == list(RULES)


@pytest.mark.parametrize(
    ("text", "options", "value", "span", "rule"),
    [
        ("The answer is 42.", {"pick": "answer"}, 42.0, "42.", "marker"),
        ("\\boxed{-7}", {"pick": "answer"}, -7.0, "-7", "box"),
        ("x=-3 and 4", {}, -3.0, "-3", "first"),
        ("x=-3 and 4", {"pick": "last"}, 4.0, "4", "last"),
        ("about 3-5 kg", {"ranges": "mid"}, 4.0, "3-5", "range"),
        ("between 44 and 50", {"ranges": "mid"}, 47.0, "between 44 and 50", "range"),
        ("Loss: -$1,234.50", {}, -1234.5, "-$1,234.50", "first"),
        ("$5", {}, 5.0, "5", "first"),
        ("$2.1 billion", {"scale": "words"}, 2.1e9, "2.1 billion", "first"),
        ("50 %", {"percent": "fraction"}, 0.5, "50 %", "first"),
        ("x 5" + " " * 12 + "% y", {"percent": "fraction"}, 0.05, "5" + " " * 12 + "%", "first"),
        ("a 5 \t\\% b", {"percent": "fraction", "pick": "last"}, 0.05, "5 \t\\%", "last"),
        ("It is minus five", {"words": "all"}, -5.0, "minus five", "words"),
        ("($99.99)", {"negative": "parens"}, -99.99, "($99.99)", "first"),
        ("$14{,}916$", {"thousands": "any"}, 14916.0, "14{,}916", "first"),
        ("so \\frac{1}{2} cup", {"fractions": True}, 0.5, "\\frac{1}{2}", "fraction"),
        ("2.48\u00d710^-5 m", {"scientific": True}, 2.48e-5, "2.48\u00d710^-5", "scientific"),
        ("$119. 95", {"prices": True}, 119.95, "119. 95", "price"),
        ("one hundred", {"words": "en"}, 100.0, "one hundred", "words"),
        ("n/a", {}, None, None, None),
    ],
)
def test_the_specs_examples(text, options, value, span, rule) -> None:
    r = read_number(text, **options)
    assert (r.value, r.rule) == (value, rule)
    assert (None if r.start is None else text[r.start : r.end]) == span
    assert _row(read_column([text], **options), 0) == r


def test_a_number_that_is_no_text_is_its_whole_str() -> None:
    for value, text in ((7, "7"), (7.0, "7"), (-2.5, "-2.5"), (np.float32(0.25), "0.25")):
        r = read_number(value)
        assert (r.value, r.start, r.end, r.rule) == (float(value), 0, len(text), "value")
    assert read_number(Decimal("1.50")).end == 4 and read_number(10**20).end == len("1e+20")
    assert read_number(True).rule is None and read_number(float("nan")).rule is None


def _rereads(text: str, opts: Options) -> None:
    r = read_number(text, opts)
    assert r.value == parse_number(text, opts) or (r.value is None is parse_number(text, opts))
    if r.value is None:
        assert (r.start, r.end, r.rule) == (None, None, None)
        return
    assert r.rule in RULES and 0 <= r.start < r.end <= len(text)
    assert parse_number(text[r.start : r.end], opts) == r.value, (text, opts, r)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=v3_texts, data=st.data())
def test_the_span_reads_again_as_the_number_read(text: str, data) -> None:
    _rereads(text, data.draw(v3_options))


def _row(column: ColumnReading, i: int) -> Reading:
    """Row ``i`` of the column reader's columns, as the one-value reader gives it."""
    cells = column.value[i], column.start[i], column.end[i], column.rule[i]
    if pd.isna(cells[0]):
        assert all(pd.isna(cell) for cell in cells)
        return Reading(None)
    return Reading(float(cells[0]), int(cells[1]), int(cells[2]), str(cells[3]))


def _equal(values: list, opts: Options) -> None:
    column = read_column(values, opts)
    for i, value in enumerate(values):
        assert _row(column, i) == read_number(value, opts), (value, opts)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    values=st.lists(st.one_of(v3_texts, st.text(max_size=12), st.none()), max_size=20),
    data=st.data(),
)
def test_column_reader_gives_the_one_value_readers_spans(values, data) -> None:
    for opts in (data.draw(v3_options), data.draw(v3_options)):
        _equal(values, opts)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(long_texts, st.none()), max_size=10), data=st.data())
def test_column_reader_gives_the_one_value_readers_spans_on_long_texts(values, data) -> None:
    _equal(values, data.draw(v3_options))
