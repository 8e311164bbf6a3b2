"""The option schema (SPEC §2): one declaration, its validation and messages, and the click
options made from it."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import click
import pytest

from numdiff_component import OptionError, Options, score
from numdiff_component.cli import log_model, scoring_options
from numdiff_component.cli import score as score_command
from numdiff_component.options import OPTION_NAMES, SCHEMA, OptionSpec

PICKS = ("first", "last", "answer")

# name: (type, default, choices, low, high, domain as messages say it)
DECLARED: dict[str, tuple[type, Any, tuple[str, ...], float, float, str]] = {
    "threshold": (float, 0.99, (), 0.0, 1.0, "a number between 0 and 1"),
    "floor": (float, 1.0, (), 0.0, math.inf, "a number >= 0"),
    "decimal_comma": (bool, False, (), -math.inf, math.inf, "True or False"),
    "pick": (str, "first", PICKS, -math.inf, math.inf, "one of 'first', 'last', 'answer'"),
    "percent": (
        str,
        "keep",
        ("keep", "fraction"),
        -math.inf,
        math.inf,
        "one of 'keep', 'fraction'",
    ),
    "scale": (str, "none", ("none", "words"), -math.inf, math.inf, "one of 'none', 'words'"),
    "thousands": (str, "comma", ("comma", "any"), -math.inf, math.inf, "one of 'comma', 'any'"),
    "fractions": (bool, False, (), -math.inf, math.inf, "True or False"),
}


def test_schema_order_and_contents() -> None:
    assert OPTION_NAMES == tuple(DECLARED) == tuple(f.name for f in dataclasses.fields(Options))
    for spec in SCHEMA:
        kind, default, choices, low, high, domain = DECLARED[spec.name]
        assert (spec.kind, spec.default, spec.choices) == (kind, default, choices), spec.name
        assert (spec.low, spec.high, spec.domain) == (low, high, domain), spec.name
        assert type(spec.default) is spec.kind and spec.help.strip(), spec.name


@pytest.mark.parametrize("spec", SCHEMA, ids=OPTION_NAMES)
def test_every_spec_validates_its_default(spec: OptionSpec) -> None:
    assert spec.validate(spec.default) == spec.default
    assert type(spec.validate(spec.default)) is spec.kind
    assert getattr(Options(), spec.name) == spec.default


BAD_VALUES = [
    ("threshold", 1.5),
    ("threshold", -0.01),
    ("threshold", math.nan),  # NaN compares false with everything: it must not slip through
    ("threshold", math.inf),
    ("threshold", "0.5"),
    ("threshold", True),  # a bool is an int to Python, not a number here
    ("threshold", None),
    ("floor", -1.0),
    ("floor", math.inf),
    ("floor", math.nan),
    ("floor", "1"),
    ("decimal_comma", "true"),
    ("decimal_comma", 1),
    ("decimal_comma", None),
    ("pick", "middle"),
    ("pick", "First"),
    ("pick", ""),
    ("pick", None),
    ("percent", "half"),
    ("percent", 0.5),
    ("scale", "si"),
    ("thousands", "space"),
    ("fractions", "yes"),
]


@pytest.mark.parametrize(("name", "value"), BAD_VALUES, ids=[f"{n}={v!r}" for n, v in BAD_VALUES])
def test_bad_value_names_the_option_the_domain_and_the_value(name: str, value: Any) -> None:
    domain = DECLARED[name][-1]
    message = f"{name} must be {domain}, got {value!r}"
    with pytest.raises(OptionError) as error:
        Options(**{name: value})
    assert str(error.value) == message
    with pytest.raises(OptionError) as error:
        Options.of(None, **{name: value})
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("name", "value", "stored"),
    [
        ("threshold", 1, 1.0),
        ("threshold", 0, 0.0),
        ("floor", 0, 0.0),
        ("floor", 1e300, 1e300),
        ("decimal_comma", True, True),
        ("pick", "last", "last"),
        ("percent", "fraction", "fraction"),
    ],
)
def test_good_values_are_stored_in_the_options_type(name: str, value: Any, stored: Any) -> None:
    got = getattr(Options(**{name: value}), name)
    assert got == stored and type(got) is type(stored)


def test_options_of_unknown_keyword_lists_the_options() -> None:
    with pytest.raises(OptionError) as error:
        Options.of(None, treshold=0.5, cutoff=1)
    assert str(error.value) == (
        "unknown option 'cutoff'; options are threshold, floor, decimal_comma, pick, percent, "
        "scale, thousands, fractions"
    )


def test_options_of_keeps_what_it_is_given_and_overrides_by_keyword() -> None:
    options = Options(threshold=0.5, pick="last")
    assert Options.of(options) is options  # already validated: not copied
    assert Options.of(None) == Options()
    assert Options.of(options, floor=0) == Options(threshold=0.5, pick="last", floor=0.0)
    assert options == Options(threshold=0.5, pick="last")  # the original is unchanged
    with pytest.raises(OptionError, match="pick must be"):
        Options.of(options, pick="middle")


def test_options_are_immutable_and_dict_in_schema_order() -> None:
    options = Options(threshold=1, floor=0)
    assert (options.threshold, options.floor) == (1.0, 0.0)
    assert score("1", "1", options).passed
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.threshold = 0.5  # type: ignore[misc]
    assert list(options.as_dict()) == list(OPTION_NAMES)
    assert Options(**options.as_dict()) == options


# --- the click options of every command are made from the schema --------------------------------


@pytest.mark.parametrize("command", [score_command, log_model], ids=["score", "log-model"])
def test_click_options_are_made_from_the_schema(command: click.Command) -> None:
    params = {p.name: p for p in command.params if isinstance(p, click.Option)}
    names = [p.name for p in command.params]
    first = names.index(SCHEMA[0].name)
    assert tuple(names[first : first + len(SCHEMA)]) == OPTION_NAMES  # together, in order
    for spec in SCHEMA:
        option = params[spec.name]
        flag = "--" + spec.name.replace("_", "-")
        assert option.opts == [flag]
        assert option.default == spec.default and option.show_default
        assert option.help is not None and option.help.startswith(spec.help)
        if spec.kind is float:
            assert isinstance(option.type, click.types.FloatParamType)
            assert option.help.endswith(f"({spec.domain.removeprefix('a number ')})")
        elif spec.kind is bool:  # --x / --no-x
            assert option.is_flag and option.secondary_opts == ["--no-" + flag[2:]]
        else:
            assert option.metavar == "[" + "|".join(spec.choices) + "]"


@pytest.mark.parametrize("command", [score_command, log_model], ids=["score", "log-model"])
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], Options()),
        (["--decimal-comma"], Options(decimal_comma=True)),  # a plain flag
        (["--decimal-comma=false"], Options()),  # an explicit value, as the MLproject passes
        (["--decimal-comma=true", "--pick", "last"], Options(decimal_comma=True, pick="last")),
        (["--decimal-comma", "--no-decimal-comma"], Options()),
        (
            ["--threshold", "0.5", "--floor", "0", "--percent", "fraction"],
            Options(threshold=0.5, floor=0.0, percent="fraction"),
        ),
    ],
)
def test_command_line_values_make_the_options(
    command: click.Command, args: list[str], expected: Options
) -> None:
    context = command.make_context(command.name, list(args))  # parsed only, not run
    assert Options.of(None, **{name: context.params[name] for name in OPTION_NAMES}) == expected


def test_scoring_options_hand_the_command_one_validated_object() -> None:
    @scoring_options
    def command(*, options: Options, other: int) -> tuple[Options, int]:
        return options, other

    values = Options(pick="last").as_dict()
    assert command(other=1, **values) == (Options(pick="last"), 1)
    with pytest.raises(OptionError, match="pick must be one of 'first', 'last', 'answer', got 'x'"):
        command(other=1, **{**values, "pick": "x"})
