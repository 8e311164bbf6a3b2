"""The ``numdiff score`` command: output, exit codes and one-line errors.

The commands run in process (click's runner); one test per exit code runs the real entry point,
``python -m numdiff_component``, in a process of its own (exit 0's is
tests/e2e/test_guarantees.py::test_job_writes_only_its_results_folder).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from numdiff_component.inputs.sources import sample_path
from numdiff_component.options import PRESETS
from numdiff_component.task.results import CLAIM
from tests.fixtures.commands import MODULE, invoke, numdiff_process, one_line_error
from tests.fixtures.servers import free_port
from tests.fixtures.tables import TABLE_FORMATS, write_file, write_table


def test_help_does_not_import_mlflow() -> None:
    code = (
        "import sys; from click.testing import CliRunner;"
        "from numdiff_component.cli.main import cli;"
        "r = CliRunner().invoke(cli, ['--help']); assert r.exit_code == 0, r.output;"
        "assert 'score' in r.output and 'compare' in r.output, r.output;"
        "r = CliRunner().invoke(cli, ['score', '--help']); assert r.exit_code == 0, r.output;"
        "assert '--fail-under' in r.output; assert 'mlflow' not in sys.modules, 'mlflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_score_sample_logs_and_summarises(tracking_uri: str, tmp_path: Path) -> None:
    done = invoke("score", "--results-dir", str(tmp_path / "res"), "--run-name", "sample")
    assert done.returncode == 0, done.stderr
    out, err = done.stdout, done.stderr
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
    done = invoke("score", "-q", "--results-dir", str(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(("fail_under", "exit_code"), [("0.5", 0), ("0.99", 1)])
def test_fail_under_is_a_quality_gate(
    tracking_uri: str, tmp_path: Path, fail_under: str, exit_code: int
) -> None:
    args = ["-q", "--no-plots", "--fail-under", fail_under, "--results-dir", str(tmp_path)]
    done = invoke("score", *args)
    assert done.returncode == exit_code
    if exit_code:
        one_line_error(done, 1, f"is below --fail-under {fail_under}")
    assert (tmp_path / "results.parquet").exists()  # the results are kept either way


BAD_INPUTS: dict[str, tuple[Callable[[Path], Path | str], list[str], str]] = {
    "missing file": (lambda d: str(d / "nope.csv"), [], "predictions file not found: '"),
    "a directory": (lambda d: str(d), [], "is a directory"),
    "corrupt parquet": (
        lambda d: write_file(d / "t.parquet", b"PAR1 not really"),
        [],
        "cannot read '",
    ),
    "unknown format": (
        lambda d: write_file(d / "t.txt", "output,expected\n1,1\n"),
        [],
        "cannot tell the format",
    ),
    "bad --format": (
        lambda d: write_file(d / "t.csv", "output,expected\n1,1\n"),
        ["--format", "xls"],
        "format must be one of",
    ),
    "missing column": (
        lambda d: write_file(d / "t.csv", "answer,expected\n1,1\n"),
        [],
        "output column 'output' not found; the columns are: 'answer', 'expected'",
    ),
    "missing id column": (
        lambda d: write_file(d / "t.csv", "output,expected\n1,1\n"),
        ["--id-col", "qid"],
        "id column 'qid' not found",
    ),
    "empty table": (lambda d: write_file(d / "t.csv", "output,expected\n"), [], "no rows to score"),
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
        lambda d: write_file(d / "t.csv", "output,expected,score\n1,1,1\n"),
        [],
        "input column 'score' has the name of a result column",
    ),
    "pickle": (
        lambda d: write_file(d / "t.pkl", b"\x80\x04."),
        [],
        "pickle file, which is not read",
    ),
    "json not a table": (lambda d: write_file(d / "t.json", "42"), [], "cannot read '"),
    "same column on both sides": (
        lambda d: write_file(d / "t.csv", "output,expected\n1,1\n"),
        ["--output-col", "expected", "--expected-col", "expected"],
        "the output and the expected column are both 'expected'",
    ),
    "preset out of domain": (
        lambda d: "",
        ["--preset", "math"],
        f"preset must be one of {', '.join(map(repr, PRESETS))}, got 'math'",
    ),
    "fractions out of domain": (
        lambda d: "",
        ["--fractions=half"],
        "fractions must be True or False or 'all', got 'half'",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    make, extra, message = BAD_INPUTS[case]
    (tmp_path / "in").mkdir()
    source = str(make(tmp_path / "in"))
    args = ["score", *([source] if source else []), *extra, "--results-dir", str(tmp_path / "res")]
    done = invoke(*args)
    one_line_error(done, 2, message)
    assert done.stdout == ""
    assert not (tmp_path / "res" / "results.parquet").exists()


@pytest.mark.parametrize("fmt", TABLE_FORMATS)
def test_every_format_is_read(fmt: str, tmp_path: Path, tracking_uri: str) -> None:
    df = pd.DataFrame({"id": ["a", "b"], "output": ["about 3", "007"], "expected": ["3", "7"]})
    path = write_table(df, tmp_path / f"t.{fmt}")
    args = ["-q", "--no-plots", "--id-col", "id", "--results-dir", str(tmp_path / "res")]
    done = invoke("score", str(path), *args)
    assert done.returncode == 0, done.stderr
    out = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert list(out["id"]) == ["a", "b"] and list(out["output"]) == ["about 3", "007"]
    assert list(out["label"]) == ["pass", "pass"]


def _stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run ``numdiff`` with stderr on a pseudo-terminal; its exit code and what it wrote there."""
    import pty

    main_fd, child_fd = pty.openpty()
    proc = subprocess.run(
        [*MODULE, *args],
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


# --- the real entry point: one process per exit code -------------------------------------------
# Exit 0: tests/e2e/test_guarantees.py::test_job_writes_only_its_results_folder.


def test_entry_point_exit_1_is_the_quality_gate(tmp_path: Path, tracking_uri: str) -> None:
    """The gate says why: a pass rate below ``--fail-under`` that would look equal rounded to
    four places is printed with every digit, and the run's description says what the terminal
    said (docs/guarantees.md, "The quality gate says why")."""
    source = write_file(tmp_path / "t.csv", "output,expected\n" + "1,1\n" * 9 + "1,2\n")
    results = tmp_path / "res"
    args = ["score", str(source), "-q", "--no-plots", "--results-dir", str(results)]
    done = numdiff_process(*args, "--fail-under", "0.9000000000000001")
    line = one_line_error(done, 1, "pass rate 0.9 is below --fail-under 0.9000000000000001")
    assert done.stdout == "" and (results / "results.parquet").exists()
    from mlflow import MlflowClient

    (run,) = MlflowClient().search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])
    description = run.data.tags["mlflow.note.content"]
    assert f"Gate failed: {line.split('error: ')[1]}." in description  # as the terminal said


def test_entry_point_exit_2_is_bad_input(tmp_path: Path) -> None:
    done = numdiff_process("score", str(tmp_path / "nope.csv"))
    one_line_error(done, 2, f"predictions file not found: {str(tmp_path / 'nope.csv')!r}")
    assert done.stdout == ""


def test_entry_point_exit_3_is_tracking_unreachable(tmp_path: Path) -> None:
    """Nothing listens on the port: exit 3 within the bounded retries, the results all kept. No
    --results-dir: they stay in the temporary folder the job made, which the line names."""
    source = write_table(
        pd.DataFrame({"id": ["a", "b"], "output": ["1", "2"], "expected": ["1", "3"]}),
        tmp_path / "t.csv",
    )
    url = f"http://127.0.0.1:{free_port()}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = numdiff_process(
        "score",
        str(source),
        "-q",
        "--no-plots",
        env={"MLFLOW_TRACKING_URI": url, "TMPDIR": str(temp)},
    )  # returns within the bound: the retries are bounded (cli.HTTP_DEFAULTS)
    (kept,) = temp.glob("numdiff-results-*")
    results = kept / "results.parquet"
    one_line_error(
        done,
        3,
        f"could not log to MLflow at {url}",
        "Connection refused",
        f"the complete results are in {str(results)!r}",
    )
    assert list(pd.read_parquet(results)["label"]) == ["pass", "fail"]
    assert sorted(os.listdir(kept)) == [CLAIM, "results.parquet"]  # nothing half-written


def test_decimal_comma_is_a_plain_flag_and_takes_true_or_false(
    tracking_uri: str, tmp_path: Path
) -> None:
    preds = str(write_file(tmp_path / "preds.csv", "output,expected\n1.234,1234\n"))
    for flag, score in (
        ("--decimal-comma", 1.0),
        ("--decimal-comma=true", 1.0),
        ("--decimal-comma=false", 1.234 / 1234),
    ):
        folder = tmp_path / flag
        done = invoke("score", flag, preds, "-q", "--no-plots", "--results-dir", str(folder))
        assert done.returncode == 0, done.stderr
        assert pd.read_parquet(folder / "results.parquet")["score"][0] == pytest.approx(score)
    done = invoke("score", "--decimal-comma=maybe", preds)
    one_line_error(done, 2, "decimal_comma must be True or False, got 'maybe'")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("", "PREDICTIONS is empty; give a file or URI, or leave it out (or write 'sample')"),
        ("  ", "PREDICTIONS is empty"),
        ("--results-dir=/x", "PREDICTIONS '--results-dir=/x' looks like an option"),
        ("-q", "PREDICTIONS '-q' looks like an option"),
    ],
)
def test_an_input_given_explicitly_must_name_one(given: str, message: str, tmp_path: Path) -> None:
    """Only leaving the input out (or the word 'sample') scores the packaged sample: an empty
    or option-like input given explicitly is bad input, never the sample (a gate would pass on
    the wrong data)."""
    done = invoke("score", "--results-dir", str(tmp_path / "res"), "--", given)
    one_line_error(done, 2, message)
    assert not (tmp_path / "res").exists()


def test_the_word_sample_names_the_packaged_sample(tracking_uri: str, tmp_path: Path) -> None:
    done = invoke("score", "sample", "-q", "--no-plots", "--results-dir", str(tmp_path / "res"))
    assert done.returncode == 0, done.stderr
    sample = pd.read_csv(sample_path(), dtype=str, keep_default_na=False)
    assert list(pd.read_parquet(tmp_path / "res" / "results.parquet")["id"]) == list(sample["id"])
    (tmp_path / "sample").write_text("output,expected\n1,1\n")  # a file of that name: which?
    done = invoke("score", "sample", "-q", "--no-plots", "--results-dir", str(tmp_path / "r2"))
    one_line_error(done, 2, "'sample' names both the sample table inside the package and the file")


def test_a_preset_and_the_options_given_reach_the_job(tracking_uri: str, tmp_path: Path) -> None:
    """What the run records and the summary shows: the preset and the options it resolved to,
    an option given explicitly winning over the preset's value."""
    preds = write_file(tmp_path / "p.csv", 'output,expected\n"Step 1: 3+4=7. Answer: 14",14\n')
    args = ["score", str(preds), "--preset", "answers", "--no-fractions", "--results-dir"]
    done = invoke(*args, str(tmp_path / "res"))
    assert done.returncode == 0, done.stderr
    assert pd.read_parquet(tmp_path / "res" / "results.parquet")["output_value"][0] == 14.0
    from mlflow import MlflowClient

    run_id = next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("  run "))
    params = MlflowClient().get_run(run_id).data.params
    recorded = {k.rsplit("/", 1)[-1]: v for k, v in params.items()}  # with or without a prefix
    assert recorded["preset"] == "answers" and recorded["pick"] == "answer"
    assert recorded["fractions"] == "false" and recorded["words"] == PRESETS["answers"]["words"]
    summary = (tmp_path / "res" / "summary.md").read_text()
    assert "preset" in summary and "answers" in summary


def test_the_hint_names_the_preset_that_reads_the_answers(
    tracking_uri: str, tmp_path: Path
) -> None:
    """The default reads the first number of a chain of thought; the hint says which preset
    would pass the rows that fail, with the count, though few outputs are like that."""
    rows = "".join(f"{i},{i}\n" for i in range(1, 19))
    rows += '"Step 1: 3+4=7. Answer: 14",14\n"2 apples, 3 pears: the answer is 5",5\n'
    preds = write_file(tmp_path / "p.csv", "output,expected\n" + rows)
    done = invoke("score", str(preds), "--no-plots", "--results-dir", str(tmp_path / "res"))
    assert done.returncode == 0, done.stderr
    note = (
        "note: --preset answers (-P preset=answers) would pass 2 of the 2 failing rows "
        "(pass rate 0.9000 -> 1.0000)"
    )
    assert note in done.stdout
    done = invoke(
        "score", str(preds), "--no-plots", "--preset", "answers", "--results-dir", str(tmp_path)
    )
    assert "note:" not in done.stdout  # nothing left to gain


@pytest.mark.slow
def test_quiet_prints_only_where_a_temporary_results_folder_is(tmp_path: Path) -> None:
    # A new store: MLflow would announce that it creates its tables.
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/new.db", "TMPDIR": str(tmp_path)}
    proc = numdiff_process("score", "-q", env=env, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("\n") == 1
    # Logged: the temporary folder is gone, and the results are where the run keeps them.
    results = proc.stdout.strip()
    run_id = results.split("/")[1]  # runs:/<id>/numeric_diff/results.parquet
    assert results == f"runs:/{run_id}/numeric_diff/results.parquet"
    assert not list(tmp_path.glob("numdiff-results-*"))
    from mlflow import MlflowClient

    assert MlflowClient(env["MLFLOW_TRACKING_URI"]).get_run(run_id).info.status == "FINISHED"


def test_compare_says_the_presets_differ(tracking_uri: str, tmp_path: Path) -> None:
    preds = str(write_file(tmp_path / "p.csv", 'output,expected\n"3+4=7. Answer: 14",14\n'))
    for folder, preset in (("a", "none"), ("b", "answers")):
        args = ["score", preds, "-q", "--no-plots", "--preset", preset, "--results-dir"]
        assert invoke(*args, str(tmp_path / folder)).returncode == 0
    done = invoke(
        "compare", str(tmp_path / "a" / "results.parquet"), str(tmp_path / "b" / "results.parquet")
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "options differ" in line)
    assert "preset none in A, answers in B" in line and "pick first in A, answer in B" in line
