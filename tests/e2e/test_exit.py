"""The end of a command (issue 33): whatever happens to its standard output or to the tracking
server, the exit code and its one line tell the truth, and a run that logged everything is
FINISHED. Real processes with a closed pipe or a closed stdout, a real ``mlflow server`` on
127.0.0.1, and a proxy in front of it that refuses (or never answers) one request."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.commands import numdiff_process, one_line_error
from tests.fixtures.servers import refusing_proxy

GUARD = 60  # seconds: a hang guard for each process, never a measure of speed
LOG_BATCH = "/runs/log-batch"


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "t.csv"
    source.write_text("id,output,expected\na,1,1\nb,2,3\n")
    return source


def _store(where: str, tracking_uri: str, server: str) -> tuple[str, str]:
    """The tracking URI for ``where`` (the test's sqlite store or the real server), and an
    experiment of the test's own on it."""
    return (tracking_uri if where == "sqlite" else server), f"exit-{uuid.uuid4().hex}"


def _only_run(uri: str, experiment: str) -> object:
    """The one run of ``experiment`` at ``uri``."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, "no run was started"
    (run,) = client.search_runs([found.experiment_id])
    return run


def _run(args: list[str], env: dict[str, str], **how: Any) -> subprocess.CompletedProcess[str]:
    """``numdiff score ARGS`` as a process of its own, its output as ``how`` says
    (``stdout=``...)."""
    return numdiff_process("score", *args, env=env, timeout=GUARD, **how)


@pytest.mark.parametrize("where", ["sqlite", "http"])
def test_a_closed_pipe_on_stdout_is_exit_2_and_the_run_finished(
    where: str, tracking_uri: str, mlflow_server: str, tmp_path: Path
) -> None:
    """``numdiff score t.csv | true`` (and ``| head -1`` once head has gone): the summary
    cannot be written. Exit 2 and one line, not click's silent exit 1 (the gate's code) nor
    exit 3 from MLflow's "View run" line written into the pipe before the run was ended."""
    uri, experiment = _store(where, tracking_uri, mlflow_server)
    read, write = os.pipe()
    os.close(read)  # nobody reads: every write is EPIPE
    try:
        args = [str(_source(tmp_path)), "--no-plots", "--experiment-name", experiment]
        done = _run(args, {"MLFLOW_TRACKING_URI": uri}, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    done.stdout = ""
    one_line_error(done, 2, "cannot write the output: Broken pipe")
    run = _only_run(uri, experiment)
    assert run.info.status == "FINISHED"  # type: ignore[attr-defined]
    assert run.data.metrics["numeric_diff/n_rows"] == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("args", [["--help"], ["score", "--help"], ["--version"]])
def test_help_into_a_closed_pipe_is_exit_2(args: list[str]) -> None:
    """``numdiff --help | true``: click's own output too, not only a command's."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = numdiff_process(*args, stdout=write, timeout=GUARD)
    finally:
        os.close(write)
    done.stdout = ""
    one_line_error(done, 2, "cannot write the output: Broken pipe")


@pytest.mark.parametrize(
    ("quiet", "where"), [(False, "sqlite"), (True, "http")], ids=["summary-sqlite", "quiet-http"]
)
def test_a_closed_stdout_is_told_and_the_run_finished(
    where: str, quiet: bool, tracking_uri: str, mlflow_server: str, tmp_path: Path
) -> None:
    """``numdiff score t.csv >&-`` (as cron and some supervisors start jobs): the summary is
    lost, which exit 2 and one line say; with ``-q`` and a results folder nothing is to be
    printed: exit 0, silently. The run is FINISHED either way, and no file the job opens takes
    the closed descriptor (the results file would receive the summary): neither the sqlite
    store's nor a tracking server's sockets (one each, not every pair: the store does not
    change what is printed)."""
    uri, experiment = _store(where, tracking_uri, mlflow_server)
    results = tmp_path / "res"
    args = [str(_source(tmp_path)), "--experiment-name", experiment, "--results-dir", str(results)]
    done = _run(
        args + (["-q"] if quiet else []),
        {"MLFLOW_TRACKING_URI": uri},
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),
    )
    if quiet:
        assert (done.returncode, done.stderr) == (0, "")
    else:
        done.stdout = ""
        one_line_error(done, 2, "cannot write the output: Bad file descriptor")
    assert _only_run(uri, experiment).info.status == "FINISHED"  # type: ignore[attr-defined]
    import pandas as pd

    assert list(pd.read_parquet(results / "results.parquet")["id"]) == ["a", "b"]


def test_a_closed_stderr_changes_no_exit_code(tracking_uri: str, tmp_path: Path) -> None:
    done = _run(
        [str(tmp_path / "nope.csv")],
        {},
        stdout=subprocess.PIPE,
        preexec_fn=lambda: os.close(2),
    )
    assert (done.returncode, done.stdout) == (2, "")


def _score_async(
    url: str, experiment: str, tmp_path: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """``numdiff score`` logging to ``url`` with MLflow's async logging switched on."""
    return numdiff_process(
        "score",
        str(_source(tmp_path)),
        "--no-plots",
        "--experiment-name",
        experiment,
        "--results-dir",
        str(tmp_path / "res"),
        env={"MLFLOW_TRACKING_URI": url, "MLFLOW_ENABLE_ASYNC_LOGGING": "true", **env},
        timeout=GUARD,
    )


def test_async_logging_refused_by_the_server_is_exit_3_and_the_run_failed(
    mlflow_server: str, tmp_path: Path
) -> None:
    """``MLFLOW_ENABLE_ASYNC_LOGGING=true`` and a server that answers 500 to log-batch: numdiff
    logs synchronously whatever that setting says, so the failure is seen: exit 3, and the run
    is FAILED, never FINISHED and empty with exit 0."""
    experiment = f"exit-{uuid.uuid4().hex}"
    with refusing_proxy(mlflow_server, LOG_BATCH, 500) as url:
        done = _score_async(url, experiment, tmp_path, MLFLOW_HTTP_REQUEST_MAX_RETRIES="0")
    one_line_error(done, 3, f"could not log to MLflow at {url}", "the complete results are in")
    assert _only_run(mlflow_server, experiment).info.status == "FAILED"  # type: ignore[attr-defined]


def test_async_logging_to_a_server_that_never_answers_ends_with_its_one_line(
    mlflow_server: str, tmp_path: Path
) -> None:
    """The same with a server that never answers log-batch: the deadline (3 s) ends the job with
    exit 3 and one line, and nothing after it: no MLflow exit handler waits on the server for a
    minute, nor marks FINISHED a run whose logging failed (it stays RUNNING, as with a server
    that is gone). ``GUARD`` is the hang guard."""
    experiment = f"exit-{uuid.uuid4().hex}"
    with refusing_proxy(mlflow_server, LOG_BATCH, None) as url:
        done = _score_async(url, experiment, tmp_path, NUMDIFF_TRACKING_TIMEOUT="3")
    one_line_error(done, 3, f"could not log to MLflow at {url}", "no answer within 3 s")
    assert _only_run(mlflow_server, experiment).info.status == "RUNNING"  # type: ignore[attr-defined]
