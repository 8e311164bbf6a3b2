"""SPEC §1's sign before a token, for the column reader: read on UTF-8 bytes.

The text before each token (its head) is given as byte spans of Arrow's text buffer
(`buffers.Spans`), so that the tiers need not copy it out: a minus ending the head is a sign
when it starts the text or follows a character that is not alnum, and so is a minus right
before one currency symbol that ends the head (SPEC v3).
"""

from __future__ import annotations

import string

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.reading.buffers import Spans, as_mask, byte_table, last_byte, span_strings
from numdiff_component.reading.grammar import CURRENCY, MINUS


def alnum_mask(chars: pa.Array) -> np.ndarray:
    """``str.isalnum`` of each one-character string, computed once per distinct character."""
    distinct = pc.unique(chars).to_pylist()
    alnum = pa.array([c for c in distinct if c is not None and c.isalnum()], pa.string())
    return as_mask(pc.is_in(chars, value_set=alnum))


def signed_values(head: Spans, values: np.ndarray, last: np.ndarray | None = None) -> np.ndarray:
    """The values with the sign that ends ``head``, the text before each token, when it belongs
    (see SPEC §1): right before the token, or right before one currency symbol that ends
    ``head`` (SPEC v3). ``last``: `last_byte` of ``head`` when the caller has it."""
    negate = sign_widths(head, last) > 0
    values[negate] = -values[negate]
    return values


def sign_widths(head: Spans, last: np.ndarray | None = None) -> np.ndarray:
    """The bytes that the sign ending ``head`` takes (with the currency symbol after it, SPEC
    v3), where it belongs to the token after ``head``; 0 where none does (see `signed_values`)."""
    # A minus ends with one of `MINUS_LAST` (0x2D, 0x92): only those heads are looked at; and
    # the heads ending with a currency symbol right after such a byte, up to that symbol.
    starts, ends, data = head
    last = last_byte(head) if last is None else last
    widths = np.zeros(len(starts), np.int64)
    rows = np.flatnonzero(MINUS_LAST[last])
    sign, size = _sign_minus(data, starts[rows], ends[rows])
    widths[rows[sign]] = size[sign]
    rows, symbol = _currency_after_minus(head, last)
    sign, size = _sign_minus(data, starts[rows], symbol)
    widths[rows[sign]] = ends[rows[sign]] - symbol[sign] + size[sign]
    return widths


def _sign_minus(
    data: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Whether each span ``start``..``end`` of ``data`` (each ending with a minus's last byte)
    ends with a minus that is a sign: at the start, or after a character that is not alnum;
    and the bytes of that minus.

    The minus is one of `grammar.MINUS`, compared on its UTF-8 bytes; the character before it
    is ASCII when its last byte is (a continuation byte is >= 0x80), and an ASCII character is
    alnum when it is ``[0-9A-Za-z]``; the spans with another character there are left to
    `_minus_ends`.
    """
    start, end = start.astype(np.int64), end.astype(np.int64)
    size = np.zeros(len(end), np.int64)  # the bytes of the minus ending the span (0: none)
    for code in _MINUS_CODES:
        ok = (size == 0) & (end - len(code) >= start)
        for k, byte in enumerate(code):
            ok &= data[np.maximum(end - len(code) + k, 0)] == byte
        size[ok] = len(code)
    before = end - size - 1  # where the character before the minus ends
    byte = data[np.maximum(before, 0)]
    at_start = before < start
    sign = (size > 0) & (at_start | ~_ASCII_ALNUM[byte])
    other = (size > 0) & ~at_start & (byte >= 0x80)
    if other.any():
        sign[other] = _minus_ends(span_strings(data, start[other], end[other]))
    return sign, size


_ASCII_ALNUM = byte_table((string.digits + string.ascii_letters).encode())


def _minus_ends(head: pa.Array) -> np.ndarray:
    """Heads ending with a minus that is a sign (at the start or after a non-alnum)."""
    minus = np.logical_or.reduce([as_mask(pc.ends_with(head, m)) for m in MINUS])
    at_start = np.asarray(pc.utf8_length(head)) == 1
    before = alnum_mask(pc.utf8_slice_codeunits(head, -2, -1))
    return minus & (at_start | ~before)


_MINUS_CODES = [np.frombuffer(m.encode(), np.uint8) for m in MINUS]
MINUS_LAST = byte_table(bytes(int(code[-1]) for code in _MINUS_CODES))
_CURRENCY_CODES = [np.frombuffer(c.encode(), np.uint8) for c in CURRENCY]
CURRENCY_LAST = byte_table(bytes(int(code[-1]) for code in _CURRENCY_CODES))


def _currency_after_minus(head: Spans, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose head ends with a currency symbol right after the last byte of a minus,
    and where that symbol starts.

    Compared on UTF-8 bytes, only on the rows whose ``last`` byte ends a currency symbol: a
    necessary condition for a sign before the symbol (`_sign_minus` then decides), cheap enough
    that the default reading pays nothing for SPEC v3's currency sign.
    """
    rows = np.flatnonzero(CURRENCY_LAST[last])
    if not len(rows):
        return rows, rows
    starts, ends, data = head
    starts, ends = starts[rows].astype(np.int64), ends[rows].astype(np.int64)
    symbol, ending = np.full(len(rows), -1), last[rows]
    for code in _CURRENCY_CODES:
        some = np.flatnonzero(ending == code[-1])  # the symbols that end with this byte
        at = ends[some] - len(code)  # where the symbol would start; a byte before it is needed
        ok = at - 1 >= starts[some]
        for k, byte in enumerate(code[:-1]):
            ok &= data[np.maximum(at + k, 0)] == byte
        ok &= MINUS_LAST[data[np.maximum(at - 1, 0)]]
        symbol[some[ok]] = at[ok]
    keep = symbol >= 0
    return rows[keep], symbol[keep]
