"""Reading numbers (SPEC §1): the spec's examples, and the vectorised path against the plain one."""

from __future__ import annotations

import itertools
import math
import re
from decimal import Decimal
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import numdiff_component.reading.tiers_readings as tiers_module
from numdiff_component import OptionError, Options, parse_column, parse_number
from numdiff_component.reading import fractions, grammar, marks, several_numbers
from numdiff_component.reading.plain import count_tokens
from tests.fixtures.run import EXAMPLES
from tests.fixtures.tables import READING_STRATEGIES, SPEC_READINGS

SPEC_EXAMPLES = [
    # (value, options, number read)
    ("0.0302", {}, 0.0302),
    ("0.03024", {}, 0.03024),
    (None, {}, None),
    (float("nan"), {}, None),
    (pd.NA, {}, None),
    (np.nan, {}, None),
    (True, {}, None),
    (np.bool_(False), {}, None),
    (7, {}, 7.0),
    (2.5, {}, 2.5),
    (Decimal("1.25"), {}, 1.25),
    (np.int32(3), {}, 3.0),
    (np.float32(0.5), {}, 0.5),
    (float("inf"), {}, None),
    (10**400, {}, None),
    (Decimal("1e400"), {}, None),
    ("١٢", {}, None),
    ("\uff11\uff12", {}, None),  # full-width digits
    ("1,234,567", {}, 1234567.0),
    ("5.", {}, 5.0),
    (".5", {}, 0.5),
    ("1e", {}, 1.0),
    ("1e5", {}, 100000.0),
    ("1e\u22125", {}, 1e-05),
    ("Between 3 and 4, final answer 4", {}, 3.0),
    ("Between 3 and 4, final answer 4", {"pick": "last"}, 4.0),
    ("12345", {"pick": "last"}, 12345.0),
    ("-3", {}, -3.0),
    ("x=-3", {}, -3.0),
    ("(\u22122)", {}, -2.0),
    ("$-3.50", {}, -3.5),
    ("--5", {}, -5.0),
    ("COVID-19", {}, 19.0),
    ("a-5", {}, 5.0),
    ("E-5", {}, 5.0),
    ("$1,234.50", {}, 1234.5),
    ("1,2345", {}, 1.0),
    ("1234,567", {}, 1234.0),
    ("1.234,5", {"decimal_comma": True}, 1234.5),
    ("3,14", {"decimal_comma": True}, 3.14),
    (",5", {"decimal_comma": True}, 0.5),
    ("12.5", {"decimal_comma": True}, 12.0),
    ("50 %", {"percent": "fraction"}, 0.5),
    ("50\t%", {"percent": "fraction"}, 0.5),
    ("12%", {}, 12.0),
    ("1_000", {}, 1.0),
    ("0x1F", {}, 0.0),
    ("3/4", {}, 3.0),
    ("twelve", {}, None),
    ("inf", {}, None),
    ("nan", {}, None),
    ("1e999", {}, None),
    ("1e-400", {}, 0.0),
    *SPEC_READINGS,  # SPEC §1.1, every example as written there
]

# Edges of SPEC §1.1 where its words decide, and the readings chosen where it is silent.
READING_EDGES = [
    ("answer is-5", {"pick": "answer"}, -5.0),  # a sign at the span's start counts
    ("x is-5", {"pick": "last"}, 5.0),
    ("Answer IS: 7", {"pick": "answer"}, 7.0),  # `is` in any case, like `answer`
    ("answer  :\t3 then 4", {"pick": "answer"}, 3.0),
    ("Final answer isn't 3, it is 4", {"pick": "answer"}, 4.0),  # `isn` is no marker
    ("answer: 3. The answer isn't clear", {"pick": "answer"}, 3.0),
    ("theanswer: 3, 4", {"pick": "answer"}, 4.0),  # preceded by a letter: no marker
    ("3 \\boxed{} 4", {"pick": "answer"}, None),  # a span with no token
    ("\\boxed{12}345", {"pick": "answer"}, 12.0),  # the span ends at its brace
    ("\\boxed{50}\\%", {"pick": "answer", "percent": "fraction"}, 50.0),
    ("\\boxed{50\\%}", {"pick": "answer", "percent": "fraction"}, 0.5),
    ("\\boxed{\\frac{\\sqrt{3}}{2}} 7", {"pick": "answer"}, 3.0),
    ("\\boxed{{{{1}}}} 7", {"pick": "answer"}, 1.0),  # nested four deep
    ("\\boxed{ 4 and 5", {"pick": "answer"}, 4.0),  # unclosed: to the end
    ("#### answer: 3 #### 8", {"pick": "answer"}, 8.0),
    ("answer = 2 \\fbox{-6}", {"pick": "answer"}, -6.0),
    ("5 k", {"scale": "words"}, 5000.0),
    ("5\tBN.", {"scale": "words"}, 5e9),
    ("5 m", {"scale": "words"}, 5.0),  # single letters keep their case
    ("5 b", {"scale": "words"}, 5.0),
    ("5 Billionaire", {"scale": "words"}, 5.0),
    ("5k5", {"scale": "words"}, 5.0),
    ("5 k_", {"scale": "words"}, 5000.0),  # `_` is no letter or digit
    ("5 Ké", {"scale": "words"}, 5.0),
    ("-2.5 million %", {"scale": "words", "percent": "fraction"}, -25000.0),
    ("1/2 million", {"scale": "words", "fractions": True}, 500000.0),
    ("1e308 trillion", {"scale": "words"}, None),  # not finite
    ("1,234k", {"scale": "words"}, 1234000.0),
    ("1.234 B12", {"scale": "words", "decimal_comma": True}, 1234.0),  # a digit after the word
    ("1\u00a0234\u202f567", {"thousands": "any"}, 1234.0),  # one separator per token
    ("1\u2009234\u2009567", {"thousands": "any"}, 1234567.0),
    ("1\u2019234", {"thousands": "any"}, 1234.0),
    ("1\\,234\\,567.5", {"thousands": "any"}, 1234567.5),
    ("1 234,5", {"thousands": "any", "decimal_comma": True}, 1234.5),
    ("1{,}5", {"thousands": "any", "decimal_comma": True}, 1.5),
    ("1,\\!234", {"thousands": "any"}, 1234.0),
    ("1 234", {}, 1.0),
    ("3/4 and 5", {"fractions": True, "pick": "last"}, 5.0),
    ("x/3/4", {"fractions": True}, 3.0),
    ("3/4/x", {"fractions": True}, 0.75),
    ("3/04", {"fractions": True}, 0.75),
    ("3/00", {"fractions": True}, 3.0),
    ("1,234/5", {"fractions": True, "pick": "last"}, 5.0),
    ("12/05/2023", {"fractions": True, "pick": "last"}, 2023.0),
    ("\\frac{ 1 }{\t4 }", {"fractions": True}, 0.25),
    ("\\dfrac{1.5}{3}", {"fractions": True}, 0.5),
    ("\\tfrac{1,5}{3}", {"fractions": True, "decimal_comma": True}, 0.5),
    ("\\frac{1}{0}", {"fractions": True}, 1.0),
    ("\\frac{1}{0.0}", {"fractions": True, "pick": "last"}, 0.0),
    ("-\\frac{1}{4}\\%", {"fractions": True, "percent": "fraction"}, -0.0025),
    ("a-\\frac{1}{4}", {"fractions": True}, 0.25),
    ("1,234\\frac{1}{2}", {"fractions": True, "pick": "last"}, 0.5),
    ("3/4", {"pick": "answer"}, 4.0),  # fractions off: 3/4 is two tokens
]


@pytest.mark.parametrize(("value", "options", "expected"), SPEC_EXAMPLES + READING_EDGES)
def test_spec_examples(value: object, options: dict, expected: float | None) -> None:
    assert parse_number(value, **options) == expected
    vectorised = parse_column(pd.Series([value], dtype=object), **options)[0]
    assert (math.isnan(vectorised) and expected is None) or vectorised == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 1.5}, "threshold must be a number between 0 and 1, got 1.5"),
        ({"threshold": "high"}, "threshold must be a number between 0 and 1, got 'high'"),
        ({"floor": -1}, "floor must be a number >= 0, got -1"),
        ({"floor": float("nan")}, "floor must be a number >= 0, got nan"),
        ({"decimal_comma": "yes"}, "decimal_comma must be True or False, got 'yes'"),
        ({"pick": "middle"}, "pick must be one of 'first', 'last', 'answer', got 'middle'"),
        ({"percent": "ratio"}, "percent must be one of 'keep', 'fraction', got 'ratio'"),
        ({"scale": "si"}, "scale must be one of 'none', 'words', got 'si'"),
        ({"thousands": " "}, "thousands must be one of 'comma', 'any', got ' '"),
        ({"fractions": 1}, "fractions must be True or False or 'all', got 1"),
        ({"treshold": 0.5}, "unknown option 'treshold'"),
    ],
)
def test_option_out_of_domain_names_option_and_value(options: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_number("1", **options)


# --- differential: the vectorised path equals the plain path ---------------------------------

_ALPHABET = "0123456789" * 3 + ",.,.eE+-\u2212%  \t\nax\u00e9$()_/\ue0000"
texts = st.one_of(
    st.text(alphabet=_ALPHABET, max_size=30),
    st.text(max_size=20),  # any unicode, including other digits and letters
    st.from_regex(
        r"[-+\u2212]?[0-9]{1,4}(,[0-9]{3}){0,3}(\.[0-9]*)?([eE][-+]?[0-9]{1,3})?%?", fullmatch=True
    ),
)
# Each fast path and its edges: whole columns Arrow casts (with the strings it reads that the
# grammar does not: inf, nan, nan(12)); numbers after prose (signs, points, letters before; a
# grouping that is clean or not, a fraction, an exponent, a percent, more digits after), in
# both separator conventions, so that `_lead_regex` rows and the rows it hands on are mixed.
_CLEAN = r"[-+]?([0-9]{1,5}(\.[0-9]{0,3})?|\.[0-9]{1,3})([eE][-+]?[0-9]{1,3})?"
_SWAP = st.sampled_from([{}, str.maketrans(",.", ".,")])  # either separator convention
clean_texts = st.one_of(
    st.builds(str.translate, st.from_regex(_CLEAN, fullmatch=True), _SWAP),
    st.sampled_from(["inf", "-Infinity", "nan", "NaN", "nan(12)", "+nan", "1e999", "-1e-400"]),
)
_NUMBER = r"[0-9]{1,4}([,.][0-9]{1,4}){0,3}([eE][-+\u2212]?[0-9]{0,2})?"
prose_texts = st.builds(
    lambda before, number, after, swap: (before + number + after).translate(swap),
    st.text(alphabet="ab E$(=+-\u2212.,\t\n%\u00e9", max_size=4),
    st.from_regex(_NUMBER, fullmatch=True),
    st.text(alphabet="ab e %\t.,-3", max_size=4),
    _SWAP,
)
all_options = st.builds(
    Options,
    threshold=st.just(0.99),
    floor=st.just(1.0),
    decimal_comma=st.booleans(),
    pick=st.sampled_from(["first", "last"]),
    percent=st.sampled_from(["keep", "fraction"]),
)


def _plain(values: list[object], options: Options) -> np.ndarray:
    parsed = [parse_number(v, options) for v in values]
    return np.array([np.nan if v is None else v for v in parsed], dtype=float)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.one_of(texts, prose_texts, st.none()), min_size=1, max_size=25),
    options=all_options,
)
@example(
    values=["1,234 -5", ".5.5", "5..5", "1,234,5678", "a\n-5", "\ue0003-4"],
    options=Options(pick="last"),
)
@example(  # a sign after a letter that is not ASCII, or before a currency symbol after one;
    # text before the first digit beyond the Basic Multilingual Plane (an emoji), or not ASCII
    values=[
        "\u00e9-5",
        "\u00e9\u22125",
        "\u00e9-$5",
        "\u20ac-5",
        "(-$5",
        "x-\u20ac5",
        "\u2212\u00a35",
        "\U0001f600 -7",
        "\u00e9\U0001f600.5",
        "\u7b54\u6848 12",
        "\U0001f600",
    ],
    options=Options(),
)
def test_vectorised_equals_plain_on_text(values: list[str | None], options: Options) -> None:
    assert _same(parse_column(values, options), _plain(values, options))


# SPEC §1.1: markers (nested, unclosed, several, without numbers, near misses), scale words next
# to letters and digits, every grouping separator and LaTeX comma, dates and fractions, signs and
# percents, mixed with random text; checked for every combination of the options.
_TABLES = [  # every entry of the tables the readers are made from, each word in three cases
    *marks.BOXES,
    *marks.HASHES,
    *(c for w in (*marks.ANSWER_WORDS, marks.IS) for c in (w, w.upper(), w.title())),
    *marks.COLONS,
    *marks.SCALE_LETTERS,
    *(c for w in marks.SCALE_WORDS for c in (w, w.upper(), w.title())),
    marks.PERCENT_SIGN,
    marks.LATEX_ESCAPE + marks.PERCENT_SIGN,
    *grammar.EXTRA_SEPARATORS,
    *grammar.LATEX_COMMAS,
    *grammar.CURRENCY,
    *grammar.SIGNS,
    *grammar.BLANK,
    *(command + "{" for command in fractions.FRAC_COMMANDS),
    fractions.SLASH,
]
# Near misses and combinations the tables do not hold.
_PIECES = [
    *_TABLES,
    *("{", "}", "{{", "}}", "#", "answers", "answer  :", "answer\tis:", "answer =", " is "),
    *("isn't", "theanswer:", "m", "b", "km", "s", "x", "_", "\u00e9", "\u212a", "  ", "\n"),
    *(",", ".", "//", "}{", "\\frac{1}{2}", "\\frac{ 3 }{\t4}", "e", "E", "e-", "12/05/2023"),
    *("1/0", "3/4", "0/5", "\ue000"),
]
_SEPARATORS = "|".join(re.escape(sep) for sep in [",", ".", *grammar.EXTRA_SEPARATORS])
_GROUPED = rf"[0-9]{{1,3}}(({_SEPARATORS})[0-9]{{3}}){{1,3}}[0-9]?"
reading_texts = st.lists(
    st.one_of(
        st.sampled_from(_PIECES),
        st.from_regex(r"0|00|[0-9]{1,4}([.,][0-9]{0,3})?", fullmatch=True),
        st.from_regex(_GROUPED, fullmatch=True),
        st.text(alphabet="0123456789 ax-/{}.", max_size=4),
    ),
    max_size=12,
).map("".join)
reading_options = st.builds(Options, **READING_STRATEGIES)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(reading_texts, texts, st.none()), max_size=25), data=st.data())
def test_vectorised_equals_plain_with_every_reading(values: list[str | None], data) -> None:
    # A short tail puts the cut of `_reversed_search` inside markers and numbers.
    with mock.patch.object(tiers_module, "_TAIL", data.draw(st.sampled_from([100, 1, 2, 5]))):
        for options in [data.draw(reading_options), *(data.draw(reading_options) for _ in "xy")]:
            assert _same(parse_column(values, options), _plain(values, options)), options


def test_every_combination_of_readings_on_a_fixed_table() -> None:
    values = [t for t, _, _ in SPEC_EXAMPLES + READING_EDGES if isinstance(t, str)] + [None]
    for combination in itertools.product(
        [False, True],
        ["first", "last", "answer"],
        ["keep", "fraction"],
        ["none", "words"],
        ["comma", "any"],
        [False, True],
    ):
        options = Options(**dict(zip(_READING_NAMES, combination, strict=True)))
        plain = _plain(values, options)
        assert _same(parse_column(values, options), plain), options
        assert _same(parse_column(pa.array(values, pa.large_string()), options), plain), options


_READING_NAMES = ("decimal_comma", "pick", "percent", "scale", "thousands", "fractions")


numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=False, places=None).filter(lambda d: d.is_finite()),
    st.booleans(),
    st.none(),
    texts,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(clean_texts | st.none(), min_size=1, max_size=25), options=all_options)
def test_vectorised_equals_plain_on_clean(values: list[str | None], options: Options) -> None:
    assert _same(parse_column(values, options), _plain(values, options))


@pytest.mark.parametrize("bad", ["n/a", "about 3,5", "nan(7)"])
def test_clean_column_with_a_late_exception(bad: str) -> None:
    # The first 1000 rows cast; the whole column does not, or reads a row the grammar reads apart.
    values = [f"{i}.5e-1" for i in range(1500)] + [bad]
    for options in (Options(), Options(pick="last", percent="fraction")):
        assert _same(parse_column(values, options), _plain(values, options))


@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(values=st.lists(numbers, min_size=1, max_size=15), options=all_options)
def test_vectorised_equals_plain_on_mixed_objects(values: list[object], options: Options) -> None:
    column = pd.Series(values, dtype=object)
    assert _same(parse_column(column, options), _plain(values, options))


@pytest.mark.parametrize(
    "column",
    [
        pd.Series([1, None, -3], dtype="Int64"),
        pd.Series([1.5, np.nan, float("inf"), -2.0]),
        pd.Series([1, 2, 3], dtype="int64"),
        pd.Series([True, False, None], dtype="boolean"),
        pd.Series(["1", "x", "1"], dtype="category"),
        pd.Series([Decimal("1.10"), None, Decimal("-0.000000000000000000001")]),
        pa.array([Decimal("123.456"), None], pa.decimal128(10, 3)),
        pa.chunked_array([["1,5", None], ["x=-2"]]),
        pa.array(["3", None], pa.large_string()),
        pa.array(["x", "1,234 -5", "a-3", None, "-.5e1%"]).slice(1),  # an offset into buffers
        pd.Series(pd.to_datetime(["2024-01-02", None])),
        pd.Series([None, None]),
    ],
    ids=lambda c: str(getattr(c, "dtype", None) or c.type),
)
def test_typed_columns_read_as_their_values(column: object) -> None:
    values = column.to_pylist() if hasattr(column, "to_pylist") else column.tolist()
    for options in (Options(), Options(decimal_comma=True, pick="last")):
        assert _same(parse_column(column, options), _plain(values, options))


def test_a_pandas_column_held_in_several_arrow_chunks(tmp_path) -> None:
    import pyarrow.parquet as pq

    table = pa.table({"output": ["about 3", "x=-3"] * 3})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)
    column = pd.read_parquet(tmp_path / "f.parquet")["output"]
    for pick in ("first", "last"):
        assert parse_column(column, pick=pick).tolist() == [3.0, -3.0] * 3


@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string()])
def test_a_slice_of_an_arrow_array_reads_as_its_values(string_type: pa.DataType) -> None:
    """The column reader looks at Arrow's buffers by byte offset: a slice (a Spark batch, say)
    starts inside them, with text before it that is not its own."""
    values = ["x -5", "\u00e9-$3", "1,234.5 apples", None, "\U0001f600 -7", ".5", "none"] * 3
    array = pa.array(values, string_type)
    for start in range(len(values) - 4):
        for options in (Options(), Options(pick="last"), Options(thousands="any")):
            want = _plain(values[start : start + 4], options)
            assert _same(parse_column(array.slice(start, 4), options), want), (start, options)


# --- several_numbers: where pick="first" may read another number than the answer ----------


def _several_plain(values: list[object], options: Options) -> np.ndarray:
    return np.array([isinstance(v, str) and count_tokens(v, options) == 2 for v in values], bool)


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        ("3 apples and 4 pears", {}, True),
        ("42", {}, False),
        ("1,234.5e-3", {}, False),
        ("no number", {}, False),
        ("3/4", {}, True),
        ("3/4", {"fractions": True}, False),
        ("12/05/2023", {"fractions": True}, True),
        ("\\frac{1}{2}", {"fractions": True}, False),
        ("1 234", {}, True),
        ("1 234", {"thousands": "any"}, False),
        ("1{,}234", {"thousands": "any"}, False),
        ("1,5", {"decimal_comma": True}, False),
        ("COVID-19", {}, False),
        (None, {}, False),
        (7, {}, False),
        (3.5, {}, False),
    ],
)
def test_several_numbers(value: object, options: dict, expected: bool) -> None:
    assert several_numbers([value], **options).tolist() == [expected]
    assert several_numbers(pd.Series([value, "x"], dtype=object), **options)[0] == expected


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.one_of(reading_texts, texts, st.none()), max_size=25), data=st.data())
def test_several_numbers_vectorised_equals_plain(values: list[str | None], data) -> None:
    for options in [data.draw(reading_options), data.draw(reading_options)]:
        assert several_numbers(values, options).tolist() == _several_plain(values, options).tolist()


@pytest.mark.parametrize("tail", [1, 2, 5])
def test_a_cut_inside_a_character_moves_back_to_its_start(tail: int) -> None:
    """Found by the property above: with a one-byte tail, the cut inside ``é`` used to slice
    from the start of the string, which pyarrow 25 refuses ("Negative buffer resize")."""
    values = ["0_0é", "0_0é", "x 1é2 é3", None]
    options = Options(pick="last", fractions=True)
    with mock.patch.object(tiers_module, "_TAIL", tail):
        assert _same(parse_column(values, options), _plain(values, options))
