"""Faults: bad files, a tracking server that is down, dies or refuses, a results folder that
cannot be written. Each ends in one line on stderr, a known exit code, and no lost or
half-written results."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from numdiff_component.errors import InputError
from numdiff_component.inputs.tables import open_table
from numdiff_component.job.run import run_job
from numdiff_component.task.config import JobConfig
from numdiff_component.task.results import CLAIM
from tests.fixtures.commands import MODULE, invoke, numdiff_popen, numdiff_process, one_line_error
from tests.fixtures.run import BOUND
from tests.fixtures.servers import kill_group, refusing_proxy, tracking_server
from tests.fixtures.tables import write_file


def written(folder: Path) -> list[str]:
    """What a job left in its results folder, less its claim on the folder."""
    return sorted(name for name in os.listdir(folder) if name != CLAIM)


RESULTS = "results.parquet"
PARTIAL = f".{RESULTS}.partial"


def arrow_table(n: int, note: str = "") -> pa.Table:
    """Rows ``r000000,about 0,0`` and on (and ``note`` in each, when given), made by Arrow:
    millions in a fraction of a second."""
    number = pc.cast(pa.array(np.arange(n)), pa.string())
    columns = {
        "id": pc.binary_join_element_wise("r", pc.utf8_lpad(number, 6, "0"), ""),
        "output": pc.binary_join_element_wise("about ", number, ""),
        "expected": number,
    }
    if note:
        columns["note"] = pa.repeat(note, n)
    return pa.table(columns)


def table(n: int, note: str = "") -> pd.DataFrame:
    return arrow_table(n, note).to_pandas()


def assert_complete(results_dir: Path, source: pd.DataFrame) -> None:
    """The local results hold every input row once, in order, and nothing half-written."""
    assert not (results_dir / PARTIAL).exists()
    results = pd.read_parquet(results_dir / RESULTS)
    assert len(results) == len(source)
    assert list(results["id"]) == list(source["id"])
    assert (results["label"] == "pass").all()


# ---------------------------------------------------------------------------------------------
# Bad files, in process (the cases tests/cli/test_cli.py already covers are not repeated here)


def _truncated_parquet(folder: Path) -> Path:
    whole = folder / "whole.parquet"
    table(2000).to_parquet(whole)
    data = whole.read_bytes()
    (folder / "t.parquet").write_bytes(data[: len(data) // 2])
    return folder / "t.parquet"


def _file(name: str, content: str | bytes) -> Callable[[Path], Path]:
    return lambda folder: write_file(folder / name, content)


BAD_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "truncated parquet": (_truncated_parquet, "as parquet: Parquet magic bytes not found"),
    "csv with ragged rows": (
        _file("t.csv", "id,output,expected\nr1,1,1\nr2,2,2,2\nr3,3\n"),
        "as csv: CSV parse error: Expected 3 columns, got 4",
    ),
    "json object of scalars": (
        _file("t.json", '{"a": 1}'),
        "as json: not a table; give a list of records",
    ),
    "json list of numbers": (_file("t.json", "[1, 2, 3]"), "as json: not a table"),
    "json list of arrays": (_file("t.json", '[["1", "1"], ["2", "2"]]'), "as json: not a table"),
    "json lines of numbers": (_file("t.jsonl", "1\n2\n"), "as jsonl: not a table"),
    "duplicate column names": (
        _file("t.csv", "output,expected,output\n1,1,2\n"),
        "duplicate column name 'output'",
    ),
    # Decoding with replacement characters would silently change the user's text: refused.
    "csv not utf-8": (
        _file("t.csv", b"id,output,expected\nr1,1,1\nr2,caf\xe9 2,2\n"),
        "as csv: it is not valid UTF-8: byte 0xe9 on line 3; save it as UTF-8",
    ),
    "gzipped csv not utf-8": (
        _file("t.csv.gz", __import__("gzip").compress(b"output,expected\n\xff1,1\n")),
        "it is not valid UTF-8: byte 0xff on line 2",
    ),
    "json not utf-8": (
        _file("t.json", b'[{"output": "caf\xe9 2", "expected": "2"}]'),
        "it is not valid UTF-8",
    ),  # 10 kB that Python's JSON reader cannot hold on its stack: no RecursionError traceback.
    "json nested 5000 deep": (
        _file("t.json", '[{"output": ' + "[" * 5000 + "]" * 5000 + ', "expected": "1"}]'),
        "as json: a value is nested deeper than Python's JSON reader goes",
    ),
    "json lines nested 5000 deep": (
        _file(
            "t.jsonl",
            '{"output": "1", "expected": "1"}\n{"output": '
            + '{"a": ' * 5000
            + "1"
            + "}" * 5000
            + ', "expected": "1"}\n',
        ),
        "as jsonl: line 2: a value is nested deeper than Python's JSON reader goes",
    ),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_bad_file_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    make, message = BAD_FILES[case]
    (tmp_path / "in").mkdir()
    source = make(tmp_path / "in")
    proc = invoke("score", str(source), "--results-dir", str(tmp_path / "res"))
    line = one_line_error(proc, 2, message)
    assert proc.stdout == ""
    if message.startswith("as "):  # a read error names the file
        assert f"cannot read {str(source)!r} {message}" in line
    assert not (tmp_path / "res" / RESULTS).exists()


def test_bad_row_deep_in_a_streamed_file_leaves_no_results(tmp_path: Path) -> None:
    """Many batches are written before the bad row is met: none of them is left behind."""
    good = "".join(f"r{i},{i},{i}\n" for i in range(3000))
    source = tmp_path / "t.csv"
    source.write_bytes(b"id,output,expected\n" + good.encode() + b"r3000,\xe9,1\n")
    seen: list[int] = []
    with pytest.raises(InputError, match=r"not valid UTF-8: byte 0xe9 on line 3002"):
        run_job(
            JobConfig(
                predictions=str(source),
                results_dir=str(tmp_path / "res"),
                track=False,
                batch_rows=100,
            ),
            progress=seen.append,
        )
    assert len(seen) > 10 and seen[-1] > 2900  # batches up to the bad row were written
    assert written(tmp_path / "res") == []


def test_missing_runs_artifact(tracking_uri: str, tmp_path: Path) -> None:
    import mlflow

    experiment = mlflow.create_experiment("faults", artifact_location=str(tmp_path / "artifacts"))
    with mlflow.start_run(experiment_id=experiment) as run:
        mlflow.log_text("output,expected\n1,1\n", "other.csv")
    uri = f"runs:/{run.info.run_id}/predictions.csv"
    proc = invoke("score", uri, "--results-dir", str(tmp_path / "res"))
    one_line_error(proc, 2, f"cannot download {uri!r}", "predictions.csv")
    # The run and its store are there: only the artifact named is missing.
    assert list(open_table(f"runs:/{run.info.run_id}/other.csv").read()["output"]) == ["1"]


def _drop_read_rights() -> Callable[[], None] | None:
    """A ``preexec_fn`` that takes away the right to read other users' files.

    As root the child becomes ``nobody`` (65534) when ``nobody`` can run this interpreter;
    otherwise (a venv under /root, say) it stays root but loses the capabilities that let root
    read any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), from the bounding set so the exec'd
    interpreter never gets them back. Not root: nothing to drop.
    """
    if os.geteuid() != 0:
        return None
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import numdiff_component, mlflow"],
            capture_output=True,
            preexec_fn=_become_nobody,
            cwd="/",
            timeout=BOUND,
        )
    except PermissionError:  # nobody cannot even reach the interpreter
        return _drop_dac_capabilities
    return _become_nobody if probe.returncode == 0 else _drop_dac_capabilities


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def _drop_dac_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder anyone may traverse (pytest's own temporary folders are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="numdiff-faults-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder)


def test_file_without_read_permission(open_folder: Path) -> None:
    source = open_folder / "t.csv"
    table(3).to_csv(source, index=False)
    source.chmod(0o000)  # anyone may look inside the folder, nobody may read the file
    drop = _drop_read_rights()
    check = subprocess.run(
        [sys.executable, "-c", f"open({str(source)!r}).read()"],
        capture_output=True,
        text=True,
        preexec_fn=drop,
        timeout=BOUND,
    )
    assert "Permission denied" in check.stderr, "the child can still read the file: no test"
    proc = numdiff_process(
        "score",
        str(source),
        "--results-dir",
        str(open_folder / "res"),
        preexec_fn=drop,
        cwd=Path("/"),
    )
    one_line_error(proc, 2, f"cannot read {str(source)!r}: permission denied")


# ---------------------------------------------------------------------------------------------
# A real tracking server that is down, dies in the middle of a run, or refuses artifacts


# A server unreachable from the start: tests/cli/test_cli.py (the real entry point, exit 3).


def _logging_run(store: Path) -> str | None:
    """A run of the server's sqlite store (read-only) that is RUNNING and has its metrics: the
    client holds the run and is logging the dataset and the results."""
    query = (
        "SELECT run_uuid FROM runs WHERE status = 'RUNNING' "
        "AND run_uuid IN (SELECT run_uuid FROM metrics)"
    )
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)
        ) as db:
            row = db.execute(query).fetchone()
    except sqlite3.OperationalError:  # not created yet, or locked for a moment by the server
        return None
    return None if row is None else str(row[0])


def _kill_server_once_running(
    tmp_path: Path, source: pd.DataFrame, attempt: int
) -> tuple[subprocess.CompletedProcess[str], str | None, Path]:
    """Run the CLI against a server; SIGKILL the server once the run is RUNNING with metrics."""
    folder = tmp_path / f"attempt{attempt}"
    folder.mkdir()
    source.to_csv(folder / "t.csv", index=False)
    store = folder / "server.db"
    args = ["score", str(folder / "t.csv"), "-q", "--no-plots"]
    args += ["--results-dir", str(folder / "res")]
    with tracking_server(store, folder / "artifacts", tmp_path / "server.log") as (url, server):
        cli = numdiff_popen(
            *args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"MLFLOW_TRACKING_URI": url},
        )
        run_id = None
        try:
            deadline = time.monotonic() + BOUND
            while run_id is None and cli.poll() is None and time.monotonic() < deadline:
                run_id = _logging_run(store)
                time.sleep(0.02)
            if run_id is not None:
                kill_group(server)
            out, err = cli.communicate(timeout=BOUND)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait(timeout=20)
    return subprocess.CompletedProcess(args, cli.returncode, out, err), run_id, folder


@pytest.mark.slow
def test_server_killed_in_the_middle_of_a_run(tmp_path: Path) -> None:
    """Logging the dataset and the results (Parquet and JSON) of 100,000 rows takes seconds:
    the server is killed as soon as the run's metrics are in, while the rest is on its way.

    Should the run finish before the kill lands (a very fast machine), the test tries once more
    with rows ten times wider.
    """
    for attempt, note in enumerate(["", "x" * 400]):
        source = table(100_000, note)
        proc, run_id, folder = _kill_server_once_running(tmp_path, source, attempt)
        if run_id is not None and proc.returncode != 0:
            break
    else:
        pytest.fail(f"the run finished before the server could be killed: {proc.stderr}")
    one_line_error(
        proc,
        3,
        "could not log to MLflow",
        f"the complete results are in {str(folder / 'res' / RESULTS)!r}",
    )
    assert_complete(folder / "res", source)
    # The server's store, as a new server would read it: the run is still RUNNING. Once its
    # server is gone the client cannot mark it FAILED (MLflow has no heartbeat to notice
    # either), so the exit code and the complete local results are the record of what happened.
    from mlflow import MlflowClient

    store = MlflowClient(f"sqlite:///{folder / 'server.db'}")
    assert store.get_run(run_id).info.status == "RUNNING"


def test_server_refusing_artifacts_marks_the_run_failed(mlflow_server: str, tmp_path: Path) -> None:
    """A server that answers 500 to every artifact upload (a proxy in front of a real one)."""
    source = table(500)
    source.to_csv(tmp_path / "t.csv", index=False)
    experiment = f"faults-{uuid.uuid4().hex}"
    with refusing_proxy(mlflow_server, "/mlflow-artifacts/artifacts/", 500) as url:
        proc = numdiff_process(
            *("score", str(tmp_path / "t.csv"), "-q", "--no-plots"),
            *("--experiment-name", experiment, "--results-dir", str(tmp_path / "res")),
            env={"MLFLOW_TRACKING_URI": url},
        )
    one_line_error(proc, 3, f"could not log to MLflow at {url}", "500 error responses")
    assert_complete(tmp_path / "res", source)
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, "no run was started"
    runs = client.search_runs([found.experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]  # told, not left RUNNING
    assert runs[0].data.metrics["numeric_diff/n_rows"] == 500  # what could be logged was


# ---------------------------------------------------------------------------------------------
# A results folder that cannot be written


def test_results_folder_below_a_regular_file(tmp_path: Path) -> None:
    table(3).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "a-file").write_text("keep me")
    results = tmp_path / "a-file" / "res"
    proc = invoke("score", str(tmp_path / "t.csv"), "--results-dir", str(results))
    one_line_error(proc, 2, f"cannot use results folder {str(results)!r}: Not a directory")
    assert (tmp_path / "a-file").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path)) == ["a-file", "t.csv"]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, mounted for the test and always unmounted."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if os.geteuid() == 0
        else None
    )
    if done is None or done.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here: {done.stderr.strip() if done else 'not root'}"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True, timeout=30)


def test_full_disk_leaves_no_results_that_look_complete(tmp_path: Path, full_disk: Path) -> None:
    table(20_000).to_csv(tmp_path / "t.csv", index=False)  # ~300 KiB of results: cannot fit
    results = full_disk / "res"
    proc = invoke("score", str(tmp_path / "t.csv"), "--results-dir", str(results))
    one_line_error(proc, 2, f"cannot write results to {str(results)!r}", "No space left on device")
    assert written(results) == []  # neither results.parquet nor .results.parquet.partial


def test_full_disk_while_writing_the_report(tmp_path: Path, full_disk: Path) -> None:
    """Room for the results but not for the plots: a clear error, the results kept, and no
    report file (half-written or not) left behind."""
    source = table(50)
    source.to_csv(tmp_path / "t.csv", index=False)
    probe = JobConfig(str(tmp_path / "t.csv"), results_dir=str(tmp_path / "p"), track=False)
    run_job(replace(probe, plots=False))  # the size of the results file, on a roomy disk
    block = os.statvfs(full_disk).f_frsize
    room = ((tmp_path / "p" / RESULTS).stat().st_size // block + 2) * block
    free = os.statvfs(full_disk).f_bavail * block
    (full_disk / "filler").write_bytes(b"\0" * (free - room))
    results = full_disk / "res"
    proc = invoke("score", str(tmp_path / "t.csv"), "-q", "--results-dir", str(results))
    one_line_error(
        proc,
        2,
        f"cannot write the report to {str(results)!r}",
        "No space left on device",
        f"the complete results are in {str(results / RESULTS)!r}",
    )
    assert written(results) == [RESULTS]
    assert_complete(results, source)


def test_full_disk_when_the_claim_is_written(
    tmp_path: Path, full_disk: Path, tracking_uri: str
) -> None:
    """Room for the results but not for the claim that records them: one line naming the
    complete results, exit 2, and the claim as it was (empty, new), never half-written."""
    source = table(50)
    source.to_csv(tmp_path / "t.csv", index=False)
    probe = JobConfig(str(tmp_path / "t.csv"), results_dir=str(tmp_path / "p"), track=False)
    run_job(replace(probe, plots=False))  # the size of the results file, on a roomy disk
    block = os.statvfs(full_disk).f_frsize
    room = -(-(tmp_path / "p" / RESULTS).stat().st_size // block) * block  # its blocks, no more
    free = os.statvfs(full_disk).f_bavail * block
    (full_disk / "filler").write_bytes(b"\0" * (free - room))
    results = full_disk / "res"
    proc = numdiff_process(
        "score", str(tmp_path / "t.csv"), "-q", "--no-plots", "--results-dir", str(results)
    )
    one_line_error(
        proc,
        2,
        f"cannot record the outputs in {str(results / CLAIM)!r}",
        "No space left on device",
        f"the outputs in {str(results)!r} are complete",
    )
    assert (results / CLAIM).read_bytes() == b""
    assert written(results) == [RESULTS]
    assert_complete(results, source)


# ---------------------------------------------------------------------------------------------
# Concurrent jobs, the user's own files, signals, and servers that never answer


@pytest.mark.slow
def test_concurrent_jobs_on_one_results_folder_never_log_anothers_rows(
    tracking_uri: str, tmp_path: Path
) -> None:
    """Four processes at once: each either logs exactly its own rows, or is refused (exit 2)."""
    from mlflow import MlflowClient

    folder = tmp_path / "shared"
    sources = [
        write_file(tmp_path / f"t{i}.csv", table(5000 + i).to_csv(index=False)) for i in range(4)
    ]
    processes = [
        numdiff_popen(
            *["score", str(source), "--no-plots", "--results-dir", str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for source in sources
    ]
    outcomes = [(p.wait(timeout=BOUND), *p.communicate()) for p in processes]
    assert any(code == 0 for code, _, _ in outcomes)
    for i, (code, out, err) in enumerate(outcomes):
        if code == 2:
            assert "is in use by another numdiff job" in err, err
            continue
        assert code == 0, err
        run_id = next(line.split()[1] for line in out.splitlines() if line.split()[:1] == ["run"])
        logged = MlflowClient().download_artifacts(run_id, "numeric_diff/results.parquet")
        assert len(pd.read_parquet(logged)) == 5000 + i  # its own rows, nobody else's


def test_a_results_folder_in_use_is_refused(tmp_path: Path) -> None:
    import fcntl

    folder = tmp_path / "res"
    folder.mkdir()
    with open(folder / CLAIM, "a") as claim:
        fcntl.flock(claim, fcntl.LOCK_EX)  # as a running job holds it
        done = invoke("score", "--results-dir", str(folder))
    one_line_error(done, 2, f"results folder {str(folder)!r} is in use by another numdiff job")


@pytest.mark.parametrize("name", ["summary.md", "results.parquet", "report.html"])
def test_a_users_file_in_the_results_folder_is_never_overwritten(name: str, tmp_path: Path) -> None:
    mine = write_file(tmp_path / name, b"my own notes")
    done = invoke("score", "--results-dir", str(tmp_path))
    one_line_error(done, 2, f"holds {name!r}, which no numdiff job wrote")
    assert mine.read_bytes() == b"my own notes"


def test_the_input_is_never_overwritten_by_its_own_results(tmp_path: Path) -> None:
    first = tmp_path / "first"
    run_job(JobConfig(results_dir=str(first), track=False, plots=False))
    before = (first / RESULTS).read_bytes()
    args = ("score", str(first / RESULTS), "--results-dir", str(first))
    done = invoke(*args, "--output-col", "output", "--expected-col", "expected")
    one_line_error(done, 2, "is in the results folder")
    assert (first / RESULTS).read_bytes() == before


def test_an_earlier_jobs_outputs_are_removed_before_new_ones(tmp_path: Path) -> None:
    run_job(JobConfig(results_dir=str(tmp_path), track=False))
    assert (tmp_path / "summary.md").exists()
    run_job(JobConfig(results_dir=str(tmp_path), track=False, plots=False))
    assert written(tmp_path) == [RESULTS]  # no stale report beside the new results


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000,000 rows of `arrow_table`: read, never written, by the tests that use it."""
    import pyarrow.csv as pa_csv

    rows = arrow_table(2_000_000)
    source = tmp_path_factory.mktemp("big") / "big.csv"
    source.write_text(",".join(rows.column_names) + "\n")
    with open(source, "ab") as out:
        pa_csv.write_csv(rows, out, pa_csv.WriteOptions(include_header=False))
    return source


@pytest.mark.slow
@pytest.mark.parametrize(("signal_name", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_while_scoring_leaves_no_partial_file(
    signal_name: str, code: int, tmp_path: Path, big_csv: Path
) -> None:
    import signal

    source = big_csv
    folder = tmp_path / "res"
    process = subprocess.Popen(
        [*MODULE, "score", str(source), "--no-plots", "--results-dir", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + BOUND
    while not (folder / PARTIAL).exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(getattr(signal, signal_name))
    done = subprocess.CompletedProcess(
        process.args, process.wait(timeout=BOUND), *process.communicate()
    )
    one_line_error(done, code, f"stopped by {signal_name}")
    assert written(folder) == []


@pytest.mark.parametrize(("value", "traceback"), [("0", False), ("false", False), ("1", True)])
def test_numdiff_traceback_shows_a_traceback_only_when_asked(
    value: str, traceback: bool, tmp_path: Path
) -> None:
    done = numdiff_process("score", str(tmp_path / "nope.csv"), env={"NUMDIFF_TRACEBACK": value})
    assert done.returncode == 2
    assert ("Traceback" in done.stderr) == traceback
    assert done.stderr.strip().splitlines()[-1].startswith("numdiff: error: predictions file")


def test_an_error_line_shows_control_bytes_as_escapes(tmp_path: Path) -> None:
    done = invoke("score", str(tmp_path / "\x1b[31mred.csv"))
    line = one_line_error(done, 2, "predictions file not found")
    assert "\x1b" not in line and "\\x1b[31mred.csv" in line


@pytest.mark.parametrize(
    "args",
    [
        ("score", "--experiment-name", "x" * 10_000, "--no-plots"),
        ("log-model", "--name", "a/b"),
    ],
    ids=["long experiment name", "model name with a slash"],
)
def test_a_name_mlflow_refuses_is_bad_input(args: tuple[str, ...], tracking_uri: str) -> None:
    import mlflow

    done = invoke(*args)
    one_line_error(done, 2)
    assert mlflow.search_runs(search_all_experiments=True).empty  # no run left behind


def _silent_server(trickle: bool) -> tuple[Any, str]:
    """A server on loopback that accepts and then never answers (or trickles a byte a second)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        clients = []
        while not stop.is_set():
            with contextlib.suppress(OSError):
                clients.append(listener.accept()[0])
            for client in clients if trickle else []:
                with contextlib.suppress(OSError):
                    client.sendall(b"H")
            time.sleep(0.8)
        for client in clients:
            client.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return stop, f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.slow
def test_a_server_that_never_answers_ends_in_exit_3_within_the_deadline(tmp_path: Path) -> None:
    """A server that trickles a byte a second and never answers: the tracking deadline ends the
    job. (A server that never sends a byte:
    tests/e2e/test_hostile.py::test_a_failed_gate_is_named_beside_a_tracking_failure.)"""
    stop, url = _silent_server(trickle=True)
    try:
        # The server never answers: only the deadline ends the process (numdiff_process's
        # timeout is the hang guard).
        done = numdiff_process(
            "score",
            "--no-plots",
            "--results-dir",
            str(tmp_path),
            env={"MLFLOW_TRACKING_URI": url, "NUMDIFF_TRACKING_TIMEOUT": "3"},
        )
    finally:
        stop.set()
    one_line_error(done, 3, f"could not log to MLflow at {url}", "no answer within 3 s")
    assert (tmp_path / RESULTS).exists()


@pytest.mark.slow
def test_compare_against_a_server_that_is_down_is_exit_3(tmp_path: Path) -> None:
    from tests.fixtures.servers import free_port

    url = f"http://127.0.0.1:{free_port()}"
    # Hang guard (numdiff_process's timeout): MLflow's own retries would take minutes.
    done = numdiff_process("compare", "0" * 32, "1" * 32, env={"MLFLOW_TRACKING_URI": url})
    one_line_error(done, 3, f"at {url}")
