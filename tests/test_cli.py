"""The ``numdiff score`` command: output, exit codes and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from numdiff_component.cli import cli
from numdiff_component.tables import sample_path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_help_does_not_import_mlflow() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from numdiff_component.cli import cli;"
        "r = CliRunner().invoke(cli, ['score', '--help']); assert r.exit_code == 0, r.output;"
        "assert '--fail-under' in r.output; assert 'mlflow' not in sys.modules, 'mlflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "numdiff_component", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "score" in out.stdout


def test_score_sample_logs_and_summarises(tracking_uri: str, tmp_path: Path) -> None:
    code, out, err = run("score", "--results-dir", str(tmp_path / "res"), "--run-name", "sample")
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "res" / "results.parquet")
    sample = pd.read_csv(sample_path(), dtype=str, keep_default_na=False)
    assert len(frame) == len(sample) and list(frame["id"]) == list(sample["id"])
    assert "mean_score" in out and "pass_rate" in out and str(tmp_path / "res") in out
    assert "rows/s" not in err  # no progress line when stderr is not a terminal
    from mlflow import MlflowClient

    run_id = next(line.split()[1] for line in out.splitlines() if line.split()[:1] == ["run"])
    run_ = MlflowClient().get_run(run_id)
    assert run_.info.run_name == "sample"
    assert run_.data.metrics["numeric_diff/n_rows"] == len(sample)


def test_quiet_prints_nothing(tracking_uri: str, tmp_path: Path) -> None:
    code, out, _ = run("score", "-q", "--results-dir", str(tmp_path))
    assert (code, out) == (0, "")


@pytest.mark.parametrize(("fail_under", "exit_code"), [("0.5", 0), ("0.99", 1)])
def test_fail_under_is_a_quality_gate(
    tracking_uri: str, tmp_path: Path, fail_under: str, exit_code: int
) -> None:
    code, _, err = run("score", "-q", "--fail-under", fail_under, "--results-dir", str(tmp_path))
    assert code == exit_code
    assert ("below --fail-under" in err) == (exit_code == 1)
    assert (tmp_path / "results.parquet").exists()  # the results are kept either way


def _write(path: Path, text: str | bytes) -> str:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


BAD_INPUTS = {
    "missing file": (lambda d: str(d / "nope.csv"), [], "predictions file not found: '"),
    "a directory": (lambda d: str(d), [], "is a directory"),
    "corrupt parquet": (lambda d: _write(d / "t.parquet", b"PAR1 not really"), [], "cannot read '"),
    "unknown format": (
        lambda d: _write(d / "t.txt", "output,expected\n1,1\n"),
        [],
        "cannot tell the format",
    ),
    "bad --format": (
        lambda d: _write(d / "t.csv", "output,expected\n1,1\n"),
        ["--format", "xls"],
        "format must be one of",
    ),
    "missing column": (
        lambda d: _write(d / "t.csv", "answer,expected\n1,1\n"),
        [],
        "output column 'output' not found; the columns are: 'answer', 'expected'",
    ),
    "missing id column": (
        lambda d: _write(d / "t.csv", "output,expected\n1,1\n"),
        ["--id-col", "qid"],
        "id column 'qid' not found",
    ),
    "empty table": (lambda d: _write(d / "t.csv", "output,expected\n"), [], "no rows to score"),
    "threshold out of domain": (
        lambda d: "",
        ["--threshold", "1.5"],
        "threshold must be a number between 0 and 1, got 1.5",
    ),
    "floor out of domain": (lambda d: "", ["--floor", "-1"], "floor must be a number >= 0"),
    "pick out of domain": (
        lambda d: "",
        ["--pick", "middle"],
        "pick must be one of 'first', 'last', 'answer', got 'middle'",
    ),
    "percent out of domain": (
        lambda d: "",
        ["--percent", "x"],
        "percent must be one of 'keep', 'fraction'",
    ),
    "fail-under out of domain": (
        lambda d: "",
        ["--fail-under", "2"],
        "--fail-under must be a rate between 0 and 1",
    ),
    "result column clash": (
        lambda d: _write(d / "t.csv", "output,expected,score\n1,1,1\n"),
        [],
        "input column 'score' has the name of a result column",
    ),
    "pickle": (lambda d: _write(d / "t.pkl", b"\x80\x04."), [], "pickle file, which is not read"),
    "json not a table": (lambda d: _write(d / "t.json", "42"), [], "cannot read '"),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    make, extra, message = BAD_INPUTS[case]
    (tmp_path / "in").mkdir()
    source = make(tmp_path / "in")
    args = ["score", *([source] if source else []), *extra, "--results-dir", str(tmp_path / "res")]
    proc = subprocess.run(
        [sys.executable, "-m", "numdiff_component", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMDIFF_TRACEBACK": ""},
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numdiff: error: "), proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json", "jsonl"])
def test_every_format_is_read(fmt: str, tmp_path: Path, tracking_uri: str) -> None:
    df = pd.DataFrame({"id": ["a", "b"], "output": ["about 3", "007"], "expected": ["3", "7"]})
    path = tmp_path / f"t.{fmt}"
    {
        "csv": lambda: df.to_csv(path, index=False),
        "parquet": lambda: df.to_parquet(path),
        "json": lambda: df.to_json(path, orient="records"),
        "jsonl": lambda: df.to_json(path, orient="records", lines=True),
    }[fmt]()
    code, _, err = run(
        "score", str(path), "-q", "--id-col", "id", "--results-dir", str(tmp_path / "res")
    )
    assert code == 0, err
    out = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert list(out["id"]) == ["a", "b"] and list(out["output"]) == ["about 3", "007"]
    assert list(out["label"]) == ["pass", "pass"]


def _stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``numdiff`` with stderr on a pseudo-terminal; its exit code and what it wrote there."""
    import pty

    main_fd, child_fd = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "numdiff_component", *args],
        stderr=child_fd,
        stdout=subprocess.DEVNULL,
        timeout=300,
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the terminal is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    return proc.returncode, b"".join(chunks).decode()


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_shows_on_a_terminal_unless_quiet(
    quiet: bool, tmp_path: Path, tracking_uri: str
) -> None:
    args = ["score", "--no-plots", "--results-dir", str(tmp_path), *(["-q"] if quiet else [])]
    code, terminal = _stderr_on_a_terminal(*args)
    assert code == 0
    rows = len(pd.read_csv(sample_path()))
    assert (f"scored {rows} rows (" in terminal and "rows/s)" in terminal) != quiet
