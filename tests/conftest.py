"""Shared fixtures: a private MLflow store per test, and a real tracking server on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
BIN = str(Path(sys.executable).parent)


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


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` on 127.0.0.1 at a free port, stopped after the test."""
    port = free_port()
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            os.path.join(BIN, "mlflow"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--backend-store-uri",
            f"sqlite:///{tmp_path}/server.db",
            "--artifacts-destination",
            str(tmp_path / "server-artifacts"),
            "--workers",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        # Job execution starts eight more processes and doubles the start-up time.
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/health", process=process)
        yield url
    finally:
        stop(process)
        log.close()
