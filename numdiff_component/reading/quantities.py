"""SPEC §1.3 for a whole column: each row's number (`parse_column`) and its unit.

A row that `route` leaves to the tiers and that holds one quantity (`_simple_regex`: text with
no digit, ``\\``, brace, nor a decimal mark right before the token; a currency symbol and a
sign; a decimal token; then text with no digit) has its token at its first digit and ending at
its last one, whatever the options: nothing else in it can start or extend a token (the tiers
read it with §1.2's readings off, and they read such a row as the one-value reader does). Its
unit is read from the text after the token with the one-value reader's rule, once per distinct
such text (a column of measurements holds few: " km", " kg in total"). The other rows with a
number are read by the one-value reader, once per distinct text. Differential tests prove the
two paths equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.buffers import (
    Spans,
    as_mask,
    byte_lengths,
    byte_spans,
    last_byte,
    may_hold,
    span_strings,
    spans_holding,
)
from numdiff_component.reading.column import as_arrow, locate_column
from numdiff_component.reading.grammar import CURRENCY, separators
from numdiff_component.reading.located_rows import Located, char_offsets
from numdiff_component.reading.marks import any_marker_regex, percent_after, scale_after
from numdiff_component.reading.plain import parse_number, quantity_text
from numdiff_component.reading.routes import route
from numdiff_component.reading.signs import sign_widths, signed_values
from numdiff_component.reading.spans import FIRST, LAST
from numdiff_component.reading.tiers import from_first_digit, to_float
from numdiff_component.reading.units import unit_in, unit_name, unit_run

Units = tuple[np.ndarray, list[str]]
"""Each row's unit as a code into a table of unit names (-1: no unit)."""


def _token_regex(decimal_comma: bool) -> str:
    """A decimal token at the start of a text (its longest form: the tiers' token)."""
    group, point = (f"\\{c}" for c in separators(decimal_comma))
    token = rf"(?:[0-9]{{1,3}}(?:{group}[0-9]{{3}})+|[0-9]+)(?:{point}[0-9]*)?"
    return rf"^(?P<tok>{token}(?:[eE][{_SIGNS}]?[0-9]+)?)"


def _tail_regex(decimal_comma: bool, first: bool) -> str:
    """From the first ASCII digit of a row, a whole decimal token, then text with no ASCII
    digit (with ``first``, ``pick="first"``: but an exponent's after ``^``, which no reading
    joins to the token). Other digits make a row routed (`route`) where they read."""
    power = r"|\^-?[0-9]+" if first else ""
    return rf"(?s){_token_regex(decimal_comma)}(?:[^0-9]{power})*$"


_SIGNS = "+\\-\u2212"  # SIGNS, its "-" escaped
_CURRENCY_HEAD = rf"^[^0-9]*(?P<cur>[{CURRENCY}])[{_SIGNS}]?[0-9]"


def _simple(array: pa.Array, opts: Options) -> tuple[np.ndarray, pa.Array, pa.Array, Spans]:
    """The rows that hold one quantity (see above); their tokens and the text after them, and
    every row's text before its first digit."""
    tail, cut = from_first_digit(array)
    pattern = _tail_regex(opts.decimal_comma, opts.pick == "first")
    simple = as_mask(pc.match_substring_regex(tail, pattern)) & ~route(array, opts)
    # Before the first digit: a backslash or a brace (\frac, LaTeX's {,}), or a mark right
    # before it (".5"), read on the bytes of the text before it.
    starts, ends, data = byte_spans(array)
    head = (starts, starts + cut, data)
    simple &= ~np.isin(last_byte(head), list(b".,"))
    for byte in b"\\{}":
        if simple.any() and may_hold(array, bytes([byte])):
            simple &= ~spans_holding(head, byte)
    tok = pc.struct_field(
        pc.extract_regex(tail.filter(simple), _token_regex(opts.decimal_comma)), "tok"
    )
    after = starts[simple] + cut[simple] + byte_lengths(tok)
    rest = span_strings(data, after, ends[simple])
    if opts.pick == "answer" and len(rest):  # a marker after the token: its span is read
        marked = as_mask(pc.match_substring_regex(rest, any_marker_regex(opts)))
        if marked.any():
            simple[np.flatnonzero(simple)[marked]] = False
            tok, rest = tok.filter(~marked), rest.filter(~marked)
    return simple, tok, rest, head


def after_token(rest: str, opts: Options) -> tuple[float, bool, str | None, int]:
    """What follows a token, given the text right after it: the scale word's factor, whether a
    percent is read, the unit text (`value_end` and `quantity_text`'s rules), and where the
    number's reading ends (SPEC §1.4)."""
    factor, end = scale_after(rest, 0, opts) if opts.scale == "words" else (1.0, 0)
    percent = percent_after(rest, end) if opts.percent == "fraction" else None
    end = end if percent is None else percent
    return factor, percent is not None, unit_in(unit_run(rest, end)), end


def _names(units: list[str | None]) -> Units:
    """Codes into a table of names for a list of unit texts (``None``: no unit)."""
    names: dict[str, int] = {}
    codes = np.full(len(units), -1, np.int32)
    for i, text in enumerate(units):
        name = None if text is None else unit_name(text) or text  # a currency is its symbol
        if name is not None:
            codes[i] = names.setdefault(name, len(names))
    return codes, list(names)


def _distinct(strings: pa.Array, read: Any) -> tuple[np.ndarray, list[Any]]:
    """``read`` of each distinct string (no nulls): the row's index into the list of results."""
    encoded = pc.dictionary_encode(strings)
    return np.asarray(encoded.indices), [read(s) for s in encoded.dictionary.to_pylist()]


def _currencies(strings: pa.Array) -> np.ndarray:
    """The currency symbol before each string's first digit, or before a sign there, as an index
    into `CURRENCY` (-1: none)."""
    symbols = pc.struct_field(pc.extract_regex(strings, _CURRENCY_HEAD), "cur")
    return np.asarray(pc.index_in(symbols, pa.array(list(CURRENCY))).fill_null(-1))


def _read_simple(
    array: pa.Array,
    simple: np.ndarray,
    tok: pa.Array,
    rest: pa.Array,
    head: Spans,
    opts: Options,
    located: Located,
) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """The numbers of the simple rows and their units (codes into a list of unit texts), and
    their spans in ``located``.

    The number as the tiers read it: the token (`to_float`), times the scale word, over 100
    for a percent, with the sign before it (`signed_values`); what follows the token is read
    once per distinct text (`after_token`)."""
    index, reads = _distinct(rest, lambda text: after_token(text, opts))
    factor, percent, units, read_ends = (list(column) for column in zip(*reads, strict=True))
    rows = np.flatnonzero(simple)
    starts, cuts, _ = head
    cut = (cuts - starts)[rows]
    sign = sign_widths((starts[rows], cuts[rows], head[2]))
    start, end = char_offsets(array, rows, cut - sign, cut + byte_lengths(tok))
    end = end + np.array(read_ends, np.int64)[index]
    located.put(rows, start, end, FIRST if opts.pick == "first" else LAST)
    group = separators(opts.decimal_comma)[0]
    values = to_float(tok, opts.decimal_comma, as_mask(pc.match_substring(tok, group)))
    if opts.scale == "words":
        values *= np.array(factor)[index]
    values[np.array(percent, bool)[index]] /= 100
    starts, ends, data = head
    values = signed_values((starts[simple], ends[simple], data), values)
    values[~np.isfinite(values)] = np.nan
    codes = index + len(CURRENCY)  # a currency symbol is the unit where no unit follows
    bare = np.array([unit is None for unit in units], bool)[index]
    if bare.any() and may_hold(array, "".join(CURRENCY).encode()):
        symbol = _currencies(array.filter(simple).filter(bare))
        codes[np.flatnonzero(bare)[symbol >= 0]] = symbol[symbol >= 0]
    return values, codes, [*CURRENCY, *units]


def parse_quantities(
    values: Any, options: Options, located: Located | None = None
) -> tuple[np.ndarray, Units]:
    """Each row's number (`parse_column`) and unit (SPEC §1.3); equal, row for row, to
    `quantity_text`. Rows with no number have no unit. Where each number was read (SPEC
    §1.4) in ``located`` when given."""
    array = as_arrow(values)
    if array is None or not (
        pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
    ):
        numbers, where = locate_column(values, options)
        if located is not None:
            located.take(slice(None), where)
        if array is not None:  # numbers, booleans, nulls: no unit
            return numbers, (np.full(len(numbers), -1, np.int32), [])
        items = values.tolist() if hasattr(values, "tolist") else list(values)  # mixed objects
        texts = [quantity_text(v, options)[1] if isinstance(v, str) else None for v in items]
        return numbers, _names(texts)
    simple, tok, rest, head = _simple(array, options)
    numbers = np.full(len(array), np.nan)
    codes = np.full(len(array), -1, np.int64)
    table: list[str | None] = []
    located = located if located is not None else Located.empty(len(array))
    if simple.any():
        numbers[simple], codes[simple], table = _read_simple(
            array, simple, tok, rest, head, options, located
        )
    other = ~simple & as_mask(array.is_valid())
    if other.any():
        strings = array if other.all() else array.filter(other)
        numbers[other], where = locate_column(strings, options)
        located.take(other, where)
        found = other & np.isfinite(numbers)
        units = lambda s: quantity_text(s, options)[1]  # noqa: E731
        index, texts = _distinct(array.filter(found), units)
        codes[found] = index + len(table)
        table += texts
    unit_codes, names = _names(table)
    return numbers, (np.append(unit_codes, -1)[codes], names)  # -1 stays -1 (the last slot)


def parse_quantity(value: Any, options: Options) -> tuple[float | None, str | None]:
    """The number of one value (`parse_number`) and its unit's name (SPEC §1.3), or ``None``."""
    if not isinstance(value, str):
        return parse_number(value, options), None
    number, unit = quantity_text(value, options)
    return number, None if unit is None else unit_name(unit) or unit
