"""Attacks of a hostile user (issue 16), each against the real thing: the CLI as a real process,
real HTTP servers and sockets on 127.0.0.1, a real FIFO, a real sqlite store. Each ends in what
the README's guarantees say: exact values, one line and a known exit code, within a deadline."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from numdiff_component.report.render import markdown
from tests.fixtures.commands import MODULE, invoke, numdiff_popen, numdiff_process, one_line_error
from tests.fixtures.servers import serve_on_loopback

GUARD = 90  # seconds: a hang guard for each process, never a measure of speed


def _score(*args: str, env: dict[str, str] | None = None) -> object:
    """``numdiff score ARGS`` as a real process: for what the process shows (its stderr, its exit
    through ``main``, its deadlines)."""
    return numdiff_process("score", *args, env=env, timeout=GUARD)


def _score_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``numdiff score ARGS`` in this process: for what the job writes and prints on stdout."""
    return invoke("score", *args)


# --- values kept exactly --------------------------------------------------------------------------

MIXED = [
    {"id": 0, "output": "9007199254740993", "expected": 2**53 + 1, "note": None},
    {"id": 1, "output": "0.5", "expected": 0.5, "note": "nan"},
    {"id": 2, "output": "3", "expected": 3, "note": True},
    {"id": 3, "output": "3", "expected": 3, "note": 5},
    {"id": 4, "output": "x", "expected": 1, "note": "5"},
]


def _decoded(path: Path, column: str) -> list[object]:
    """A results column as the JSON values it holds (mixed columns are stored as JSON text)."""
    table = pq.read_table(path)
    field = table.schema.field(column)
    values = table.column(column).to_pylist()
    if (field.metadata or {}).get(b"numdiff.encoding") == b"json":
        return [None if v is None else json.loads(v) for v in values]
    return values


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_mixed_json_columns_keep_every_value_and_type(
    fmt: str, tracking_uri: str, tmp_path: Path
) -> None:
    source = tmp_path / f"t.{fmt}"
    text = json.dumps(MIXED) if fmt == "json" else "\n".join(json.dumps(r) for r in MIXED)
    source.write_text(text)
    done = _score_here(str(source), "-q", "--no-plots", "--results-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    results = tmp_path / "out" / "results.parquet"
    assert _decoded(results, "expected") == [2**53 + 1, 0.5, 3, 3, 1]
    note = _decoded(results, "note")
    assert note == [None, "nan", True, 5, "5"]
    assert [type(v) for v in note] == [type(None), str, bool, int, str]
    # Scoring read the numbers themselves: 2**53 + 1 is read as the float nearest to it.
    scored = pd.read_parquet(results)
    assert scored["expected_value"].tolist() == [float(2**53 + 1), 0.5, 3.0, 3.0, 1.0]
    assert scored["label"].tolist() == ["pass", "pass", "pass", "pass", "unparseable"]


def test_a_bytes_column_is_bad_input_before_anything_is_logged(
    tracking_uri: str, tmp_path: Path
) -> None:
    source = tmp_path / "t.parquet"
    frame = pd.DataFrame({"output": ["1", "2"], "expected": ["1", "2"], "blob": [b"\x00", b"ab"]})
    frame.to_parquet(source)
    done = _score(str(source), "--results-dir", str(tmp_path / "out"))
    one_line_error(done, 2, "column 'blob' holds bytes")
    from mlflow import MlflowClient

    experiment = os.environ["MLFLOW_EXPERIMENT_ID"]
    assert MlflowClient().search_runs([experiment]) == []  # nothing was logged
    assert not (tmp_path / "out" / "results.parquet").exists()


# --- limits that cannot be stepped round ----------------------------------------------------------


def test_one_long_name_does_not_step_round_the_column_limit(tmp_path: Path) -> None:
    source = tmp_path / "wide.csv"
    header = "n" * 131_073 + "," + ",".join(f"c{i}" for i in range(200_002))
    with source.open("w") as out:
        out.write(header + "\n")
        for _ in range(50):
            out.write("," * 200_002 + "\n")
    done = _score(str(source), "--results-dir", str(tmp_path / "out"))
    one_line_error(done, 2, "it has 200,003 columns, more than the limit of 10,000")


@pytest.mark.slow  # MLflow takes its time over 10,000 columns
def test_a_table_of_exactly_10000_columns_is_scored(tracking_uri: str, tmp_path: Path) -> None:
    source = tmp_path / "wide.csv"
    names = ["output", "expected", *(f"c{i}" for i in range(9_998))]
    source.write_text(",".join(names) + "\n" + ",".join(["1", "1", *("x" * 9_998)]) + "\n")
    done = _score_here(str(source), "-q", "--no-plots", "--results-dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert pq.read_schema(tmp_path / "out" / "results.parquet").names[:10_000] == names


@contextlib.contextmanager
def _trickling_server(head: bool) -> Iterator[str]:
    """An HTTP server on loopback that sends a byte every 0.2 s, forever: in its header lines
    (``head``) or in the rows of its body. Each read is quick; the download never ends."""
    stop = threading.Event()

    class Trickle(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            if not head:
                self.wfile.write(b"Content-Type: text/csv\r\n\r\noutput,expected\n")
            with contextlib.suppress(OSError):
                while not stop.is_set():
                    self.wfile.write(b"X-A: b\r\n" if head else b"1,1\n")
                    self.wfile.flush()
                    time.sleep(0.2)

        def log_message(self, *args: object) -> None:
            pass

    with serve_on_loopback(Trickle, stop) as url:
        yield f"{url}/t.csv"


@pytest.mark.parametrize(
    ("head", "env", "said"),
    [
        (True, {}, "no answer within 1 s"),  # the status line and headers: the HTTP timeout
        (False, {}, "not complete within 10 s"),  # the whole download: 10 times that
        (False, {"NUMDIFF_DOWNLOAD_TIMEOUT": "3"}, "not complete within 3 s"),
    ],
    ids=["header-lines", "rows", "rows-own-deadline"],
)
def test_a_trickling_download_ends_at_its_deadline(
    head: bool, env: dict[str, str], said: str, tmp_path: Path
) -> None:
    with _trickling_server(head) as url:
        done = _score(
            url,
            "--results-dir",
            str(tmp_path / "out"),
            env={"NUMDIFF_HTTP_TIMEOUT": "1", **env},
        )
    one_line_error(done, 2, f"cannot download {url!r}: {said}")


@contextlib.contextmanager
def _hung_server() -> Iterator[str]:
    """A socket on loopback that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def test_a_runs_input_from_a_hung_server_is_exit_3_at_the_tracking_deadline(
    tmp_path: Path,
) -> None:
    with _hung_server() as url:
        done = _score(
            f"runs:/{'0' * 32}/predictions.csv",
            "--results-dir",
            str(tmp_path / "out"),
            env={"MLFLOW_TRACKING_URI": url, "NUMDIFF_TRACKING_TIMEOUT": "3"},
        )
    one_line_error(done, 3, f"at {url}", "no answer within 3 s")


def test_a_fifo_nobody_writes_to_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    done = _score(
        str(fifo), "--results-dir", str(tmp_path / "out"), env={"NUMDIFF_HTTP_TIMEOUT": "2"}
    )
    one_line_error(done, 2, "nothing to read within 2 s")


def test_a_fifo_written_slowly_is_read(tracking_uri: str, tmp_path: Path) -> None:
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as out:  # blocks until the job opens the pipe
            out.write("output,expected\n")
            out.flush()
            time.sleep(1)
            out.write("1,1\n2,3\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    done = _score(str(fifo), "-q", "--no-plots", "--results-dir", str(tmp_path / "out"))
    writer.join(GUARD)
    assert done.returncode == 0, done.stderr
    assert pd.read_parquet(tmp_path / "out" / "results.parquet")["label"].tolist() == [
        "pass",
        "fail",
    ]


# --- what the terminal shows ----------------------------------------------------------------------


def test_the_summary_shows_control_characters_in_paths_as_escapes(
    tracking_uri: str, tmp_path: Path
) -> None:
    folder = tmp_path / "out\x1b[2J\u202e"
    source = tmp_path / "t\x1b[31m\u202e.csv"
    source.write_text("output,expected\n1,1\n")
    done = _score_here(str(source), "--no-plots", "--results-dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert "t\\x1b[31m\\u202e.csv" in done.stdout and "out\\x1b[2J\\u202e" in done.stdout


# The gate message with every digit (exit 1): tests/cli/test_cli.py's
# test_entry_point_exit_1_is_the_quality_gate, the real entry point's exit 1.


def _experiment(name: str) -> str:
    from mlflow import MlflowClient

    return str(MlflowClient().get_experiment_by_name(name).experiment_id)


def test_a_failed_gate_is_named_beside_a_tracking_failure(tmp_path: Path) -> None:
    """A server that never answers: the tracking deadline (3 s) ends the process with exit 3,
    its one line names the server and the failed gate, and the results are kept. (A server that
    trickles a byte a second instead: tests/e2e/test_faults.py's
    test_a_server_that_never_answers_ends_in_exit_3_within_the_deadline.)"""
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1,2\n")
    with _hung_server() as url:
        done = _score(
            str(source),
            "--no-plots",
            "--results-dir",
            str(tmp_path / "o"),
            "--fail-under",
            "0.5",
            env={"MLFLOW_TRACKING_URI": url, "NUMDIFF_TRACKING_TIMEOUT": "3"},
        )
    one_line_error(
        done,
        3,
        f"could not log to MLflow at {url}",
        "no answer within 3 s",
        "the gate failed too: pass rate 0.0000 is below",
    )
    assert (tmp_path / "o" / "results.parquet").exists()


INFINITE_MAE = "mae is inf, logged to MLflow as 1.797e+308 (MLflow stores no infinity)"


def _score_infinite_mae(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1e308,-1e308\n")
    done = _score_here(str(source), *args, "--results-dir", str(tmp_path / "o"))
    assert done.returncode == 0, done
    return done


def test_an_infinite_mae_is_said_to_be_logged_as_the_largest_float(
    tracking_uri: str, tmp_path: Path
) -> None:
    done = _score_infinite_mae(tmp_path, "--no-plots")
    mae = next(line for line in done.stdout.splitlines() if line.strip().startswith("mae"))
    assert mae.split()[1] == "inf"
    assert f"note: {INFINITE_MAE}" in done.stdout
    from mlflow import MlflowClient

    (run,) = MlflowClient().search_runs([_experiment("tests")])
    assert run.data.metrics["numeric_diff/mae"] > 1.79e308
    assert f"Note: {INFINITE_MAE}" in run.data.tags["mlflow.note.content"].replace("\\", "")


def test_summary_md_notes_an_infinite_mae_as_the_terminal_does(
    tracking_uri: str, tmp_path: Path
) -> None:
    _score_infinite_mae(tmp_path, "-q")
    assert f"- {markdown(INFINITE_MAE)}" in (tmp_path / "o" / "summary.md").read_text()
    assert INFINITE_MAE in (tmp_path / "o" / "report.html").read_text()


# --- noise ----------------------------------------------------------------------------------------


def test_quiet_prints_nothing_for_overflowing_numbers_and_integer_columns(
    tracking_uri: str, tmp_path: Path
) -> None:
    source = tmp_path / "t.json"  # abs errors whose sum overflows; an integer column for MLflow
    rows = [
        {"output": "1.5e308", "expected": 0, "n": 1},
        {"output": "1.6e308", "expected": 0, "n": 2},
    ]
    source.write_text(json.dumps(rows))
    done = _score(str(source), "-q", "--no-plots", "--results-dir", str(tmp_path / "o"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_an_output_that_cannot_be_written_is_one_line(tracking_uri: str, tmp_path: Path) -> None:
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1,1\n")
    with open("/dev/full", "w") as full:
        args = ["score", str(source), "--no-plots", "--results-dir", str(tmp_path / "o")]
        done = numdiff_process(*args, stdout=full, timeout=GUARD)
    done.stdout = ""
    one_line_error(done, 2, "cannot write the output: No space left on device")


def test_a_sigterm_once_the_command_is_done_is_no_traceback(
    tracking_uri: str, tmp_path: Path
) -> None:
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1,1\n")
    process = subprocess.Popen(
        [*MODULE, "score", str(source), "--no-plots", "--results-dir", str(tmp_path / "o")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:  # the last line of the summary: the work is done
        if line.strip().startswith("results"):
            break
    for _ in range(50):  # into the exit handlers, whenever they run
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        time.sleep(0.01)
    _, stderr = process.communicate(timeout=GUARD)
    # Done, stopped with the signal's code, or (in the interpreter's last steps, where Python
    # restores the default handlers) killed by the signal: a shell shows 143 for both.
    assert process.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM), stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


# A new experiment on a sqlite store keeps its artifacts beside the store, not in ./mlruns:
# tests/e2e/test_guarantees.py::test_job_writes_only_its_results_folder.


def test_parallel_jobs_on_a_brand_new_sqlite_store(tmp_path: Path) -> None:
    """Four jobs started at once on a store file that does not exist yet: each logs its run
    (exit 0), or says in one line that the store failed and where its complete results are
    (exit 3); never a traceback, never exit 1."""
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1,1\n2,3\n")
    store = tmp_path / "store" / "new.db"
    store.parent.mkdir()
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{store}"}
    jobs = [
        numdiff_popen(
            *["score", str(source), "-q", "--no-plots", "--results-dir", f"r{i}"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    logged = 0
    for i, job in enumerate(jobs):
        out, err = job.communicate(timeout=GUARD)
        done = subprocess.CompletedProcess(job.args, job.returncode, out, err)
        assert job.returncode in (0, 3), err
        if job.returncode == 0:
            assert err == "", err
            logged += 1
        else:
            one_line_error(done, 3, f"the complete results are in {f'r{i}/results.parquet'!r}")
        assert (tmp_path / f"r{i}" / "results.parquet").is_file()
    from mlflow import MlflowClient

    runs = MlflowClient(f"sqlite:///{store}").search_runs(["0"])
    assert len(runs) == logged and logged >= 1


@pytest.mark.parametrize("where", ["folder", "claim"])
def test_a_fifo_as_results_folder_or_claim_is_named(where: str, tmp_path: Path) -> None:
    source = tmp_path / "t.csv"
    source.write_text("output,expected\n1,1\n")
    folder = tmp_path / "out"
    if where == "folder":
        os.mkfifo(folder)
    else:
        folder.mkdir()
        os.mkfifo(folder / ".numdiff")
    done = _score(str(source), "-q", "--results-dir", str(folder))
    if where == "folder":
        one_line_error(done, 2, f"results folder {str(folder)!r} is a FIFO (named pipe), not a")
    else:
        claim = str(folder / ".numdiff")
        one_line_error(done, 2, f"{claim!r} is a FIFO (named pipe), not a file numdiff wrote")
        assert os.listdir(folder) == [".numdiff"]
