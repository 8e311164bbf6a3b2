"""SPEC §1.3 for a whole column: each row's number (`parse_column`) and its unit.

A row that is one quantity and nothing else (an optional sign and currency symbol, a decimal
token, then no digit: `_SIMPLE`), and that `route` leaves to the tiers, has its token at its
first digit and ending at its last one, whatever the options: nothing else in it can start or
extend a token (the tiers read it with §1.2's readings off, which read such rows the same). Its
unit is read from the text after the token, once per distinct such text (a column of
measurements holds few: "km", " kg."). The other rows with a number are read by the one-value
reader, once per distinct text. Differential tests prove the two equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.buffers import _mask
from numdiff_component.reading.column import _as_arrow, parse_column, route
from numdiff_component.reading.grammar import CURRENCY, separators
from numdiff_component.reading.marks import percent_after, scale_after
from numdiff_component.reading.plain import parse_number, quantity_text
from numdiff_component.reading.units import unit_in, unit_name, unit_run

Units = tuple[np.ndarray, list[str]]
"""Each row's unit as a code into a table of unit names (-1: no unit)."""


def _simple_regex(decimal_comma: bool) -> str:
    """A whole row that is one quantity: groups ``cur`` (a currency symbol before the token)
    and ``rest`` (the text after the token, holding no digit of any kind)."""
    group, point = (f"\\{c}" for c in separators(decimal_comma))
    token = rf"(?:[0-9]{{1,3}}(?:{group}[0-9]{{3}})+|[0-9]+)(?:{point}[0-9]*)?"
    sign = "[+\\-\u2212]?"  # SIGNS, its "-" escaped
    return (
        rf"(?s)^[ \t]*{sign}(?P<cur>[{CURRENCY}]?){sign}{token}"
        rf"(?:[eE]{sign}[0-9]+)?(?P<rest>[^\p{{N}}]*)$"
    )


def unit_of_rest(rest: str, opts: Options) -> str | None:
    """The unit text after a token, given the text right after it (`quantity_text`'s rule)."""
    end = scale_after(rest, 0)[1] if opts.scale == "words" else 0
    if opts.percent == "fraction" and (percent := percent_after(rest, end)) is not None:
        end = percent
    return unit_in(unit_run(rest, end))


def _names(units: list[str | None]) -> Units:
    """Codes into a table of names for a list of unit texts (``None``: no unit)."""
    names: dict[str, int] = {}
    codes = np.full(len(units), -1, np.int32)
    for i, text in enumerate(units):
        name = None if text is None else unit_name(text) or text  # a currency is its symbol
        if name is not None:
            codes[i] = names.setdefault(name, len(names))
    return codes, list(names)


def _distinct(strings: pa.Array, read: Any) -> tuple[np.ndarray, list[str | None]]:
    """``read`` of each distinct string (no nulls): the row's index into the list of results."""
    encoded = pc.dictionary_encode(strings)
    return np.asarray(encoded.indices), [read(s) for s in encoded.dictionary.to_pylist()]


def parse_quantities(values: Any, options: Options) -> tuple[np.ndarray, Units]:
    """`parse_column`'s numbers and each row's unit (SPEC §1.3); equal, row for row, to
    `quantity_text`. Rows with no number have no unit."""
    numbers = parse_column(values, options)
    codes = np.full(len(numbers), -1, np.int32)
    array = _as_arrow(values)
    if array is None:  # Python objects of mixed types: one by one
        items = values.tolist() if hasattr(values, "tolist") else list(values)
        texts = [quantity_text(v, options)[1] if isinstance(v, str) else None for v in items]
        return numbers, _names(texts)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return numbers, (codes, [])  # numbers, booleans, nulls: no unit
    found = np.isfinite(numbers)
    parts = pc.extract_regex(array, _simple_regex(options.decimal_comma))
    simple = found & _mask(parts.is_valid()) & ~route(array, options)
    table: list[str | None] = []
    if simple.any():
        some = parts.filter(simple)
        index, units = _distinct(some.field("rest"), lambda rest: unit_of_rest(rest, options))
        cur = np.asarray(pc.utf8_length(some.field("cur")), dtype=bool)
        none = np.array([u is None for u in units], bool)[index] if units else cur
        table += units + list(CURRENCY)
        symbols = pc.index_in(some.field("cur"), pa.array(list(CURRENCY))).fill_null(0)
        index = np.where(none & cur, len(units) + np.asarray(symbols), index)
        codes[simple] = index
    rest = found & ~simple
    if rest.any():
        index, units = _distinct(array.filter(rest), lambda s: quantity_text(s, options)[1])
        codes[rest] = index + len(table)
        table += units
    unit_codes, names = _names(table)
    mapped = np.append(unit_codes, -1)[codes]  # -1 stays -1 (the appended slot)
    return numbers, (mapped, names)


def parse_quantity(value: Any, options: Options) -> tuple[float | None, str | None]:
    """The number of one value (`parse_number`) and its unit's name (SPEC §1.3), or ``None``."""
    if not isinstance(value, str):
        return parse_number(value, options), None
    number, unit = quantity_text(value, options)
    return number, None if unit is None else unit_name(unit) or unit
