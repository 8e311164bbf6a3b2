r"""SPEC §1.2.6 ``negative="parens"``: an amount in parentheses is negative (``($99.99)``).

Enclosed: ``(`` (not after ``\``), blanks, optionally a currency symbol and blanks, the token and
its scale word, blanks, optionally ``%`` or ``\%``, blanks, ``)``. A sign between breaks it.
"""

from __future__ import annotations

import re

from numdiff_component.reading.grammar import BLANKS, CURRENCY, literal
from numdiff_component.reading.marks import LATEX_ESCAPE, PERCENT_MARK

OPEN, CLOSE = "(", ")"  # an enclosure
# One way to split the blanks (linear).
_CLOSE = re.compile(rf"{BLANKS}(?:{PERCENT_MARK}{BLANKS})?{literal(CLOSE)}")


def enclosed(text: str, start: int, end: int) -> bool:
    """Whether the token from ``start`` to ``end`` (with its scale word) stands in parentheses.

    The blanks before the token are walked back over: a cost the scan paid reaching the token."""
    return enclosure(text, start, end) is not None


def enclosure(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Where the parentheses enclosing the token from ``start`` to ``end`` open and close
    (``text[open:close]`` holds both), or ``None``."""
    close = _CLOSE.match(text, end)
    if not close:
        return None
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i > 0 and text[i - 1] in CURRENCY:
        i -= 1
        while i > 0 and text[i - 1] in " \t":
            i -= 1
    if i > 0 and text[i - 1] == OPEN and (i < 2 or text[i - 2] != LATEX_ESCAPE):
        return i - 1, close.end()
    return None
