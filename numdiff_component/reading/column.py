"""The column reader: `parse_column` and `several_numbers`, vectorised (pyarrow and numpy).

Rows whose reading may depend on a rule the RE2 tiers do not express (each §1.2 reading that
is on) are found by one cheap RE2 test each (`route`)
and read by the one-value reader, once per distinct text; all other rows are read by the tiers
(`tiers`, `tiers_readings`) with §1.2's readings off, which for them read the same: each test
is a superset of the texts where its rule can read anything (the argument is beside each test).
Differential property tests prove the column reader equal to `parse_number`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.amounts import route_after_digits
from numdiff_component.reading.buffers import _mask, _may_hold
from numdiff_component.reading.fractions import FRAC, SLASH, VULGAR
from numdiff_component.reading.grammar import (
    BLANK,
    BLANKS,
    EXPONENT,
    GAP,
    LATEX_COMMAS,
    MINUS,
    SIGNS,
    any_case,
    char_class,
    decimal_ranges,
    literal,
    separators,
)
from numdiff_component.reading.parens import OPEN
from numdiff_component.reading.plain import count_tokens, parse_number, parse_text
from numdiff_component.reading.prices import CENTS_AFTER, MARK_GAP
from numdiff_component.reading.ranges import BETWEEN, DASH, EN_DASH, NOT_UNIT, TO
from numdiff_component.reading.scientific import BASE, CARET, SUPER_SIGNS, SUPERSCRIPTS
from numdiff_component.reading.tiers import (
    _MARK,
    _cast_whole,
    _nulls_where,
    _parse_full,
    _parse_lead,
)
from numdiff_component.reading.tiers_readings import (
    _classic,
    _hard_regex,
    _parse_general,
    _re2_scan,
    _special_bytes,
    _special_regex,
)
from numdiff_component.reading.words import route_words

# --- which rows the one-value reader reads ------------------------------------------------
#
# Each test matches every text where its rule can read anything; a text it does not match reads
# the same with the rule off, so the tiers (which read with §1.2's readings off) are exact there.


def _unit(more: str = "") -> str:
    """A unit character of §1.2.5 (a superset: only ASCII spaces are left out of it), but
    ``more``. Its digits are Python's (`decimal_ranges`), as `ranges` reads them."""
    return rf"[^\s0-9{decimal_ranges()}{char_class(NOT_UNIT + more)}]"


def _ranges_test() -> str:
    r"""§1.2.5: X's last character (a digit, a point, the ``}`` of a ``\frac``: other token ends
    are routed by their own readings' tests), then, after blanks and a unit run or not, where
    `ranges.extend` looks for them, a connector: ``-`` right there, an en dash after blanks, ``to``
    after a gap; or ``between``.

    One case is left out, so that exponents are not routed (``6.72e-03``): a unit that is just
    ``e`` or ``E``, right after a digit or a point, then ``-`` and an ASCII digit. There the
    decimal token took ``e-D`` as its exponent (greedily), so no token ends before the ``e``;
    except where the digit ends a token that takes no exponent: A/B, ``\frac``, and a token's
    own exponent (``1e0e-5e``), kept by the last alternatives.
    A unit's length (1 to 16 characters) is not bounded here: a superset, and a counted run of
    this class made RE2 build a large automaton on every call (milliseconds) and search slower.
    """
    x = "[0-9.,}]"
    dash = rf"{BLANKS}{EN_DASH}|{literal(DASH)}?{GAP}{any_case(TO)}[{BLANK}]"
    connector = f"(?:{literal(DASH)}|{dash})"
    unit, unit_not_e = _unit(), _unit(EXPONENT)
    exponent = rf"[{EXPONENT}][{char_class(SIGNS)}]?[0-9]+"  # a token's own exponent
    return "|".join(
        [
            f"{x}{connector}",
            rf"{x}{GAP}{unit}+{connector}",
            f"{x}{unit_not_e}{unit}*{connector}",
            f"{x}[{EXPONENT}]{unit}+{connector}",
            f"{x}[{EXPONENT}](?:{dash}|{literal(DASH)}[^0-9])",
            rf"(?:\}}|{SLASH}[0-9]+|{exponent})[{EXPONENT}]{literal(DASH)}",
            any_case(BETWEEN),
        ]
    )


_MARKS = char_class("".join(separators(False)))  # either decimal mark, "." or ","
_ROUTES: dict[str, Callable[[Options], str | None]] = {
    # §1.2.1: a phrase starts with one of FIRST_WORDS ("a" needs "hundred" or an M after it),
    # a whole run of ASCII letters (any case; (?i) folds a few more characters: a superset).
    # With pick="first" (not when counting tokens), only one before the first ASCII digit: the
    # first token starts there or before (other token starts are routed by their own tests),
    # and a phrase after it is read only as a range's Y, which the ranges test routes.
    # v4 (words="all"): also the sign words before a token and `words.tail`'s first words
    # after a digit (`route_words`, `route_after_digits`).
    "words": lambda o: (
        rf"(?i){'^[^0-9]*?' if o.pick == 'first' else ''}(?:^|[^a-z&])"
        rf"(?:{route_words(o.words == 'all')})(?:[^a-z&]|$)"
        + (f"|(?i){route_after_digits()}" if o.words == "all" else "")
        if o.words != "none"
        else None
    ),
    # v4: Indian grouping (two-digit groups), read with thousands="any".
    "indian": lambda o: (
        "[0-9]{0}[0-9]{{2}}{0}[0-9]".format(literal(separators(o.decimal_comma)[0]))
        if o.thousands == "any"
        else None
    ),
    # §1.2.2: only a digit that is not ASCII reads differently.
    "digits": lambda o: f"[{decimal_ranges()}]" if o.digits == "any" else None,
    # §1.2.3: a vulgar fraction, any \frac (bare arguments, W\frac), or W, a blank, A/.
    "fractions": lambda o: (
        rf"[{VULGAR}]|{FRAC}|[0-9][{BLANK}][0-9]+{SLASH}" if o.fractions == "all" else None
    ),
    # §1.2.4: every form of E follows a "10": ^, a superscript, or a minus and a digit.
    # v4: a power ^E after any decimal token.
    "scientific": lambda o: (
        rf"{BASE}(?:[{SUPERSCRIPTS}{SUPER_SIGNS}]|[{char_class(MINUS)}][0-9])|[0-9.]{literal(CARET)}"
        if o.scientific
        else None
    ),
    # §1.2.5: see `_ranges_test`.
    "ranges": lambda o: _ranges_test() if o.ranges == "mid" else None,
    # §1.2.6: an enclosure opens with "(".
    "negative": lambda o: literal(OPEN) if o.negative == "parens" else None,
    # §1.2.7: a token ending with its mark, a space and two digits; or digits then €.
    "prices": lambda o: (
        rf"[0-9][{_MARKS}]{MARK_GAP}[0-9][0-9]|[0-9]{CENTS_AFTER}" if o.prices else None
    ),
}


@lru_cache(maxsize=64)
def route_regex(opts: Options, indian: bool = True) -> str:
    """One RE2 pattern matching the rows the one-value reader reads ("" for none); without
    the Indian grouping test when ``indian`` is false."""
    tests = (test for name, test in _ROUTES.items() if indian or name != "indian")
    return "|".join(filter(None, (test(opts) for test in tests)))


def _text_route_regex(text: pa.Array, opts: Options) -> str:
    """`route_regex` for ``text``. When the Indian grouping test would be the only one (a pass
    of its own), it is kept only if the buffer holds the group separator twice three bytes
    apart, as every Indian token does (that numpy look costs a tenth of the RE2 pass)."""
    if opts.thousands != "any" or route_regex(opts, indian=False):
        return route_regex(opts)
    data = text.buffers()[2]
    if data is None:
        return ""
    separator = ord(separators(opts.decimal_comma)[0])
    gaps = np.diff(np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == separator))
    # Two separators 3 bytes apart have at most two between them: 1, 2 or 3 gaps summing to 3.
    apart = (gaps == 3).any() or (gaps[:-1] + gaps[1:] == 3).any()
    apart = apart or (gaps[:-2] + gaps[1:-1] + gaps[2:] == 3).any()
    return route_regex(opts, indian=bool(apart))


@lru_cache(maxsize=64)
def tier_options(opts: Options) -> Options:
    """The options with §1.2's readings off: how the tiers read the other rows."""
    return Options.of(
        opts,
        fractions=bool(opts.fractions),
        words="none",
        digits="ascii",
        scientific=False,
        ranges="none",
        negative="sign",
        prices=False,
    )


def route(text: pa.Array, opts: Options, *, counting: bool = False) -> np.ndarray:
    """The rows the one-value reader reads: none with §1.2's readings off. ``counting``: for
    counting tokens (every token counts, whatever ``pick`` says)."""
    return _matching(
        text, _text_route_regex(text, Options.of(opts, pick="last") if counting else opts)
    )


def _matching(text: pa.Array, pattern: str) -> np.ndarray:
    """The rows matching ``pattern``; none for ""."""
    if not pattern:
        return np.zeros(len(text), bool)
    return _mask(pc.match_substring_regex(text, pattern))


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
    `parse_general` looks at before its RE2 patterns (its `_special_regex`; else ``None``).

    When both are wanted, one pass finds the rows matching either test, and each test then runs
    on those rows only: one pass over the text instead of two (few rows match either).
    """
    base = tier_options(opts)
    routed = _text_route_regex(text, opts)
    if _classic(base) or not routed:
        return _matching(text, routed), None
    if not _may_hold(text, _special_bytes(base)):  # each match of the test holds one of them
        return _matching(text, routed), np.zeros(len(text), bool)
    either = _mask(pc.match_substring_regex(text, f"{routed}|{_special_regex(base)}"))
    plain, special = np.zeros(len(text), bool), np.zeros(len(text), bool)
    if either.any():
        some = text.filter(either)
        plain[either] = _mask(pc.match_substring_regex(some, routed))
        special[either] = _mask(pc.match_substring_regex(some, _special_regex(base)))
    return plain, special


def _tiers(text: pa.Array, opts: Options, special: np.ndarray | None = None) -> np.ndarray:
    """Values of a string array (nulls allowed) by the tiers; NaN where no number.

    `parse_lead`, and the rows it hands on to `parse_full`; with §1.1's readings,
    `parse_general` (``special``: see `_closer_looks`).
    """
    if not _classic(opts):
        return _parse_general(text, opts, special)
    out, rest = _parse_lead(text, opts)
    if opts.pick == "last":  # a row holding the marker itself takes the plain path
        marked = rest & _mask(pc.match_substring(text, _MARK))
        for i in np.flatnonzero(marked):
            value = parse_text(text[i].as_py(), opts)
            out[i] = np.nan if value is None else value
        rest &= ~marked
    if rest.any():
        out[rest] = _parse_full(text.filter(rest), opts)
    return out


def _parse_strings(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of a string array (nulls allowed); NaN where no number.

    `cast_whole` first (a string Arrow casts to a finite float is a signed plain token, which
    no reading of §1.2 reads otherwise); then the routed rows by the one-value reader and the
    others by the tiers.
    """
    base = tier_options(opts)
    out = _cast_whole(text, base)
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
        hidden = text if (todo == valid).all() else _nulls_where(text, ~todo)
        out[todo] = _tiers(hidden, base, None if special is None else special & todo)[todo]
    elif todo.any():
        out[todo] = _tiers(text.filter(todo), base, None if special is None else special[todo])
    if plain.any():
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
        array = _as_arrow(values)
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
        array = _as_arrow(values)
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
    if _cast_whole(text, opts) is not None:  # plain numbers (a number column as text): one each
        return np.zeros(len(text), bool)
    plain = route(text, full, counting=True)
    if opts.thousands == "any" and _may_hold(text, b"{\\"):
        for latex in LATEX_COMMAS:
            text = pc.replace_substring(text, latex, ",")
    # At most one digit run: at most one token. The others are counted by the scan, except the
    # rows it may cut differently (`_hard_regex`, or holding `_MARK`): those one by one.
    rest = ~_mask(pc.match_substring_regex(text, "^[^0-9]*(?:[0-9]+[^0-9]*)?$")) & ~plain
    out = np.zeros(len(text), bool)
    if plain.any():
        count = _read_plain(array.filter(plain), full, lambda s: count_tokens(s, full) == 2)
        out[plain] = count > 0
    hard_regex = "|".join(filter(None, [_hard_regex(opts), _MARK]))
    hard = rest & _mask(pc.match_substring_regex(text, hard_regex))
    rest &= ~hard
    if rest.any():
        marked = pc.replace_substring_regex(text.filter(rest), _re2_scan(opts), _MARK)
        out[rest] = np.asarray(pc.count_substring(marked, _MARK)) >= 2
    for i in np.flatnonzero(hard):
        out[i] = count_tokens(array[i].as_py(), opts) == 2
    return out
