r"""SPEC §1.1: answer markers and spans, scale words, percent; declared once for both readers.

Patterns here avoid look-around where RE2 reads them too; the plain reader's patterns that need
it say so.
"""

from __future__ import annotations

import re
from collections import deque
from functools import lru_cache

from numdiff_component.errors import OptionError
from numdiff_component.options import Options, register_check
from numdiff_component.reading.grammar import (
    BLANKS,
    any_case,
    char_class,
    literal,
    reversed_literal,
)

# --- the tables: each fact once; every pattern below is made from them ------------------------

SCALE_LETTERS = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}  # in this case only
SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
SCALE_WORDS |= {"tn": 1e12}  # any case
PERCENT_SIGN = "%"
LATEX_ESCAPE = "\\"  # before a percent sign: LaTeX's ``\\%``
BOXES = ("\\boxed{", "\\fbox{")  # markers whose span ends at the brace that closes them
HASHES = ("####",)  # markers read as they stand
ANSWER_WORDS = ("answer",)  # any case, then blanks and one of COLONS or IS
COLONS = ":=\uff1a"  # U+FF1A, the full-width colon of CJK text
IS = "is"  # any case, not followed by an ASCII letter; then blanks and a colon or not
IS_COLONS = ":\uff1a"

PERCENT_MARK = rf"{literal(LATEX_ESCAPE)}?{literal(PERCENT_SIGN)}"  # ``%`` or ``\\%``
PERCENT = rf"{BLANKS}{PERCENT_MARK}"  # a percent after a token
_PERCENT_AFTER = re.compile(PERCENT)


def _check_scale_words(words: tuple[tuple[str, float], ...]) -> None:
    """An extra scale word may not be read as a built-in one (any case)."""
    builtin = {w.lower() for w in (*SCALE_LETTERS, *SCALE_WORDS)}
    for word, _ in words:
        if word.lower() in builtin:
            raise OptionError(f"scale_words: {word!r} is a built-in scale word")


def _check_markers(markers: tuple[str, ...]) -> None:
    builtin = {w.lower() for w in ANSWER_WORDS}
    for marker in markers:
        if marker.lower() in builtin:
            raise OptionError(f"markers: {marker!r} is a built-in answer marker")


register_check("scale_words", _check_scale_words)
register_check("markers", _check_markers)


@lru_cache(maxsize=32)
def scale_table(extra: tuple[tuple[str, float], ...] = ()) -> dict[str, float]:
    """Each scale word's factor, keyed by `scale_key`: the built-in words and ``extra``."""
    return SCALE_LETTERS | SCALE_WORDS | {word.lower(): factor for word, factor in extra}


def scale_key(word: str) -> str:
    """The key of a scale word as the text holds it: letters as they are, words lowered."""
    return word if word in SCALE_LETTERS else word.lower()


def _any_case_words(opts: Options) -> list[str]:
    """The words read in any case, longer first (so that ``bn`` is read before ``B``)."""
    words = [*SCALE_WORDS, *(word for word, _ in opts.scale_words)]
    return sorted(words, key=len, reverse=True)


@lru_cache(maxsize=32)
def scale_regex(opts: Options) -> str:
    """A scale word, for `re` and RE2: the words in any case, then the letters."""
    return "|".join([any_case(w) for w in _any_case_words(opts)] + list(SCALE_LETTERS))


@lru_cache(maxsize=32)
def scale_first(opts: Options) -> str:
    """The characters a scale word can start with (a cheap first test of the column reader)."""
    firsts = {w[0] for w in SCALE_LETTERS}
    for word in _any_case_words(opts):
        firsts |= {word[0].lower(), word[0].upper()}
    return "".join(sorted(firsts))


@lru_cache(maxsize=32)
def _scale_after(opts: Options) -> re.Pattern[str]:
    return re.compile(rf"{BLANKS}({scale_regex(opts)})")


def scale_after(text: str, end: int, opts: Options) -> tuple[float, int]:
    """The factor of a scale word after ``end`` (and where it ends), or ``(1.0, end)``.

    The word must end the text or be followed by a character that is not alnum."""
    word = _scale_after(opts).match(text, end)
    if word and not text[word.end() : word.end() + 1].isalnum():
        return scale_table(opts.scale_words)[scale_key(word[1])], word.end()
    return 1.0, end


def percent_after(text: str, end: int) -> int | None:
    """Where a ``%`` (or ``\\%``) after ``end`` ends, blanks allowed before it; else ``None``."""
    found = _PERCENT_AFTER.match(text, end)
    return found.end() if found else None


# --- answer markers: the plain reader's pattern, RE2's test, RE2's reversed pattern ---------


def _words(opts: Options, *, backwards: bool = False) -> str:
    """The answer words (built-in and ``opts.markers``) in any case, longer first."""
    words = sorted({*ANSWER_WORDS, *opts.markers}, key=len, reverse=True)
    return "|".join(any_case(w[::-1] if backwards else w) for w in words)


def _stands(marks: tuple[str, ...], *, backwards: bool = False) -> str:
    return "|".join(reversed_literal(m) if backwards else literal(m) for m in marks)


@lru_cache(maxsize=32)
def markers_regex(opts: Options) -> re.Pattern[str]:
    """An answer marker; the last one found left to right decides (look-around: `re` only)."""
    return re.compile(
        rf"(?P<box>{_stands(BOXES)})|{_stands(HASHES)}"
        rf"|(?<![A-Za-z])(?:{_words(opts)}){BLANKS}"
        rf"(?:[{char_class(COLONS)}]|{any_case(IS)}(?![A-Za-z])(?:{BLANKS}[{char_class(IS_COLONS)}])?)"
    )


_BRACE = re.compile(r"[{}]")


def answer_span(text: str, opts: Options) -> str | None:
    """The text after the last answer marker (to its closing brace after a box), or ``None``."""
    bounds = answer_bounds(text, opts)
    return None if bounds is None else text[bounds[0] : bounds[1]]


def answer_bounds(text: str, opts: Options) -> tuple[int, int, bool] | None:
    """Where `answer_span` starts and ends in ``text``, and whether a box marks it."""
    last = deque(markers_regex(opts).finditer(text), maxlen=1)
    if not last:
        return None
    start = last[0].end()
    if last[0].group("box") is None:
        return start, len(text), False
    depth = 1  # a counter scan over the braces only: linear, whatever the nesting
    for brace in _BRACE.finditer(text, start):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return start, brace.start(), True
    return start, len(text), True  # unclosed: to the end


@lru_cache(maxsize=32)
def any_marker_regex(opts: Options) -> str:
    """Any answer marker, for RE2 (a cheap test, no groups): the look-behind becomes a consumed
    character, the look-ahead too."""
    return (
        rf"{_stands(BOXES)}|{_stands(HASHES)}"
        rf"|(?:^|[^A-Za-z])(?:{_words(opts)}){BLANKS}"
        rf"(?:[{char_class(COLONS)}]|{any_case(IS)}(?:[^A-Za-z]|$))"
    )


@lru_cache(maxsize=32)
def reversed_answer_regex(opts: Options) -> str:
    """The last answer marker, found in the reversed text: ``r`` (and ``c``) is the reversed span.

    Made from the tables, each literal reversed (`reversed_literal`). Reversed, the last marker
    is the first, and RE2 stops there instead of matching the whole text. It is the marker that
    ends last: only a ``####`` run can overlap itself, and its markers differ by leading ``#``,
    which no token reads. After ``is`` (``c``, its reversed last character) the span must start
    with a non-letter; a colon kept there changes no reading. ``ans`` is the answer word,
    ``ctx`` the character before it (empty at the start). The ``^`` changes no match (``.*?``
    lets every match start at 0) but makes RE2 faster.
    """
    is_ = any_case(IS[::-1])
    return (
        rf"(?s)^(?P<r>.*?)(?:(?P<box>{_stands(BOXES, backwards=True)})"
        rf"|{_stands(HASHES, backwards=True)}"
        rf"|(?:[{char_class(COLONS)}]{BLANKS}|(?P<c>[^A-Za-z]){is_}{BLANKS}|^{is_}{BLANKS})"
        rf"(?P<ans>{_words(opts, backwards=True)})(?P<ctx>[^A-Za-z]|$))"
    )


# The box's text up to the brace that closes it (two nested levels inside), or to the end.
BOX_REGEX = r"(?s)^(?P<in>(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)(?:\}|$)"
