"""SPEC §1.2.7 ``prices=True``: price typography after a decimal token (``$119. 95``, ``35€99``).

The two digits are ASCII whatever ``digits`` says; the token ends after them.
"""

from __future__ import annotations

import re

_AFTER_MARK = re.compile(r" (?P<d>[0-9]{2})(?![0-9])")
_EURO_CENTS = re.compile(r"€ ?(?P<d>[0-9]{2})(?![0-9]|[ \t]?€)")


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
