r"""SPEC §1.1: answer markers and spans, scale words, percent; declared once for both readers.

Patterns here avoid look-around where RE2 reads them too; the plain reader's patterns that need
it say so.
"""

from __future__ import annotations

import re
from collections import deque

from numdiff_component.reading.grammar import any_case

SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
SCALES |= {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
SCALES |= {"tn": 1e12}

# Longer words first; single letters case-sensitive. Same text for `re` and RE2.
SCALE_WORDS = "|".join(
    [any_case(w) for w in ("thousand", "million", "billion", "trillion", "bn", "tn")]
    + ["k", "K", "M", "B", "T"]
)
# The letters a scale word can start with (a cheap first test of the column reader).
SCALE_FIRST = "".join(sorted({w[0] for w in SCALES} | {w[0].upper() for w in SCALES}))

PERCENT = r"[ \t]*\\?%"
_PERCENT_AFTER = re.compile(PERCENT)
_SCALE_AFTER = re.compile(rf"[ \t]*({SCALE_WORDS})")


def scale_after(text: str, end: int) -> tuple[float, int]:
    """The factor of a scale word after ``end`` (and where it ends), or ``(1.0, end)``.

    The word must end the text or be followed by a character that is not alnum."""
    word = _SCALE_AFTER.match(text, end)
    if word and not text[word.end() : word.end() + 1].isalnum():
        return SCALES[word[1] if len(word[1]) == 1 else word[1].lower()], word.end()
    return 1.0, end


def percent_after(text: str, end: int) -> int | None:
    """Where a ``%`` (or ``\\%``) after ``end`` ends, blanks allowed before it; else ``None``."""
    found = _PERCENT_AFTER.match(text, end)
    return found.end() if found else None


# An answer marker; the last one found left to right decides (look-around: the plain reader).
ANSWER = any_case("answer")
MARKERS = re.compile(
    rf"\\boxed\{{|\\fbox\{{|####"
    rf"|(?<![A-Za-z]){ANSWER}[ \t]*(?::|=|{any_case('is')}(?![A-Za-z])(?:[ \t]*:)?)"
)
_BRACE = re.compile(r"[{}]")


def answer_span(text: str) -> str | None:
    """The text after the last answer marker (to its closing brace after a box), or ``None``."""
    last = deque(MARKERS.finditer(text), maxlen=1)
    if not last:
        return None
    start = last[0].end()
    if not last[0].group().startswith("\\"):
        return text[start:]
    depth = 1  # a counter scan over the braces only: linear, whatever the nesting
    for brace in _BRACE.finditer(text, start):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return text[start : brace.start()]
    return text[start:]  # unclosed: to the end


# --- the same markers for RE2 (the column reader) -----------------------------------------

# Any answer marker (a cheap test, no groups): the look-behind becomes a consumed character.
ANY_MARKER = (
    rf"\\boxed\{{|\\fbox\{{|####"
    rf"|(?:^|[^A-Za-z]){ANSWER}[ \t]*(?:[:=]|{any_case('is')}(?:[^A-Za-z]|$))"
)


def reversed_answer_regex() -> str:
    """The last answer marker, found in the reversed text: ``r`` (and ``c``) is the reversed span.

    Reversed, the last marker is the first, and RE2 stops there instead of matching the whole
    text. It is the marker that ends last: only a ``####`` run can overlap itself, and its markers
    differ by leading ``#``, which no token reads. After ``is`` (``c``, its reversed last
    character) the span must start with a non-letter; a ``:`` kept there changes no reading.
    ``ans`` is the word answer, ``ctx`` the character before it (empty at the start).
    The ``^`` changes no match (``.*?`` lets every match start at 0) but makes RE2 faster.
    """
    is_ = any_case("si")
    return (
        rf"(?s)^(?P<r>.*?)(?:(?P<box>\{{dexob\\|\{{xobf\\)|####"
        rf"|(?:[:=][ \t]*|(?P<c>[^A-Za-z]){is_}[ \t]*|^{is_}[ \t]*)"
        rf"(?P<ans>{any_case('rewsna')})(?P<ctx>[^A-Za-z]|$))"
    )


# The box's text up to the brace that closes it (two nested levels inside), or to the end.
BOX_REGEX = r"(?s)^(?P<in>(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)(?:\}|$)"
