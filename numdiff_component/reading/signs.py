"""SPEC §1's sign before a token, for the column reader: read on UTF-8 bytes.

The text before each token (its head) is given as byte spans of Arrow's text buffer
(`buffers.Spans`), so that the tiers need not copy it out: a minus ending the head is a sign
when it starts the text or follows a character that is not alnum, and so is a minus right
before one currency symbol that ends the head (SPEC v3).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.reading.buffers import Spans, _last_byte, _mask, _strings
from numdiff_component.reading.grammar import CURRENCY


def _alnum_mask(chars: pa.Array) -> np.ndarray:
    """``str.isalnum`` of each one-character string, computed once per distinct character."""
    distinct = pc.unique(chars).to_pylist()
    alnum = pa.array([c for c in distinct if c is not None and c.isalnum()], pa.string())
    return _mask(pc.is_in(chars, value_set=alnum))


def _signed_values(head: Spans, values: np.ndarray, last: np.ndarray | None = None) -> np.ndarray:
    """The values with the sign that ends ``head``, the text before each token, when it belongs
    (see SPEC §1): right before the token, or right before one currency symbol that ends
    ``head`` (SPEC v3). ``last``: `_last_byte` of ``head`` when the caller has it."""
    # A minus ends with byte 0x2D ("-") or 0x92 (U+2212): only those heads are looked at; and
    # the heads ending with a currency symbol right after such a byte, up to that symbol.
    starts, ends, data = head
    last = _last_byte(head) if last is None else last
    rows = np.flatnonzero(_MINUS_LAST[last])
    negate = rows[_sign_minus(data, starts[rows], ends[rows])]
    rows, symbol = _currency_after_minus(head, last)
    negate = np.concatenate([negate, rows[_sign_minus(data, starts[rows], symbol)]])
    values[negate] = -values[negate]
    return values


def _sign_minus(data: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether each span ``start``..``end`` of ``data`` (each ending with a minus's last byte)
    ends with a minus that is a sign: at the start, or after a character that is not alnum.

    The minus is ``-`` (0x2D) or U+2212 (E2 88 92); the character before it is ASCII when its
    last byte is (a continuation byte is >= 0x80), and an ASCII character is alnum when it is
    ``[0-9A-Za-z]``; the spans with another character there are left to `_minus_ends`.
    """
    start, end = start.astype(np.int64), end.astype(np.int64)
    narrow = data[end - 1] == 0x2D
    wide = (end - 3 >= start) & (data[np.maximum(end - 3, 0)] == 0xE2)
    wide &= ~narrow & (data[np.maximum(end - 2, 0)] == 0x88) & (data[end - 1] == 0x92)
    before = end - np.where(narrow, 1, 3) - 1  # where the character before the minus ends
    byte = data[np.maximum(before, 0)]
    at_start = before < start
    sign = (narrow | wide) & (at_start | ~_ASCII_ALNUM[byte])
    other = (narrow | wide) & ~at_start & (byte >= 0x80)
    if other.any():
        sign[other] = _minus_ends(_strings(data, start[other], end[other]))
    return sign


_ASCII_ALNUM = np.isin(
    np.arange(256), [*b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"]
)


def _minus_ends(head: pa.Array) -> np.ndarray:
    """Heads ending with a minus that is a sign (at the start or after a non-alnum)."""
    minus = _mask(pc.ends_with(head, "-")) | _mask(pc.ends_with(head, "\u2212"))
    at_start = np.asarray(pc.utf8_length(head)) == 1
    before = _alnum_mask(pc.utf8_slice_codeunits(head, -2, -1))
    return minus & (at_start | ~before)


_MINUS_LAST = np.isin(np.arange(256), [0x2D, 0x92])  # last byte of "-" and of U+2212
_CURRENCY_CODES = [np.frombuffer(c.encode(), np.uint8) for c in CURRENCY]
_CURRENCY_LAST = np.isin(np.arange(256), [int(code[-1]) for code in _CURRENCY_CODES])


def _currency_after_minus(head: Spans, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose head ends with a currency symbol right after the last byte of a minus,
    and where that symbol starts.

    Compared on UTF-8 bytes, only on the rows whose ``last`` byte ends a currency symbol: a
    necessary condition for a sign before the symbol (`_sign_minus` then decides), cheap enough
    that the default reading pays nothing for SPEC v3's currency sign.
    """
    rows = np.flatnonzero(_CURRENCY_LAST[last])
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
        ok &= _MINUS_LAST[data[np.maximum(at - 1, 0)]]
        symbol[some[ok]] = at[ok]
    keep = symbol >= 0
    return rows[keep], symbol[keep]
