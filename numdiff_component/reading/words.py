"""SPEC §1.2.1: English number phrases (``words="en"``), a small grammar of our own.

A phrase is read word by word from its first word, each word matched where the previous one
ended, so reading is linear in the phrase's length (plus a few words of look-ahead); the
grammar::

    phrase   = "zero" | groups [fraction]
    groups   = G1 [M1] (sep ["and"] G M)* ...   M strictly decreasing, worth sum of G x M
    G        = N | [N] "hundred" [["and"] N]     (only G1 may lack its count; "a" = 1 there)
    N        = unit 1-9 | teen | tens [("-" | gap) unit 1-9]
    fraction = (gap | "-") D                     phrase / D
             | gap "and" gap N' (gap | "-") D    phrase + N'/D, N' = "a" or 1-19, D > N'

Decision where the spec is silent: in ``one hundred and three quarters`` both fraction forms
fit the whole run; the ``and N'/D`` form is read (100.75), as a reader of English does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = dict(
    zip(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"],
        range(1, 10),
        strict=True,
    )
)
TEENS = dict(
    zip(
        [
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ],
        range(10, 20),
        strict=True,
    )
)
TENS = dict(
    zip(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"],
        range(20, 100, 10),
        strict=True,
    )
)
MAGNITUDES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
FRACTION_WORDS = {"half": 2, "halves": 2, "third": 3, "quarter": 4, "fourth": 4}
for _name, _d in zip(
    ["fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "hundredth", "thousandth"],
    (5, 6, 7, 8, 9, 10, 100, 1000),
    strict=True,
):
    FRACTION_WORDS[_name] = _d
for _name, _d in list(FRACTION_WORDS.items()):
    if not _name.startswith("hal"):
        FRACTION_WORDS[_name + "s"] = _d
VOCABULARY = {"zero", "hundred", "a", "and", "&", *UNITS, *TEENS, *TENS, *MAGNITUDES}
VOCABULARY |= set(FRACTION_WORDS)
# The words a phrase can start with ("a" needs "hundred" or an M after it).
FIRST_WORDS = ["zero", "hundred", *UNITS, *TEENS, *TENS, *MAGNITUDES]

_WORD = re.compile(r"[A-Za-z&]+")
_NEXT_WORD = re.compile(r"(?P<sep>[ \t]+|-|,[ \t]+)(?P<word>[A-Za-z&]+)")
_UNITS_AND_TEENS = UNITS | TEENS


@dataclass(frozen=True)
class _Word:
    word: str  # lower case
    sep: str  # before it: "gap", "-" or ","; "" for the first word
    end: int


class _Words:
    """The words of a phrase from its start, read on demand (each once)."""

    def __init__(self, text: str, start: int) -> None:
        self.text, self.pos = text, start
        self.words: list[_Word] = []
        self.done = False

    def __getitem__(self, k: int) -> _Word | None:
        while len(self.words) <= k and not self.done:
            self._read()
        return self.words[k] if k < len(self.words) else None

    def _read(self) -> None:
        if self.words:
            found = _NEXT_WORD.match(self.text, self.pos)
            sep = found.group("sep")[0] if found else ""
            sep = sep if sep in "-," else "gap"
        else:
            found, sep = _WORD.match(self.text, self.pos), ""
        word = found.group(found.lastindex or 0).lower() if found else ""
        end = found.end() if found else 0
        if word not in VOCABULARY or self.text[end : end + 1].isalnum():
            self.done = True
            return
        self.words.append(_Word(word, sep, end))
        self.pos = end


def _is(w: _Word | None, table: dict[str, int] | set[str], sep: tuple[str, ...] = ()) -> bool:
    return w is not None and w.word in table and (not sep or w.sep in sep)


def _n(words: _Words, i: int, seps: tuple[str, ...] = ("gap",)) -> tuple[int, int] | None:
    """N at word ``i`` (1-99), joined to the word before by one of ``seps``: value, next index."""
    w = words[i]
    if w is None or w.sep not in seps:
        return None
    if w.word in UNITS or w.word in TEENS:
        return _UNITS_AND_TEENS[w.word], i + 1
    if w.word in TENS:
        unit = words[i + 1]
        if _is(unit, UNITS, ("gap", "-")):
            return TENS[w.word] + UNITS[unit.word], i + 2  # type: ignore[union-attr]
        return TENS[w.word], i + 1
    return None


def _and_n(words: _Words, i: int) -> tuple[int, int] | None:
    """``[and|&] N`` at word ``i`` (after "hundred" or an M), all joined by gaps."""
    w = words[i]
    if w is not None and w.word in ("and", "&") and w.sep == "gap" and not _and_fraction(words, i):
        return _n(words, i + 1)
    return None


def _group(words: _Words, i: int, first: bool) -> tuple[int, int] | None:
    """G at word ``i``: N, or [N] hundred [[and] N]. ``first``: G1 (may lack its count)."""
    count = _n(words, i, ("",) if i == 0 else ("gap",))
    w = words[i]
    if count is None and first and w is not None and w.word == "a":
        nxt = words[i + 1]
        if not _is(nxt, {"hundred", *MAGNITUDES}, ("gap",)):
            return None
        count = (1, i + 1)
    if count is None:
        if first and w is not None and w.word == "hundred":
            value, j = 100, i + 1
        elif first and w is not None and w.word in MAGNITUDES:
            return 1, i  # G1 without its count: worth 1, the M follows
        else:
            return None
    else:
        value, j = count
        if _is(words[j], {"hundred"}, ("gap",)):
            value, j = value * 100, j + 1
        else:
            return value, j
    rest = _n(words, j) or _and_n(words, j)
    return (value + rest[0], rest[1]) if rest else (value, j)


def _and_fraction(words: _Words, i: int) -> bool:
    """Whether ``and N' D`` (the second fraction form) starts at word ``i``."""
    return _second_fraction(words, i) is not None


def _second_fraction(words: _Words, i: int) -> tuple[int, int, int] | None:
    """``and`` gap N' (gap|-) D with D > N' at word ``i``: N', D, next index."""
    w, n = words[i], words[i + 1]
    if w is None or w.word not in ("and", "&") or w.sep != "gap" or n is None or n.sep != "gap":
        return None
    numerator = 1 if n.word == "a" else _UNITS_AND_TEENS.get(n.word)
    d = words[i + 2]
    if numerator is None or not _is(d, FRACTION_WORDS, ("gap", "-")):
        return None
    denominator = FRACTION_WORDS[d.word]  # type: ignore[union-attr]
    return (numerator, denominator, i + 3) if denominator > numerator else None


def read_phrase(text: str, start: int, any_digits: bool = False) -> tuple[float, int] | None:
    """The number phrase starting at ``start`` (a word's first letter): value and end.

    >>> read_phrase("twenty-one apples", 0)
    (21.0, 10)
    >>> read_phrase("two and a half", 0), read_phrase("a dozen", 0)
    ((2.5, 14), None)
    """
    if start and text[start - 1].isalnum():
        return None
    words = _Words(text, start)
    first = words[0]
    if first is None:
        return None
    if first.word == "zero":
        return 0.0, first.end
    if first.word == "hundred" or first.word in MAGNITUDES:
        i = start  # "5 million" is 5 (SPEC §1.1's scale decides): a digit and blanks before?
        while i > 0 and text[i - 1] in " \t":
            i -= 1
        before = text[i - 1] if i > 0 else ""
        if before and (before.isdecimal() if any_digits else before in "0123456789"):
            return None
    total, last_m, i = 0, None, 0
    while True:
        group = _group(words, i, first=i == 0)
        if group is None:
            break
        value, j = group
        m = words[j]
        if _is(m, MAGNITUDES, ("gap", "")) and (last_m is None or MAGNITUDES[m.word] < last_m):  # type: ignore[union-attr]
            last_m = MAGNITUDES[m.word]  # type: ignore[union-attr]
            total, i = total + value * last_m, j + 1
            nxt = words[i]
            if nxt is not None and nxt.sep == ",":  # ", N" only: then read as a gap
                if _n(words, i, (",",)) is None:
                    break
                words.words[i] = _Word(nxt.word, "gap", nxt.end)
            if nxt is not None and nxt.word in ("and", "&") and _and_n(words, i):
                i += 1  # "and" before the next group's N
            continue
        total, i = total + value, j
        break
    if i == 0:
        return None
    end = words[i - 1].end  # type: ignore[union-attr]
    number = float(total)
    second = _second_fraction(words, i)
    if second is not None:
        numerator, denominator, k = second
        return number + numerator / denominator, words[k - 1].end  # type: ignore[union-attr]
    d = words[i]
    if _is(d, FRACTION_WORDS, ("gap", "-")):
        return number / FRACTION_WORDS[d.word], d.end  # type: ignore[union-attr]
    return number, end
