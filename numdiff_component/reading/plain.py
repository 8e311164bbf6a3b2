"""The one-value reader: SPEC §1 to §1.2 read plainly from the rules of this package.

At each position where a token can start, the token kinds are tried in the order of §1.2's
preamble (mixed number, ``\\frac``, ``A/B``, ``10^E``, vulgar fraction, decimal token with its
price or times-ten tail, number phrase); with ``ranges="mid"`` the token found is extended to
a range. Then its value: the number, its sign (§1), times the scale word, over 100 for a
percent, negated by parentheses (§1.2.6). Every step is anchored at a known position and
reads forward only what it consumes, plus a bounded look; a position where nothing reads
is passed once: linear time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.options import Options
from numdiff_component.reading import amounts, fractions, ranges, scientific
from numdiff_component.reading.grammar import (
    LATEX_COMMAS,
    decimal,
    digit_class,
    literal,
    negative_sign,
    plain_number,
    separators,
)
from numdiff_component.reading.marks import answer_bounds, percent_after, scale_after
from numdiff_component.reading.number_words import WORD_CHARS
from numdiff_component.reading.parens import enclosed
from numdiff_component.reading.prices import price_tail
from numdiff_component.reading.spans import (
    BOX,
    FIRST,
    FRACTION,
    LAST,
    MARKER,
    PRICE,
    SCIENTIFIC,
    WORDS,
)
from numdiff_component.reading.units import unit_after
from numdiff_component.reading.words import read_phrase


@dataclass(frozen=True)
class Token:
    """A token of a text: its number (signed already for a range), where it starts and ends,
    and where its scale word is looked for (the end of Y for a range); ``kind``: the rule of
    SPEC §1.4 that read it, ``None`` for a decimal token (then where it was found names it)."""

    number: float
    start: int
    end: int
    scale_at: int
    is_range: bool = False
    kind: str | None = None


@lru_cache(maxsize=64)
def _starts(
    decimal_comma: bool, digits: str, fractions_: bool | str, words: bool
) -> re.Pattern[str]:
    """Where a token may start: a digit, the point before a digit, ``\\`` of ``\\frac``, a vulgar
    fraction, the first letter of a word."""
    d = digit_class(Options(digits=digits))  # type: ignore[arg-type]
    point = literal(separators(decimal_comma)[1])
    starts = [d, rf"{point}{d}"]
    if fractions_:
        starts.append(fractions.FRAC)
    if fractions_ == "all":
        starts.append(f"[{fractions.VULGAR}]")
    if words:
        starts.append(rf"(?<![{WORD_CHARS}])[{WORD_CHARS}]")
    return re.compile("|".join(starts))


def _decimal_at(text: str, pos: int, opts: Options) -> tuple[float, int, str | None] | None:
    """The decimal token at ``pos`` (§1), with its price (§1.2.7) or times-ten tail (§1.2.4),
    and the rule of a tail (SPEC §1.4; ``None``: no tail)."""
    found = decimal(opts).match(text, pos)
    if not found:
        return None
    number = plain_number(found.group(), opts.decimal_comma)
    if found.group("exp") is None and found.group("exp2") is None:
        point = separators(opts.decimal_comma)[1]
        tail = price_tail(text, found.end(), number, point) if opts.prices else None
        kind = PRICE
        if tail is None and opts.scientific:
            tail = scientific.times_ten_tail(text, found.end(), number)
            tail = tail or scientific.power_tail(text, found.end(), number)
            kind = SCIENTIFIC
        if tail is None and opts.words == "all":
            tail = amounts.tail(
                text, found.end(), float(number), lambda at: _whole_at(text, at, opts), False
            )
            kind = WORDS
        if tail is not None:
            return *tail, kind
    return float(number), found.end(), None


def _whole_at(text: str, pos: int, opts: Options) -> tuple[float, int] | None:
    """A whole number at ``pos`` (v4's ``out of``, composite amounts): a decimal token without
    exponent worth a whole number, or a phrase worth one."""
    if pos >= len(text):
        return None
    found = decimal(opts).match(text, pos)
    if found:
        number = float(plain_number(found.group(), opts.decimal_comma))
        whole = number.is_integer() and found.group("exp") is None
        return (number, found.end()) if whole and found.group("exp2") is None else None
    if opts.words == "none" or not text[pos].isascii():
        return None
    phrase = read_phrase(text, pos, opts.digits == "any", opts.words == "all")
    return phrase if phrase is not None and phrase[0].is_integer() else None


def token_at(text: str, pos: int, opts: Options, words: bool = True) -> Token | None:
    """The token starting at ``pos``, kinds tried in the order of SPEC §1.2 (no range)."""
    found: tuple[float, int] | None = None
    kind: str | None = FRACTION
    # Each kind is tried only where its first character stands (a digit for mixed numbers, A/B
    # and "10", a backslash for \frac, a letter for phrases): the same tokens, fewer calls.
    if pos >= len(text):  # a range's Y looked for at the end of the text
        return None
    first = text[pos]
    digit = first.isdecimal()
    if digit and opts.fractions == "all":
        found = fractions.read_mixed(text, pos, opts)
    if found is None and opts.fractions:
        if first == "\\":
            found = fractions.read_frac(text, pos, opts)
        elif digit:
            found = fractions.read_slash(text, pos, opts)
    if found is None and opts.scientific and text.startswith(scientific.BASE, pos):
        found, kind = scientific.read_power(text, pos), SCIENTIFIC
    if found is None and opts.fractions == "all" and (digit or not first.isascii()):
        found, kind = fractions.read_vulgar(text, pos, opts), FRACTION
    if found is None and (digit or first in ".,"):
        decimal_token = _decimal_at(text, pos, opts)
        if decimal_token is not None:
            found, kind = decimal_token[:2], decimal_token[2]
    if found is None and words and opts.words != "none" and first.isascii() and not digit:
        kind = WORDS
        v4 = opts.words == "all"
        found = read_phrase(text, pos, opts.digits == "any", v4)
        if found is not None and v4:
            whole = lambda at: _whole_at(text, at, opts)  # noqa: E731
            found = amounts.tail(text, found[1], found[0], whole, True) or found
    return None if found is None else Token(found[0], pos, found[1], found[1], kind=kind)


def _range(text: str, x: Token, opts: Options, words: bool) -> Token | None:
    def read_y(text: str, pos: int) -> ranges.Read | None:
        y = token_at(text, pos, opts, words)
        return None if y is None else ranges.Read(y.number, y.start, y.end)

    signed = -x.number if negative_sign(text, x.start) else x.number
    found = ranges.extend(text, ranges.Read(signed, x.start, x.end), read_y, opts.digits == "any")
    if found is None:
        return None
    mid, y_end = found
    return Token(mid.value, mid.start, mid.end, y_end, is_range=True)


def tokens(text: str, opts: Options, words: bool = True) -> Iterator[Token]:
    """The tokens of ``text`` left to right without overlap."""
    starts = _starts(
        opts.decimal_comma, opts.digits, opts.fractions, words and opts.words != "none"
    )
    pos = 0
    while found := starts.search(text, pos):
        token = token_at(text, found.start(), opts, words)
        if token is None:
            pos = found.start() + 1
            continue
        if opts.ranges == "mid":
            token = _range(text, token, opts, words) or token
        yield token
        pos = token.end


def value(text: str, token: Token | None, opts: Options) -> float | None:
    """The value of a token of ``text``: number, sign, scale word, percent, parentheses."""
    return None if token is None else value_end(text, token, opts)[0]


def value_end(text: str, token: Token, opts: Options) -> tuple[float | None, int]:
    """`value`, and where its reading ends (after the scale word and percent: a unit's start)."""
    number = token.number
    if not token.is_range and negative_sign(text, token.start):
        number = -number
    elif opts.words == "all" and amounts.negative_word_before(text, token.start):
        number = -number  # v4: "minus five", "negative 504"
    end = token.scale_at
    if opts.scale == "words":
        factor, end = scale_after(text, end, opts)
        number = number * factor
    if opts.percent == "fraction" and (percent := percent_after(text, end)) is not None:
        number, end = number / 100, percent
    if opts.negative == "parens" and not token.is_range and enclosed(text, token.start, end):
        number = -number
    return (number if math.isfinite(number) else None), end


def latex_commas(text: str, opts: Options) -> str:
    if opts.thousands == "any":
        for latex in LATEX_COMMAS:
            text = text.replace(latex, ",")
    return text


def _last(items: Iterator[Token]) -> Token | None:
    last = None
    for last in items:  # noqa: B007
        pass
    return last


def chosen(text: str, options: Options) -> tuple[str, Token | None]:
    """The text read (the answer span with ``pick="answer"``) and its token ``pick`` chooses."""
    return chosen_at(latex_commas(text, options), options)[:2]


def chosen_at(text: str, options: Options) -> tuple[str, Token | None, int, str]:
    """`chosen` of a text whose LaTeX commas are read already, with where the text read starts
    in ``text`` and where the token was found (SPEC §1.4: first, last, marker, box)."""
    if options.pick == "answer":
        bounds = answer_bounds(text, options)
        if bounds is not None:  # read as if the span were the whole text
            start, end, box = bounds
            span = text[start:end]
            return span, next(tokens(span, options), None), start, BOX if box else MARKER
    if options.pick == "first":
        return text, next(tokens(text, options), None), 0, FIRST
    if options.pick == "answer" and options.words != "none":
        # No marker: phrases are tokens only in a text with no other token (§1.2.1).
        last = _last(tokens(text, options, words=False))
        if last is not None:
            return text, last, 0, LAST
    return text, _last(tokens(text, options)), 0, LAST


def parse_text(text: str, options: Options) -> float | None:
    """The number in ``text`` by SPEC §1 to §1.2, or ``None``."""
    return value(*chosen(text, options), options)


def quantity_text(text: str, options: Options) -> tuple[float | None, str | None]:
    """The number in ``text`` and the text of its unit (SPEC §1.3; ``None``: no unit)."""
    text, token = chosen(text, options)
    if token is None:
        return None, None
    number, end = value_end(text, token, options)
    return number, None if number is None else unit_after(text, end, token.start)


def count_tokens(text: str, opts: Options, at_most: int = 2) -> int:
    """How many tokens ``text`` holds (counting stops at ``at_most``)."""
    return len(list(islice(tokens(latex_commas(text, opts), opts), at_most)))


def is_missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def parse_number(value: Any, options: Options | None = None, **overrides: Any) -> float | None:
    """Read the number in ``value`` (SPEC §1); ``None`` when it has none.

    ``None``, NaN and booleans have no number; ints, floats, Decimals and numpy numbers give
    their value when finite; anything else is read as text, its first (or, with
    ``pick="last"``, last) numeric token taken, with its sign when the sign stands alone.

    >>> parse_number("The answer is $1,234.50.")
    1234.5
    >>> parse_number("x=-3"), parse_number("COVID-19"), parse_number("twelve")
    (-3.0, 19.0, None)
    >>> parse_number("Loss: -$1,234.50"), parse_number("US-$5")
    (-1234.5, 5.0)
    >>> parse_number("3,14", decimal_comma=True), parse_number("50 %", percent="fraction")
    (3.14, 0.5)
    >>> parse_number("Between 3 and 4, final answer 4", pick="last")
    4.0
    >>> parse_number("The answer is twenty-one.", pick="answer", words="en")
    21.0
    >>> parse_number("7 to 10 people", ranges="mid"), parse_number("($99.99)", negative="parens")
    (8.5, -99.99)
    """
    opts = Options.of(options, **overrides)
    if isinstance(value, (bool, np.bool_)) or is_missing(value):
        return None
    if isinstance(value, (int, float, Decimal, np.integer, np.floating)):
        try:
            return _finite_or_none(float(value))
        except (OverflowError, ValueError):  # a huge int; a signalling Decimal NaN
            return None
    return parse_text(str(value), opts)
