"""SPEC §1.2.7 ``prices=True``: price typography after a decimal token (``$119. 95``, ``35€99``).

The two digits are ASCII whatever ``digits`` says; the token ends after them.
"""

from __future__ import annotations

import re

from numdiff_component.reading.grammar import BLANK

CENTS_AFTER = "\u20ac"  # the symbol that cents may follow: 35€99
MARK_GAP = " "  # after a decimal mark, before the cents: $119. 95
_AFTER_MARK = re.compile(rf"{MARK_GAP}(?P<d>[0-9]{{2}})(?![0-9])")
_EURO_CENTS = re.compile(
    rf"{CENTS_AFTER}{MARK_GAP}?(?P<d>[0-9]{{2}})(?![0-9]|[{BLANK}]?{CENTS_AFTER})"
)


def price_tail(text: str, end: int, number: str, point: str) -> tuple[float, int] | None:
    """Cents after a decimal token without exponent ending at ``end``; ``number`` is its text
    without separators, ``.`` as its point; ``point`` the token's decimal mark in the text."""
    if text[end - 1] == point:  # "119. 95": the token ends with its decimal mark
        found = _AFTER_MARK.match(text, end)
        return (float(number + found.group("d")), found.end()) if found else None
    if "." in number:
        return None
    found = _EURO_CENTS.match(text, end)  # "35€99", "35€ 99"; "10€ 20€" is 10
    return (float(f"{number}.{found.group('d')}"), found.end()) if found else None
