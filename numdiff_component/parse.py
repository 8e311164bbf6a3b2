"""Reading a number from a value (SPEC §1): one value at a time, and a whole column at a time.

The token grammar, with ``G`` the grouping separator and ``P`` the decimal point (``,`` and ``.``;
swapped by ``decimal_comma``)::

    token    = (D{1,3} (G DDD)+ not-followed-by-digit | D+) (P D*)? exponent?
             | P D+ exponent?
    exponent = [eE] [+-\N{MINUS SIGN}]? D+

With the readings of SPEC §1.1, ``G`` may also be one of `_EXTRA_SEPARATORS`, and a token may
be ``\frac{N}{M}`` or ``A/B``, followed by a scale word; ``pick="answer"`` reads the span after
the last answer marker.

`parse_number` reads one value with Python's ``re`` (the plain path, easy to check against the
spec). `parse_column` reads a whole column with pyarrow compute (RE2, linear time) and numpy, in
tiers, each exact for the rows it keeps and handing the others on: Arrow's float cast when the
whole column is plain numbers; else one cheap anchored pattern for the token at the first digit;
else the full grammar. With §1.1's readings, the last marker and the last token are looked for
from the end of the text (`_parse_general`). Differential property tests prove the two paths
equal. `several_numbers` tells which texts hold more than one token.
"""

from __future__ import annotations

import math
import re
from collections import deque
from decimal import Decimal
from functools import lru_cache
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options

SIGNS = "+-\u2212"
MINUS = "-\u2212"
_MARK = "\ue000"  # private-use marker put before each token to find the last one

# SPEC §1.1: the extra grouping separators of thousands="any" (one per token), the scale words.
_EXTRA_SEPARATORS = (" ", "\u00a0", "\u202f", "\u2009", "'", "\u2019", "\\,")
_SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_SCALES |= {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
_SCALES |= {"tn": 1e12}


def _any_case(word: str) -> str:
    """An ASCII any-case pattern (``[aA][nN]...``): ``(?i)`` also folds the Kelvin sign, long s."""
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


# Longer words first; single letters case-sensitive. Same text for `re` and RE2.
_SCALE_WORDS = "|".join(
    [_any_case(w) for w in ("thousand", "million", "billion", "trillion", "bn", "tn")]
    + ["k", "K", "M", "B", "T"]
)
# The letters a scale word can start with (a cheap first test, `_lead_regex`).
_SCALE_FIRST = "".join(sorted({w[0] for w in _SCALES} | {w[0].upper() for w in _SCALES}))


def _separators(decimal_comma: bool) -> tuple[str, str]:
    return (".", ",") if decimal_comma else (",", ".")


def _group_separators(opts: Options) -> tuple[str, ...]:
    group = _separators(opts.decimal_comma)[0]
    return (group, *_EXTRA_SEPARATORS) if opts.thousands == "any" else (group,)


def _literal(text: str) -> str:
    """``text`` as a pattern both `re` and RE2 read (RE2 rejects ``re.escape``'s ``\\ ``)."""
    return "".join(f"\\{c}" if c in ".\\{}" else c for c in text)


def _token_parts(decimal_comma: bool, opts: Options | None = None) -> tuple[str, str, str, str]:
    """``grouped`` (without its not-followed-by-digit rule), ``fraction``, ``exponent``, point."""
    seps = _group_separators(opts) if opts is not None else _separators(decimal_comma)[:1]
    point = _literal(_separators(decimal_comma)[1])
    runs = "|".join(f"(?:{_literal(sep)}[0-9]{{3}})+" for sep in seps)  # one separator per token
    grouped = rf"[0-9]{{1,3}}(?:{runs})"
    fraction = rf"{point}[0-9]*"
    exponent = "[eE][+\\-\u2212]?[0-9]+"  # a real U+2212: RE2 reads no \u escapes
    return grouped, fraction, exponent, point


def _frac_regex(decimal_comma: bool) -> str:
    r"""``\frac{N}{M}`` (and ``\dfrac``, ``\tfrac``): groups ``fn``, ``fm``; M is not zero.

    ``0*[1-9]`` finds M's first non-zero digit without ambiguity (no backtracking blow-up).
    """
    point = _literal(_separators(decimal_comma)[1])
    number = rf"[0-9]+(?:{point}[0-9]*)?"
    nonzero = rf"0*[1-9][0-9]*(?:{point}[0-9]*)?|0+{point}0*[1-9][0-9]*"
    return rf"\\[dt]?frac\{{[ \t]*(?P<fn>{number})[ \t]*\}}\{{[ \t]*(?P<fm>{nonzero})[ \t]*\}}"


# --- the plain path -------------------------------------------------------------------------


def _python_token(opts: Options) -> re.Pattern[str]:
    return _python_token_for(opts.decimal_comma, opts.thousands, opts.fractions)


@lru_cache(maxsize=8)
def _python_token_for(decimal_comma: bool, thousands: str, fractions: bool) -> re.Pattern[str]:
    """The token of SPEC §1 (and §1.1's grouping and fractions) as a Python pattern."""
    opts = Options(decimal_comma=decimal_comma, thousands=thousands, fractions=fractions)  # type: ignore[arg-type]
    grouped, fraction, exponent, point = _token_parts(opts.decimal_comma, opts)
    decimal = (
        rf"(?:{grouped}(?![0-9])|[0-9]+)(?:{fraction})?(?:{exponent})?"
        rf"|{point}[0-9]+(?:{exponent})?"
    )
    if not opts.fractions:
        return re.compile(decimal)
    # Tried first at each position: \frac{N}{M}, then A/B (B not zero; dates are no fraction).
    slash = r"(?<![0-9/])(?P<sa>[0-9]+)/(?P<sb>0*[1-9][0-9]*)(?![0-9]|/[0-9])"
    return re.compile(rf"{_frac_regex(opts.decimal_comma)}|{slash}|{decimal}")


_PERCENT_AFTER = re.compile(r"[ \t]*\\?%")
_SCALE_AFTER = re.compile(rf"[ \t]*({_SCALE_WORDS})")
_LATEX_COMMAS = ("{,}", ",\\!")  # read as "," before anything else with thousands="any"

# An answer marker (SPEC §1.1); the last one found left to right decides.
_ANSWER = _any_case("answer")
_MARKERS = re.compile(
    rf"\\boxed\{{|\\fbox\{{|####"
    rf"|(?<![A-Za-z]){_ANSWER}[ \t]*(?::|=|{_any_case('is')}(?![A-Za-z])(?:[ \t]*:)?)"
)
_BRACE = re.compile(r"[{}]")


def _answer_span(text: str) -> str | None:
    """The text after the last answer marker (to its closing brace after a box), or ``None``."""
    last = deque(_MARKERS.finditer(text), maxlen=1)
    if not last:
        return None
    start = last[0].end()
    if not last[0].group().startswith("\\"):
        return text[start:]
    depth = 1  # a counter scan over the braces only: linear, whatever the nesting
    for brace in _BRACE.finditer(text, start):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return text[start : brace.start()]
    return text[start:]  # unclosed: to the end


def _token_value(token: str, decimal_comma: bool) -> float:
    group, point = _separators(decimal_comma)
    token = token.replace("\\,", "")  # a LaTeX thin-space separator, before the comma goes
    for separator in (group, *_EXTRA_SEPARATORS[:-1]):
        token = token.replace(separator, "")
    return float(token.replace(point, ".").replace("\u2212", "-"))


def _number(match: re.Match[str], decimal_comma: bool) -> float:
    """The number of a token: a fraction N/M, A/B, or a grouped decimal."""
    if match.lastgroup in ("fn", "fm"):
        numerator, denominator = match.group("fn", "fm")
        return _token_value(numerator, decimal_comma) / _token_value(denominator, decimal_comma)
    if match.lastgroup in ("sa", "sb"):
        return float(match.group("sa")) / float(match.group("sb"))
    return _token_value(match.group(), decimal_comma)


def _sign_belongs(text: str, start: int) -> bool:
    """The character before the token is a sign at the start of the text or after a non-alnum."""
    return start >= 1 and text[start - 1] in SIGNS and (start == 1 or not text[start - 2].isalnum())


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _value(text: str, match: re.Match[str] | None, options: Options) -> float | None:
    """The value of a token of ``text``: its number, sign, scale word, percent (SPEC §1.1)."""
    if match is None:
        return None
    value = _number(match, options.decimal_comma)
    if _sign_belongs(text, match.start()) and text[match.start() - 1] in MINUS:
        value = -value
    end = match.end()
    if options.scale == "words":
        word = _SCALE_AFTER.match(text, end)
        if word and not text[word.end() : word.end() + 1].isalnum():
            value = value * _SCALES[word[1] if len(word[1]) == 1 else word[1].lower()]
            end = word.end()
    if options.percent == "fraction" and _PERCENT_AFTER.match(text, end):
        value = value / 100
    return _finite_or_none(value)


def parse_text(text: str, options: Options) -> float | None:
    """The number in ``text`` by the grammar above, or ``None``."""
    if options.thousands == "any":
        for latex in _LATEX_COMMAS:
            text = text.replace(latex, ",")
    token = _python_token(options)
    if options.pick == "answer":
        span = _answer_span(text)
        if span is not None:  # read as if the span were the whole text
            return _value(span, token.search(span), options)
    if options.pick == "first":
        return _value(text, token.search(text), options)
    last = deque(token.finditer(text), maxlen=1)  # "last", and "answer" with no marker
    return _value(text, last[0] if last else None, options)


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)


def parse_number(value: Any, options: Options | None = None, **overrides: Any) -> float | None:
    """Read the number in ``value`` (SPEC §1); ``None`` when it has none.

    ``None``, NaN and booleans have no number; ints, floats, Decimals and numpy numbers give
    their value when finite; anything else is read as text, its first (or, with
    ``pick="last"``, last) numeric token taken, with its sign when the sign stands alone.

    >>> parse_number("The answer is $1,234.50.")
    1234.5
    >>> parse_number("x=-3"), parse_number("COVID-19"), parse_number("twelve")
    (-3.0, 19.0, None)
    >>> parse_number("3,14", decimal_comma=True), parse_number("50 %", percent="fraction")
    (3.14, 0.5)
    >>> parse_number("Between 3 and 4, final answer 4", pick="last")
    4.0
    """
    opts = Options.of(options, **overrides)
    if isinstance(value, (bool, np.bool_)) or _is_missing(value):
        return None
    if isinstance(value, (int, float, Decimal, np.integer, np.floating)):
        try:
            return _finite_or_none(float(value))
        except (OverflowError, ValueError):  # a huge int; a signalling Decimal NaN
            return None
    return parse_text(str(value), opts)


# --- the vectorised path --------------------------------------------------------------------


def _token_regex(decimal_comma: bool, *, leading: bool) -> str:
    """RE2 pattern for the leftmost token (``leading``: a token at the start of the text).

    Groups: ``pre``, an optional ``<ctx><sign>`` before the token (not when ``leading``);
    ``tok``, the token; ``pct``, a ``%`` right after it. RE2 has no look-ahead, so
    ``not-followed-by-digit`` after the groups is a following non-digit character (or the end)
    that the match consumes. Greedy matching makes every other form end before a non-digit
    anyway, so requiring it after every token changes nothing else.
    """
    grouped, fraction, exponent, point = _token_parts(decimal_comma)
    token = (
        rf"{grouped}(?:{fraction}(?:{exponent})?|{exponent})?"
        rf"|[0-9]+(?:{fraction})?(?:{exponent})?|{point}[0-9]+(?:{exponent})?"
    )
    before = "^" if leading else "(?P<pre>(?:^|.)[+\\-\u2212])??"
    return rf"(?s){before}(?P<tok>{token})(?:(?P<pct>[ \t]*\\?%)|[^0-9]|$)"


def _lead_regex(opts: Options) -> str:
    """RE2 pattern for a cheap read of the token at the first digit (anchored, nothing after it).

    Groups: ``pre``, all the text before the first digit; ``tok``, the digits and grouping
    separators there, then a fraction and an exponent; ``pct`` with ``percent="fraction"``.
    ``tok`` is the leftmost token when ``pre`` does not end with the decimal point (``.5``) and
    ``tok`` has no grouping separator or a clean grouped run (`_clean_group_regex`).
    With ``scale="words"``, ``sc`` is the first letter of a scale word right after the token: a
    single character class (the words themselves make RE2 read the groups several times slower).
    """
    _, fraction, exponent, _ = _token_parts(opts.decimal_comma)
    group = re.escape(_separators(opts.decimal_comma)[0])
    lead = rf"^(?P<pre>[^0-9]*)(?P<tok>[0-9][0-9{group}]*(?:{fraction})?(?:{exponent})?)"
    if opts.scale == "words":
        pct = "|(?P<pct>\\\\?%)" if opts.percent == "fraction" else ""
        return rf"{lead}(?:[ \t]*(?:(?P<sc>[{_SCALE_FIRST}]){pct}))?"
    pct = "(?P<pct>[ \t]*\\\\?%)?" if opts.percent == "fraction" else ""
    return lead + pct


def _clean_group_regex(decimal_comma: bool) -> str:
    """A `_lead_regex` token with a grouping separator that the full grammar reads the same."""
    grouped = _token_parts(decimal_comma)[0]
    group = re.escape(_separators(decimal_comma)[0])
    return rf"^{grouped}(?:[^0-9{group}]|$)"


def _single_token_regex(opts: Options) -> str:
    """Texts with no digit after the `_lead_regex` token: that token is also the last one."""
    lead = _lead_regex(Options(decimal_comma=opts.decimal_comma))
    return lead.replace("(?P<pre>", "(?:").replace("(?P<tok>", "(?:") + "[^0-9]*$"


def _scan_regex(decimal_comma: bool) -> str:
    """RE2 pattern matching each token left to right without overlap, as ``finditer`` does."""
    grouped, fraction, exponent, point = _token_parts(decimal_comma)
    return (
        rf"{grouped}(?:{fraction}(?:{exponent})?|{exponent}|[^0-9]|$)"
        rf"|[0-9]+(?:{fraction})?(?:{exponent})?|{point}[0-9]+(?:{exponent})?"
    )


def _cast(text: pa.Array) -> np.ndarray:
    try:
        values = pc.cast(text, pa.float64())
    except pa.ArrowInvalid:  # only an exponent's U+2212 fails here: rare, so only then replaced
        values = pc.cast(pc.replace_substring(text, "\u2212", "-"), pa.float64())
    return values.to_numpy(zero_copy_only=False, writable=True)


def _to_float(tokens: pa.Array, decimal_comma: bool, grouped: np.ndarray) -> np.ndarray:
    """Values of tokens; ``grouped`` marks those holding a grouping separator."""
    group, point = _separators(decimal_comma)
    if point != ".":
        text = pc.replace_substring(pc.replace_substring(tokens, group, ""), point, ".")
        return _cast(text)
    # Most tokens have no separator: cast as they are (the others hidden as nulls, no copy).
    values = _cast(_nulls_where(tokens, grouped))
    if grouped.any():
        values[grouped] = _cast(pc.replace_substring(tokens.filter(grouped), group, ""))
    return values


def _nulls_where(strings: pa.Array, hide: np.ndarray) -> pa.Array:
    """``strings`` with nulls where ``hide`` is true, sharing their offsets and text buffers."""
    keep = np.asarray(strings.is_valid(), dtype=bool) & ~hide
    bits = np.packbits(np.concatenate([np.zeros(strings.offset, bool), keep]), bitorder="little")
    buffers = [pa.py_buffer(bits), *strings.buffers()[1:]]
    return pa.Array.from_buffers(strings.type, len(strings), buffers, offset=strings.offset)


def _mask(condition: pa.Array) -> np.ndarray:
    return np.asarray(condition.fill_null(False), dtype=bool)


def _last_byte(strings: pa.Array) -> np.ndarray:
    """The last byte of each string (0 when empty), read from Arrow's buffers without a copy."""
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    _, offsets_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, width)[strings.offset :][: len(strings) + 1]
    starts, ends = offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer else np.zeros(1, np.uint8)
    return np.where(ends > starts, data[np.maximum(ends - 1, 0)], 0)


def _alnum_mask(chars: pa.Array) -> np.ndarray:
    """``str.isalnum`` of each one-character string, computed once per distinct character."""
    distinct = pc.unique(chars).to_pylist()
    alnum = pa.array([c for c in distinct if c is not None and c.isalnum()], pa.string())
    return _mask(pc.is_in(chars, value_set=alnum))


def _signed_values(
    head: pa.Array, values: np.ndarray, pct: pa.Array | None, opts: Options
) -> np.ndarray:
    """The values with the sign that ends ``head`` when it belongs (see SPEC §1)."""
    if pct is not None:
        values[np.asarray(pc.utf8_length(pct).fill_null(0)) > 0] /= 100
    # A minus ends with byte 0x2D ("-") or 0x92 (U+2212): only those heads are looked at.
    last = _last_byte(head)
    rows = np.flatnonzero((last == 0x2D) | (last == 0x92))
    if len(rows):
        head = head.take(rows)
        minus = _mask(pc.ends_with(head, "-")) | _mask(pc.ends_with(head, "\u2212"))
        at_start = np.asarray(pc.utf8_length(head)) == 1
        before = _alnum_mask(pc.utf8_slice_codeunits(head, -2, -1))
        negate = rows[minus & (at_start | ~before)]
        values[negate] = -values[negate]
    return values


def _parse_full(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of a string array with no nulls, by the full grammar; NaN where no number."""
    if opts.pick == "last":
        marked = pc.replace_substring_regex(text, _scan_regex(opts.decimal_comma), _MARK + r"\0")
        split = pc.extract_regex(marked, rf"(?s)^(?P<head>.*){_MARK}(?P<tail>.*)$")
        found = np.asarray(split.is_valid(), dtype=bool)
        head = pc.replace_substring(split.field("head").filter(found), _MARK, "")
        tail = split.field("tail").filter(found)
        parts = pc.extract_regex(tail, _token_regex(opts.decimal_comma, leading=True))
        tok, pct = parts.field("tok"), parts.field("pct")
    else:
        parts = pc.extract_regex(text, _token_regex(opts.decimal_comma, leading=False))
        found = np.asarray(parts.is_valid(), dtype=bool)
        parts = parts.filter(found)
        head, tok, pct = parts.field("pre"), parts.field("tok"), parts.field("pct")
    out = np.full(len(text), np.nan)
    grouped = _mask(pc.match_substring(tok, _separators(opts.decimal_comma)[0]))
    values = _to_float(tok, opts.decimal_comma, grouped)
    out[found] = _signed_values(head, values, pct if opts.percent == "fraction" else None, opts)
    return out


def _cast_whole(text: pa.Array, opts: Options) -> np.ndarray | None:
    """The column through Arrow's float parser, when every string is one it accepts.

    Exact: every string that Arrow parses to a finite float is ``[+-]`` and one whole token
    without grouping, which the grammar reads as the same float (a ``+``/``-`` at the start
    belongs to the token). Its other strings (``inf``, ``nan``, ``nan(12)``, ``1e999``) are
    given back as NaN for the caller to read again. With ``decimal_comma``, a column with no
    ``.`` at all is read with its ``,`` made a ``.``: there ``,`` can only be the point.
    """

    def cast(strings: pa.Array) -> pa.Array:
        if opts.decimal_comma:
            strings = pc.replace_substring(strings, ",", ".")
        return pc.cast(strings, pa.float64())

    try:  # a failing cast is slow (an error per row): try the first rows alone first
        cast(text.slice(0, 1000))
        if opts.decimal_comma and pc.any(pc.match_substring(text, ".")).as_py():
            return None
        values = cast(text)
    except pa.ArrowInvalid:
        return None
    return values.to_numpy(zero_copy_only=False, writable=True)


def _parse_lead(text: pa.Array, opts: Options) -> tuple[np.ndarray, np.ndarray]:
    """Values of the rows that `_lead_regex` reads exactly; the mask of the rows it cannot.

    Exact because the leftmost token starts at the first digit unless a point stands right
    before it, and reads as that digit run when the run has no separator or a clean grouped
    one; with ``pick="last"``, no digit after it means no other token. A row it does not match
    has no digit, so no number: NaN, and read. With ``pick="last"`` it is exact for the options
    of SPEC §1.1 too: with one digit run no fraction can form and no other separator can join a
    group; a row with a scale word right after the token is handed on.
    """
    group, point = _separators(opts.decimal_comma)
    parts = pc.extract_regex(text, _lead_regex(opts))
    matched = np.asarray(parts.is_valid(), dtype=bool)
    pre, tok = parts.field("pre"), pc.struct_field(parts, "tok")  # tok: null where no match
    found = matched & (_last_byte(pre) != ord(point))
    grouped = _mask(pc.match_substring(tok, group))
    if grouped.any():
        pattern = _clean_group_regex(opts.decimal_comma)
        clean = _mask(pc.match_substring_regex(tok.filter(grouped), pattern))
        found[np.flatnonzero(grouped)[~clean]] = False
    if opts.pick == "last":
        found &= _mask(pc.match_substring_regex(text, _single_token_regex(opts)))
    if opts.scale == "words":  # the words are looked for only where `sc` found their letter
        maybe = found & (_lengths(parts.field("sc")) > 0)
        if maybe.any():
            word = rf"[0-9.,][ \t]*(?:{_SCALE_WORDS})"
            found[maybe] = ~_mask(pc.match_substring_regex(text.filter(maybe), word))
    # Every row is read at once (no filtering); the rows not found are left to the caller.
    values = _to_float(tok, opts.decimal_comma, grouped)
    values[~found] = np.nan
    pct = parts.field("pct") if opts.percent == "fraction" else None
    return _signed_values(pre, values, pct, opts), matched & ~found


# --- the vectorised path of SPEC §1.1 -------------------------------------------------------
#
# The same grammar in RE2, which has no look-around. Each look-around of the plain path is
# replaced by something exact: grouped's "last group not followed by a digit" is checked on the
# character after the match (`_read`); the scale word's "not followed by a letter or digit" too;
# the markers' "not preceded / followed by an ASCII letter" by a consumed character or a span
# that must start with a non-letter. The A/B rules that look around (dates) and a grouped token
# right before a \frac are not expressed: rows holding them go to the plain path (`_hard_regex`),
# as do boxes nested more than three deep. Only those rows are read one by one.


def _classic(opts: Options) -> bool:
    return (
        opts.pick != "answer"
        and opts.scale == "none"
        and opts.thousands == "comma"
        and not opts.fractions
    )


def _re2_token(opts: Options, *, scan: bool = False) -> str:
    """The token alternatives in the plain path's order, without their look-arounds. With
    ``scan``: each token left to right without overlap, as ``finditer`` finds them (a grouped
    one takes the non-digit after it), with no named groups."""
    grouped, fraction, exponent, point = _token_parts(opts.decimal_comma, opts)
    tail = rf"{fraction}(?:{exponent})?|{exponent}"
    grouped = rf"{grouped}(?:{tail}|[^0-9]|$)" if scan else rf"{grouped}(?:{tail})?"
    token = rf"{grouped}|[0-9]+(?:{fraction})?(?:{exponent})?|{point}[0-9]+(?:{exponent})?"
    if opts.fractions:
        frac, slash = _frac_regex(opts.decimal_comma), "(?P<sa>[0-9]+)/(?P<sb>0*[1-9][0-9]*)"
        if scan:
            frac, slash = re.sub(r"\?P<\w+>", "", frac), re.sub(r"\?P<\w+>", "", slash)
        token = rf"{frac}|{slash}|{token}"
    return token


def _re2_scan(opts: Options) -> str:
    """Each token left to right without overlap (a grouped one takes the non-digit after it)."""
    return _re2_token(opts, scan=True)


def _read_regex(opts: Options, *, leading: bool) -> str:
    """The first token with ``pre`` (its sign), ``scale``, ``pct`` and ``nx``, the next char."""
    before = "^" if leading else "(?P<pre>(?:^|.)[+\\-\u2212])??"
    scale = rf"(?P<scale>[ \t]*(?:{_SCALE_WORDS}))?" if opts.scale == "words" else ""
    pct = r"(?P<pct>[ \t]*\\?%)?" if opts.percent == "fraction" else ""
    return rf"(?s){before}(?P<tok>{_re2_token(opts)}){scale}{pct}(?P<nx>.|$)"


def _hard_regex(opts: Options) -> str | None:
    """Rows the RE2 patterns may read differently: A/B next to another slash and digits (where
    the plain path looks around), a grouped token right before a ``\\frac`` (the scan takes
    the backslash)."""
    return r"/[0-9]+/[0-9]|[0-9]{3}\\[dt]?frac\{" if opts.fractions else None


def _reversed_answer_regex() -> str:
    """The last answer marker, found in the reversed text: ``r`` (and ``c``) is the reversed span.

    Reversed, the last marker is the first, and RE2 stops there instead of matching the whole
    text. It is the marker that ends last: only a ``####`` run can overlap itself, and its markers
    differ by leading ``#``, which no token reads. After ``is`` (``c``, its reversed last
    character) the span must start with a non-letter; a ``:`` kept there changes no reading.
    ``ans`` is the word answer, ``ctx`` the character before it (empty at the start).
    The ``^`` changes no match (``.*?`` lets every match start at 0) but makes RE2 faster.
    """
    is_ = _any_case("si")
    return (
        rf"(?s)^(?P<r>.*?)(?:(?P<box>\{{dexob\\|\{{xobf\\)|####"
        rf"|(?:[:=][ \t]*|(?P<c>[^A-Za-z]){is_}[ \t]*|^{is_}[ \t]*)"
        rf"(?P<ans>{_any_case('rewsna')})(?P<ctx>[^A-Za-z]|$))"
    )


# Any answer marker (a cheap test, no groups).
_ANY_MARKER = (
    rf"\\boxed\{{|\\fbox\{{|####"
    rf"|(?:^|[^A-Za-z]){_ANSWER}[ \t]*(?:[:=]|{_any_case('is')}(?:[^A-Za-z]|$))"
)


def _reversed_last_regex(opts: Options) -> str:
    """The reversed text from its end to the character before the run that holds the last token.

    Every character a token can hold is in ``chars``; the run of them around the last digit
    starts after a character that no token holds (``ctx``), so tokens found from there are the
    text's.
    """
    chars = "0-9.,eE+\\-\u2212"
    if opts.thousands == "any":
        chars += " \u00a0\u202f\u2009'\u2019\\\\"
    if opts.fractions:
        chars += "/\\\\{}dtfrac \t"
    return rf"(?s)^(?P<r>[^0-9]*[0-9][{chars}]*(?P<ctx>[^{chars}]|$))"


_TAIL = 100  # characters: most answers end within them


def _reversed_search(text: pa.Array, pattern: str, names: tuple[str, ...]) -> list[pa.Array]:
    """Groups ``names`` of ``pattern`` on each reversed string; null where it does not match.

    Only the last `_TAIL` characters are reversed and searched first. A longer row is searched
    again whole when that found nothing, or when ``ctx`` matched at the cut (empty and ``ans``
    or ``r`` not): there the cut, not the text, ended the match.
    """
    long = _lengths(text) > _TAIL
    tail = pc.utf8_slice_codeunits(text, -_TAIL) if long.any() else text
    parts = pc.extract_regex(pc.utf8_reverse(tail), pattern)
    fields = [pc.struct_field(parts, name) for name in names]
    if long.any():
        ctx = pc.struct_field(parts, "ctx")
        word = pc.struct_field(parts, "ans" if "ans" in names else "r")
        at_cut = _mask(pc.equal(ctx, "")) & _mask(pc.greater(pc.utf8_length(word), 0))
        again = long & (~_mask(parts.is_valid()) | at_cut)
        if again.any():
            more = pc.extract_regex(pc.utf8_reverse(text.filter(again)), pattern)
            fields = [
                _replace_rows(f, again, pc.struct_field(more, name))
                for f, name in zip(fields, names, strict=True)
            ]
    return fields


# The box's text up to the brace that closes it (two nested levels inside), or to the end.
_BOX_REGEX = r"(?s)^(?P<in>(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)(?:\}|$)"


def _replace_rows(strings: pa.Array, rows: np.ndarray, new: pa.Array) -> pa.Array:
    return pc.replace_with_mask(strings, pa.array(rows), new)


def _decimal_values(tok: pa.Array, opts: Options) -> np.ndarray:
    separators = _group_separators(opts)
    if len(separators) == 1:
        return _to_float(tok, opts.decimal_comma, _mask(pc.match_substring(tok, separators[0])))
    pattern = "|".join(_literal(sep) for sep in sorted(separators, key=len, reverse=True))
    grouped = _mask(pc.match_substring_regex(tok, pattern))
    if grouped.any():
        tok = _replace_rows(
            tok, grouped, pc.replace_substring_regex(tok.filter(grouped), pattern, "")
        )
    return _to_float(tok, opts.decimal_comma, np.zeros(len(tok), bool))


def _field(parts: pa.StructArray, name: str) -> pa.Array | None:
    """A group of a match (null where the row did not match), if the pattern has it."""
    return pc.struct_field(parts, name) if parts.type.get_field_index(name) >= 0 else None


def _lengths(strings: pa.Array) -> np.ndarray:
    return np.asarray(pc.utf8_length(strings).fill_null(0))


def _read(text: pa.Array, opts: Options, head: pa.Array | None = None) -> np.ndarray:
    """Values of the first token of each string (no nulls), by `_read_regex`; NaN where none.

    With ``head`` (the text before each string), each string starts with its token.
    """
    # Rows with no token stay in (nulls in every group), which is cheaper than filtering.
    parts = pc.extract_regex(text, _read_regex(opts, leading=head is not None))
    tok, nx = pc.struct_field(parts, "tok"), pc.struct_field(parts, "nx")
    # A grouped token right before a digit (RE2 took one group too many): drop that group.
    short = _mask(pc.match_substring_regex(nx, "^[0-9]")) & ~_mask(pc.ends_with(tok, "}"))
    for name in ("scale", "pct"):  # nx is then after the word or the %, not after the token
        after = _field(parts, name)
        if after is not None:
            short &= _lengths(after) == 0
    if short.any():
        seps = "|".join(_literal(sep) for sep in _group_separators(opts))
        cut = pc.replace_substring_regex(tok.filter(short), f"(?:{seps})[0-9]{{3}}$", "")
        tok = _replace_rows(tok, short, cut)
    values = np.full(len(tok), np.nan)
    with np.errstate(over="ignore", invalid="ignore"):  # inf is caught by `parse_column`
        _numbers_of(parts, tok, values, opts)
    signs = head if head is not None else pc.struct_field(parts, "pre").fill_null("")
    return _signed_values(signs, values, _field(parts, "pct"), opts)


def _numbers_of(parts: pa.StructArray, tok: pa.Array, values: np.ndarray, opts: Options) -> None:
    """Fill ``values``: each token's number times its scale word (SPEC §1.1), no sign."""
    fraction = np.zeros(len(tok), bool)
    for a, b in (("fn", "fm"), ("sa", "sb")):
        numerator = _field(parts, a)
        if numerator is None:
            continue
        rows = _lengths(numerator) > 0
        if rows.any():
            top = _decimal_values(numerator.filter(rows), opts)
            values[rows] = top / _decimal_values(pc.struct_field(parts, b).filter(rows), opts)
            fraction |= rows
    values[~fraction] = _decimal_values(tok.filter(~fraction) if fraction.any() else tok, opts)
    _apply_scale(values, parts)


def _apply_scale(values: np.ndarray, parts: pa.StructArray) -> None:
    """Multiply by the scale word (group ``scale``) where it ends before a non-alnum."""
    scale, pct = _field(parts, "scale"), _field(parts, "pct")
    if scale is None:
        return
    has = _lengths(scale) > 0
    with_pct = has & (_lengths(pct) > 0 if pct is not None else False)
    valid = has & (with_pct | ~_alnum_mask(pc.struct_field(parts, "nx")))
    if valid.any():
        word = pc.utf8_ltrim(scale.filter(valid), " \t")
        key = pc.if_else(pc.greater(pc.utf8_length(word), 1), pc.utf8_lower(word), word)
        factors = np.array(list(_SCALES.values()))
        values[valid] *= factors[np.asarray(pc.index_in(key, pa.array(list(_SCALES))))]


def _read_last(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of the last token of each string (no nulls, no `_MARK`); NaN where none."""
    marked = pc.replace_substring_regex(text, _re2_scan(opts), _MARK + r"\0")
    split = pc.extract_regex(marked, rf"(?s)^(?P<head>.*){_MARK}(?P<tail>.*)$")
    found = _mask(split.is_valid())
    split = split.filter(found)
    head = pc.replace_substring(split.field("head"), _MARK, "")
    out = np.full(len(text), np.nan)
    out[found] = _read(pc.replace_substring(split.field("tail"), _MARK, ""), opts, head)
    return out


def _last_values(strings: pa.Array, opts: Options) -> np.ndarray:
    """Values of the last token of each string (no `_MARK`); NaN where none.

    Tiers: a text with one digit run (`_parse_lead`); else the run of token characters around
    the last digit, found from the end (`_reversed_search`), read the same way when it holds one
    digit run, else by the scan (`_read_last`).
    """
    last = Options.of(opts, pick="last")
    out, rest = _parse_lead(strings, last)
    if rest.any():
        index = np.flatnonzero(rest)
        (around,) = _reversed_search(strings.filter(rest), _reversed_last_regex(opts), ("r",))
        found = _mask(around.is_valid())
        around, index = pc.utf8_reverse(around.filter(found)), index[found]
        values, again = _parse_lead(around, last)
        out[index] = values
        if again.any():
            out[index[again]] = _read_last(around.filter(again), opts)
    return out


def _first_values(strings: pa.Array, opts: Options) -> np.ndarray:
    """Values of the first token of each string (no nulls, no `_MARK`); NaN where none.

    A string with one digit run holds one token at most, its first and its last: `_parse_lead`
    reads it (one cheap pass); only the others go to `_read`, several times slower per row.
    """
    out, rest = _parse_lead(strings, Options.of(opts, pick="last"))
    if rest.any():
        out[rest] = _read(strings.filter(rest), opts)
    return out


def _answer_spans(text: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Rows with an answer marker, their spans, and the rows whose box nests too deep to cut."""
    r, c, box = _reversed_search(text, _reversed_answer_regex(), ("r", "c", "box", "ans"))[:3]
    marked = _mask(r.is_valid())
    r, c, box = r.filter(marked), c.filter(marked), box.filter(marked)
    span = pc.utf8_reverse(pc.binary_join_element_wise(r, c, pa.scalar("", r.type)))
    box = np.asarray(pc.utf8_length(box)) > 0
    deep = np.zeros(len(span), bool)
    if box.any():
        inside = pc.extract_regex(span.filter(box), _BOX_REGEX)
        deep[box] = ~_mask(inside.is_valid())
        span = _replace_rows(span, box, pc.struct_field(inside, "in").fill_null(""))
    return marked, span, deep


def _special_regex(opts: Options) -> str:
    """Rows that need a look before the RE2 patterns: LaTeX commas, `_MARK`, `_hard_regex`."""
    special = ["\\x{e000}"]
    if opts.thousands == "any":
        special += [_literal(latex) for latex in _LATEX_COMMAS]
    hard = _hard_regex(opts)
    return "|".join([*special, hard] if hard else special)


def _special_bytes(opts: Options) -> bytes:
    """A byte that each match of `_special_regex` holds (the first byte of `_MARK`, ...)."""
    return (
        b"\xee" + (b"{\\" if opts.thousands == "any" else b"") + (b"/\\" if opts.fractions else b"")
    )


def _may_hold(strings: pa.Array, chars: bytes) -> bool:
    """Whether the text buffer holds one of the bytes (a cheap test before a regex pass)."""
    data = strings.buffers()[2]
    if data is None:
        return False
    text = data.to_pybytes()  # one copy, then a memchr per byte: a numpy pass each is slower
    return any(bytes([byte]) in text for byte in set(chars))


def _parse_general(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of a string array (nulls allowed) with any option of SPEC §1.1; NaN where none."""
    original = text
    out = np.full(len(text), np.nan)
    rows = _mask(text.is_valid())
    hard = np.zeros(len(text), bool)
    special = np.zeros(len(text), bool)
    if _may_hold(text, _special_bytes(opts)):
        special = _mask(pc.match_substring_regex(text, _special_regex(opts)))
    if special.any():  # one cheap pass; the rest only on the few rows that need it
        some = text.filter(special)
        if opts.thousands == "any":
            for latex in _LATEX_COMMAS:
                some = pc.replace_substring(some, latex, ",")
            text = _replace_rows(text, special, some)
        mark = "\\x{e000}" if opts.pick != "first" else None  # the scan's own marker
        hard_regex = "|".join(filter(None, [_hard_regex(opts), mark]))
        if hard_regex:
            hard[special] = _mask(pc.match_substring_regex(some, hard_regex))
    rows &= ~hard
    index = np.flatnonzero(rows)
    strings = text if len(index) == len(text) else text.filter(rows)
    if opts.pick == "first":
        out[index] = _read(strings, opts)
    else:
        marked = np.zeros(len(index), bool)
        if opts.pick == "answer":
            marked = _mask(pc.match_substring_regex(strings, _ANY_MARKER))
            if marked.any():
                has, span, deep = _answer_spans(strings.filter(marked))
                found = index[marked][has]
                hard[found[deep]] = True  # the plain path reads those
                out[found[~deep]] = _first_values(span.filter(~deep) if deep.any() else span, opts)
        # Marked rows are hidden (nulls sharing the buffers), not filtered out (a copy).
        values = _last_values(_nulls_where(strings, marked) if marked.any() else strings, opts)
        out[index[~marked]] = values[~marked]
    for i in np.flatnonzero(hard):
        value = parse_text(original[i].as_py(), opts)
        out[i] = np.nan if value is None else value
    return out


def _parse_strings(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of a string array (nulls allowed); NaN where no number.

    Tiers: `_cast_whole`, else `_parse_lead`; the rows they hand on go to `_parse_full`.
    """
    valid = np.asarray(text.is_valid(), dtype=bool)
    out = _cast_whole(text, opts)
    if not _classic(opts):
        if out is None:
            return _parse_general(text, opts)
        rest = valid & ~np.isfinite(out)
        if rest.any():
            out[rest] = _parse_general(text.filter(rest), opts)
        return out
    if out is None:
        out, rest = _parse_lead(text, opts)
    else:
        rest = valid & ~np.isfinite(out)
    if opts.pick == "last":  # a row holding the marker itself takes the plain path
        marked = rest & _mask(pc.match_substring(text, _MARK))
        for i in np.flatnonzero(marked):
            value = parse_text(text[i].as_py(), opts)
            out[i] = np.nan if value is None else value
        rest &= ~marked
    if rest.any():
        out[rest] = _parse_full(text.filter(rest), opts)
    return out


_HOMOGENEOUS = {
    "string",
    "integer",
    "floating",
    "mixed-integer-float",
    "decimal",
    "boolean",
    "empty",
}


def _as_arrow(values: Any) -> pa.Array | None:
    """The column as one Arrow array, or ``None`` when its Python objects mix types."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    else:
        series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        # Arrow would quietly turn a bool among floats into 1.0: mixed objects go one by one.
        if series.dtype == object and pd.api.types.infer_dtype(series) not in _HOMOGENEOUS:
            return None
        try:
            array = pa.array(series, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            return None
        if isinstance(array, pa.ChunkedArray):  # a pandas column Arrow holds in chunks
            array = array.combine_chunks()
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def parse_column(values: Any, options: Options | None = None, **overrides: Any) -> np.ndarray:
    """Read the number of every value in a column; float64 array, NaN where there is none.

    ``values`` is a pandas Series, a pyarrow array or a sequence. Equal, value for value, to
    `parse_number` (NaN for ``None``).

    >>> parse_column(["42", "about -3.5 units", "n/a", None]).tolist()
    [42.0, -3.5, nan, nan]
    """
    opts = Options.of(options, **overrides)
    array = _as_arrow(values)
    if array is None or not (
        pa.types.is_string(array.type)
        or pa.types.is_large_string(array.type)
        or pa.types.is_integer(array.type)
        or pa.types.is_floating(array.type)
        or pa.types.is_decimal(array.type)
        or pa.types.is_boolean(array.type)
        or pa.types.is_null(array.type)
    ):
        # Mixed Python objects and other types (dates, lists...) are read one by one as text.
        items = values.tolist() if hasattr(values, "tolist") else list(values)
        parsed = (parse_number(v, opts) for v in items)
        return np.array([np.nan if v is None else v for v in parsed], dtype=float)
    if pa.types.is_boolean(array.type) or pa.types.is_null(array.type):
        return np.full(len(array), np.nan)
    if pa.types.is_decimal(array.type):
        # Through text: Arrow's decimal-to-float conversion is not always correctly rounded.
        return parse_column(pc.cast(array, pa.string()), Options())
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        numbers = pc.cast(array, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        numbers = np.asarray(numbers, dtype=float)
        return np.where(np.isfinite(numbers), numbers, np.nan)
    out = _parse_strings(array, opts)
    out[np.isinf(out)] = np.nan  # a token too large for a float
    return out


def _count_tokens(text: str, opts: Options, at_most: int = 2) -> int:
    """How many numeric tokens ``text`` holds (counting stops at ``at_most``)."""
    if opts.thousands == "any":
        for latex in _LATEX_COMMAS:
            text = text.replace(latex, ",")
    return len(list(islice(_python_token(opts).finditer(text), at_most)))


def several_numbers(values: Any, options: Options | None = None, **overrides: Any) -> np.ndarray:
    """Whether each value is text holding two or more numeric tokens (by the options' grammar).

    Tells where ``pick="first"`` may read another number than the answer. ``False`` for
    missing values and for values that are not text.

    >>> several_numbers(["3 apples and 4 pears", "42", "1,234.5", None, 7]).tolist()
    [True, False, False, False, False]
    >>> several_numbers(["3/4", "1 234"], fractions=True, thousands="any").tolist()
    [False, False]
    """
    opts = Options.of(options, **overrides)
    array = _as_arrow(values)
    if array is None:  # Python objects of mixed types: one by one
        items = values.tolist() if hasattr(values, "tolist") else list(values)
        return np.array([isinstance(v, str) and _count_tokens(v, opts) == 2 for v in items], bool)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return np.zeros(len(array), bool)  # numbers, booleans, nulls: no text
    text = array
    if _cast_whole(text, opts) is not None:  # plain numbers (a number column as text): one each
        return np.zeros(len(text), bool)
    if opts.thousands == "any" and _may_hold(text, b"{\\"):
        for latex in _LATEX_COMMAS:
            text = pc.replace_substring(text, latex, ",")
    # At most one digit run: at most one token. The others are counted by the scan, except the
    # rows it may cut differently (`_hard_regex`, or holding `_MARK`): those one by one.
    rest = ~_mask(pc.match_substring_regex(text, "^[^0-9]*(?:[0-9]+[^0-9]*)?$"))
    out = np.zeros(len(text), bool)
    hard_regex = "|".join(filter(None, [_hard_regex(opts), "\\x{e000}"]))
    hard = rest & _mask(pc.match_substring_regex(text, hard_regex))
    rest &= ~hard
    if rest.any():
        marked = pc.replace_substring_regex(text.filter(rest), _re2_scan(opts), _MARK)
        out[rest] = np.asarray(pc.count_substring(marked, _MARK)) >= 2
    for i in np.flatnonzero(hard):
        out[i] = _count_tokens(array[i].as_py(), opts) == 2
    return out
