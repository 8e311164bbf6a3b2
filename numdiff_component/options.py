"""The scoring options (SPEC §2): declared once, validated once, in one immutable object.

Each field of `Options` carries its default, its domain and its help text. Everything else is
made from that one declaration (`SCHEMA`): the validation and its messages, the click options of
every command, the genai scorer's fields, the pyfunc model config, and the MLproject parameters
(checked against it by a test). Adding an option is one field here plus the code that reads it.

`PRESETS` (SPEC §2.1) names sets of options for a kind of text. ``preset`` is an option like the
others; an option given explicitly overrides the preset's value, and the resolved `Options` keeps
the preset's name (recorded with the resolved values).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from numdiff_component.errors import OptionError

Pick = Literal["first", "last", "answer"]
Percent = Literal["keep", "fraction"]
Scale = Literal["none", "words"]
Thousands = Literal["comma", "any"]
Fractions = bool | Literal["all"]
Words = Literal["none", "en", "all"]
Digits = Literal["ascii", "any"]
Ranges = Literal["none", "mid"]
Negative = Literal["sign", "parens"]
Units = Literal["none", "lenient", "strict"]
Preset = Literal["none", "answers", "prose", "prices", "measurements"]

_PROSE: dict[str, Any] = {  # measurements and figures in prose
    "thousands": "any",
    "scale": "words",
    "fractions": "all",
    "words": "all",
    "digits": "any",
    "scientific": True,
    "ranges": "mid",
}
PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "none": {},
        "answers": {  # chain-of-thought and math answers
            "pick": "answer",
            "thousands": "any",
            "scale": "words",
            "fractions": "all",
            "words": "all",
            "digits": "any",
            "scientific": True,
        },
        "prose": _PROSE,  # measurements and figures in prose
        "prices": {  # prices and amounts
            "thousands": "any",
            "scale": "words",
            "words": "all",
            "digits": "any",
            "negative": "parens",
            "prices": True,
        },
        "measurements": {**_PROSE, "units": "lenient"},  # quantities with units (SPEC §1.3)
    }
)
"""SPEC §2.1: each preset's options; the options it does not name keep their defaults."""
PRESET_OPTIONS = tuple(sorted({name for options in PRESETS.values() for name in options}))
"""The options some preset sets: where the CLI and the MLproject read "" as "not given"."""


class _NotGiven:
    def __repr__(self) -> str:
        return "<not given>"


_NOT_GIVEN: Any = _NotGiven()


def _option(
    default: Any,
    help: str,
    *,
    choices: tuple[str, ...] = (),
    low: float = -math.inf,
    high: float = math.inf,
    flag: str = "",
) -> Any:
    # The field's own default is "not given", so that a preset can fill it (`Options`).
    metadata = {"default": default, "help": help, "choices": choices, "low": low, "high": high}
    return field(default=_NOT_GIVEN, metadata=metadata | ({"flag": flag} if flag else {}))


class Markers(tuple[str, ...]):
    """Extra answer markers (`Options.markers`): a tuple, written as the MLproject takes it."""

    def __str__(self) -> str:
        return ",".join(self)


class ScaleWords(tuple[tuple[str, float], ...]):
    """Extra scale words and their factors (`Options.scale_words`), in the order given."""

    def __str__(self) -> str:
        return ",".join(f"{word}={factor!r}" for word, factor in self)


_CHECKS: dict[str, Callable[[Any], None]] = {}


def register_check(name: str, check: Callable[[Any], None]) -> None:
    """Add a check of option ``name``'s values, run after its own validation: the rule modules
    that hold the built-in words register theirs (an extra word may not clash with one)."""
    _CHECKS[name] = check


def _items(name: str, value: Any) -> list[Any]:
    """The items of a list option: a text is comma-separated ("" is none), a list or tuple
    holds items or such texts."""
    if isinstance(value, str):
        return [] if value == "" else [item.strip() for item in value.split(",")]
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, Iterable):
        return [i for v in value for i in (_items(name, v) or [""] if isinstance(v, str) else [v])]
    raise OptionError(f"{name} must be a list or a comma-separated text, got {value!r}")


def _markers(value: Any) -> Markers:
    markers = _items("markers", value)
    for marker in markers:
        if not isinstance(marker, str) or not marker.strip():
            raise OptionError(f"markers: an empty marker in {value!r}")
        if not all(c.isalpha() or c == " " for c in marker) or "  " in marker:
            raise OptionError(f"markers: {marker!r} must be letters, words separated by one space")
    return Markers(dict.fromkeys(m.strip() for m in markers))


def _scale_words(value: Any) -> ScaleWords:
    pairs: list[tuple[str, float]] = []
    for item in _items("scale_words", value):
        word, factor = item.partition("=")[::2] if isinstance(item, str) else item
        word = word.strip()
        if not word or not (word.isascii() and word.isalpha()):
            raise OptionError(f"scale_words: {word!r} must be ASCII letters (in {value!r})")
        try:
            number = float(factor.strip() if isinstance(factor, str) else factor)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(factor, bool) or not (math.isfinite(number) and number > 0):
            raise OptionError(
                f"scale_words: the factor of {word!r} must be a finite number > 0, got {factor!r}"
            )
        if word.lower() in {w.lower() for w, _ in pairs}:
            raise OptionError(f"scale_words: {word!r} is given twice")
        pairs.append((word, number))
    return ScaleWords(pairs)


_LISTS: dict[str, Callable[[Any], Any]] = {"markers": _markers, "scale_words": _scale_words}


@dataclass(frozen=True)
class OptionSpec:
    """One option of the schema: its name, type, default, domain and help text."""

    name: str
    kind: type  # float, bool, str, or a list option's tuple (Markers, ScaleWords)
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    low: float = -math.inf
    high: float = math.inf
    flag: str = ""  # the command line's flag, when it is not the name's (a repeatable one)

    @property
    def domain(self) -> str:
        """The allowed values, as error messages and help texts say them."""
        if issubclass(self.kind, tuple):
            return "a list"
        if self.kind is bool:
            return "True or False" + "".join(f" or {c!r}" for c in self.choices)
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if math.isinf(self.high):
            return f"a number >= {self.low:g}"
        return f"a number between {self.low:g} and {self.high:g}"

    def validate(self, value: Any) -> Any:
        """``value`` in this option's type; `OptionError` naming the domain when it is not."""
        if self.name in _LISTS:
            value = _LISTS[self.name](value)
            if value and self.name in _CHECKS:
                _CHECKS[self.name](value)
            return value
        if self.kind is bool:
            ok = isinstance(value, bool) or (isinstance(value, str) and value in self.choices)
        elif self.kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if ok:
                value = float(value)
                ok = math.isfinite(value) and self.low <= value <= self.high
        else:
            ok = isinstance(value, str) and value in self.choices
        if not ok:
            raise OptionError(f"{self.name} must be {self.domain}, got {value!r}")
        return value


@dataclass(frozen=True)
class Options:
    """How numbers are read and scored (SPEC §2). Invalid values raise `OptionError`.

    An option not given takes its value from the preset (SPEC §2.1), else its default; one given
    explicitly overrides the preset's value. The object holds the resolved values and the
    preset's name.

    >>> Options(threshold=0.9).threshold
    0.9
    >>> options = Options(preset="answers", pick="last")
    >>> options.pick, options.words, options.threshold
    ('last', 'all', 0.99)
    >>> Options(scale="si")
    Traceback (most recent call last):
    ...
    numdiff_component.errors.OptionError: scale must be one of 'none', 'words', got 'si'
    """

    preset: Preset = _option(
        "none",
        "A set of reading options for a kind of text: 'answers' (chain-of-thought and math "
        "answers), 'prose' (measurements and figures in prose), 'prices' (prices and amounts). "
        "'measurements' (prose's readings, and units='lenient'). "
        "An option given explicitly overrides the preset's value.",
        choices=tuple(PRESETS),
    )

    threshold: float = _option(
        0.99, "A row passes when its score is at least this.", low=0.0, high=1.0
    )
    floor: float = _option(1.0, "Smallest denominator of the relative difference.", low=0.0)
    decimal_comma: bool = _option(
        False, "Read ',' as the decimal point and '.' as the grouping separator."
    )
    pick: Pick = _option(
        "first",
        "Which number of a text to read: the first, the last, or the final answer (after the "
        "last '\\boxed{', '####' or 'answer is'; else the last).",
        choices=("first", "last", "answer"),
    )
    percent: Percent = _option(
        "keep", "'fraction' reads '50 %' (and LaTeX '50\\%') as 0.5.", choices=("keep", "fraction")
    )
    scale: Scale = _option(
        "none",
        "'words' multiplies by a scale word after the number: '2.1 billion', '12k', '$2.174T'.",
        choices=("none", "words"),
    )
    thousands: Thousands = _option(
        "comma",
        "'any' also reads spaces, apostrophes and LaTeX '\\,' between groups of three digits "
        "as thousands separators: '120 000 000', \"1'049.95\".",
        choices=("comma", "any"),
    )
    fractions: Fractions = _option(
        False,
        "Read 'A/B' and LaTeX '\\frac{N}{M}' as their value; dates stay integers. 'all' also "
        "reads mixed numbers ('2 1/2'), vulgar fractions ('\u00bd') and '\\frac12'.",
        choices=("all",),
    )
    words: Words = _option(
        "none",
        "'en' reads English number phrases: 'twenty-one', 'a hundred and two', 'two and a half'. "
        "'all' also reads 'minus five', 'two point three', 'a dozen', '3 dollars 50 cents', "
        "'1 out of 3' (SPEC v4).",
        choices=("none", "en", "all"),
    )
    digits: Digits = _option(
        "ascii",
        "'any' reads the decimal digits of every script: full-width '\uff11\uff12\uff13', "
        "Arabic-Indic '\u0661\u0662\u0663'.",
        choices=("ascii", "any"),
    )
    scientific: bool = _option(
        False, "Read scientific notation: '2.48\u00d710\u22125', '3 \\times 10^{8}', '10^6'."
    )
    ranges: Ranges = _option(
        "none",
        "'mid' reads a range as its midpoint: '7 to 10' is 8.5, '$5-$10' is 7.5.",
        choices=("none", "mid"),
    )
    negative: Negative = _option(
        "sign",
        "'parens' also reads an amount in parentheses as negative: '($99.99)' is -99.99.",
        choices=("sign", "parens"),
    )
    prices: bool = _option(
        False, "Read price typography: '$119. 95' is 119.95, '35\u20ac99' is 35.99."
    )
    markers: tuple[str, ...] = _option(
        Markers(),
        "Extra answer markers, read like 'answer' with pick='answer' (any case, then ':', '=' "
        "or 'is'): 'Result', 'Final answer', 'R\u00e9ponse'. Letters and single spaces.",
        flag="marker",
    )
    scale_words: tuple[tuple[str, float], ...] = _option(
        ScaleWords(),
        "Extra scale words with their factors, read like 'million' with scale='words' (any "
        "case): 'lakh=1e5'. ASCII letters; the factor a finite number > 0.",
        flag="scale-word",
    )
    units: Units = _option(
        "none",
        "Read a unit after the number ('5 km', '20 \u00b0C', '36 km/h') and score in the "
        "expected side's unit; different dimensions are 'unit_mismatch'. 'strict' also fails a "
        "unit on one side only ('unit_missing') and different currencies.",
        choices=("none", "lenient", "strict"),
    )

    def __post_init__(self) -> None:
        for spec in SCHEMA:  # preset first: the others may take its values
            value = getattr(self, spec.name)
            if value is _NOT_GIVEN:
                value = PRESETS.get(self.preset, {}).get(spec.name, spec.default)
            object.__setattr__(self, spec.name, spec.validate(value))

    @classmethod
    def of(cls, options: Options | None = None, **overrides: Any) -> Options:
        """Options from an existing object and/or keywords; unknown keywords are an error.

        The keywords are given explicitly: they override ``options`` and any preset. A new
        ``preset`` keyword replaces the preset of ``options`` and keeps the values ``options``
        had been given explicitly (those that differ from what its preset gives).

        >>> Options.of(Options(preset="answers", pick="last"), preset="prose").pick
        'last'
        """
        if options is not None and not overrides:  # already validated: no copy on a hot path
            return options
        unknown = sorted(set(overrides) - set(OPTION_NAMES))
        if unknown:
            raise OptionError(
                f"unknown option {unknown[0]!r}; options are {', '.join(OPTION_NAMES)}"
            )
        base = options.given() if options is not None else {}
        return cls(**{**base, **overrides})

    def given(self) -> dict[str, Any]:
        """The preset, and the values that differ from what the preset alone gives: what a user
        writes to get these options (``Options(**o.given()) == o``)."""
        preset = PRESETS[self.preset]
        return {
            spec.name: getattr(self, spec.name)
            for spec in SCHEMA
            if spec.name == "preset"
            or getattr(self, spec.name) != preset.get(spec.name, spec.default)
        }

    def as_dict(self) -> dict[str, Any]:
        """Every option's resolved value, the preset's name first, in schema order."""
        return asdict(self)


SCHEMA: tuple[OptionSpec, ...] = tuple(
    OptionSpec(f.name, type(f.metadata["default"]), **f.metadata) for f in fields(Options)
)
"""Every option, in declaration order."""

OPTION_NAMES = tuple(spec.name for spec in SCHEMA)


def sample_ks(value: object) -> tuple[int, ...]:
    """The ``k`` of pass@k (SPEC §3.3): integers >= 1, from ``"1,5,10"`` or a list; each once,
    in the order given. Anything else is an `OptionError`.

    >>> sample_ks("1, 5,10"), sample_ks([1, 5, 5])
    ((1, 5, 10), (1, 5))
    """
    items = _items("k", value) if not isinstance(value, int) else [value]
    ks: list[int] = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        number = int(text) if isinstance(text, str) and text.isascii() and text.isdigit() else text
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise OptionError(f"k must be integers >= 1 separated by commas, got {value!r}")
        ks.append(number)
    if not ks:
        raise OptionError(f"k must be integers >= 1 separated by commas, got {value!r}")
    return tuple(dict.fromkeys(ks))
