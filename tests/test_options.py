"""The option schema (SPEC §2): one declaration, its validation and messages, and the click
options made from it."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import click
import pytest

from numdiff_component import OptionError, Options, score
from numdiff_component.cli.main import log_model
from numdiff_component.cli.main import score as score_command
from numdiff_component.cli.options import scoring_options
from numdiff_component.options import (
    OPTION_NAMES,
    PRESET_OPTIONS,
    PRESETS,
    SCHEMA,
    Markers,
    OptionSpec,
    ScaleWords,
)

PICKS = ("first", "last", "answer")

# name: (type, default, choices, low, high, domain as messages say it)
DECLARED: dict[str, tuple[type, Any, tuple[str, ...], float, float, str]] = {
    "preset": (
        str,
        "none",
        ("none", "answers", "prose", "prices", "measurements"),
        -math.inf,
        math.inf,
        "one of 'none', 'answers', 'prose', 'prices', 'measurements'",
    ),
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
    "fractions": (bool, False, ("all",), -math.inf, math.inf, "True or False or 'all'"),
    "words": (
        str,
        "none",
        ("none", "en", "all"),
        -math.inf,
        math.inf,
        "one of 'none', 'en', 'all'",
    ),
    "digits": (str, "ascii", ("ascii", "any"), -math.inf, math.inf, "one of 'ascii', 'any'"),
    "scientific": (bool, False, (), -math.inf, math.inf, "True or False"),
    "ranges": (str, "none", ("none", "mid"), -math.inf, math.inf, "one of 'none', 'mid'"),
    "negative": (str, "sign", ("sign", "parens"), -math.inf, math.inf, "one of 'sign', 'parens'"),
    "prices": (bool, False, (), -math.inf, math.inf, "True or False"),
    "markers": (Markers, Markers(), (), -math.inf, math.inf, "a list"),
    "scale_words": (ScaleWords, ScaleWords(), (), -math.inf, math.inf, "a list"),
    "units": (
        str,
        "none",
        ("none", "lenient", "strict"),
        -math.inf,
        math.inf,
        "one of 'none', 'lenient', 'strict'",
    ),
}

# SPEC §2.1, as written there.
SPEC_PRESETS: dict[str, dict[str, Any]] = {
    "none": {},
    "answers": {
        "pick": "answer",
        "thousands": "any",
        "scale": "words",
        "fractions": "all",
        "words": "all",
        "digits": "any",
        "scientific": True,
    },
    "prose": {
        "thousands": "any",
        "scale": "words",
        "fractions": "all",
        "words": "all",
        "digits": "any",
        "scientific": True,
        "ranges": "mid",
    },
    "prices": {
        "thousands": "any",
        "scale": "words",
        "words": "all",
        "digits": "any",
        "negative": "parens",
        "prices": True,
    },
    "measurements": {
        "thousands": "any",
        "scale": "words",
        "fractions": "all",
        "words": "all",
        "digits": "any",
        "scientific": True,
        "ranges": "mid",
        "units": "lenient",
    },
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
    ("fractions", "All"),
    ("words", "fr"),
    ("digits", "arabic"),
    ("scientific", "true"),
    ("ranges", "min"),
    ("negative", "brackets"),
    ("prices", 1),
    ("preset", "math"),
    ("preset", ""),
    ("preset", None),
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
        "unknown option 'cutoff'; options are preset, threshold, floor, decimal_comma, pick, "
        "percent, scale, thousands, fractions, words, digits, scientific, ranges, negative, "
        "prices, markers, scale_words, units"
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


# --- presets (SPEC §2.1) ------------------------------------------------------------------------


def test_presets_are_the_sets_of_the_spec() -> None:
    assert {name: dict(options) for name, options in PRESETS.items()} == SPEC_PRESETS
    assert set(PRESET_OPTIONS) == {name for options in SPEC_PRESETS.values() for name in options}
    assert "decimal_comma" not in PRESET_OPTIONS  # the locale's, not a preset's


@pytest.mark.parametrize("preset", list(SPEC_PRESETS))
def test_a_preset_sets_its_options_and_leaves_the_others_at_their_defaults(preset: str) -> None:
    for options in (
        Options(preset=preset),
        Options.of(preset=preset),
        Options.of(None, preset=preset),
    ):
        for spec in SCHEMA:
            want = (
                preset
                if spec.name == "preset"
                else SPEC_PRESETS[preset].get(spec.name, spec.default)
            )
            got = getattr(options, spec.name)
            assert got == want and type(got) is type(want), (preset, spec.name)


@pytest.mark.parametrize(
    ("keywords", "changed"),
    [
        ({"preset": "answers", "pick": "last"}, {"pick": "last"}),
        ({"preset": "answers", "pick": "first"}, {"pick": "first"}),  # a default, given: it wins
        (
            {"preset": "prose", "fractions": False, "threshold": 1},
            {"fractions": False, "threshold": 1.0},
        ),
        ({"preset": "prices", "decimal_comma": True}, {"decimal_comma": True}),
        ({"pick": "answer", "preset": "prices"}, {"pick": "answer"}),  # keyword order: no matter
    ],
)
def test_an_option_given_explicitly_overrides_the_presets_value(
    keywords: dict[str, Any], changed: dict[str, Any]
) -> None:
    options = Options.of(**keywords)
    preset = SPEC_PRESETS[keywords["preset"]]
    for spec in SCHEMA:
        want = changed.get(spec.name, preset.get(spec.name, spec.default))
        if spec.name == "preset":
            want = keywords["preset"]
        assert getattr(options, spec.name) == want, spec.name
    assert Options(**keywords) == options


def test_options_of_a_new_preset_keeps_what_was_given_explicitly() -> None:
    base = Options.of(preset="answers", pick="last", threshold=0.5)
    assert base.given() == {"preset": "answers", "pick": "last", "threshold": 0.5}
    assert Options(**base.given()) == base
    prose = Options.of(base, preset="prose")
    assert (prose.preset, prose.pick, prose.threshold, prose.ranges) == (
        "prose",
        "last",
        0.5,
        "mid",
    )
    plain = Options.of(base, preset="none")
    assert plain == Options(pick="last", threshold=0.5)
    assert Options.of(base, floor=0) == Options(
        preset="answers", pick="last", threshold=0.5, floor=0
    )


def test_resolved_options_round_trip_through_their_dict() -> None:
    options = Options.of(preset="prose", pick="answer")
    assert next(iter(options.as_dict())) == "preset"
    assert Options(**options.as_dict()) == options
    assert Options.of(None, **options.as_dict()) == options


# --- the click options of every command are made from the schema --------------------------------


@pytest.mark.parametrize("command", [score_command, log_model], ids=["score", "log-model"])
def test_click_options_are_made_from_the_schema(command: click.Command) -> None:
    params = {p.name: p for p in command.params if isinstance(p, click.Option)}
    names = [p.name for p in command.params]
    first = names.index(SCHEMA[0].name)
    assert tuple(names[first : first + len(SCHEMA)]) == OPTION_NAMES  # together, in order
    context = command.make_context(command.name, [])
    for spec in SCHEMA:
        option = params[spec.name]
        flag = "--" + (spec.flag or spec.name).replace("_", "-")
        assert option.opts == [flag]
        if issubclass(spec.kind, tuple):  # a list option: its flag repeated
            assert option.multiple and option.help and option.help.startswith(spec.help)
            continue
        assert option.default is None  # not given: the preset's value, else the default
        shown = str(spec.default).lower() if spec.kind is bool else str(spec.default)
        assert option.help is not None and option.help.startswith(spec.help)
        assert option.help.endswith(f"[default: {shown}]")
        if spec.kind is float:
            assert isinstance(option.type, click.types.FloatParamType)
            assert f"({spec.domain.removeprefix('a number ')})" in option.help
        elif spec.kind is bool:  # --x, --no-x, --x=true|false
            record = option.get_help_record(context)
            assert record is not None and record[0].startswith(f"{flag} / --no-{flag[2:]}, ")
        else:
            assert option.metavar == "[" + "|".join(spec.choices) + "]"


def _options_of(command: click.Command, args: list[str]) -> Options:
    """What the command would run with: its arguments parsed, the options made from them."""
    from numdiff_component.cli.options import given_options

    context = command.make_context(command.name, list(args))  # parsed only, not run
    return Options.of(None, **given_options({name: context.params[name] for name in OPTION_NAMES}))


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
        (["--fractions"], Options(fractions=True)),
        (["--fractions=all"], Options(fractions="all")),
        (["--fractions=true"], Options(fractions=True)),
        (["--preset", "answers", "--no-fractions"], Options(preset="answers", fractions=False)),
        (["--preset", "answers", "--fractions"], Options(preset="answers", fractions=True)),
        (["--preset", "answers", "--pick", "first"], Options(preset="answers", pick="first")),
        (["--preset", "prose"], Options(preset="prose")),
        (
            ["--marker", "Result", "--marker", "Final answer"],
            Options(markers=["Result", "Final answer"]),
        ),
        (["--marker", "Result,Final answer"], Options(markers=("Result", "Final answer"))),
        (["--marker", ""], Options()),  # the MLproject's "": none
        (
            ["--scale-word", "lakh=1e5", "--scale-word", "crore=1e7"],
            Options(scale_words={"lakh": 1e5, "crore": 1e7}),
        ),
        (["--scale-word", "lakh=1e5,crore=1e7"], Options(scale_words="lakh=100000,crore=1e7")),
        (["--preset", "prices", "--prices=false"], Options(preset="prices", prices=False)),
        (
            ["--words", "en", "--digits", "any", "--scientific", "--ranges", "mid"],
            Options(words="en", digits="any", scientific=True, ranges="mid"),
        ),
        (["--negative", "parens", "--prices"], Options(negative="parens", prices=True)),
        # "" is "not given" for preset and what a preset sets: the MLproject's defaults
        (
            ["--preset", "answers", "--pick", "", "--fractions=", "--scientific=", "--words", ""],
            Options(preset="answers"),
        ),
        (["--preset", ""], Options()),
    ],
)
def test_command_line_values_make_the_options(
    command: click.Command, args: list[str], expected: Options
) -> None:
    assert _options_of(command, args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--decimal-comma=maybe"], "decimal_comma must be True or False, got 'maybe'"),
        (["--decimal-comma="], "decimal_comma must be True or False, got ''"),
        (["--fractions=some"], "fractions must be True or False or 'all', got 'some'"),
        (["--percent", ""], "percent must be one of 'keep', 'fraction', got ''"),
        (["--preset", "math"], "preset must be one of 'none', 'answers', 'prose', 'prices'"),
    ],
)
def test_a_bad_command_line_value_names_the_option(args: list[str], message: str) -> None:
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _options_of(score_command, args)


def test_scoring_options_hand_the_command_one_validated_object() -> None:
    @scoring_options
    def command(*, options: Options, other: int) -> tuple[Options, int]:
        return options, other

    values = Options(pick="last").as_dict()
    assert command(other=1, **values) == (Options(pick="last"), 1)
    with pytest.raises(OptionError, match="pick must be one of 'first', 'last', 'answer', got 'x'"):
        command(other=1, **{**values, "pick": "x"})


# --- signatures in the documentation are the schema's ---------------------------------------------

_API = ("make_numeric_diff_metric", "make_numeric_diff_scorer", "log_numeric_diff_model")
_NOT_OPTIONS = {"name", "expected_key", "experiment_name", "run_name"}
_CALL = re.compile(r"`(" + "|".join(_API) + r")\(([^`]*)\)`")


def _documented_signatures() -> list[tuple[str, str, list[str]]]:
    """(file, function, names) of each signature written in the README and the guide: a code
    span calling one of the MLflow entry points with ``name=...`` placeholders."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        if page.name == "SPEC.md":  # the contract: its own words
            continue
        for match in _CALL.finditer(page.read_text(encoding="utf-8")):
            names = re.findall(r"(\w+)=\.\.\.", match.group(2))
            if names:
                found.append((page.name, match.group(1), names))
    return found


def test_documented_signatures_list_every_option_of_the_schema() -> None:
    """A signature written as ``make_numeric_diff_metric(threshold=..., ...)`` names every
    option, in schema order (or is written ``**options``)."""
    signatures = _documented_signatures()
    assert signatures, "no signature found: the guide writes at least one"
    for page, function, names in signatures:
        options = [name for name in names if name not in _NOT_OPTIONS]
        assert options == list(OPTION_NAMES), (
            f"{page}: {function}({', '.join(f'{n}=...' for n in options)}) should list the "
            f"schema's options in order: {', '.join(f'{n}=...' for n in OPTION_NAMES)}"
        )
