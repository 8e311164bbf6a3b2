"""The hints shown with a job's results: the preset (SPEC §2.1), and the single options, that
would read the numbers the model meant, said when they would change the result, with the count
of rows they would change and the passing rows they would fail.

The job hands each scored batch to `PresetHint.add`, which keeps the first failing (or
unparseable) rows and the first passing rows, at most `SAMPLE_ROWS` of each, labelled by their
id (or row number); `PresetHint.best` then scores those rows again with each other preset (the
options given explicitly kept) and returns the best as an `Advice`; `single_options` does the
same with each other value of every reading option the schema enumerates, and `advice` keeps
those that do as well as the preset. The job puts them in words. No second pass over the table:
the cost is bounded whatever its size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.options import PRESETS, SCHEMA, Options
from numdiff_component.scoring import passes, score, score_frame

SAMPLE_ROWS = 200
"""Failing rows, and passing rows, kept to try the presets and options on."""
NAMED_ROWS = 5
"""Passing rows an advice would fail, named by their id or row number."""
OPTION_ADVICE = 3
"""Single options suggested, at most."""
FEW_ROWS = 50
"""Rows scored again by the one-value reader (`PresetHint._passed`)."""


def single_changes(options: Options) -> Iterator[dict[str, Any]]:
    """Each other value of each reading option whose domain the schema enumerates (a switch, a
    choice), in schema order: not the preset, the bar (``threshold``, ``floor``), the lists, or
    ``units`` (units stay as asked: pint only when on)."""
    for spec in SCHEMA:
        if spec.name in ("preset", "units") or spec.kind not in (bool, str):
            continue
        values = (False, True, *spec.choices) if spec.kind is bool else spec.choices
        for value in values:
            if value != getattr(options, spec.name):
                yield {spec.name: value}


@dataclass
class PresetHint:
    """Collects the rows to try presets and options on; `best` and `single_options` say which would
    do better."""

    options: Options
    output_col: str
    expected_col: str
    id_col: str | None = None
    limits_col: str | None = None  # the column of each row's own threshold (SPEC §3.2)
    failing: list[pd.DataFrame] = field(default_factory=list)
    passing: list[pd.DataFrame] = field(default_factory=list)
    n_failing: int = 0
    n_passing: int = 0

    def add(self, results: pd.DataFrame) -> None:
        """Keep the first failing and passing rows of a scored batch (its two input columns),
        indexed by their id, or their row number counted from 1."""
        passed = results["passed"].to_numpy(bool)
        n_passed = int(passed.sum())
        start = self.n_failing + self.n_passing  # rows before this batch
        kept = (self.failing, ~passed, self.n_failing), (self.passing, passed, self.n_passing)
        for rows, mask, seen in kept:
            if seen < SAMPLE_ROWS:
                at = np.flatnonzero(mask)[: SAMPLE_ROWS - seen]
                kept_columns = [self.output_col, self.expected_col]
                kept_columns += [self.limits_col] if self.limits_col else []
                columns = results.iloc[at][kept_columns]
                if self.id_col is not None:
                    labels = results[self.id_col].iloc[at].astype(str).to_numpy()
                else:
                    labels = np.array([f"row {start + n + 1}" for n in at])
                rows.append(columns.set_axis(pd.Index(labels, dtype=object)))
        self.n_failing += len(passed) - n_passed
        self.n_passing += n_passed

    def best(self) -> Advice | None:
        """The preset that passes more of the rows kept than it fails, the best one, with its
        counts; ``None`` when no preset would."""
        tried = []
        for preset in PRESETS:
            options = Options.of(self.options, preset=preset)
            if preset == self.options.preset or options == Options.of(self.options, preset="none"):
                continue
            if options.units != self.options.units:  # units stay as asked: pint only when on
                continue
            tried.append(({"preset": preset}, options))
        found = self._better(tried)
        return found[0] if found else None

    def advice(self) -> list[Advice]:
        """What the hint says: the best preset, then the single options that gain at least as
        many rows as it (less those they fail), if any."""
        preset = self.best()
        if preset is None:
            return self.single_options()
        net = preset.gained - preset.lost
        return [preset, *(a for a in self.single_options() if a.gained - a.lost >= net)]

    def single_options(self) -> list[Advice]:
        """The single options (`single_changes`) that pass more of the rows kept than they
        fail, the best first (at most `OPTION_ADVICE`), each option with its best value (of
        values as good, the first of its domain)."""
        changes = single_changes(self.options)
        better = self._better([(change, Options.of(self.options, **change)) for change in changes])
        best = {next(iter(advice.change)): advice for advice in reversed(better)}  # one value each
        return sorted(best.values(), key=better.index)[:OPTION_ADVICE]

    def _better(self, tried: list[tuple[dict[str, Any], Options]]) -> list[Advice]:
        """The changes that gain more rows than they lose, by what they gain less what they
        lose (then in the order tried)."""
        if not self.n_failing:
            return []
        failing = pd.concat(self.failing)
        passing = pd.concat(self.passing) if self.passing else failing.iloc[:0]
        counts = min(self.n_failing, SAMPLE_ROWS), min(self.n_passing, SAMPLE_ROWS)
        found = []
        for change, options in tried:
            gained = int(self._passed(failing, options).sum())
            if not gained:
                continue  # the passing rows are not scored again for nothing
            broken = passing.index[~self._passed(passing, options)]
            if gained > len(broken):
                named = tuple(str(label) for label in broken[:NAMED_ROWS])
                advice = Advice(
                    change, gained, len(broken), *counts, self.n_failing, self.n_passing, named
                )
                found.append(advice)
        return sorted(found, key=lambda advice: advice.lost - advice.gained)

    def _passed(self, rows: pd.DataFrame, options: Options) -> np.ndarray:
        """Which ``rows`` pass with ``options``, each against its own threshold when the rows
        hold one (SPEC §3.2): a few by the one-value reader, which costs less on them than
        making the column reader's patterns for each option; more by the column reader (the two
        are equal: tests/test_properties.py)."""
        columns = self.output_col, self.expected_col
        if len(rows) <= FEW_ROWS:
            pairs = zip(rows[columns[0]], rows[columns[1]], strict=True)
            found = [score(o, e, options) for o, e in pairs]
            scored = {
                name: [getattr(r, name) for r in found] for name in ("score", "label", "passed")
            }
        else:
            scored = score_frame(rows.reset_index(drop=True), *columns, options)
        if self.limits_col:  # SPEC §3.2: each row against its own threshold
            return passes(scored["score"], scored["label"], rows[self.limits_col].to_numpy(float))
        return np.asarray(scored["passed"], dtype=bool)


@dataclass(frozen=True)
class Advice:
    """A change of options (a preset, or one option) that would pass more rows: of the failing
    rows it was tried on, ``gained`` pass; of the passing ones, ``lost`` fail, the first of them
    named in ``broken`` (ids, or ``row N``)."""

    change: dict[str, Any]
    gained: int
    lost: int
    failing_tried: int
    passing_tried: int
    n_failing: int  # in the whole table
    n_passing: int
    broken: tuple[str, ...] = ()

    @property
    def whole(self) -> bool:
        """Whether it was tried on every row (so its pass rates are the table's)."""
        return (self.failing_tried, self.passing_tried) == (self.n_failing, self.n_passing)

    @property
    def pass_rates(self) -> tuple[float, float]:
        """The table's pass rate now and with the change (when `whole`)."""
        n = self.n_failing + self.n_passing
        return self.n_passing / n, (self.n_passing + self.gained - self.lost) / n
