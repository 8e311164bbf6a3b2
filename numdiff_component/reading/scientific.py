r"""SPEC §1.2.4 ``scientific=True``: ``M x 10^E`` (any times sign) after a decimal
token, and ``10^E`` alone.

E is ``^``, blanks, a signed run of digits, bare or in braces; or superscript digits; or, after
a times sign only, a minus and digits. Its digits are ASCII whatever ``digits`` says.
"""

from __future__ import annotations

import math
import re

from numdiff_component.reading.grammar import BLANKS, MINUS, SIGNS, char_class, literal

TIMES = "(?:[\u00d7xX*\u00b7\u22c5]|\\\\times|\\\\cdot)"  # times, x, X, *, dot, dot operator
BASE = "10"  # the base every form of E follows
SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
SUPER_SIGNS = "\u207a\u207b"  # superscript + and -
_SIGN = f"[{char_class(SIGNS)}]"
CARET = "^"  # before E; v4: after any decimal token too (power notation)
_BRACED = rf"\{{{BLANKS}(?P<b>{_SIGN}?[0-9]+){BLANKS}\}}"
_CARET = rf"{literal(CARET)}{BLANKS}(?:(?P<c>{_SIGN}?[0-9]+)|{_BRACED})"
_SUPER = rf"(?P<s>[{SUPER_SIGNS}]?[{SUPERSCRIPTS}]+)"
_TAIL = re.compile(
    rf"{BLANKS}{TIMES}{BLANKS}{BASE}(?:{_CARET}|{_SUPER}|(?P<m>[{char_class(MINUS)}][0-9]+))(?![0-9])"
)
_POWER = re.compile(rf"(?<![0-9.]){BASE}(?:{_CARET}|{_SUPER})(?![0-9])")
_FROM_SUPER = str.maketrans(SUPERSCRIPTS + SUPER_SIGNS + MINUS, "0123456789+-" + "-" * len(MINUS))


def _exponent(found: re.Match[str]) -> str:
    return next(g for g in found.group("c", "b", "s") if g is not None).translate(_FROM_SUPER)


def times_ten_tail(text: str, end: int, mantissa: str) -> tuple[float, int] | None:
    """``x 10^E`` (any times sign) right after a token ending at ``end`` whose number is
    ``mantissa`` (without separators, ``.`` as its point): ``float(mantissa + "e" + E)`` and
    where E ends."""
    found = _TAIL.match(text, end)
    if not found:
        return None
    exponent = found.group("m") if found.group("m") else _exponent(found)
    return float(f"{mantissa}e{exponent.translate(_FROM_SUPER)}"), found.end()


_POWER_TAIL = re.compile(_CARET)


def power_tail(text: str, end: int, mantissa: str) -> tuple[float, int] | None:
    """v4: ``^E`` right after a decimal token without exponent (``1.1^23``, ``2^{10}``):
    ``mantissa ** E``; infinite when it overflows (then no number)."""
    found = _POWER_TAIL.match(text, end) if text.startswith(CARET, end) else None
    if not found:
        return None
    exponent = float((found.group("c") or found.group("b")).translate(_FROM_SUPER))
    try:
        return float(mantissa) ** exponent, found.end()
    except (OverflowError, ZeroDivisionError):
        return math.inf, found.end()


def read_power(text: str, pos: int) -> tuple[float, int] | None:
    """The token ``10^E`` (or ``10`` and superscripts) at ``pos``."""
    found = _POWER.match(text, pos)
    return (float(f"1e{_exponent(found)}"), found.end()) if found else None
