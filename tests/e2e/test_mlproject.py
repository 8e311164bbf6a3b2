"""The MLflow project: parameters match the CLI, and real ``mlflow run`` / server round trips."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import click
import pandas as pd
import pytest
import yaml
from mlflow import MlflowClient
from mlflow.entities import Run

from numdiff_component import AGGREGATE_NAMES, aggregate
from numdiff_component.cli.main import score
from numdiff_component.inputs.sources import sample_path
from numdiff_component.options import PRESET_OPTIONS, SCHEMA, OptionSpec
from tests.fixtures.commands import as_user, invoke, one_line_error, user_env
from tests.fixtures.samples import items_table, reference_aggregates, reference_items

ROOT = Path(__file__).resolve().parents[2]
MLPROJECT = yaml.safe_load((ROOT / "MLproject").read_text())
PARAMETERS = MLPROJECT["entry_points"]["main"]["parameters"]
HEADLINE = ["mean_score", "pass_rate", "mae", "mean_score_stderr", "n_rows", "n_unparseable"]


COMMAND = MLPROJECT["entry_points"]["main"]["command"]
NOT_OPTIONS = {
    "predictions",
    "output_col",
    "expected_col",
    "id_col",
    "by",
    "threshold_col",
    "fail_under",
    "run_name",
    "baseline",
    "fail_if_worse",
    "item_col",
    "k",
}


def _cli_params() -> dict[str, click.Parameter]:
    return {p.name: p for p in score.params if p.name}


def test_entry_point_parameters_are_the_options_and_the_cli_arguments() -> None:
    assert set(PARAMETERS) == {spec.name for spec in SCHEMA} | NOT_OPTIONS
    assert set(PARAMETERS) <= set(_cli_params())
    for name in ("output_col", "expected_col"):
        assert PARAMETERS[name]["default"] == _cli_params()[name].default == name.split("_")[0]
    assert float(PARAMETERS["fail_under"]["default"]) == _cli_params()["fail_under"].default
    assert PARAMETERS["fail_if_worse"]["default"] == "false"
    assert not _cli_params()["fail_if_worse"].default
    for name in NOT_OPTIONS - {"predictions"}:
        flag = "--" + name.replace("_", "-")
        separator = "=" if name == "fail_if_worse" else " "  # true|false, as a switch takes it
        assert f"{flag}{separator}{{{name}}}" in COMMAND, name


def test_predictions_come_last_and_default_to_the_sample_by_name() -> None:
    """After "--", an input that looks like an option is read as one (and refused), never as an
    option; "" is refused too: the sample is named, not what an empty value means."""
    assert PARAMETERS["predictions"] == {"type": "string", "default": "sample"}
    assert COMMAND.endswith(" -- {predictions}")
    assert PARAMETERS["run_name"] == {"type": "string", "default": ""}


@pytest.mark.parametrize("spec", SCHEMA, ids=lambda spec: spec.name)
def test_every_scoring_option_is_an_entry_point_parameter(spec: OptionSpec) -> None:
    parameter = PARAMETERS[spec.name]
    if spec.kind is float:
        assert parameter["type"] == "float"
        assert float(parameter["default"]) == spec.default
    elif spec.name in PRESET_OPTIONS:  # "": not given, the preset's value or the default
        assert parameter == {"type": "string", "default": ""}
    else:  # MLproject has no boolean type: a bool is the text the CLI reads
        assert parameter["type"] == "string"
        assert str(parameter["default"]) == str(spec.default).lower()
        if spec.choices and spec.kind is str:
            assert parameter["default"] in spec.choices
    flag = "--" + (spec.flag or spec.name).replace("_", "-")  # a list option's flag: singular
    separator = "=" if spec.kind is bool else " "  # --flag=true|false: a plain flag otherwise
    assert f"{flag}{separator}{{{spec.name}}}" in COMMAND


def test_conda_env_lists_the_same_dependencies_as_pyproject() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    conda = yaml.safe_load((ROOT / "conda.yaml").read_text())
    pip = next(d["pip"] for d in conda["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(deps)


def test_every_folder_of_the_package_is_installed() -> None:
    """setuptools installs only the packages pyproject.toml lists: a folder left out (modules,
    the sample table, the report's templates) is missing from a user's install, though an
    editable install (a developer's) still finds it."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    package = ROOT / "numdiff_component"
    folders = {
        ".".join(folder.relative_to(ROOT).parts)
        for folder in [package, *package.rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__"
    }
    assert sorted(listed) == sorted(folders)


def _mlflow_run(
    *params: str,
    project: Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``mlflow run PROJECT --env-manager local ARGS -P PARAMS`` in ``cwd``, with ``env`` (this
    process's unless given) as a user has it (`user_env`: its ``mlflow`` is the fork server's)."""
    env = user_env(os.environ if env is None else env)
    command = (
        str(shutil.which("mlflow", path=env["PATH"])),
        "run",
        str(project),
        "--env-manager",
        "local",
        *args,
    )
    for param in params:
        command += ("-P", param)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _project_run(*params: str, project: Path, run_name: str | None = None) -> str | None:
    """What ``mlflow run PROJECT --env-manager local -P ...`` does, called in this process
    (`mlflow.projects.run`, which the command calls; the step still runs in a process of its
    own): the run's id, or ``None`` when the step failed (the command would exit 1). Saves
    importing the ``mlflow`` command's modules, seconds a test; the tests that check the
    command itself (its exit code, its output), or that the guide cites for it, start it."""
    import mlflow.projects
    from mlflow.exceptions import ExecutionException

    parameters = dict(param.split("=", 1) for param in params)
    try:
        with as_user():
            submitted = mlflow.projects.run(
                str(project), parameters=parameters, env_manager="local", run_name=run_name
            )
    except ExecutionException:
        return None
    return str(submitted.run_id)


def _run_id(output: str) -> str:
    return next(line.split()[1] for line in output.splitlines() if line.split()[:1] == ["run"])


def _check_run(run_id: str, n_rows: int, dataset_name: str) -> pd.DataFrame:
    client = MlflowClient()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    for name in HEADLINE:
        assert f"numeric_diff/{name}" in run.data.metrics
    assert run.data.metrics["numeric_diff/n_rows"] == n_rows
    assert run.data.params["threshold"] == "0.99"
    (dataset_input,) = run.inputs.dataset_inputs
    assert dataset_input.dataset.name == dataset_name
    assert [t.value for t in dataset_input.tags if t.key == "mlflow.data.context"] == ["evaluation"]
    folder = client.download_artifacts(run_id, "numeric_diff")
    results = pd.read_parquet(os.path.join(folder, "results.parquet"))
    table = pd.read_json(os.path.join(folder, "results.json"), orient="split")
    assert len(results) == len(table) == n_rows
    return results


@pytest.mark.slow
def test_mlflow_run_with_no_parameters_scores_the_sample(
    tracking_uri: str, mlflow_project: Path
) -> None:
    # From a folder that is not the project's (tmp_path); README.md's first console block
    # starts the command itself and checks what it prints.
    run_id = _project_run(project=mlflow_project)
    assert run_id is not None
    sample = pd.read_csv(sample_path(), dtype=str, keep_default_na=False)
    results = _check_run(run_id, len(sample), "numdiff_sample")
    assert list(results["id"]) == list(sample["id"])
    # Every aggregate under the keys the evaluate metric and the genai scorer log them
    # (tests/adapters/test_evaluate.py), with the values of the core on the same rows.
    want = {f"numeric_diff/{k}": v for k, v in aggregate(results).items() if not math.isnan(v)}
    assert set(want) == {f"numeric_diff/{name}" for name in AGGREGATE_NAMES}
    metrics = MlflowClient().get_run(run_id).data.metrics
    assert {k: v for k, v in metrics.items() if k in want} == pytest.approx(want, rel=1e-12)
    # Nobody named the run: it is named from its input, not with a made-up name.
    assert MlflowClient().get_run(run_id).info.run_name == "numdiff sample.csv"


@pytest.mark.slow
def test_mlflow_run_with_extra_markers_and_scale_words(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """SPEC v4's list options as the MLproject takes them: comma-separated texts."""
    table = tmp_path / "answers.csv"
    texts = ["Result: 5 lakh of 9", "Final answer: 2 crore", "\u7b54\u6848\uff1a12 \u6216 13"]
    pd.DataFrame({"output": texts, "expected": [5e5, 2e7, 12]}).to_csv(table, index=False)
    run_id = _project_run(
        f"predictions={table}",
        "pick=answer",
        "scale=words",
        "markers=Result,Final answer,\u7b54\u6848",
        "scale_words=lakh=1e5,crore=1e7",
        project=mlflow_project,
    )
    assert run_id is not None
    run = MlflowClient().get_run(run_id)
    assert run.data.metrics["numeric_diff/pass_rate"] == 1.0
    assert run.data.params["resolved/markers"] == "Result,Final answer,\u7b54\u6848"
    assert run.data.params["resolved/scale_words"] == "lakh=100000.0,crore=10000000.0"


@pytest.mark.slow
def test_mlflow_run_reads_an_earlier_steps_artifact(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    import mlflow

    table = pd.DataFrame(
        {
            "qid": ["a", "b", "c"],
            "answer": ["The total is 1,234.", "-7", "n/a"],
            "truth": ["1234", "7", "1"],
        }
    )
    path = tmp_path / "predictions.parquet"
    table.to_parquet(path)
    with mlflow.start_run() as upstream:
        mlflow.log_artifact(str(path), artifact_path="preds")
    uri = f"runs:/{upstream.info.run_id}/preds/predictions.parquet"
    proc = _mlflow_run(
        f"predictions={uri}",
        "output_col=answer",
        "expected_col=truth",
        "id_col=qid",
        project=mlflow_project,
        cwd=tmp_path,
    )  # the command, as README.md and docs/pipeline.md show it
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = _check_run(_run_id(proc.stdout), 3, "predictions")
    assert list(results["label"]) == ["pass", "fail", "unparseable"]
    assert MlflowClient().get_run(_run_id(proc.stdout)).data.params["id_col"] == "qid"


@pytest.mark.slow
def test_cli_logs_to_a_real_tracking_server(mlflow_server: str, tmp_path: Path) -> None:
    proc = invoke(
        "score",
        "--experiment-name",
        "over-http",
        "--results-dir",
        str(tmp_path / "res"),
        env={"MLFLOW_TRACKING_URI": mlflow_server},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(mlflow_server)
    run_id = _run_id(proc.stdout)
    run = client.get_run(run_id)
    assert client.get_experiment(run.info.experiment_id).name == "over-http"
    assert run.data.metrics["numeric_diff/pass_rate"] == pytest.approx(
        (pd.read_parquet(tmp_path / "res" / "results.parquet")["passed"]).mean()
    )
    artifacts = {f.path for f in client.list_artifacts(run_id, "numeric_diff")}
    assert {"numeric_diff/results.parquet", "numeric_diff/results.json"} <= artifacts


def _only_run() -> Run:
    """The one run of the test's experiment (the tracking_uri fixture's)."""
    (run,) = MlflowClient().search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])
    return run


@pytest.mark.slow
def test_mlflow_run_tags_why_a_step_failed(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """Under mlflow run every failure exits 1 (the command's exit code: the relative-store test
    below): the run's tags tell bad input from the gate."""
    assert _project_run(f"predictions={tmp_path / 'missing.csv'}", project=mlflow_project) is None
    run = _only_run()
    assert run.info.status == "FAILED"
    tags = run.data.tags
    assert "predictions file not found" in tags["numeric_diff.error"]
    assert tags["numeric_diff.exit_code"] == "2" and "numeric_diff.gate" not in tags


@pytest.mark.slow
def test_mlflow_run_tags_a_failed_gate(tracking_uri: str, mlflow_project: Path) -> None:
    assert _project_run("fail_under=0.99", project=mlflow_project, run_name="gate check") is None
    run = _only_run()
    assert run.info.status == "FAILED"
    assert run.info.run_name == "gate check"  # named by the user: kept
    assert run.data.tags["numeric_diff.gate"] == "failed"
    assert "numeric_diff.error" not in run.data.tags
    assert run.data.metrics["numeric_diff/pass_rate"] < 0.99


@pytest.mark.slow
def test_mlflow_run_with_a_relative_store_fails_at_once(
    tmp_path: Path, mlflow_project: Path
) -> None:
    """A relative sqlite URI names another store in the project folder: refused, nothing left."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_EXPERIMENT")}
    env["MLFLOW_TRACKING_URI"] = "sqlite:///mlflow.db"
    proc = _mlflow_run(project=mlflow_project, cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "is a relative path, which under `mlflow run` names another store" in proc.stderr
    assert not (mlflow_project / "mlflow.db").exists()  # nothing left in the project folder
    (run,) = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").search_runs(["0"])
    assert run.info.status == "FAILED"  # the caller's store holds the failed run


@pytest.mark.slow
def test_mlflow_run_with_a_preset_reads_a_relative_path_from_the_callers_folder(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """`-P predictions=data/x.csv` names a file of the folder `mlflow run` is started in (as a
    parameter of type path does), though the step runs in the project folder."""
    (tmp_path / "data").mkdir()
    shutil.copy(ROOT / "examples" / "math_answers.csv", tmp_path / "data" / "math_answers.csv")
    run_id = _project_run(
        "predictions=data/math_answers.csv",
        "preset=answers",
        "id_col=id",
        "run_name=cot",
        project=mlflow_project,
    )  # from tmp_path: the tracking_uri fixture's working folder
    assert run_id is not None
    expected = pd.read_csv(tmp_path / "data" / "math_answers.csv")
    results = _check_run(run_id, len(expected), "math_answers")
    # The preset reads the final answer (pick="answer"), in words too (m10's "eight").
    assert list(results["output_value"]) == list(expected["expected"].astype(float))
    run = MlflowClient().get_run(run_id)
    assert run.info.run_name == "cot"
    assert run.data.params["preset"] == "answers"  # as `mlflow run` logged it
    assert run.data.tags["numeric_diff.input"] == str(tmp_path / "data" / "math_answers.csv")


def _step_in_process(*params: str, project: Path) -> subprocess.CompletedProcess[str]:
    """The step ``mlflow run PROJECT -P ...`` starts, in this process: the entry point's command
    as MLflow makes it from the parameters, run by `invoke` under a run of the test's
    experiment (``MLFLOW_RUN_ID``, as ``mlflow run`` sets it), from the project folder."""
    import shlex

    from mlflow.projects._project_spec import load_project

    parameters = dict(param.split("=", 1) for param in params)
    command = load_project(str(project)).get_entry_point("main").compute_command(parameters, None)
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "numdiff_component"], command
    run = MlflowClient().create_run(os.environ["MLFLOW_EXPERIMENT_ID"])
    with _working_folder(project):
        return invoke(*argv[3:], env={"MLFLOW_RUN_ID": run.info.run_id})


@contextlib.contextmanager
def _working_folder(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.mark.parametrize(
    ("param", "error"),
    [
        ("decimal_comma=maybe", "decimal_comma must be True or False, got 'maybe'"),
        ("fail_under=abc", "'abc' is not a valid float"),
        ("predictions=", "PREDICTIONS is empty"),
        ("predictions=--results-dir=/x", "looks like an option"),
    ],
)
def test_mlflow_run_with_a_bad_value_is_a_tagged_failure(
    tracking_uri: str, mlflow_project: Path, param: str, error: str
) -> None:
    """Values click refuses and inputs that are not inputs fail the step (exit 2) with the tags
    the README's table promises, like any bad input; nothing is scored. The step runs in this
    process (the MLproject's command as MLflow makes it): that ``mlflow run`` turns a step's
    failure into a FAILED run with these tags is test_mlflow_run_tags_why_a_step_failed's."""
    done = _step_in_process(param, project=mlflow_project)
    assert done.returncode == 2, done.stderr
    run = _only_run()
    assert error in run.data.tags["numeric_diff.error"], run.data.tags
    assert run.data.tags["numeric_diff.exit_code"] == "2"
    assert not run.data.metrics


@pytest.mark.slow
def test_a_step_with_a_baseline_fails_when_worse_and_passes_when_not(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """``-P baseline= -P fail_if_worse=true`` under ``mlflow run``: a candidate with 7 of the
    sample's passing answers broken (p = 2/2**7) fails the step with the gate's tag; one with 1
    regression and 2 improvements passes (the same step run in this process). Then compare
    names the runs by name, and refuses a name two runs have."""
    client = MlflowClient()
    baseline = invoke("score", "--id-col", "id", "--run-name", "baseline", "-q")
    assert baseline.returncode == 0, baseline.stderr
    sample = pd.read_csv(sample_path(), dtype=str, keep_default_na=False)
    worse = tmp_path / "worse.csv"
    sample.assign(output=sample["output"].where(~sample.index.isin(range(1, 9)), "?")).to_csv(
        worse, index=False
    )
    gate = ("id_col=id", "baseline=baseline", "fail_if_worse=true")
    assert _project_run(f"predictions={worse}", *gate, project=mlflow_project) is None
    candidate = str(mlflow_project / "examples" / "candidate.csv")
    # The same step that passes, in this process (the MLproject's plumbing is checked above).
    passed = invoke("score", candidate, "--id-col=id", "--baseline=baseline", "--fail-if-worse")
    assert passed.returncode == 0, passed.stderr
    assert "No significant difference from the baseline 'baseline (run " in passed.stdout
    runs = {r.info.run_name: r for r in client.search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])}
    failed, better = runs["numdiff worse.csv"], runs["numdiff candidate.csv"]
    assert (failed.info.status, failed.data.tags["numeric_diff.gate"]) == ("FAILED", "failed")
    figures = failed.data.metrics
    assert (
        figures["numeric_diff/vs_baseline/n_regressed"],
        figures["numeric_diff/vs_baseline/n_improved"],
    ) == (7, 0)
    assert figures["numeric_diff/vs_baseline/mcnemar_p"] == pytest.approx(2 / 2**7)
    assert figures["numeric_diff/vs_baseline/pass_rate_delta"] == pytest.approx(-7 / 36)
    assert figures["numeric_diff/vs_baseline/pass_rate_delta_ci_high"] < 0
    description = failed.data.tags["mlflow.note.content"]
    assert "Worse than the baseline" in description and "--fail-if-worse failed." in description
    assert (better.info.status, better.data.tags["numeric_diff.gate"]) == ("FINISHED", "passed")
    assert better.data.metrics["numeric_diff/vs_baseline/n_shared"] == 36
    assert "No significant difference from" in better.data.tags["mlflow.note.content"]

    done = invoke("compare", "baseline", "numdiff candidate.csv")
    assert done.returncode == 0, done.stderr
    assert f"A  baseline (run {runs['baseline'].info.run_id})" in done.stdout
    assert "pass_rate" in done.stdout and "(Newcombe's paired score interval)" in done.stdout
    one_line_error(invoke("score", "--baseline", "nobody", "-q"), 2, "no run named 'nobody'")
    assert invoke("score", "--id-col", "id", "--run-name", "baseline", "-q").returncode == 0
    one_line_error(
        invoke("compare", "baseline", "numdiff candidate.csv"),
        2,
        "run name 'baseline' is ambiguous: 2 runs have it: ",
        runs["baseline"].info.run_id,
        "(experiment 'tests', started ",
    )
    assert len(client.search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])) == 4  # none by "nobody"


@pytest.mark.slow
def test_mlflow_run_with_groups_and_row_thresholds_logs_what_the_cli_logs(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """SPEC §3.1, §3.2 through the MLproject: `-P by="a,b"`, the same metrics as the CLI."""
    from tests.fixtures.tables import sliced_table, write_table

    table = write_table(sliced_table(), tmp_path / "sliced.csv")
    given = ("id_col=id", "by=category,level", "threshold_col=tol")
    run_id = _project_run(f"predictions={table}", *given, project=mlflow_project)
    assert run_id is not None
    done = invoke("score", str(table), "--id-col", "id", "--by", "category,level",
                  "--threshold-col", "tol", "--no-plots", "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    client = MlflowClient()
    (cli_run,) = [r for r in client.search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])
                  if r.info.run_id != run_id]  # fmt: skip
    project = client.get_run(run_id).data
    by = {k: v for k, v in project.metrics.items() if k.startswith("numeric_diff/by/")}
    assert "numeric_diff/by/category/_empty/pass_rate" in by  # a CSV: null is written ""
    assert "numeric_diff/by/category/a_2Fb/n" in by and "numeric_diff/by/level/n_groups" in by
    assert by == {k: v for k, v in cli_run.data.metrics.items() if k in by}
    assert set(cli_run.data.metrics) == set(project.metrics)
    assert project.params["by"] == "category,level" and project.params["threshold_col"] == "tol"
    folder = client.download_artifacts(run_id, "numeric_diff")
    assert len(pd.read_json(os.path.join(folder, "groups.json"), orient="split")) == len(
        pd.read_parquet(os.path.join(folder, "groups.parquet"))
    )


def test_mlflow_run_with_items_logs_the_item_metrics(
    tracking_uri: str, tmp_path: Path, mlflow_project: Path
) -> None:
    """``-P item_col=item -P k=1,5``: the item metrics of SPEC §3.3, as the reference gives them,
    and ``items.parquet`` among the run's artifacts."""
    from numdiff_component import score_frame

    table = items_table()
    table.to_csv(tmp_path / "samples.csv", index=False)
    run_id = _project_run(
        f"predictions={tmp_path / 'samples.csv'}",
        "preset=answers",
        "item_col=item",
        "k=1,5",
        project=mlflow_project,
    )
    assert run_id is not None
    results = score_frame(table, preset="answers")
    want = reference_aggregates(reference_items(results, (1, 5)), (1, 5))
    want = {f"numeric_diff/{k}": v for k, v in want.items() if not math.isnan(v)}
    metrics = MlflowClient().get_run(run_id).data.metrics
    assert {k: v for k, v in metrics.items() if k in want} == pytest.approx(want, rel=1e-12)
    assert set(want) <= set(metrics)
    folder = MlflowClient().download_artifacts(run_id, "numeric_diff")
    assert len(pd.read_parquet(os.path.join(folder, "items.parquet"))) == table["item"].nunique()
