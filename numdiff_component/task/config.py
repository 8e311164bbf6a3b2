"""What a scoring job is asked, and what it asks of an engine.

`Scoring` is how rows are scored: the options and the three columns, declared once here and
used by the job (`JobConfig`), the engines, the results file's metadata, the run's params and
the report. `Engine` is the protocol between the job and its engines; the job and the engines
depend on this module and never on each other's internals.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from numdiff_component.options import Options, sample_ks

DEFAULT_BATCH_ROWS = 100_000
"""Rows read, scored and written at a time: a few batches alive bound the memory."""


def param_value(value: Any) -> str:
    """``value`` spelled as the MLproject passes it: ``true``/``false``, ``repr`` of a float,
    ``""`` for none.

    >>> [param_value(v) for v in (True, 0.99, "answer", None, "all")]
    ['true', '0.99', 'answer', '', 'all']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclass(frozen=True, kw_only=True)
class Scoring:
    """How rows are scored: the options, and which columns hold the outputs, the expected
    numbers and the row ids."""

    options: Options = field(default_factory=Options)
    output_col: str = "output"
    expected_col: str = "expected"
    id_col: str | None = None
    by: tuple[str, ...] = ()  # SPEC §3.1: the columns whose values cut the rows into groups
    threshold_col: str | None = None  # SPEC §3.2: the column of each row's threshold
    item_col: str | None = None  # the rows of one value are samples of one item (SPEC §3.3)
    k: tuple[int, ...] = (1,)  # the k of pass@k

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", sample_ks(self.k))

    def params(self) -> dict[str, str]:
        """As run params (and a results file's metadata), keyed by the MLproject's parameter
        names, valued as the MLproject passes them (`param_value`).

        >>> Scoring(id_col="id").params()["id_col"], Scoring().params()["threshold"]
        ('id', '0.99')
        """
        values: dict[str, Any] = {
            **self.options.as_dict(),
            "output_col": self.output_col,
            "expected_col": self.expected_col,
            "id_col": self.id_col,
            "by": ",".join(self.by),
            "threshold_col": self.threshold_col,
            "item_col": self.item_col,
            "k": ",".join(map(str, self.k)),
        }
        return {name: param_value(value) for name, value in values.items()}


@dataclass(frozen=True)
class JobConfig:
    """Everything ``numdiff score`` was asked to do: the input, how to score it (`Scoring`),
    where the results go, and what is logged."""

    predictions: str | None = None
    scoring: Scoring = field(default_factory=Scoring)
    format: str | None = None
    results_dir: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    track: bool = True
    plots: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS
    engine: str = "pandas"
    fail_under: float | None = None  # the quality gate: pass rate at least this
    baseline: str | None = None  # a run (id or name) or results file to compare the new run with
    fail_if_worse: bool = False  # the gate on the baseline: not significantly worse than it


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
        self, table: Any, config: JobConfig, path: Path
    ) -> Generator[pd.DataFrame, None, None]:
        """Score ``table`` into the results file (or folder) at ``path``, with the results
        metadata of `numdiff_component.task.results`; yield the results (input columns, then
        `RESULT_COLUMNS`) in batches, in input order, each row exactly once. The results are
        complete once the iterator is exhausted, and no partial file is left when it is closed
        early or raises."""
        ...

    def groups(self, path: Path, config: JobConfig) -> pd.DataFrame | None:
        """Every group of ``config.scoring.by`` (SPEC §3.1, `slices.groups.group_table`'s
        columns) computed where the complete results at ``path`` are (Spark), or None: the job
        adds them up from the batches."""
        ...
