"""SPEC §1.4: where a number was read (its span) and by which rule, declared once.

`RULES` is the closed vocabulary of rules, each with what it means (SPEC §1.4's table lists
the same, and a test compares them); `Reading` is what the one-value reader gives
(`located.read_number`). Offsets are in code points of the text as a Python ``str``.
"""

from __future__ import annotations

from dataclasses import dataclass

VALUE, FIRST, LAST, MARKER, BOX = "value", "first", "last", "marker", "box"
FRACTION, SCIENTIFIC, RANGE, PRICE, WORDS = "fraction", "scientific", "range", "price", "words"
RULES = {
    VALUE: "from a value that is a number, not text: the span is the number as written",
    FIRST: "as the first token of the text",
    LAST: "as the last token of the text",
    MARKER: "as the first token after the last answer marker, not a box",
    BOX: "as the first token inside the last \\boxed{...} or \\fbox{...}",
    FRACTION: "as \\frac, A/B, a mixed number or a vulgar fraction",
    SCIENTIFIC: "as 10^E, M x 10^E or M^E",
    RANGE: "as a range, its midpoint",
    PRICE: "with a price's cents",
    WORDS: "as English words, or digits with the words read after them",
}
"""Each rule that reads a number, and what it means (SPEC §1.4)."""
RULE_CODES = {rule: code for code, rule in enumerate(RULES)}
"""Each rule's code in a column (`Located.rule`; -1: no number)."""


@dataclass(frozen=True)
class Reading:
    """The number read from a value, where (``text[start:end]``) and by which rule (SPEC §1.4);
    all ``None`` when the value has no number."""

    value: float | None
    start: int | None = None
    end: int | None = None
    rule: str | None = None


NOTHING = Reading(None)


ELLIPSIS = "\u2026"  # where the text around a span is cut


def around(text: str, start: int, end: int, width: int = 30) -> tuple[str, str, str]:
    """The text before ``text[start:end]``, that span, and the text after it: ``width``
    characters on each side at most, `ELLIPSIS` where the text goes on (a span longer than
    ``2 * width`` keeps its ends, cut in the middle), so that the number read shows whatever
    the text's length.

    >>> around("Step 1: 3+4=7. Step 2: 7*2=14. The answer is 14.", 45, 47, width=10)
    ('…answer is ', '14', '.')
    """
    token = text[start:end]
    if len(token) > 2 * width:
        token = f"{token[:width]}{ELLIPSIS}{token[-width:]}"
    first, last = max(0, start - width), min(len(text), end + width)
    before = (ELLIPSIS if first > 0 else "") + text[first:start]
    return before, token, text[end:last] + (ELLIPSIS if last < len(text) else "")
