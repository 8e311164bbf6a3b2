"""A new run against its baseline (``numdiff score --baseline RUN``): the comparison on the ids
both hold, its figures as run metrics, the verdict in one sentence, and the gate
``--fail-if-worse`` (the candidate significantly worse: McNemar's p below 0.05 with more
regressions than improvements). No MLflow: the job reads the baseline through `tracking`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from numdiff_component.compare.comparison import Comparison, compare_results, resolve_id_col
from numdiff_component.compare.render import verdict_sentence
from numdiff_component.errors import InputError
from numdiff_component.options import Options
from numdiff_component.report.plots import Histogram, draw_histograms, histogram_counts
from numdiff_component.scoring import UNPARSEABLE
from numdiff_component.task.config import Scoring
from numdiff_component.task.results import PREFIX, RunResults, read_local

METRICS = f"{PREFIX}/vs_baseline"
"""The prefix of the run metrics that compare a run with its baseline."""


@dataclass(frozen=True)
class VsBaseline:
    """The new run (B) against its baseline (A), on the rows whose ids both hold."""

    comparison: Comparison
    baseline: str  # what names the baseline to a person (`RunResults.label`)
    fail_if_worse: bool = False
    thresholds: tuple[float, float] = (Options().threshold, Options().threshold)  # A's, B's

    @property
    def passed(self) -> bool:
        """False when ``fail_if_worse`` and the new run is significantly worse."""
        return not (self.fail_if_worse and self.comparison.verdict == "worse")

    @property
    def outcome(self) -> str:
        return "passed" if self.passed else "failed"

    @property
    def message(self) -> str:
        """The verdict in one sentence, with the figures (`compare.render.verdict_sentence`)."""
        return verdict_sentence(self.comparison, self.baseline)

    def histograms(self, title: str) -> bytes:
        """The baseline's and this run's (``title``) score histograms on one y scale."""
        return score_histograms(self.comparison, (self.baseline, title), self.thresholds)

    def metrics(self) -> dict[str, float]:
        """``numeric_diff/vs_baseline/<figure>``: the paired differences and their intervals,
        McNemar's p and the counts; a NaN (no interval on one row) is not logged."""
        c = self.comparison
        figures = {"mcnemar_p": c.p_value}
        for name, delta in c.deltas.items():
            figures |= {
                f"{name}_delta": delta.diff,
                f"{name}_delta_ci_low": delta.low,
                f"{name}_delta_ci_high": delta.high,
            }
        figures |= {"n_improved": c.n_improved, "n_regressed": c.n_regressed}
        figures["n_shared"] = len(c.rows)
        return {f"{METRICS}/{k}": float(v) for k, v in figures.items() if not math.isnan(v)}


def score_histograms(
    comparison: Comparison, titles: tuple[str, str], thresholds: tuple[float, float]
) -> bytes:
    """The score histograms of A and B on their paired rows, side by side on one y scale (PNG),
    each titled and with its threshold."""
    sides = []
    for side, title, threshold in zip("ab", titles, thresholds, strict=True):
        rows = comparison.rows
        counts = histogram_counts(
            rows[f"score_{side}"].to_numpy(dtype=float),
            rows[f"passed_{side}"].to_numpy(dtype=bool),
            rows[f"label_{side}"].to_numpy(dtype=object) != UNPARSEABLE,
        )
        sides.append(Histogram(*counts, threshold, title))
    return draw_histograms(sides)


def recorded_threshold(results: RunResults) -> float:
    """The threshold a run's rows were held to, as recorded; the default when unknown."""
    try:
        return float(results.options.get("threshold", Options().threshold))
    except ValueError:
        return Options().threshold


def against_baseline(
    baseline: RunResults, results: Path, scoring: Scoring, fail_if_worse: bool
) -> VsBaseline:
    """The results file (or Spark folder) at ``results`` against ``baseline``, paired by the id
    column (this job's, else the baseline's when both tables hold it; row position without
    one), on the ids both hold. None in common is `InputError`."""
    new = read_local(results, str(results)).frame
    id_col = resolve_id_col(scoring.id_col, (baseline.id_col,), baseline.frame, new)
    try:
        comparison = compare_results(baseline.frame, new, id_col=id_col, shared=True)
    except InputError as exc:  # its A and B: the baseline and the new run
        raise InputError(f"cannot compare with the baseline {baseline.label!r}: {exc}") from exc
    thresholds = (recorded_threshold(baseline), scoring.options.threshold)
    return VsBaseline(comparison, baseline.label, fail_if_worse, thresholds)
