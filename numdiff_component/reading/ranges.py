r"""SPEC §1.2.5 ``ranges="mid"``: ``X - Y``, ``X \N{EN DASH} Y``, ``X to Y``,
``between X and Y`` as their midpoint.

A range is X (a token already read), a connector, Y's prefix (an optional currency symbol, with
an optional minus sign before or after it that negates Y; not after the connector ``-``) and the
token Y, read at once after the prefix. A unit may follow X when the same run follows Y
(``44 mg to 50 mg``); no unit is tried first, then, for each unit choice, the connectors in the
spec's order. Every look is anchored at a known position and bounded by what it reads, so a
text is still read in linear time: a failed range costs the connector, the prefix and Y.

Decisions where the spec is silent: a sign alone (no currency symbol) is also a prefix
(``-5 to -3`` is -4); the scale word and percent after Y are looked for right after Y, before
Y's unit (``5 million to 10 million`` is 7.5e6 with ``scale="words"``, ``5%-10%`` 0.075 with
``percent="fraction"``); a unit is a whole run, so ``5-10`` never takes ``-10`` as X's unit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from numdiff_component.reading.grammar import BLANKS, CURRENCY, GAP, MINUS, any_case, literal

NOT_UNIT = ".,;:!?()[]{}-\u2013\u2014"  # no character of a unit, nor a space or a digit
DASH, EN_DASH, TO, AND, BETWEEN = "-", "\u2013", "to", "and", "between"
_NOT_UNIT = set(NOT_UNIT)
_CONNECTORS = (
    (DASH, re.compile(literal(DASH))),
    (EN_DASH, re.compile(rf"{BLANKS}{EN_DASH}{BLANKS}")),
    (TO, re.compile(rf"{literal(DASH)}?{GAP}{any_case(TO)}{GAP}")),
    (AND, re.compile(rf"{GAP}{any_case(AND)}{GAP}")),
)
_PREFIX = re.compile(rf"[{MINUS}][{CURRENCY}]?|[{CURRENCY}][{MINUS}]?")
_CURRENCY_PREFIX = re.compile(rf"[{CURRENCY}]")
_BETWEEN = re.compile(rf"(?<![A-Za-z]){any_case(BETWEEN)}{GAP}\Z")
_X_PREFIX = re.compile(rf"(?:[{MINUS}]?[{CURRENCY}][{MINUS}]?|[{MINUS}])\Z")
_DASHES = DASH + EN_DASH


@dataclass(frozen=True)
class Read:
    """A token read at a position: its number with its sign, start and end."""

    value: float
    start: int
    end: int


Reader = Callable[[str, int], Read | None]  # Y at a position, with its own sign applied


def _unit(text: str, pos: int) -> str:
    """The whole run of unit characters at ``pos`` (after blanks), or "" when not 1-16 long."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    end = pos
    while end < len(text) and end - pos <= 16:
        c = text[end]
        if c.isspace() or c.isdecimal() or c in _NOT_UNIT:
            break
        end += 1
    return text[pos:end] if 1 <= end - pos <= 16 else ""


def _unit_after(text: str, pos: int, unit: str) -> int | None:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if text.startswith(unit, pos) and not _ascii_letter(text, pos + len(unit)):
        return pos + len(unit)
    return None


def _ascii_letter(text: str, i: int) -> bool:
    return i < len(text) and ("a" <= text[i] <= "z" or "A" <= text[i] <= "Z")


def _digit(c: str, any_digits: bool) -> bool:
    return c.isdecimal() if any_digits else c in "0123456789"


def _third_number(text: str, x: Read, y_end: int, any_digits: bool) -> bool:
    """A dash, an optional currency symbol and a digit after Y, or before X the reverse."""
    after = text[y_end : y_end + 3]
    if after[:1] and after[0] in _DASHES:
        rest = after[1:]
        rest = rest[1:] if rest[:1] and rest[0] in CURRENCY else rest
        if rest[:1] and _digit(rest[0], any_digits):
            return True
    before = text[max(0, x.start - 3) : x.start]
    if before[-1:] and before[-1] in CURRENCY:
        before = before[:-1]
    return len(before) >= 2 and before[-1] in _DASHES and _digit(before[-2], any_digits)


def _after_between(text: str, x: Read) -> bool:
    """X follows ``between``, a gap and a prefix."""
    head = text[max(0, x.start - 64) : x.start]  # a prefix and a gap are short: a bounded look
    prefix = _X_PREFIX.search(head)
    head = head[: prefix.start()] if prefix else head
    return _BETWEEN.search(head) is not None


def between_start(text: str, start: int) -> int | None:
    """Where ``between`` starts when a range's X at ``start`` follows it (SPEC §1.4)."""
    first = max(0, start - 64)  # as `_after_between`: a bounded look
    head = text[first:start]
    prefix = _X_PREFIX.search(head)
    found = _BETWEEN.search(head[: prefix.start()] if prefix else head)
    return None if found is None else first + found.start()


def extend(text: str, x: Read, read_y: Reader, any_digits: bool) -> tuple[Read, int] | None:
    """The range starting with X, as a token worth the midpoint, and Y's end (where its scale
    word and percent are looked for); ``None`` when X starts no range."""
    units = ["", _unit(text, x.end)]
    for unit in units if units[1] else units[:1]:
        pos = x.end if not unit else text.index(unit, x.end) + len(unit)
        for name, connector in _CONNECTORS:
            found = connector.match(text, pos)
            if not found or (name == AND and not _after_between(text, x)):
                continue
            prefix = (_CURRENCY_PREFIX if name == DASH else _PREFIX).match(text, found.end())
            start = prefix.end() if prefix else found.end()
            negate = prefix is not None and any(c in MINUS for c in prefix.group())
            y = read_y(text, start)
            if y is None:
                continue
            y_value = -y.value if negate else y.value
            end = y.end
            if unit:
                after = _unit_after(text, y.end, unit)
                if after is None:
                    continue
                end = after
            if name in _DASHES and (
                not x.value < y_value or _third_number(text, x, end, any_digits)
            ):
                continue
            return Read((x.value + y_value) / 2, x.start, end), y.end
    return None
