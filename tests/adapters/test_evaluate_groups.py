"""The evaluate metric with groups and thresholds per row (SPEC §3.1, §3.2): the same metrics
as ``numdiff score`` on the same table, through a real ``mlflow.models.evaluate``."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient

from numdiff_component import make_numeric_diff_metric
from numdiff_component.errors import OptionError
from tests.fixtures.commands import invoke
from tests.fixtures.tables import sliced_table, write_table


@pytest.mark.slow
def test_evaluate_metric_logs_what_the_cli_logs(tracking_uri: str, tmp_path: Path) -> None:
    table = sliced_table()
    path = write_table(table, tmp_path / "sliced.parquet")
    done = invoke("score", str(path), "--by", "category,level", "--threshold-col", "tol",
                  "--no-plots", "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (cli_run,) = MlflowClient().search_runs([mlflow.get_experiment_by_name("tests").experiment_id])
    metric = make_numeric_diff_metric(by=["category", "level"], threshold_col="tol")
    with mlflow.start_run() as run:
        mlflow.models.evaluate(
            data=table,
            predictions="output",
            targets="expected",
            model_type=None,
            extra_metrics=[metric],
        )
    got = MlflowClient().get_run(run.info.run_id).data.metrics
    want = {k: v for k, v in cli_run.data.metrics.items() if k.startswith("numeric_diff/")}
    want.pop("numeric_diff/pass_rate_stderr")  # the CLI's own (SPEC §5), not an aggregate
    assert "numeric_diff/by/category/_null/pass_rate" in want
    assert {k: got[k] for k in want} == pytest.approx(want, rel=1e-12)


def test_evaluate_metric_columns_must_be_python_names() -> None:
    with pytest.raises(OptionError, match="'sub task'"):
        make_numeric_diff_metric(by="sub task")
    with pytest.raises(OptionError, match="'targets'"):
        make_numeric_diff_metric(threshold_col="targets")


@pytest.mark.slow
def test_evaluator_config_maps_a_column_that_is_no_python_name(tracking_uri: str) -> None:
    """MLflow's ``col_mapping`` hands the parameter ``task`` the column ``sub task``."""
    import pandas as pd

    data = pd.DataFrame(
        {"sub task": ["a", "a", "b"], "output": ["1", "2", "3"], "expected": ["1", "1", "3"]}
    )
    with mlflow.start_run():
        result = mlflow.models.evaluate(
            data=data,
            predictions="output",
            targets="expected",
            model_type=None,
            extra_metrics=[make_numeric_diff_metric(by="task")],
            evaluator_config={"col_mapping": {"task": "sub task"}},
        )
    assert result.metrics["numeric_diff/by/task/a/pass_rate"] == 0.5
    assert result.metrics["numeric_diff/by/task/b/pass_rate"] == 1.0
