"""Scoring rows (SPEC §2): one pair at a time, and whole columns at a time."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component.errors import InputError, missing_column
from numdiff_component.options import Options
from numdiff_component.reading import ColumnReading, Reading, read_number
from numdiff_component.reading.column import as_columns, locate_column
from numdiff_component.reading.located_rows import Located
from numdiff_component.reading.quantities import parse_quantities
from numdiff_component.reading.spans import NOTHING
from numdiff_component.unit_scoring import (
    UNIT_LABELS,
    UNIT_SCHEMA,
    Compared,
    compared,
    compared_one,
)

SIDES = ("output", "expected")
SPAN_SCHEMA = pa.schema(
    [(f"{side}_{end}", pa.int64()) for side in SIDES for end in ("start", "end")]
    + [(f"{side}_rule", pa.string()) for side in SIDES]
)
"""Where each side's number was read and by which rule (SPEC §1.4): null where none."""
SPAN_COLUMNS = tuple(SPAN_SCHEMA.names)
RESULT_SCHEMA = pa.schema(
    [
        ("output_value", pa.float64()),
        ("expected_value", pa.float64()),
        ("abs_error", pa.float64()),
        ("score", pa.float64()),
        ("passed", pa.bool_()),
        ("label", pa.string()),
        *SPAN_SCHEMA,
    ]
)
"""The result columns of every entry point: names, order and types. Inside the core "no number"
is NaN; in files and Spark, where Arrow writes it, it is null."""
RESULT_COLUMNS = tuple(RESULT_SCHEMA.names)


def result_schema(options: Options) -> pa.Schema:
    """The result columns for these options: `RESULT_SCHEMA`, then `UNIT_SCHEMA` with units."""
    if options.units == "none":
        return RESULT_SCHEMA
    return pa.schema([*RESULT_SCHEMA, *UNIT_SCHEMA])


PASS, FAIL, UNPARSEABLE = "pass", "fail", "unparseable"
LABELS = (FAIL, PASS, UNPARSEABLE, *UNIT_LABELS)
"""Every label, in the order of the label codes of `_score_columns` (0, 1, 2; 3, 4 with units)."""


@dataclass(frozen=True)
class ScoreResult:
    """The score of one row. ``output_value``/``expected_value`` are ``None`` with no number."""

    score: float
    passed: bool
    label: str
    output_value: float | None
    expected_value: float | None
    abs_error: float
    # With units on (SPEC §2.2): each side's unit, and the output in the expected side's unit.
    output_unit: str | None = field(default=None, repr=False)
    expected_unit: str | None = field(default=None, repr=False)
    output_converted: float | None = field(default=None, repr=False)
    # Where each side's number was read, and by which rule (SPEC §1.4).
    output_reading: Reading = field(default=NOTHING, repr=False)
    expected_reading: Reading = field(default=NOTHING, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:  # also refuses NaN
            raise ValueError(f"score must be in [0, 1], got {self.score!r}")


_FIELDS = {f.name for f in fields(ScoreResult)}


def _pair_score(a: float, b: float, floor: float) -> float:
    d = abs(a - b)
    if d == 0:
        return 1.0
    raw = 1 - d / max(abs(a), abs(b), floor)
    return min(1.0, max(0.0, raw)) if math.isfinite(raw) else 0.0


def score(
    output: Any, expected: Any, options: Options | None = None, **overrides: Any
) -> ScoreResult:
    """Score one output against the expected value: one minus their relative difference.

    ``score = 1 - |a - b| / max(|a|, |b|, floor)``, clamped to [0, 1]; 1.0 is best. A side
    with no number scores 0.0 with label ``"unparseable"``.

    >>> r = score("0.0302", "0.03024")
    >>> round(r.score, 5), r.passed, r.label
    (0.99996, True, 'pass')
    >>> score("about 12 apples", "twelve").label
    'unparseable'
    """
    opts = Options.of(options, **overrides)
    plain = Options.of(opts, units="none")  # the numbers read, whatever their units
    where_a, where_b = read_number(output, plain), read_number(expected, plain)
    if opts.units != "none":
        columns = _score_compared(compared_one(output, expected, opts), opts)
        row = {name: _plain(column[0]) for name, column in columns.items() if name in _FIELDS}
        row["abs_error"] = float(columns["abs_error"][0])
        return ScoreResult(**row, output_reading=where_a, expected_reading=where_b)
    a, b = where_a.value, where_b.value
    if a is None or b is None:
        return ScoreResult(
            0.0, False, UNPARSEABLE, a, b, math.nan, None, None, None, where_a, where_b
        )
    value = _pair_score(a, b, opts.floor)
    passed = value >= opts.threshold
    label = PASS if passed else FAIL
    return ScoreResult(value, passed, label, a, b, abs(a - b), None, None, None, where_a, where_b)


def pair_scores(a: np.ndarray, b: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """SPEC §2's score of the numbers ``a`` against ``b``, elementwise (numpy broadcasting),
    and their distances ``d``: 0.0 where a side is NaN (no number), as the vote (§3.3) needs.

    >>> [s.tolist() for s in pair_scores(np.array([3.0, np.nan]), np.array([4.0, 1.0]), 1.0)]
    [[0.75, 0.0], [1.0, nan]]
    """
    with np.errstate(all="ignore"):
        d = np.abs(a - b)  # NaN exactly where a side has no number
        scores = np.maximum(np.abs(a), np.abs(b))
        np.maximum(scores, floor, out=scores)
        np.divide(d, scores, out=scores)
        np.subtract(1.0, scores, out=scores)
    # Not finite is NaN (no number; 0/0) or -inf (d overflowed): fmax makes both 0, then clamp.
    np.fmax(scores, 0.0, out=scores)
    np.minimum(scores, 1.0, out=scores)
    scores[d == 0] = 1.0  # equal numbers score 1, also 0 against 0 with floor 0 (0/0 above)
    return scores, d


def _score_columns(
    a: np.ndarray, b: np.ndarray, options: Options
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The numeric result columns, and the label of each row as a code into `LABELS`.

    ``a`` and ``b`` are `parse_column`'s: each value finite, or NaN for no number.
    """
    scores, d = pair_scores(a, b, options.floor)
    parsed = ~np.isnan(d)
    passed = parsed & (scores >= options.threshold)
    codes = passed.astype(np.int8)
    codes[~parsed] = 2
    numbers = {"output_value": a, "expected_value": b, "abs_error": d, "score": scores}
    return {**numbers, "passed": passed}, codes


def passes(scores: Any, labels: Any, thresholds: Any) -> np.ndarray:
    """Which rows pass against ``thresholds`` (one, or one per row: SPEC §3.2): those compared,
    labelled `PASS` or `FAIL`, whose score is at least their threshold (§2)."""
    compared = np.isin(np.asarray(labels, dtype=object), [PASS, FAIL])
    return compared & (np.asarray(scores, dtype=float) >= thresholds)


def _plain(value: Any) -> Any:
    """A result column's value as `ScoreResult` holds it: ``None`` for no number or unit."""
    if value is None or value is pd.NA:
        return None
    value = value.item() if isinstance(value, np.generic) else value
    return None if isinstance(value, float) and math.isnan(value) else value


def _score_compared(q: Compared, options: Options) -> dict[str, Any]:
    """The result columns of quantities (SPEC §2.2): §2 on the converted outputs, then the rows
    whose units do not compare score 0 with their label."""
    columns, codes = _score_columns(q.converted, q.expected, options)
    off = q.status > 0
    columns["score"][off] = 0.0
    columns["passed"][off] = False
    columns["abs_error"][off] = np.nan
    codes[off] = LABELS.index(UNIT_LABELS[0]) - 1 + q.status[off]
    labels = pc.take(pa.array(LABELS), pa.array(codes)).to_pandas().array
    units = {
        "output_unit": q.output_unit.to_pandas().array,
        "expected_unit": q.expected_unit.to_pandas().array,
        "output_converted": q.converted,
    }
    return {**columns, "output_value": q.output, "label": labels, **units}


def same_length(a: np.ndarray, b: np.ndarray) -> None:
    """`InputError` unless the two columns pair up row by row."""
    if len(a) != len(b):
        raise InputError(
            f"{len(a)} outputs but {len(b)} expected values; they must pair up row by row"
        )


def score_columns(output: Any, expected: Any, options: Options) -> dict[str, Any]:
    """Read two columns (`parse_column`) and score them row by row: the result columns.

    The one place where a column of outputs and a column of expected values become scores:
    `score_frame`, the Spark engine and the MLflow metric all call it. ``output`` and
    ``expected`` are anything `parse_column` reads (a pandas Series, an Arrow array), of equal
    length. The numbers are float64 arrays (NaN: no number); ``label`` is a pandas array of
    strings built by Arrow (no Python object per row).

    >>> r = score_columns(pd.Series(["3", "n/a"]), pd.Series(["4", "1"]), Options())
    >>> r["score"].tolist(), list(r["label"])
    ([0.75, 0.0], ['fail', 'unparseable'])
    """
    where_a, where_b = Located.empty(0), Located.empty(0)
    if options.units != "none":
        a, units_a = parse_quantities(output, options, where_a := Located.empty(len(output)))
        b, units_b = parse_quantities(expected, options, where_b := Located.empty(len(expected)))
        same_length(a, b)
        results = _score_compared(compared(a, b, units_a, units_b, options), options)
    else:
        a, where_a = locate_column(output, options)
        b, where_b = locate_column(expected, options)
        same_length(a, b)
        columns, codes = _score_columns(a, b, options)
        labels = pc.take(pa.array(LABELS), pa.array(codes)).to_pandas()
        results = {**columns, "label": labels.array}
    spans = span_columns(as_columns(a, where_a), as_columns(b, where_b))
    results |= spans
    return {name: results[name] for name in result_schema(options).names}


def span_columns(output: ColumnReading, expected: ColumnReading) -> dict[str, Any]:
    """The result columns of SPEC §1.4 from each side's `read_column`."""
    sides = dict(zip(SIDES, (output, expected), strict=True))
    columns = {f"{s}_{end}": getattr(sides[s], end) for s in SIDES for end in ("start", "end")}
    return columns | {f"{s}_rule": sides[s].rule for s in SIDES}


def check_columns(
    columns: Any,
    output_col: str,
    expected_col: str,
    id_col: str | None = None,
    options: Options | None = None,
) -> None:
    """Raise `InputError` when a column is missing or an input column has a result's name, or
    when the output and the expected value are the same column (every row would pass)."""
    if output_col == expected_col:
        raise InputError(
            f"the output and the expected column are both {output_col!r}; a column scored "
            "against itself passes every row (choose with --output-col and --expected-col)"
        )
    names = [str(c) for c in columns]
    duplicated = sorted(c for c, n in Counter(names).items() if n > 1)
    if duplicated:
        raise InputError(
            f"duplicate column name {duplicated[0]!r}; every column needs its own name"
        )
    roles = [("output", output_col, " (choose with --output-col)")]
    roles += [("expected", expected_col, " (choose with --expected-col)")]
    roles += [("id", id_col, "")] if id_col else []
    for role, name, hint in roles:
        if name not in names:
            raise missing_column(role, name, names, hint)
    results = result_schema(options or Options()).names
    clash = [c for c in results if c in names]
    if clash:
        raise InputError(
            f"input column {clash[0]!r} has the name of a result column; rename it "
            f"(result columns: {', '.join(results)})"
        )


def score_frame(
    df: pd.DataFrame,
    output_col: str = "output",
    expected_col: str = "expected",
    options: Options | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """Score every row of ``df``: a new frame, input columns first, then the result columns.

    Columns are read whole (pyarrow compute and numpy), never row by row. The input frame is
    not modified; an input column named like a result column is an error.

    >>> df = pd.DataFrame({"output": ["0.0302", "x=-3", "n/a"], "expected": ["0.03024", -3, 1]})
    >>> score_frame(df)[["score", "label"]].round(5).to_dict("list")
    {'score': [0.99996, 1.0, 0.0], 'label': ['pass', 'pass', 'unparseable']}
    """
    opts = Options.of(options, **overrides)
    check_columns(df.columns, output_col, expected_col, options=opts)
    columns = score_columns(df[output_col], df[expected_col], opts)
    results = pd.DataFrame(columns, index=df.index, copy=False)
    return pd.concat([df, results], axis=1)
