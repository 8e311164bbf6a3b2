"""The numeric diff evaluator as an MLflow pyfunc model, for serving and batch scoring.

The model takes a table with ``output`` and ``expected`` columns and returns the SPEC §4 result
columns for each row. Its options live in the model config, so they travel with the logged
model and can be overridden when loading it
(``mlflow.pyfunc.load_model(uri, model_config={"threshold": 0.9})``) or serving it
(``MLFLOW_PYFUNC_INFERENCE_CONFIG='{"threshold": 0.9}'``).

The model is logged from code (`numdiff_component.adapters.model_code`; nothing is pickled) and
carries a copy of this package (``code_paths``), so it loads where ``numdiff_component`` is not
installed; its pip requirements are the core's dependencies
(mlflow, pandas, numpy, pyarrow) at the versions installed when it was logged.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow.models import ModelSignature
from mlflow.models.model import ModelInfo
from mlflow.pyfunc import PythonModel, PythonModelContext
from mlflow.types import ColSpec, Schema, TensorSpec

from numdiff_component.errors import InputError, missing_column
from numdiff_component.options import OPTION_NAMES, Options
from numdiff_component.scoring import SPAN_COLUMNS, result_schema, score_frame
from numdiff_component.slices.thresholds import ROW_THRESHOLD, apply_row_thresholds
from numdiff_component.tracking.boundary import mlflow_run, within
from numdiff_component.unit_scoring import UNIT_SCHEMA

INPUT_COLUMNS = ("output", "expected")
THRESHOLD_COL = "threshold_col"
"""The model config's key naming the column of each row's threshold (SPEC §3.2)."""
_REQUIREMENTS = ("mlflow", "pandas", "numpy", "pyarrow", "pint")
_COLSPEC_TYPES = {"double": "double", "bool": "boolean", "string": "string", "int64": "long"}
_MAYBE_NO_NUMBER = (
    "output_value",
    "expected_value",
    "abs_error",
    *SPAN_COLUMNS,
    *UNIT_SCHEMA.names,
)
_BAD_NAME_CHARACTERS = ("/", ":", ".", "%", '"', "'")  # as mlflow.utils.validation has them


def signature(options: Options, threshold_col: str | None = None) -> ModelSignature:
    """The model's signature: two strings in, the result columns of ``options`` out; with
    ``threshold_col``, that column's numbers in and `ROW_THRESHOLD` out (SPEC §3.2)."""
    inputs: list[ColSpec | TensorSpec] = [ColSpec("string", name) for name in INPUT_COLUMNS]
    outputs: list[ColSpec | TensorSpec] = [
        ColSpec(_COLSPEC_TYPES[str(f.type)], f.name) for f in result_schema(options)
    ]
    if threshold_col:
        inputs.append(ColSpec("double", threshold_col))
        outputs.append(ColSpec("double", ROW_THRESHOLD))
    return ModelSignature(inputs=Schema(inputs), outputs=Schema(outputs))


SIGNATURE = signature(Options())
INPUT_EXAMPLE = pd.DataFrame(
    {"output": ["The answer is 42.", "0.0302", "twelve"], "expected": ["42", "0.03024", "12"]}
)


class NumericDiffModel(PythonModel):
    """Scores ``output`` against ``expected`` row by row, with the options of its model config.

    ``predict`` returns one row per input row, in input order, with the result columns of
    `score_frame` (`RESULT_COLUMNS`, and `UNIT_SCHEMA`'s with units on, in that order) and the
    same numbers; where there is no number (or unit), the columns that would hold NaN hold
    ``None`` (``null`` when served as JSON). With ``threshold_col``, each row passes against
    the threshold in that column (SPEC §3.2; empty: the options' threshold), recorded in
    `ROW_THRESHOLD`. Other input columns are ignored.

    >>> model = NumericDiffModel(Options(threshold=0.9))
    >>> frame = pd.DataFrame({"output": ["It is 41.", "n/a"], "expected": ["42", "1"]})
    >>> model.predict(None, frame)[["score", "label"]].round(4).to_dict("list")
    {'score': [0.9762, 0.0], 'label': ['pass', 'unparseable']}
    """

    def __init__(self, options: Options | None = None, threshold_col: str | None = None) -> None:
        self.options = options or Options()
        self.threshold_col = threshold_col

    def load_context(self, context: PythonModelContext) -> None:
        """Read the options and ``threshold_col`` from the model config (unknown keys are an
        `OptionError`; a key set to None is not given: the preset's value, else the option's
        default)."""
        config = {k: v for k, v in (context.model_config or {}).items() if v is not None}
        self.threshold_col = config.pop(THRESHOLD_COL, None)
        self.options = Options.of(None, **config)

    def predict(
        self,
        context: PythonModelContext | None,
        model_input: pd.DataFrame,
        params: dict[str, Any] | None = None,
    ) -> pd.DataFrame:
        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        roles = [(name, name) for name in INPUT_COLUMNS]
        roles += [("threshold", self.threshold_col)] if self.threshold_col else []
        for role, name in roles:
            if name not in model_input.columns:
                raise missing_column(role, name, model_input.columns)
        frame = model_input[[name for _, name in roles]].reset_index(drop=True)
        columns = result_schema(self.options).names
        results = score_frame(frame, "output", "expected", self.options)
        if self.threshold_col:
            threshold = self.options.threshold
            results = apply_row_thresholds(results, self.threshold_col, threshold)
            columns.append(ROW_THRESHOLD)
        results = results[columns]
        # Served as JSON, NaN would be the bare token NaN, which is not JSON: no number (no
        # unit) is None in these columns (null in JSON, null in Spark), values otherwise.
        for name in _MAYBE_NO_NUMBER:
            if name not in results:
                continue
            column = results[name]
            results[name] = column.astype(object).where(column.notna(), None)
        return results


def _input_example(threshold_col: str | None) -> pd.DataFrame:
    """`INPUT_EXAMPLE`, with ``threshold_col``'s thresholds (NaN: the threshold option)."""
    return (
        INPUT_EXAMPLE.assign(**{threshold_col: [0.9, None, 1.0]})
        if threshold_col
        else INPUT_EXAMPLE
    )


def model_config(options: Options, threshold_col: str | None = None) -> dict[str, Any]:
    """The model config of a model logged with ``options``: every option's key (MLflow lets a
    load override only the keys the config holds), with the preset and the values given, and
    None for the others, so that a preset given when loading fills them as it would here. A
    list option is its text (``lakh=100000.0``): the config is written as YAML. With
    ``threshold_col``, the key `THRESHOLD_COL` too."""
    given = {k: str(v) if isinstance(v, tuple) else v for k, v in options.given().items()}
    config = {name: given.get(name) for name in OPTION_NAMES}
    return config | ({THRESHOLD_COL: threshold_col} if threshold_col else {})


def _pip_requirements() -> list[str]:
    return [f"{name}=={version(name)}" for name in _REQUIREMENTS]


def log_numeric_diff_model(
    name: str = "numeric_diff_model",
    *,
    experiment_name: str | None = None,
    run_name: str | None = None,
    threshold_col: str | None = None,
    **options: Any,
) -> ModelInfo:
    """Log a `NumericDiffModel` with these options to MLflow; its ``ModelInfo``.

    ``options`` are the scoring options of SPEC §2 and ``preset`` (`Options`), validated first
    (`OptionError`) and stored as the model config (`model_config`). The model goes to the
    active run, or to a new run (named ``run_name``, in ``experiment_name`` when given; both
    are used only for a new run). It has a signature (``output``, ``expected`` strings in; the
    result columns out) and an input example. ``threshold_col`` names an input column of
    numbers, each row's threshold (SPEC §3.2; empty: the threshold option), set when logging:
    it is part of the signature.
    ``ModelInfo.model_uri`` (``models:/<model_id>``) is what ``mlflow models serve -m`` and
    ``mlflow.pyfunc.load_model`` take; ``runs:/<run_id>/<name>`` works as well. A tracking
    failure raises `TrackingError`.
    """
    opts = Options.of(None, **options)
    bad = [c for c in _BAD_NAME_CHARACTERS if c in name]
    if not name or bad:
        raise InputError(
            f"model name {name!r} cannot be empty or hold {', '.join(map(repr, bad))}: MLflow "
            f"refuses any of {' '.join(_BAD_NAME_CHARACTERS)} in a model name"
        )
    what = "log the model to MLflow"
    with mlflow_run(run_name=run_name, experiment_name=experiment_name, use_active=True, what=what):
        return within(
            what,
            mlflow.pyfunc.log_model,
            name=name,
            python_model=str(Path(__file__).with_name("model_code.py")),
            model_config=model_config(opts, threshold_col),
            signature=signature(opts, threshold_col),
            input_example=_input_example(threshold_col),
            code_paths=[str(Path(__file__).parents[1])],
            pip_requirements=_pip_requirements(),
        )


__all__ = ["SIGNATURE", "NumericDiffModel", "log_numeric_diff_model"]
