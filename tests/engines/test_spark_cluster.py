"""The Spark engine on real clusters on 127.0.0.1, whose workers do not have the package.

One Spark Connect server (pyspark's ``sbin/start-connect-server.sh``) and one standalone cluster
(a master and a worker, ``bin/spark-class``) for the whole session, started by the fixtures
below and killed at the end, also on failure. The workers run a Python that has pyarrow,
pandas, numpy and pyspark but not ``numdiff_component``: the job ships its own code. Each job
runs as a user runs it (``numdiff score``, ``spark-submit``), in its own process, and its
results equal the pandas engine's cell for cell.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from numdiff_component.job.run import run_job
from numdiff_component.options import Options
from numdiff_component.scoring import SPAN_COLUMNS
from numdiff_component.task.config import JobConfig, Scoring
from tests.fixtures.run import TEST_JVM_OPTIONS

pyspark = pytest.importorskip("pyspark", reason="needs the spark extra", exc_type=ImportError)
pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")

pytestmark = pytest.mark.slow

SPARK_HOME = Path(pyspark.__file__).parent
START_S = 180  # a JVM starting on a loaded two-core machine
WORKER_PACKAGES = ("pyarrow", "pandas", "numpy", "numpy.libs", "dateutil", "pytz", "tzdata")
WORKER_PACKAGES += ("six.py", "pyspark", "py4j")  # Spark's own, on every cluster
READINGS = ("--pick", "answer", "--scale", "words")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(ready: Any, what: str, procs: list[subprocess.Popen[bytes]], log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if ready():
            return
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"{what} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    pytest.fail(f"{what} not ready within {START_S} s: {log.read_text()[-2000:]}")


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill each process group we started (a daemon script's JVM is in its group)."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(20)


@pytest.fixture(scope="session")
def worker_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with pyarrow, pandas, numpy and pyspark, and without numdiff_component: a
    venv whose site-packages link only those packages of this one."""
    import site

    root = tmp_path_factory.mktemp("workers") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    ours = Path(site.getsitepackages()[0])
    theirs = next((root / "lib").glob("python3*/site-packages"))
    for name in WORKER_PACKAGES:
        if (ours / name).exists():
            (theirs / name).symlink_to(ours / name)
    python = str(root / "bin" / "python")
    check = "import pyarrow, pandas, numpy, pyspark; import numdiff_component"
    probe = subprocess.run([python, "-c", check], cwd=root, capture_output=True, text=True)
    assert "No module named 'numdiff_component'" in probe.stderr, probe.stderr
    return python


def jvm_settings(folder: Path) -> dict[str, str]:
    """Settings that start every JVM of a cluster or a job with `TEST_JVM_OPTIONS`:
    a driver or Spark Connect server (``SPARK_SUBMIT_OPTS``), a master or worker
    (``SPARK_DAEMON_JAVA_OPTS``), and the executors a standalone worker starts for an
    application (``spark-defaults.conf`` in ``SPARK_CONF_DIR``, read by every spark-submit)."""
    conf = folder / "spark-conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.executor.extraJavaOptions {TEST_JVM_OPTIONS}\n"
    )
    return {
        "SPARK_CONF_DIR": str(conf),
        "SPARK_SUBMIT_OPTS": TEST_JVM_OPTIONS,
        "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_OPTIONS,
    }


def spark_env(tmp: Path, worker_python: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        **jvm_settings(tmp),
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_PID_DIR=str(tmp / "pids"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        PYSPARK_PYTHON=worker_python,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@pytest.fixture(scope="session")
def connect_server(
    tmp_path_factory: pytest.TempPathFactory, worker_python: str
) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """A Spark Connect server (local[2]) whose workers run ``worker_python``, started: its
    process, port and log. Not waited for: its JVM starts while the standalone cluster's jobs
    run (`master` starts it too)."""
    tmp = tmp_path_factory.mktemp("connect")
    port = free_port()
    log = tmp / "server.log"
    command = [
        str(SPARK_HOME / "sbin" / "start-connect-server.sh"),
        "--wait",
        "--master",
        "local[2]",
        *("--conf", "spark.connect.grpc.binding.address=127.0.0.1"),
        *("--conf", f"spark.connect.grpc.binding.port={port}"),
        *("--conf", "spark.driver.host=127.0.0.1"),
        *("--conf", "spark.driver.bindAddress=127.0.0.1"),
        *("--conf", "spark.ui.enabled=false"),
        *("--conf", "spark.sql.shuffle.partitions=2"),
    ]
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command,
            cwd=tmp,  # the server resolves relative paths here, not where the client runs
            env=spark_env(tmp, worker_python),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield server, port, log
    finally:
        stop([server])


@pytest.fixture(scope="session")
def connect_url(connect_server: tuple[subprocess.Popen[bytes], int, Path]) -> str:
    """``sc://127.0.0.1:PORT`` of `connect_server`, once it listens."""
    server, port, log = connect_server
    wait_until(lambda: listening(port), "Spark Connect server", [server], log)
    return f"sc://127.0.0.1:{port}"


def master_state(ui: int) -> dict[str, Any]:
    """The standalone master's state (its web UI's JSON)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as page:
        return dict(json.load(page))


@pytest.fixture(scope="session")
def master(
    tmp_path_factory: pytest.TempPathFactory,
    worker_python: str,
    connect_server: tuple[subprocess.Popen[bytes], int, Path],
) -> Iterator[tuple[str, int]]:
    """``spark://127.0.0.1:PORT`` and its web UI's port: a standalone master and one worker
    (the Spark Connect server starts meanwhile)."""
    tmp = tmp_path_factory.mktemp("standalone")
    env = spark_env(tmp, worker_python)
    port, ui = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    log = tmp / "cluster.log"
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> None:
        with open(log, "ab") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class, *args],
                    cwd=tmp,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def workers_alive() -> bool:
        try:
            return int(master_state(ui).get("aliveworkers", 0)) >= 1
        except (OSError, ValueError):  # not up yet, or a page cut short while it starts
            return False

    try:
        start_args = ("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui))
        start("org.apache.spark.deploy.master.Master", *start_args)
        wait_until(lambda: listening(port), "standalone master", procs, log)
        worker_ui = str(free_port())
        start(
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--cores", "2", "--memory", "2g"),
            *("--webui-port", worker_ui, "--work-dir", str(tmp / "work"), url),
        )
        wait_until(workers_alive, "standalone worker", procs, log)
        yield url, ui
    finally:
        stop(procs)


# --- running jobs as a user runs them ----------------------------------------------------------


def table() -> pd.DataFrame:
    """Prose of the kinds the readings are for, empty cells, and an id; 4,000 rows."""
    outputs = [
        "The answer is $1,234.50.",
        "x=-3",
        "Between 3 and 4, final answer 4",
        "about 2.5 million",
        "",
        "twelve",
        "12%",
        "1e5",
        "3,14",
        "Answer: 1.2 billion",
    ]
    expected = ["1234.5", "-3", "4", "2500000", "1", "", "12", "100000", "3.14", "1.2e9"]
    rows = 4_000
    return pd.DataFrame(
        {
            "id": [str(i) for i in range(rows)],
            "output": [outputs[i % len(outputs)] for i in range(rows)],
            "expected": [expected[(i // 3) % len(expected)] for i in range(rows)],
            "note": ["" if i % 7 else "seven" for i in range(rows)],
        }
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's folder: the table is given to every job by its relative name."""
    folder = tmp_path_factory.mktemp("user")
    table().to_csv(folder / "preds.csv", index=False)
    return folder


def numdiff(
    workdir: Path, *args: str, env: dict[str, str] | None = None, submit: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``numdiff score preds.csv ...`` run in ``workdir`` to its end (killed after ten
    minutes); through ``spark-submit`` to ``submit`` when given."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    base.update(MLFLOW_DISABLE_TELEMETRY="true", NUMDIFF_TRACKING_TIMEOUT="120")
    base.update(jvm_settings(workdir))
    base.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{workdir}/mlflow.db")
    command = [sys.executable, "-m", "numdiff_component", "score", "preds.csv", *args]
    if submit is not None:
        import numdiff_component

        main = str(Path(numdiff_component.__file__).parent / "__main__.py")
        submitting = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", submit]
        command = [*submitting, main, *command[3:]]
        base.update(PYSPARK_DRIVER_PYTHON=sys.executable)
    base.update(env or {})
    return subprocess.run(
        command, cwd=workdir, env=base, capture_output=True, text=True, timeout=600
    )


def results(folder: Path) -> pd.DataFrame:
    """The results file; the span positions as nullable integers (pandas keeps that type in the
    file's metadata, which Spark does not write)."""
    positions = [name for name in SPAN_COLUMNS if not name.endswith("_rule")]
    return pd.read_parquet(folder / "results.parquet").astype(dict.fromkeys(positions, "Int64"))


def assert_one_line(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.startswith("numdiff: error")]
    assert result.returncode == code, result.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope="module")
def pandas_results(workdir: Path) -> dict[tuple[str, ...], pd.DataFrame]:
    """The pandas engine's results, with defaults and with opt-in readings (`READINGS`)."""
    found = {}
    for options in (Options(), Options(pick="answer", scale="words")):
        out = workdir / f"pandas-{options.pick}"
        config = JobConfig(
            str(workdir / "preds.csv"), scoring=Scoring(options=options), results_dir=str(out)
        )
        run_job(replace(config, track=False, plots=False))
        found[() if options == Options() else READINGS] = results(out)
    return found


def run_ok(workdir: Path, name: str, *args: str, **kwargs: Any) -> Path:
    done = numdiff(workdir, "--engine", "spark", "--results-dir", name, *args, **kwargs)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir / name


def run_id(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.split()[:1] == ["run"]]
    return line.split()[1]


def test_standalone_cluster_equals_pandas(
    master: tuple[str, int],
    worker_python: str,
    workdir: Path,
    pandas_results: dict[tuple[str, ...], pd.DataFrame],
) -> None:
    """Through spark-submit: the pandas engine's results, and the job's application shows in
    the master's list (it ran there, not locally). ``numdiff score`` with ``PYSPARK_SUBMIT_ARGS``
    naming a master goes through the same session code once its JVM holds the master
    (`engines.spark._new_session`); `test_unreachable_clusters_exit_3` starts that JVM."""
    master_url, ui = master
    env = {"PYSPARK_PYTHON": worker_python}
    done = numdiff(
        workdir, "--engine", "spark", "--results-dir", "submit", submit=master_url, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pd.testing.assert_frame_equal(results(workdir / "submit"), pandas_results[()])
    apps = master_state(ui)["completedapps"]
    assert len(apps) == 1, apps  # the job ran on the cluster


@pytest.fixture(scope="module")
def connect_run(connect_url: str, workdir: Path) -> tuple[Path, str]:
    """A tracked Spark Connect job with opt-in readings (`READINGS`), as a user runs it: its
    results folder and its run id (two tests below read it: one job on the server, not two).
    The default options go through the standalone cluster."""
    done = numdiff(
        workdir,
        *("--engine", "spark", "--results-dir", "connect4", *READINGS),
        env={"SPARK_REMOTE": connect_url},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir / "connect4", run_id(done.stdout)


def test_spark_connect_equals_pandas(
    connect_run: tuple[Path, str],
    pandas_results: dict[tuple[str, ...], pd.DataFrame],
) -> None:
    """A relative path, workers without the package, opt-in readings: the pandas engine's
    results, cell for cell. (The default options, on a cluster whose workers lack the package
    too: test_standalone_cluster_equals_pandas.)"""
    out = connect_run[0]
    pd.testing.assert_frame_equal(results(out), pandas_results[READINGS])
    assert not list(out.glob(".*.partial"))


def test_tracked_run_same_as_the_pandas_engines(
    connect_run: tuple[Path, str], workdir: Path
) -> None:
    """Metrics, logged artifacts and the report of a Spark Connect job (the workers lacking the
    package) equal the pandas engine's run on the same table. (The local Spark engine against
    the pandas engine: tests/engines/test_spark.py::test_run_spark_job_end_to_end.)"""
    from mlflow import MlflowClient

    done = numdiff(workdir, "--engine", "pandas", "--results-dir", "tracked-pandas", *READINGS)
    assert done.returncode == 0, done.stderr[-3000:]
    connect, pandas = connect_run[0], workdir / "tracked-pandas"
    runs = {"spark": connect_run[1], "pandas": run_id(done.stdout)}
    client = MlflowClient(f"sqlite:///{workdir}/mlflow.db")

    def logged(run: str) -> tuple[dict[str, float], list[str]]:
        files = [a.path for a in client.list_artifacts(run, "numeric_diff")]
        return client.get_run(run).data.metrics, sorted(Path(f).name for f in files)

    assert logged(runs["spark"]) == logged(runs["pandas"])
    assert (connect / "summary.md").read_text() == (pandas / "summary.md").read_text()
    pd.testing.assert_frame_equal(results(connect), results(pandas))


def test_unreachable_clusters_exit_3(workdir: Path) -> None:
    """Nothing listens on the port: one line, exit 3, within the deadline."""
    for env in (
        {"SPARK_REMOTE": f"sc://127.0.0.1:{free_port()}"},
        {"PYSPARK_SUBMIT_ARGS": f"--master spark://127.0.0.1:{free_port()} pyspark-shell"},
    ):
        done = numdiff(workdir, "--engine", "spark", env={**env, "NUMDIFF_SPARK_TIMEOUT": "5"})
        assert_one_line(done, 3, "cannot reach the Spark cluster", "127.0.0.1")


FAILING_JOB = """
import sys
from pyspark.sql import SparkSession
from numdiff_component.errors import InputError
from numdiff_component.engines.spark_cluster import cluster_errors

def needs_a_module(batches):
    import numdiff_no_such_module  # noqa: F401
    yield from batches

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
try:
    with cluster_errors("scoring"):
        spark.range(3).mapInArrow(needs_a_module, "id long").collect()
except InputError as exc:
    print(exc)
"""


def test_a_module_missing_on_the_workers_is_named(connect_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FAILING_JOB, connect_url], capture_output=True, text=True
    )
    assert done.stdout.strip() == (
        "scoring: the Spark workers' Python cannot import 'numdiff_no_such_module' "
        "(ModuleNotFoundError); they need Python with pyarrow, pandas and numpy"
    ), done.stderr[-3000:]
