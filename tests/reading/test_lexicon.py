"""The tables of the reading rules (SPEC §1, §1.1, v4 `markers` and `scale_words`): each derived
form equals its derivation, both readers read every entry alike, and an entry added to a table
(by an option, or by editing the table in a copy of the source) reaches both readers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numdiff_component
from numdiff_component import OptionError, Options, parse_column, parse_number
from numdiff_component.reading import fractions, grammar, marks, signs, tiers, tiers_readings
from numdiff_component.reading.buffers import scale_word_at
from tests.fixtures.commands import invoke, one_line_error
from tests.fixtures.run import EXAMPLES

READING = Path(numdiff_component.__file__).parent / "reading"


def _plain(values: list[str | None], options: Options) -> np.ndarray:
    parsed = [parse_number(v, options) for v in values]
    return np.array([np.nan if v is None else v for v in parsed], dtype=float)


def _same(values: list[str | None], options: Options) -> bool:
    return bool(np.array_equal(parse_column(values, options), _plain(values, options), True))


# --- SPEC v4: markers and scale_words, as written there -------------------------------------------

MARKERS = ["Result", "Final answer", "Réponse", "Antwort", "答案"]
LAKH = {"lakh": 1e5, "crore": 1e7}
V4_EXAMPLES = [
    ("Result: 42", {"markers": MARKERS}, 42.0),
    ("The final answer is 7.", {"markers": MARKERS}, 7.0),
    ("Réponse : 12", {"markers": MARKERS}, 12.0),
    ("ANTWORT=3", {"markers": MARKERS}, 3.0),
    ("RÉPONSE: 8", {"markers": MARKERS}, 8.0),
    ("答案\uff1a12", {"markers": MARKERS}, 12.0),
    ("the answer\uff1a5 or 6", {}, 5.0),  # the full-width colon after the built-in marker too
    ("Result: 3. Answer: 4", {"markers": MARKERS}, 4.0),
    ("Results: 5, 6", {"markers": MARKERS}, 6.0),
    ("Result 5 or 9", {"markers": MARKERS}, 9.0),
    ("Réponse\u00a0: 12 ou 13", {"markers": MARKERS}, 13.0),
    ("5 lakh", {"scale_words": LAKH, "pick": "first"}, 5e5),
    ("₹1.5 Crore", {"scale_words": LAKH, "pick": "first"}, 1.5e7),
    ("-2 LAKH", {"scale_words": LAKH, "pick": "first"}, -2e5),
    ("3 lakh%", {"scale_words": LAKH, "pick": "first", "percent": "fraction"}, 3000.0),
    ("5 lakhs", {"scale_words": LAKH, "pick": "first"}, 5.0),
    ("5lakh", {"scale_words": LAKH, "pick": "first"}, 5e5),
    ("lakh 5", {"scale_words": LAKH, "pick": "first"}, 5.0),
    ("5 Mn", {"scale_words": {"mn": 1e6}, "pick": "first"}, 5e6),
    ("five lakh", {"scale_words": LAKH, "words": "en", "pick": "first"}, 5e5),
    ("five lakh three", {"scale_words": LAKH, "words": "en", "pick": "first"}, 5e5),
]


@pytest.mark.parametrize(("text", "given", "expected"), V4_EXAMPLES)
def test_spec_v4_examples_in_both_readers(text: str, given: dict, expected: float | None) -> None:
    options = Options(**{"pick": "answer", "scale": "words", **given})
    assert parse_number(text, options) == expected
    assert _same([text], options)


_FACTOR = "scale_words: the factor of 'lakh' must be a finite number > 0"
BAD = [
    ({"markers": [""]}, "markers: an empty marker in ['']"),
    ({"markers": "Result,,x"}, "markers: an empty marker in 'Result,,x'"),
    ({"markers": ["Result:"]}, "markers: 'Result:' must be letters, words separated by one space"),
    (
        {"markers": ["Final  answer"]},
        "markers: 'Final  answer' must be letters, words separated by one space",
    ),
    ({"markers": ["ANSWER"]}, "markers: 'ANSWER' is a built-in answer marker"),
    ({"scale_words": {"lakh": 0}}, f"{_FACTOR}, got 0"),
    ({"scale_words": {"lakh": float("inf")}}, f"{_FACTOR}, got inf"),
    ({"scale_words": "lakh=x"}, f"{_FACTOR}, got 'x'"),
    ({"scale_words": {"lakh": True}}, f"{_FACTOR}, got True"),
    ({"scale_words": {"Billion": 2}}, "scale_words: 'Billion' is a built-in scale word"),
    ({"scale_words": {"k": 2}}, "scale_words: 'k' is a built-in scale word"),
    ({"scale_words": "lakh=1,LAKH=2"}, "scale_words: 'LAKH' is given twice"),
    ({"scale_words": {"lä": 2}}, "scale_words: 'lä' must be ASCII letters (in {'lä': 2})"),
]


@pytest.mark.parametrize(("given", "message"), BAD)
def test_bad_markers_and_scale_words_are_one_line_errors(given: dict, message: str) -> None:
    with pytest.raises(OptionError) as error:
        Options(**given)
    assert str(error.value) == message


@pytest.mark.parametrize(
    "args",
    [["--marker", ""], ["--marker", "a=b"], ["--scale-word", "lakh=-1"], ["--scale-word", "M=2"]],
)
def test_bad_list_options_exit_2_with_one_line(args: list[str], tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("output,expected\n1,1\n")
    one_line_error(invoke("score", str(table), "--marker", "Result", *args), 2, "error: ")


def test_list_options_are_hashable_and_round_trip_as_text() -> None:
    options = Options(markers=["Result", "答案"], scale_words={"lakh": 1e5})
    assert hash(options) == hash(Options(markers="Result,答案", scale_words="lakh=1e5"))
    assert str(options.markers) == "Result,答案"
    assert str(options.scale_words) == "lakh=100000.0"
    assert Options(**{k: str(v) for k, v in options.given().items()}) == options
    assert Options(**options.as_dict()) == options


# --- readers equal under random markers and scale words -------------------------------------------

_BUILTIN_SCALES = {w.lower() for w in (*marks.SCALE_LETTERS, *marks.SCALE_WORDS)}
_words = st.from_regex(r"[A-Za-z]{1,6}", fullmatch=True).filter(
    lambda w: w.lower() not in _BUILTIN_SCALES
)
_markers = st.lists(
    st.one_of(
        st.sampled_from([*MARKERS, "res", "Final", "Ré", "é"]),
        st.from_regex(r"[A-Za-zéÉ答]{1,5}( [A-Za-z]{1,4})?", fullmatch=True),
    ).filter(lambda m: m.lower() not in marks.ANSWER_WORDS),
    min_size=1,
    max_size=3,
)
_scale_words = st.dictionaries(
    _words, st.sampled_from([1e5, 1e7, 2.5, 1e-3, 1e300]), min_size=1, max_size=3
).filter(lambda d: len({w.lower() for w in d}) == len(d))


def _variants(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word, word.lower(), word.upper(), word[:-1], word + "s"])


def _pieces(options: Options) -> st.SearchStrategy[str]:
    """Pieces of text drawn from the tables the readers use, and the options' extra words."""
    table = [
        *marks.BOXES,
        *marks.HASHES,
        *marks.ANSWER_WORDS,
        *marks.COLONS,
        *marks.IS_COLONS,
        marks.IS,
        *marks.SCALE_LETTERS,
        *marks.SCALE_WORDS,
        marks.PERCENT_SIGN,
        marks.LATEX_ESCAPE,
        *grammar.EXTRA_SEPARATORS,
        *grammar.LATEX_COMMAS,
        *grammar.CURRENCY,
        *grammar.SIGNS,
        *grammar.BLANK,
        *fractions.FRAC_COMMANDS,
        fractions.SLASH,
        *"{}.,:=\n",
    ]
    extra = [*options.markers, *(w for w, _ in options.scale_words)]
    return st.one_of(
        st.sampled_from(table),
        st.sampled_from(extra).flatmap(_variants) if extra else st.nothing(),
        st.builds(  # a marker and what follows it; a number and a scale word
            "".join,
            st.tuples(
                st.sampled_from(extra).flatmap(_variants),
                st.sampled_from(["", " ", *marks.COLONS, f" {marks.IS} "]),
                st.from_regex(r" ?[0-9]{1,3}", fullmatch=True),
            ),
        )
        if extra
        else st.nothing(),
        st.from_regex(r"[0-9]{1,4}([.,][0-9]{0,3})?", fullmatch=True),
        st.text(alphabet="0123456789 ax-", max_size=3),
    )


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[str | None], Options]:
    options = Options(
        preset=draw(st.sampled_from(["none", "none", "answers", "prose"])),
        pick=draw(st.sampled_from(["answer", "answer", "first", "last"])),
        scale="words",
        thousands=draw(st.sampled_from(["comma", "any"])),
        percent=draw(st.sampled_from(["keep", "fraction"])),
        markers=draw(_markers),
        scale_words=draw(_scale_words),
    )
    text = st.lists(_pieces(options), max_size=10).map("".join)
    return draw(st.lists(st.one_of(text, st.none()), min_size=1, max_size=12)), options


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case())
def test_readers_equal_under_random_markers_and_scale_words(case) -> None:
    values, options = case
    assert _same(values, options), options


# --- each derived form equals its derivation ------------------------------------------------------


def _re2_matches(pattern: str, texts: list[str]) -> list[bool]:
    return pc.match_substring_regex(pa.array(texts, pa.string()), pattern).to_pylist()


@settings(max_examples=EXAMPLES, deadline=None)
@given(markers=_markers, data=st.data())
def test_marker_forms_find_the_same_markers(markers: list[str], data) -> None:
    """RE2's test finds a marker where `re` finds one, and the reversed pattern finds the span
    that the plain reader's pattern ends, for texts made of the table's pieces."""
    options = Options(pick="answer", markers=markers)
    texts = data.draw(st.lists(st.lists(_pieces(options), max_size=8).map("".join), max_size=8))
    found = [marks.markers_regex(options).search(t) is not None for t in texts]
    assert _re2_matches(marks.any_marker_regex(options), texts) == found
    reversed_texts = pa.array([t[::-1] for t in texts], pa.string())
    parts = pc.extract_regex(reversed_texts, marks.reversed_answer_regex(options))
    for text, part in zip(texts, parts.to_pylist(), strict=True):
        span = marks.answer_span(text, options)
        assert (part is None) == (span is None), text
        if part is not None and not part["box"]:
            lead = grammar.BLANK + marks.IS_COLONS  # taken with the marker or not: read the same
            assert (part["r"] + part["c"])[::-1].lstrip(lead) == span.lstrip(lead), text


def test_the_scale_forms_hold_every_word_of_the_table() -> None:
    options = Options(scale="words", scale_words={"lakh": 1e5})
    words = [*marks.SCALE_LETTERS, *marks.SCALE_WORDS, "lakh"]
    table = marks.scale_table(options.scale_words)
    firsts, one, pairs = tiers.scale_bytes(options)
    for word in words:
        spellings = [word] if word in marks.SCALE_LETTERS else [word, word.upper(), word.title()]
        for spelling in spellings:
            assert re.fullmatch(marks.scale_regex(options), spelling), spelling
            assert _re2_matches(f"^(?:{marks.scale_regex(options)})$", [spelling]) == [True]
            assert spelling[0] in marks.scale_first(options)
            assert table[marks.scale_key(spelling)] == table[marks.scale_key(word)]
            text = pa.array([f"5 {spelling}"], pa.string())
            assert firsts[spelling.encode()[0]]
            assert scale_word_at(text, np.array([2]), one, pairs).tolist() == [True]


def test_the_byte_tables_are_their_tables_bytes() -> None:
    for separator in grammar.EXTRA_SEPARATORS:
        if separator not in grammar.BLANK:
            assert tiers.NEXT_RIGHT[separator.encode()[0]], separator
    assert tiers.NEXT_RIGHT[marks.LATEX_ESCAPE.encode()[0]]
    assert tiers.NEXT_RIGHT[fractions.SLASH.encode()[0]]
    assert tiers.PERCENT_BYTE[marks.PERCENT_SIGN.encode()[0]]
    assert sorted(np.flatnonzero(signs.MINUS_LAST)) == sorted(m.encode()[-1] for m in grammar.MINUS)
    assert sorted(np.flatnonzero(signs.CURRENCY_LAST)) == sorted(
        {c.encode()[-1] for c in grammar.CURRENCY}
    )
    # The run around the last token holds every character a token and its sign can hold.
    last = tiers_readings.reversed_last_regex(Options(thousands="any", fractions=True))
    for char in "".join({*grammar.EXTRA_SEPARATORS, *grammar.CURRENCY, *grammar.SIGNS}):
        found = re.match(last, f"1{char}\n")
        assert found and found.group("ctx") == "\n", char


_SPECIAL = [Options(thousands="any", fractions=True), Options(fractions=True), Options()]
_SPECIAL_PARTS = [part for o in _SPECIAL for part in tiers_readings.special_parts(o)]


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), part=st.sampled_from(_SPECIAL_PARTS))
def test_each_special_match_holds_its_byte(data, part: tuple[str, bytes]) -> None:
    pattern, byte = part
    assert byte in data.draw(st.from_regex(pattern)).encode()
    assert all(
        byte in tiers_readings.special_bytes(o)
        for o in _SPECIAL
        if part in tiers_readings.special_parts(o)
    )


_SEPARATORS = "|".join(map(re.escape, [",", ".", *grammar.EXTRA_SEPARATORS]))
_TOKEN = rf"[0-9]{{1,4}}(({_SEPARATORS})[0-9]{{3}}){{0,2}}([.,][0-9]*)?([eE][-+]?[0-9]{{1,2}})?"


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    token=st.from_regex(_TOKEN, fullmatch=True),
    decimal_comma=st.booleans(),
)
def test_token_forms_read_the_same_token(token: str, decimal_comma: bool) -> None:
    """The `re` form and the RE2 form of §1's token take the same leading token."""
    options = Options(thousands="any", decimal_comma=decimal_comma)
    plain = re.match(grammar.token_regex(options, form="re"), token)
    re2 = pc.extract_regex(
        pa.array([token]), f"^(?P<t>{grammar.token_regex(options)})(?:[^0-9]|$)"
    ).to_pylist()[0]
    assert (plain.group() if plain else None) == (re2["t"] if re2 else None)


def test_no_pattern_text_in_reading_is_written_reversed() -> None:
    """A literal of the tables reversed appears nowhere in the source: reversed forms are made
    by `grammar.reversed_literal`."""
    literals = [
        *marks.BOXES,
        *marks.ANSWER_WORDS,
        *marks.SCALE_WORDS,
        *fractions.FRAC_COMMANDS,
        *grammar.LATEX_COMMAS,
        "between",
    ]
    forms = {lit[::-1] for lit in literals if len(lit) > 2 and lit[::-1] != lit}
    forms |= {grammar.literal(f) for f in forms} | {grammar.any_case(f) for f in forms}
    for path in READING.glob("*.py"):
        source = path.read_text()
        for form in forms:
            assert form not in source, (path.name, form)


# --- an entry added to each table, in a copy of the source ----------------------------------------

# (module, the table's opening text, what is put right after it)
EDITS = [
    ("marks.py", "SCALE_WORDS = {", '"lakh": 1e5, '),
    ("marks.py", "ANSWER_WORDS = (", '"result", '),
    ("grammar.py", "EXTRA_SEPARATORS = (", '"\\u066c", '),
    ("grammar.py", 'CURRENCY = "', "\\u20a9"),
    ("number_words.py", "FRACTION_WORDS = {", '"sixteenth": 16, '),
    ("number_words.py", "MAGNITUDES = {", '"myriad": 10**4, '),
]
CHECK = """
    import itertools, sys
    import numpy as np
    import numdiff_component
    from numdiff_component import Options, parse_column, parse_number
    assert numdiff_component.__file__.startswith(sys.argv[1]), numdiff_component.__file__
    cases = [
        ("5 lakh", {"scale": "words"}, 5e5),
        ("5 lakh", {"preset": "prose"}, 5e5),
        ("1\\u066c234", {"thousands": "any"}, 1234.0),
        ("1\\u066c234", {"thousands": "any", "pick": "last"}, 1234.0),
        ("-\\u20a95", {}, -5.0),
        ("Result: 7 then 9", {"pick": "answer"}, 7.0),
        ("RESULT is 7 then 9", {"preset": "answers"}, 7.0),
        ("two sixteenths", {"words": "en"}, 0.125),
        ("five myriad", {"words": "en"}, 5e4),
    ]
    texts = [t for t, _, _ in cases] + [
        "x 1\\u066c234\\u066c567 y", "Result: -\\u20a91\\u066c234 lakh", "3 lakh and 4",
        "answer: 2; result = 5 lakh", "\\\\boxed{7} Result: 8", "a 2 lakhs 9", "-\\u20a9 5",
        "one sixteenth of 32", "\\u20a9-3", "12\\u066c34", "result 5", None,
    ]
    for text, given, expected in cases:
        options = Options(**given)
        assert parse_number(text, options) == expected, (text, given)
    names = ["pick", "thousands", "scale", "words", "percent"]
    values = [
        ["first", "last", "answer"], ["comma", "any"], ["none", "words"], ["none", "en"],
        ["keep", "fraction"],
    ]
    for combination in itertools.product(["none", "answers", "prose", "prices"], *values):
        options = Options(preset=combination[0], **dict(zip(names, combination[1:])))
        plain = [parse_number(t, options) for t in texts]
        plain = np.array([np.nan if v is None else v for v in plain], dtype=float)
        assert np.array_equal(parse_column(texts, options), plain, equal_nan=True), options
    print("ok")
"""


def test_an_entry_added_to_every_table_reaches_both_readers(tmp_path: Path) -> None:
    """A copy of the package with one entry added to each table's literal: both readers read
    texts holding each entry as the entry means, and alike under every option set."""
    copy = tmp_path / "numdiff_component"
    shutil.copytree(Path(numdiff_component.__file__).parent, copy)
    for module, opening, entry in EDITS:
        path = copy / "reading" / module
        source = path.read_text()
        assert source.count(opening) == 1, (module, opening)  # the table is where it was
        path.write_text(source.replace(opening, opening + entry))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECK), str(copy)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
