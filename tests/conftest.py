"""Shared test helpers: a private MLflow store per test, a real tracking server on loopback,
the ``numdiff`` command in process and as a real process, table writers, and the SPEC's example
table. Test modules import the plain helpers from here (``from tests.conftest import ...``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import strategies as st

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
BIN = str(Path(sys.executable).parent)
BOUND = 120  # seconds: no numdiff process started by a test may take longer


@pytest.fixture(scope="session")
def _empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised sqlite store, made once: creating MLflow's tables takes seconds."""
    path = tmp_path_factory.mktemp("store") / "mlflow.db"
    from mlflow import MlflowClient

    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _empty_store: Path
) -> Iterator[str]:
    """A sqlite tracking store of the test's own, for this process and its children."""
    monkeypatch.chdir(tmp_path)  # anything MLflow puts in the working folder stays in the test's
    shutil.copy(_empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    from mlflow import MlflowClient

    # The copied store's Default experiment keeps its artifacts where the template was made:
    # each test logs to an experiment of its own with artifacts in its own folder.
    experiment = MlflowClient(uri).create_experiment(
        "tests", artifact_location=str(tmp_path / "artifacts")
    )
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    import mlflow

    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_http(url: str, timeout: float = 90.0, process: subprocess.Popen | None = None) -> None:
    """Poll ``url`` until it answers 200; fail when ``process`` dies or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"no answer from {url} within {timeout} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop ``process`` and, when it leads a session of its own (``start_new_session``), every
    process in it: SIGTERM, then SIGKILL for whatever is left after 20 seconds."""
    leads_group = _leads_group(process)
    if leads_group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
    else:
        process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)
    if leads_group:
        kill_group(process)  # workers left behind (uvicorn, gunicorn), if any


def _leads_group(process: subprocess.Popen[bytes]) -> bool:
    try:
        return os.getpgid(process.pid) == process.pid
    except ProcessLookupError:  # already gone (and reaped)
        return False


@contextlib.contextmanager
def tracking_server(
    store: Path, artifacts: Path, log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mlflow server`` on a free loopback port over the sqlite ``store``; always stopped."""
    port = free_port()
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                os.path.join(BIN, "mlflow"),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--backend-store-uri",
                f"sqlite:///{store}",
                "--artifacts-destination",
                str(artifacts),
                "--workers",
                "1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # No job execution: it starts eight helper processes and doubles the start-up time.
            env={
                **os.environ,
                "MLFLOW_DISABLE_TELEMETRY": "true",
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            },
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for_http(f"{url}/health", process=process)
            yield url, process
        finally:
            stop(process)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the session the server was started in (its own id), as a crash would."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` on 127.0.0.1 at a free port, stopped after the test."""
    with tracking_server(
        tmp_path / "server.db", tmp_path / "server-artifacts", tmp_path / "server.log"
    ) as (url, _):
        yield url


# --- the numdiff command --------------------------------------------------------------------------

MODULE = (sys.executable, "-m", "numdiff_component")
"""The real entry point, as ``mlflow run`` and a pipeline start it."""
SCRIPT = (os.path.join(BIN, "numdiff"),)
"""The console script that ``pip install`` makes."""


def invoke(
    *args: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``numdiff ARGS`` in this process through click's `CliRunner`: its exit code, stdout and
    stderr (kept apart), as a `subprocess.CompletedProcess` like `numdiff_process` gives.

    Exceptions other than the exit go through; what the command sets in ``os.environ`` (the
    HTTP retry defaults, ``--quiet``'s) is undone afterwards.
    """
    from click.testing import CliRunner

    from numdiff_component.cli import cli

    saved = dict(os.environ)
    try:
        result = CliRunner().invoke(
            cli, list(args), env={"NUMDIFF_TRACEBACK": None, **(env or {})}, catch_exceptions=False
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(
        ["numdiff", *args], result.exit_code, result.stdout, result.stderr
    )


def numdiff_process(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
    command: Sequence[str] = MODULE,
    timeout: float = BOUND,
) -> subprocess.CompletedProcess[str]:
    """``numdiff ARGS`` as a real process (``python -m numdiff_component`` unless ``command``
    says otherwise), within ``timeout`` seconds; ``env`` is added to this process's."""
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
        cwd=cwd,
        env={**os.environ, "NUMDIFF_TRACEBACK": "", **(env or {})},
    )


def one_line_error(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """The single ``numdiff: error:`` line of a failed command, checked for ``fragments``."""
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numdiff: error: "), done.stderr
    assert "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# --- tables ---------------------------------------------------------------------------------------

TABLE_FORMATS = ("csv", "parquet", "json", "jsonl")


def write_table(frame: pd.DataFrame, path: Path, *, row_group_size: int | None = None) -> Path:
    """Write ``frame`` in the format its suffix names (csv, parquet, json records, jsonl)."""
    fmt = path.suffix.lstrip(".")
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False, row_group_size=row_group_size)
    elif fmt in ("json", "jsonl"):
        frame.to_json(path, orient="records", lines=fmt == "jsonl")
    else:
        raise ValueError(f"no table writer for {path.name!r}; formats: {TABLE_FORMATS}")
    return path


def write_file(path: Path, content: str | bytes) -> Path:
    """Write ``content`` as it is (text as UTF-8): for files that are not clean tables."""
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# The examples of SPEC.md §1-§2 as one table: (id, output, expected, score, label).
SPEC_ROWS = [
    ("seed", "0.0302", "0.03024", 1 - 0.00004, "pass"),  # the seed's worked example
    ("sign", "x=-3", "-3", 1.0, "pass"),
    ("hyphen", "COVID-19", "19", 1.0, "pass"),
    ("grouping", "$1,234.50", "1234.5", 1.0, "pass"),
    ("near", "99", "100", 0.99, "pass"),
    ("off", "98", "100", 0.98, "fail"),
    ("opposite", "-5", "5", 0.0, "fail"),
    ("words", "twelve", "12", 0.0, "unparseable"),
    ("not finite", "1e999", "1", 0.0, "unparseable"),
]


def spec_table() -> pd.DataFrame:
    """A new frame of `SPEC_ROWS`: columns ``id``, ``output``, ``expected`` (text)."""
    ids, outputs, expected, _, _ = zip(*SPEC_ROWS, strict=True)
    return pd.DataFrame({"id": ids, "output": outputs, "expected": expected})


# Every example of SPEC.md §1.1 as written there: (value, options, number read). Every entry point
# reads them alike (tests/test_parse.py, tests/test_entry_points.py, tests/test_spark.py).
SPEC_READINGS: list[tuple[str, dict[str, Any], float | None]] = [
    ("50\\%", {"percent": "fraction"}, 0.5),
    ("... 48/2 = 24 clips\n#### 72", {"pick": "answer"}, 72.0),
    ("So the answer is 18.", {"pick": "answer"}, 18.0),
    ("The answer is $\\boxed{9}$ \\pmod{11}", {"pick": "answer"}, 9.0),
    ("Step 1: 3+4=7. Step 2: 7*2=14", {"pick": "answer"}, 14.0),
    ("The answer is eight", {"pick": "answer"}, None),
    ("answers: 3 and 4", {"pick": "answer"}, 4.0),
    ("$2.1 billion", {"scale": "words"}, 2.1e9),
    ("12k people", {"scale": "words"}, 12000.0),
    ("$2.174T", {"scale": "words"}, 2.174e12),
    ("5 Million", {"scale": "words"}, 5e6),
    ("10 km", {"scale": "words"}, 10.0),
    ("3 millions", {"scale": "words"}, 3.0),
    ("PTE 120 000 000", {"thousands": "any"}, 1.2e8),
    ("CHF 1'049.95", {"thousands": "any"}, 1049.95),
    ("$14{,}916$", {"thousands": "any"}, 14916.0),
    ("1 234 5678", {"thousands": "any"}, 1234.0),
    ("3/4", {"fractions": True}, 0.75),
    ("-3/4", {"fractions": True}, -0.75),
    ("\\boxed{\\frac{1}{2}}", {"pick": "answer", "fractions": True}, 0.5),
    ("12/05/2023", {"fractions": True}, 12.0),
    ("1/0", {"fractions": True}, 1.0),
]


# Every option that changes how a number is read, as hypothesis draws it.
READING_STRATEGIES = {
    "decimal_comma": st.booleans(),
    "pick": st.sampled_from(["first", "last", "answer"]),
    "percent": st.sampled_from(["keep", "fraction"]),
    "scale": st.sampled_from(["none", "words"]),
    "thousands": st.sampled_from(["comma", "any"]),
    "fractions": st.booleans(),
}
