"""The column reader's tiers for SPEC §1 (the default reading): each exact for the rows it keeps.

Arrow's float cast when the whole column is plain numbers (`cast_whole`); else one cheap
anchored pattern for the token at the first digit, on the text cut there by a trim
(`parse_lead`); else the full grammar of §1 in RE2 (`parse_full`). The patterns are built from
`grammar`'s pieces, the ones the one-value reader uses. RE2 has no look-around; where a rule
needs one, the docstring says what replaces it and why that is exact. The sign before a token
is read by `signs`. Rows whose reading depends on §1.2's readings never reach these tiers
(`routes.route`).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading import located_rows
from numdiff_component.reading.buffers import (
    as_mask,
    astral_chars,
    byte_lengths,
    byte_spans,
    byte_table,
    char_lengths,
    last_byte,
    match_group,
    may_hold,
    nulls_where,
    per_cent,
    replace_rows,
    rows_holding,
    scale_word_at,
    spans_holding,
    top_byte,
)
from numdiff_component.reading.fractions import SLASH
from numdiff_component.reading.grammar import (
    BLANK,
    BLANKS,
    CURRENCY,
    DIGITS,
    EXTRA_SEPARATORS,
    char_class,
    group_separators,
    literal,
    separators,
    token_parts,
    token_regex,
)
from numdiff_component.reading.located_rows import Located
from numdiff_component.reading.marks import (
    LATEX_ESCAPE,
    PERCENT,
    PERCENT_MARK,
    PERCENT_SIGN,
    SCALE_LETTERS,
    SCALE_WORDS,
    scale_first,
    scale_regex,
)
from numdiff_component.reading.signs import sign_widths, signed_values

MARK = "\ue000"  # private-use marker put before each token to find the last one


@lru_cache(maxsize=32)
def _token_parts(decimal_comma: bool) -> tuple[str, str, str, str]:
    """`grammar.token_parts` with the one separator of §1."""
    return token_parts(Options(decimal_comma=decimal_comma), extra=False)


def _token_regex(decimal_comma: bool, *, leading: bool) -> str:
    """RE2 pattern for the leftmost token (``leading``: a token at the start of the text).

    Groups: ``pre``, an optional ``<ctx><sign>`` before the token (not when ``leading``);
    ``tok``, the token; ``pct``, a ``%`` right after it. RE2 has no look-ahead, so
    ``not-followed-by-digit`` after the groups is a following non-digit character (or the end)
    that the match consumes. Greedy matching makes every other form end before a non-digit
    anyway, so requiring it after every token changes nothing else.
    """
    token = token_regex(Options(decimal_comma=decimal_comma), extra=False)
    before = "^" if leading else f"(?P<pre>(?:^|.)[+\\-\u2212][{CURRENCY}]?)??"
    return rf"(?s){before}(?P<tok>{token})(?:(?P<pct>{PERCENT})|[^0-9]|$)"


def _lead_regex(opts: Options) -> str:
    """RE2 pattern for a cheap read of the token at the first digit, on the text from that digit
    (`from_first_digit`; anchored, nothing after it).

    Groups: ``tok``, the digits and grouping separators there, then a fraction and an exponent;
    ``pct`` with ``percent="fraction"``. ``tok`` is the leftmost token when the text before it
    does not end with the decimal point (``.5``) and ``tok`` has no grouping separator or a
    clean grouped run (`_clean_group_regex`).
    With ``scale="words"``, ``sc`` is the first letter of a scale word right after the token: a
    single character class (the words themselves make RE2 read the groups several times slower).
    With ``pick="first"`` and §1.1's readings, no more groups: `_after_token` reads the bytes
    after the token.
    """
    _, fraction, exponent, _ = _token_parts(opts.decimal_comma)
    group = re.escape(separators(opts.decimal_comma)[0])
    lead = rf"^(?P<tok>[0-9][0-9{group}]*(?:{fraction})?(?:{exponent})?)"
    if _looks_after(opts):
        return lead
    if opts.scale == "words":
        pct = f"|(?P<pct>{PERCENT_MARK})" if opts.percent == "fraction" else ""
        first = char_class(scale_first(opts))
        return rf"{lead}(?:{BLANKS}(?:(?P<sc>[{first}]){pct}))?"
    pct = f"(?P<pct>{PERCENT})?" if opts.percent == "fraction" else ""
    return lead + pct


def _looks_after(opts: Options) -> bool:
    return opts.pick == "first" and (
        opts.scale == "words" or opts.thousands == "any" or bool(opts.fractions)
    )


# The character after the token, right after it or after blanks: what decides whether §1.1
# reads another token there (a scale word's letter, a percent, an extra separator and a digit,
# ``\\,``, A/B's slash). Right after it, what the token itself may go on with is left out (not
# an exponent's letter: the token did not take it, and a scale word may start with it).
_BLANK = byte_table(BLANK.encode())
_GOES_ON = byte_table(f"{BLANK}{DIGITS}{''.join(separators(False))}".encode())
_BLANK_STEPS = 8  # a longer run of blanks after the token: the row is handed on
# Right after the token, a byte that may make it another one: the first byte of an extra
# separator but " " (U+00A0's also starts a few other characters: a few more rows handed on),
# ``\\`` (of ``\\,`` and ``\\%``), A/B's ``/``; after blanks, a digit (the separator " ")
# or ``\\`` (of ``\\%``).
_SEPARATOR_STARTS = [sep.encode()[0] for sep in EXTRA_SEPARATORS if sep != " "]
NEXT_RIGHT = byte_table(bytes(_SEPARATOR_STARTS) + f"{LATEX_ESCAPE}{SLASH}".encode())
_NEXT_AFTER_BLANKS = byte_table(f"{DIGITS}{LATEX_ESCAPE}".encode())
PERCENT_BYTE = byte_table(PERCENT_SIGN.encode()[:1])


@lru_cache(maxsize=32)
def scale_bytes(opts: Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bytes of `marks`' scale words for `scale_word_at`: the first byte of a word (any
    case, letters in theirs), the words of one byte, and the pairs of a word's first two bytes."""
    first, one, pairs = np.zeros(256, bool), np.zeros(256, bool), np.zeros((256, 256), bool)
    forms = [*SCALE_LETTERS, *(w[:2] for w in [*SCALE_WORDS, *dict(opts.scale_words)])]
    for form in forms:
        cases = [form] if form in SCALE_LETTERS else _cases(form)
        for case in map(str.encode, cases):
            first[case[0]] = True
            if len(case) == 1:
                one[case[0]] = True
            else:
                pairs[case[0], case[1]] = True
    return first, one, pairs


def _cases(word: str) -> list[str]:
    """Every any-case spelling of ``word`` (a short one: a scale word's first two letters)."""
    out = [""]
    for c in word:
        out = [o + x for o in out for x in dict.fromkeys((c, c.lower(), c.upper())) if len(x) == 1]
    return out


def _clean_group_regex(decimal_comma: bool) -> str:
    """A `_lead_regex` token with a grouping separator that the full grammar reads the same."""
    grouped = _token_parts(decimal_comma)[0]
    group = re.escape(separators(decimal_comma)[0])
    return rf"^{grouped}(?:[^0-9{group}]|$)"


def _single_token_regex(opts: Options) -> str:
    """Texts from their first digit with no digit after the `_lead_regex` token: that token is
    also the last one."""
    lead = _lead_regex(Options(decimal_comma=opts.decimal_comma))
    return lead.replace("(?P<tok>", "(?:") + "[^0-9]*$"


@lru_cache(maxsize=2)
def _not_digits(top: int) -> str:
    """Every character below ``top`` but the ASCII digits (and surrogates): what is trimmed."""
    return "".join(chr(c) for c in range(top) if not ("0" <= chr(c) <= "9" or 0xD800 <= c < 0xE000))


def from_first_digit(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Each text from its first ASCII digit (null or empty where it has none), and how many
    bytes were cut before it.

    A trim of every character but the digits, without a pattern (several times cheaper than
    one): ``ascii_ltrim`` when the text is all ASCII, else ``utf8_ltrim`` of every character of
    the Basic Multilingual Plane but the digits and of the characters beyond it that the text
    holds (a little slower).
    """
    top = top_byte(text)
    if top < 0x80:
        rest = pc.ascii_ltrim(text, _not_digits(0x80))
    else:
        beyond = astral_chars(text) if top >= 0xF0 else ""
        rest = pc.utf8_ltrim(text, _not_digits(0x10000) + beyond)
    return rest, byte_lengths(text) - byte_lengths(rest)


def _scan_regex(decimal_comma: bool) -> str:
    """RE2 pattern matching each token left to right without overlap, as ``finditer`` does."""
    return token_regex(Options(decimal_comma=decimal_comma), form="scan", extra=False)


def _cast(text: pa.Array) -> np.ndarray:
    try:
        values = pc.cast(text, pa.float64())
    except pa.ArrowInvalid:  # only an exponent's U+2212 fails here: rare, so only then replaced
        values = pc.cast(pc.replace_substring(text, "\u2212", "-"), pa.float64())
    return values.to_numpy(zero_copy_only=False, writable=True)


def to_float(tokens: pa.Array, decimal_comma: bool, grouped: np.ndarray) -> np.ndarray:
    """Values of tokens; ``grouped`` marks those holding a grouping separator."""
    group, point = separators(decimal_comma)
    if point != ".":
        text = pc.replace_substring(pc.replace_substring(tokens, group, ""), point, ".")
        return _cast(text)
    # Most tokens have no separator: cast as they are (the others hidden as nulls, no copy).
    values = _cast(nulls_where(tokens, grouped))
    if grouped.any():
        values[grouped] = _cast(pc.replace_substring(tokens.filter(grouped), group, ""))
    return values


def _after_token(
    text: pa.Array, cut: np.ndarray, tok: pa.Array, matched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bytes after each `_lead_regex` token, read from Arrow's buffers (no regex groups).

    ``right``: the first byte right after the token, 0 at the end or where it is a blank or one
    that the token may go on with (``[0-9.,]``); ``later``: the first byte after the blanks
    that follow the token, 0 where no blank follows or only blanks do; ``unknown``: the rows
    with more than `_BLANK_STEPS` blanks there, not looked at (the caller hands them on, so
    that a long run costs one pass, not one per blank). ``cut``: the bytes before the token
    (`from_first_digit`). Last, where in Arrow's text buffer ``later``'s byte is (else the
    byte right after the token).
    """
    starts, ends, data = byte_spans(text)
    at = np.where(matched, starts + cut + byte_lengths(tok), ends)
    last = len(data) - 1
    following = np.where(at < ends, data[np.minimum(at, last)], 0)
    right = np.where(_GOES_ON[following], 0, following)
    later, where = np.zeros_like(following), at.copy()
    rows = np.flatnonzero(_BLANK[following] & (at < ends))
    at = at[rows] + 1
    for _ in range(_BLANK_STEPS):
        byte = np.where(at < ends[rows], data[np.minimum(at, last)], 0)
        blank = _BLANK[byte] & (at < ends[rows])
        later[rows[~blank]], where[rows[~blank]] = byte[~blank], at[~blank]
        rows, at = rows[blank], at[blank] + 1
        if not len(rows):
            break
    return right, later, rows, where


def parse_full(text: pa.Array, opts: Options, located: Located | None = None) -> np.ndarray:
    """Values of a string array with no nulls, by the full grammar; NaN where no number; their
    spans in ``located`` when given (SPEC §1.4)."""
    if opts.pick == "last":
        marked = pc.replace_substring_regex(text, _scan_regex(opts.decimal_comma), MARK + r"\0")
        split = pc.extract_regex(marked, rf"(?s)^(?P<head>.*){MARK}(?P<tail>.*)$")
        found = np.asarray(split.is_valid(), dtype=bool)
        head = pc.replace_substring(split.field("head").filter(found), MARK, "")
        tail = split.field("tail").filter(found)
        parts = pc.extract_regex(tail, _token_regex(opts.decimal_comma, leading=True))
        tok, pct = parts.field("tok"), parts.field("pct")
    else:
        parts = pc.extract_regex(text, _token_regex(opts.decimal_comma, leading=False))
        found = np.asarray(parts.is_valid(), dtype=bool)
        parts = parts.filter(found)
        head, tok, pct = parts.field("pre"), parts.field("tok"), parts.field("pct")
    out = np.full(len(text), np.nan)
    grouped = as_mask(pc.match_substring(tok, separators(opts.decimal_comma)[0]))
    values = to_float(tok, opts.decimal_comma, grouped)
    if opts.percent == "fraction":
        per_cent(values, pct)
    out[found] = signed_values(byte_spans(head), values)
    if located is not None:
        pct = pct if opts.percent == "fraction" else None
        if opts.pick == "last":
            located_rows.after_head(located, text, found, head, tok, pct)
        else:
            located_rows.at_first_digit(located, text, found, head, tok, pct, from_first_digit)
    return out


def cast_whole(text: pa.Array, opts: Options) -> np.ndarray | None:
    """The column through Arrow's float parser, when every string is one it accepts.

    Exact: every string that Arrow parses to a finite float is ``[+-]`` and one whole token
    without grouping, which the grammar reads as the same float (a ``+``/``-`` at the start
    belongs to the token). Its other strings (``inf``, ``nan``, ``nan(12)``, ``1e999``) are
    given back as NaN for the caller to read again. With ``decimal_comma``, a column with no
    ``.`` at all is read with its ``,`` made a ``.``: there ``,`` can only be the point.
    """

    def cast(strings: pa.Array) -> pa.Array:
        if opts.decimal_comma:
            strings = pc.replace_substring(strings, ",", ".")
        return pc.cast(strings, pa.float64())

    try:  # a failing cast is slow (an error per row): try the first rows alone first
        cast(text.slice(0, 1000))
        if opts.decimal_comma and pc.any(pc.match_substring(text, ".")).as_py():
            return None
        values = cast(text)
    except pa.ArrowInvalid:
        return None
    return values.to_numpy(zero_copy_only=False, writable=True)


def parse_lead(
    text: pa.Array, opts: Options, located: Located | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Values of the rows that `_lead_regex` reads exactly; the mask of the rows it cannot;
    their spans in ``located`` when given (SPEC §1.4).

    Exact because the leftmost token starts at the first digit unless a point stands right
    before it, and reads as that digit run when the run has no separator or a clean grouped
    one; with ``pick="last"``, no digit after it means no other token. A row it does not match
    has no digit, so no number: NaN, and read. With ``pick="last"`` it is exact for the options
    of SPEC §1.1 too: with one digit run no fraction can form and no other separator can join a
    group; a row with a scale word right after the token is handed on. With ``pick="first"``
    and §1.1's separators or fractions, a row is also handed on where `_NEXT` finds what could
    make the token another one (a group after an extra separator, ``\\,``, A/B), or where a
    backslash before the first digit may start a ``\\frac``.
    """
    group, point = separators(opts.decimal_comma)
    rest, cut = from_first_digit(text)
    parts = pc.extract_regex(rest, _lead_regex(opts))
    matched = np.asarray(parts.is_valid(), dtype=bool)
    tok = pc.struct_field(parts, "tok")  # null where no match
    starts, _, data = byte_spans(text)
    head = (starts, starts + cut, data)  # the text before the token
    before = last_byte(head)
    found = matched & (before != ord(point))
    grouped = rows_holding(tok, ord(group))
    if grouped.any():
        pattern = _clean_group_regex(opts.decimal_comma)
        clean = as_mask(pc.match_substring_regex(tok.filter(grouped), pattern))
        found[np.flatnonzero(grouped)[~clean]] = False
    if opts.pick == "last":
        found &= as_mask(pc.match_substring_regex(rest, _single_token_regex(opts)))
    if _looks_after(opts):
        right, later, unknown, where = _after_token(text, cut, tok, matched)
        found[unknown] = False
        found &= ~(NEXT_RIGHT[right] | _NEXT_AFTER_BLANKS[later])
        if opts.fractions and may_hold(text, b"\\"):  # a \frac before the first digit
            found &= ~spans_holding(head, ord("\\"))
        scale_table = scale_bytes(opts)
        scaled = scale_table[0][right] | scale_table[0][later]
        percent = PERCENT_BYTE[right] | PERCENT_BYTE[later]
    else:
        scaled = char_lengths(match_group(parts, "sc")) > 0 if opts.scale == "words" else None
        percent = (
            char_lengths(match_group(parts, "pct")) > 0 if opts.percent == "fraction" else None
        )
    if scaled is not None and opts.scale == "words":  # words looked for where their letter is
        maybe = found & scaled
        if maybe.any() and _looks_after(opts):
            found[maybe] = ~scale_word_at(text, where[maybe], *scale_table[1:])
        elif maybe.any():
            word = rf"[0-9.,]{BLANKS}(?:{scale_regex(opts)})"
            found[maybe] = ~as_mask(pc.match_substring_regex(text.filter(maybe), word))
    # Every row is read at once (no filtering); the rows not found are left to the caller.
    values = to_float(tok, opts.decimal_comma, grouped)
    values[~found] = np.nan
    if percent is not None and opts.percent == "fraction":
        values[percent] /= 100
    else:
        percent = None
    sign = sign_widths(head, before)
    values[sign > 0] *= -1
    if located is not None:
        located_rows.lead(located, text, found, cut, tok, sign, percent, opts)
    return values, matched & ~found


def decimal_values(tok: pa.Array, opts: Options) -> np.ndarray:
    seps = group_separators(opts)
    if len(seps) == 1:
        return to_float(tok, opts.decimal_comma, as_mask(pc.match_substring(tok, seps[0])))
    pattern = "|".join(literal(sep) for sep in sorted(seps, key=len, reverse=True))
    grouped = as_mask(pc.match_substring_regex(tok, pattern))
    if grouped.any():
        tok = replace_rows(
            tok, grouped, pc.replace_substring_regex(tok.filter(grouped), pattern, "")
        )
    return to_float(tok, opts.decimal_comma, np.zeros(len(tok), bool))
