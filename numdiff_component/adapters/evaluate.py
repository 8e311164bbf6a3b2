"""The numeric diff evaluator inside MLflow evaluation: the metric.

`numeric_diff_metric` / `make_numeric_diff_metric` give an ``EvaluationMetric`` for
``mlflow.models.evaluate(..., extra_metrics=[...])`` (and the deprecated ``mlflow.evaluate``).
Whole columns are scored at once by the vectorised core; per-row scores and justifications go
to the evaluation table, and every SPEC §3 aggregate is logged as ``numeric_diff/<name>``. The
scorer for ``mlflow.genai.evaluate`` is `numdiff_component.adapters.genai`; both read the same
options (SPEC §2), validated once into an `Options`.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from mlflow.metrics.base import MetricValue
from mlflow.models import EvaluationMetric, make_metric

from numdiff_component.aggregate import aggregate
from numdiff_component.errors import InputError, OptionError
from numdiff_component.options import Options, sample_ks
from numdiff_component.reading.spans import around
from numdiff_component.samples import rows_item_aggregates
from numdiff_component.scoring import UNPARSEABLE, score_columns
from numdiff_component.slices.groups import GroupTotals, by_columns, group_metrics
from numdiff_component.slices.thresholds import row_passes
from numdiff_component.unit_scoring import UNIT_LABELS

_FIXED = ("predictions", "targets", "numeric_diff_options", "metrics")
"""Parameter names MLflow reads otherwise: no column the metric takes may have them."""

METRIC_NAME = "numeric_diff"
"""The name of the metric and of the scorer (their options in ``evaluator_config``: under
``numeric_diff_options``, the metric's parameter)."""
# --- the mlflow.models.evaluate metric -----------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:.12g}"


def _unit(unit: Any) -> str:
    return f" {unit}" if isinstance(unit, str) else ""  # None or NA: no unit


def quoted(text: str, start: Any, end: Any) -> str:
    """Where a number was read (SPEC §1.4), for a justification: `` read from "…is [42]."``;
    empty where nothing was read or the whole text is the number."""
    if start is None or start is pd.NA or (start == 0 and end == len(text)):
        return ""
    before, token, after = around(text, int(start), int(end))
    return " read from " + json.dumps(f"{before}[{token}]{after}", ensure_ascii=False)


def justification(
    a: float,
    b: float,
    d: float,
    value: float,
    label: str,
    u: Any = None,
    v: Any = None,
    where: tuple[str, str] = ("", ""),
) -> str:
    """One row in words (the metric's justification, the scorer's rationale): the numbers
    (``a``, ``b``, units ``u``, ``v``; ``where`` they were read), difference, score, label."""
    if label == UNPARSEABLE:
        sides = [name for name, x in (("output", a), ("expected value", b)) if math.isnan(x)]
        return f"no number in the {' or the '.join(sides)}: score 0 (unparseable)"
    said = f"output {_number(a)}{_unit(u)}{where[0]}, expected {_number(b)}{_unit(v)}{where[1]}"
    if label in UNIT_LABELS:  # units on (SPEC §2.2): not compared
        return f"{said}: score 0 ({label})"
    return f"{said}, difference {d:.6g}: score {value:.6g} ({label})"


def metric_value(
    predictions: Any,
    targets: Any,
    options: Options,
    columns: Mapping[str, Any] | None = None,
    by: Sequence[str] = (),
    threshold_col: str | None = None,
    item_col: str | None = None,
    ks: Sequence[int] = (1,),
) -> MetricValue:
    """Score two columns with the vectorised core: per-row scores, justifications, aggregates.

    ``aggregate_results`` holds the SPEC §3 aggregates that are numbers (a NaN one, such as
    ``mae`` when no row has two numbers, is left out). No rows is an `InputError`. With
    ``by`` and ``threshold_col`` (names of ``columns``), each row is held to its own threshold
    and the groups' metrics (SPEC §3.1) are added under ``by/<column>/<value>/<metric>``;
    with ``item_col`` (a name of ``columns``), the item aggregates of SPEC §3.3 for ``ks``.
    """
    _check_not_the_same_column(predictions, targets)
    results = score_columns(_column(predictions), _column(targets), options)
    given = {name: _column(values) for name, values in (columns or {}).items()}
    if threshold_col:
        limits = given[threshold_col]
        results = row_passes(results, limits, threshold_col, options.threshold)
    aggregates = aggregate(results)
    if by:
        groups = GroupTotals(by)
        groups.add({**results, **{name: given[name] for name in by}})
        aggregates |= group_metrics(groups.table())
    if item_col is not None:  # the same scored rows, grouped by item
        aggregates |= rows_item_aggregates(
            {**results, item_col: given[item_col]}, item_col, ks, options
        )
    shown: tuple[str, ...] = ("output_value", "expected_value", "abs_error", "score", "label")
    shown += ("output_unit", "expected_unit") if "output_unit" in results else ()
    rows = zip(*(results[c] for c in shown), strict=True)
    outputs, expected = (
        _quotes(predictions, results, "output"),
        _quotes(targets, results, "expected"),
    )
    justifications = [
        justification(*row[:5], *(row[5:7] or (None, None)), where=(a, b))  # type: ignore[misc]
        for row, a, b in zip(rows, outputs, expected, strict=True)
    ]
    return MetricValue(
        scores=results["score"].tolist(),
        justifications=justifications,
        aggregate_results={k: v for k, v in aggregates.items() if not math.isnan(v)},
    )


def _quotes(values: Any, results: dict[str, Any], side: str) -> list[str]:
    """Each row's `quoted` span of one side."""
    starts, ends = results[f"{side}_start"], results[f"{side}_end"]
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    return [
        "" if start is pd.NA else quoted(str(item), start, end)
        for item, start, end in zip(items, starts, ends, strict=True)
    ]


def _check_not_the_same_column(predictions: Any, targets: Any) -> None:
    # Two columns of one table have two names: the same name is the same column (every row
    # would pass, whatever the model said).
    names = [getattr(values, "name", None) for values in (predictions, targets)]
    if names[0] is not None and names[0] == names[1]:
        raise InputError(
            f"predictions and targets are the same column {names[0]!r}; a column scored "
            "against itself passes every row"
        )


def _column(values: Any) -> Any:
    # Positional, whatever the index: model outputs may come with an index of their own.
    return values.array if isinstance(values, pd.Series) else values


def make_numeric_diff_metric(
    *,
    by: str | Sequence[str] = (),
    threshold_col: str | None = None,
    item_col: str | None = None,
    k: Any = (1,),
    **options: Any,
) -> EvaluationMetric:
    """An MLflow ``EvaluationMetric`` named ``numeric_diff`` scoring predictions against targets.

    ``options`` are the scoring options of SPEC §2 (`Options`), validated here; a bad one
    raises `OptionError`. Columns of the evaluation data, by Python names (MLflow hands a metric
    a column by a parameter's name; map others with ``col_mapping``): ``by`` adds each group's
    metrics (SPEC §3.1); ``threshold_col`` holds each row to its own threshold (§3.2);
    ``item_col`` names each row's item and adds the item aggregates of §3.3 for ``k`` (also
    given per call in ``numeric_diff_options``: ``{"k": "1,5"}``). At
    evaluation time the options can be overridden per call with
    ``evaluator_config={"numeric_diff_options": {"threshold": 0.9}}``: MLflow hands a custom
    metric the ``evaluator_config`` entry named like one of its parameters.

    With ``mlflow.models.evaluate(data=..., predictions=..., targets=..., model_type=None,
    extra_metrics=[metric])`` the run gets ``numeric_diff/mean_score``, ``numeric_diff/pass_rate``,
    ``numeric_diff/mae``, ``numeric_diff/mean_score_stderr``, ``numeric_diff/n_rows`` and
    ``numeric_diff/n_unparseable`` (higher ``mean_score`` is better), and its evaluation table
    gets the columns ``numeric_diff/score`` and ``numeric_diff/justification``.

    >>> metric = make_numeric_diff_metric(threshold=0.9)
    >>> metric.name, metric.greater_is_better
    ('numeric_diff', True)
    >>> value = metric.eval_fn(pd.Series(["x=-3", "n/a"]), pd.Series(["-3", "1"]))
    >>> value.scores, value.aggregate_results["pass_rate"]
    ([1.0, 0.0], 0.5)
    """
    base = Options.of(None, **options)
    ks = sample_ks(k)
    groups = by_columns(by)
    names = tuple(dict.fromkeys([*groups, *(c for c in (threshold_col, item_col) if c)]))
    for name in names:
        if not name.isidentifier() or name in _FIXED:
            raise OptionError(
                f"the metric takes column {name!r} as a parameter of that name: a Python name "
                f"other than {', '.join(_FIXED)}; give one and map the column to it with "
                "evaluator_config={'col_mapping': {'name': 'the column'}}"
            )

    def numeric_diff(
        predictions: pd.Series,
        targets: pd.Series,
        *values: Any,
        numeric_diff_options: Mapping[str, Any] | None = None,
    ) -> MetricValue:
        if len(values) > len(names):  # MLflow passes every parameter by position
            *values, numeric_diff_options = values  # type: ignore[assignment]
        given = dict(numeric_diff_options or {})
        now = sample_ks(given.pop("k")) if "k" in given else ks  # pass@k's k, per call too
        opts = Options.of(base, **given) if given else base
        columns = dict(zip(names, values, strict=True))
        return metric_value(
            predictions, targets, opts, columns, groups, threshold_col, item_col or None, now
        )

    parameters = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for name in ("predictions", "targets", *names)
    ]
    options_parameter = inspect.Parameter(
        "numeric_diff_options", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None
    )
    numeric_diff.__signature__ = inspect.Signature([*parameters, options_parameter])  # type: ignore[attr-defined]

    return make_metric(
        eval_fn=numeric_diff,
        greater_is_better=True,
        name=METRIC_NAME,
        long_name="numeric diff score (one minus the relative difference)",
        metric_details=(
            "1 - |output - expected| / max(|output|, |expected|, floor), clamped to [0, 1]; "
            "0 when either side has no number"
        ),
    )


numeric_diff_metric = make_numeric_diff_metric()
"""The metric with the default options (threshold 0.99, floor 1)."""


__all__ = ["METRIC_NAME", "make_numeric_diff_metric", "metric_value", "numeric_diff_metric"]
