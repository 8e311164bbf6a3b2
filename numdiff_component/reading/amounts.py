"""SPEC v4 §1.2.8 (``words="all"``): what a token reads after it in English, and the sign word
before it: multipliers after digits (``3 dozens``, ``5 lakh``, ``5-million``), ``out of`` and
``over`` (``1 out of 3``, ``one over three``), composite amounts (``3 dollars 50 cents``),
``minus five``. Each is anchored at the token's end (or start) and reads forward a bounded
pattern and one whole number: linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from numdiff_component.reading.grammar import any_case
from numdiff_component.reading.marks import SCALE_WORDS
from numdiff_component.reading.number_words import (
    ALL_MAGNITUDES,
    ALL_VOCABULARY,
    MAGNITUDES,
    MAIN_UNITS,
    MINOR_UNITS,
    MULTIPLIERS,
    PLURALS,
    SIGN_WORDS,
)
from numdiff_component.reading.words import word_before

WholeAt = Callable[[int], "tuple[float, int] | None"]


def _words_pattern(words: list[str]) -> str:
    return "|".join(any_case(w) for w in sorted(words, key=len, reverse=True))


# After a digit token: blanks and a multiplier that is not a §1.1 scale word, or a hyphen and
# any multiplier (singular or plural).
_SINGULAR = ["hundred", *MAGNITUDES, *MULTIPLIERS]
_AFTER_BLANKS = [w for w in _SINGULAR if w not in SCALE_WORDS] + list(PLURALS)
_ANY_MULTIPLIER = _words_pattern(_SINGULAR + list(PLURALS))
_MULTIPLIER = re.compile(rf"[ \t]*(?P<b>{_words_pattern(_AFTER_BLANKS)})|-(?P<h>{_ANY_MULTIPLIER})")
_OUT_OF = re.compile(rf"[ \t]+{any_case('out')}[ \t]+{any_case('of')}[ \t]+")
_OVER = re.compile(rf"[ \t]+{any_case('over')}[ \t]+(?=[A-Za-z])")
_MAINS = [w + s for w in MAIN_UNITS for s in ("", "s")]
_MINORS = [w + s for w in MINOR_UNITS for s in ("", "s")]
_MAIN = re.compile(rf"[ \t]+(?:{_words_pattern(_MAINS)}),?[ \t]+(?:{any_case('and')}[ \t]+)?")
_MINOR = re.compile(rf"[ \t]+(?:{_words_pattern(_MINORS)})")
# What every tail starts with (one match per token before the others): blanks and a first word,
# or a hyphen and a multiplier.
_FIRST_WORDS = [*_AFTER_BLANKS, "out", "over", *_MAINS]
_ANY_TAIL = re.compile(rf"[ \t]*(?:{_words_pattern(_FIRST_WORDS)})|-(?:{_ANY_MULTIPLIER})")
_SIGN_ENDS = {w[-1] for w in SIGN_WORDS}  # the last letter of a sign word


def _value_of_multiplier(word: str) -> int:
    word = PLURALS.get(word, word)
    return 100 if word == "hundred" else ALL_MAGNITUDES[word]


def tail(
    text: str, end: int, number: float, whole_at: WholeAt, phrase: bool
) -> tuple[float, int] | None:
    """v4: what a token ending at ``end`` reads after it, or ``None``: a multiplier after digits
    (``3 dozens``, ``5-million``); ``out of`` (and ``over`` between phrases) a whole number;
    a composite amount (``3 dollars 50 cents``). ``whole_at``: the whole number at a position
    (digits or a phrase), ``phrase``: the token is a phrase."""
    if end >= len(text) or not (text[end] in " \t-" or text[end].isalpha()):
        return None  # a cheap first look: every tail starts so
    if not _ANY_TAIL.match(text, end):
        return None
    if not phrase:
        found = _MULTIPLIER.match(text, end)
        if found and not text[found.end() : found.end() + 1].isalnum():
            word = (found.group("b") or found.group("h")).lower()
            return number * _value_of_multiplier(word), found.end()
    if not number.is_integer():
        return None
    for pattern in (_OUT_OF, _OVER) if phrase else (_OUT_OF,):
        found = pattern.match(text, end)
        y = whole_at(found.end()) if found else None
        if y is not None and y[0] and (pattern is _OUT_OF or text[found.end()].isalpha()):  # type: ignore[union-attr]
            return number / y[0], y[1]
    found = _MAIN.match(text, end)
    y = whole_at(found.end()) if found else None
    if y is not None and y[0] < 100:
        minor = _MINOR.match(text, y[1])
        if minor and not text[minor.end() : minor.end() + 1].isalnum():
            return number + y[0] / 100, minor.end()
    return None


def negative_word_before(text: str, start: int) -> bool:
    """v4: ``minus`` or ``negative`` and a gap before the token at ``start``, the word not
    after a digit or a number word (``5 minus 3`` is 5, then 3)."""
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i == start or i == 0 or text[i - 1].lower() not in _SIGN_ENDS:  # a cheap first look
        return False
    word, i = word_before(text, start)
    if word not in SIGN_WORDS or (i >= len(word) and text[i - len(word)].isalpha()):
        return False
    before, k = word_before(text, i + 1 - len(word))
    return not (before in ALL_VOCABULARY or (k >= 0 and text[k].isdecimal()))


def route_after_digits() -> str:
    """v4: a digit and what `tail` reads after a digit token (a superset for ``(?i)``): a
    multiplier (after blanks, only those that are no scale word, or the plurals), ``out``, or a
    main unit with a minor unit somewhere after it."""
    after_blanks, after_hyphen = "|".join(_AFTER_BLANKS), "|".join(_SINGULAR + list(PLURALS))
    minor = "|".join(w[:4] for w in MINOR_UNITS)  # "penny" and "pence" start alike: "penn|penc"
    return (
        rf"[0-9.](?:[ \t]*(?:{after_blanks})|-(?:{after_hyphen}))"
        rf"|[0-9][ \t]+out[ \t]"
        rf"|[0-9][ \t]+(?:{'|'.join(MAIN_UNITS)})(?s:.)*(?:{minor})"
    )
