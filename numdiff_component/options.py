"""The eight scoring options, validated once in one immutable object."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from numdiff_component.errors import OptionError

Pick = Literal["first", "last", "answer"]
Percent = Literal["keep", "fraction"]
Scale = Literal["none", "words"]
Thousands = Literal["comma", "any"]

PICKS = ("first", "last", "answer")
PERCENTS = ("keep", "fraction")
SCALES = ("none", "words")
THOUSANDS = ("comma", "any")


def _number(name: str, value: Any, allowed: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"{name} must be a number {allowed}, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise OptionError(f"{name} must be a number {allowed}, got {value!r}")
    return number


@dataclass(frozen=True)
class Options:
    """How numbers are read and scored (SPEC §2). Invalid values raise `OptionError`.

    >>> Options(threshold=0.9).threshold
    0.9
    >>> Options(scale="si")
    Traceback (most recent call last):
    ...
    numdiff_component.errors.OptionError: scale must be one of 'none', 'words', got 'si'
    """

    threshold: float = 0.99
    floor: float = 1.0
    decimal_comma: bool = False
    pick: Pick = "first"
    percent: Percent = "keep"
    scale: Scale = "none"
    thousands: Thousands = "comma"
    fractions: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "threshold", _number("threshold", self.threshold, "between 0 and 1", 0.0, 1.0))
        set_(self, "floor", _number("floor", self.floor, ">= 0", 0.0, math.inf))
        if not isinstance(self.decimal_comma, bool):
            raise OptionError(f"decimal_comma must be True or False, got {self.decimal_comma!r}")
        if self.pick not in PICKS:
            raise OptionError(f"pick must be one of 'first', 'last', 'answer', got {self.pick!r}")
        if self.percent not in PERCENTS:
            raise OptionError(f"percent must be one of 'keep', 'fraction', got {self.percent!r}")
        if self.scale not in SCALES:
            raise OptionError(f"scale must be one of 'none', 'words', got {self.scale!r}")
        if self.thousands not in THOUSANDS:
            raise OptionError(f"thousands must be one of 'comma', 'any', got {self.thousands!r}")
        if not isinstance(self.fractions, bool):
            raise OptionError(f"fractions must be True or False, got {self.fractions!r}")

    @classmethod
    def of(cls, options: Options | None = None, **overrides: Any) -> Options:
        """Options from an existing object and/or keywords; unknown keywords are an error."""
        if options is not None and not overrides:  # already validated: no copy on a hot path
            return options
        unknown = sorted(set(overrides) - set(OPTION_NAMES))
        if unknown:
            raise OptionError(
                f"unknown option {unknown[0]!r}; options are {', '.join(OPTION_NAMES)}"
            )
        base = asdict(options) if options is not None else {}
        return cls(**{**base, **overrides})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


OPTION_NAMES = (
    "threshold",
    "floor",
    "decimal_comma",
    "pick",
    "percent",
    "scale",
    "thousands",
    "fractions",
)
