"""The MLflow boundary (SPEC §5): run params and metrics, how runs start and end, which failures
become `TrackingError`, reading a run's results back, and logging a comparison. Against a real
sqlite store (the ``tracking_uri`` fixture) and a real tracking server that is stopped."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from numdiff_component import InputError, Options, TrackingError, aggregate, score_frame
from numdiff_component.compare.comparison import compare_results
from numdiff_component.compare.render import to_json
from numdiff_component.options import OPTION_NAMES
from numdiff_component.task.config import Scoring
from numdiff_component.tracking.boundary import experiment_id, mlflow_errors, mlflow_run
from numdiff_component.tracking.evaluation import Evaluation, metrics, new_params, params
from numdiff_component.tracking.records import load_results, log_comparison, log_evaluation
from tests.fixtures.servers import free_port
from tests.fixtures.tables import spec_table


def _evaluation(folder: Path, **changes: Any) -> tuple[Evaluation, pd.DataFrame]:
    """The spec table scored into ``folder``, as the job hands it to `log_evaluation`."""
    options = changes.pop("options", Options(threshold=0.9, pick="last"))
    id_col = changes.pop("id_col", "id")
    results = score_frame(spec_table(), options=options)
    folder.mkdir(parents=True, exist_ok=True)
    results.to_parquet(folder / "results.parquet", index=False)
    values: dict[str, Any] = {
        "source": str(folder / "spec.csv"),
        "dataset_name": "spec",
        "scoring": Scoring(options=options, id_col=id_col),
        "aggregates": aggregate(results),
        "results_dir": folder,
        "n_rows": len(results),
    }
    return Evaluation(**{**values, **changes}), results


# --- names ---------------------------------------------------------------------------------------


def test_params_are_the_options_and_columns_named_as_the_mlproject_names_them(
    tmp_path: Path,
) -> None:
    evaluation, _ = _evaluation(tmp_path, id_col=None, engine="spark")
    got = params(evaluation)
    columns = {"output_col", "expected_col", "id_col", "by", "threshold_col", "item_col", "k"}
    assert set(got) == {*OPTION_NAMES, *columns, "predictions"}
    assert {name: got[name] for name in _SOME} == {
        "threshold": "0.9",
        "floor": "1.0",
        "decimal_comma": "false",  # as the MLproject spells it
        "pick": "last",
        "percent": "keep",
        "scale": "none",
        "thousands": "comma",
        "fractions": "false",
        "output_col": "output",
        "expected_col": "expected",
        "id_col": "",  # no id column: an empty param, not "None"
        "predictions": str(tmp_path / "spec.csv"),
    }


_SOME = [
    "threshold",
    "floor",
    "decimal_comma",
    "pick",
    "percent",
    "scale",
    "thousands",
    "fractions",
    "output_col",
    "expected_col",
    "id_col",
    "predictions",
]


def test_each_value_is_logged_once() -> None:
    """What ``mlflow run`` logged is not logged again; a value resolved otherwise is kept
    beside it (MLflow refuses a second value for a param)."""
    wanted = {"threshold": "0.99", "pick": "answer", "id_col": "", "predictions": "/d/p.csv"}
    logged = {"threshold": "0.99", "pick": "", "id_col": "", "extra": "1"}
    assert new_params(wanted, logged) == {"resolved/pick": "answer", "predictions": "/d/p.csv"}
    assert new_params(wanted, {}) == wanted
    assert new_params({"floor": "1.0"}, {"floor": "1"}) == {}  # the same number


@pytest.mark.parametrize(
    ("aggregates", "logged"),
    [
        (
            {"mean_score": 0.5, "mae": math.nan, "mean_score_stderr": math.nan, "n_rows": 1},
            {"numeric_diff/mean_score": 0.5, "numeric_diff/n_rows": 1.0},
        ),
        (
            {"mae": math.inf, "n_unparseable": 0},
            {"numeric_diff/mae": math.inf, "numeric_diff/n_unparseable": 0.0},
        ),
        ({"mae": math.nan}, {}),
    ],
    ids=["nan left out", "inf kept", "nothing but nan"],
)
def test_metrics_are_named_under_the_prefix_and_nan_is_not_logged(
    aggregates: dict[str, float], logged: dict[str, float]
) -> None:
    got = metrics(aggregates)
    assert got == logged
    assert all(type(v) is float for v in got.values())


# --- runs start and end in one place --------------------------------------------------------------


def test_run_ends_finished(tracking_uri: str) -> None:
    with mlflow_run(run_name="done", experiment_name="tracking-tests") as run:
        mlflow.log_metric("m", 1.0)
    assert mlflow.active_run() is None
    finished = MlflowClient().get_run(run.info.run_id)
    assert finished.info.status == "FINISHED" and finished.info.run_name == "done"
    assert MlflowClient().get_experiment(finished.info.experiment_id).name == "tracking-tests"


class _Bug(TypeError):
    pass


@pytest.mark.parametrize(
    ("raised", "seen"),
    [
        (_Bug("a bug"), _Bug),  # not MLflow's: through unchanged
        (ValueError("bad input"), ValueError),
        (KeyboardInterrupt(), KeyboardInterrupt),
        (MlflowException("store said no\nmore detail"), TrackingError),
        (ConnectionRefusedError("Connection refused"), TrackingError),  # network: OSError
    ],
    ids=["bug", "value error", "interrupt", "mlflow", "network"],
)
def test_run_is_marked_failed_when_the_block_raises(
    tracking_uri: str, raised: BaseException, seen: type[BaseException]
) -> None:
    with pytest.raises(seen) as error, mlflow_run(what="log the test") as run:
        raise raised
    assert MlflowClient().get_run(run.info.run_id).info.status == "FAILED"
    assert mlflow.active_run() is None
    if seen is TrackingError:
        first = str(raised).splitlines()[0]
        assert str(error.value) == f"could not log the test at {tracking_uri}: {first}"
        assert error.value.__cause__ is raised
    else:
        assert error.value is raised


def test_mlflow_errors_turns_only_mlflow_and_network_failures_into_tracking_errors(
    tracking_uri: str,
) -> None:
    failure = MlflowException("gone")
    with pytest.raises(TrackingError) as wrapped, mlflow_errors("read it"):
        raise failure
    assert str(wrapped.value) == f"could not read it at {tracking_uri}: gone"
    assert wrapped.value.__cause__ is failure
    bug = TypeError("unsupported operand")
    with pytest.raises(TypeError) as error, mlflow_errors("read it"):
        raise bug
    assert error.value is bug


def test_run_started_by_mlflow_run_is_used_and_ended(
    tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mlflow run`` hands its run over through MLFLOW_RUN_ID: no second run is made."""
    started = MlflowClient().create_run(
        experiment_id=mlflow.get_experiment_by_name("tests").experiment_id
    )
    monkeypatch.setenv("MLFLOW_RUN_ID", started.info.run_id)
    with mlflow_run(run_name="ignored") as run:
        pass
    assert run.info.run_id == started.info.run_id
    assert MlflowClient().get_run(started.info.run_id).info.status == "FINISHED"


def test_active_run_is_used_and_left_to_its_owner(tracking_uri: str) -> None:
    with mlflow.start_run() as outer:
        with mlflow_run(use_active=True) as run:
            assert run.info.run_id == outer.info.run_id
        with pytest.raises(ValueError), mlflow_run(use_active=True):
            raise ValueError("inside")
        assert mlflow.active_run() is not None  # not ended, not marked FAILED
        assert MlflowClient().get_run(outer.info.run_id).info.status == "RUNNING"
    assert MlflowClient().get_run(outer.info.run_id).info.status == "FINISHED"


def test_experiment_id_creates_then_finds(tracking_uri: str) -> None:
    assert experiment_id(None) is None and experiment_id("") is None
    made = experiment_id("made-here")
    assert made is not None and MlflowClient().get_experiment(made).name == "made-here"
    assert experiment_id("made-here") == made
    # Not mlflow.set_experiment: a plain run still goes to the process's experiment.
    with mlflow.start_run() as run:
        pass
    assert MlflowClient().get_experiment(run.info.experiment_id).name == "tests"


# --- a scored table logged, and read back ---------------------------------------------------------


def test_log_evaluation_logs_params_metrics_dataset_and_results(
    tracking_uri: str, tmp_path: Path
) -> None:
    evaluation, results = _evaluation(tmp_path / "res")
    report = tmp_path / "res" / "summary.md"
    report.write_text("# summary\n")
    evaluation = dataclasses.replace(evaluation, reports=(report,))
    inputs = results[["id", "output", "expected"]]
    run_id = log_evaluation(evaluation, inputs, results, run_name="logged")
    client = MlflowClient()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "logged"
    assert run.data.params == params(evaluation)
    assert run.data.metrics == pytest.approx(metrics(evaluation.aggregates))
    assert "numeric_diff/mae" in run.data.metrics  # the spec table has numbers to compare
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.name == "spec"
    assert [t.value for t in dataset.tags if t.key == "mlflow.data.context"] == ["evaluation"]
    names = {a.path for a in client.list_artifacts(run_id, "numeric_diff")}
    assert names == {
        "numeric_diff/results.parquet",
        "numeric_diff/results.json",
        "numeric_diff/summary.md",
    }
    table = mlflow.load_table("numeric_diff/results.json", run_ids=[run_id])
    assert table["id"].tolist() == results["id"].tolist()
    loaded = load_results(run_id)
    pd.testing.assert_frame_equal(loaded.frame, results)
    assert (loaded.source, loaded.id_col) == (run_id, "id")
    assert loaded.params["pick"] == "last"


def test_log_evaluation_without_the_table_logs_only_the_parquet_copy(
    tracking_uri: str, tmp_path: Path
) -> None:
    """A table too large for log_table: the results file and the input's schema only."""
    evaluation, results = _evaluation(tmp_path / "res", id_col=None)
    run_id = log_evaluation(evaluation, results[["id", "output", "expected"]].head(2), None)
    names = {a.path for a in MlflowClient().list_artifacts(run_id, "numeric_diff")}
    assert names == {"numeric_diff/results.parquet"}
    (dataset,) = MlflowClient().get_run(run_id).inputs.dataset_inputs
    assert dataset.dataset.name == "spec"
    assert load_results(run_id).id_col is None


def test_load_results_of_a_local_parquet_file(tmp_path: Path) -> None:
    results = score_frame(spec_table())
    results.to_parquet(tmp_path / "results.parquet", index=False)
    loaded = load_results(str(tmp_path / "results.parquet"))
    pd.testing.assert_frame_equal(loaded.frame, results)
    assert (loaded.source, dict(loaded.params), loaded.id_col) == (
        str(tmp_path / "results.parquet"),
        {},  # a file numdiff did not write records nothing
        None,
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.parquet", "results file not found: '{path}'"),
        (lambda d: d, "results file not found: '{path}'"),  # a folder with no .parquet file
        (
            lambda d: (d / "t.parquet").write_text("not parquet") and d / "t.parquet",
            "cannot read '{path}' as parquet: ",
        ),
    ],
    ids=["missing file", "a folder", "not parquet"],
)
def test_load_results_of_a_bad_local_file(tmp_path: Path, make: Any, message: str) -> None:
    path = str(make(tmp_path))
    with pytest.raises(InputError) as error:
        load_results(path)
    assert str(error.value).startswith(message.format(path=path))


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("0" * 32, f"cannot read the results of run '{'0' * 32}'"),
        ("no-such-run", "no run named 'no-such-run' in any experiment of sqlite:"),
    ],
    ids=["unknown id", "no run of that name"],
)
def test_load_results_of_a_missing_run_is_bad_input(
    tracking_uri: str, ref: str, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        load_results(ref)


def test_load_results_of_a_run_without_results_is_bad_input(tracking_uri: str) -> None:
    with mlflow.start_run() as run:
        mlflow.log_text("hello", "other.txt")
    with pytest.raises(InputError, match=f"run '{run.info.run_id}'"):
        load_results(run.info.run_id)


def test_log_comparison(tracking_uri: str) -> None:
    a = score_frame(spec_table())
    b = score_frame(spec_table().assign(output=["0.0302", "3", *spec_table()["output"][2:]]))
    summary = {"a": "a" * 32, "b": "b" * 32, **to_json(compare_results(a, b, id_col="id"))}
    run_id = log_comparison(summary, "a" * 32, "b" * 32, experiment_name="comparisons")
    run = MlflowClient().get_run(run_id)
    assert run.info.run_name == "compare aaaaaaaa bbbbbbbb" and run.info.status == "FINISHED"
    assert MlflowClient().get_experiment(run.info.experiment_id).name == "comparisons"
    assert run.data.params == {"compare/run_a": "a" * 32, "compare/run_b": "b" * 32}
    diffs = {
        f"compare/{name}_diff": values["diff"]
        for name, values in summary["aggregates"].items()
        if values.get("diff") is not None  # none of each side's interval bounds
    }
    assert "compare/mae_diff" in diffs and diffs["compare/pass_rate_diff"] == pytest.approx(-1 / 9)
    assert "compare/pass_rate_ci_low_diff" not in diffs
    intervals = {
        f"compare/{name}_diff_{bound}": delta[bound]
        for name, delta in summary["deltas"].items()
        for bound in ("ci_low", "ci_high")
    }
    assert (
        intervals["compare/pass_rate_diff_ci_low"]
        < -1 / 9
        < 0
        < intervals["compare/pass_rate_diff_ci_high"]
    )
    assert run.data.metrics == pytest.approx(
        {
            **diffs,
            **intervals,
            "compare/p_value": 1.0,
            "compare/n_regressed": 1,
            "compare/n_improved": 0,
        }
    )
    logged = mlflow.artifacts.load_text(f"runs:/{run_id}/compare/comparison.json")
    assert json.loads(logged) == summary


# --- a server that is down ---------------------------------------------------------------------


def test_a_server_that_is_down_is_a_tracking_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens at the URL (a server stopped, or never started): starting a run and
    reading one are tracking errors naming the URL, not "no such run"."""
    url = f"http://127.0.0.1:{free_port()}"
    run_id = "0" * 32
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    try:
        mlflow.set_tracking_uri(url)
        with pytest.raises(TrackingError) as error, mlflow_run():
            pytest.fail("a run started on a server that is down")
        assert str(error.value).startswith(f"could not log to MLflow at {url}: ")
        with pytest.raises(TrackingError, match=f"could not read run '{run_id}' at {url}"):
            load_results(run_id)
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(None)
