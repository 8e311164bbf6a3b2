"""Shared fixtures: a private MLflow store per test, and a real tracking server on loopback."""

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


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


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
            kill_group(process)  # workers left behind by the server process, if any


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
