"""The column reader's looks at Arrow's buffers: each string's bytes, read with numpy.

Cheaper than a pass of an Arrow kernel where the question is about one byte at a known place
(the byte ending a string, the bytes after a token) or about one ASCII byte anywhere. UTF-8:
a byte below 0x80 is a whole ASCII character; every other byte of a character is >= 0x80.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Spans = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Where each string starts and ends in a text buffer, and that buffer: strings in order, not
overlapping, with or without gaps between them (the head of each string of an array, say)."""


def byte_spans(strings: pa.Array) -> Spans:
    """Where each string starts and ends in Arrow's text buffer, and that buffer (no copy)."""
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    _, offsets_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, width)[strings.offset :][: len(strings) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer else np.zeros(1, np.uint8)
    return offsets[:-1], offsets[1:], data


def as_mask(condition: pa.Array) -> np.ndarray:
    """An Arrow boolean array as a numpy mask, null as false."""
    return np.asarray(condition.fill_null(False), dtype=bool)


def byte_lengths(strings: pa.Array) -> np.ndarray:
    starts, ends, _ = byte_spans(strings)
    return ends - starts


def top_byte(strings: pa.Array) -> int:
    """The largest byte of the strings (and of any a null hides): below 0x80, all ASCII; from
    0xF0, a character beyond the Basic Multilingual Plane starts there."""
    starts, ends, data = byte_spans(strings)
    return int(data[int(starts[0]) : int(ends[-1])].max(initial=0)) if len(strings) else 0


def astral_chars(strings: pa.Array) -> str:
    """The distinct characters beyond the Basic Multilingual Plane (four UTF-8 bytes, the first
    from 0xF0) that the strings hold."""
    starts, ends, data = byte_spans(strings)
    first = int(starts[0])
    at = first + np.flatnonzero(data[first : int(ends[-1])] >= 0xF0)
    code = (data[at].astype(np.int64) & 0x07) << 18
    for k, shift in ((1, 12), (2, 6), (3, 0)):
        code |= (data[at + k].astype(np.int64) & 0x3F) << shift
    return "".join(map(chr, np.unique(code).tolist()))


def first_bytes(strings: pa.Array) -> np.ndarray:
    """The first byte of each string (0 when empty or null), read from Arrow's buffers."""
    starts, ends, data = byte_spans(strings)
    return np.where(ends > starts, data[np.minimum(starts, len(data) - 1)], 0)


def last_byte(spans: Spans) -> np.ndarray:
    """The last byte of each span (0 when empty), read without a copy."""
    starts, ends, data = spans
    return np.where(ends > starts, data[np.maximum(ends - 1, 0)], 0)


def spans_holding(spans: Spans, byte: int) -> np.ndarray:
    """The spans holding ``byte`` (one ASCII character), on bytes."""
    starts, ends, data = spans
    out = np.zeros(len(starts), bool)
    if not len(starts):
        return out
    first = int(starts[0])
    at = first + np.flatnonzero(data[first : int(ends[-1])] == byte)
    row = np.searchsorted(ends, at, side="right")  # the first span ending after the byte
    out[row[at >= starts[row]]] = True  # not where the byte lies between two spans
    return out


def rows_holding(strings: pa.Array, byte: int) -> np.ndarray:
    """The strings holding ``byte`` (``pc.match_substring`` of one ASCII character, on bytes)."""
    return spans_holding(byte_spans(strings), byte) & np.asarray(strings.is_valid(), dtype=bool)


def span_strings(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """The spans ``starts``..``ends`` of ``data`` (whole UTF-8 characters) as strings, copied."""
    lengths = (ends - starts).astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.arange(offsets[-1]) + np.repeat(starts.astype(np.int64) - offsets[:-1], lengths)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data[index])]
    return pa.Array.from_buffers(pa.large_string(), len(lengths), buffers)


def may_hold(strings: pa.Array, chars: bytes) -> bool:
    """Whether the text buffer holds one of the bytes (a cheap test before a regex pass)."""
    data = strings.buffers()[2]
    if data is None:
        return False
    text = data.to_pybytes()  # one copy, then a memchr per byte: a numpy pass each is slower
    return any(bytes([byte]) in text for byte in set(chars))


def byte_table(chars: bytes) -> np.ndarray:
    """A table of the 256 bytes, true at those of ``chars``: ``table[byte]`` tests a byte array."""
    return np.isin(np.arange(256), [*chars])


def scale_word_at(
    text: pa.Array, where: np.ndarray, one: np.ndarray, pairs: np.ndarray
) -> np.ndarray:
    """Whether a scale word may start at each position ``where`` of Arrow's text buffer, whose
    byte starts one (`_after_token`'s ``where`` of a row with a scale letter there).

    A superset of the scale words matching there (``one`` and ``pairs``: `tiers.scale_bytes`):
    a word of one byte, or the first two bytes of a longer word (the byte after the row's end,
    when the letter ends it, is the next row's: a superset still).
    """
    _, _, data = byte_spans(text)
    first = data[where]
    second = np.where(where + 1 < len(data), data[np.minimum(where + 1, len(data) - 1)], 0)
    return one[first] | pairs[first, second]


def nulls_where(strings: pa.Array, hide: np.ndarray) -> pa.Array:
    """``strings`` with nulls where ``hide`` is true, sharing their offsets and text buffers."""
    keep = np.asarray(strings.is_valid(), dtype=bool) & ~hide
    bits = np.packbits(np.concatenate([np.zeros(strings.offset, bool), keep]), bitorder="little")
    buffers = [pa.py_buffer(bits), *strings.buffers()[1:]]
    return pa.Array.from_buffers(strings.type, len(strings), buffers, offset=strings.offset)


def replace_rows(strings: pa.Array, rows: np.ndarray, new: pa.Array) -> pa.Array:
    return pc.replace_with_mask(strings, pa.array(rows), new)


def match_group(parts: pa.StructArray, name: str) -> pa.Array | None:
    """A group of a match (null where the row did not match), if the pattern has it."""
    return pc.struct_field(parts, name) if parts.type.get_field_index(name) >= 0 else None


def per_cent(values: np.ndarray, pct: pa.Array | None) -> None:
    """Divide the values by 100 where a percent sign was read (group ``pct``), in place."""
    if pct is not None:
        values[char_lengths(pct) > 0] /= 100


def char_lengths(strings: pa.Array) -> np.ndarray:
    return np.asarray(pc.utf8_length(strings).fill_null(0))


def binary_view(strings: pa.Array) -> pa.Array:
    """The same buffers as bytes (no copy): Arrow's byte kernels are several times faster."""
    large = pa.types.is_large_string(strings.type)
    return strings.view(pa.large_binary() if large else pa.binary())


def reversed_strings(strings: pa.Array) -> pa.Array:
    """Each string reversed, character by character.

    An ASCII string reversed byte by byte is the same; only the others go through
    ``utf8_reverse`` (several times slower per byte).
    """
    ascii_rows = as_mask(pc.string_is_ascii(strings))
    out = pc.binary_reverse(binary_view(strings)).view(strings.type)
    if not ascii_rows.all():
        other = ~ascii_rows & as_mask(strings.is_valid())
        out = replace_rows(out, other, pc.utf8_reverse(strings.filter(other)))
    return out


def last_bytes(strings: pa.Array, size: int) -> pa.Array:
    """The last ``size` bytes of each string, or up to 3 more: cut where a character starts.

    A cut inside a character moves back to its first byte (never forward: a slice from the
    start, a start of 0 or more, fails in pyarrow 25 with "Negative buffer resize")."""
    data = binary_view(strings)
    tail = pc.binary_slice(data, -size)
    for more in range(1, 4):  # a UTF-8 character has at most 3 bytes after its first
        inside = CONTINUATION[first_bytes(tail)]
        if not inside.any():
            break
        tail = replace_rows(tail, inside, pc.binary_slice(data.filter(inside), -size - more))
    return tail.view(strings.type)


CONTINUATION = np.arange(256) // 64 == 2  # 0b10xxxxxx: not the first byte of a character
