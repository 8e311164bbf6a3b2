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
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from numdiff_component.options import OPTION_NAMES, PRESET_OPTIONS, SCHEMA, Options, OptionSpec

EXIT_GATE, EXIT_INPUT, EXIT_TRACKING = 1, 2, 3
F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> NoReturn:
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
            if code == EXIT_INPUT:
                _record_failure(str(exc), code)
            if _traceback_asked():
                traceback.print_exc()
            _fail(str(exc), code)

    return wrapper  # type: ignore[return-value]


def _record_failure(message: str, code: int) -> None:
    """Under ``mlflow run``, tag the run with why the step failed (the README's table)."""
    if os.environ.get("MLFLOW_RUN_ID"):
        from numdiff_component.tracking import record_failure

        record_failure(message, code)


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


class _Switch(click.Option):
    """A boolean option, written ``--x``, ``--no-x`` or ``--x=true|false`` (``--fractions=all``
    too). `_Command` turns the first two into the third before click parses; the value is then
    read by `_option_value`."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        flag = self.opts[0]
        extra = "".join(f"|{c}" for c in self.choices)
        return f"{flag} / --no-{flag[2:]}, {flag}=[true|false{extra}]", record[1]

    def __init__(self, *args: Any, choices: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.choices = choices


def _click_option(spec: OptionSpec) -> Callable[[F], F]:
    # Every default is None, "not given": an option given explicitly overrides the preset's
    # value (SPEC §2.1), one not given takes it. The help shows the default without a preset.
    flag = "--" + spec.name.replace("_", "-")
    shown = str(spec.default).lower() if spec.kind is bool else str(spec.default)
    if spec.kind is float:
        domain = spec.domain.removeprefix("a number ")
        return click.option(
            flag, type=float, default=None, help=f"{spec.help} ({domain})  [default: {shown}]"
        )
    help = f"{spec.help}  [default: {shown}]"
    if spec.kind is bool:
        return click.option(flag, cls=_Switch, choices=spec.choices, default=None, help=help)
    metavar = "[" + "|".join(spec.choices) + "]"
    return click.option(flag, default=None, metavar=metavar, help=help)


class _Command(click.Command):
    """A command whose boolean options are flags (``--x``, ``--no-x``) or take a value
    (``--x=true``, as the MLproject passes them). Under ``mlflow run``, a usage error (a value
    click refuses, such as ``--fail-under abc``) is also recorded on the run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)  # then arguments, not options
        return super().parse_args(ctx, [_flag_value(arg) for arg in args[:end]] + args[end:])

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            _record_failure(exc.format_message(), EXIT_INPUT)
            raise


_SWITCHES = {"--" + spec.name.replace("_", "-") for spec in SCHEMA if spec.kind is bool}
_SPECS = {spec.name: spec for spec in SCHEMA}
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def _flag_value(arg: str) -> str:
    if arg in _SWITCHES:
        return arg + "=true"
    if arg.startswith("--no-") and "--" + arg[5:] in _SWITCHES:
        return "--" + arg[5:] + "=false"
    return arg


def _option_value(spec: OptionSpec, value: Any) -> Any:
    """A value from the command line in the option's type (validated later, by `Options`)."""
    if spec.kind is bool and isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options given on the command line: not None, and for ``preset`` and the options a
    preset sets, not "" (the MLproject passes "" for "not given")."""
    return {
        name: _option_value(_SPECS[name], value)
        for name, value in values.items()
        if value is not None and not (value == "" and name in _BLANK_IS_NOT_GIVEN)
    }


_BLANK_IS_NOT_GIVEN = {"preset", *PRESET_OPTIONS}


def scoring_options(func: F) -> F:
    """The scoring options (SPEC §2, §2.1), made from the option schema: the same on every
    command. The command receives them as one validated ``options`` argument (an `Options`):
    the preset's options, overridden by those given explicitly.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in OPTION_NAMES}
        return func(*args, options=Options.of(None, **_given(values)), **kwargs)

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
    (an artifact of an earlier run). Without it, or given as the word `sample`, the sample table
    inside the package is scored. Under `mlflow run`, a relative path is read from the folder
    `mlflow run` was started in.
    """
    source = _predictions(predictions)
    if not 0.0 <= fail_under <= 1.0:
        _fail(f"--fail-under must be a rate between 0 and 1, got {fail_under!r}", EXIT_INPUT)
    if quiet:  # MLflow's own messages too ("Creating initial MLflow database tables...")
        import warnings

        warnings.simplefilter("ignore")  # numpy's overflow, MLflow's schema hints: not errors
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    from numdiff_component.job import JobConfig, run_job
    from numdiff_component.settings import check_store_location

    check_store_location()
    config = JobConfig(
        predictions=source,
        output_col=output_col,
        expected_col=expected_col,
        id_col=id_col or None,
        options=options,
        format=fmt,
        results_dir=results_dir,
        experiment_name=experiment_name,
        run_name=run_name or None,  # the MLproject passes "" for none
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
        click.echo(f"  {'results':<12} {visible(str(outcome.results))}")
    elif not results_dir:  # a new temporary folder: nobody could find it otherwise
        click.echo(outcome.results)
    if outcome.evaluation.gate == "failed":
        from numdiff_component.aggregate import gate_failure

        _fail(gate_failure(aggregates["pass_rate"], fail_under), EXIT_GATE)


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
    from numdiff_component.tables import local_path

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
    # The first signal decides: later ones are ignored, so that the cleanup it starts (removing
    # a partial file) runs to its end, and the exit code and the message name the same signal.
    # (A handler that does nothing, not SIG_IGN: one already on its way would be reported.)
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, _ignored)
    raise _Signalled(signum)


def _ignored(signum: int, frame: object) -> None:
    pass


def _stopped_at_exit(signum: int, frame: object) -> None:
    """A signal once the command is done (MLflow's and the temporary copies' clean-up at exit):
    stop at once with the signal's code, not with a traceback from an exit handler."""
    os._exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _signalled)
    stopped = False  # by a signal: then a later one changes neither the message nor the code
    try:
        cli(prog_name="numdiff")
    except _Signalled as exc:
        stopped = True
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
            signal.signal(signum, _ignored if stopped else _stopped_at_exit)
