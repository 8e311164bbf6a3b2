"""SPEC §1.4 for one value: the number, where it was read and by which rule (`read_number`).

The one-value reader's token (`plain.chosen_at`) and its reading (`plain.value_end`), with the
span widened to what the reading counts: the minus sign and the currency symbol before it, the
sign word, ``between`` before a range, the parentheses that negate it. LaTeX's commas, which
the reader reads as ``,`` (§1.1), are mapped back to where they stand in the text.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import numpy as np

from numdiff_component.options import Options
from numdiff_component.reading import amounts
from numdiff_component.reading.grammar import BLANK, LATEX_COMMAS, negative_sign, sign_index
from numdiff_component.reading.parens import enclosure
from numdiff_component.reading.plain import Token, chosen_at, is_missing, value_end
from numdiff_component.reading.ranges import between_start
from numdiff_component.reading.spans import NOTHING, RANGE, VALUE, Reading


def commas_read(text: str, opts: Options) -> tuple[str, list[int] | None]:
    """``text`` with LaTeX's commas read as ``,`` (as `plain.latex_commas`), and where each of
    its characters (and its end) stands in ``text`` (``None``: nothing was replaced)."""
    if opts.thousands != "any" or not any(latex in text for latex in LATEX_COMMAS):
        return text, None
    index = list(range(len(text) + 1))
    for latex in LATEX_COMMAS:
        parts = text.split(latex)
        kept: list[int] = []
        at = 0
        for k, part in enumerate(parts):
            kept += index[at : at + len(part)]
            at += len(part)
            if k < len(parts) - 1:
                kept.append(index[at])
                at += len(latex)
        index = [*kept, index[at]]
        text = ",".join(parts)
    return text, index


def _bounds(text: str, token: Token, end: int, opts: Options) -> tuple[int, int]:
    """Where the reading of ``token`` starts and ends in ``text`` (SPEC §1.4)."""
    start, end = token.start, max(end, token.end)
    signed = negative_sign(text, start)
    if signed:  # X's sign, for a range
        start = sign_index(text, start) or 0
    words = (token.is_range or not signed) and opts.words == "all"
    if words and amounts.negative_word_before(text, token.start):  # as `plain.value_end` does
        start = len(text[: token.start].rstrip(BLANK))
        while start > 0 and text[start - 1].isalpha():
            start -= 1
    if token.is_range and (between := between_start(text, start)) is not None:
        start = between
    elif not token.is_range and opts.negative == "parens":
        parens = enclosure(text, token.start, end)
        if parens is not None:
            start, end = min(start, parens[0]), parens[1]
    return start, end


def number_text(value: Any) -> str:
    """A number that is no text, written as the span of rule ``value`` counts it (SPEC §1.4):
    ``str`` of a `Decimal`, the digits of a whole number below 2**53, else ``repr`` of the
    float; so a number gives one span whatever type an engine gives it (``5``, ``5.0``)."""
    if isinstance(value, Decimal):
        return str(value)
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def read_text(text: str, opts: Options) -> Reading:
    """The number in ``text``, its span and rule (SPEC §1.4); `NOTHING` when none."""
    read, index = commas_read(text, opts)
    span, token, offset, where = chosen_at(read, opts)
    if token is None:
        return NOTHING
    number, end = value_end(span, token, opts)
    if number is None:
        return NOTHING
    start, end = _bounds(span, token, end, opts)
    start, end = start + offset, end + offset
    if index is not None:
        start, end = index[start], index[end]
    rule = RANGE if token.is_range else token.kind or where
    return Reading(number, start, end, rule)


def read_number(value: Any, options: Options | None = None, **overrides: Any) -> Reading:
    """Read the number in ``value`` (SPEC §1), where it was read and by which rule (§1.4).

    ``value``, ``start``, ``end`` and ``rule``: the number `parse_number` reads, the offsets of
    what it read in the text (``text[start:end]``, code points of ``str(value)``) and the rule
    of SPEC §1.4 that read it; all ``None`` when there is no number.

    >>> read_number("The answer is -$1,234.50 today", pick="answer")
    Reading(value=-1234.5, start=14, end=24, rule='marker')
    >>> text = "Between 3 and 4: \\\\boxed{\\\\frac{1}{2}}"
    >>> r = read_number(text, pick="answer", fractions=True)
    >>> r.value, text[r.start : r.end], r.rule
    (0.5, '\\\\frac{1}{2}', 'fraction')
    >>> read_number("n/a")
    Reading(value=None, start=None, end=None, rule=None)
    >>> read_number(7)
    Reading(value=7.0, start=0, end=1, rule='value')
    """
    opts = Options.of(options, **overrides)
    if isinstance(value, (bool, np.bool_)) or is_missing(value):
        return NOTHING
    if isinstance(value, (int, float, Decimal, np.integer, np.floating)):
        try:
            number = float(value)
        except (OverflowError, ValueError):  # a huge int; a signalling Decimal NaN
            return NOTHING
        if not math.isfinite(number):
            return NOTHING
        return Reading(number, 0, len(number_text(value)), VALUE)
    return read_text(str(value), opts)
