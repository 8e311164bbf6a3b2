"""SPEC §1.4 for a column: where each row's number was read, filled in tier by tier.

`Located` holds each row's span (code points) and rule code (`spans.RULE_CODES`; -1: no
number). The tiers find a token's bytes in Arrow's buffers; `char_offsets` turns those into
code points. `lead` is the span of `tiers.parse_lead`'s token (the one read at the first digit),
from what that tier has found already; rows a tier reads in a way that gives no span cheaply
are read again, for their span only, by the one-value reader (`Located.read_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.buffers import (
    byte_lengths,
    byte_spans,
    first_bytes,
    top_byte,
)
from numdiff_component.reading.grammar import DIGITS
from numdiff_component.reading.located import read_text
from numdiff_component.reading.marks import PERCENT_SIGN
from numdiff_component.reading.signs import sign_widths
from numdiff_component.reading.spans import FIRST, LAST, RULE_CODES

DIGIT_BYTES = np.frombuffer(DIGITS.encode(), np.uint8)


@dataclass
class Located:
    """The spans and rules of a column, row by row (code points); ``start`` and ``end`` mean
    nothing where ``rule`` is -1 (no number)."""

    start: np.ndarray
    end: np.ndarray
    rule: np.ndarray  # codes of `RULE_CODES`, -1 where none

    @classmethod
    def empty(cls, n: int) -> Located:
        return cls(np.empty(n, np.int64), np.empty(n, np.int64), np.full(n, -1, np.int8))

    def put(
        self,
        rows: np.ndarray | slice,
        start: np.ndarray | int,
        end: np.ndarray | int,
        rule: str,
    ) -> None:
        """Rows ``rows`` (a mask, indices or a slice) read at ``start``..``end`` by ``rule``."""
        self.start[rows], self.end[rows], self.rule[rows] = start, end, RULE_CODES[rule]

    def take(self, rows: np.ndarray | slice, other: Located, offset: np.ndarray | int = 0) -> None:
        """Rows ``rows`` from ``other`` (one row each, in order), shifted by ``offset`` where
        ``other`` read a number: what was read in a part of each text that starts there."""
        found = other.rule >= 0
        self.start[rows] = np.where(found, other.start + offset, -1)
        self.end[rows] = np.where(found, other.end + offset, -1)
        self.rule[rows] = other.rule

    def rename(self, rows: np.ndarray, old: str, new: str) -> None:
        """Rows ``rows`` read by ``old`` were read by ``new`` (a token of an answer span)."""
        index = np.flatnonzero(rows) if rows.dtype == bool else rows
        index = index[self.rule[index] == RULE_CODES[old]]
        self.rule[index] = RULE_CODES[new]

    def read_rows(self, strings: pa.Array, rows: np.ndarray, opts: Options) -> np.ndarray:
        """Rows ``rows`` (a mask) of ``strings`` read by the one-value reader, once per
        distinct text: their values (NaN where none), and their spans here."""
        index = np.flatnonzero(rows)
        values = np.full(len(index), np.nan)
        seen: dict[str, tuple[float, int, int, int]] = {}
        for k, text in zip(range(len(index)), strings.filter(rows).to_pylist(), strict=True):
            if text is None:
                continue
            if text not in seen:
                r = read_text(text, opts)
                if r.value is None or r.start is None or r.end is None or r.rule is None:
                    seen[text] = (np.nan, -1, -1, -1)
                else:
                    seen[text] = (r.value, r.start, r.end, RULE_CODES[r.rule])
            i = index[k]
            values[k], self.start[i], self.end[i], self.rule[i] = seen[text]
        return values

    def subset(self, rows: np.ndarray) -> Located:
        return Located(self.start[rows], self.end[rows], self.rule[rows])


def code_points(strings: pa.Array) -> np.ndarray:
    """Each string's length in code points (0 for null): its bytes when all are ASCII."""
    if top_byte(strings) < 0x80:
        return byte_lengths(strings).astype(np.int64)
    return np.asarray(pc.utf8_length(strings).fill_null(0), np.int64)


def char_offsets(
    strings: pa.Array, rows: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Byte offsets ``start`` and ``end`` into strings ``rows`` of ``strings`` as code-point
    offsets: the same when all is ASCII; else the bytes before, less the continuation bytes
    (0b10xxxxxx) among them, counted once on the bytes of those rows."""
    if not len(rows) or top_byte(strings) < 0x80:
        return start, end
    starts, _, data = byte_spans(strings)
    begin = starts[rows].astype(np.int64)
    first, last = int(begin.min()), int((begin + np.maximum(start, end)).max())
    continuation = np.zeros(last - first + 1, np.int64)
    np.cumsum((data[first:last] & 0xC0) == 0x80, out=continuation[1:])
    before = continuation[begin - first]
    return (
        start - (continuation[begin + start - first] - before),
        end - (continuation[begin + end - first] - before),
    )


_PERCENT_STEPS = 8  # the bytes looked at after a token for its percent sign, at most


def _percent_ends(strings: pa.Array, rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Where the percent sign read after byte ``at`` of each row ends: the first one after it
    (only blanks and ``\\`` stand between a token and its percent), looked for within
    `_PERCENT_STEPS` bytes; -1 where it stands further (the caller reads those rows again)."""
    starts, ends, data = byte_spans(strings)
    begin = starts[rows].astype(np.int64)
    out = np.full(len(rows), -1, np.int64)
    last = len(data) - 1
    for step in range(_PERCENT_STEPS):
        where = begin + at + step
        sign = (out < 0) & (where < ends[rows]) & (data[np.minimum(where, last)] == _PERCENT)
        out[sign] = at[sign] + step + 1
    return out


_PERCENT = ord(PERCENT_SIGN)


def lead(
    located: Located,
    strings: pa.Array,
    found: np.ndarray,
    cut: np.ndarray,
    tok: pa.Array,
    sign: np.ndarray,
    percent: np.ndarray | None,
    opts: Options,
) -> None:
    """The spans of the rows ``found`` of `tiers.parse_lead`: its token starts ``cut`` bytes
    into the row (its sign ``sign`` bytes before) and holds ``tok``; a percent read after it
    (``percent``) ends the span."""
    rule = FIRST if opts.pick == "first" else LAST
    rows = np.flatnonzero(found)
    start = (cut - sign)[rows]
    end = (cut + byte_lengths(tok))[rows]
    far = np.zeros(0, np.int64)
    if percent is not None and (pct := percent[rows]).any():
        end[pct] = _percent_ends(strings, rows[pct], end[pct])
        far = np.flatnonzero(pct)[end[pct] < 0]  # blanks beyond the look: read again
    located.put(rows, *char_offsets(strings, rows, start, end), rule)
    if len(far):
        located.read_rows(strings, np.isin(np.arange(len(strings)), rows[far]), opts)


def after_head(
    located: Located,
    strings: pa.Array,
    found: np.ndarray,
    head: pa.Array,
    tok: pa.Array,
    pct: pa.Array | None,
) -> None:
    """The spans of the rows ``found`` whose token follows ``head`` (the text before it) and
    holds ``tok``, then ``pct`` (blanks and the percent read, or null)."""
    rows = np.flatnonzero(found)
    before = byte_lengths(head).astype(np.int64)
    start = before - sign_widths(byte_spans(head))
    end = before + byte_lengths(tok)
    if pct is not None:
        end = end + byte_lengths(pct.fill_null(""))
    located.put(rows, *char_offsets(strings, rows, start, end), LAST)


def at_first_digit(
    located: Located,
    strings: pa.Array,
    found: np.ndarray,
    pre: pa.Array,
    tok: pa.Array,
    pct: pa.Array | None,
    from_first_digit: Callable[[pa.Array], tuple[pa.Array, np.ndarray]],
) -> None:
    """The spans of the rows ``found`` whose first token holds ``tok``: it starts at the first
    digit, or at the point right before it (no digit stands before the first token); ``pre``:
    the sign before it (and a character before that), or null."""
    rows = np.flatnonzero(found)
    _, cut = from_first_digit(strings.filter(found))
    start = cut - (~np.isin(first_bytes(tok), DIGIT_BYTES)).astype(np.int64)
    end = start + byte_lengths(tok)
    start = start - sign_widths(byte_spans(pre.fill_null("")))
    if pct is not None:
        end = end + byte_lengths(pct.fill_null(""))
    located.put(rows, *char_offsets(strings, rows, start, end), FIRST)
