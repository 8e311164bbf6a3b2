"""The MLflow adapters (evaluate metric, genai scorer, pyfunc) against the core, and end to end."""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pandas as pd
import pytest

from numdiff_component import (
    AGGREGATE_NAMES,
    InputError,
    NumericDiffModel,
    OptionError,
    Options,
    aggregate,
    log_numeric_diff_aggregates,
    make_numeric_diff_metric,
    make_numeric_diff_scorer,
    numeric_diff_metric,
    numeric_diff_scorer,
    score_frame,
)
from numdiff_component.scoring import SPAN_COLUMNS
from tests.fixtures.commands import invoke
from tests.fixtures.samples import items_table, reference_aggregates, reference_items
from tests.fixtures.tables import assert_spans_read_again, span_texts, write_table

TEXT_TABLE = pd.DataFrame(
    {
        "output": [
            "0.0302",
            "The answer is 212 degrees F.",
            "x=-3",
            "-12",
            "twelve",
            "42",
            None,
            "$1,234,567.89",
            "Between 3 and 4, final answer 4",
            "50 %",
            "0",
            "1e999",
        ],
        "expected": [
            "0.03024",
            "212",
            "-3",
            "12",
            "12",
            "n/a",
            "5",
            "1,234,567.89",
            "4",
            "0.5",
            "0",
            "1",
        ],
    }
)
NUMERIC_TABLE = pd.DataFrame(
    {
        "output": [0.0302, 212.0, -3.0, -12.0, np.nan, 41.0, 1e308, 0.0],
        "expected": [0.03024, 212, -3, 12, 12, 42, -1e308, 0],
    }
)
MIXED_TABLE = pd.DataFrame(
    {"output": ["about 7", 7.5, None, "-1e3", 3], "expected": [7, "7", 2, -1000.0, "three"]}
)
TABLES = {"text": TEXT_TABLE, "numeric": NUMERIC_TABLE, "mixed": MIXED_TABLE}
OPTION_SETS = {
    "defaults": {},
    "strict": {"threshold": 0.5, "floor": 0.0, "pick": "last", "percent": "fraction"},
}


pytestmark = pytest.mark.usefixtures("tracking_uri")


# --- every adapter gives the core's numbers ------------------------------------------------------


def _by_metric(df: pd.DataFrame, options: dict[str, Any]) -> tuple[list[float], dict[str, float]]:
    value = make_numeric_diff_metric(**options).eval_fn(df["output"], df["expected"])
    assert len(value.justifications) == len(df)
    return value.scores, value.aggregate_results


def _by_scorer(df: pd.DataFrame, options: dict[str, Any]) -> tuple[list[float], dict[str, float]]:
    scorer = make_numeric_diff_scorer(**options)
    pairs = zip(df["output"], df["expected"], strict=True)
    rows = [scorer(outputs=o, expectations={"expected": e}) for o, e in pairs]
    scores = [fb_score.value for fb_score, _ in rows]
    passed = [fb_passed.value for _, fb_passed in rows]
    # What mlflow.genai.evaluate logs: the mean of each feedback.
    return scores, {"mean_score": float(np.mean(scores)), "pass_rate": float(np.mean(passed))}


def _by_pyfunc(df: pd.DataFrame, options: dict[str, Any]) -> tuple[list[float], dict[str, float]]:
    predicted = NumericDiffModel(Options(**options)).predict(None, df)
    expected = score_frame(df, options=Options(**options))
    # The model holds None where there is no number (null in JSON): NaN (NA) here.
    kinds = dict.fromkeys(["output_value", "expected_value", "abs_error"], float)
    numbers = predicted.astype(kinds | {c: expected[c].dtype for c in SPAN_COLUMNS})
    pd.testing.assert_frame_equal(numbers, expected[list(predicted.columns)])
    return predicted["score"].tolist(), aggregate(predicted)


ADAPTERS: dict[str, Callable[..., tuple[list[float], dict[str, float]]]] = {
    "metric": _by_metric,
    "scorer": _by_scorer,
    "pyfunc": _by_pyfunc,
}


@pytest.mark.parametrize("options", OPTION_SETS.values(), ids=OPTION_SETS.keys())
@pytest.mark.parametrize("table", TABLES.values(), ids=TABLES.keys())
@pytest.mark.parametrize("adapter", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_adapter_gives_the_core_numbers(
    adapter: Callable[..., tuple[list[float], dict[str, float]]],
    table: pd.DataFrame,
    options: dict[str, Any],
) -> None:
    core = score_frame(table, options=Options(**options))
    core_aggregates = aggregate(core)

    scores, aggregates = adapter(table, options)

    assert scores == core["score"].tolist()
    assert aggregates, "the adapter reports no aggregate"
    for name, value in aggregates.items():
        assert value == pytest.approx(core_aggregates[name], rel=1e-12, abs=1e-15), name


def test_tables_cover_the_edges() -> None:
    """The parity tables hold unparseable rows, negatives, prose, passes and fails."""
    labels = set(score_frame(TEXT_TABLE)["label"]) | set(score_frame(NUMERIC_TABLE)["label"])
    assert labels == {"pass", "fail", "unparseable"}
    assert (score_frame(NUMERIC_TABLE)["output_value"] < 0).any()


# --- the metric ---------------------------------------------------------------------------------


def test_metric_reports_every_aggregate_but_nan_ones() -> None:
    value = numeric_diff_metric.eval_fn(pd.Series(["3", "4"]), pd.Series(["3", "5"]))
    assert set(value.aggregate_results) == set(AGGREGATE_NAMES)

    value = numeric_diff_metric.eval_fn(pd.Series(["n/a"]), pd.Series(["3"]))
    assert set(value.aggregate_results) == set(AGGREGATE_NAMES) - {
        "mae",
        "median_abs_error",
        "mean_score_stderr",
        "mean_score_ci_low",
        "mean_score_ci_high",
    }
    assert value.scores == [0.0]


def test_metric_justifications_name_the_numbers_or_the_missing_side() -> None:
    value = numeric_diff_metric.eval_fn(
        pd.Series(["0.0302", "twelve", "5", None]), pd.Series(["0.03024", "12", "n/a", None])
    )
    assert value.justifications == [
        "output 0.0302, expected 0.03024, difference 4e-05: score 0.99996 (pass)",
        "no number in the output: score 0 (unparseable)",
        "no number in the expected value: score 0 (unparseable)",
        "no number in the output or the expected value: score 0 (unparseable)",
    ]
    assert all(type(s) is float for s in value.scores)


def test_justifications_quote_where_each_number_was_read() -> None:
    """SPEC §1.4: the span, marked, with the text around it (cut with … far from it)."""
    long = "Step 1: 3+4=7. Step 2: 7*2=14. So after all that work the final answer is 14."
    value = numeric_diff_metric.eval_fn(
        pd.Series([long, "x=-3", "7"]), pd.Series(["14", "-3", "about 7 kg"]), {"pick": "last"}
    )
    assert value.justifications == [
        'output 14 read from "…that work the final answer is [14.]", expected 14, '
        "difference 0: score 1 (pass)",
        'output -3 read from "x=[-3]", expected -3, difference 0: score 1 (pass)',
        'output 7, expected 7 read from "about [7] kg", difference 0: score 1 (pass)',
    ]
    fb, _ = make_numeric_diff_scorer(pick="last")(outputs=long, expectations={"expected": 14})
    assert fb.rationale == value.justifications[0]


def test_metric_pairs_rows_by_position_not_index() -> None:
    predictions = pd.Series(["1", "2"], index=[10, 11])
    value = numeric_diff_metric.eval_fn(predictions, pd.Series(["1", "2"]))
    assert value.scores == [1.0, 1.0]


def test_metric_options_from_evaluator_config_override_its_own() -> None:
    metric = make_numeric_diff_metric(threshold=0.99)
    predictions, targets = pd.Series(["41"]), pd.Series(["42"])
    assert metric.eval_fn(predictions, targets).aggregate_results["pass_rate"] == 0.0
    assert (
        metric.eval_fn(predictions, targets, {"threshold": 0.9}).aggregate_results["pass_rate"]
        == 1.0
    )
    with pytest.raises(OptionError, match="unknown option 'treshold'"):
        metric.eval_fn(predictions, targets, {"treshold": 0.9})


def test_metric_options_are_validated_when_made() -> None:
    with pytest.raises(OptionError, match="threshold must be a number between 0 and 1, got 2"):
        make_numeric_diff_metric(threshold=2)
    assert numeric_diff_metric.name == "numeric_diff"
    assert numeric_diff_metric.greater_is_better is True


def test_metric_takes_a_preset_and_evaluator_config_another() -> None:
    cot = pd.Series(["Step 1: 3+4=7. Answer: 14"])
    metric = make_numeric_diff_metric(preset="answers")
    assert metric.eval_fn(cot, pd.Series(["14"])).scores == [1.0]
    plain = metric.eval_fn(cot, pd.Series(["14"]), {"preset": "none"})  # the default reading
    assert plain.scores == [pytest.approx(1 - 13 / 14)]
    kept = make_numeric_diff_metric(preset="answers", pick="first")  # explicit beats the preset
    assert kept.eval_fn(cot, pd.Series(["14"]), {"preset": "prose"}).scores == plain.scores
    with pytest.raises(OptionError, match="preset must be one of 'none', 'answers'"):
        make_numeric_diff_metric(preset="math")


def test_metric_refuses_the_same_column_on_both_sides() -> None:
    column = pd.Series(["1", "2"], name="expected")
    with pytest.raises(InputError, match="predictions and targets are the same column 'expected'"):
        numeric_diff_metric.eval_fn(column, column.copy())
    assert numeric_diff_metric.eval_fn(column.rename("output"), column).scores == [1.0, 1.0]
    frame = pd.DataFrame({"output": ["1"], "expected": ["2"]})
    with pytest.raises(InputError, match="the output and the expected column are both 'expected'"):
        score_frame(frame, "expected", "expected")  # the Python API refuses it too


# --- the scorer ---------------------------------------------------------------------------------


def test_scorer_fields_are_the_option_schema_and_take_a_preset() -> None:
    from numdiff_component.adapters.genai import NumericDiffScorer
    from numdiff_component.options import OPTION_NAMES

    assert set(OPTION_NAMES) <= set(NumericDiffScorer.model_fields)
    scorer = make_numeric_diff_scorer(preset="answers", fractions=True)
    assert scorer.options == Options(preset="answers", fractions=True)
    assert (scorer.preset, scorer.fractions, scorer.pick) == (
        "answers",
        True,
        None,
    )  # None: preset's
    assert NumericDiffScorer(preset="prose").options == Options(preset="prose")
    assert make_numeric_diff_scorer(fractions="all").options.fractions == "all"
    cot = "Step 1: 3+4=7. Answer: 14"
    assert scorer(outputs=cot, expectations={"expected": 14})[0].value == 1.0
    copy = pickle.loads(pickle.dumps(scorer))
    assert copy.options == scorer.options


def test_scorer_feedbacks() -> None:
    score_fb, passed_fb = numeric_diff_scorer(outputs="It is 41.", expectations={"expected": "42"})
    assert (score_fb.name, passed_fb.name) == ("numeric_diff/score", "numeric_diff/passed")
    assert score_fb.value == pytest.approx(1 - 1 / 42)
    assert passed_fb.value is False
    assert score_fb.rationale == (
        'output 41 read from "It is [41.]", expected 42, difference 1: score 0.97619 (fail)'
    )
    assert passed_fb.rationale == "score 0.97619 < threshold 0.99"


def test_scorer_row_without_a_number_scores_zero() -> None:
    score_fb, passed_fb = numeric_diff_scorer(outputs="twelve", expectations={"expected": 12})
    assert (score_fb.value, passed_fb.value) == (0.0, False)
    assert score_fb.error is None
    assert score_fb.rationale == "no number in the output: score 0 (unparseable)"
    assert score_fb.metadata == {"label": "unparseable", "expected_value": "12.0"}


def test_scorer_reads_its_expected_key_and_names_a_missing_one() -> None:
    scorer = make_numeric_diff_scorer(expected_key="answer", threshold=0.9)
    assert scorer(outputs="41", expectations={"answer": 42})[1].value is True
    with pytest.raises(InputError, match=r"expectations have no 'answer' key \(keys: 'expected'\)"):
        scorer(outputs="41", expectations={"expected": 42})


def test_scorer_holds_a_row_to_the_threshold_in_its_expectations() -> None:
    """SPEC §3.2 as --threshold-col: 41 against 42 scores 0.976, passing 0.9 and not 0.99."""
    scorer = make_numeric_diff_scorer(threshold_key="tol")
    for tol, passed in [("0.9", True), (0.99, False), ("", False), (None, False)]:
        score_fb, passed_fb = scorer(outputs="41", expectations={"expected": 42, "tol": tol})
        assert passed_fb.value is passed, tol
        assert score_fb.metadata["label"] == ("pass" if passed else "fail")
        assert passed_fb.rationale.endswith(f"threshold {0.9 if tol == '0.9' else 0.99:g}")
    assert scorer(outputs="n/a", expectations={"expected": 1, "tol": 0})[1].value is False
    with pytest.raises(InputError, match=r"a row of column \"expectations\['tol'\]\": threshold"):
        scorer(outputs="41", expectations={"expected": 42, "tol": "loose"})


def test_scorer_options_are_validated_once_when_made() -> None:
    with pytest.raises(OptionError, match="pick must be one of 'first', 'last', 'answer', got"):
        make_numeric_diff_scorer(pick="middle")
    with pytest.raises(OptionError, match="unknown option"):
        make_numeric_diff_scorer(treshold=0.5)
    assert make_numeric_diff_scorer(floor=0).options == Options(floor=0.0)


def test_scorer_pickles_with_its_options() -> None:
    scorer = make_numeric_diff_scorer(threshold=0.5, decimal_comma=True, expected_key="y")
    copy = pickle.loads(pickle.dumps(scorer))
    assert copy.options == scorer.options
    assert copy(outputs="3,14", expectations={"y": "3"})[0].value == pytest.approx(1 - 0.14 / 3.14)


# --- end to end ---------------------------------------------------------------------------------

SAMPLE = pd.DataFrame(
    {
        "question": ["17 * 23?", "Boiling point in F?", "-5 - 7?", "Legs of a spider?"],
        "output": ["391", "The answer is 212 degrees F.", "-12", "eight"],
        "expected": ["391", "212", "-12", "8"],
    }
)


def _run_metrics(run_id: str) -> dict[str, float]:
    return mlflow.get_run(run_id).data.metrics


def _expected_metrics(df: pd.DataFrame, **options: Any) -> dict[str, float]:
    aggregates = aggregate(score_frame(df, options=Options(**options)))
    return {f"numeric_diff/{k}": v for k, v in aggregates.items() if not math.isnan(v)}


def _evaluate(**kwargs: Any) -> tuple[str, Any]:
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model_type=None, extra_metrics=[numeric_diff_metric], **kwargs
        )
    return run.info.run_id, result


@pytest.mark.slow
def test_models_evaluate_logs_metrics_and_the_per_row_table() -> None:
    run_id, result = _evaluate(data=SAMPLE, predictions="output", targets="expected")

    expected = _expected_metrics(SAMPLE)
    assert set(expected) == {f"numeric_diff/{name}" for name in AGGREGATE_NAMES}
    assert _run_metrics(run_id) == pytest.approx(expected)
    assert result.metrics == pytest.approx(expected)

    table = mlflow.load_table("eval_results_table.json", run_ids=[run_id])
    assert table["question"].tolist() == SAMPLE["question"].tolist()
    assert table["numeric_diff/score"].tolist() == score_frame(SAMPLE)["score"].tolist()
    assert table["numeric_diff/justification"].tolist() == [
        "output 391, expected 391, difference 0: score 1 (pass)",
        'output 212 read from "The answer is [212] degrees F.", expected 212, difference 0: '
        "score 1 (pass)",
        "output -12, expected -12, difference 0: score 1 (pass)",
        "no number in the output: score 0 (unparseable)",
    ]


@pytest.mark.slow
def test_models_evaluate_numeric_columns_and_evaluator_config() -> None:
    # Without the overflow row: the SQL store keeps an infinite mae as the largest float.
    finite = NUMERIC_TABLE[~np.isinf(NUMERIC_TABLE.output - NUMERIC_TABLE.expected)]
    run_id, _ = _evaluate(
        data=finite,
        predictions="output",
        targets="expected",
        evaluator_config={"numeric_diff_options": {"threshold": 0.5, "floor": 0}},
    )
    assert _run_metrics(run_id) == pytest.approx(_expected_metrics(finite, threshold=0.5, floor=0))


@pytest.mark.slow
def test_models_evaluate_pandas_dataset() -> None:
    dataset = mlflow.data.from_pandas(SAMPLE, targets="expected", predictions="output")
    run_id, _ = _evaluate(data=dataset)
    assert _run_metrics(run_id) == pytest.approx(_expected_metrics(SAMPLE))


@pytest.mark.slow
def test_models_evaluate_scores_what_a_model_predicts() -> None:
    def model(features: pd.DataFrame) -> list[str]:
        return [f"about {len(q)}" for q in features["question"]]

    run_id, _ = _evaluate(model=model, data=SAMPLE.drop(columns="output"), targets="expected")

    predicted = SAMPLE.assign(output=model(SAMPLE))
    assert _run_metrics(run_id) == pytest.approx(_expected_metrics(predicted))


@pytest.mark.slow
def test_deprecated_mlflow_evaluate_works_too() -> None:
    with mlflow.start_run() as run, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        mlflow.evaluate(
            data=SAMPLE,
            predictions="output",
            targets="expected",
            model_type=None,
            extra_metrics=[make_numeric_diff_metric(threshold=0.5)],
        )
    assert _run_metrics(run.info.run_id) == pytest.approx(_expected_metrics(SAMPLE, threshold=0.5))


@pytest.mark.slow
def test_every_entry_point_logs_the_same_metrics(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The CLI, the evaluate metric and the genai scorer (with `log_numeric_diff_aggregates`)
    log the same ``numeric_diff/<name>`` for every aggregate on one table (``mlflow run``:
    tests/e2e/test_mlproject.py)."""
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")  # the guide's setting for sqlite
    table = TEXT_TABLE.iloc[:-1].assign(question=[f"q{i}" for i in range(len(TEXT_TABLE) - 1)])
    want = _expected_metrics(table, threshold=0.9)
    assert {"numeric_diff/mae", "numeric_diff/median_abs_error"} <= set(want)
    assert want["numeric_diff/no_answer_rate"] > 0 and 0 < want["numeric_diff/pass_rate"] < 1

    csv = str(write_table(table, tmp_path / "t.csv"))
    done = invoke("score", csv, "--threshold", "0.9", "--results-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    run_id = next(
        line.split()[1] for line in done.stdout.splitlines() if line.split()[:1] == ["run"]
    )
    by_cli = _run_metrics(run_id)

    metric = make_numeric_diff_metric(threshold=0.9)
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            data=table, predictions="output", targets="expected", extra_metrics=[metric]
        )
    by_metric = _run_metrics(run.info.run_id)

    rows = [
        {"inputs": {"question": q}, "outputs": o, "expectations": {"expected": e}}
        for q, o, e in zip(table.question, table.output, table.expected, strict=True)
    ]
    result = mlflow.genai.evaluate(data=rows, scorers=[make_numeric_diff_scorer(threshold=0.9)])
    assert result.metrics["numeric_diff/score/mean"] == pytest.approx(
        want["numeric_diff/mean_score"]
    )
    assert result.metrics["numeric_diff/passed/mean"] == pytest.approx(
        want["numeric_diff/pass_rate"]
    )
    logged = log_numeric_diff_aggregates(result)
    by_scorer = _run_metrics(result.run_id)
    assert logged == {k: v for k, v in by_scorer.items() if k in logged}

    for name, got in (("cli", by_cli), ("metric", by_metric), ("scorer", by_scorer)):
        assert {k: v for k, v in got.items() if k in want} == pytest.approx(want, rel=1e-12), name
    table_rows = result.tables["eval_results"]
    assert "no number in the output: score 0 (unparseable)" in set(
        table_rows["numeric_diff/score/rationale"]
    )

    # Where each number was read (SPEC §1.4): the same spans through the CLI and pandas, each
    # reading again as its number; the justification and the rationale quote each span.
    pandas = score_frame(table, threshold=0.9)
    assert_spans_read_again(pandas, {"threshold": 0.9})
    cli = pd.read_parquet(tmp_path / "out" / "results.parquet")
    for name in SPAN_COLUMNS:
        assert cli[name].tolist() == pandas[name].tolist(), name
    assert_spans_read_again(cli, {"threshold": 0.9})
    quotes = [
        "" if span is None or span == text else f"[{span}]"
        for span, text in zip(span_texts(pandas, "output", table.output), table.output, strict=True)
    ]
    justified = mlflow.load_table("eval_results_table.json", run_ids=[run.info.run_id])
    requests = table_rows["request"].map(str)
    rationales = dict(zip(requests, table_rows["numeric_diff/score/rationale"], strict=True))
    for i, quote in enumerate(quotes):
        assert quote in justified["numeric_diff/justification"][i], (i, quote)
        assert quote in next(r for q, r in rationales.items() if f"'q{i}'" in q), (i, quote)


@pytest.mark.slow
def test_genai_evaluate_on_sqlite_with_the_documented_setting_sends_every_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a sqlite store, mlflow.genai.evaluate's 10 scoring threads and 10 trace-export threads
    outnumber the store's 15 pooled connections: exports wait 30 s for one, then fail ("QueuePool
    limit ... Failed to send trace"). With MLFLOW_GENAI_EVAL_MAX_WORKERS=1 (the setting the
    guide gives) no thread waits and every trace is sent."""
    import logging

    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("mlflow")
    logger.addHandler(handler)
    rows = [
        {"inputs": {"q": f"q{i}"}, "outputs": f"It is {i}.", "expectations": {"expected": i}}
        for i in range(20)
    ]
    try:
        result = mlflow.genai.evaluate(data=rows, scorers=[numeric_diff_scorer])
    finally:
        logger.removeHandler(handler)
    failures = [r.getMessage() for r in records if "trace" in r.getMessage().lower()]
    assert failures == []
    assert result.metrics["numeric_diff/passed/mean"] == 1.0
    assert len(mlflow.search_traces(run_id=result.run_id, return_type="list")) == 20


@pytest.mark.slow
@pytest.mark.parametrize("column", ["item", "question id"])  # a name, or one mapped to the metric
def test_models_evaluate_with_items_gives_the_item_metrics(column: str) -> None:
    """SPEC §3.3 through the metric: the same values as the reference of the job's tests."""
    table = items_table().rename(columns={"item": column})
    parameter = column if column.isidentifier() else "question_id"
    metric = make_numeric_diff_metric(item_col=parameter, k="2", preset="answers")
    mapping: dict[str, Any] = {"numeric_diff_options": {"k": "1,3"}}  # k per call
    if not column.isidentifier():
        mapping["col_mapping"] = {parameter: column}
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            data=table,
            predictions="output",
            targets="expected",
            model_type=None,
            extra_metrics=[metric],
            evaluator_config=mapping,
        )
    results = score_frame(table.rename(columns={column: "item"}), preset="answers")
    want = reference_aggregates(reference_items(results, (1, 3)), (1, 3))
    want = {f"numeric_diff/{k}": v for k, v in want.items() if not math.isnan(v)}
    got = _run_metrics(run.info.run_id)
    assert {k: v for k, v in got.items() if k in want} == pytest.approx(want, rel=1e-12)
    assert set(want) <= set(got)
