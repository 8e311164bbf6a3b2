"""The scoring job behind ``numdiff score`` and the MLproject: open, score, keep, report, log.

This module is engine-neutral. An engine opens the input and scores it into the results file,
handing the results back batch by batch, in input order (`Engine`); the pandas engine streams
on this machine (`numdiff_component.pandas_engine`), the Spark engine scores where the table
lives (`numdiff_component.spark`). Whatever the engine, the job then adds the batches up into
the aggregates, feeds the report, writes it next to the results, and logs the run to MLflow, so
both engines produce the same numbers, files and run contents.

The per-item results are complete in the local results folder before anything goes to the
tracking server, so a tracking failure loses nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from numdiff_component.aggregate import Totals, gate_failure
from numdiff_component.errors import InputError, TrackingError
from numdiff_component.options import Options
from numdiff_component.parse import several_numbers
from numdiff_component.report import (
    HISTOGRAM_PNG,
    REPORT_HTML,
    SCATTER_PNG,
    SUMMARY_MD,
    ReportBuilder,
)
from numdiff_component.scoring import RESULT_COLUMNS
from numdiff_component.tables import DEFAULT_BATCH_ROWS, StreamBroken, local_path
from numdiff_component.tracking import (
    LOG_TABLE_MAX_ROWS,
    RESULTS_METADATA,
    RESULTS_PARQUET,
    Evaluation,
    log_evaluation,
    scoring_params,
)

ENGINES = ("pandas", "spark")
DATASET_SAMPLE_ROWS = 1_000
"""Rows of a table too large to log whole whose schema is logged as the MLflow dataset."""
LOG_TABLE_MAX_COLUMNS = 500
"""Columns of the widest results logged whole (``results.json``, the dataset with its data):
MLflow's table and dataset digest take seconds per thousand columns."""
SEVERAL_NUMBERS_SHARE = 0.5
"""With ``pick="first"``, the share of outputs holding several numbers from which the job says
that the first is read, and names ``--pick answer``."""


@dataclass(frozen=True)
class JobConfig:
    """Everything ``numdiff score`` was asked to do."""

    predictions: str | None = None
    output_col: str = "output"
    expected_col: str = "expected"
    id_col: str | None = None
    options: Options = field(default_factory=Options)
    format: str | None = None
    results_dir: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    track: bool = True
    plots: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS
    engine: str = "pandas"
    fail_under: float | None = None  # the quality gate: pass rate at least this

    def results_metadata(self) -> dict[str, str]:
        """What the results file records of how it was made: the run's scoring params (compare
        reads the id column and the options)."""
        return scoring_params(self.options, self.output_col, self.expected_col, self.id_col)


class Source(Protocol):
    """An opened input: ``source`` is what the user gave, ``name`` the dataset's name."""

    @property
    def source(self) -> str: ...

    @property
    def name(self) -> str: ...


class Engine(Protocol):
    """What the job needs of an engine."""

    def open(self, config: JobConfig) -> Source:
        """Check what can be checked before scoring (the input exists, its columns)."""
        ...

    def score(
        self, table: Any, config: JobConfig, path: Path, batch_rows: int | None
    ) -> Generator[pd.DataFrame, None, None]:
        """Score ``table`` into the results file at ``path``, yielding the results (input
        columns, then `RESULT_COLUMNS`) in batches in input order. The file is complete once
        the iterator is exhausted; it is not left half-written when the iterator is closed
        early. `StreamBroken`: read the table again with ``batch_rows=None`` (whole)."""
        ...


def engine_for(name: str) -> Engine:
    """The engine called ``name`` (see `ENGINES`)."""
    if name == "spark":
        try:
            from numdiff_component.spark import SparkEngine
        except ImportError as exc:
            raise InputError(str(exc)) from exc
        return SparkEngine()
    if name == "pandas":
        from numdiff_component.pandas_engine import PandasEngine

        return PandasEngine()
    raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")


@dataclass(frozen=True)
class JobOutcome:
    """What the job produced."""

    evaluation: Evaluation
    run_id: str | None

    @property
    def results_path(self) -> Path:
        return self.evaluation.results_dir / RESULTS_PARQUET


OUTPUTS = (RESULTS_PARQUET, HISTOGRAM_PNG, SCATTER_PNG, SUMMARY_MD, REPORT_HTML)
"""The files a job writes in its results folder."""
CLAIM = ".numdiff"
"""In a results folder: the outputs a job wrote there (JSON), and the lock of the job using it."""


@contextmanager
def results_folder(requested: str | None, input_path: str | None = None) -> Iterator[Path]:
    """The folder for the local copy of the results, held for this job alone.

    A new temporary folder, or the one asked for, created when missing. Nothing the user gave is
    overwritten: a folder holding a file with an output's name that no job wrote there, or the
    input itself, is refused; a folder another job is using is refused. The outputs an earlier
    job left there are removed first, so that no stale file sits beside new results.
    """
    folder = Path(requested or tempfile.mkdtemp(prefix="numdiff-results-"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        claim = open(folder / CLAIM, "a+", encoding="utf-8")  # noqa: SIM115 - held below
    except OSError as exc:
        raise InputError(f"cannot use results folder {str(folder)!r}: {exc.strerror}") from exc
    with claim:
        try:
            fcntl.flock(claim, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the process ends
        except BlockingIOError:
            raise InputError(
                f"results folder {str(folder)!r} is in use by another numdiff job; give each "
                "job its own --results-dir"
            ) from None
        claim.seek(0)
        try:
            ours = set(json.loads(claim.read() or "[]"))
        except ValueError:  # not a claim numdiff wrote: then nothing here is a job's
            ours = set()
        for name in OUTPUTS:
            path = folder / name
            if input_path is not None and path.exists() and path.samefile(input_path):
                raise InputError(
                    f"the input {input_path!r} is in the results folder, where {name!r} is "
                    "written; give another --results-dir"
                )
            if path.exists() and name not in ours:
                raise InputError(
                    f"results folder {str(folder)!r} holds {name!r}, which no numdiff job "
                    "wrote; give an empty or new --results-dir (nothing you gave is overwritten)"
                )
        for name in OUTPUTS:
            path = folder / name
            if path.is_dir():
                shutil.rmtree(path)  # a Spark engine's results folder
            else:
                path.unlink(missing_ok=True)
        claim.seek(0)
        claim.truncate()
        claim.write(json.dumps(list(OUTPUTS)))
        claim.flush()
        yield folder


@dataclass
class _Collected:
    totals: Totals
    first: pd.DataFrame  # the first input rows, for the dataset's schema
    kept: list[pd.DataFrame] | None  # every result row while there are few enough to log whole
    report: ReportBuilder | None
    n_several: int  # outputs holding several numbers (counted with pick="first" only)

    def notes(self, options: Options) -> tuple[str, ...]:
        """One-line hints for the user, shown with the results."""
        share = self.n_several / self.totals.n if self.totals.n else 0.0
        if options.pick != "first" or share < SEVERAL_NUMBERS_SHARE:
            return ()
        return (
            f"{share:.0%} of outputs hold several numbers; the first is read "
            "(--pick answer reads the final answer)",
        )


def _collect(
    batches: Iterator[pd.DataFrame],
    config: JobConfig,
    source: str,
    progress: Callable[[int], None] | None,
) -> _Collected:
    """Add up the result batches: totals, the first input rows, the rows to log, the report."""
    totals, first, n_several = Totals(), None, 0
    kept: list[pd.DataFrame] | None = []
    report = None
    if config.plots:
        report = ReportBuilder(
            config.options, config.output_col, config.expected_col, config.id_col
        )
    for results in batches:
        if first is None:
            first = results.head(DATASET_SAMPLE_ROWS).drop(columns=list(RESULT_COLUMNS))
        if report is not None:
            report.add(results)
        if config.options.pick == "first":
            n_several += int(several_numbers(results[config.output_col], config.options).sum())
        totals += Totals.of(results)
        few = totals.n <= LOG_TABLE_MAX_ROWS and len(results.columns) <= LOG_TABLE_MAX_COLUMNS
        kept = kept if kept is not None and few else None
        if kept is not None:
            kept.append(results)
        if progress is not None:
            progress(totals.n)
    if first is None:
        raise InputError(f"no rows to score in {source!r}")
    return _Collected(totals, first, kept, report, n_several)


def _score(
    engine: Engine,
    table: Source,
    config: JobConfig,
    path: Path,
    progress: Callable[[int], None] | None,
) -> _Collected:
    # Closed on the way out, so that an engine cleans up its files at once.
    try:
        with closing(engine.score(table, config, path, config.batch_rows)) as batches:
            return _collect(batches, config, table.source, progress)
    except StreamBroken:
        with closing(engine.score(table, config, path, None)) as batches:
            return _collect(batches, config, table.source, progress)


def _write_report(
    report: ReportBuilder | None,
    path: Path,
    aggregates: dict[str, float],
    source: str,
    notes: tuple[str, ...],
) -> list[Path]:
    """The plots and summary next to the results; on a write error (a full disk) none is left."""
    if report is None:
        return []
    try:
        return report.write(path.parent, aggregates, source, notes)
    except OSError as exc:
        raise InputError(
            f"cannot write the report to {str(path.parent)!r}: {exc}; "
            f"the complete results are in {str(path)!r}"
        ) from exc


def absolute(source: str) -> str:
    """``source`` as an absolute path when it names a local file, else as given (a URI)."""
    local = local_path(source)
    return os.path.abspath(local) if local is not None and local == source else source


def run_job(
    config: JobConfig,
    progress: Callable[[int], None] | None = None,
    *,
    engine: Engine | None = None,
) -> JobOutcome:
    """Score the input into the local results folder with the configured engine, write the
    report, then log to MLflow (unless ``config.track`` is false).

    ``progress`` is called with the number of rows scored so far after each batch.
    """
    engine = engine or engine_for(config.engine)
    table = engine.open(config)
    with results_folder(config.results_dir, local_path(table.source)) as folder:
        return _run(engine, table, config, folder / RESULTS_PARQUET, progress)


def _run(
    engine: Engine,
    table: Source,
    config: JobConfig,
    path: Path,
    progress: Callable[[int], None] | None,
) -> JobOutcome:
    collected = _score(engine, table, config, path, progress)
    if path.is_dir():  # part files (Spark): what a results file keeps in its metadata
        (path / RESULTS_METADATA).write_text(json.dumps(config.results_metadata()))
    aggregates = collected.totals.aggregates()
    source = absolute(table.source)
    notes = collected.notes(config.options)
    reports = _write_report(collected.report, path, aggregates, source, notes)
    evaluation = Evaluation(
        source=source,
        dataset_name=table.name,
        options=config.options,
        output_col=config.output_col,
        expected_col=config.expected_col,
        id_col=config.id_col,
        aggregates=aggregates,
        results_dir=path.parent,
        n_rows=collected.totals.n,
        engine=config.engine,
        fail_under=config.fail_under,
        notes=notes,
        reports=tuple(reports),
    )
    if not config.track:
        return JobOutcome(evaluation, None)
    results = pd.concat(collected.kept, ignore_index=True) if collected.kept else None
    inputs = collected.first if results is None else results.drop(columns=list(RESULT_COLUMNS))
    try:
        run_id = log_evaluation(
            evaluation,
            inputs,
            results,
            run_name=config.run_name,
            default_run_name=f"numdiff {Path(evaluation.source).name}",
            experiment_name=config.experiment_name,
        )
    except TrackingError as exc:  # say where the results are: the folder may be temporary
        gate, rate = "", aggregates["pass_rate"]
        if evaluation.gate == "failed" and config.fail_under is not None:  # a failure of its own
            gate = f"; the gate failed too: {gate_failure(rate, config.fail_under)}"
        raise TrackingError(f"{exc}; the complete results are in {str(path)!r}{gate}") from exc
    return JobOutcome(evaluation, run_id)
