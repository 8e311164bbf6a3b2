"""The hint shown with a job's results: the preset (SPEC §2.1) that would read the numbers the
model meant, said when it would change the result, with the count of rows it would change.

The job hands each scored batch to `PresetHint.add`, which keeps the first failing (or
unparseable) rows and the first passing rows, at most `SAMPLE_ROWS` of each; `PresetHint.best`
then scores those rows again with each other preset (the options given explicitly kept) and
returns the best as `PresetAdvice`, which the job puts in words. No second pass over the table:
the cost is bounded whatever its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from numdiff_component.options import PRESETS, Options
from numdiff_component.scoring import score_frame

SAMPLE_ROWS = 200
"""Failing rows, and passing rows, kept to try the presets on."""


@dataclass
class PresetHint:
    """Collects the rows to try the presets on; `best` says which preset would do better."""

    options: Options
    output_col: str
    expected_col: str
    failing: list[pd.DataFrame] = field(default_factory=list)
    passing: list[pd.DataFrame] = field(default_factory=list)
    n_failing: int = 0
    n_passing: int = 0

    def add(self, results: pd.DataFrame) -> None:
        """Keep the first failing and passing rows of a scored batch (its two input columns)."""
        passed = results["passed"].to_numpy(bool)
        n_passed = int(passed.sum())
        kept = (self.failing, ~passed, self.n_failing), (self.passing, passed, self.n_passing)
        for rows, mask, seen in kept:
            if seen < SAMPLE_ROWS:
                columns = results.loc[mask, [self.output_col, self.expected_col]]
                rows.append(columns.head(SAMPLE_ROWS - seen))
        self.n_failing += len(passed) - n_passed
        self.n_passing += n_passed

    def best(self) -> PresetAdvice | None:
        """The preset that passes more of the rows kept than it fails, the best one, with its
        counts; ``None`` when no preset would."""
        if not self.n_failing:
            return None
        failing = pd.concat(self.failing, ignore_index=True)
        passing = pd.concat(self.passing, ignore_index=True) if self.passing else None
        best: tuple[int, str, int, int] | None = None
        for preset in PRESETS:
            options = Options.of(self.options, preset=preset)
            if preset == self.options.preset or options == Options.of(self.options, preset="none"):
                continue
            if options.units != self.options.units:  # units stay as asked: pint only when on
                continue
            gained = int(self._passed(failing, options).sum())
            lost = 0 if passing is None else int((~self._passed(passing, options)).sum())
            if gained > lost and (best is None or gained - lost > best[0]):
                best = (gained - lost, preset, gained, lost)
        if best is None:
            return None
        _, preset, gained, lost = best
        tried = min(self.n_failing, SAMPLE_ROWS), min(self.n_passing, SAMPLE_ROWS)
        return PresetAdvice(preset, gained, lost, *tried, self.n_failing, self.n_passing)

    def _passed(self, rows: pd.DataFrame, options: Options) -> pd.Series:
        return score_frame(rows, self.output_col, self.expected_col, options)["passed"]


@dataclass(frozen=True)
class PresetAdvice:
    """A preset that would pass more rows: of the failing rows it was tried on, ``gained``
    pass; of the passing ones, ``lost`` fail."""

    preset: str
    gained: int
    lost: int
    failing_tried: int
    passing_tried: int
    n_failing: int  # in the whole table
    n_passing: int

    @property
    def whole(self) -> bool:
        """Whether it was tried on every row (so its pass rates are the table's)."""
        return (self.failing_tried, self.passing_tried) == (self.n_failing, self.n_passing)

    @property
    def pass_rates(self) -> tuple[float, float]:
        """The table's pass rate now and with the preset (when `whole`)."""
        n = self.n_failing + self.n_passing
        return self.n_passing / n, (self.n_passing + self.gained - self.lost) / n
