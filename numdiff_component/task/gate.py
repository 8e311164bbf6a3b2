"""The quality gate of ``numdiff score --fail-under``: the pass rate held against a bar, and
the one sentence that says the outcome (the terminal, the run's description and a tracking
failure say the same)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Gate:
    """A pass rate held against ``--fail-under``: it passes when the rate is at least the bar."""

    pass_rate: float
    fail_under: float

    @property
    def passed(self) -> bool:
        return self.pass_rate >= self.fail_under

    @property
    def outcome(self) -> str:
        """``"passed"`` or ``"failed"`` (the run's ``numeric_diff.gate`` tag)."""
        return "passed" if self.passed else "failed"

    @property
    def message(self) -> str:
        """The outcome in figures, with enough digits that they show it: rounded to four places
        unless the rounded figures would tell the other outcome.

        >>> Gate(0.5, 0.9).message, Gate(0.95, 0.9).message
        ('pass rate 0.5000 is below --fail-under 0.9', 'pass rate 0.9500 >= --fail-under 0.9')
        >>> Gate(0.9, 0.9000000000000001).message
        'pass rate 0.9 is below --fail-under 0.9000000000000001'
        >>> Gate(0.99996, 0.99997).message
        'pass rate 0.99996 is below --fail-under 0.99997'
        """
        rate, bar = f"{self.pass_rate:.4f}", f"{self.fail_under:g}"
        if (float(rate) >= float(bar)) != self.passed:
            rate, bar = repr(float(self.pass_rate)), repr(float(self.fail_under))
        return f"pass rate {rate} {'>=' if self.passed else 'is below'} --fail-under {bar}"


class BaselineGate(Protocol):
    """What a run records of its comparison with a baseline (`job.baseline.VsBaseline`): the
    verdict in one sentence, its figures, and the gate ``--fail-if-worse``."""

    @property
    def fail_if_worse(self) -> bool: ...
    @property
    def passed(self) -> bool: ...
    @property
    def outcome(self) -> str: ...
    @property
    def message(self) -> str: ...
    def metrics(self) -> dict[str, float]: ...
