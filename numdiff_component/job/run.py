"""The scoring job behind ``numdiff score`` and the MLproject: open, score, keep, report, log.

This module is engine-neutral. An engine opens the input and scores it into the results file,
handing the results back batch by batch, in input order (the `Engine` protocol of
`numdiff_component.task.config`); the pandas engine streams on this machine
(`numdiff_component.engines.pandas_engine`), the Spark engine scores where the table lives
(`numdiff_component.engines.spark`). Whatever the engine, the job then adds the batches up into the
aggregates, feeds the report, writes it next to the results, and logs the run to MLflow, so
both engines produce the same numbers, files and run contents.

The per-item results are complete in the local results folder before anything goes to the
tracking server, so a tracking failure loses nothing. A results folder the job made in the
temporary folder is removed once everything is logged; it stays when logging failed.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, nullcontext
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from numdiff_component.aggregate import AbsErrors, Totals
from numdiff_component.errors import InputError, TrackingError, check_stopped
from numdiff_component.hints import Advice, PresetHint
from numdiff_component.inputs.sources import local_path
from numdiff_component.job.baseline import against_baseline
from numdiff_component.job.items import ItemSamples, item_aggregates
from numdiff_component.job.median import Median
from numdiff_component.report.builder import ReportBuilder
from numdiff_component.samples import ItemTotals
from numdiff_component.scoring import result_schema
from numdiff_component.slices.groups import GroupTotals
from numdiff_component.slices.thresholds import ROW_THRESHOLD
from numdiff_component.task.config import Engine, JobConfig, Source
from numdiff_component.task.gate import Gate
from numdiff_component.task.results import (
    GROUPS_PARQUET,
    ITEMS_PARQUET,
    PREFIX,
    RESULTS_PARQUET,
    VS_BASELINE_PNG,
    RunResults,
    remove_temporary,
    results_folder,
)
from numdiff_component.tracking.boundary import LOG_TABLE_MAX_ROWS, import_mlflow
from numdiff_component.tracking.evaluation import Evaluation
from numdiff_component.tracking.records import load_results, log_evaluation
from numdiff_component.tracking.settings import check_settings

__all__ = ["ENGINES", "JobOutcome", "advice_note", "engine_for", "run_job"]

ENGINES = ("pandas", "spark")
DATASET_SAMPLE_ROWS = 1_000
"""Rows of a table too large to log whole whose schema is logged as the MLflow dataset."""
LOG_TABLE_MAX_COLUMNS = 500
"""Columns of the widest results logged whole (``results.json``, the dataset with its data):
MLflow's table and dataset digest take seconds per thousand columns."""


def engine_for(name: str) -> Engine:
    """The engine called ``name`` (see `ENGINES`)."""
    if name == "spark":
        try:
            from numdiff_component.engines.spark import SparkEngine
        except ImportError as exc:
            raise InputError(str(exc)) from exc
        return SparkEngine()
    if name == "pandas":
        from numdiff_component.engines.pandas_engine import PandasEngine

        return PandasEngine()
    raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}")


@dataclass(frozen=True)
class JobOutcome:
    """What the job produced. ``results_path`` is the local results file; ``kept`` says whether
    it is still there (a temporary results folder goes once the run holds its contents)."""

    evaluation: Evaluation
    run_id: str | None
    kept: bool = True

    @property
    def results_path(self) -> Path:
        return self.evaluation.results_dir / RESULTS_PARQUET

    @property
    def results(self) -> str:
        """Where the results are: the local file, or the run's artifact once it is gone."""
        if self.kept or self.run_id is None:
            return str(self.results_path)
        return f"runs:/{self.run_id}/{PREFIX}/{RESULTS_PARQUET}"


INFINITE_MAE = "mae is inf, logged to MLflow as 1.797e+308 (MLflow stores no infinity)"
"""The note shown with results whose MAE is infinite."""


@dataclass
class _Collected:
    totals: Totals
    errors: AbsErrors  # for the median absolute error and where mae comes from
    first: pd.DataFrame  # the first input rows, for the dataset's schema
    kept: list[pd.DataFrame] | None  # every result row while there are few enough to log whole
    report: ReportBuilder | None
    hint: PresetHint  # the preset that would read the numbers meant, tried on a few rows
    groups: GroupTotals | None = None  # with ``--by`` (SPEC §3.1)
    items: ItemTotals | None = None  # with ``--item-col``, grouped by the job (SPEC §3.3)

    def notes(self) -> tuple[str, ...]:
        """One-line hints for the user, shown with the results: the preset, then the single
        options, that would pass more rows (`PresetHint.advice`)."""
        return tuple(advice_note(advice) for advice in self.hint.advice())


def option_words(name: str, value: object) -> str:
    """An option's value as ``numdiff score`` and the MLproject take it:
    ``--pick last (-P pick=last)``, ``--decimal-comma (-P decimal_comma=true)``."""
    flag = "--" + name.replace("_", "-")
    if value is True or value is False:
        flag = flag if value else "--no-" + flag[2:]
        return f"{flag} (-P {name}={str(value).lower()})"
    return f"{flag} {value} (-P {name}={value})"


def advice_note(advice: Advice) -> str:
    """The advice of `PresetHint` in words, as ``numdiff score`` and the MLproject take it."""
    the = "the" if advice.whole else "the first"  # else counts of the first rows
    said = " ".join(option_words(name, value) for name, value in advice.change.items())
    said += f" would pass {advice.gained:,} of {the} {advice.failing_tried:,} failing rows"
    told = []  # the passing rows it would fail, the pass rates
    if advice.lost:
        said += f" and fail {advice.lost:,} of {the} {advice.passing_tried:,} passing ones"
        more = ", ..." if advice.lost > len(advice.broken) else ""
        told.append(", ".join(advice.broken) + more)
    if advice.whole:
        before, after = advice.pass_rates
        told.append(f"pass rate {before:.4f} -> {after:.4f}")
    return said + (f" ({'; '.join(told)})" if told else "")


def _collect(
    batches: Iterator[pd.DataFrame],
    config: JobConfig,
    source: str,
    progress: Callable[[int], None] | None,
    items: ItemSamples | None = None,
    folder: Path | None = None,
) -> _Collected:
    """Add up the result batches: totals, the first input rows, the rows to log, the report,
    and the samples per item (``--item-col``); the absolute errors beyond a million go to a
    file in ``folder`` (`Median`)."""
    totals, first = Totals(), None
    scoring = config.scoring
    errors = AbsErrors(scoring.id_col, Median(folder))
    groups = GroupTotals(scoring.by) if scoring.by else None
    limits = ROW_THRESHOLD if scoring.threshold_col else None
    hint = PresetHint(
        scoring.options, scoring.output_col, scoring.expected_col, scoring.id_col, limits
    )
    kept: list[pd.DataFrame] | None = []
    report = None
    if config.plots:
        report = ReportBuilder.of(config.scoring, title=_title(config, source))
    importing: threading.Thread | None = None
    for results in batches:
        check_stopped()  # a signal whose exception was lost on the way stops the job here
        if first is not None and importing is None and config.track:
            importing = _import_mlflow_aside()
        if first is None:
            first = results.head(DATASET_SAMPLE_ROWS).drop(columns=_result_columns(config))
        if report is not None:
            report.add(results)
        hint.add(results)
        if items is not None:
            items.add(results)
        totals += Totals.of(results)
        errors.add(results)
        if groups is not None:
            groups.add(results)
        few = totals.n <= LOG_TABLE_MAX_ROWS and len(results.columns) <= LOG_TABLE_MAX_COLUMNS
        kept = kept if kept is not None and few else None
        if kept is not None:
            kept.append(results)
        if progress is not None:
            progress(totals.n)
    if first is None:
        raise InputError(f"no rows to score in {source!r}")
    if importing is not None:
        importing.join()
    return _Collected(totals, errors, first, kept, report, hint, groups)


def _import_mlflow_aside() -> threading.Thread:
    """`import_mlflow` (seconds) in a thread, while the job scores its second batch and on.
    Not before: by then the scoring's own modules are imported (two threads importing modules
    that import each other may see them half made). Waited for before the report's child is
    forked; an error is raised again by the job's own `import_mlflow`."""
    thread = threading.Thread(target=_ignoring_errors, args=(import_mlflow,), daemon=True)
    thread.start()
    return thread


def _ignoring_errors(call: Callable[[], None]) -> None:
    with contextlib.suppress(BaseException):
        call()


def _score(
    engine: Engine,
    table: Source,
    config: JobConfig,
    path: Path,
    progress: Callable[[int], None] | None,
) -> _Collected:
    # Closed on the way out, so that an engine cleans up its files at once.
    scoring = config.scoring
    items = None  # with --item-col, grouped here unless the engine groups them (SPEC §3.3)
    if scoring.item_col is not None and not getattr(engine, "groups_items", False):
        items = ItemSamples(scoring.item_col, scoring.k, scoring.options, beside=path.parent)
    with (
        closing(engine.score(table, config, path)) as batches,
        closing(items) if items is not None else nullcontext(),
    ):
        collected = _collect(batches, config, table.source, progress, items, path.parent)
        if items is not None:
            collected.items = items.write(path.parent / ITEMS_PARQUET)
        return collected


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


def _result_columns(config: JobConfig) -> list[str]:
    names = result_schema(config.scoring.options).names
    return names + ([ROW_THRESHOLD] if config.scoring.threshold_col else [])


def _write_groups(table: pd.DataFrame, folder: Path) -> Path:
    """Every group's aggregates into ``groups.parquet`` in the results folder (SPEC §3.1)."""
    path = folder / GROUPS_PARQUET
    try:
        table.to_parquet(path, index=False)
    except OSError as exc:
        raise InputError(f"cannot write the groups to {str(folder)!r}: {exc}") from exc
    return path


def _title(config: JobConfig, source: str | None = None) -> str:
    """What names this job to a person: the run name, else ``numdiff <input file name>``."""
    if config.run_name:
        return config.run_name
    name = Path(source or config.predictions or "sample").name
    return f"numdiff {name}"


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
    if config.track:
        check_settings()  # a bad setting is said before any work, not after it
    engine = engine or engine_for(config.engine)
    table = engine.open(config)
    baseline = _baseline(config)
    with results_folder(config.results_dir, local_path(table.source)) as folder:
        outcome = _run(engine, table, config, folder / RESULTS_PARQUET, progress, baseline)
    if outcome.run_id is not None and config.results_dir is None:
        return JobOutcome(outcome.evaluation, outcome.run_id, kept=not remove_temporary(folder))
    return outcome


def _baseline(config: JobConfig) -> RunResults | None:
    """The results of the baseline run (``--baseline``), read before any scoring: a baseline
    that cannot be read fails the job at once."""
    if config.fail_if_worse and not config.baseline:
        raise InputError("--fail-if-worse needs a baseline to be worse than: give --baseline RUN")
    return load_results(config.baseline) if config.baseline else None


def _run(
    engine: Engine,
    table: Source,
    config: JobConfig,
    path: Path,
    progress: Callable[[int], None] | None,
    baseline: RunResults | None = None,
) -> JobOutcome:
    collected = _score(engine, table, config, path, progress)
    vs_baseline = None
    if baseline is not None:  # before anything is logged: no shared id is bad input
        vs_baseline = against_baseline(baseline, path, config.scoring, config.fail_if_worse)
    aggregates = collected.totals.aggregates(collected.errors.median())
    source = absolute(table.source)
    notes = collected.notes()
    items_file = path.parent / ITEMS_PARQUET
    if config.scoring.item_col is not None:  # SPEC §3.3: the items' aggregates and notes
        item_col, ks = config.scoring.item_col, config.scoring.k
        item_totals = collected.items or item_aggregates(items_file, item_col, ks)  # Spark's
        aggregates |= item_totals.aggregates()
        notes += item_totals.notes()
    # Said where the value is shown: terminal, reports, run.
    mae_note = collected.errors.note(aggregates["mae"])
    notes += () if mae_note is None else (mae_note,)
    if math.isinf(aggregates["mae"]):
        notes += (INFINITE_MAE,)
    report = collected.report
    groups = None if collected.groups is None else engine.groups(path, config)
    if groups is None and collected.groups is not None:
        groups = collected.groups.table()
    if report is not None:
        report.groups = groups  # its line per column, and the plot (SPEC §3.1)
    # Making the report and importing MLflow take a second or more each: done side by side.
    with (
        report.render_in_child(aggregates, source, notes)
        if report is not None and config.track
        else nullcontext()
    ):
        if config.track:
            import_mlflow()
        reports = _write_report(report, path, aggregates, source, notes)
    if config.scoring.item_col is not None:
        reports.append(items_file)
    if vs_baseline is not None and config.plots:
        plot = path.parent / VS_BASELINE_PNG
        plot.write_bytes(vs_baseline.histograms(_title(config, source)))
        reports.append(plot)
    if groups is not None:
        reports.append(_write_groups(groups, path.parent))
    rate = aggregates["pass_rate"]
    evaluation = Evaluation(
        scoring=config.scoring,
        source=source,
        dataset_name=table.name,
        aggregates=aggregates,
        results_dir=path.parent,
        n_rows=collected.totals.n,
        engine=config.engine,
        gate=None if config.fail_under is None else Gate(rate, config.fail_under),
        notes=notes,
        reports=tuple(reports),
        vs_baseline=vs_baseline,
        groups=groups,
    )
    if not config.track:
        return JobOutcome(evaluation, None)
    results = pd.concat(collected.kept, ignore_index=True) if collected.kept else None
    inputs = collected.first if results is None else results.drop(columns=_result_columns(config))
    try:
        run_id = log_evaluation(
            evaluation,
            inputs,
            results,
            run_name=config.run_name,
            default_run_name=_title(config, source),
            experiment_name=config.experiment_name,
        )
    except TrackingError as exc:  # say where the results are: the folder may be temporary
        failed = [gate.message for gate in evaluation.gates() if not gate.passed]
        also = f"; the gate failed too: {'; '.join(failed)}" if failed else ""
        raise TrackingError(f"{exc}; the complete results are in {str(path)!r}{also}") from exc
    return JobOutcome(evaluation, run_id)
