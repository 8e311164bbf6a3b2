"""Every example of SPEC §1.1 reads the number written there through every entry point: the
Python API (`parse_number`, `score`, `score_frame`), the CLI, the evaluate metric, the genai
scorer and the pyfunc model (Spark: tests/engines/test_spark.py). Each row's expected value is the
number SPEC gives; its output is the text, read with the example's options."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from mlflow.pyfunc import PythonModelContext

from numdiff_component import (
    Options,
    make_numeric_diff_metric,
    make_numeric_diff_scorer,
    parse_number,
    score,
    score_frame,
)
from numdiff_component.adapters.pyfunc import NumericDiffModel, model_config
from numdiff_component.options import SCHEMA
from tests.conftest import LIST_READINGS, SPEC_READINGS, invoke, write_table

# Presets (SPEC §2.1) through every entry point: texts whose number a preset's options read.
PRESET_READINGS: list[tuple[str, dict[str, Any], float | None]] = [
    ("Step 1: 3+4=7. Step 2: 7*2=14", {"preset": "answers"}, 14.0),
    ("The answer is $\\boxed{9}$ \\pmod{11}", {"preset": "answers"}, 9.0),
    ("Step 1: 3+4=7. Step 2: 7*2=14", {"preset": "answers", "pick": "first"}, 1.0),  # explicit
    ("$2.1 billion", {"preset": "prose"}, 2.1e9),
    ("PTE 120 000 000", {"preset": "prose", "thousands": "comma"}, 120.0),  # explicit
    ("CHF 1'049.95", {"preset": "prices"}, 1049.95),
]

# One group of rows per set of options, as a user scores a table with one set of options.
GROUPS: dict[str, tuple[dict[str, Any], list[tuple[str, float | None]]]] = {}
for text, opts, number in SPEC_READINGS + PRESET_READINGS + LIST_READINGS:
    key = ",".join(f"{k}={v}" for k, v in sorted(opts.items()))
    GROUPS.setdefault(key, (opts, []))[1].append((text, number))


def _table(rows: list[tuple[str, float | None]]) -> pd.DataFrame:
    """Outputs as text; expected as the number SPEC gives (1.0 where it gives none)."""
    return pd.DataFrame(
        {
            "output": [text for text, _ in rows],
            "expected": [1.0 if number is None else number for _, number in rows],
        }
    )


def _want(rows: list[tuple[str, float | None]]) -> list[float]:
    return [math.nan if number is None else number for _, number in rows]


def _same(got: list[Any], want: list[float]) -> None:
    got = [math.nan if value is None else float(value) for value in got]
    assert got == pytest.approx(want, rel=1e-15, nan_ok=True)


def _scores(rows: list[tuple[str, float | None]]) -> list[float]:
    """Each output against its own number: 1, or 0 where SPEC reads no number."""
    return [0.0 if number is None else 1.0 for _, number in rows]


SPECS = {spec.name: spec for spec in SCHEMA}
PARAMS = [pytest.param(*GROUPS[key], id=key) for key in GROUPS]


@pytest.mark.parametrize(("options", "rows"), PARAMS)
def test_python_api(options: dict[str, Any], rows: list[tuple[str, float | None]]) -> None:
    _same([parse_number(text, **options) for text, _ in rows], _want(rows))
    _same([score(text, "1", **options).output_value for text, _ in rows], _want(rows))
    _same(score_frame(_table(rows), **options)["output_value"].tolist(), _want(rows))


@pytest.mark.parametrize(("options", "rows"), PARAMS)
def test_command_line(
    options: dict[str, Any], rows: list[tuple[str, float | None]], tmp_path: Path, tracking_uri: str
) -> None:
    source = write_table(_table(rows), tmp_path / "answers.csv")
    flags = []
    for name, value in options.items():
        flag = "--" + (SPECS[name].flag or name).replace("_", "-")
        if isinstance(value, (list, dict)):  # a list option: its flag once per item
            items = [f"{k}={v}" for k, v in value.items()] if isinstance(value, dict) else value
            flags += [arg for item in items for arg in (flag, item)]
        else:
            flags += [f"{flag}={str(value).lower()}"] if isinstance(value, bool) else [flag, value]
    done = invoke("score", str(source), *flags, "-q", "--no-plots", "--results-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    _same(pd.read_parquet(tmp_path / "results.parquet")["output_value"].tolist(), _want(rows))


@pytest.mark.parametrize(("options", "rows"), PARAMS)
def test_evaluate_metric(options: dict[str, Any], rows: list[tuple[str, float | None]]) -> None:
    table = _table(rows)
    metric = make_numeric_diff_metric(**options)
    assert metric.eval_fn(table["output"], table["expected"]).scores == _scores(rows)
    # The same options through evaluator_config, over a metric made with the defaults.
    config = {"numeric_diff_options": options}
    value = make_numeric_diff_metric().eval_fn(table["output"], table["expected"], **config)
    assert value.scores == _scores(rows)


@pytest.mark.parametrize(("options", "rows"), PARAMS)
def test_genai_scorer(options: dict[str, Any], rows: list[tuple[str, float | None]]) -> None:
    scorer = make_numeric_diff_scorer(**options)
    for (text, number), want in zip(rows, _scores(rows), strict=True):
        expected = 1.0 if number is None else number
        feedback, _ = scorer(outputs=text, expectations={"expected": expected})
        assert feedback.value == want, text


@pytest.mark.parametrize(("options", "rows"), PARAMS)
def test_pyfunc_model(options: dict[str, Any], rows: list[tuple[str, float | None]]) -> None:
    predicted = NumericDiffModel(Options(**options)).predict(None, _table(rows))
    _same(predicted["output_value"].tolist(), _want(rows))
    # As loaded from a model config (`model_config`), where a preset resolves again; the config
    # is written as YAML.
    assert yaml.safe_load(yaml.safe_dump(model_config(Options(**options)))) is not None
    model = NumericDiffModel()
    model.load_context(
        PythonModelContext(artifacts={}, model_config=model_config(Options(**options)))
    )
    _same(model.predict(None, _table(rows))["output_value"].tolist(), _want(rows))
