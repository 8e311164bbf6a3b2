"""The hint shown with a job's results: the preset (SPEC §2.1) that would read the numbers the
model meant, said when it would change the result, with the count of rows it would change.

The job hands each scored batch to `PresetHint.add`, which keeps the first failing (or
unparseable) rows and the first passing rows, at most `SAMPLE_ROWS` of each; `PresetHint.note`
then scores those rows again with each other preset (the options given explicitly kept). No
second pass over the table: the cost is bounded whatever its size.
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
    """Collects the rows to try the presets on; `note` says which preset would do better."""

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

    def note(self) -> str | None:
        """The preset that passes more of the rows kept than it fails, the best one, said with
        its counts (and the pass rate it would give, when every row was kept); else ``None``."""
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
        return f"--preset {preset} (-P preset={preset}) would " + self._counts(gained, lost)

    def _passed(self, rows: pd.DataFrame, options: Options) -> pd.Series:
        return score_frame(rows, self.output_col, self.expected_col, options)["passed"]

    def _counts(self, gained: int, lost: int) -> str:
        failing, passing = min(self.n_failing, SAMPLE_ROWS), min(self.n_passing, SAMPLE_ROWS)
        whole = self.n_failing == failing and self.n_passing == passing
        the = "the" if whole else "the first"  # else counts of a sample, the first rows
        said = f"pass {gained:,} of {the} {failing:,} failing rows"
        said += f" and fail {lost:,} of {the} {passing:,} passing ones" if lost else ""
        if not whole:
            return said
        n = self.n_failing + self.n_passing
        before, after = self.n_passing / n, (self.n_passing + gained - lost) / n
        return said + f" (pass rate {before:.4f} -> {after:.4f})"
