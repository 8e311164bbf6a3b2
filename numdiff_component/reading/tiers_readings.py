"""The column reader's tiers for SPEC §1.1 (answer spans, scale words, separators, fractions).

The same grammar as `grammar`, `marks` and `fractions` declare, in RE2. With §1.1's readings,
the last marker and the last token are looked for from the end of the text (`parse_general`).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.buffers import (
    as_mask,
    byte_spans,
    char_lengths,
    last_bytes,
    match_group,
    may_hold,
    nulls_where,
    per_cent,
    replace_rows,
    reversed_strings,
)
from numdiff_component.reading.fractions import FRAC, FRAC_COMMANDS, SLASH, frac_regex
from numdiff_component.reading.grammar import (
    BLANK,
    BLANKS,
    CURRENCY,
    DIGITS,
    EXPONENT,
    EXTRA_SEPARATORS,
    LATEX_COMMAS,
    SIGNS,
    char_class,
    group_separators,
    literal,
    separators,
    token_regex,
)
from numdiff_component.reading.located_rows import Located, code_points
from numdiff_component.reading.marks import (
    BOX_REGEX,
    PERCENT,
    SCALE_LETTERS,
    any_marker_regex,
    reversed_answer_regex,
    scale_regex,
    scale_table,
)
from numdiff_component.reading.plain import parse_text
from numdiff_component.reading.signs import alnum_mask, signed_values
from numdiff_component.reading.spans import BOX, FIRST, MARKER
from numdiff_component.reading.tiers import MARK, decimal_values, parse_lead

# --- the vectorised path of SPEC §1.1 -------------------------------------------------------
#
# The same grammar in RE2, which has no look-around. Each look-around of the plain path is
# replaced by something exact: grouped's "last group not followed by a digit" is checked on the
# character after the match (`_read`); the scale word's "not followed by a letter or digit" too;
# the markers' "not preceded / followed by an ASCII letter" by a consumed character or a span
# that must start with a non-letter. The A/B rules that look around (dates) and a grouped token
# right before a \frac are not expressed: rows holding them go to the plain path (`hard_pattern`),
# as do boxes nested more than three deep. Only those rows are read one by one.


def classic_options(opts: Options) -> bool:
    return (
        opts.pick != "answer"
        and opts.scale == "none"
        and opts.thousands == "comma"
        and not opts.fractions
    )


def _re2_token(opts: Options, *, scan: bool = False) -> str:
    """The token alternatives in the plain path's order, without their look-arounds. With
    ``scan``: each token left to right without overlap, as ``finditer`` finds them (a grouped
    one takes the non-digit after it), with no named groups."""
    token = token_regex(opts, form="scan" if scan else "re2")
    if opts.fractions:
        frac, slash = frac_regex(opts.decimal_comma), "(?P<sa>[0-9]+)/(?P<sb>0*[1-9][0-9]*)"
        if scan:
            frac, slash = re.sub(r"\?P<\w+>", "", frac), re.sub(r"\?P<\w+>", "", slash)
        token = rf"{frac}|{slash}|{token}"
    return token


def re2_scan(opts: Options) -> str:
    """Each token left to right without overlap (a grouped one takes the non-digit after it)."""
    return _re2_token(opts, scan=True)


def _read_regex(opts: Options, *, leading: bool) -> str:
    """The first token with ``pre`` (its sign), ``scale``, ``pct`` and ``nx``, the next char."""
    before = "^" if leading else f"(?P<pre>(?:^|.)[+\\-\u2212][{CURRENCY}]?)??"
    scale = rf"(?P<scale>{BLANKS}(?:{scale_regex(opts)}))?" if opts.scale == "words" else ""
    pct = rf"(?P<pct>{PERCENT})?" if opts.percent == "fraction" else ""
    return rf"(?s){before}(?P<tok>{_re2_token(opts)}){scale}{pct}(?P<nx>.|$)"


def _hard_parts(opts: Options) -> list[tuple[str, bytes]]:
    """Rows the RE2 patterns may read differently: A/B next to another slash and digits (where
    the plain path looks around), a grouped token right before a ``\\frac`` (the scan takes
    the backslash); each with a byte that its every match holds."""
    if not opts.fractions:
        return []
    return [
        (f"{SLASH}[0-9]+{SLASH}[0-9]", SLASH.encode()),
        (rf"[0-9]{{3}}{FRAC}\{{", FRAC_COMMANDS[0][:1].encode()),
    ]


def hard_pattern(opts: Options) -> str | None:
    """`_hard_parts` as one pattern (``None`` for none)."""
    return "|".join(pattern for pattern, _ in _hard_parts(opts)) or None


def reversed_last_regex(opts: Options) -> str:
    """The reversed text from its end to the character before the run that holds the last token.

    Every character a token can hold is in ``chars``; the run of them around the last digit
    starts after a character that no token holds (``ctx``), so tokens found from there are the
    text's.
    """
    # A currency symbol: between a sign and a token.
    chars = f"{DIGITS}{''.join(separators(False))}{EXPONENT}{SIGNS}{CURRENCY}"
    if opts.thousands == "any":
        chars += "".join(EXTRA_SEPARATORS)
    if opts.fractions:
        chars += f"{SLASH}{''.join(FRAC_COMMANDS)}{{}}{BLANK}"
    chars = char_class("".join(dict.fromkeys(chars)))
    return rf"(?s)^(?P<r>[^0-9]*[0-9][{chars}]*(?P<ctx>[^{chars}]|$))"


_TAIL = 100  # bytes: most answers end within them


def _reversed_search(text: pa.Array, pattern: str, names: tuple[str, ...]) -> list[pa.Array]:
    """Groups ``names`` of ``pattern`` on each reversed string; null where it does not match.

    Only the last `_TAIL` bytes (cut where a character starts) are reversed and searched first.
    A longer row is searched again whole when that found nothing, or when ``ctx`` matched at the
    cut (empty and ``ans`` or ``r`` not): there the cut, not the text, ended the match.
    """
    starts, ends, _ = byte_spans(text)
    long = (ends - starts > _TAIL) & as_mask(text.is_valid())
    tail = last_bytes(text, _TAIL) if long.any() else text
    parts = pc.extract_regex(reversed_strings(tail), pattern)
    fields = [pc.struct_field(parts, name) for name in names]
    if long.any():
        ctx = pc.struct_field(parts, "ctx")
        word = pc.struct_field(parts, "ans" if "ans" in names else "r")
        at_cut = as_mask(pc.equal(ctx, "")) & as_mask(pc.greater(pc.utf8_length(word), 0))
        again = long & (~as_mask(parts.is_valid()) | at_cut)
        if again.any():
            more = pc.extract_regex(reversed_strings(text.filter(again)), pattern)
            fields = [
                replace_rows(f, again, pc.struct_field(more, name))
                for f, name in zip(fields, names, strict=True)
            ]
    return fields


# The box's text up to the brace that closes it (two nested levels inside), or to the end.


def _read(text: pa.Array, opts: Options, head: pa.Array | None = None) -> np.ndarray:
    """Values of the first token of each string (no nulls), by `_read_regex`; NaN where none.

    With ``head`` (the text before each string), each string starts with its token.
    """
    # Rows with no token stay in (nulls in every group), which is cheaper than filtering.
    parts = pc.extract_regex(text, _read_regex(opts, leading=head is not None))
    tok, nx = pc.struct_field(parts, "tok"), pc.struct_field(parts, "nx")
    # A grouped token right before a digit (RE2 took one group too many): drop that group.
    short = as_mask(pc.match_substring_regex(nx, "^[0-9]")) & ~as_mask(pc.ends_with(tok, "}"))
    for name in ("scale", "pct"):  # nx is then after the word or the %, not after the token
        after = match_group(parts, name)
        if after is not None:
            short &= char_lengths(after) == 0
    if short.any():
        seps = "|".join(literal(sep) for sep in group_separators(opts))
        cut = pc.replace_substring_regex(tok.filter(short), f"(?:{seps})[0-9]{{3}}$", "")
        tok = replace_rows(tok, short, cut)
    values = np.full(len(tok), np.nan)
    with np.errstate(over="ignore", invalid="ignore"):  # inf is caught by `parse_column`
        _numbers_of(parts, tok, values, opts)
    signs = head if head is not None else pc.struct_field(parts, "pre").fill_null("")
    per_cent(values, match_group(parts, "pct"))
    return signed_values(byte_spans(signs), values)


def _numbers_of(parts: pa.StructArray, tok: pa.Array, values: np.ndarray, opts: Options) -> None:
    """Fill ``values``: each token's number times its scale word (SPEC §1.1), no sign."""
    fraction = np.zeros(len(tok), bool)
    for a, b in (("fn", "fm"), ("sa", "sb")):
        numerator = match_group(parts, a)
        if numerator is None:
            continue
        rows = char_lengths(numerator) > 0
        if rows.any():
            top = decimal_values(numerator.filter(rows), opts)
            bottom = decimal_values(pc.struct_field(parts, b).filter(rows), opts)
            finite = np.isfinite(top) & np.isfinite(bottom)  # `fractions.quotient`
            values[rows] = np.where(finite, top / np.where(finite, bottom, 1), np.nan)
            fraction |= rows
    values[~fraction] = decimal_values(tok.filter(~fraction) if fraction.any() else tok, opts)
    _apply_scale(values, parts, opts)


def _apply_scale(values: np.ndarray, parts: pa.StructArray, opts: Options) -> None:
    """Multiply by the scale word (group ``scale``) where it ends before a non-alnum."""
    scale, pct = match_group(parts, "scale"), match_group(parts, "pct")
    if scale is None:
        return
    has = char_lengths(scale) > 0
    with_pct = has & (char_lengths(pct) > 0 if pct is not None else False)
    valid = has & (with_pct | ~alnum_mask(pc.struct_field(parts, "nx")))
    if valid.any():
        word = pc.utf8_ltrim(scale.filter(valid), BLANK)  # then keyed as `marks.scale_key` does
        letters = pa.array(list(SCALE_LETTERS), pa.string())
        key = pc.if_else(pc.is_in(word, value_set=letters), word, pc.utf8_lower(word))
        table = scale_table(opts.scale_words)
        factors = np.array(list(table.values()))
        values[valid] *= factors[np.asarray(pc.index_in(key, pa.array(list(table))))]


def _read_last(text: pa.Array, opts: Options) -> np.ndarray:
    """Values of the last token of each string (no nulls, no `MARK`); NaN where none."""
    marked = pc.replace_substring_regex(text, re2_scan(opts), MARK + r"\0")
    split = pc.extract_regex(marked, rf"(?s)^(?P<head>.*){MARK}(?P<tail>.*)$")
    found = as_mask(split.is_valid())
    split = split.filter(found)
    head = pc.replace_substring(split.field("head"), MARK, "")
    out = np.full(len(text), np.nan)
    out[found] = _read(pc.replace_substring(split.field("tail"), MARK, ""), opts, head)
    return out


def _last_values(strings: pa.Array, opts: Options, located: Located) -> np.ndarray:
    """Values of the last token of each string (no `MARK`); NaN where none.

    Tiers: a text with one digit run (`parse_lead`); else the run of token characters around
    the last digit, found from the end (`_reversed_search`), read the same way when it holds one
    digit run, else by the scan (`_read_last`).
    """
    last = Options.of(opts, pick="last")
    out, rest = parse_lead(strings, last, located)
    if rest.any():
        index = np.flatnonzero(rest)
        (around,) = _reversed_search(strings.filter(rest), reversed_last_regex(opts), ("r",))
        found = as_mask(around.is_valid())
        around, index = reversed_strings(around.filter(found)), index[found]
        whole = code_points(strings)[index]
        part = Located.empty(len(around))
        values, again = parse_lead(around, last, part)
        out[index] = values
        if again.any():
            out[index[again]] = _read_last(around.filter(again), opts)
            part.read_rows(around, again, last)
        located.take(index, part, whole - code_points(around))  # `around` ends the text
    return out


def _first_values(strings: pa.Array, opts: Options, located: Located) -> np.ndarray:
    """Values of the first token of each string (no nulls); NaN where none.

    The token at the first digit, when nothing around it can make §1.1's token there another
    one: `parse_lead` reads it (one cheap pass); only the others go to `_read`, several times
    slower per row.
    """
    first = Options.of(opts, pick="first")
    out, rest = parse_lead(strings, first, located)
    if rest.any():
        out[rest] = _read(strings.filter(rest), opts)
        located.read_rows(strings, rest, first)
    return out


def _answer_spans(
    text: pa.Array, opts: Options
) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """Rows with an answer marker, their spans, the rows whose box nests too deep to cut, the
    spans' boxes, and where each span starts in its text (code points)."""
    names = ("r", "c", "box", "ans")
    r, c, box = _reversed_search(text, reversed_answer_regex(opts), names)[:3]
    marked = as_mask(r.is_valid())
    r, c, box = r.filter(marked), c.filter(marked), box.filter(marked)
    span = reversed_strings(pc.binary_join_element_wise(r, c, pa.scalar("", r.type)))
    offset = code_points(text)[marked] - code_points(span)
    box = np.asarray(pc.utf8_length(box)) > 0
    deep = np.zeros(len(span), bool)
    if box.any():
        inside = pc.extract_regex(span.filter(box), BOX_REGEX)
        deep[box] = ~as_mask(inside.is_valid())
        span = replace_rows(span, box, pc.struct_field(inside, "in").fill_null(""))
    return marked, span, deep, box, offset


def special_parts(opts: Options) -> list[tuple[str, bytes]]:
    """Rows that need a look before the RE2 patterns: `MARK`, LaTeX commas, `_hard_parts`;
    each with a byte that its every match holds (a literal's least common one)."""
    special = [MARK, *(LATEX_COMMAS if opts.thousands == "any" else ())]
    parts = [(literal(text), _rare_byte(text)) for text in special]
    return parts + _hard_parts(opts)


def _rare_byte(text: str) -> bytes:
    """A byte of ``text``, its first that is not a letter, digit, blank, comma or point."""
    data = text.encode()
    common = f"{BLANK}{''.join(separators(False))}".encode()
    return next((bytes([b]) for b in data if not (chr(b).isalnum() or b in common)), data[:1])


def special_regex(opts: Options) -> str:
    return "|".join(pattern for pattern, _ in special_parts(opts))


def special_bytes(opts: Options) -> bytes:
    """A byte that each match of `special_regex` holds."""
    return b"".join(byte for _, byte in special_parts(opts))


def parse_general(
    text: pa.Array, opts: Options, special: np.ndarray | None = None, located: Located | None = None
) -> np.ndarray:
    """Values of a string array (nulls allowed) with any option of SPEC §1.1; NaN where none.

    ``special``: the rows that match `special_regex`, when the caller has found them (a
    superset will do: the others only take one more test). Their spans in ``located`` when
    given (SPEC §1.4).
    """
    located = located if located is not None else Located.empty(len(text))
    original = text
    out = np.full(len(text), np.nan)
    rows = as_mask(text.is_valid())
    hard = np.zeros(len(text), bool)
    if special is None:
        special = np.zeros(len(text), bool)
        if may_hold(text, special_bytes(opts)):
            special = as_mask(pc.match_substring_regex(text, special_regex(opts)))
    if special.any():  # one cheap pass; the rest only on the few rows that need it
        some = text.filter(special)
        if opts.thousands == "any":
            for latex in LATEX_COMMAS:
                some = pc.replace_substring(some, latex, ",")
            text = replace_rows(text, special, some)
        mark = MARK if opts.pick != "first" else None  # the scan's own marker
        hard_regex = "|".join(filter(None, [hard_pattern(opts), mark]))
        if hard_regex:
            hard[special] = as_mask(pc.match_substring_regex(some, hard_regex))
    rows &= ~hard
    if rows.sum() * 2 > len(text):  # most rows: the others hidden as nulls (no copy)
        index = np.arange(len(text))
        strings = text if not hard.any() else nulls_where(text, ~rows)
    else:
        index = np.flatnonzero(rows)
        strings = text.filter(rows)
    part = Located.empty(len(strings))
    if opts.pick == "first":
        out[index] = _first_values(strings, opts, part)
        located.take(index, part)
    else:
        marked = np.zeros(len(index), bool)
        if opts.pick == "answer":
            marked = as_mask(pc.match_substring_regex(strings, any_marker_regex(opts)))
            if marked.any():
                has, span, deep, box, offset = _answer_spans(strings.filter(marked), opts)
                found = index[marked][has]
                hard[found[deep]] = True  # the plain path reads those
                kept = ~deep
                spans = Located.empty(int(kept.sum()))
                out[found[kept]] = _first_values(span.filter(kept), opts, spans)
                spans.rename(box[kept], FIRST, BOX)
                spans.rename(~box[kept], FIRST, MARKER)
                located.take(found[kept], spans, offset[kept])
        # Marked rows are hidden (nulls sharing the buffers), not filtered out (a copy).
        hidden = nulls_where(strings, marked) if marked.any() else strings
        values = _last_values(hidden, opts, part)
        out[index[~marked]] = values[~marked]
        located.take(index[~marked], part.subset(~marked))
    for i in np.flatnonzero(hard):
        value = parse_text(original[i].as_py(), opts)
        out[i] = np.nan if value is None else value
    located.read_rows(original, hard | special, opts)  # LaTeX commas moved their offsets
    return out
