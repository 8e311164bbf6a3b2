"""The numeric diff evaluator inside MLflow evaluation: a metric and a GenAI scorer.

- `numeric_diff_metric` / `make_numeric_diff_metric` give an ``EvaluationMetric`` for
  ``mlflow.models.evaluate(..., extra_metrics=[...])`` (and the deprecated ``mlflow.evaluate``).
  Whole columns are scored at once by the vectorised core; per-row scores and justifications go
  to the evaluation table, and every SPEC §3 aggregate is logged as ``numeric_diff/<name>``.
- `numeric_diff_scorer` / `make_numeric_diff_scorer` give a scorer for ``mlflow.genai.evaluate``,
  one row at a time, with two feedbacks per row: ``numeric_diff/score`` (the score) and
  ``numeric_diff/passed`` (a boolean), logged as ``numeric_diff/score/mean`` (the mean score)
  and ``numeric_diff/passed/mean`` (the pass rate). `log_numeric_diff_aggregates` then logs
  every SPEC §3 aggregate of the feedbacks as ``numeric_diff/<name>``, as the metric does.

Both adapters read the same options (SPEC §2), validated once into an `Options`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd
from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback
from mlflow.genai.scorers import Scorer
from mlflow.metrics.base import MetricValue
from mlflow.models import EvaluationMetric, make_metric
from pydantic import PrivateAttr, create_model

from numdiff_component.aggregate import aggregate
from numdiff_component.errors import InputError
from numdiff_component.options import OPTION_NAMES, SCHEMA, Options, OptionSpec
from numdiff_component.reading.spans import around
from numdiff_component.scoring import UNPARSEABLE, ScoreResult, score, score_columns
from numdiff_component.unit_scoring import UNIT_LABELS

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


def _justification(
    a: float,
    b: float,
    d: float,
    value: float,
    label: str,
    u: Any = None,
    v: Any = None,
    where: tuple[str, str] = ("", ""),
) -> str:
    if label == UNPARSEABLE:
        sides = [name for name, x in (("output", a), ("expected value", b)) if math.isnan(x)]
        return f"no number in the {' or the '.join(sides)}: score 0 (unparseable)"
    said = f"output {_number(a)}{_unit(u)}{where[0]}, expected {_number(b)}{_unit(v)}{where[1]}"
    if label in UNIT_LABELS:  # units on (SPEC §2.2): not compared
        return f"{said}: score 0 ({label})"
    return f"{said}, difference {d:.6g}: score {value:.6g} ({label})"


def metric_value(predictions: Any, targets: Any, options: Options) -> MetricValue:
    """Score two columns with the vectorised core: per-row scores, justifications, aggregates.

    ``aggregate_results`` holds the SPEC §3 aggregates that are numbers (a NaN one, such as
    ``mae`` when no row has two numbers, is left out). No rows is an `InputError`.
    """
    _check_not_the_same_column(predictions, targets)
    results = score_columns(_column(predictions), _column(targets), options)
    aggregates = aggregate(results)
    columns: tuple[str, ...] = ("output_value", "expected_value", "abs_error", "score", "label")
    columns += ("output_unit", "expected_unit") if "output_unit" in results else ()
    rows = zip(*(results[c] for c in columns), strict=True)
    outputs, expected = (
        _quotes(predictions, results, "output"),
        _quotes(targets, results, "expected"),
    )
    justifications = [
        _justification(*row[:5], *(row[5:7] or (None, None)), where=(a, b))  # type: ignore[misc]
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


def make_numeric_diff_metric(**options: Any) -> EvaluationMetric:
    """An MLflow ``EvaluationMetric`` named ``numeric_diff`` scoring predictions against targets.

    ``options`` are the scoring options of SPEC §2 (`Options`), validated here; a bad one
    raises `OptionError`. At evaluation time they can be overridden per call with
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

    def numeric_diff(
        predictions: pd.Series,
        targets: pd.Series,
        numeric_diff_options: Mapping[str, Any] | None = None,
    ) -> MetricValue:
        opts = Options.of(base, **numeric_diff_options) if numeric_diff_options else base
        return metric_value(predictions, targets, opts)

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


# --- the mlflow.genai scorer ---------------------------------------------------------------------


class _NumericDiffScorer(Scorer):
    """A code scorer for ``mlflow.genai.evaluate``: the numeric diff of ``outputs`` against
    ``expectations[expected_key]``, as two feedbacks (score and passed).

    Its option fields are made from the option schema (`NumericDiffScorer`). A module-level
    pydantic model, so it pickles with the standard library and MLflow can take a digest of its
    fields. ``Scorer.register`` is not supported: MLflow only registers ``@scorer`` functions
    and its own built-in scorers.
    """

    name: str = METRIC_NAME
    expected_key: str = "expected"

    _options: Options = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        given = {name: getattr(self, name) for name in OPTION_NAMES}
        self._options = Options.of(None, **{k: v for k, v in given.items() if v is not None})

    @property
    def options(self) -> Options:
        return self._options

    # Only the parameters it reads: Scorer.run passes a scorer just those named in its signature.
    def __call__(  # type: ignore[override]
        self, *, outputs: Any = None, expectations: Mapping[str, Any] | None = None
    ) -> list[Feedback]:
        if not isinstance(expectations, Mapping) or self.expected_key not in expectations:
            present = ", ".join(repr(k) for k in expectations or {}) or "none"
            raise InputError(
                f"expectations have no {self.expected_key!r} key (keys: {present}); "
                "choose the key with make_numeric_diff_scorer(expected_key=...)"
            )
        result = score(outputs, expectations[self.expected_key], self._options)
        source = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id=self.name)
        metadata = {"label": result.label, **_numbers(result, self._options.units != "none")}
        return [
            Feedback(
                name=f"{self.name}/score",
                value=result.score,
                rationale=_rationale(result, outputs, expectations[self.expected_key]),
                source=source,
                metadata=metadata,
            ),
            Feedback(
                name=f"{self.name}/passed",
                value=result.passed,
                rationale=f"score {result.score:.6g} {'>=' if result.passed else '<'} "
                f"threshold {self._options.threshold:g}",
                source=source,
                metadata=metadata,
            ),
        ]


_NUMBERS = ("output_value", "expected_value", "abs_error")
"""A row's numbers in its feedbacks' metadata (text that reads back as the same float), for
`log_numeric_diff_aggregates`; ``output_unit`` too with units on."""


def _numbers(result: ScoreResult, units: bool) -> dict[str, str]:
    numbers = {name: getattr(result, name) for name in _NUMBERS}
    found = {k: repr(float(v)) for k, v in numbers.items() if v is not None and not math.isnan(v)}
    return {**found, "output_unit": result.output_unit or ""} if units else found


def log_numeric_diff_aggregates(result: Any, name: str = METRIC_NAME) -> dict[str, float]:
    """Log every SPEC §3 aggregate of a numeric diff scorer's feedbacks on the run of
    ``result`` (what ``mlflow.genai.evaluate`` returned) as ``<name>/<aggregate>``, the keys
    and values the CLI and the evaluate metric log for the same rows; also added to
    ``result.metrics``. ``name`` is the scorer's. Rows whose scorer failed are left out, as
    MLflow leaves them out of its means. Returns the metrics logged.

    The scorer cannot log them itself: MLflow aggregates each feedback name apart (a scorer's
    ``aggregations`` get the list of one feedback's values and are logged as
    ``<feedback>/<aggregation>``), while the pass rate's interval, ``mae`` or the no-answer
    rate need several of a row's numbers together. They are in each score feedback's metadata.
    """
    import mlflow

    frame = getattr(result, "result_df", None)
    if frame is None or "assessments" not in frame:
        raise InputError("the evaluation result holds no rows (result_df is None)")
    rows = [row for row in (_row(a, name, result.run_id) for a in frame["assessments"]) if row]
    if not rows:
        raise InputError(f"the evaluation result holds no {name + '/score'!r} feedback")
    columns = {key: [row[key] for row in rows] for key in ("score", "passed", "label", *_NUMBERS)}
    if any("output_unit" in row for row in rows):  # units on (SPEC §2.2): units counted
        columns["output_unit"] = [row.get("output_unit") or None for row in rows]
    metrics = {
        f"{name}/{key}": float(value)
        for key, value in aggregate(columns).items()
        if not math.isnan(value)
    }
    mlflow.log_metrics(metrics, run_id=result.run_id)
    result.metrics.update(metrics)
    return metrics


def _row(assessments: Any, name: str, run_id: str) -> dict[str, Any] | None:
    """A row's results as its two feedbacks give them, or None when it has none."""
    from mlflow.tracing.constant import AssessmentMetadataKey

    found = {}
    for item in assessments if isinstance(assessments, list) else []:
        metadata = item.get("metadata") or {}
        if metadata.get(AssessmentMetadataKey.SOURCE_RUN_ID, run_id) == run_id:
            found[item.get("assessment_name")] = item
    scored, passed = found.get(f"{name}/score"), found.get(f"{name}/passed")
    if scored is None or passed is None:
        return None
    value, ok = (item.get("feedback", {}).get("value") for item in (scored, passed))
    if value is None or ok is None:  # the scorer failed on this row
        return None
    metadata = scored.get("metadata") or {}
    row = {"score": float(value), "passed": bool(ok), "label": metadata.get("label")}
    row |= {key: float(metadata.get(key) or math.nan) for key in _NUMBERS}
    return row | ({"output_unit": metadata["output_unit"]} if "output_unit" in metadata else {})


def _field_type(spec: OptionSpec) -> Any:
    """A scorer field's type: the option's, or any for a list option (a list, a dict, a text:
    `Options` validates it)."""
    if issubclass(spec.kind, tuple):
        return Any
    return (spec.kind | str if spec.choices else spec.kind) | None


# One field per option; None is "not given": the preset's value, else the option's default.
NumericDiffScorer = create_model(
    "NumericDiffScorer",
    __base__=_NumericDiffScorer,
    __module__=__name__,
    __doc__=_NumericDiffScorer.__doc__,
    **{spec.name: (_field_type(spec), None) for spec in SCHEMA},  # type: ignore[call-overload]
)


def _rationale(result: ScoreResult, output: Any, expected: Any) -> str:
    nan = float("nan")
    a = nan if result.output_value is None else result.output_value
    b = nan if result.expected_value is None else result.expected_value
    units = (result.output_unit, result.expected_unit)
    readings = ((output, result.output_reading), (expected, result.expected_reading))
    where = tuple(quoted(str(value), r.start, r.end) for value, r in readings)
    return _justification(a, b, result.abs_error, result.score, result.label, *units, where)  # type: ignore[arg-type]


def make_numeric_diff_scorer(
    *, expected_key: str = "expected", **options: Any
) -> _NumericDiffScorer:
    """A scorer for ``mlflow.genai.evaluate`` scoring ``outputs`` against ``expectations``.

    Each row gets two feedbacks: ``numeric_diff/score`` (the score, 0 to 1, with a rationale
    giving the two numbers read, where each was read in its text (SPEC §1.4), and their
    difference) and ``numeric_diff/passed``
    (``score >= threshold``). The run's metrics are ``numeric_diff/score/mean`` (the mean score)
    and ``numeric_diff/passed/mean`` (the pass rate). A row with no number scores 0 with label
    ``unparseable``; a row whose ``expectations`` lack ``expected_key`` is an error for that row.
    ``options`` are validated once; a bad one raises `OptionError`.

    >>> scorer = make_numeric_diff_scorer(threshold=0.9, expected_key="answer")
    >>> score_fb, passed_fb = scorer(outputs="It is 41.", expectations={"answer": 42})
    >>> round(score_fb.value, 4), passed_fb.value
    (0.9762, True)
    >>> score_fb.rationale
    'output 41 read from "It is [41.]", expected 42, difference 1: score 0.97619 (pass)'
    """
    opts = Options.of(None, **options)  # validated here, once
    scorer: _NumericDiffScorer = NumericDiffScorer(expected_key=expected_key, **opts.given())
    return scorer


numeric_diff_scorer = make_numeric_diff_scorer()
"""The scorer with the default options, reading ``expectations["expected"]``."""


__all__ = [
    "METRIC_NAME",
    "NumericDiffScorer",
    "log_numeric_diff_aggregates",
    "make_numeric_diff_metric",
    "make_numeric_diff_scorer",
    "metric_value",
    "numeric_diff_metric",
    "numeric_diff_scorer",
]
