"""SPEC v4: every example of §1.2.8 (``words="all"``), Indian grouping (§1.1) and power notation
(§1.2.4), through `parse_number` and `parse_column`, which must agree; the column reader against
the one-value reader on texts drawn from the tables the readers read; linear time on each new
rule's worst text (sizes that break a quadratic reader; the time is measured by
benchmarks/bench_adversarial.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numdiff_component import parse_column, parse_number
from numdiff_component.options import PRESETS, Options
from numdiff_component.reading import amounts, number_words
from numdiff_component.reading.grammar import EXTRA_SEPARATORS
from numdiff_component.reading.marks import SCALE_LETTERS, SCALE_WORDS
from tests.fixtures.run import EXAMPLES

A = {"words": "all"}
E = {"words": "en"}
T = {"thousands": "any"}
S = {"scientific": True}
PROSE, PRICES, ANSWERS = ({"preset": name} for name in ("prose", "prices", "answers"))

SPEC_V4 = [
    # §1.2.1 (v3, now written): "and N' D" first.
    ("one hundred and one half", E, 100.5),
    ("two thousand and three quarters", E, 2000.75),
    # §1.1 thousands="any": Indian grouping.
    ("12,34,567.89", T, 1234567.89),
    ("\u20b91,23,456", T, 123456.0),
    ("1,234,56,789", T, 1234.0),
    ("12,34", T, 12.0),
    ("1,23,4567", T, 1.0),
    ("12,34,567.89", {}, 12.0),
    ("12.34.567,89", {**T, "decimal_comma": True}, 1234567.89),
    # §1.2.4 scientific: power notation.
    ("1.1^23", S, 1.1**23),
    ("2^{10}", S, 1024.0),
    ("2^-1", S, 0.5),
    ("-2^2", S, -4.0),
    ("10^400", S, None),
    ("0^-1", S, None),
    ("8x2^10", S, 8.0),
    ("2 ^ 3", S, 2.0),
    ("1.1^23", {}, 1.1),
    # §1.2.8 words="all": more words.
    ("nought", A, 0.0),
    ("naught", A, 0.0),
    ("nil", A, 0.0),
    ("a dozen", A, 12.0),
    ("two dozen", A, 24.0),
    ("five lakh", A, 5e5),
    ("one crore twenty lakh", A, 1.2e7),
    ("three billions", A, 3e9),
    ("seventy-five thousands", A, 75000.0),
    ("thousands of people", A, None),
    ("dozens", A, None),
    ("a trillionth", A, 1e-12),
    # hyphens, run-together tens, ordinals
    ("two-hundred", A, 200.0),
    ("twentyone-thousand-four-hundred-and-seventy-three", A, 21473.0),
    ("twentyone", A, 21.0),
    ("thirtyseven", A, 37.0),
    ("twenty-third", A, 20.0),
    ("twenty thirds", A, 20 / 3),
    # fractions
    ("half an hour", A, 0.5),
    ("the second half", A, None),
    ("half a dozen", A, 6.0),
    ("half a million", A, 5e5),
    ("a quarter", A, 0.25),
    ("a third", A, 1 / 3),
    ("a quarter pound", A, 0.25),
    ("a trillionth of a second", A, 1e-12),
    ("a third party", A, None),
    ("a fifth win", A, None),
    ("two and fifty-four hundredths", A, 2.54),
    ("five billion and three quarters", A, 5000000000.75),
    # spoken decimals
    ("two point three", A, 2.3),
    ("nine point nought four", A, 9.04),
    ("twelve point ninety-nine", A, 12.99),
    ("zero point five", A, 0.5),
    ("point 77", A, 0.77),
    ("point fifteen", A, 0.15),
    ("at this point 5 people", A, 5.0),
    ("5 point 3", A, 5.0),
    # sign words
    ("minus five", A, -5.0),
    ("negative 504", A, -504.0),
    ("it is minus 3 outside", A, -3.0),
    ("5 minus 3", A, 5.0),
    ("ten minus three", A, 10.0),
    ("aminus 5", A, 5.0),
    # after digits
    ("5 hundred", A, 500.0),
    ("3 dozens", A, 36.0),
    ("5 lakh", A, 5e5),
    ("2.5 crore", A, 2.5e7),
    ("5-million", A, 5e6),
    ("5 million", A, 5.0),
    ("5 million", {**A, "scale": "words"}, 5e6),
    # ratios
    ("1 out of 3", A, 1 / 3),
    ("one out of three", A, 1 / 3),
    ("8 out of 10", A, 0.8),
    ("one over three", A, 1 / 3),
    ("5 over 10 years", A, 5.0),
    ("4.5 out of 5", A, 4.5),
    ("The answer is 1 out of 3.", {**A, "pick": "answer"}, 1 / 3),
    # composite amounts
    ("3 dollars 50 cents", A, 3.5),
    ("thirteen dollars and forty-five cents", A, 13.45),
    ("3 dollars", A, 3.0),
    ("3 dollars 150 cents", A, 3.0),
    # not read
    ("thirty-first", A, 30.0),
    ("fourty two", A, 2.0),
    ("one fifty", A, 1.0),
    ("1 quarter", A, 1.0),
    ("quarter", A, None),
    ("8x2^10", {**A, **S}, 8.0),
    # words="en" reads as v3
    ("a dozen", E, None),
    ("minus five", E, 5.0),
    ("three point five", E, 3.0),
    ("two-hundred", {**E, "ranges": "mid"}, 51.0),
    # §2.1 presets
    ("$ 75 million", PRICES, 7.5e7),
    ("(1,234.00)", PRICES, -1234.0),
    ("thirteen dollars and forty-five cents", PRICES, 13.45),
    ("two-hundred", PROSE, 200.0),
    ("5-million", PROSE, 5e6),
    ("The answer is minus five.", ANSWERS, -5.0),
]


def _column(value: str, options: dict) -> float | None:
    got = parse_column([value, None, "x"], **options)[0]
    return None if math.isnan(got) else float(got)


@pytest.mark.parametrize(("value", "options", "expected"), SPEC_V4)
def test_spec_v4_examples(value: str, options: dict, expected: float | None) -> None:
    plain = parse_number(value, **options)
    assert plain == pytest.approx(expected, rel=1e-15) if expected is not None else plain is None
    assert _column(value, options) == plain


# --- the column reader against the one-value reader, on pieces drawn from the tables --------

_TABLE_WORDS = [
    *number_words.UNITS,
    *number_words.TEENS,
    *number_words.TENS,
    *number_words.MAGNITUDES,
    *number_words.FRACTION_WORDS,
    *number_words.MORE_ZEROS,
    *number_words.MULTIPLIERS,
    *number_words.TINY_FRACTIONS,
    *number_words.POINT_ZEROS,
    *number_words.PLURALS,
    *number_words.RUN_TOGETHER,
    *number_words.SIGN_WORDS,
    *number_words.MAIN_UNITS,
    *number_words.MINOR_UNITS,
    *number_words.NOT_HALF_AFTER,
    *SCALE_LETTERS,
    *SCALE_WORDS,
    "zero",
    "hundred",
    "point",
    "a",
    "and",
    "&",
    "out",
    "of",
    "over",
]
# A word as written, by the case rules of both readers (any case for words).
_WORD = st.sampled_from(_TABLE_WORDS).flatmap(
    lambda w: st.sampled_from([w, w.upper(), w.title(), w + "s", w[:-1] or w])
)
_JOINS = [" ", "  ", "\t", "-", ", ", ",", "^", "^{", "}", "(", ")", "$", "\u20ac", " out of "]
_JOINS += [*EXTRA_SEPARATORS, ".", "x", "%"]
_PIECE = st.one_of(
    _WORD,
    st.sampled_from(_JOINS),
    st.from_regex(r"[0-9]{1,3}((,[0-9]{2})+,[0-9]{3})?(\.[0-9]{0,2})?", fullmatch=True),
    st.sampled_from(["0", "10", "2", "1.1", "\u0663", "\uff15"]),
)
v4_texts = st.lists(_PIECE, max_size=10).map("".join)
v4_options = st.builds(
    lambda preset, pick, decimal_comma: Options.of(
        preset=preset, pick=pick, decimal_comma=decimal_comma
    ),
    st.sampled_from(sorted(PRESETS)),
    st.sampled_from(["first", "last", "answer"]),
    st.booleans(),
) | st.builds(
    lambda pick, scale, ranges: Options(
        words="all", pick=pick, scale=scale, ranges=ranges, scientific=True, thousands="any"
    ),
    st.sampled_from(["first", "last", "answer"]),
    st.sampled_from(["none", "words"]),
    st.sampled_from(["none", "mid"]),
)


def _plain(values: list[str | None], opts: Options) -> np.ndarray:
    parsed = [parse_number(v, opts) for v in values]
    return np.array([np.nan if v is None else v for v in parsed], dtype=float)


@settings(max_examples=EXAMPLES, deadline=None)
@given(values=st.lists(st.one_of(v4_texts, st.none()), max_size=20), data=st.data())
def test_column_reader_equals_one_value_reader_on_v4_texts(values, data) -> None:
    for opts in (data.draw(v4_options), data.draw(v4_options)):
        got = parse_column(values, opts)
        assert np.array_equal(got, _plain(values, opts), equal_nan=True), (values, opts)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.one_of(v4_texts, st.none()), max_size=15), opts=v4_options)
def test_several_numbers_equals_the_one_value_count_on_v4_texts(values, opts) -> None:
    from numdiff_component.reading import several_numbers
    from numdiff_component.reading.plain import count_tokens

    plain = [isinstance(v, str) and count_tokens(v, opts) == 2 for v in values]
    assert several_numbers(values, opts).tolist() == plain


def test_route_tests_name_every_word_of_the_tables() -> None:
    # The route test is derived from the tables: each word that starts a phrase or a tail is in it.
    from numdiff_component.reading.routes import route_regex

    pattern = route_regex(Options(words="all"))
    for word in [
        *number_words.MORE_ZEROS,
        *number_words.MULTIPLIERS,
        *number_words.SIGN_WORDS,
        "point",
        "half",
    ]:
        assert f"|{word}|" in pattern or f"|{word})" in pattern, word
    for word in [*number_words.PLURALS, *number_words.MAIN_UNITS]:
        assert word in amounts.route_after_digits(), word


# --- linear time: each new rule's worst text ------------------------------------------------

MB = 1_000_000
ADVERSARIAL_V4: dict[str, tuple[str, float | None]] = {
    "point point point ...": ("point " * 100_000 + "5", 5.0),  # a letter before the last
    "two point nine nine nine ...": ("two point" + " nine" * 100_000, 3.0),  # 2.999... rounds
    "minus minus ...": ("minus " * 100_000 + "5", -5.0),
    "1 out of 1 out of ...": ("1 out of " * 50_000 + "1", 1.0),
    "3 dollars 3 dollars ...": ("3 dollars " * 50_000 + "50 cents", 3.0),
    "half half half ...": ("half " * 100_000, 0.5),
    "twentyone-twentyone-...": ("-".join(["twentyone"] * 50_000), 21.0),
    "a a a ... quarter": ("a " * 100_000 + "quarter", 0.25),
    "1^1^1^...": ("1^" * 100_000 + "1", 1.0),
    "1,23,23,23,...": ("1" + ",23" * 100_000 + ",456", None),  # one token, too large
    "5-5-5-million": ("5-" * 100_000 + "million", 5.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL_V4, ids=list(ADVERSARIAL_V4))
def test_adversarial_text_of_each_v4_rule(case: str) -> None:
    text, expected = ADVERSARIAL_V4[case]
    opts = Options.of(preset="prose")
    plain = parse_number(text, opts)
    if expected is not None:
        assert plain == pytest.approx(expected)
    got = parse_column([text, "1"], opts)
    assert (math.isnan(got[0]) if plain is None else got[0] == plain) and got[1] == 1.0
