"""Scoring quantities (SPEC §2.2): each output converted to its expected value's unit.

The column path and the one-value path are the same code (one value is a column of one): pint
converts arrays and scalars through different float operations (20 °C in °F is 68.0 in an
array, 67.99999999999993 alone). Each distinct pair of units in a column is looked at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.options import Options
from numdiff_component.reading.grammar import CURRENCY
from numdiff_component.reading.quantities import Units, parse_quantities, parse_quantity
from numdiff_component.reading.units import parsed, registry
from numdiff_component.scoring import (
    LABELS,
    UNIT_MISMATCH,
    UNIT_MISSING,
    _score_columns,
    same_length,
)

UNIT_SCHEMA = pa.schema(
    [
        ("output_unit", pa.string()),
        ("expected_unit", pa.string()),
        ("output_converted", pa.float64()),
    ]
)
"""The result columns added with ``units`` on, after the others (SPEC §2.2)."""
UNIT_COLUMNS = tuple(UNIT_SCHEMA.names)
_COMPARED, _MISMATCH, _MISSING = -1, LABELS.index(UNIT_MISMATCH), LABELS.index(UNIT_MISSING)


def _pair(u: str | None, v: str | None, strict: bool) -> int:
    """How a row with units ``u`` and ``v`` is scored: compared, or its label's code."""
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


def converted(
    a: np.ndarray, b: np.ndarray, units_a: Units, units_b: Units, strict: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The output numbers in the expected side's unit, and each row's status: -1 compared, or
    the code of ``unit_mismatch``/``unit_missing`` in `LABELS`."""
    (ca, names_a), (cb, names_b) = units_a, units_b
    out, status = a.copy(), np.full(len(a), _COMPARED, np.int8)
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


def _score(
    a: np.ndarray, b: np.ndarray, units_a: Units, units_b: Units, options: Options
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """`_score_columns` of the converted output, and the rows whose units do not compare."""
    conv, status = converted(a, b, units_a, units_b, options.units == "strict")
    columns, codes = _score_columns(conv, b, options)
    off = status != _COMPARED
    columns["score"][off] = 0.0
    columns["passed"][off] = False
    columns["abs_error"][off] = np.nan
    codes[off] = status[off]
    columns["output_value"] = a
    return columns, codes, conv


def _names(units: Units) -> pa.Array:
    codes, names = units
    return pc.take(pa.array([*names, None], pa.string()), pa.array(codes % (len(names) + 1)))


def score_quantities(output: Any, expected: Any, options: Options) -> dict[str, Any]:
    """`score_columns` with ``units`` on: its columns, then `UNIT_COLUMNS`."""
    a, units_a = parse_quantities(output, options)
    b, units_b = parse_quantities(expected, options)
    same_length(a, b)
    columns, codes, conv = _score(a, b, units_a, units_b, options)
    labels = pc.take(pa.array(LABELS), pa.array(codes)).to_pandas().array
    units = {
        "output_unit": _names(units_a).to_pandas().array,
        "expected_unit": _names(units_b).to_pandas().array,
        "output_converted": conv,
    }
    return {**columns, "label": labels, **units}


def score_one(output: Any, expected: Any, options: Options) -> dict[str, Any]:
    """One row scored as a column of one (the same float operations as a column)."""
    (a, u), (b, v) = parse_quantity(output, options), parse_quantity(expected, options)
    units_a = (np.array([0 if u else -1], np.int32), [u] if u else [])
    units_b = (np.array([0 if v else -1], np.int32), [v] if v else [])
    numbers = np.array([[np.nan if x is None else x] for x in (a, b)])
    columns, codes, conv = _score(numbers[0], numbers[1], units_a, units_b, options)
    row = {name: column[0].item() for name, column in columns.items()}
    converted_value = conv[0].item()
    return {
        **row,
        "label": LABELS[int(codes[0])],
        "output_value": a,
        "expected_value": b,
        "output_unit": u,
        "expected_unit": v,
        "output_converted": None if np.isnan(converted_value) else converted_value,
    }
