"""Properties of the score for any values and options, and adversarial text (issue: hardening)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from numdiff_component import Options, parse_column, parse_number, score, score_frame
from numdiff_component.job.run import run_job
from numdiff_component.task.config import JobConfig
from tests.fixtures.run import EXAMPLES
from tests.fixtures.tables import READING_STRATEGIES
from tests.reading.test_reading_spec import PRESETS

finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(finite, st.integers(), st.text(max_size=12), st.none(), st.booleans())
options = st.builds(
    Options,
    threshold=st.floats(0, 1),
    floor=st.one_of(st.just(1.0), st.just(0.0), st.floats(0, 1e6)),
    **READING_STRATEGIES,
)


@settings(max_examples=300, deadline=None)
@given(a=values, b=values, opts=options)
def test_score_is_a_symmetric_number_in_unit_interval(a: object, b: object, opts: Options) -> None:
    result = score(a, b, opts)
    assert 0.0 <= result.score <= 1.0 and not math.isnan(result.score)
    assert result.score == score(b, a, opts).score
    parsed = None not in (result.output_value, result.expected_value)
    # An unparseable row never passes, even at threshold 0 (SPEC §2).
    assert result.passed == (parsed and result.score >= opts.threshold)
    assert result.label == ("pass" if result.passed else "fail" if parsed else "unparseable")


@settings(max_examples=200, deadline=None)
@given(x=finite, opts=options)
def test_equal_numbers_score_one(x: float, opts: Options) -> None:
    assert score(x, x, opts).score == 1.0
    assert parse_number(repr(x)) == x  # a float's repr reads back as itself (SPEC §1)
    assert score(repr(x), x).score == 1.0


@settings(max_examples=300, deadline=None)
@given(
    b=finite,
    steps=st.lists(st.floats(0, 1e300), min_size=2, max_size=2),
    up=st.booleans(),
    floor=st.floats(0, 10),
)
def test_score_does_not_rise_as_the_difference_grows(
    b: float, steps: list[float], up: bool, floor: float
) -> None:
    near, far = sorted(steps)
    sign = 1 if up else -1
    a_near, a_far = b + sign * near, b + sign * far
    if not (math.isfinite(a_near) and math.isfinite(a_far)):
        return
    opts = Options(floor=floor)
    assert score(a_far, b, opts).score <= score(a_near, b, opts).score + 1e-12


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(values, values), min_size=1, max_size=20), opts=options)
@example(rows=[(0, "0"), ("-0.0", 0.0), (5, "5")], opts=Options(floor=0.0))  # 0/0 scores 1
def test_score_frame_equals_scoring_row_by_row(
    rows: list[tuple[object, object]], opts: Options
) -> None:
    frame = score_frame(
        pd.DataFrame(rows, columns=["output", "expected"], dtype=object), options=opts
    )
    plain = [score(a, b, opts) for a, b in rows]
    assert frame["score"].tolist() == [r.score for r in plain]
    assert frame["passed"].tolist() == [r.passed for r in plain]
    assert frame["label"].tolist() == [r.label for r in plain]
    np.testing.assert_array_equal(frame["abs_error"].to_numpy(), [r.abs_error for r in plain])


MB = 1 << 20
ADVERSARIAL: dict[str, tuple[str, float | None]] = {
    "10 MB of prose then a number": (("x" * (10 * MB)) + " 42", 42.0),
    "a million digits": ("9" * 1_000_000, None),
    "a million digits and a fraction": ("1" * 1_000_000 + ".5", None),
    "a long run of signs": ("-" * MB + "5", -5.0),
    "a long run of commas": ("," * MB + "1,234", 1234.0),
    "a long run of dots": ("." * MB + "5", 0.5),
    "a long run of e": ("e" * MB + "7", 7.0),
    "200,000 groups, the last one broken": ("1" + ",234" * 200_000 + "5", None),  # too large
    "a long run of one-digit groups": ("1," * 500_000 + "x", 1.0),
    "NUL bytes around a number": ("\x00\x00-5\x00", -5.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL, ids=list(ADVERSARIAL))
def test_adversarial_text_reads_as_the_contract_says(case: str) -> None:
    text, expected = ADVERSARIAL[case]
    assert parse_number(text) == expected
    got = parse_column([text, "1"])
    assert (math.isnan(got[0]) if expected is None else got[0] == expected) and got[1] == 1.0


READINGS = Options(pick="answer", scale="words", thousands="any", fractions=True)
# Sizes large enough to break a quadratic reader; linear time itself is measured by
# benchmarks/bench_adversarial.py (seconds per MB at 1 and 4 MB), not here.
ADVERSARIAL_READINGS: dict[str, tuple[str, float | None]] = {
    "a million boxes": ("\\boxed{" * 200_000 + "5", 5.0),
    "a box, then a million braces": ("\\boxed{" + "{" * MB + "5", 5.0),
    "answer is, many times": ("answer is " * 100_000 + "-5", -5.0),
    "an answer, then 1 MB of prose": ("answer: 5 " + "x" * MB, 5.0),
    "a number, then 1 MB of prose": ("5 " + "x " * (MB // 2), 5.0),
    "a million groups": ("1" + " 000" * 250_000, None),  # 1e750000: too large
    "1/1/1/...": ("1/" * 100_000 + "1", 1.0),
    "5k5k5k...": ("5k" * 100_000, 5000.0),
    "fractions, opened and never closed": ("\\frac{1}{" * 100_000, 1.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL_READINGS, ids=list(ADVERSARIAL_READINGS))
def test_adversarial_text_with_every_reading(case: str) -> None:
    text, expected = ADVERSARIAL_READINGS[case]
    assert parse_number(text, READINGS) == expected
    got = parse_column([text, "1"], READINGS)
    assert (math.isnan(got[0]) if expected is None else got[0] == expected) and got[1] == 1.0


def test_a_10_mb_csv_cell_is_scored_like_any_other(tmp_path: Path) -> None:
    path = tmp_path / "big-cell.csv"
    path.write_text('id,output,expected\na,"' + "y" * (10 * MB) + ' 42",42\nb,7,7\n')
    run_job(JobConfig(str(path), results_dir=str(tmp_path), track=False, plots=False))
    out = pd.read_parquet(tmp_path / "results.parquet")
    assert out["id"].tolist() == ["a", "b"] and out["passed"].all()
    assert len(out["output"][0]) == 10 * MB + 3  # the cell is kept whole


# --- SPEC v3 §1.2: the column reader against the one-value reader, every option --------------

# Every option that changes how a number is read (SPEC §2), as hypothesis draws it.
V3_STRATEGIES = {
    **READING_STRATEGIES,
    "fractions": st.sampled_from([False, True, "all"]),
    "words": st.sampled_from(["none", "en"]),
    "digits": st.sampled_from(["ascii", "any"]),
    "scientific": st.booleans(),
    "ranges": st.sampled_from(["none", "mid"]),
    "negative": st.sampled_from(["sign", "parens"]),
    "prices": st.booleans(),
}
v3_options = st.one_of(
    st.builds(Options, **V3_STRATEGIES),
    # The presets of SPEC §2.1 as plain option dicts, with one option overridden or not.
    st.builds(
        lambda preset, extra: Options(**{**PRESETS[preset], **extra}),
        st.sampled_from(sorted(PRESETS)),
        st.one_of(st.just({}), st.fixed_dictionaries({}, optional=V3_STRATEGIES)),
    ),
)
# Pieces of every rule and its near misses: number words (ordinals, "minus five", "a dozen"),
# ranges ("5 - 10", "2013-14", "1-2-3"), vulgar fractions and mixed numbers, exponents ("5x10",
# "10-5", superscripts), parentheses, prices, other scripts' digits, currency signs.
_V3_PIECES = [
    *("one", "Two", "twenty", "twenty-one", "twenty-first", "ninety-nine", "a", "A", "and", "&"),
    *("hundred", "thousand", "million", "billion", "half", "halves", "third", "quarters"),
    *("fifth", "hundredth", "zero", "twelve", "nineteen", "eighty four", "minus five", "dozen"),
    *("a hundred and two", "two and a half", "one-half", "three million, two hundred & forty"),
    *("point", "between", "Between", "to", " to ", "- to", " and ", "-", "\u2013", " \u2013 "),
    *("5 - 10", "2013-14", "1-2-3", "5-10", "$5 to $10", "-$5 to -$3", "44 mg to 50 mg"),
    *("\u00bd", "\u00bc", "\u215e", "2 1/2", "2 3/2", "\\frac12", "\\frac3{4}", "\\dfrac{1}{2}"),
    *("e", "E", "e-", "e-3", "eV", "6.72e-03", "5e-3-10", "1/2e-3e", "\\frac{1}{2}e-3e"),
    *("1e0e-5e", "1E2E-300E", "e0e", "\U00011f52", "\U0001e4f6", "\ud800", "\udfff"),  # issue 33
    *("1" * 400, "1" * 5000, "/" + "0" * 5000 + "1", "9007199254740993/3"),  # beyond a float
    *("\u00d7", "x", "X", "*", "\u00b7", "\u22c5", "\\times", "\\cdot", "10", "^", "^{", "10^6"),
    *("10\u22125", "10\u00b2", "\u207b", "\u00b3", "5x10", "8x2^10", "2.48\u00d710\u22125"),
    *("(", ")", "\\(", "($99.99)", "(1,234)", "(-2)", "(2 items)", "%", "\\%"),
    *(
        "$",
        "\u20ac",
        "\u00a3",
        "\u00a5",
        "\u20b9",
        "US-$5",
        "-$",
        "- $",
        "\u2212\u20ac",
        "-\u00a3",
        "\u0112$",  # its UTF-8 ends with 0x92, as U+2212's does
        "35\u20ac99",
        "10\u20ac 20\u20ac",
    ),
    *(". ", ", ", "$119. 95", "\uff11\uff12", "\u0661\u0662\u0663", "\u0966", "-", "\u2212", "+"),
    *(" ", "  ", "\t", "\n", ",", ".", "k", "M", "bn", "####", "answer is", "\\boxed{", "}"),
    *(" " * 9, " \t" * 6),  # more blanks after a token than the column reader looks through
    *("{,}", ",\\!", "1{,}234", "\ue000"),  # rows parse_general looks at first (its special_regex)
]
v3_texts = st.lists(
    st.one_of(
        st.sampled_from(_V3_PIECES),
        st.from_regex(r"[0-9]{1,4}([.,][0-9]{0,3})?", fullmatch=True),
        st.text(alphabet="0123456789 -/.,$()", max_size=4),
    ),
    max_size=10,
).map("".join)


def _plain(values: list[str | None], opts: Options) -> np.ndarray:
    parsed = [parse_number(v, opts) for v in values]
    return np.array([np.nan if v is None else v for v in parsed], dtype=float)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    values=st.lists(st.one_of(v3_texts, st.text(max_size=12), st.none()), max_size=20),
    data=st.data(),
)
def test_column_reader_equals_one_value_reader_with_every_option(values, data) -> None:
    for opts in (data.draw(v3_options), data.draw(v3_options)):
        got = parse_column(values, opts)
        assert np.array_equal(got, _plain(values, opts), equal_nan=True), (values, opts)


# Longer than the column reader's first look from the end (100 bytes), with characters of
# 2, 3 and 4 UTF-8 bytes where it cuts.
long_texts = st.builds(
    lambda a, pad, b: a + pad + b,
    v3_texts,
    st.text(alphabet=" xa.\u00e9\u20ac\u00bd\u0661\U0001d7d8", min_size=60, max_size=140),
    v3_texts,
)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(long_texts, st.none()), max_size=10), data=st.data())
def test_column_reader_equals_one_value_reader_on_long_texts(values, data) -> None:
    for opts in (data.draw(v3_options), data.draw(v3_options)):
        got = parse_column(values, opts)
        assert np.array_equal(got, _plain(values, opts), equal_nan=True), (values, opts)


@pytest.mark.parametrize(
    "before", ["-\u20ac", "\u2212", "\u00bd ", "\u0661", "\U0001d7d8", "1\u00a0"]
)
def test_the_last_number_near_where_the_column_reader_cuts_a_long_text(before: str) -> None:
    # Its first look from the end takes 100 bytes: a cut inside a character must not read it.
    texts = [f"1 a {before}5{'x' * pad}" for pad in range(90, 102)]
    for opts in (Options(pick="last"), Options(pick="answer", thousands="any")):
        for preset in ("none", "answers", "prose", "prices"):
            opts = Options.of(opts, preset=preset)
            got = parse_column(texts, opts)
            assert np.array_equal(got, _plain(texts, opts), equal_nan=True), (before, opts)


V3_ALL = Options(
    pick="answer",
    percent="fraction",
    scale="words",
    thousands="any",
    fractions="all",
    words="en",
    digits="any",
    scientific=True,
    ranges="mid",
    negative="parens",
    prices=True,
)
ADVERSARIAL_V3: dict[str, tuple[str, float | None]] = {
    "two hundred and, many times": ("two hundred and " * 20_000, 100.0),
    "1-2-3-...": ("-".join(["1", "2", "3"] * 10_000), 3.0),
    "vulgar fractions": ("\u00bd" * 30_000, 0.5),
    "1x10^1x10^...": ("1\u00d710^" * 50_000 + "1", 10.0),
    "parentheses": ("(" * 200_000 + "5", 5.0),
    "Arabic-Indic digits": ("\u0661\u0662\u0663" * 100_000, None),  # too large
    "5 to 5 to 5 ...": ("5 to " * 50_000 + "5", 5.0),
    "between between ...": ("between " * 50_000 + "4 and 6", 5.0),
}


@pytest.mark.parametrize("case", ADVERSARIAL_V3, ids=list(ADVERSARIAL_V3))
def test_adversarial_text_with_every_v3_reading(case: str) -> None:
    text, expected = ADVERSARIAL_V3[case]
    assert parse_number(text, V3_ALL) == expected
    got = parse_column([text, "1"], V3_ALL)
    assert (math.isnan(got[0]) if expected is None else got[0] == expected) and got[1] == 1.0


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.one_of(v3_texts, st.none()), max_size=15), opts=v3_options)
def test_several_numbers_equals_the_one_value_count_with_every_option(values, opts) -> None:
    from numdiff_component.reading import several_numbers
    from numdiff_component.reading.plain import count_tokens

    plain = [isinstance(v, str) and count_tokens(v, opts) == 2 for v in values]
    assert several_numbers(values, opts).tolist() == plain


_AFTER_FIRST = ["k", "%", "000", "\\,000", "'000", "1/2", "/2", "billion", "x", ""]
# Scale words and near misses by their first two letters (the column reader looks at those).
_AFTER_FIRST += ["meters", "Million", "mIllion", "mi", "tn", "TN", "Bn", "b", "t", "Thousand"]


@pytest.mark.parametrize("blanks", [0, 1, 2, 7, 8, 9, 20])
def test_column_reader_reads_any_run_of_blanks_after_the_first_token(blanks: int) -> None:
    # The column reader looks at most 8 blanks past the first token and hands longer runs on.
    texts = [
        f"{head}12{gap}{after} and 7"
        for head in ("", "about ", "\\frac ", "-$")
        for gap in (" " * blanks, "\t " * (blanks // 2))
        for after in _AFTER_FIRST
    ]
    for opts in (
        Options(scale="words", thousands="any", fractions=True, percent="fraction"),
        Options(**PRESETS["prose"]),
        Options(**{**PRESETS["answers"], "pick": "first"}),
    ):
        assert np.array_equal(parse_column(texts, opts), _plain(texts, opts), equal_nan=True)
