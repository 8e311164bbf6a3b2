"""Quantities made comparable (SPEC §2.2): each output converted to its expected value's unit.

`compared` converts the outputs of two columns of quantities; `scoring` scores them. One
value is read as a column of one: pint converts arrays and scalars through different float
operations (20 °C in °F is 68.0 in an array, 67.99999999999993 alone). Each distinct pair of
units in a column is looked at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.grammar import CURRENCY
from numdiff_component.reading.quantities import Units, parse_quantity
from numdiff_component.reading.units import parsed, registry

UNIT_MISMATCH, UNIT_MISSING = "unit_mismatch", "unit_missing"
UNIT_LABELS = (UNIT_MISMATCH, UNIT_MISSING)
"""The labels of rows whose units do not compare; a row's status is 1 + the index here."""
UNIT_SCHEMA = pa.schema(
    [
        ("output_unit", pa.string()),
        ("expected_unit", pa.string()),
        ("output_converted", pa.float64()),
    ]
)
"""The result columns added after the others with ``units`` on (SPEC §2.2)."""
_COMPARED, _MISMATCH, _MISSING = 0, 1, 2


@dataclass(frozen=True)
class Compared:
    """Two columns of quantities: numbers as written (NaN: none), the output's number in the
    expected side's unit, each row's status (0 compared, else 1 + its index in `UNIT_LABELS`)
    and each side's unit names (null: none)."""

    output: np.ndarray
    expected: np.ndarray
    converted: np.ndarray
    status: np.ndarray
    output_unit: pa.Array
    expected_unit: pa.Array


def _pair(u: str | None, v: str | None, strict: bool) -> int:
    """How a row with units ``u`` and ``v`` compares: its status."""
    if u is None or v is None:
        return _MISSING if strict and (u, v) != (None, None) else _COMPARED
    if u == v:
        return _COMPARED
    if u in CURRENCY and v in CURRENCY:  # never converted: equal numbers, or strict's mismatch
        return _MISMATCH if strict else _COMPARED
    if u in CURRENCY or v in CURRENCY:  # a currency against a unit of pint
        return _MISMATCH
    return _COMPARED if parsed(u).dimensionality == parsed(v).dimensionality else _MISMATCH


def _convert(a: np.ndarray, u: str, v: str) -> np.ndarray | None:
    """``a`` in unit ``u`` converted to ``v`` as pint does; ``None`` where pint refuses."""
    try:
        out = registry().Quantity(a, parsed(u)).to(parsed(v)).magnitude
    except Exception:  # pint's errors for conversions it will not do
        return None
    return np.asarray(out, dtype=float)


def _converted(
    a: np.ndarray, b: np.ndarray, units_a: Units, units_b: Units, strict: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The output numbers in the expected side's unit, and each row's status."""
    (ca, names_a), (cb, names_b) = units_a, units_b
    out, status = a.copy(), np.zeros(len(a), np.int8)
    both = ~np.isnan(a) & ~np.isnan(b)
    keys = (ca.astype(np.int64) + 1) * (len(names_b) + 1) + cb + 1  # 0: no unit
    for key in np.unique(keys[both]):
        rows = both & (keys == key)
        i, j = divmod(int(key), len(names_b) + 1)
        u, v = names_a[i - 1] if i else None, names_b[j - 1] if j else None
        how = _pair(u, v, strict)
        if how == _COMPARED and u and v and u != v and u not in CURRENCY:
            values = _convert(a[rows], u, v)
            if values is None:
                how = _MISMATCH
            else:
                out[rows] = values
        status[rows] = how
    out[status == _MISMATCH] = np.nan
    return out, status


def _names(units: Units) -> pa.Array:
    codes, names = units
    return pc.take(pa.array([*names, None], pa.string()), pa.array(codes % (len(names) + 1)))


def compared(
    a: np.ndarray, b: np.ndarray, units_a: Units, units_b: Units, options: Options
) -> Compared:
    """Two columns of quantities (`parse_quantities`, equal lengths), the outputs converted."""
    converted, status = _converted(a, b, units_a, units_b, options.units == "strict")
    return Compared(a, b, converted, status, _names(units_a), _names(units_b))


def compared_one(output: Any, expected: Any, options: Options) -> Compared:
    """One pair (`parse_quantity`), as a column of one."""
    (a, u), (b, v) = parse_quantity(output, options), parse_quantity(expected, options)
    units_a = (np.array([0 if u else -1], np.int32), [u] if u else [])
    units_b = (np.array([0 if v else -1], np.int32), [v] if v else [])
    numbers = np.array([[np.nan if x is None else x] for x in (a, b)])
    return compared(numbers[0], numbers[1], units_a, units_b, options)
