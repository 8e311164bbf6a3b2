r"""SPEC §1: the numeric token, its sign, the separators and the digits, declared once.

The token, with ``G`` the grouping separator and ``P`` the decimal point (``,`` and ``.``,
swapped by ``decimal_comma``; ``G`` may also be one of `EXTRA_SEPARATORS` with
``thousands="any"``, one separator per token) and ``D`` a digit (ASCII, or any Unicode Nd with
``digits="any"``, §1.2.2)::

    token    = (D{1,3} (G DDD)+ not-followed-by-D | D+) (P D*)? exponent?
             | P D+ exponent?
    exponent = [eE] [+-\N{MINUS SIGN}]? D+

The pattern pieces below are written once and read by both readers: Python's ``re`` (the
one-value reader, `plain`) and RE2 (the column reader, `column` and `tiers`); so they use no
syntax only one of them knows (no look-around, no ``\u`` escapes).
"""

from __future__ import annotations

import re
from functools import lru_cache

from numdiff_component.options import Options

SIGNS = "+-\u2212"
MINUS = "-\u2212"
CURRENCY = "$\u20ac\u00a3\u00a5\u20b9"  # $ € £ ¥ ₹: a sign may stand before one (SPEC v3 §1)
EXTRA_SEPARATORS = (" ", "\u00a0", "\u202f", "\u2009", "'", "\u2019", "\\,")  # §1.1 thousands
LATEX_COMMAS = ("{,}", ",\\!")  # read as "," before anything else with thousands="any"
BLANK = " \t"  # the blanks between a token and what follows it
BLANKS = f"[{BLANK}]*"
GAP = f"[{BLANK}]+"
DIGITS = "0123456789"  # ASCII (§1); every Unicode Nd with digits="any" (§1.2.2)
EXPONENT = "eE"  # an exponent's mark


def any_case(word: str) -> str:
    """An any-case pattern (``[aA][nN]...``), each character with its one-character lower and
    upper case: ``(?i)`` also folds the Kelvin sign, long s (and differs between `re` and RE2)."""
    out = []
    for c in word:
        cases = "".join(dict.fromkeys(x for x in (c, c.lower(), c.upper()) if len(x) == 1))
        out.append(f"[{char_class(cases)}]" if len(cases) > 1 else literal(c))
    return "".join(out)


def literal(text: str) -> str:
    """``text`` as a pattern both `re` and RE2 read (RE2 rejects ``re.escape``'s ``\\ ``)."""
    return "".join(f"\\{c}" if c in ".\\{}()[]^$*+?|" else c for c in text)


def char_class(chars: str) -> str:
    """``chars`` as the inside of a ``[...]`` class both `re` and RE2 read."""
    return "".join(f"\\{c}" if c in "\\]^-[" else c for c in chars)


def reversed_literal(text: str) -> str:
    """``text`` reversed, as a pattern: what the reversed text holds where ``text`` stood."""
    return literal(text[::-1])


def separators(decimal_comma: bool) -> tuple[str, str]:
    """The grouping separator and the decimal point."""
    return (".", ",") if decimal_comma else (",", ".")


def group_separators(opts: Options) -> tuple[str, ...]:
    group = separators(opts.decimal_comma)[0]
    return (group, *EXTRA_SEPARATORS) if opts.thousands == "any" else (group,)


def digit_class(opts: Options | None = None) -> str:
    """``D``: ``[0-9]``, or with ``digits="any"`` every ``str.isdecimal`` character (Python's
    ``\\d`` on ``str`` patterns is exactly Unicode Nd)."""
    return r"\d" if opts is not None and opts.digits == "any" else "[0-9]"


@lru_cache(maxsize=1)
def decimal_ranges() -> str:
    """Every ``str.isdecimal`` character (Python's Unicode Nd) but the ASCII digits, as ranges of
    an RE2 character class (``\\x{660}-\\x{669}...``, no brackets). RE2's own ``\\p{Nd}``
    follows a newer Unicode than Python's; the column reader's tests use this one, Python's, so
    that both readers take the same characters for digits."""
    codes = [c for c in range(0x80, 0x110000) if chr(c).isdecimal()]
    starts = [c for i, c in enumerate(codes) if i == 0 or codes[i - 1] != c - 1]
    ends = [c for i, c in enumerate(codes) if i == len(codes) - 1 or codes[i + 1] != c + 1]
    return "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in zip(starts, ends, strict=True))


def token_parts(opts: Options, *, extra: bool = True) -> tuple[str, str, str, str]:
    """``grouped`` (without its not-followed-by-digit rule), ``fraction``, ``exponent``, point.

    ``extra``: with ``thousands="any"``, the extra separators too (one per token).
    """
    d = digit_class(opts)
    seps = group_separators(opts) if extra else separators(opts.decimal_comma)[:1]
    point = literal(separators(opts.decimal_comma)[1])
    runs = "|".join(f"(?:{literal(sep)}{d}{{3}})+" for sep in seps)
    grouped = rf"{d}{{1,3}}(?:{runs})"
    fraction = rf"{point}{d}*"
    exponent = f"[{EXPONENT}][{char_class(SIGNS)}]?{d}+"  # a real U+2212: RE2 reads no \\u escapes
    return grouped, fraction, exponent, point


def token_regex(opts: Options, *, form: str = "re2", extra: bool = True) -> str:
    """The alternation of §1's token, in one of three forms, from `token_parts`.

    ``"re"``: Python's, the not-followed-by-digit rule as a look-ahead, groups ``exp`` and
    ``exp2`` (the exponent of either branch). ``"re2"``: without the look-ahead (the caller
    consumes the character after the match instead). ``"scan"``: each token left to right
    without overlap, as ``finditer`` finds them: a grouped one takes the non-digit after it.
    """
    grouped, fraction, exponent, point = token_parts(opts, extra=extra)
    d = digit_class(opts)
    if form == "re":
        if opts.thousands == "any":  # v4: Indian grouping, 12,34,567, after the groups of three
            group = literal(separators(opts.decimal_comma)[0])  # (RE2: the column reader routes)
            grouped += rf"(?!{d})|{d}{{1,2}}(?:{group}{d}{{2}})+{group}{d}{{3}}"
        return (
            rf"(?:{grouped}(?!{d})|{d}+)(?:{fraction})?(?P<exp>{exponent})?"
            rf"|{point}{d}+(?P<exp2>{exponent})?"
        )
    tail = rf"{fraction}(?:{exponent})?|{exponent}"
    grouped = rf"{grouped}(?:{tail}|[^0-9]|$)" if form == "scan" else rf"{grouped}(?:{tail})?"
    return rf"{grouped}|{d}+(?:{fraction})?(?:{exponent})?|{point}{d}+(?:{exponent})?"


@lru_cache(maxsize=32)
def decimal_regex(decimal_comma: bool, thousands: str, digits: str) -> re.Pattern[str]:
    """The decimal token of §1 as a Python pattern (group ``exp``: its exponent)."""
    opts = Options(decimal_comma=decimal_comma, thousands=thousands, digits=digits)  # type: ignore[arg-type]
    return re.compile(token_regex(opts, form="re"))


def decimal(opts: Options) -> re.Pattern[str]:
    return decimal_regex(opts.decimal_comma, opts.thousands, opts.digits)


def plain_number(token: str, decimal_comma: bool) -> str:
    """A decimal token's text without separators, ``.`` as its point (for ``float``)."""
    if token.isdecimal():  # digits only, the common case: float() reads every Nd digit
        return token
    group, point = separators(decimal_comma)
    # Longest first: LaTeX's ``\\,`` goes before the comma it holds.
    for separator in sorted({group, *EXTRA_SEPARATORS}, key=len, reverse=True):
        token = token.replace(separator, "")
    return token.replace(point, ".").replace("\u2212", "-")


def decimal_value(token: str, decimal_comma: bool) -> float:
    """The number of a decimal token (separators dropped, the point made ``.``); float() reads
    every Unicode Nd digit (SPEC §1.2.2) by its decimal value."""
    return float(plain_number(token, decimal_comma))


def is_sign_at(text: str, i: int) -> bool:
    """A sign at ``i``: at the start of the text or after a character that is not alnum."""
    return 0 <= i < len(text) and text[i] in SIGNS and (i == 0 or not text[i - 1].isalnum())


def sign_index(text: str, start: int) -> int | None:
    """Where the sign of a token starting at ``start`` stands: right before it, or right before
    one currency symbol standing right before it (SPEC v3 §1); ``None`` when it has none."""
    if is_sign_at(text, start - 1):
        return start - 1
    if start >= 2 and text[start - 1] in CURRENCY and is_sign_at(text, start - 2):
        return start - 2
    return None


def negative_sign(text: str, start: int) -> bool:
    """Whether the token starting at ``start`` is made negative by its sign."""
    i = sign_index(text, start)
    return i is not None and text[i] in MINUS
