"""The column reader: `parse_column` and `several_numbers`, vectorised (pyarrow and numpy).

Rows whose reading may depend on a rule the RE2 tiers do not express (each §1.2 reading that
is on) are found by one cheap RE2 test each (`routes.route`) and read by the one-value reader,
once per distinct text; all other rows are read by the tiers (`tiers`, `tiers_readings`) with
§1.2's readings off, which for them read the same: each test is a superset of the texts where
its rule can read anything (the argument is beside each test, in `routes`).
Differential property tests prove the column reader equal to `parse_number`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.buffers import (
    as_mask,
    byte_spans,
    may_hold,
    nulls_where,
)
from numdiff_component.reading.grammar import LATEX_COMMAS
from numdiff_component.reading.located import number_text, read_number
from numdiff_component.reading.located_rows import Located
from numdiff_component.reading.plain import count_tokens, parse_number, parse_text
from numdiff_component.reading.routes import matching, route, text_route_regex, tier_options
from numdiff_component.reading.spans import FIRST, LAST, RULE_CODES, VALUE
from numdiff_component.reading.tiers import (
    MARK,
    cast_whole,
    parse_full,
    parse_lead,
)
from numdiff_component.reading.tiers_readings import (
    classic_options,
    hard_pattern,
    parse_general,
    re2_scan,
    special_bytes,
    special_regex,
)


def _read_plain(text: pa.Array, opts: Options, read: Callable[[str], float]) -> np.ndarray:
    """``read`` of each string (no nulls), once per distinct string."""
    encoded = pc.dictionary_encode(text)
    distinct = np.array([read(s) for s in encoded.dictionary.to_pylist()], dtype=float)
    return distinct[np.asarray(encoded.indices)] if len(distinct) else np.full(len(text), np.nan)


def _value_or_nan(opts: Options) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = parse_text(text, opts)
        return np.nan if value is None else value

    return read


def _closer_looks(text: pa.Array, opts: Options) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows the one-value reader reads (`route`), and with §1.1's readings the rows that
    `parse_general` looks at before its RE2 patterns (its `special_regex`; else ``None``).

    When both are wanted, one pass finds the rows matching either test, and each test then runs
    on those rows only: one pass over the text instead of two (few rows match either).
    """
    base = tier_options(opts)
    routed = text_route_regex(text, opts)
    if classic_options(base) or not routed:
        return matching(text, routed), None
    if not may_hold(text, special_bytes(base)):  # each match of the test holds one of them
        return matching(text, routed), np.zeros(len(text), bool)
    either = as_mask(pc.match_substring_regex(text, f"{routed}|{special_regex(base)}"))
    plain, special = np.zeros(len(text), bool), np.zeros(len(text), bool)
    if either.any():
        some = text.filter(either)
        plain[either] = as_mask(pc.match_substring_regex(some, routed))
        special[either] = as_mask(pc.match_substring_regex(some, special_regex(base)))
    return plain, special


def _tiers(
    text: pa.Array, opts: Options, special: np.ndarray | None, located: Located | None
) -> np.ndarray:
    """Values of a string array (nulls allowed) by the tiers; NaN where no number; their spans
    in ``located`` when given.

    `parse_lead`, and the rows it hands on to `parse_full`; with §1.1's readings,
    `parse_general` (``special``: see `_closer_looks`).
    """
    if not classic_options(opts):
        return parse_general(text, opts, special, located)
    out, rest = parse_lead(text, opts, located)
    if opts.pick == "last":  # a row holding the marker itself takes the plain path
        marked = rest & as_mask(pc.match_substring(text, MARK))
        for i in np.flatnonzero(marked):
            value = parse_text(text[i].as_py(), opts)
            out[i] = np.nan if value is None else value
        if located is not None:
            located.read_rows(text, marked, opts)
        rest &= ~marked
    if rest.any():
        part = None if located is None else Located.empty(int(rest.sum()))
        out[rest] = parse_full(text.filter(rest), opts, part)
        if located is not None and part is not None:
            located.take(rest, part)
    return out


def _whole_tokens(text: pa.Array, out: np.ndarray, located: Located, rule: str) -> None:
    """The spans of the rows `cast_whole` read: the whole text (ASCII) but a ``+`` first, which
    SPEC §1.4 does not count."""
    starts, ends, data = byte_spans(text)
    plus = data[np.minimum(starts, len(data) - 1)] == ord("+")  # (an empty text casts to none)
    start = plus.astype(np.int64) if plus.any() else np.zeros(len(text), np.int64)
    lengths = np.subtract(ends, starts, dtype=np.int64)
    whole = np.isfinite(out)
    if whole.all():  # the arrays made here are the spans (no copy)
        located.start, located.end = start, lengths
        located.rule[:] = RULE_CODES[rule]
    else:
        located.put(whole, start[whole], lengths[whole], rule)


def _parse_strings(text: pa.Array, opts: Options, located: Located | None = None) -> np.ndarray:
    """Values of a string array (nulls allowed); NaN where no number; their spans in
    ``located`` when given (SPEC §1.4).

    `cast_whole` first (a string Arrow casts to a finite float is a signed plain token, which
    no reading of §1.2 reads otherwise); then the routed rows by the one-value reader and the
    others by the tiers.
    """
    base = tier_options(opts)
    out = cast_whole(text, base)
    if out is not None and located is not None:
        _whole_tokens(text, out, located, FIRST if opts.pick == "first" else LAST)
    if out is not None and not text.null_count and np.isfinite(out).all():
        return out  # plain numbers only (a number column held as text)
    valid = np.asarray(text.is_valid(), dtype=bool)
    if out is None:  # a copy: `todo` changes below, `valid` must not
        out, todo = np.full(len(text), np.nan), valid.copy()
    else:
        todo = valid & ~np.isfinite(out)
    if not todo.any():
        return out
    plain, special = _closer_looks(text, opts)
    plain &= todo
    todo &= ~plain
    if todo.sum() * 2 > len(text):  # most rows: hidden as nulls (no copy of the text)
        hidden = text if (todo == valid).all() else nulls_where(text, ~todo)
        part = None if located is None else Located.empty(len(text))
        out[todo] = _tiers(hidden, base, None if special is None else special & todo, part)[todo]
        if located is not None and part is not None:
            located.take(todo, part.subset(todo))
    elif todo.any():
        part = None if located is None else Located.empty(int(todo.sum()))
        some = None if special is None else special[todo]
        out[todo] = _tiers(text.filter(todo), base, some, part)
        if located is not None and part is not None:
            located.take(todo, part)
    if plain.any() and located is not None:
        out[plain] = located.read_rows(text, plain, opts)
    elif plain.any():
        out[plain] = _read_plain(text.filter(plain), opts, _value_or_nan(opts))
    out[np.isinf(out)] = np.nan  # a token too large for a float
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


def as_arrow(values: Any) -> pa.Array | None:
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


def _encodable(value: Any) -> bool:
    if not isinstance(value, str) or value.isascii():
        return True
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def _unencodable_apart(
    values: Any, read_column: Callable[[pd.Series], np.ndarray], read_one: Callable[[str], Any]
) -> np.ndarray:
    """The strings UTF-8 cannot hold (a lone surrogate, as ``json.loads`` gives for
    ``"\\ud800"``), which Arrow refuses, read one by one by the one-value reader, which reads
    any Python string; the other values as a column (those rows missing there)."""
    items = pd.Series(values.tolist() if hasattr(values, "tolist") else list(values), dtype=object)
    bad = ~np.fromiter(map(_encodable, items), bool, len(items))
    out = read_column(items.where(~bad, None))
    out[bad] = [read_one(v) for v in items[bad]]
    return out


def parse_column(values: Any, options: Options | None = None, **overrides: Any) -> np.ndarray:
    """Read the number of every value in a column; float64 array, NaN where there is none.

    ``values`` is a pandas Series, a pyarrow array or a sequence. Equal, value for value, to
    `parse_number` (NaN for ``None``).

    >>> parse_column(["42", "about -3.5 units", "n/a", None]).tolist()
    [42.0, -3.5, nan, nan]
    """
    opts = Options.of(options, **overrides)
    try:
        array = as_arrow(values)
    except UnicodeEncodeError:
        return _unencodable_apart(
            values, lambda rest: parse_column(rest, opts), lambda v: parse_number(v, opts)
        )
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
    return _parse_strings(array, opts)


def _one_by_one(items: list[Any], opts: Options) -> tuple[np.ndarray, Located]:
    """`read_number` of each value."""
    located = Located.empty(len(items))
    values = np.full(len(items), np.nan)
    for i, item in enumerate(items):
        r = read_number(item, opts)
        if r.value is not None and r.rule is not None:
            values[i] = r.value
            located.start[i], located.end[i] = r.start, r.end
            located.rule[i] = RULE_CODES[r.rule]
    return values, located


def locate_column(values: Any, opts: Options) -> tuple[np.ndarray, Located]:
    """`parse_column`'s values, and where each was read (SPEC §1.4)."""
    try:
        array = as_arrow(values)
    except UnicodeEncodeError:
        array = None
    kind = None if array is None else array.type
    if array is not None and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        located = Located.empty(len(array))
        out = _parse_strings(array, opts, located)
        none = np.isnan(out) & (located.rule >= 0)  # a token too large for a float
        if none.any():
            located.start[none], located.end[none], located.rule[none] = -1, -1, -1
        return out, located
    if array is not None:
        items = array.to_pylist()
    else:
        items = values.tolist() if hasattr(values, "tolist") else list(values)
    if kind is not None and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        out = parse_column(array, opts)  # numbers: each span is its whole text
        located = Located.empty(len(out))
        found = np.flatnonzero(~np.isnan(out))
        lengths = np.array([len(number_text(items[i])) for i in found.tolist()], np.int64)
        located.put(found, 0, lengths, VALUE)
        return out, located
    return _one_by_one(items, opts)


@dataclass(frozen=True)
class ColumnReading:
    """`read_column`'s columns: the numbers (NaN: none), where each was read (``start``,
    ``end``: nullable integers, code points) and by which rule (strings, null where none)."""

    value: np.ndarray
    start: pd.api.extensions.ExtensionArray
    end: pd.api.extensions.ExtensionArray
    rule: pd.api.extensions.ExtensionArray


def as_columns(values: np.ndarray, located: Located) -> ColumnReading:
    """The columns of a `Located` (nullable integers, rule names)."""
    none = located.rule < 0
    rules = pc.take(pa.array(list(RULE_CODES)), pa.array(located.rule, mask=none))
    return ColumnReading(
        values,
        pd.arrays.IntegerArray(located.start, none),
        pd.arrays.IntegerArray(located.end, none.copy()),
        rules.to_pandas().array,
    )


def read_column(values: Any, options: Options | None = None, **overrides: Any) -> ColumnReading:
    r"""Read the number of every value in a column, where it was read and by which rule (SPEC
    §1.4): `read_number` of each value, as columns.

    >>> r = read_column(["x=-3 and 4", "n/a", "\\boxed{7}"], pick="answer")
    >>> r.value.tolist(), r.start.tolist(), r.end.tolist(), r.rule.tolist()
    ([4.0, nan, 7.0], [9, <NA>, 7], [10, <NA>, 8], ['last', nan, 'box'])
    """
    return as_columns(*locate_column(values, Options.of(options, **overrides)))


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
    try:
        array = as_arrow(values)
    except UnicodeEncodeError:
        return _unencodable_apart(
            values, lambda rest: several_numbers(rest, opts), lambda v: count_tokens(v, opts) == 2
        )
    if array is None:  # Python objects of mixed types: one by one
        items = values.tolist() if hasattr(values, "tolist") else list(values)
        return np.array([isinstance(v, str) and count_tokens(v, opts) == 2 for v in items], bool)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return np.zeros(len(array), bool)  # numbers, booleans, nulls: no text
    text, full, opts = array, opts, tier_options(opts)
    if cast_whole(text, opts) is not None:  # plain numbers (a number column as text): one each
        return np.zeros(len(text), bool)
    plain = route(text, full, counting=True)
    if opts.thousands == "any" and may_hold(text, b"{\\"):
        for latex in LATEX_COMMAS:
            text = pc.replace_substring(text, latex, ",")
    # At most one digit run: at most one token. The others are counted by the scan, except the
    # rows it may cut differently (`hard_pattern`, or holding `MARK`): those one by one.
    rest = ~as_mask(pc.match_substring_regex(text, "^[^0-9]*(?:[0-9]+[^0-9]*)?$")) & ~plain
    out = np.zeros(len(text), bool)
    if plain.any():
        count = _read_plain(array.filter(plain), full, lambda s: count_tokens(s, full) == 2)
        out[plain] = count > 0
    hard_regex = "|".join(filter(None, [hard_pattern(opts), MARK]))
    hard = rest & as_mask(pc.match_substring_regex(text, hard_regex))
    rest &= ~hard
    if rest.any():
        marked = pc.replace_substring_regex(text.filter(rest), re2_scan(opts), MARK)
        out[rest] = np.asarray(pc.count_substring(marked, MARK)) >= 2
    for i in np.flatnonzero(hard):
        out[i] = count_tokens(array[i].as_py(), opts) == 2
    return out
