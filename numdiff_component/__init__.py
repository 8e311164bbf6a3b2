"""Numeric diff evaluator: how close a numeric output is to the expected number, for MLflow.

The core (`parse_number`, `score`, `score_frame`, `aggregate`) knows nothing of MLflow; the
MLflow adapters are imported on first use so that ``import numdiff_component`` stays fast.

The public API is `__all__` here, and `numdiff_component.spark.__all__`; every other module is
internal and may change (docs/architecture.md says what each owns).
"""

from __future__ import annotations

from numdiff_component.aggregate import AGGREGATE_NAMES, Totals, aggregate
from numdiff_component.errors import InputError, NumdiffError, OptionError, TrackingError
from numdiff_component.lazy import lazy_names
from numdiff_component.options import Options
from numdiff_component.reading import (
    RULES,
    ColumnReading,
    Reading,
    parse_column,
    parse_number,
    read_column,
    read_number,
)
from numdiff_component.scoring import RESULT_COLUMNS, ScoreResult, score, score_frame

__version__ = "0.1.0"

_LAZY = {
    "numeric_diff_metric": "numdiff_component.adapters.evaluate",
    "make_numeric_diff_metric": "numdiff_component.adapters.evaluate",
    "numeric_diff_scorer": "numdiff_component.adapters.genai",
    "make_numeric_diff_scorer": "numdiff_component.adapters.genai",
    "log_numeric_diff_aggregates": "numdiff_component.adapters.genai",
    "NumericDiffModel": "numdiff_component.adapters.pyfunc",
    "log_numeric_diff_model": "numdiff_component.adapters.pyfunc",
}

__getattr__ = lazy_names(__name__, _LAZY)

__all__ = [
    "AGGREGATE_NAMES",
    "RESULT_COLUMNS",
    "RULES",
    "ColumnReading",
    "InputError",
    "NumdiffError",
    "OptionError",
    "Options",
    "Reading",
    "ScoreResult",
    "Totals",
    "TrackingError",
    "aggregate",
    "parse_column",
    "parse_number",
    "read_column",
    "read_number",
    "score",
    "score_frame",
    *_LAZY,
]
