"""The ``numdiff`` command line. The only module that prints or exits.

Exit codes: 0 done; 1 the quality gate (``--fail-under``) failed; 2 bad input or usage;
3 the tracking server could not be reached (the local results are complete all the same);
128 + the signal's number when stopped by SIGINT (130) or SIGTERM (143).
Heavy imports happen inside the commands so that ``numdiff --help`` answers at once.
"""

from __future__ import annotations

import errno
import functools
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from numdiff_component.options import OPTION_NAMES, SCHEMA, Options, OptionSpec

EXIT_GATE, EXIT_INPUT, EXIT_TRACKING = 1, 2, 3
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> None:
    from numdiff_component.errors import visible

    click.echo(f"numdiff: error: {visible(message)}", err=True)  # no control byte reaches the tty
    sys.exit(code)


def _traceback_asked() -> bool:
    return os.environ.get("NUMDIFF_TRACEBACK", "").strip().lower() in ("1", "true", "yes", "on")


def _guarded(func: F) -> F:
    """Turn the core's typed errors into one line on stderr and an exit code."""

    @functools.wraps(func)  # keeps the click parameters declared below it
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from numdiff_component.errors import NumdiffError, TrackingError

        try:
            return func(*args, **kwargs)
        except (NumdiffError, TrackingError) as exc:
            code = EXIT_TRACKING if isinstance(exc, TrackingError) else EXIT_INPUT
            if code == EXIT_INPUT and os.environ.get("MLFLOW_RUN_ID"):
                from numdiff_component.tracking import record_failure

                record_failure(str(exc), code)
            if _traceback_asked():
                traceback.print_exc()
            _fail(str(exc), code)

    return wrapper  # type: ignore[return-value]


# Fail fast when the tracking server is down: a pipeline step should not retry for minutes.
_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "20"}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numdiff_component")
def cli() -> None:
    """Numeric diff evaluator: score how close numeric outputs are to the expected numbers.

    Set NUMDIFF_TRACEBACK=1 to see the traceback behind an error.
    """
    for key, value in _HTTP_DEFAULTS.items():  # the user's own settings win
        os.environ.setdefault(key, value)


def summary_lines(aggregates: Mapping[str, float], threshold: float) -> list[str]:
    """The aggregates as an aligned table, each with its standard error where one exists."""
    from numdiff_component.aggregate import pass_rate_stderr

    n = aggregates["n_rows"]
    rate = aggregates["pass_rate"]
    rows = [
        ("mean_score", f"{aggregates['mean_score']:.4f}", aggregates["mean_score_stderr"], ""),
        ("pass_rate", f"{rate:.4f}", pass_rate_stderr(rate, n), f"score >= {threshold:g}"),
        (
            "mae",
            "n/a" if math.isnan(aggregates["mae"]) else f"{aggregates['mae']:.6g}",
            math.nan,
            # MLflow stores no infinity: the metric holds the largest float instead.
            "logged to MLflow as 1.797e+308" if math.isinf(aggregates["mae"]) else "",
        ),
        ("rows", f"{int(n):,}", math.nan, ""),
        ("unparseable", f"{int(aggregates['n_unparseable']):,}", math.nan, "no number on a side"),
    ]
    lines = [f"  {'':<12} {'value':>10}  {'std. error':>10}"]
    for name, value, stderr, note in rows:
        err = "" if math.isnan(stderr) else f"{stderr:.4f}"
        lines.append(f"  {name:<12} {value:>10}  {err:>10}  {note}".rstrip())
    return lines


def _click_option(spec: OptionSpec) -> Callable[[F], F]:
    flag = "--" + spec.name.replace("_", "-")
    if spec.kind is bool:  # --x/--no-x; --x=true|false too (`_Command`), as the MLproject passes
        return click.option(
            f"{flag}/--no-{flag[2:]}", default=spec.default, show_default=True, help=spec.help
        )
    if spec.kind is float:
        return click.option(
            flag,
            type=float,
            default=spec.default,
            show_default=True,
            help=f"{spec.help} ({spec.domain.removeprefix('a number ')})",
        )
    return click.option(
        flag,
        default=spec.default,
        show_default=True,
        metavar="[" + "|".join(spec.choices) + "]",
        help=spec.help,
    )


class _Command(click.Command):
    """A command whose boolean flags also take ``--flag=true`` / ``--flag=false``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, [_flag_value(arg) for arg in args])


_FLAGS = {"--" + spec.name.replace("_", "-") for spec in SCHEMA if spec.kind is bool}
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off", ""}


def _flag_value(arg: str) -> str:
    flag, equals, value = arg.partition("=")
    if not equals or flag not in _FLAGS:
        return arg
    if value.lower() in _TRUE:
        return flag
    if value.lower() in _FALSE:
        return "--no-" + flag[2:]
    raise click.BadParameter(f"{value!r} is not true or false", param_hint=f"'{flag}'")


def scoring_options(func: F) -> F:
    """The scoring options (SPEC §2), made from the option schema: the same on every command.

    The command receives them as one validated ``options`` argument (an `Options`).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in OPTION_NAMES}
        return func(*args, options=Options.of(None, **values), **kwargs)

    for spec in reversed(SCHEMA):
        wrapper = _click_option(spec)(wrapper)
    return wrapper  # type: ignore[return-value]


class _Progress:
    """Rows scored and rows per second on one terminal line, redrawn at most 5 times a second."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.rows = 0

    def __call__(self, rows: int) -> None:
        self.rows = rows
        now = time.monotonic()
        if now - self.last >= 0.2:
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self.rows / max(now - self.start, 1e-9)
        click.echo(f"\rscored {self.rows:,} rows ({rate:,.0f} rows/s)", nl=False, err=True)

    def done(self) -> None:
        self._draw(time.monotonic())
        click.echo(err=True)


@cli.command(cls=_Command)
@_guarded
@click.argument("predictions", required=False, default="")
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
    options: Options,
    fmt: str | None,
    experiment_name: str | None,
    run_name: str | None,
    results_dir: str | None,
    fail_under: float,
    engine: str,
    no_plots: bool,
    quiet: bool,
) -> None:
    """Score a prediction table and log the results to MLflow.

    PREDICTIONS is a local path, a URI pandas reads (s3://, https://...) or runs:/<run_id>/<path>
    (an artifact of an earlier run). Without it, the sample table inside the package is scored.
    """
    if not 0.0 <= fail_under <= 1.0:
        _fail(f"--fail-under must be a rate between 0 and 1, got {fail_under!r}", EXIT_INPUT)
    if quiet:  # MLflow's own messages too ("Creating initial MLflow database tables...")
        import warnings

        warnings.simplefilter("ignore")  # numpy's overflow, MLflow's schema hints: not errors
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    from numdiff_component.job import JobConfig, run_job
    from numdiff_component.tracking import check_store_location

    check_store_location()
    config = JobConfig(
        predictions=predictions or None,
        output_col=output_col,
        expected_col=expected_col,
        id_col=id_col or None,
        options=options,
        format=fmt,
        results_dir=results_dir,
        experiment_name=experiment_name,
        run_name=run_name,
        plots=not no_plots,
        engine=engine,
        fail_under=fail_under or None,  # 0: no gate
    )
    if engine == "spark":
        import warnings

        warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    progress = None if quiet or not sys.stderr.isatty() else _Progress()
    outcome = run_job(config, progress=progress)
    if progress is not None:
        progress.done()
    aggregates = outcome.evaluation.aggregates
    if not quiet:
        from numdiff_component.errors import visible

        # Paths are the user's text: an escape sequence or U+202E is shown, not obeyed.
        click.echo(f"numeric diff: {visible(outcome.evaluation.source)}")
        click.echo("\n".join(summary_lines(aggregates, options.threshold)))
        for note in outcome.evaluation.notes:
            click.echo(f"  note: {note}")
        if outcome.run_id:
            click.echo(f"  {'run':<12} {outcome.run_id}")
            click.echo(f"  {'artifacts':<12} runs:/{outcome.run_id}/numeric_diff/")
        click.echo(f"  {'results':<12} {visible(str(outcome.results_path))}")
    elif not results_dir:  # a new temporary folder: nobody could find it otherwise
        click.echo(outcome.results_path)
    if outcome.evaluation.gate == "failed":
        from numdiff_component.aggregate import gate_failure

        _fail(gate_failure(aggregates["pass_rate"], fail_under), EXIT_GATE)


# Further commands (log-model, compare) are defined below this line, one function each.


@cli.command("log-model", cls=_Command)
@_guarded
@click.option("--name", default="numeric_diff_model", show_default=True, help="Model name.")
@scoring_options
@click.option("--experiment-name", default=None, help="MLflow experiment for a new run.")
@click.option("--run-name", default=None, help="Name of a new MLflow run.")
def log_model(
    name: str,
    options: Options,
    experiment_name: str | None,
    run_name: str | None,
) -> None:
    """Log the scorer as an MLflow pyfunc model and print its URI.

    The model takes a table with 'output' and 'expected' (text) and returns score, passed,
    label, output_value, expected_value and abs_error per row. Serve it with
    `mlflow models serve -m <URI> --env-manager local`.
    """
    from numdiff_component.pyfunc import log_numeric_diff_model

    info = log_numeric_diff_model(
        name,
        experiment_name=experiment_name,
        run_name=run_name,
        **options.as_dict(),
    )
    click.echo(info.model_uri)


@cli.command()
@_guarded
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--id-col",
    default="",
    help="Column matching rows of A and B  [default: the runs' id column; else row position]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Rows listed per section (0: all).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Significance level of the pass/fail change test.",
)
@click.option("--log", "log_run", is_flag=True, help="Record the comparison in a new MLflow run.")
@click.option("--experiment-name", default=None, help="MLflow experiment for --log.")
def compare(
    run_a: str,
    run_b: str,
    id_col: str,
    as_json: bool,
    limit: int,
    alpha: float,
    log_run: bool,
    experiment_name: str | None,
) -> None:
    """Compare the per-item results of two scoring runs: B against A.

    RUN_A and RUN_B are MLflow run ids (their numeric_diff/results.parquet is read) or local
    results Parquet files. Rows are matched by id when the runs have an id column, by position
    otherwise. Shows the aggregates side by side, McNemar's exact test on the pass/fail
    changes, and the rows that regressed, improved or dropped most.
    """
    import json

    from numdiff_component.compare import compare_results, resolve_id_col, run_warnings
    from numdiff_component.compare_render import format_text, to_json
    from numdiff_component.errors import visible
    from numdiff_component.tracking import load_results, log_comparison

    a, b = load_results(run_a), load_results(run_b)
    for side, run in (("A", a), ("B", b)):
        for warning in run_warnings(side, run.source, run.status, run.deleted):
            click.echo(f"numdiff: warning: {visible(warning)}", err=True)
    matched_by = resolve_id_col(id_col or None, (a.id_col, b.id_col), a.frame, b.frame)
    comparison = compare_results(a.frame, b.frame, id_col=matched_by, alpha=alpha)
    summary: dict[str, Any] = {"a": run_a, "b": run_b, "options": {"a": a.options, "b": b.options}}
    summary.update(to_json(comparison, limit or None))
    if log_run:
        summary["run_id"] = log_comparison(summary, run_a, run_b, experiment_name=experiment_name)
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(format_text(comparison, run_a, run_b, limit or None, (a.options, b.options)))
    if log_run:
        click.echo(f"\n  logged to run {summary['run_id']}")


class _Signalled(BaseException):
    """SIGINT or SIGTERM: unwinds like an exception, so that no partial file is left behind.
    Not a KeyboardInterrupt, which click would turn into exit code 1 (the gate's)."""


def _signalled(signum: int, frame: object) -> None:
    raise _Signalled(signum)


def _stopped_at_exit(signum: int, frame: object) -> None:
    """A signal once the command is done (MLflow's and the temporary copies' clean-up at exit):
    stop at once with the signal's code, not with a traceback from an exit handler."""
    os._exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _signalled)
    try:
        cli(prog_name="numdiff")
    except _Signalled as exc:
        name = signal.Signals(exc.args[0]).name
        click.echo(f"numdiff: error: stopped by {name}; no partial file is left", err=True)
        sys.exit(128 + exc.args[0])
    except OSError as exc:  # the output cannot be written: stdout is /dev/full or a closed pipe
        if exc.errno not in (errno.ENOSPC, errno.EPIPE, errno.EIO):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        _fail(f"cannot write the output: {exc.strerror}", EXIT_INPUT)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _stopped_at_exit)
