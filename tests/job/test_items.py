"""Samples per item in the job (SPEC §3.3): batches kept in bucket files equal the reference,
whether grouped at once or bucket by bucket; the command's metrics, summary and errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from mlflow import MlflowClient

from numdiff_component import Options, score_frame
from numdiff_component.errors import InputError
from numdiff_component.job.items import MOSTLY_DISTINCT, ItemSamples, item_aggregates
from numdiff_component.job.run import run_job
from numdiff_component.task.config import JobConfig, Scoring
from tests.fixtures.commands import invoke
from tests.fixtures.samples import items_table, reference_aggregates, reference_items
from tests.fixtures.tables import write_table

KS = (1, 3, 8)
ANSWERS = Options(preset="answers")


@pytest.mark.parametrize("one_group_rows", [10**6, 0])  # all at once; a bucket at a time
@pytest.mark.parametrize("written_rows", [10**6, 1])  # written at the end; after each batch
def test_buckets_equal_the_reference(
    one_group_rows: int, written_rows: int, tmp_path: Path
) -> None:
    results = score_frame(items_table(), options=ANSWERS)
    samples = ItemSamples(
        "item",
        KS,
        ANSWERS,
        one_group_rows=one_group_rows,
        beside=tmp_path,
        written_rows=written_rows,
    )
    for batch in np.array_split(np.arange(len(results)), 7):
        samples.add(results.iloc[batch])
    samples.write(tmp_path / "items.parquet")
    got = pd.read_parquet(tmp_path / "items.parquet")
    want = reference_items(results, KS)
    if one_group_rows == 0:  # buckets: each item once, in no set order
        got = got.sort_values("first_row", ignore_index=True)
    pd.testing.assert_frame_equal(got.drop(columns="mean_at_k"), want.drop(columns="mean_at_k"))
    assert got["mean_at_k"].tolist() == pytest.approx(want["mean_at_k"].tolist(), rel=1e-15)
    totals = item_aggregates(tmp_path / "items.parquet", "item", KS).aggregates()
    assert totals == pytest.approx(reference_aggregates(want, KS), rel=1e-12, nan_ok=True)
    # The bucket files were beside it, and are gone with the partial file.
    assert list(tmp_path.iterdir()) == [tmp_path / "items.parquet"]
    # Mostly distinct columns have no dictionary; the others have one.
    group = pq.ParquetFile(tmp_path / "items.parquet").metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    coded = {column.path_in_schema for column in columns if column.has_dictionary_page}
    assert set(MOSTLY_DISTINCT) < set(got.columns)
    bits = {name for name in got.columns if got[name].dtype == bool}  # Parquet packs them
    assert coded == set(got.columns) - {"item", *MOSTLY_DISTINCT} - bits


def test_an_error_in_a_bucket_grouped_beside_stops_the_write_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Buckets grouped two at a time, in two threads: an item with two expected numbers is the
    error, whichever thread grouped it, and neither bucket nor partial file stays."""
    results = score_frame(items_table(), options=ANSWERS)
    broken = results["item"] == results["item"].iloc[-1]
    results.loc[broken.to_numpy().nonzero()[0][-1], "expected_value"] = -1.0
    samples = ItemSamples("item", KS, ANSWERS, one_group_rows=0, beside=tmp_path)
    samples.add(results)
    with pytest.raises(InputError, match="has samples with different expected numbers"):
        samples.write(tmp_path / "items.parquet")
    assert list(tmp_path.iterdir()) == []


def test_job_in_batches_logs_the_item_metrics(tmp_path: Path, tracking_uri: str) -> None:
    table = items_table()
    source = write_table(table, tmp_path / "samples.csv")
    scoring = Scoring(options=ANSWERS, item_col="item", k=KS)
    config = JobConfig(predictions=str(source), scoring=scoring, results_dir=str(tmp_path / "r"))
    outcome = run_job(JobConfig(**{**config.__dict__, "batch_rows": 17}))
    want = reference_aggregates(reference_items(score_frame(table, options=ANSWERS), KS), KS)
    assert outcome.evaluation.aggregates == pytest.approx(
        outcome.evaluation.aggregates | want, rel=1e-12, nan_ok=True
    )
    run = MlflowClient().get_run(outcome.run_id)
    logged = {k.removeprefix("numeric_diff/"): v for k, v in run.data.metrics.items()}
    assert logged == pytest.approx(logged | {k: v for k, v in want.items() if v == v}, rel=1e-12)
    assert "pass_at_8" in logged and (run.data.params["item_col"], run.data.params["k"]) == (
        "item",
        "1,3,8",
    )
    assert "Samples per item: 60 items; mean@k" in run.data.tags["mlflow.note.content"]
    artifacts = [a.path for a in MlflowClient().list_artifacts(outcome.run_id, "numeric_diff")]
    assert "numeric_diff/items.parquet" in artifacts


def test_cli_summary_and_errors(tmp_path: Path, tracking_uri: str) -> None:
    table = pd.DataFrame(
        {"q": ["a", "b", "a", "a"], "output": ["1,000", "7", "1000", "1e3"], "expected": "1000"}
    )
    source = write_table(table, tmp_path / "t.csv")
    done = invoke("score", str(source), "--item-col", "q", "--k", "1,2", "--preset", "answers")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^  maj@k +0\.5000 ", done.stdout, re.M)  # a: 1000 passes; b: 7 fails
    assert re.search(r"^  items +2$", done.stdout, re.M)
    assert "note: pass_at_2 leaves out 1 item with fewer than 2 samples (first: 'b')" in done.stdout
    for args, message in [
        (("--k", "1,0"), "k must be integers >= 1 separated by commas, got '1,0'"),
        (("--item-col", "nope"), "item column 'nope' not found; the columns are: 'q', 'output'"),
    ]:
        failed = invoke("score", str(source), "--item-col", "q", *args, "--no-plots")
        assert failed.returncode == 2 and failed.stderr.count("\n") == 1, failed.stderr
        assert message in failed.stderr
    table.loc[3, "expected"] = "999"
    write_table(table, source)
    failed = invoke("score", str(source), "--item-col", "q", "--no-plots")
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1
    assert "item 'a' has samples with different expected numbers (1000 and 999)" in failed.stderr
