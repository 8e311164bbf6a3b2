"""What a run records of a job: its params, metrics, tags and description, and the table
shown in MLflow's UI. No MLflow here: `numdiff_component.tracking.boundary` logs them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from numdiff_component.aggregate import headline, pass_rate_stderr
from numdiff_component.report.render import markdown, text
from numdiff_component.samples import items_line
from numdiff_component.slices.groups import group_metrics
from numdiff_component.slices.groups import summary_lines as group_lines
from numdiff_component.task.config import Scoring
from numdiff_component.task.gate import BaselineGate, Gate
from numdiff_component.task.results import PREFIX


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """What one scoring job logs: how rows were scored, where the table came from, what came
    out, and the quality gate when one was asked for."""

    scoring: Scoring = field(default_factory=Scoring)
    source: str
    dataset_name: str
    aggregates: Mapping[str, float]
    results_dir: Path
    n_rows: int
    engine: str = "pandas"
    gate: Gate | None = None
    notes: tuple[str, ...] = ()  # one-line hints shown with the results
    reports: tuple[Path, ...] = ()  # plots and summary, logged next to the results
    vs_baseline: BaselineGate | None = None  # ``--baseline``, with its gate ``--fail-if-worse``
    groups: pd.DataFrame | None = None  # with ``--by``: every group (SPEC §3.1)

    def gates(self) -> list[Gate | BaselineGate]:
        """The quality gates asked for: ``--fail-under``, ``--fail-if-worse``."""
        found: list[Gate | BaselineGate] = [] if self.gate is None else [self.gate]
        if self.vs_baseline is not None and self.vs_baseline.fail_if_worse:
            found.append(self.vs_baseline)
        return found

    def description(self) -> str:
        """The run's description (Markdown): the headline, the input, the gate. Every string a
        user gave (the input, the notes) is shown as inert text, as in ``summary.md``: no code
        span, link, image, heading or HTML can come out of it."""
        got = self.aggregates
        summary = f"{headline(got)}; {int(got['n_unparseable']):,} unparseable"
        if "n_unit_mismatch" in got:  # units on (SPEC §2.2)
            summary += f"; {int(got['n_unit_mismatch']):,} unit mismatches"
        summary += f"; no answer in {got['no_answer_rate']:.1%} of the outputs"
        if not math.isnan(got["mae"]):
            summary += (
                f"; mae {got['mae']:.6g}, median absolute error {got['median_abs_error']:.6g}"
            )
        lines = [f"**Numeric diff**: {summary}.", "", f"Input: {_inert(self.source)}"]
        if self.groups is not None:
            lines += [line for by in group_lines(self.groups) for line in ("", _inert(by))]
        if "n_items" in got:  # samples per item (SPEC §3.3)
            lines += ["", items_line(got) + "."]
        lines += [line for note in self.notes for line in ("", f"Note: {_inert(note)}.")]
        if self.gate is not None:  # as the terminal says it
            lines += ["", f"Gate {self.gate.outcome}: {self.gate.message}."]
        if self.vs_baseline is not None:
            lines += ["", _inert(self.vs_baseline.message)]
            if self.vs_baseline.fail_if_worse:
                lines[-1] += f" Gate --fail-if-worse {self.vs_baseline.outcome}."
        return "\n".join(lines)


def _inert(value: str) -> str:
    return markdown(text(value, None))


def params(evaluation: Evaluation) -> dict[str, str]:
    """The run's params: `Scoring.params` and ``predictions`` (the input), named as the
    MLproject names its parameters, valued as it passes them."""
    return {**evaluation.scoring.params(), "predictions": evaluation.source}


def new_params(wanted: Mapping[str, str], logged: Mapping[str, str]) -> dict[str, str]:
    """What to log of ``wanted`` to a run that holds ``logged`` (``mlflow run`` logs its entry
    point's parameters itself): each value once. A param the run lacks is logged; one it holds
    with the same value (also ``1`` for ``1.0``) is skipped; one it holds with another value (an
    MLproject's ``""``: not given) gets the resolved value as ``resolved/<name>``, since MLflow
    refuses to log a param twice with two values.

    >>> new_params({"a": "1.0", "b": "x", "c": "true"}, {"a": "1", "b": "", "d": "4"})
    {'resolved/b': 'x', 'c': 'true'}
    """
    found = {}
    for name, value in wanted.items():
        if name not in logged:
            found[name] = value
        elif not _same(logged[name], value):
            found[f"resolved/{name}"] = value
    return found


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def run_metrics(evaluation: Evaluation) -> dict[str, float]:
    """The run's metrics: the aggregates' (`metrics`), and those against the baseline."""
    baseline = {} if evaluation.vs_baseline is None else evaluation.vs_baseline.metrics()
    groups = {} if evaluation.groups is None else group_metrics(evaluation.groups)
    return (
        metrics(evaluation.aggregates) | baseline | {f"{PREFIX}/{k}": v for k, v in groups.items()}
    )


def metrics(aggregates: Mapping[str, float]) -> dict[str, float]:
    """``numeric_diff/<name>`` for each aggregate that is a number (NaN is not logged), and the
    pass rate's standard error, ``numeric_diff/pass_rate_stderr``."""
    values = dict(aggregates)
    if "pass_rate" in values and "n_rows" in values:
        values["pass_rate_stderr"] = pass_rate_stderr(values["pass_rate"], values["n_rows"])
    return {f"{PREFIX}/{k}": float(v) for k, v in values.items() if not math.isnan(v)}


def tags(evaluation: Evaluation) -> dict[str, str]:
    """Run tags: the description, the input, the engine, and the gate when there is one."""
    values = {
        "mlflow.note.content": evaluation.description(),
        f"{PREFIX}.input": evaluation.source,
        f"{PREFIX}.engine": evaluation.engine,
    }
    gates = evaluation.gates()
    if gates:
        values[f"{PREFIX}.gate"] = "passed" if all(g.passed for g in gates) else "failed"
    return values


def table_for_ui(results: pd.DataFrame, id_col: str | None) -> pd.DataFrame:
    """The results ordered for reading: id, label, score, the numbers read, then the input."""
    first = [id_col] if id_col else []
    first += ["label", "score", "output_value", "expected_value", "abs_error", "passed"]
    return results[first + [c for c in results.columns if c not in first]]
