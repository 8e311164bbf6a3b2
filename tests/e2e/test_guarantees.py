"""The promises of the README's "Guarantees" section that no other test module owns: nothing
the user gave is lost or changed, and inputs are data, never code."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import numdiff_component
from numdiff_component.errors import InputError
from numdiff_component.inputs.tables import open_table
from numdiff_component.job.run import run_job
from numdiff_component.scoring import RESULT_COLUMNS
from numdiff_component.task.config import DEFAULT_BATCH_ROWS, JobConfig, Scoring
from tests.fixtures.commands import invoke, numdiff_process, one_line_error

PACKAGE = Path(numdiff_component.__file__).parent

# ---------------------------------------------------------------------------------------------
# Nothing lost: every row once, in order, with its id and its values exactly as given

TEXTS = [
    "007",
    "  42  ",
    "",
    "\t7\t",
    "٣",
    "\uff13",  # full-width 3
    "\u22125",  # minus sign
    "naïve 3",
    "line one\nline two 4",
    '"quoted", 5',
    "NA",
    "null",
    "None",
    "nan",
    "N/A",
    "#N/A",
    "1e999",
    "TRUE",
    "😀 6",
    "1,234",
    "0x1F",
    "=1+1",
    "{{7*7}}",
    "__import__('os').system('true')",
    "${HOME}",
    "\\N",
]
FLOATS = [
    0.1,
    0.30000000000000004,
    1 / 3,
    1e-300,
    2.2250738585072014e-308,
    -0.0,
    1.7976931348623157e308,
    123456.78901234567,
    -2.5,
]
INTS = [0, -1, 2**53 + 1, -(2**62), 10**18, 7]
N = 211  # not a multiple of the batch size; CSV blocks are at least 4 KiB: several here


def _source() -> pd.DataFrame:
    """Adversarial text in every text column, and floats and integers that must survive exactly."""
    return pd.DataFrame(
        {
            "id": ["007", " 8", "9 ", "", "ü"] + [f"r{i}" for i in range(5, N)],
            "output": [TEXTS[i % len(TEXTS)] for i in range(N)],
            "expected": [TEXTS[(i * 7 + 3) % len(TEXTS)] for i in range(N)],
            "created_at": ["1600000000"] * N,  # a name pandas would read as a date if allowed
            "x": [FLOATS[i % len(FLOATS)] for i in range(N)],
            "k": [INTS[i % len(INTS)] for i in range(N)],
        }
    )


def _write(source: pd.DataFrame, fmt: str, path: Path) -> pd.DataFrame:
    """Write ``source`` as ``fmt``; the frame the results must reproduce (CSV holds text)."""
    records = source.to_dict("records")
    if fmt == "csv":
        as_text = source.assign(x=[repr(v) for v in source["x"]], k=[str(v) for v in source["k"]])
        as_text.to_csv(path, index=False)
        return as_text
    if fmt == "parquet":
        source.to_parquet(path, row_group_size=5)
    elif fmt == "json":  # the standard library writes floats that read back exactly
        path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    else:
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return source


@pytest.mark.parametrize("batch_rows", [7, DEFAULT_BATCH_ROWS], ids=["batches-of-7", "default"])
@pytest.mark.parametrize("fmt", ["csv", "parquet", "json", "jsonl"])
def test_every_row_once_in_order_with_its_values_unchanged(
    fmt: str, batch_rows: int, tmp_path: Path
) -> None:
    expected = _write(_source(), fmt, tmp_path / f"t.{fmt}")
    seen: list[int] = []
    run_job(
        JobConfig(
            predictions=str(tmp_path / f"t.{fmt}"),
            scoring=Scoring(id_col="id"),
            results_dir=str(tmp_path / "res"),
            track=False,
            plots=False,
            batch_rows=batch_rows,
        ),
        progress=seen.append,
    )
    streamed = batch_rows < N and fmt != "json"  # a JSON document is read whole
    assert (len(seen) > 1) == streamed and seen[-1] == N
    results = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert list(results.columns) == [*expected.columns, *RESULT_COLUMNS]
    assert len(results) == N and list(results["id"]) == list(expected["id"])
    for column in expected.columns:
        got, want = list(results[column]), list(expected[column])
        assert [type(v) for v in got] == [type(v) for v in want] or column in ("x", "k"), column
        assert got == want, column  # exact: no stripping, no NA, no rounding, no renaming
    if fmt != "csv":
        assert results["x"].dtype == np.float64 and results["k"].dtype == np.int64
        assert list(np.signbit(results["x"])) == list(np.signbit(expected["x"]))  # -0.0 kept
    assert (
        results["score"].notna().all()
        and results["label"].isin(["pass", "fail", "unparseable"]).all()
    )


def test_json_object_of_columns_keeps_column_names(tmp_path: Path) -> None:
    """pandas would read columns named "007" and "2" as the numbers 7 and 2 (convert_axes)."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"007": {"a": "3.0"}, "2": {"a": "3"}}))
    run_job(
        JobConfig(
            predictions=str(path),
            scoring=Scoring(output_col="007", expected_col="2"),
            track=False,
            results_dir=str(tmp_path / "res"),
        )
    )
    results = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert list(results.columns[:2]) == ["007", "2"] and list(results["label"]) == ["pass"]


# ---------------------------------------------------------------------------------------------
# Inputs are data, never code


def test_pickle_payload_is_never_unpickled(tmp_path: Path) -> None:
    """Whatever its name or --format, a pickle is refused or read as bytes; it is never loaded."""
    marker = tmp_path / "unpickled"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str, str]]:
            return open, (str(marker), "w")

    data = pickle.dumps(Payload())
    cases = [("t.pkl", None), ("t.pickle", None), ("t.joblib", None), ("t.pkl.gz", None)]
    cases += [("t.pkl", fmt) for fmt in ("csv", "parquet", "json", "jsonl")]
    cases += [(f"t.{fmt}", None) for fmt in ("csv", "parquet", "json", "jsonl")]
    for name, fmt in cases:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError) as error:
            run_job(
                JobConfig(
                    predictions=str(tmp_path / name),
                    format=fmt,
                    track=False,
                    results_dir=str(tmp_path / "res"),
                )
            )
        if (fmt is None and ".pkl" in name) or name.endswith((".pickle", ".joblib")):
            assert "pickle file, which is not read: unpickling runs code" in str(error.value)
        assert not marker.exists(), (name, fmt)
    pickle.loads(data)  # the payload is live: loading it would have left the marker
    assert marker.exists()


# Calls and imports that would run text as code or unpickle it. This is a static check: it fails
# when someone adds one to the package, for a reviewer to decide whether input can reach it.
_CODE_BUILTINS = {"eval", "exec", "compile", "__import__", "breakpoint"}
_CODE_METHODS = {
    "read_pickle",
    "eval",
    "query",
    "format_map",
    "unsafe_load",
    "full_load",
    "import_module",
}
_UNSAFE_MODULES = {"pickle", "cloudpickle", "dill", "joblib", "marshal", "shelve", "yaml"}


def _code_paths(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _CODE_BUILTINS:
                found.append(f"{func.id}()")
            elif isinstance(func, ast.Attribute) and func.attr in _CODE_METHODS:
                found.append(f".{func.attr}()")
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in _UNSAFE_MODULES
            ):
                found.append(f"{func.value.id}.{func.attr}()")
        elif isinstance(node, ast.Import):
            found += [
                f"import {a.name}" for a in node.names if a.name.split(".")[0] in _UNSAFE_MODULES
            ]
        elif (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] in _UNSAFE_MODULES
        ):
            found.append(f"from {node.module} import ...")
    return found


def test_package_never_runs_or_unpickles_text() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 5
    found = {m.name: hits for m in modules if (hits := _code_paths(ast.parse(m.read_text())))}
    assert found == {}
    assert _code_paths(ast.parse("import pickle\npd.eval(x)\neval(s)\nyaml.load(f)"))  # it can fail


@pytest.fixture
def run_next_to_a_secret(tracking_uri: str, tmp_path: Path) -> tuple[str, str]:
    """Run A holds predictions.csv; run B holds secret.csv. Artifacts stay in tmp_path."""
    import mlflow

    experiment = mlflow.create_experiment(
        "guarantees", artifact_location=str(tmp_path / "artifacts")
    )
    with mlflow.start_run(experiment_id=experiment) as a:
        mlflow.log_text("output,expected\n3,3\n", "predictions.csv")
    with mlflow.start_run(experiment_id=experiment) as b:
        mlflow.log_text("output,expected\nsecret,1\n", "secret.csv")
    return a.info.run_id, b.info.run_id


def test_runs_uri_reads_only_that_runs_artifacts(
    run_next_to_a_secret: tuple[str, str], tmp_path: Path
) -> None:
    a, b = run_next_to_a_secret
    assert list(open_table(f"runs:/{a}/predictions.csv").read()["output"]) == ["3"]
    climbing = [
        f"runs:/{a}/../{b}/artifacts/secret.csv",
        f"runs:/{a}/sub/../../{b}/artifacts/secret.csv",
        f"runs:/{a}/%2e%2e/{b}/artifacts/secret.csv",
        f"runs:/{a}/..%2f{b}%2fartifacts%2fsecret.csv",
        f"runs:/{a}/%252e%252e/{b}/artifacts/secret.csv",
        f"runs:/{a}/..\\{b}\\artifacts\\secret.csv",
        f"mlflow-artifacts:/0/{a}/artifacts/../../{b}/artifacts/secret.csv",
    ]
    for uri in climbing:
        with pytest.raises(InputError, match=r"reaches outside its run with '\.\.'"):
            open_table(uri, "csv")
    proc = invoke("score", climbing[0], "--results-dir", str(tmp_path / "res"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"numdiff: error: {climbing[0]!r} reaches outside its run with '..'; name an artifact "
        "inside the run, e.g. runs:/<run_id>/predictions.csv"
    ]


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_job_writes_only_its_results_folder(tracking_uri: str, tmp_path: Path) -> None:
    """Nothing is written next to the input, in the working folder or in the temporary folder:
    only the results folder (and the tracking store's own files) change. The experiment is new:
    created by ``--experiment-name`` on the sqlite store, it keeps its artifacts in
    ``mlartifacts`` beside the store, not in ``./mlruns`` of the working folder (MLflow's
    default). The real entry point's exit 0 too (tests/cli/test_cli.py has its exits 1 to 3):
    it scores every row, prints the summary and logs the run."""
    from mlflow import MlflowClient

    from numdiff_component.task import results as files

    for name in ("in", "cwd", "tmp"):
        (tmp_path / name).mkdir()
    _source().to_csv(tmp_path / "in" / "t.csv", index=False)
    before = _snapshot(tmp_path)
    proc = numdiff_process(  # a process of its own: TMPDIR is read once per process
        "score",
        str(tmp_path / "in" / "t.csv"),
        "--id-col",
        "id",
        "--experiment-name",
        "writes",
        "--results-dir",
        str(tmp_path / "res"),
        cwd=tmp_path / "cwd",
        env={"TMPDIR": str(tmp_path / "tmp")},
    )
    assert proc.returncode == 0, proc.stderr
    assert "mean_score" in proc.stdout and "runs:/" in proc.stdout
    assert len(pd.read_parquet(tmp_path / "res" / "results.parquet")) == N
    after = _snapshot(tmp_path)
    changed = {p for p in after if before.get(p) != after[p]} | (before.keys() - after.keys())
    tracking = {p for p in changed if p.startswith(("mlartifacts/", "mlflow.db"))}
    assert sorted(changed - tracking) == sorted(
        f"res/{name}"
        for name in [
            "results.parquet",
            files.HISTOGRAM_PNG,
            files.SCATTER_PNG,
            files.SUMMARY_MD,
            files.REPORT_HTML,
            ".numdiff",  # the job's claim on the folder
        ]
    )
    assert any(p.endswith("numeric_diff/results.parquet") for p in tracking)
    assert os.listdir(tmp_path / "cwd") == [] and os.listdir(tmp_path / "tmp") == []
    experiment = MlflowClient().get_experiment_by_name("writes")
    assert experiment.artifact_location == (tmp_path / "mlartifacts").as_uri()


# ---------------------------------------------------------------------------------------------
# A tracking store that fails, or a setting that cannot work: one line, exit 2 or 3 (issue 16.6)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NUMDIFF_TRACKING_TIMEOUT", "inf"),
        ("NUMDIFF_TRACKING_TIMEOUT", "1e308"),
        ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "abc"),
    ],
)
def test_a_bad_tracking_setting_is_exit_2_before_any_work(
    name: str, value: str, tracking_uri: str, tmp_path: Path
) -> None:
    done = numdiff_process(
        "score", "--quiet", "--results-dir", str(tmp_path / "res"), env={name: value}
    )
    one_line_error(done, 2, name, repr(value))
    assert not (tmp_path / "res" / "results.parquet").exists()  # said before scoring


def _store_failure(done: subprocess.CompletedProcess[str], results: Path) -> None:
    line = one_line_error(done, 3, "could not")
    assert str(results / "results.parquet") in line  # the complete results are named
    assert (results / "results.parquet").is_file()


def test_a_tracking_uri_naming_a_file_that_is_not_a_database_is_exit_3(tmp_path: Path) -> None:
    store = tmp_path / "notes.db"
    store.write_text("not a database\n" * 100)
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{store}"}
    done = numdiff_process("score", "--quiet", "--results-dir", str(tmp_path / "res"), env=env)
    _store_failure(done, tmp_path / "res")
    assert store.read_text() == "not a database\n" * 100  # the user's file is left alone


def test_a_locked_sqlite_store_is_exit_3(tracking_uri: str, tmp_path: Path) -> None:
    store = tracking_uri.removeprefix("sqlite:///")
    lock = sqlite3.connect(store, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")  # a real lock held by another connection
        env = {"NUMDIFF_TRACKING_TIMEOUT": "20"}
        done = numdiff_process("score", "--quiet", "--results-dir", str(tmp_path / "res"), env=env)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    _store_failure(done, tmp_path / "res")


# ---------------------------------------------------------------------------------------------
# A reused results folder: only what a job can prove an earlier job wrote is replaced, and a
# failed job removes nothing (issue 16.1); the claim is never a link (issue 16.2)


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_file_the_user_put_after_a_job_is_never_replaced(tmp_path: Path) -> None:
    run_job(JobConfig(results_dir=str(tmp_path), track=False))
    (tmp_path / "summary.md").write_text("my own summary")  # same name, the user's content
    done = invoke("score", "--results-dir", str(tmp_path))
    one_line_error(done, 2, "holds 'summary.md', which no numdiff job wrote (or which changed")
    assert (tmp_path / "summary.md").read_text() == "my own summary"


def test_a_failed_job_removes_nothing(tmp_path: Path) -> None:
    run_job(JobConfig(results_dir=str(tmp_path), track=False))
    before = _contents(tmp_path)
    done = invoke("score", "--results-dir", str(tmp_path), "--output-col", "missing")
    one_line_error(done, 2, "missing")
    assert _contents(tmp_path) == before  # every earlier output still there, byte for byte


def test_a_later_job_replaces_what_an_earlier_job_wrote(tmp_path: Path) -> None:
    run_job(JobConfig(results_dir=str(tmp_path), track=False))
    run_job(JobConfig(results_dir=str(tmp_path), track=False, plots=False))
    assert sorted(_contents(tmp_path)) == [".numdiff", "results.parquet"]  # nothing stale
    claim = json.loads((tmp_path / ".numdiff").read_text())
    assert set(claim["outputs"]) == {"results.parquet"}  # proof of what it wrote


def test_a_claim_that_is_a_link_is_refused_and_never_followed(tmp_path: Path) -> None:
    folder = tmp_path / "res"
    folder.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("do not touch")
    (folder / ".numdiff").symlink_to(target)
    done = numdiff_process("score", "--results-dir", str(folder))  # a real process
    one_line_error(done, 2, "is a symbolic link, which numdiff never follows")
    assert target.read_text() == "do not touch"
    assert (folder / ".numdiff").is_symlink() and sorted(os.listdir(folder)) == [".numdiff"]


@pytest.mark.parametrize("kind", ["text", "folder", "fifo"])
def test_a_claim_numdiff_did_not_write_is_refused(kind: str, tmp_path: Path) -> None:
    claim = tmp_path / ".numdiff"
    if kind == "text":
        claim.write_text("my notes on numdiff")
    elif kind == "folder":
        claim.mkdir()
    else:
        os.mkfifo(claim)
    done = invoke("score", "--results-dir", str(tmp_path))
    one_line_error(done, 2, "not a file numdiff wrote")
    if kind == "text":
        assert claim.read_text() == "my notes on numdiff"
    assert sorted(os.listdir(tmp_path)) == [".numdiff"]


# ---------------------------------------------------------------------------------------------
# Two signals close together: no partial output, and the message and the code agree (16.3)


@pytest.mark.slow
@pytest.mark.parametrize("gap_ms", [1, 5, 20, 50])
def test_sigint_then_sigterm_leave_no_partial_file(gap_ms: int, tmp_path: Path) -> None:
    import signal
    import time

    from tests.fixtures.commands import MODULE
    from tests.fixtures.run import BOUND

    source = tmp_path / "big.csv"
    rows = 600_000
    pd.DataFrame({"output": np.arange(rows).astype(str), "expected": np.arange(rows)}).to_csv(
        source, index=False
    )
    folder = tmp_path / "res"
    args = [*MODULE, "score", str(source), "--no-plots", "--results-dir", str(folder)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial = folder / ".results.parquet.partial"
    deadline = time.monotonic() + BOUND
    while not partial.exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    time.sleep(gap_ms / 1000)
    process.send_signal(signal.SIGTERM)
    done = subprocess.CompletedProcess(args, process.wait(timeout=BOUND), *process.communicate())
    one_line_error(done, 130, "stopped by SIGINT; no partial file is left")
    assert sorted(os.listdir(folder)) == [".numdiff"]


# A signal's exception raised inside a garbage-collection callback is lost (Python prints it
# as unraisable and goes on): the job must stop all the same, at its next batch.
SWALLOWED = """
import gc, os, signal, sys, threading
from pathlib import Path
from numdiff_component.cli.main import main

partial = Path(sys.argv[-1]) / ".results.parquet.partial"
sent = []

def collected(phase, info):
    if not sent and partial.exists() and threading.current_thread() is threading.main_thread():
        print("SIGINT inside a gc callback", flush=True)
        sent.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here, inside the callback, and its
            pass                 # exception is lost

gc.callbacks.append(collected)
gc.set_threshold(50)
main()
"""


@pytest.mark.slow
def test_a_signal_lost_in_a_finalizer_still_stops_the_job(tmp_path: Path) -> None:
    source = tmp_path / "big.csv"
    rows = 600_000
    pd.DataFrame({"output": np.arange(rows).astype(str), "expected": np.arange(rows)}).to_csv(
        source, index=False
    )
    folder = tmp_path / "res"
    args = ["score", str(source), "--no-plots", "--results-dir", str(folder)]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"}
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert "SIGINT inside a gc callback" in done.stdout, done.stdout + done.stderr
    one_line_error(done, 130, "stopped by SIGINT; no partial file is left")
    assert sorted(os.listdir(folder)) == [".numdiff"]


# A pyarrow thread still inside a Python stream when the command ends: Python's own exit then
# waits for it for ever (pyarrow's pool is shut down after the interpreter), or aborts when the
# thread takes the GIL while Python finalizes ("terminate called ...", exit 134: what a bad CSV
# row did now and then). The command ends before Python's finalization, so neither can happen.
HELD_AT_EXIT = """
import io, sys, threading
import pyarrow.csv as pa_csv
from numdiff_component.cli.main import main

reading, woken = threading.Event(), threading.Event()

class Stream(io.RawIOBase):
    reads = 0
    def readable(self):
        return True
    def read(self, size=-1):  # a header and two rows, then a read that waits
        self.reads += 1
        if self.reads <= 3:
            return b"output,expected\\n" if self.reads == 1 else b"1,1\\n"
        reading.set()
        woken.wait()
        return b""

class WakeAtFinalization:
    def __del__(self):
        woken.set()

reader = pa_csv.open_csv(Stream())
waker = WakeAtFinalization()
reading.wait()
main()
"""


def test_a_command_ends_though_a_pyarrow_thread_is_inside_python() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HELD_AT_EXIT, "--version"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("numdiff, version ")


@pytest.mark.slow
def test_a_large_file_that_is_not_utf8_is_one_line_every_time(tmp_path: Path) -> None:
    """pyarrow reads ahead through a Python stream in threads of its own and lets go of the
    blocks there: an exit on a bad first block aborted ("terminate called ...", exit 134) in
    most runs of a 20 MB file, and still now and then on a busy machine, until the command
    ended before Python's finalization."""
    source = tmp_path / "latin1.csv"
    rows = "".join(f"caf\xe9 {i},{i}\n" for i in range(1_000_000))
    source.write_text("output,expected\n" + rows, encoding="latin-1")
    for _ in range(3):
        done = numdiff_process("score", str(source), "-q", "--no-plots")
        one_line_error(done, 2, "not valid UTF-8: byte 0xe9 on line 2")
