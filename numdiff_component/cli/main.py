"""The ``numdiff`` command line. The only module that prints or exits.

Exit codes: 0 done; 1 a quality gate (``--fail-under``, ``--fail-if-worse``) failed; 2 bad input
or usage; 3 the tracking server could not be reached (the local results are complete all the same);
128 + the signal's number when stopped by SIGINT (130) or SIGTERM (143).
Heavy imports happen inside the commands so that ``numdiff --help`` answers at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from numdiff_component.cli.compare import compare
from numdiff_component.cli.options import (
    EXIT_GATE,
    EXIT_INPUT,
    Command,
    fail,
    guarded,
    output_failed,
    scoring_options,
    switch,
)
from numdiff_component.cli.output import Progress, print_outcome
from numdiff_component.errors import Stopped, check_stopped
from numdiff_component.options import Options
from numdiff_component.process import (
    after_command,
    end_process_at_exit,
    hold_closed_outputs,
    set_exit_code,
    stop_on_signals,
)

# Fail fast when the tracking server is down: a pipeline step should not retry for minutes.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


class _Group(click.Group):
    """The command group. Output that cannot be written (``numdiff --help | true``, a summary
    into a closed pipe) is exit 2 and one line here: click would make a closed pipe exit 1, the
    gate's code, and say nothing."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)  # --help and --version print here
        except OSError as exc:
            output_failed(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            output_failed(exc)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numdiff_component")
def cli() -> None:
    """Numeric diff evaluator: score how close numeric outputs are to the expected numbers.

    Set NUMDIFF_TRACEBACK=1 to see the traceback behind an error.
    """
    for key, value in HTTP_DEFAULTS.items():  # the user's own settings win
        os.environ.setdefault(key, value)
    # MLflow writes "View run ..." to stdout inside end_run, before the run is marked finished:
    # a closed or broken stdout would leave a run that logged everything RUNNING.
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"


threshold_col_option = click.option(
    "--threshold-col",
    default="",
    metavar="COL",
    help="Column holding each row's threshold (a number in [0, 1]; empty: --threshold).",
)
"""SPEC §3.2's column, for ``score`` and ``log-model``."""


@cli.command(cls=Command)
@guarded
@click.argument("predictions", required=False, default=None)
@click.option("--output-col", default="output", show_default=True, help="Column with the outputs.")
@click.option(
    "--expected-col",
    default="expected",
    show_default=True,
    help="Column with the expected numbers.",
)
@click.option(
    "--id-col",
    default="",
    help="Column identifying each row (kept in the results, used by compare).",
)
@click.option(
    "--by",
    multiple=True,
    metavar="COL",
    help="Also aggregate per value of COL (repeatable, or commas): metrics per group.",
)
@threshold_col_option
@click.option(
    "--item-col",
    default="",
    metavar="COL",
    help="Column naming the item each row is a sample of: per item mean@k, the vote maj@k, "
    "pass@k and agreement (SPEC §3.3), written to items.parquet.",
)
@click.option(
    "--k",
    "k",
    default="1",
    show_default=True,
    metavar="K,K,...",
    help="The k of pass@k with --item-col, comma-separated: 1,5,10.",
)
@scoring_options
@click.option(
    "--format",
    "fmt",
    default=None,
    metavar="[csv|parquet|json|jsonl]",
    help="Format of PREDICTIONS  [default: from the extension]",
)
@click.option("--experiment-name", default=None, help="MLflow experiment to log to.")
@click.option("--run-name", default=None, help="Name of the MLflow run.")
@click.option(
    "--results-dir",
    default=None,
    help="Folder for the local copy of the per-item results  [default: a new temporary folder]",
)
@click.option(
    "--fail-under",
    type=float,
    default=0.0,
    show_default=True,
    metavar="RATE",
    help="Exit 1 when the pass rate is below RATE (a pipeline quality gate).",
)
@click.option(
    "--baseline",
    default="",
    metavar="RUN",
    help="Compare the new run with RUN (a run id or name, or a results file) on the ids both "
    "hold, and log the difference and the verdict.",
)
@switch(
    "--fail-if-worse",
    "Exit 1 when the new run is significantly worse than --baseline (McNemar p < 0.05, "
    "more regressions than improvements).",
)
@click.option(
    "--engine",
    type=click.Choice(["pandas", "spark"]),
    default="pandas",
    show_default=True,
    help="pandas: stream on this machine; spark: Spark (local[2], or the cluster of spark-submit).",
)
@click.option("--no-plots", is_flag=True, help="Skip the plots and the summary report.")
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print nothing but errors (and the results path when --results-dir is not given).",
)
def score(
    predictions: str,
    output_col: str,
    expected_col: str,
    id_col: str,
    by: tuple[str, ...],
    threshold_col: str,
    item_col: str,
    k: str,
    options: Options,
    fmt: str | None,
    experiment_name: str | None,
    run_name: str | None,
    results_dir: str | None,
    fail_under: float,
    baseline: str,
    fail_if_worse: bool,
    engine: str,
    no_plots: bool,
    quiet: bool,
) -> None:
    """Score a prediction table and log the results to MLflow.

    PREDICTIONS is a local path, a URI pandas reads (s3://, https://...) or runs:/<run_id>/<path>
    (an artifact of an earlier run). Without it, or given as the word `sample`, the sample table
    inside the package is scored. Under `mlflow run`, a relative path is read from the folder
    `mlflow run` was started in.
    """
    source = _predictions(predictions)
    if not 0.0 <= fail_under <= 1.0:
        fail(f"--fail-under must be a rate between 0 and 1, got {fail_under!r}", EXIT_INPUT)
    if quiet:  # MLflow's own messages too ("Creating initial MLflow database tables...")
        import warnings

        warnings.simplefilter("ignore")  # numpy's overflow, MLflow's schema hints: not errors
        if "MLFLOW_LOGGING_LEVEL" not in os.environ:  # the user's own setting wins
            os.environ["MLFLOW_LOGGING_LEVEL"] = "WARNING"  # read when MLflow is imported
            logging.getLogger("mlflow").setLevel(logging.WARNING)  # or when it was already
    from numdiff_component.job.run import run_job
    from numdiff_component.slices.groups import by_columns
    from numdiff_component.task.config import JobConfig, Scoring
    from numdiff_component.tracking.settings import check_store_location

    check_store_location()
    config = JobConfig(
        predictions=source,
        scoring=Scoring(
            options=options,
            output_col=output_col,
            expected_col=expected_col,
            id_col=id_col or None,
            by=by_columns(by),
            threshold_col=threshold_col or None,
            item_col=item_col or None,
            k=k,  # type: ignore[arg-type]  # a text: Scoring reads it (sample_ks)
        ),
        format=fmt,
        results_dir=results_dir,
        experiment_name=experiment_name,
        run_name=run_name or None,  # the MLproject passes "" for none
        plots=not no_plots,
        engine=engine,
        fail_under=fail_under or None,  # 0: no gate
        baseline=baseline or None,  # the MLproject passes "" for none
        fail_if_worse=fail_if_worse,
    )
    if engine == "spark":
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    progress = None if quiet or not sys.stderr.isatty() else Progress()
    outcome = run_job(config, progress=progress)
    if progress is not None:
        progress.done()
    if not quiet:
        print_outcome(outcome)
    elif not results_dir:  # a new temporary folder: nobody could find it otherwise
        click.echo(outcome.results)
    failed = [gate.message for gate in outcome.evaluation.gates() if not gate.passed]
    if failed:
        fail("; ".join(failed), EXIT_GATE)


SAMPLE = "sample"
"""The word for the sample table inside the package (the MLproject's default)."""


def _predictions(given: str | None) -> str | None:
    """The input to read: ``None`` for the packaged sample. An input given explicitly must name
    something: "" or an option-like word is an `InputError`, never the sample."""
    from numdiff_component.errors import InputError

    if given is None:
        return None
    if not given.strip():
        raise InputError(
            "PREDICTIONS is empty; give a file or URI, or leave it out (or write 'sample') to "
            "score the sample table inside the package"
        )
    if given.startswith("-"):
        raise InputError(
            f"PREDICTIONS {given!r} looks like an option, not an input; a file whose name starts "
            f"with '-' is written ./{given}"
        )
    caller = _caller_folder()
    if given == SAMPLE:
        if os.path.exists(os.path.join(caller or "", SAMPLE)):
            raise InputError(
                f"'{SAMPLE}' names both the sample table inside the package and the file "
                f"{os.path.join(caller or '.', SAMPLE)!r}; write ./{SAMPLE} for the file"
            )
        return None
    from numdiff_component.inputs.sources import local_path

    if caller is not None and local_path(given) == given and not os.path.isabs(given):
        return os.path.join(caller, given)  # as MLflow reads a parameter of type path
    return given


def _caller_folder() -> str | None:
    """Under ``mlflow run``, the folder it was started in; ``None`` elsewhere (or unknown).

    ``mlflow run`` runs the step in the project folder, through ``bash -c`` (which may exec the
    step in place); the process that started it, the first ancestor that is not that shell, is
    still in the caller's folder. MLflow reads a parameter of type ``path`` from there: so is a
    relative input (a parameter of type string, so that ``runs:/`` and remote URIs pass as
    they are). Read from ``/proc``: on a system without it, paths stay as given.
    """
    if not os.environ.get("MLFLOW_RUN_ID") or not os.path.isfile("MLproject"):
        return None
    pid = os.getppid()
    try:
        for _ in range(3):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if os.path.basename(argv[0]) in (b"bash", b"sh") and argv[1:2] == [b"-c"]:
                stat = Path(f"/proc/{pid}/stat").read_bytes()
                pid = int(stat.rsplit(b")", 1)[1].split()[1])  # the shell's parent
                continue
            return os.readlink(f"/proc/{pid}/cwd")
    except (OSError, ValueError, IndexError):
        return None
    return None


# Further commands (log-model, compare) are defined below this line, one function each.


@cli.command("log-model", cls=Command)
@guarded
@click.option("--name", default="numeric_diff_model", show_default=True, help="Model name.")
@scoring_options
@threshold_col_option
@click.option("--experiment-name", default=None, help="MLflow experiment for a new run.")
@click.option("--run-name", default=None, help="Name of a new MLflow run.")
def log_model(
    name: str,
    options: Options,
    threshold_col: str,
    experiment_name: str | None,
    run_name: str | None,
) -> None:
    """Log the scorer as an MLflow pyfunc model and print its URI.

    The model takes a table with 'output' and 'expected' (text) and returns score, passed,
    label, output_value, expected_value and abs_error per row; with --threshold-col, that
    input column holds each row's threshold (numbers), recorded as row_threshold. Serve it with
    `mlflow models serve -m <URI> --env-manager local`.
    """
    from numdiff_component.adapters.pyfunc import log_numeric_diff_model

    info = log_numeric_diff_model(
        name,
        experiment_name=experiment_name,
        run_name=run_name,
        threshold_col=threshold_col or None,
        **options.as_dict(),
    )
    click.echo(info.model_uri)


cli.add_command(compare)


def main() -> None:
    """The ``numdiff`` command: the process ends with its exit code at exit
    (`process.end_process_at_exit`), a signal stops it with one line."""
    hold_closed_outputs()
    end_process_at_exit()
    try:
        _main()
    except SystemExit as exc:  # an int, None (0) or a message Python has printed (1)
        set_exit_code(exc.code if isinstance(exc.code, int) else int(exc.code is not None))
        raise
    set_exit_code(0)


def _main() -> None:
    stop_on_signals()
    stopped = False  # by a signal: then a later one changes neither the message nor the code
    try:
        try:
            cli(prog_name="numdiff")
        finally:  # the signal's exception may have been lost on the way (see check_stopped)
            check_stopped()
    except Stopped as exc:
        stopped = True
        name = signal.Signals(exc.args[0]).name
        click.echo(f"numdiff: error: stopped by {name}; no partial file is left", err=True)
        sys.exit(128 + exc.args[0])
    except OSError as exc:  # the output cannot be written: stdout is /dev/full or a closed pipe
        output_failed(exc)
    finally:
        after_command(stopped)
