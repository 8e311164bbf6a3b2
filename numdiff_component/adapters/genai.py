"""The numeric diff evaluator inside ``mlflow.genai.evaluate``: a code scorer.

`numeric_diff_scorer` / `make_numeric_diff_scorer` score one row at a time, with two feedbacks
per row: ``numeric_diff/score`` (the score) and ``numeric_diff/passed`` (a boolean), logged as
``numeric_diff/score/mean`` (the mean score) and ``numeric_diff/passed/mean`` (the pass rate).
`log_numeric_diff_aggregates` then logs every SPEC §3 aggregate of the feedbacks as
``numeric_diff/<name>``, as the metric (`numdiff_component.adapters.evaluate`) does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback
from mlflow.genai.scorers import Scorer
from pydantic import PrivateAttr, create_model

from numdiff_component.adapters.evaluate import METRIC_NAME, justification, quoted
from numdiff_component.aggregate import aggregate
from numdiff_component.errors import InputError
from numdiff_component.options import OPTION_NAMES, SCHEMA, Options, OptionSpec
from numdiff_component.scoring import ScoreResult, score
from numdiff_component.slices.thresholds import ROW_THRESHOLD, row_passes


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
    threshold_key: str | None = None  # SPEC §3.2: each row's threshold in its expectations

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
        threshold = self._options.threshold
        if self.threshold_key is not None:  # SPEC §3.2: empty or missing, the global threshold
            given = [expectations.get(self.threshold_key)]
            where = f"expectations[{self.threshold_key!r}]"
            row = {"score": [result.score], "label": [result.label]}
            held = row_passes(row, given, where, threshold, first_row=None)
            threshold = float(held[ROW_THRESHOLD][0])
            result = replace(result, passed=bool(held["passed"][0]), label=held["label"][0])
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
                f"threshold {threshold:g}",
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
    return justification(a, b, result.abs_error, result.score, result.label, *units, where)  # type: ignore[arg-type]


def make_numeric_diff_scorer(
    *, expected_key: str = "expected", threshold_key: str | None = None, **options: Any
) -> _NumericDiffScorer:
    """A scorer for ``mlflow.genai.evaluate`` scoring ``outputs`` against ``expectations``.

    Each row gets two feedbacks: ``numeric_diff/score`` (the score, 0 to 1, with a rationale
    giving the two numbers read, where each was read in its text (SPEC §1.4), and their
    difference) and ``numeric_diff/passed``
    (``score >= threshold``). The run's metrics are ``numeric_diff/score/mean`` (the mean score)
    and ``numeric_diff/passed/mean`` (the pass rate). A row with no number scores 0 with label
    ``unparseable``; a row whose ``expectations`` lack ``expected_key`` is an error for that row.
    With ``threshold_key``, a row passes against ``expectations[threshold_key]`` when it holds
    one (a number in [0, 1]; missing or empty: the threshold; anything else is an error for that
    row), as ``--threshold-col`` (SPEC §3.2). ``options`` are validated once; a bad one raises
    `OptionError`.

    >>> scorer = make_numeric_diff_scorer(threshold=0.9, expected_key="answer")
    >>> score_fb, passed_fb = scorer(outputs="It is 41.", expectations={"answer": 42})
    >>> round(score_fb.value, 4), passed_fb.value
    (0.9762, True)
    >>> score_fb.rationale
    'output 41 read from "It is [41.]", expected 42, difference 1: score 0.97619 (pass)'
    """
    opts = Options.of(None, **options)  # validated here, once
    scorer: _NumericDiffScorer = NumericDiffScorer(
        expected_key=expected_key, threshold_key=threshold_key, **opts.given()
    )
    return scorer


numeric_diff_scorer = make_numeric_diff_scorer()
"""The scorer with the default options, reading ``expectations["expected"]``."""


__all__ = [
    "NumericDiffScorer",
    "log_numeric_diff_aggregates",
    "make_numeric_diff_scorer",
    "numeric_diff_scorer",
]
