"""Shared test helpers: a private MLflow store per test, real tracking servers on loopback (one
shared by the whole run, or a test's own), a copy of the MLflow project, the ``numdiff`` command
in process and as a real process, table writers, and the SPEC's example table. Test modules
import the plain helpers from here (``from tests.conftest import ...``).

The suite runs under pytest-xdist (``-n auto`` in pyproject.toml): what is costly to make is
made once per run for all workers (`once_per_run`), and no test may rely on another's leftovers
or on what the checkout folder holds besides the repository's files."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import strategies as st

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
# The 20 s deadline per tracking call is for users; on a loaded machine making a new sqlite store
# alone can take longer. Tests of the deadline set their own.
os.environ.setdefault("NUMDIFF_TRACKING_TIMEOUT", "120")
# Every JVM a test starts (Spark's driver, local executors, a cluster's daemons) runs seconds of
# work: the client compiler alone and the serial collector halve its CPU, most of it start-up,
# on a two-core machine. Silent flags (nothing on stderr), for tests only.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTIONS)
BIN = str(Path(sys.executable).parent)
BOUND = 120  # seconds: no numdiff process started by a test may take longer
ROOT = Path(__file__).resolve().parents[1]

# --- what the workers of one pytest run share -----------------------------------------------------
# Under pytest-xdist every worker is a process of its own with its own session fixtures. What is
# costly to make (an initialised store, a tracking server) is made once per run instead: by the
# first worker that asks, under a file lock, in a folder the controller makes before the workers
# start (they inherit RUN_DIR) and removes, with the servers in it, after they have ended.

RUN_DIR = "NUMDIFF_TEST_RUN_DIR"
_made_here: Path | None = None  # the run folder, in the process that made it (and cleans up)
_started_here: list[subprocess.Popen[bytes]] = []  # shared servers this process started


def pytest_configure(config: pytest.Config) -> None:
    global _made_here
    if RUN_DIR not in os.environ:  # the controller, or a run without workers
        _made_here = Path(tempfile.mkdtemp(prefix="numdiff-tests-"))
        os.environ[RUN_DIR] = str(_made_here)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. Most tests wait more than they compute (a server or a
    JVM starting, a deadline passing, a child process importing MLflow): with one worker per core
    a two-core machine was half idle."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep ``--dist loadgroup`` working: pytest-xdist (3.8) names a test's group by appending
    ``@group`` to ``item._nodeid``, which pytest 9 no longer reads (the id is ``item._id``), so
    every group was silently spread over all workers (a Spark session or server per worker, a
    README page's scripts run twice). Does nothing where xdist's own suffix took. And hand the
    longest work out first (`_weight`)."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers only
        return
    items.sort(key=_weight)
    try:
        from _pytest.nodeid import NodeId  # pytest 9; before it, xdist's own suffix works
    except ImportError:
        return

    for item in items:
        names = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def _weight(item: pytest.Item) -> int:
    """The longest work first (``--no-loadscope-reorder``: xdist hands work out in this order):
    the tests that start Spark (a JVM, a cluster, a server), then the other slow ones, then the
    rest, which fill the workers' time at the end instead of a lone Spark test."""
    if Path(item.path).name == "test_spark_cluster.py" or any(
        str(m.args[0] if m.args else "").startswith("spark")
        for m in item.iter_markers("xdist_group")
    ):
        return 0
    return 1 if item.get_closest_marker("slow") else 2


def pytest_unconfigure(config: pytest.Config) -> None:
    global _made_here
    if _made_here is None:
        return
    for pid_file in _made_here.glob("*/pid"):
        _stop_group(int(pid_file.read_text()))
    shutil.rmtree(_made_here, ignore_errors=True)
    os.environ.pop(RUN_DIR, None)
    _made_here = None


def once_per_run(name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this pytest run, filled by ``make(folder)`` once for all workers.

    The first worker to ask makes it while the others wait on a file lock; a ``make`` that
    raises leaves no folder, and the next to ask tries again.
    """
    run = Path(os.environ[RUN_DIR])
    folder = run / name
    with open(run / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / "done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / "done").touch()
    return folder


def _make_store(folder: Path) -> None:
    from mlflow import MlflowClient

    store = folder / "mlflow.db"
    MlflowClient(f"sqlite:///{store}").search_experiments()
    # MLflow puts the Default experiment's artifacts in ./mlruns of the folder it runs in, which
    # may be the checkout: here they go beside the template instead.
    _set_default_artifacts(store, str(folder / "mlruns" / "0"))


def _set_default_artifacts(store: Path, location: str) -> None:
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        db.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (location,)
        )


def empty_store() -> Path:
    """An initialised sqlite store (MLflow's tables made: that takes seconds), made once per run:
    copy it, never write to it."""
    return once_per_run("store", _make_store) / "mlflow.db"


@pytest.fixture(scope="session")
def _empty_store() -> Path:
    """`empty_store`, as a fixture."""
    return empty_store()


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
    """``mlflow server`` on a free loopback port over the sqlite ``store``; always stopped.

    A ``store`` that does not exist yet starts as a copy of `empty_store`, as the server would
    make it (the Default experiment's artifacts go through the server): making MLflow's tables
    is a good part of a server's start-up.
    """
    process, url = _start_server(store, artifacts, log)
    try:
        yield url, process
    finally:
        stop(process)


_CLIENT_SETTINGS = {
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_RUN_ID",
}


def _start_server(store: Path, artifacts: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A started ``mlflow server`` (see `tracking_server`) and its URL, once it answers."""
    if not store.exists():
        shutil.copy(empty_store(), store)
        _set_default_artifacts(store, "mlflow-artifacts:/0")
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
            cwd=store.parent,  # not the folder of whichever test happened to start it
            # No job execution: it starts eight helper processes and doubles the start-up time.
            # Nothing of the test that started it (its store, experiment or run).
            env={
                **{k: v for k, v in os.environ.items() if k not in _CLIENT_SETTINGS},
                "MLFLOW_DISABLE_TELEMETRY": "true",
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            },
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/health", process=process)
    except BaseException:
        stop(process)
        raise
    return process, url


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the session the server was started in (its own id), as a crash would."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)


def _stop_group(pid: int) -> None:
    """Stop the session that process ``pid`` leads, which need not be a child of this process
    (a worker that has ended started it): SIGTERM, then SIGKILL after 20 seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reaps it where it is a child of this process
            if not _alive(pid):
                return
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs: a zombie (ended, not yet reaped by a parent that is not this
    process) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # Linux; elsewhere a zombie counts as running
    with contextlib.suppress(OSError):
        return stat.read_text().rpartition(")")[2].split()[:1] != ["Z"]
    return True


def _start_shared_server(folder: Path) -> None:
    process, url = _start_server(folder / "mlflow.db", folder / "artifacts", folder / "server.log")
    _started_here.append(process)  # kept: a Popen collected while running warns
    (folder / "pid").write_text(str(process.pid))
    (folder / "url").write_text(url)


@pytest.fixture(scope="session")
def shared_mlflow_server() -> str:
    """The URL of a real ``mlflow server`` on 127.0.0.1, one for the whole pytest run (all
    workers), stopped when the run ends.

    Every test that uses it shares it: log to an experiment of a name of the test's own, find
    runs by their ids, never assume the server is empty or stop it. A test that stops, kills
    or breaks a server starts its own (`tracking_server`).
    """
    url = (once_per_run("server", _start_shared_server) / "url").read_text()
    wait_for_http(f"{url}/health", timeout=30)  # still up: a test may not stop it
    return url


@pytest.fixture
def mlflow_server(shared_mlflow_server: str) -> str:
    """`shared_mlflow_server`, under the name the tests used when each had a server of its own."""
    return shared_mlflow_server


@contextlib.contextmanager
def refusing_proxy(upstream: str, refused: str, status: int | None) -> Iterator[str]:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` (a real ``mlflow server``) that passes
    every request on except those whose path ends with ``refused``: it answers those with
    ``status`` (500, say), or never when ``status`` is None. Its URL, stopped on the way out."""
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlparse

    target = urlparse(upstream)
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.split("?")[0].endswith(refused):
                if status is None:
                    stopping.wait()
                    self.close_connection = True
                    return
                self._answer(status, {"Content-Type": "text/plain"}, b"refused by the proxy")
                return
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                connection.request(self.command, self.path, body or None, headers)
                response = connection.getresponse()
                data = response.read()
                kept = {
                    k: v
                    for k, v in response.getheaders()
                    if k.lower() not in ("content-length", "transfer-encoding", "connection")
                }
                self._answer(response.status, kept, data)
            finally:
                connection.close()

        def _answer(self, code: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(code)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()


# --- the MLflow project -----------------------------------------------------------------------

PROJECT_FILES = ("MLproject", "conda.yaml", "examples")
"""What a user's clone holds of the MLflow project beside the package (installed)."""


@pytest.fixture
def mlflow_project(tmp_path: Path) -> Path:
    """A copy of the MLflow project in a folder of the test's own, for ``mlflow run``: what the
    checkout folder holds besides (a user's ``mlflow.db``, ``mlruns/``) changes no test, and what
    a run leaves in its project folder is the test's to see."""
    project = tmp_path / "project"
    project.mkdir()
    for name in PROJECT_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, project / name)
        else:
            shutil.copy(source, project / name)
    return project


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

    from numdiff_component.cli.main import cli

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
# reads them alike (tests/reading/test_parse.py, tests/e2e/test_entry_points.py,
# tests/engines/test_spark.py).
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
# SPEC v4's extra markers and scale words, given as Python gives them (a list, a dict).
_MARKERS = {"pick": "answer", "markers": ["Result", "Final answer", "\u7b54\u6848"]}
_LAKH = {"scale": "words", "scale_words": {"lakh": 1e5, "crore": 1e7}}
LIST_READINGS: list[tuple[str, dict[str, Any], float | None]] = [
    ("Result: 42 of 50", _MARKERS, 42.0),
    ("Our final answer is 7, not 8", _MARKERS, 7.0),
    ("\u7b54\u6848\uff1a12 \u6216 13", _MARKERS, 12.0),
    ("5 lakh people", _LAKH, 5e5),
    ("\u20b92.5 Crore", _LAKH, 2.5e7),
    ("about 3 lakhs", _LAKH, 3.0),
]


READING_STRATEGIES = {
    "decimal_comma": st.booleans(),
    "pick": st.sampled_from(["first", "last", "answer"]),
    "percent": st.sampled_from(["keep", "fraction"]),
    "scale": st.sampled_from(["none", "words"]),
    "thousands": st.sampled_from(["comma", "any"]),
    "fractions": st.booleans(),
}
