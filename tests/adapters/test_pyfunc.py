"""The pyfunc model: predict, log and load back, serve over HTTP, and the log-model command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.pyfunc import PythonModelContext

from numdiff_component import (
    InputError,
    NumericDiffModel,
    OptionError,
    Options,
    score,
    score_frame,
)
from numdiff_component.adapters.pyfunc import SIGNATURE, log_numeric_diff_model, model_config
from numdiff_component.options import OPTION_NAMES
from numdiff_component.scoring import RESULT_COLUMNS as OUTPUT_COLUMNS
from numdiff_component.scoring import SPAN_COLUMNS
from tests.fixtures.commands import invoke, numdiff_process, one_line_error
from tests.fixtures.servers import free_port, stop

MLFLOW = str(Path(sys.executable).with_name("mlflow"))
TABLE = pd.DataFrame(
    {
        "output": ["0.0302", "It is 41.", "x=-3", "twelve", None, "1.234,5"],
        "expected": ["0.03024", "42", "-3", "12", "5", "1234.5"],
    }
)


pytestmark = pytest.mark.usefixtures("tracking_uri")


def _core(frame: pd.DataFrame, **options: object) -> pd.DataFrame:
    """score_frame's result columns, with None where there is no number (strict JSON)."""
    results = score_frame(frame, options=Options.of(None, **options))[list(OUTPUT_COLUMNS)]
    for name in ("output_value", "expected_value", "abs_error", *SPAN_COLUMNS):
        results[name] = results[name].astype(object).where(results[name].notna(), None)
    return results


# --- the model in process -----------------------------------------------------------------------


def test_predict_gives_the_result_columns_of_score_frame() -> None:
    predicted = NumericDiffModel(Options(threshold=0.9)).predict(None, TABLE)
    assert list(predicted.columns) == list(OUTPUT_COLUMNS)
    assert set(OUTPUT_COLUMNS) == set(SIGNATURE.outputs.input_names())
    pd.testing.assert_frame_equal(predicted, _core(TABLE, threshold=0.9))


def test_predict_ignores_other_columns_and_the_index() -> None:
    frame = TABLE.assign(id=range(len(TABLE))).set_axis(range(100, 100 + len(TABLE)))
    pd.testing.assert_frame_equal(NumericDiffModel().predict(None, frame), _core(TABLE))


def test_predict_names_the_missing_column() -> None:
    message = "output column 'output' not found; the columns are: 'out', 'expected'"
    with pytest.raises(InputError, match=message):
        NumericDiffModel().predict(None, pd.DataFrame({"out": ["1"], "expected": ["1"]}))


def test_predict_holds_each_row_to_its_threshold() -> None:
    """SPEC §3.2: a row passes when its score is at least its own threshold, NaN meaning the
    threshold option; the labels other than pass and fail stay."""
    limits = [1.0, 0.99, None, 0.0, 0.5, 0.0]
    frame = TABLE.assign(tol=limits)
    predicted = NumericDiffModel(Options(threshold=0.9), threshold_col="tol").predict(None, frame)
    assert list(predicted.columns) == [*OUTPUT_COLUMNS, "row_threshold"]
    held = [0.9 if limit is None else limit for limit in limits]
    assert predicted["row_threshold"].tolist() == held
    core = _core(TABLE, threshold=0.9)
    compared = core["label"].isin(["pass", "fail"])
    passed = compared & (core["score"] >= held)
    assert predicted["passed"].tolist() == passed.tolist()
    want = core["label"].where(~compared, passed.map({True: "pass", False: "fail"}))
    assert predicted["label"].tolist() == want.tolist()
    assert predicted["passed"].tolist() != core["passed"].tolist()  # the thresholds count
    bad = frame.assign(tol=[0.5, 2.0, 0.5, 0.5, 0.5, 0.5])
    with pytest.raises(InputError, match=r"^row 2 of column 'tol': threshold 2.0 is not a number"):
        NumericDiffModel(threshold_col="tol").predict(None, bad)
    with pytest.raises(InputError, match=r"^threshold column 'tol' not found"):
        NumericDiffModel(threshold_col="tol").predict(None, TABLE)


def test_load_context_reads_the_options_from_the_model_config() -> None:
    model = NumericDiffModel()
    model.load_context(PythonModelContext(artifacts={}, model_config={"decimal_comma": True}))
    assert model.options == Options(decimal_comma=True)
    pd.testing.assert_frame_equal(model.predict(None, TABLE), _core(TABLE, decimal_comma=True))
    with pytest.raises(OptionError, match="unknown option 'cutoff'"):
        model.load_context(PythonModelContext(artifacts={}, model_config={"cutoff": 0.5}))


def test_model_config_holds_every_option_and_a_preset_resolves_when_loaded() -> None:
    """Every key is in the config (MLflow overrides only keys it holds); those not given are
    None, so that a preset given when loading fills them as it would have when logging."""
    config = model_config(Options(preset="answers", pick="last", threshold=0.9))
    assert list(config) == list(OPTION_NAMES)
    assert {k: v for k, v in config.items() if v is not None} == {
        "preset": "answers",
        "pick": "last",
        "threshold": 0.9,
    }
    model = NumericDiffModel()
    model.load_context(PythonModelContext(artifacts={}, model_config=config))
    assert model.options == Options(preset="answers", pick="last", threshold=0.9)
    override = {**config, "preset": "prose"}  # as load_model(..., model_config=) merges it
    model.load_context(PythonModelContext(artifacts={}, model_config=override))
    assert model.options == Options(preset="prose", pick="last", threshold=0.9)


# --- logged, loaded, served ---------------------------------------------------------------------


@pytest.fixture
def logged() -> mlflow.models.model.ModelInfo:
    with mlflow.start_run():
        return log_numeric_diff_model(name="nd", threshold=0.9, decimal_comma=True)


@pytest.mark.slow
def test_logged_model_loads_back_and_predicts(logged: mlflow.models.model.ModelInfo) -> None:
    assert logged.signature == SIGNATURE
    assert logged.model_uri.startswith("models:/")
    for uri in (logged.model_uri, f"runs:/{logged.run_id}/nd"):
        loaded = mlflow.pyfunc.load_model(uri)
        assert loaded.model_config == model_config(Options(threshold=0.9, decimal_comma=True))
        pd.testing.assert_frame_equal(
            loaded.predict(TABLE), _core(TABLE, threshold=0.9, decimal_comma=True)
        )
    overridden = mlflow.pyfunc.load_model(logged.model_uri, model_config={"threshold": 0.5})
    pd.testing.assert_frame_equal(
        overridden.predict(TABLE), _core(TABLE, threshold=0.5, decimal_comma=True)
    )


@pytest.mark.slow
def test_logged_model_carries_its_own_code(logged: mlflow.models.model.ModelInfo) -> None:
    """A fresh process loads numdiff_component from the model's code/ folder, not site-packages."""
    local = Path(mlflow.artifacts.download_artifacts(logged.model_uri))
    assert not list(local.rglob("*.pkl"))  # logged from code: nothing pickled
    assert "model_code_path" in (local / "MLmodel").read_text()
    requirements = (local / "requirements.txt").read_text().split()
    names = [r.split("==")[0] for r in requirements]
    assert names == ["mlflow", "pandas", "numpy", "pyarrow", "pint"]
    script = (
        "import mlflow, sys, pandas as pd\n"
        "m = mlflow.pyfunc.load_model(sys.argv[1])\n"
        "import numdiff_component\n"
        "print(numdiff_component.__file__)\n"
        "print(m.predict(pd.DataFrame({'output': ['3,5'], 'expected': ['3.5']}))['score'][0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(local)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    module_file, value = done.stdout.split()
    assert Path(module_file).is_relative_to(local / "code" / "numdiff_component")
    assert float(value) == score("3,5", "3.5", decimal_comma=True).score  # 3.5 against 3


def _post(url: str, payload: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()

    def not_json(token: str) -> None:
        raise AssertionError(f"the answer holds {token}, which is not JSON: {body[:300]!r}")

    return json.loads(body, parse_constant=not_json)


def _wait_until_up(server: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    """Wait (two minutes at most) until this server, not another one, answers on ``port``."""
    banner = f"running on http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"mlflow models serve exited with {server.returncode}:\n{_tail(log_path)}"
            )
        if banner in log_path.read_text(errors="replace"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
        time.sleep(0.5)
    raise AssertionError(f"mlflow models serve did not come up in time:\n{_tail(log_path)}")


def _tail(log_path: Path) -> str:
    return log_path.read_text(errors="replace")[-3000:]


@pytest.mark.slow
def test_served_model_answers_over_http(
    logged: mlflow.models.model.ModelInfo, tmp_path: Path
) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    serve = f"models serve -m runs:/{logged.run_id}/nd -h 127.0.0.1 -p {port} --env-manager local"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [MLFLOW, *serve.split()],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # The server execs `uvicorn`, which lives next to this interpreter.
            env={**os.environ, "PATH": path},
        )
    try:
        _wait_until_up(server, port, log_path)
        frame = TABLE.astype(object).where(TABLE.notna(), None)
        payload = {
            "dataframe_split": {"columns": list(frame.columns), "data": frame.values.tolist()}
        }
        try:
            answer = _post(f"http://127.0.0.1:{port}/invocations", payload)
        except urllib.error.URLError as exc:
            raise AssertionError(f"POST /invocations failed: {exc}\n{_tail(log_path)}") from exc
    finally:
        stop(server)
    assert answer["predictions"][3]["output_value"] is None  # "twelve": null, not NaN
    served = pd.DataFrame(answer["predictions"])  # null read back as NaN
    options = Options(threshold=0.9, decimal_comma=True)
    expected = score_frame(TABLE, options=options)[list(OUTPUT_COLUMNS)]
    pd.testing.assert_frame_equal(served[list(OUTPUT_COLUMNS)], expected, check_dtype=False)


# --- the log-model command ----------------------------------------------------------------------


@pytest.mark.slow
def test_log_model_command_prints_a_uri_that_loads() -> None:
    # In a process of its own (tests/test_readme.py shows the console script acts as this).
    args = "--name gate --threshold 0.5 --pick last --experiment-name nd-models --run-name lm"
    args += " --threshold-col tol"
    result = numdiff_process("log-model", *args.split(), timeout=180)
    assert result.returncode == 0, result.stderr
    assert "pickle" not in result.stderr.lower()
    uri = result.stdout.strip()
    assert uri.startswith("models:/")
    loaded = mlflow.pyfunc.load_model(uri)
    assert loaded.model_config["threshold"] == 0.5
    assert loaded.model_config["pick"] == "last"
    assert loaded.model_config["threshold_col"] == "tol"
    assert "tol" in loaded.metadata.get_input_schema().input_names()
    frame = TABLE.assign(tol=[1.0, None, 1.0, 1.0, 1.0, 1.0])  # the signature's doubles
    want = NumericDiffModel(Options(threshold=0.5, pick="last"), "tol").predict(None, frame)
    pd.testing.assert_frame_equal(loaded.predict(frame), want)
    run = mlflow.get_run(loaded.metadata.run_id)
    assert run.info.run_name == "lm"
    assert mlflow.get_experiment(run.info.experiment_id).name == "nd-models"
    assert run.info.status == "FINISHED"


def test_log_model_command_refuses_a_bad_option() -> None:
    result = invoke("log-model", "--percent", "half")
    one_line_error(result, 2, "percent must be one of 'keep', 'fraction', got 'half'")
    assert mlflow.search_runs(search_all_experiments=True).empty
