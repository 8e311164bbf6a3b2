"""SPEC §1.3: the unit of a quantity, read after the number's token.

The unit run after the token is cut at word ends; the longest prefix that is a unit (the alias
table, or a text pint's default registry parses) wins, unless it holds a word of the stop table.
A run is at most `MAX_UNIT` characters, so a row costs pint a bounded time whatever its text;
each text is parsed once (a cache), whichever reader asks. pint is imported on the first unit
looked up, never when ``units="none"``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from numdiff_component.reading.grammar import CURRENCY, SIGNS

ALIASES = {
    "fl oz": "fluid_ounce",
    "kmh": "kilometer_per_hour",
    "deg C": "degree_Celsius",
    "degree Celsius": "degree_Celsius",
    "degrees Celsius": "degree_Celsius",
    "℃": "degree_Celsius",
    "deg F": "degree_Fahrenheit",
    "degree Fahrenheit": "degree_Fahrenheit",
    "degrees Fahrenheit": "degree_Fahrenheit",
    "℉": "degree_Fahrenheit",
    "mm Hg": "millimeter_Hg",
}
"""What pint's registry lacks or misreads in model text, as a name pint knows (pint itself reads
``sq ft``, ``cc`` and ``°``)."""
STOP = frozenset({"a", "am", "are", "as", "at", "in", "k", "me", "pi", "pm", "point", "points"})
"""English words that pint would read as a unit (annum, inch, Boltzmann's constant, ...)."""
MAX_UNIT = 32
"""The longest unit run read, in characters."""

_SYMBOLS = "°µΩ℃℉"
# A unit run: a letter or symbol, then word characters, joiners, "^" with its exponent, and one
# blank between words; at most MAX_UNIT characters (the bound keeps pint's work per row small).
_WORD = rf"(?:[^\W\d_]|[{_SYMBOLS}])(?:[^\W\d]|[{_SYMBOLS}²³¹⁻]|\^-?[0-9]+)*"
_RUN = re.compile(rf"[ \t]*({_WORD}(?:(?:[ \t]|[ \t]*[/*·][ \t]*){_WORD})*)")
_ENDS = re.compile(rf"{_WORD}")


def unit_run(text: str, pos: int) -> str:
    """The unit run at ``pos`` (after blanks) up to its last whole word, at most `MAX_UNIT`
    characters; "" for none. A word cut by the bound or followed by a digit is not whole."""
    start = pos
    while start < len(text) and text[start] in " \t":  # a linear skip: never handed to a regex
        start += 1
    found = _RUN.match(text[start : start + MAX_UNIT])
    if not found:
        return ""
    run, after = found.group(1), start + found.end()
    if after < len(text) and (text[after].isalnum() or text[after] == "_"):
        words = list(_ENDS.finditer(run))
        run = run[: words[-2].end()] if len(words) > 1 else ""
    return run


def unit_in(run: str) -> str | None:
    """The longest prefix of ``run`` ending at a word's end that is a unit (§1.3), or ``None``."""
    ends = [found.end() for found in _ENDS.finditer(run)]
    for end in reversed(ends):
        candidate = run[:end]
        if unit_name(candidate) is not None:
            return candidate
    return None


@lru_cache(maxsize=4096)
def unit_name(text: str) -> str | None:
    """The canonical name of the unit ``text`` (an alias, or what pint parses), or ``None``."""
    if any(word in STOP for word in re.split(r"[ \t/*·^]+", text)):
        return None
    unit = parsed(ALIASES.get(text, text))
    return None if unit is None else str(unit)


@lru_cache(maxsize=4096)
def parsed(text: str) -> Any:
    """pint's unit for ``text``, or ``None`` where pint cannot parse it (never an error)."""
    if text in CURRENCY:
        return None
    try:
        return registry().parse_units(text)
    except Exception:  # pint raises many kinds on text that is not a unit
        return None


@lru_cache(maxsize=1)
def registry() -> Any:
    """pint's default registry, made on first use (pint is imported only with units on)."""
    import pint

    return pint.UnitRegistry()


def currency_before(text: str, start: int) -> str | None:
    """The currency symbol right before the token at ``start``, or before its sign."""
    at = start - 1
    if at >= 1 and text[at] in SIGNS:
        at -= 1
    return text[at] if at >= 0 and text[at] in CURRENCY else None


def unit_after(text: str, pos: int, start: int) -> str | None:
    """The unit of the quantity whose number starts at ``start`` and ends at ``pos``: the unit
    text after it (§1.3), else the currency symbol before it, else ``None``."""
    return unit_in(unit_run(text, pos)) or currency_before(text, start)
