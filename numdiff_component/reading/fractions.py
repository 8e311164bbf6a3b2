r"""SPEC §1.1 ``fractions=True`` and §1.2.3 ``fractions="all"``: ``\frac``, ``A/B``, mixed
numbers and vulgar fractions. Each reader takes the text and a position and gives the number
read there and where it ends, or ``None``; denominators are checked for zero here, not in the
patterns, so the patterns stay linear (no nested alternatives on the digits).

A quotient is ``float(A) / float(B)``, as the column reader computes it: each side rounded to a
float first, and no number (NaN) when a side is too large for a float. No ``int()`` of the
digits: Python refuses more than 4,300 of them, and a huge int has no float.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

from numdiff_component.options import Options
from numdiff_component.reading.grammar import decimal_value, digit_class, literal, separators

VULGAR = "\u00bc-\u00be\u2150-\u215e"  # ¼-¾, ⅐-⅞: their value is unicodedata.numeric
SLASH = "/"  # A/B
FRAC_COMMANDS = ("\\frac", "\\dfrac", "\\tfrac")  # \frac{N}{M} and its two styles
FRAC = "(?:" + "|".join(literal(c) for c in FRAC_COMMANDS) + ")"
Read = tuple[float, int] | None


def frac_regex(decimal_comma: bool, digit: str = "[0-9]", *, bare: bool = False) -> str:
    r"""``\frac{N}{M}`` (``\dfrac``, ``\tfrac``): groups ``fn``, ``fm``; with ``bare`` an argument
    may be one digit without braces (``\frac12``). For RE2 too (M's not-zero rule is written
    as ``0*[1-9]``, unambiguous, only when ``digit`` is ASCII; else the caller checks it)."""
    point = literal(separators(decimal_comma)[1])
    number = rf"{digit}+(?:{point}{digit}*)?"
    nonzero = number
    if digit == "[0-9]":
        nonzero = rf"0*[1-9][0-9]*(?:{point}[0-9]*)?|0+{point}0*[1-9][0-9]*"
    top = rf"\{{[ \t]*(?P<fn>{number})[ \t]*\}}"
    bottom = rf"\{{[ \t]*(?P<fm>{nonzero})[ \t]*\}}"
    if bare:
        top = rf"(?:{top}|(?P<fn1>{digit}))"
        bottom = rf"(?:{bottom}|(?P<fm1>{digit}))"
    return rf"{FRAC}{top}{bottom}"


def quotient(top: float, bottom: float) -> float:
    """``top / bottom`` (``bottom`` not zero); NaN, no number, when a side is not finite."""
    return top / bottom if math.isfinite(top) and math.isfinite(bottom) else math.nan


def _less(a: str, b: str) -> bool:
    """``a < b`` for two runs of decimal digits (any Nd), exactly, whatever their length."""
    a, b = (x if x.isascii() else "".join(str(unicodedata.decimal(c)) for c in x) for x in (a, b))
    a, b = a.lstrip("0"), b.lstrip("0")
    return (len(a), a) < (len(b), b)


@lru_cache(maxsize=16)
def _patterns(decimal_comma: bool, digits: str, bare: bool) -> tuple[re.Pattern[str], ...]:
    d = digit_class(Options(digits=digits))  # type: ignore[arg-type]
    frac = re.compile(frac_regex(decimal_comma, d, bare=bare))
    # A/B: not preceded by a digit or "/", not followed by a digit or by "/" and a digit.
    slash = re.compile(rf"(?<!/)(?<!{d})(?P<a>{d}+)/(?P<b>{d}+)(?!{d}|/{d})")

    def whole(name: str) -> str:  # a whole-number argument, braced or one bare digit
        return rf"(?:\{{[ \t]*(?P<{name}>{d}+)[ \t]*\}}|(?P<{name}1>{d}))"

    mixed = re.compile(
        rf"(?<![/.,])(?<!{d})(?P<w>{d}+)(?:[ \t](?P<a>{d}+)/(?P<b>{d}+)(?!{d}|/{d})"
        rf"|{FRAC}{whole('n')}{whole('m')})"
    )
    vulgar = re.compile(rf"(?:(?P<w>{d}+)[ \t]?)?(?P<v>[{VULGAR}])")
    return frac, slash, mixed, vulgar


def read_frac(text: str, pos: int, opts: Options) -> Read:
    r"""``\frac{N}{M}`` at ``pos``: N/M (M not zero)."""
    found = _patterns(opts.decimal_comma, opts.digits, opts.fractions == "all")[0].match(text, pos)
    if not found:
        return None
    top = found.group("fn") or found.groupdict().get("fn1") or ""
    bottom = found.group("fm") or found.groupdict().get("fm1") or ""
    denominator = decimal_value(bottom, opts.decimal_comma)
    if denominator == 0:
        return None
    return quotient(decimal_value(top, opts.decimal_comma), denominator), found.end()


def read_slash(text: str, pos: int, opts: Options) -> Read:
    """``A/B`` at ``pos`` (B not zero; dates are no fraction)."""
    found = _patterns(opts.decimal_comma, opts.digits, False)[1].match(text, pos)
    if not found or float(found.group("b")) == 0:
        return None
    return quotient(float(found.group("a")), float(found.group("b"))), found.end()


def read_mixed(text: str, pos: int, opts: Options) -> Read:
    r"""W A/B or W\frac{A}{B} at ``pos`` when A < B (``fractions="all"``): W + A/B."""
    found = _patterns(opts.decimal_comma, opts.digits, True)[2].match(text, pos)
    if not found:
        return None
    groups = found.groupdict()
    a = groups["a"] or groups["n"] or groups["n1"]
    b = groups["b"] or groups["m"] or groups["m1"]
    if not _less(a, b):
        return None
    return float(found.group("w")) + quotient(float(a), float(b)), found.end()


def read_vulgar(text: str, pos: int, opts: Options) -> Read:
    """A vulgar fraction at ``pos``, alone or added to the digits right before it."""
    found = _patterns(opts.decimal_comma, opts.digits, True)[3].match(text, pos)
    if not found:
        return None
    whole = float(found.group("w")) if found.group("w") else 0.0
    return whole + unicodedata.numeric(found.group("v")), found.end()
