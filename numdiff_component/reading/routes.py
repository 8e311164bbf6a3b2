"""Which rows the column reader hands to the one-value reader (`route`), and how the tiers read
the others (`tier_options`: with §1.2's readings off).

`ROUTES` holds one cheap RE2 test per §1.2 reading that is on, each beside its exactness
argument: it matches every text where its reading can read anything, so a text it does not match
reads the same with the reading off, and the tiers are exact there. The words, symbols and bytes
come from the readings' own tables (`route_words`, `route_after_digits`, the patterns).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.amounts import route_after_digits
from numdiff_component.reading.buffers import as_mask
from numdiff_component.reading.fractions import FRAC, SLASH, VULGAR
from numdiff_component.reading.grammar import (
    BLANK,
    BLANKS,
    EXPONENT,
    GAP,
    MINUS,
    SIGNS,
    any_case,
    char_class,
    decimal_ranges,
    literal,
    separators,
)
from numdiff_component.reading.number_words import WORD_CHARS, route_words
from numdiff_component.reading.parens import OPEN
from numdiff_component.reading.prices import CENTS_AFTER, MARK_GAP
from numdiff_component.reading.ranges import BETWEEN, DASH, EN_DASH, NOT_UNIT, TO
from numdiff_component.reading.scientific import BASE, CARET, SUPER_SIGNS, SUPERSCRIPTS


def unit_class(more: str = "") -> str:
    """A unit character of §1.2.5 (a superset: only ASCII spaces are left out of it), but
    ``more``. Its digits are Python's (`decimal_ranges`), as `ranges` reads them."""
    return rf"[^\s0-9{decimal_ranges()}{char_class(NOT_UNIT + more)}]"


def ranges_test() -> str:
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
    unit, unit_not_e = unit_class(), unit_class(EXPONENT)
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


DECIMAL_MARKS = char_class("".join(separators(False)))  # either decimal mark, "." or ","
ROUTES: dict[str, Callable[[Options], str | None]] = {
    # §1.2.1: a phrase starts with one of FIRST_WORDS ("a" needs "hundred" or an M after it),
    # a whole run of ASCII letters (any case; (?i) folds a few more characters: a superset).
    # With pick="first" (not when counting tokens), only one before the first ASCII digit: the
    # first token starts there or before (other token starts are routed by their own tests),
    # and a phrase after it is read only as a range's Y, which the ranges test routes.
    # v4 (words="all"): also the sign words before a token and `amounts.tail`'s first words
    # after a digit (`route_words`, `route_after_digits`).
    "words": lambda o: (
        rf"(?i){'^[^0-9]*?' if o.pick == 'first' else ''}(?:^|[^{WORD_CHARS}])"
        rf"(?:{route_words(o.words == 'all')})(?:[^{WORD_CHARS}]|$)"
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
    # §1.2.5: see `ranges_test`.
    "ranges": lambda o: ranges_test() if o.ranges == "mid" else None,
    # §1.2.6: an enclosure opens with "(".
    "negative": lambda o: literal(OPEN) if o.negative == "parens" else None,
    # §1.2.7: a token ending with its mark, a space and two digits; or digits then €.
    "prices": lambda o: (
        rf"[0-9][{DECIMAL_MARKS}]{MARK_GAP}[0-9][0-9]|[0-9]{CENTS_AFTER}" if o.prices else None
    ),
}


@lru_cache(maxsize=64)
def route_regex(opts: Options, indian: bool = True) -> str:
    """One RE2 pattern matching the rows the one-value reader reads ("" for none); without
    the Indian grouping test when ``indian`` is false."""
    tests = (test for name, test in ROUTES.items() if indian or name != "indian")
    return "|".join(filter(None, (test(opts) for test in tests)))


def text_route_regex(text: pa.Array, opts: Options) -> str:
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
    return matching(
        text, text_route_regex(text, Options.of(opts, pick="last") if counting else opts)
    )


def matching(text: pa.Array, pattern: str) -> np.ndarray:
    """The rows matching ``pattern``; none for ""."""
    if not pattern:
        return np.zeros(len(text), bool)
    return as_mask(pc.match_substring_regex(text, pattern))
