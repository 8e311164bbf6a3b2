"""The exact median of numbers that come batch by batch, in bounded memory (`Median`).

A median does not add up batch by batch as a sum does. `Median` keeps up to `HELD` numbers in
memory and writes the rest to a file, 8 bytes each; it finds the median by radix selection on
the numbers' bits: a float's bits, turned into an unsigned key (`keys`), sort as the float
does, so the median's key can be found 16 bits at a time by counting keys, reading the file
once a step, until the numbers left fit in memory.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

HELD = 1_000_000
"""Numbers kept in memory (8 MB); the rest go to a file."""
DIGIT = 16
"""Bits of the key counted at a step: 2**16 counters."""
_SIGN = np.uint64(1 << 63)
_DIGITS = 1 << DIGIT


def keys(values: np.ndarray) -> np.ndarray:
    """Unsigned keys that sort as the float64 ``values`` do (no NaN): a positive float's bits
    with the sign bit set, a negative float's bits flipped.

    >>> values = np.array([3.5, -2.0, 0.0, np.inf, -np.inf, 1e-310])
    >>> bool((np.argsort(keys(values)) == np.argsort(values)).all())
    True
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits >= _SIGN, ~bits, bits | _SIGN)


def number(key: int) -> float:
    """The float whose key (`keys`) is ``key``."""
    bits = key ^ (1 << 63) if key >> 63 else ~key & ((1 << 64) - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


class Median:
    """The exact median of the numbers added (`add`), as `numpy.median` gives it: NaN when
    there is none or one is NaN.

    >>> median = Median(held=2)
    >>> for batch in ([5.0, 1.0], [4.0], [2.0, 3.0, 9.0]):
    ...     median.add(np.array(batch))
    >>> median.median()
    3.5
    """

    def __init__(self, folder: Path | None = None, held: int = HELD) -> None:
        self.n = 0
        self.has_nan = False
        self._held_max = held
        self._folder = folder  # where the file goes; None: the temporary folder
        self._held: list[np.ndarray] = []
        self._n_held = 0
        self._file: IO[bytes] | None = None  # nameless: gone with this object
        self._top = np.zeros(_DIGITS, dtype=np.int64)  # counts of the keys' top 16 bits

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        nan = np.isnan(values)
        if nan.any():
            self.has_nan = True
            values = values[~nan]
        if not len(values):
            return
        top = (keys(values) >> np.uint64(64 - DIGIT)).astype(np.intp)
        self._top += np.bincount(top, minlength=_DIGITS)
        self.n += len(values)
        self._held.append(values)
        self._n_held += len(values)
        if self._n_held > self._held_max:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:  # open while this object lives: it has no name to reopen
            self._file = tempfile.TemporaryFile(dir=self._folder, prefix=".numdiff-median-")  # noqa: SIM115
        for part in self._held:
            part.tofile(self._file)
        self._held, self._n_held = [], 0

    def _parts(self) -> Iterator[np.ndarray]:
        if self._file is not None:
            self._file.seek(0)
            while len(chunk := np.fromfile(self._file, dtype=np.float64, count=self._held_max)):
                yield chunk
        yield from self._held

    def _select(self, rank: int) -> float:
        """The number of ``rank`` (from 0) in sorted order."""
        counts, prefix, shift = self._top, 0, 64
        while True:
            shift -= DIGIT
            below = np.cumsum(counts)
            digit = int(np.searchsorted(below, rank, side="right"))
            rank -= int(below[digit - 1]) if digit else 0
            prefix = prefix << DIGIT | digit
            if shift == 0:  # every bit of the key is known: it is the number
                return number(prefix)
            found = np.uint64(prefix)
            if counts[digit] <= self._held_max:
                left = [p[keys(p) >> np.uint64(shift) == found] for p in self._parts()]
                return float(np.partition(np.concatenate(left), rank)[rank])
            counts = np.zeros(_DIGITS, dtype=np.int64)
            for part in self._parts():
                key = keys(part)
                key = key[key >> np.uint64(shift) == found]
                digits = (key >> np.uint64(shift - DIGIT)) & np.uint64(_DIGITS - 1)
                counts += np.bincount(digits.astype(np.intp), minlength=_DIGITS)

    def median(self) -> float:
        if self.has_nan or self.n == 0:
            return math.nan
        low = self._select((self.n - 1) // 2)
        if self.n % 2:
            return low
        return float((np.float64(low) + np.float64(self._select(self.n // 2))) / 2)
