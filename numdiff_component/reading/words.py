"""SPEC §1.2.1: English number phrases (``words="en"``), a small grammar of our own over the
tables of `number_words`.

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

from numdiff_component.reading.number_words import (
    ALL_FRACTION_WORDS,
    ALL_MAGNITUDES,
    ALL_VOCABULARY,
    FRACTION_WORDS,
    MAGNITUDES,
    MORE_ZEROS,
    NOT_HALF_AFTER,
    PLURALS,
    POINT_ZEROS,
    RUN_TOGETHER,
    TEENS,
    TENS,
    UNITS,
    VOCABULARY,
    WORD_CHARS,
)

_WORD = re.compile(rf"[{WORD_CHARS}]+")
_NEXT_WORD = re.compile(rf"(?P<sep>[ \t]+|-|,[ \t]+)(?P<word>[{WORD_CHARS}]+)")
_UNITS_AND_TEENS = UNITS | TEENS


@dataclass(frozen=True)
class _Word:
    word: str  # lower case, a plural multiplier made singular (v4)
    sep: str  # before it: "gap", "-" or ","; "" for the first word (v4: "-" is a gap)
    end: int
    plural: bool = False


class _Words:
    """The words of a phrase from its start, read on demand (each once). ``v4``: words="all"."""

    def __init__(self, text: str, start: int, v4: bool = False) -> None:
        self.text, self.pos, self.v4 = text, start, v4
        self.words: list[_Word] = []
        self.done = False
        self.magnitudes = ALL_MAGNITUDES if v4 else MAGNITUDES
        self.fractions = ALL_FRACTION_WORDS if v4 else FRACTION_WORDS

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
        if not word or self.text[end : end + 1].isalnum():
            self.done = True
            return
        self.pos = end
        if not self.v4:
            if word not in VOCABULARY:
                self.done = True
                return
            self.words.append(_Word(word, sep, end))
            return
        sep = "gap" if sep == "-" else sep  # v4: a hyphen joins any two words of a phrase
        if word in RUN_TOGETHER:
            tens, unit = RUN_TOGETHER[word]
            self.words.append(_Word(tens, sep, end - len(unit)))
            self.words.append(_Word(unit, "gap", end))
        elif word in PLURALS:
            self.words.append(_Word(PLURALS[word], sep, end, plural=True))
        elif word in ALL_VOCABULARY:
            self.words.append(_Word(word, sep, end))
        else:
            self.done = True


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
        if not _is(nxt, {"hundred", *words.magnitudes}, ("gap",)) or nxt.plural:  # type: ignore[union-attr]
            return None
        count = (1, i + 1)
    if count is None:
        if w is not None and w.plural:  # v4: "thousands" is read with its count only
            return None
        if first and w is not None and w.word == "hundred":
            value, j = 100, i + 1
        elif first and w is not None and w.word in words.magnitudes:
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
    """``and`` gap N' (gap|-) D with D > N' at word ``i``: N', D, next index.

    N' is ``a`` or 1-19; v4: ``a`` or any N (1-99: ``two and fifty-four hundredths``)."""
    w, n = words[i], words[i + 1]
    if w is None or w.word not in ("and", "&") or w.sep != "gap" or n is None or n.sep != "gap":
        return None
    if n.word == "a":
        numerator: int | None = 1
        k = i + 2
    elif words.v4:
        read = _n(words, i + 1)
        numerator, k = read if read else (None, 0)
    else:
        numerator, k = _UNITS_AND_TEENS.get(n.word), i + 2
    d = words[k] if numerator is not None else None
    if numerator is None or not _is(d, words.fractions, ("gap", "-")):
        return None
    denominator = words.fractions[d.word]  # type: ignore[union-attr]
    return (numerator, denominator, k + 1) if denominator > numerator else None


def word_before(text: str, start: int) -> tuple[str, int]:
    """The ASCII word ending before ``start`` after blanks (lower case; "" if none), and the
    index of the character before the blanks (-1 at the start of the text)."""
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    j = i
    while j > 0 and text[j - 1].isascii() and text[j - 1].isalpha():
        j -= 1
    return text[j:i].lower(), i - 1


def _after_digit(text: str, start: int, any_digits: bool) -> bool:
    """Whether a digit and blanks stand before ``start``."""
    i = word_before(text, start)[1]
    before = text[i] if i >= 0 else ""
    return bool(before) and (before.isdecimal() if any_digits else before in "0123456789")


def _point_tail(words: _Words, i: int, number: float, any_digits: bool) -> tuple[float, int]:
    """v4: ``point`` at word ``i`` then its decimals (digits, or digit words: each unit or zero
    word one digit, each other N its two digits); the number and its end, else unchanged."""
    w = words[i]
    end = words[i - 1].end if i > 0 else 0  # type: ignore[union-attr]
    if w is None or w.word != "point" or w.sep not in ("gap", ""):
        return number, end
    found = (_DIGITS_ANY if any_digits else _DIGITS).match(words.text, w.end)
    if found and not words.text[found.end() : found.end() + 1].isalnum():
        return float(f"{int(number)}.{found.group(1)}"), found.end()
    decimals: list[str] = []
    k = i + 1
    while (d := words[k]) is not None and d.sep == "gap":
        if d.word in _DIGIT_WORDS:
            decimals.append(str(_DIGIT_WORDS[d.word]))
            k += 1
            continue
        read = _n(words, k)
        if read is None:
            break
        decimals.append(str(read[0]))
        k = read[1]
    if not decimals:
        return number, end
    return float(f"{int(number)}.{''.join(decimals)}"), words[k - 1].end  # type: ignore[union-attr]


_DIGITS = re.compile(r"[ \t]+([0-9]+)")
_DIGITS_ANY = re.compile(r"[ \t]+(\d+)")
_DIGIT_WORDS = {"zero": 0, **MORE_ZEROS, **POINT_ZEROS, **UNITS}


def _bare_fraction(words: _Words, text: str, start: int) -> tuple[float, int] | None:
    """v4: ``half`` (not after the, first, ...), ``half a`` M (M / 2), ``a`` D (1 / D; but
    ``a half`` and ``a quarter``, only before ``of`` or no word)."""
    first, nxt = words[0], words[1]
    if first is None:
        return None
    if first.word == "half" and word_before(text, start)[0] not in NOT_HALF_AFTER:
        m = words[2]
        if _is(nxt, {"a"}, ("gap",)) and _is(m, words.magnitudes, ("gap",)) and not m.plural:  # type: ignore[union-attr]
            return words.magnitudes[m.word] / 2, m.end  # type: ignore[union-attr]
        return 0.5, first.end
    if first.word == "a" and _is(nxt, words.fractions, ("gap",)) and not nxt.word.endswith("s"):  # type: ignore[union-attr]
        end = nxt.end  # type: ignore[union-attr]
        ordinal = nxt.word not in ("half", "quarter")  # type: ignore[union-attr]
        if not ordinal or _OF_OR_NO_WORD.match(text, end):  # "a third of", not "a third party"
            return 1 / words.fractions[nxt.word], end  # type: ignore[union-attr]
    return None


_OF_OR_NO_WORD = re.compile(r"[ \t]+[oO][fF](?![A-Za-z])|(?![ \t]*[A-Za-z])")


def read_phrase(
    text: str, start: int, any_digits: bool = False, v4: bool = False
) -> tuple[float, int] | None:
    """The number phrase starting at ``start`` (a word's first letter): value and end.
    ``v4``: with the readings of words="all" (SPEC v4 §1.2.8).

    >>> read_phrase("twenty-one apples", 0)
    (21.0, 10)
    >>> read_phrase("two and a half", 0), read_phrase("a dozen", 0)
    ((2.5, 14), None)
    >>> read_phrase("two point three", 0, v4=True), read_phrase("a dozen", 0, v4=True)
    ((2.3, 15), (12.0, 7))
    """
    if start and text[start - 1].isalnum():
        return None
    words = _Words(text, start, v4)
    first = words[0]
    if first is None:
        return None
    if first.word == "zero" or (v4 and first.word in MORE_ZEROS):
        return _point_tail(words, 1, 0.0, any_digits) if v4 else (0.0, first.end)
    if v4 and first.word == "point":  # "point 77": not after a letter or a digit
        i = word_before(text, start)[1]
        if i >= 0 and text[i].isalnum():
            return None
        found = _point_tail(words, 0, 0.0, any_digits)
        return None if found[1] == 0 else found
    hundred_or_m = first.word == "hundred" or first.word in words.magnitudes
    if hundred_or_m and _after_digit(text, start, any_digits):
        return None  # "5 million" is 5 (§1.1's scale decides)
    if v4 and (bare := _bare_fraction(words, text, start)) is not None:
        return bare
    total, last_m, i = 0, None, 0
    magnitudes = words.magnitudes
    while True:
        group = _group(words, i, first=i == 0)
        if group is None:
            break
        value, j = group
        m = words[j]
        if _is(m, magnitudes, ("gap", "")) and (last_m is None or magnitudes[m.word] < last_m):  # type: ignore[union-attr]
            if m.plural and j == i:  # type: ignore[union-attr]
                break  # v4: a plural multiplier needs its count
            last_m = magnitudes[m.word]  # type: ignore[union-attr]
            total, i = total + value * last_m, j + 1
            nxt = words[i]
            if nxt is not None and nxt.sep == ",":  # ", N" only: then read as a gap
                if _n(words, i, (",",)) is None:
                    break
                words.words[i] = _Word(nxt.word, "gap", nxt.end, nxt.plural)
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
    if _is(d, words.fractions, ("gap", "-")) and not (v4 and _ordinal(words, i)):
        return number / words.fractions[d.word], d.end  # type: ignore[union-attr]
    if v4:
        return _point_tail(words, i, number, any_digits)
    return number, end


def _ordinal(words: _Words, i: int) -> bool:
    """v4: a singular fraction word (but half, quarter) right after a tens word is an ordinal
    (``twenty-third`` is 20, as ``twenty-first``)."""
    d, before = words[i], words[i - 1]
    return (
        d is not None
        and before is not None
        and before.word in TENS
        and d.word in words.fractions
        and not d.word.endswith("s")
        and d.word not in ("half", "quarter")
    )
