"""The scoring job: streaming in batches equals scoring whole, and results are kept locally."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from numdiff_component import Options, aggregate, score_frame
from numdiff_component.job.run import run_job
from numdiff_component.report.render import markdown, text
from numdiff_component.task.config import DEFAULT_BATCH_ROWS, JobConfig, Scoring
from tests.fixtures.commands import numdiff_process
from tests.fixtures.tables import write_table

ROOT = Path(__file__).resolve().parents[2]

rng = np.random.default_rng(7)
N = 503
TABLE = pd.DataFrame(
    {
        "id": [f"r{i}" for i in range(N)],
        "output": [
            rng.choice([f"{x:.4g}", f"about {x:,.2f} units", "n/a", f"x=-{x:.3e}"])
            for x in rng.normal(100, 50, N)
        ],
        "expected": [f"{x:.5g}" for x in rng.normal(100, 50, N)],
    }
)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_streaming_equals_scoring_whole(suffix: str, tmp_path: Path) -> None:
    source = str(write_table(TABLE, tmp_path / f"t{suffix}", row_group_size=50))
    options = Options(pick="last", threshold=0.9)
    seen: list[int] = []
    outcome = run_job(
        JobConfig(
            predictions=source,
            scoring=Scoring(options=options),
            results_dir=str(tmp_path / "res"),
            track=False,
            plots=False,
            batch_rows=37,
        ),
        progress=seen.append,
    )
    whole = score_frame(TABLE, options=options)
    streamed = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert len(seen) >= 3 and seen[-1] == N and seen == sorted(seen)  # it did stream
    pd.testing.assert_frame_equal(streamed, whole, check_dtype=False)
    assert outcome.evaluation.aggregates == pytest.approx(aggregate(whole), rel=1e-12)
    assert not list((tmp_path / "res").glob(".*partial"))


def test_jsonl_whose_column_changes_type_is_read_whole(tmp_path: Path) -> None:
    rows = [{"output": 1, "expected": "1"}] * 40 + [{"output": "about 2", "expected": "2"}] * 3
    source = str(write_table(pd.DataFrame(rows), tmp_path / "t.jsonl"))
    folder = str(tmp_path)
    run_job(JobConfig(source, results_dir=folder, track=False, plots=False, batch_rows=10))
    out = pd.read_parquet(tmp_path / "results.parquet")
    assert len(out) == 43 and out["passed"].all()


@pytest.mark.slow
def test_a_job_of_two_batches_with_a_report_is_logged_whole(
    tmp_path: Path, tracking_uri: str
) -> None:
    """From its second batch on, a job imports MLflow in a thread; the report's child is forked
    once that import is done (a child forked mid-import could wait for ever on a module lock).
    A process of its own: MLflow is imported in this one already."""
    n = DEFAULT_BATCH_ROWS + 1
    source = tmp_path / "two.csv"
    pd.DataFrame({"output": np.arange(n).astype(str), "expected": np.arange(n)}).to_csv(
        source, index=False
    )
    done = numdiff_process("score", str(source), "-q", "--results-dir", str(tmp_path / "res"))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    (run,) = MlflowClient().search_runs(
        [MlflowClient().get_experiment_by_name("tests").experiment_id]
    )
    assert run.data.metrics["numeric_diff/pass_rate"] == 1.0
    assert len(pd.read_parquet(tmp_path / "res" / "results.parquet")) == n
    logged = {f.path for f in MlflowClient().list_artifacts(run.info.run_id)}
    assert {"score_histogram.png", "numeric_diff"} <= logged


@pytest.mark.slow
def test_large_table_skips_the_json_copy_but_keeps_every_row(
    tmp_path: Path, tracking_uri: str
) -> None:
    n = 100_001
    pd.DataFrame({"output": np.arange(n).astype(str), "expected": np.arange(n)}).to_csv(
        tmp_path / "big.csv", index=False
    )
    outcome = run_job(
        JobConfig(predictions=str(tmp_path / "big.csv"), results_dir=str(tmp_path / "res"))
    )
    assert outcome.run_id is not None
    client = MlflowClient()
    names = {f.path for f in client.list_artifacts(outcome.run_id, "numeric_diff")}
    assert "numeric_diff/results.parquet" in names and "numeric_diff/results.json" not in names
    assert "numeric_diff/summary.md" in names
    assert (
        len(
            pd.read_parquet(
                client.download_artifacts(outcome.run_id, "numeric_diff/results.parquet")
            )
        )
        == n
    )
    assert client.get_run(outcome.run_id).data.metrics["numeric_diff/pass_rate"] == 1.0
    (dataset,) = client.get_run(outcome.run_id).inputs.dataset_inputs
    assert dataset.dataset.name == "big"


def test_a_run_explains_itself_in_the_ui(tmp_path: Path, tracking_uri: str) -> None:
    source = str(write_table(TABLE, tmp_path / "preds.csv"))
    config = JobConfig(
        predictions=source, scoring=Scoring(id_col="id"), results_dir=str(tmp_path), fail_under=0.5
    )
    outcome = run_job(config)
    assert outcome.run_id is not None
    client = MlflowClient()
    run = client.get_run(outcome.run_id)
    agg = outcome.evaluation.aggregates
    n_passed = round(agg["pass_rate"] * N)
    description = run.data.tags["mlflow.note.content"]
    low, high = agg["mean_score_ci_low"], agg["mean_score_ci_high"]
    assert f"Mean score {agg['mean_score']:.4f} [{low:.4f}, {high:.4f}]" in description
    assert f"no answer in {agg['no_answer_rate']:.1%} of the outputs" in description
    assert f"passed {n_passed} of {N} rows" in description and markdown(source) in description
    assert run.data.tags["numeric_diff.input"] == source  # absolute, as given here
    assert run.data.tags["numeric_diff.engine"] == "pandas"
    assert run.data.tags["numeric_diff.gate"] == ("passed" if agg["pass_rate"] >= 0.5 else "failed")
    assert run.info.run_name == "numdiff preds.csv"
    assert run.data.params["predictions"] == source
    assert run.data.params["decimal_comma"] == "false"  # as the MLproject spells it
    rate = agg["pass_rate"]
    assert run.data.metrics["numeric_diff/pass_rate_stderr"] == pytest.approx(
        (rate * (1 - rate) / (N - 1)) ** 0.5
    )
    # The compare page lists root artifacts only; the chart view shows images logged with a key.
    root = {f.path for f in client.list_artifacts(outcome.run_id)}
    assert {"score_histogram.png", "output_vs_expected.png"} <= root
    assert client.list_artifacts(outcome.run_id, "images")
    local = client.download_artifacts(outcome.run_id, "numeric_diff/results.json", str(tmp_path))
    columns = pd.read_json(local, orient="split").columns.tolist()
    assert columns[:5] == ["id", "label", "score", "output_value", "expected_value"]


def test_a_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_table(TABLE, tmp_path / "preds.csv")
    monkeypatch.chdir(tmp_path)
    config = JobConfig(predictions="preds.csv", results_dir="out", track=False)
    assert run_job(config).evaluation.source == str(tmp_path / "preds.csv")


def test_results_file_records_its_id_column(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    source = str(write_table(TABLE, tmp_path / "preds.csv"))
    run_job(
        JobConfig(
            predictions=source, scoring=Scoring(id_col="id"), results_dir=str(tmp_path), track=False
        )
    )
    metadata = pq.read_schema(tmp_path / "results.parquet").metadata
    assert metadata[b"numeric_diff/id_col"] == b"id"
    assert metadata[b"numeric_diff/threshold"] == b"0.99"  # the options, as the run params


@pytest.mark.parametrize("preset", ["none", "answers"])
def test_a_note_names_the_preset_that_would_read_the_answers(
    preset: str, tmp_path: Path, tracking_uri: str
) -> None:
    source = str(ROOT / "examples" / "math_answers.csv")
    options = Options(preset=preset)
    config = JobConfig(
        predictions=source, scoring=Scoring(options=options), results_dir=str(tmp_path)
    )
    outcome = run_job(config)
    note = "--preset answers (-P preset=answers) would pass "
    summary = (tmp_path / "summary.md").read_text()
    description = MlflowClient().get_run(str(outcome.run_id)).data.tags["mlflow.note.content"]
    if preset == "none":  # the first number of each chain of thought: every row fails
        said, *others = outcome.evaluation.notes
        assert (
            said.startswith(note) and "of the 10 failing rows (pass rate 0.0000 -> 1.0000)" in said
        )
        # The preset passes all 10: no single option (--pick last passes 7) is worth a line.
        assert not any(other.startswith("--") for other in others)
        assert "--preset answers" in summary and markdown(note) in description  # escaped
    else:  # reading the final answer: nothing to say
        assert not any(said.startswith("--preset") for said in outcome.evaluation.notes)
        assert "--preset" not in summary + description


def test_each_plot_is_stored_once_where_the_ui_shows_it(tmp_path: Path, tracking_uri: str) -> None:
    """At the artifact root (the compare-runs page lists only those) and as a keyed image (the
    chart view of compared runs); no third copy. Params: each value once, no prefix."""
    source = str(write_table(TABLE, tmp_path / "preds.csv"))
    outcome = run_job(JobConfig(predictions=source, results_dir=str(tmp_path / "res")))
    client = MlflowClient()
    run_id = str(outcome.run_id)
    root = {f.path for f in client.list_artifacts(run_id)}
    assert {"score_histogram.png", "output_vs_expected.png"} <= root
    inside = {f.path for f in client.list_artifacts(run_id, "numeric_diff")}
    assert not {p for p in inside if p.endswith(".png")}
    images = [f.path for f in client.list_artifacts(run_id, "images")]
    assert len([p for p in images if p.endswith(".png")]) == 2  # one per key
    params = client.get_run(run_id).data.params
    assert params["predictions"] == source and params["threshold"] == "0.99"
    assert not [k for k in params if k.startswith("numeric_diff/")]


# The temporary results folder of a job given no --results-dir, each in a real process (TMPDIR is
# read once per process): gone once the run is logged,
# tests/cli/test_cli.py::test_quiet_prints_only_where_a_temporary_results_folder_is; kept and
# named when logging failed, tests/cli/test_cli.py::test_entry_point_exit_3_is_tracking_unreachable.


def test_the_run_description_shows_a_hostile_file_name_as_text(
    tmp_path: Path, tracking_uri: str
) -> None:
    """A backtick in the input's name must not end a code span and turn the rest into a link,
    an image, a heading or HTML (issue 16.15)."""
    name = "a`b](javascript:x) ![i](javascript:y)\n# PASSED <b>x.csv"  # no "/" in a name
    source = str(write_table(TABLE, tmp_path / name))
    outcome = run_job(JobConfig(predictions=source, results_dir=str(tmp_path / "res")))
    description = MlflowClient().get_run(str(outcome.run_id)).data.tags["mlflow.note.content"]
    (line,) = [line for line in description.splitlines() if line.startswith("Input: ")]
    assert line == f"Input: {markdown(text(source, None))}"  # one line, as summary.md shows it
    assert not re.search(r"(?<!\\)[`\[\]()<>!]", line.removeprefix("Input: "))
    assert not [x for x in description.splitlines() if x.startswith("#")]
