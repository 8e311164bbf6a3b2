"""Quantities (SPEC §1.3, §2.2): a number and its unit, scored in the expected side's unit.

The one-value path (`parse_quantity`, `score`) and the column path (`parse_quantities`,
`score_frame`) are proven equal on generated quantities whose units come from the tables the
code reads (the alias and stop tables, the currency symbols) and from pint's registry.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numdiff_component import Options, aggregate, parse_column, score, score_frame
from numdiff_component.adapters.pyfunc import NumericDiffModel, signature
from numdiff_component.reading.grammar import CURRENCY
from numdiff_component.reading.quantities import parse_quantities, parse_quantity
from numdiff_component.reading.units import ALIASES, MAX_UNIT, STOP, unit_run
from numdiff_component.scoring import RESULT_COLUMNS
from tests.fixtures.commands import invoke
from tests.fixtures.run import EXAMPLES

LENIENT = Options(units="lenient")

# SPEC §1.3's examples, as written there: text, unit name (None: no unit).
READ = [
    ("5 km", "kilometer"),
    ("5km", "kilometer"),
    ("5 kilometres", "kilometer"),
    ("5,000 m.", "meter"),
    ("The distance is 5 km", "kilometer"),
    ("36 km/h", "kilometer / hour"),
    ("36 km / h", "kilometer / hour"),
    ("9.8 m/s^2", "meter / second ** 2"),
    ("20 °C", "degree_Celsius"),
    ("20 degrees Celsius", "degree_Celsius"),
    ("68 degF", "degree_Fahrenheit"),
    ("3 miles per hour", "mile / hour"),
    ("2 sq ft", "foot ** 2"),
    ("50 cc", "cubic_centimeter"),
    ("45°", "degree"),
    ("$5", "$"),
    ("500 mg of salt", "milligram"),
    ("5 kg in total", "kilogram"),
    ("5 apples", None),
    ("12%", None),
    ("5 in", None),
    ("km 5", None),
    ("5 m2", None),
    ("$ 5", None),
    ("5 USD", None),
    ("5 m/apples", "meter"),
]


@pytest.mark.parametrize(("text", "unit"), READ, ids=[t for t, _ in READ])
def test_the_spec_examples_read_their_unit(text: str, unit: str | None) -> None:
    assert parse_quantity(text, LENIENT)[1] == unit
    _, (codes, names) = parse_quantities(pd.Series([text]), LENIENT)
    assert (names[codes[0]] if codes[0] >= 0 else None) == unit


def test_a_scale_word_is_read_before_a_unit() -> None:
    assert parse_quantity("5 k", Options(units="lenient", scale="words")) == (5000.0, None)
    assert parse_quantity("5 k", LENIENT) == (5.0, None)  # k is in the stop table


# SPEC §2.2's examples: output, expected, lenient's (label, score), strict's (label, score).
SCORED = [
    ("5 km", "5000 m", ("pass", 1.0), ("pass", 1.0)),
    ("5 m", "5 km", ("fail", 0.001), ("fail", 0.001)),
    ("0.5 kilograms", "500 g", ("pass", 1.0), ("pass", 1.0)),
    ("68 °F", "20 °C", ("pass", 1.0), ("pass", 1.0)),
    ("36 km/h", "10 m/s", ("pass", 1.0), ("pass", 1.0)),
    ("5 kg", "5 km", ("unit_mismatch", 0.0), ("unit_mismatch", 0.0)),
    ("5", "5 km", ("pass", 1.0), ("unit_missing", 0.0)),
    ("$5", "€5", ("pass", 1.0), ("unit_mismatch", 0.0)),
    ("$5", "5 kg", ("unit_mismatch", 0.0), ("unit_mismatch", 0.0)),
    ("20 degrees Celsius", "293.15 K", ("pass", 1.0), ("pass", 1.0)),
    ("5 kWh", "18 MJ", ("pass", 1.0), ("pass", 1.0)),
    ("1 MiB", "1048576 B", ("pass", 1.0), ("pass", 1.0)),
    ("n/a", "5 km", ("unparseable", 0.0), ("unparseable", 0.0)),
]


@pytest.mark.parametrize("units", ["lenient", "strict"])
def test_the_spec_pairs_score_as_documented_in_both_paths(units: str) -> None:
    frame = pd.DataFrame([row[:2] for row in SCORED], columns=["output", "expected"])
    results = score_frame(frame, units=units)
    for (output, expected, lenient, strict), (_, row) in zip(
        SCORED, results.iterrows(), strict=True
    ):
        label, value = lenient if units == "lenient" else strict
        one = score(output, expected, units=units)
        assert (one.label, row["label"]) == (label, label), (output, expected)
        assert one.score == pytest.approx(value, abs=1e-12) and one.score == row["score"]


def test_results_carry_the_units_and_the_converted_output() -> None:
    one = score("5 km", "5000 m", units="lenient")
    assert (one.output_unit, one.expected_unit, one.output_converted) == ("kilometer", "meter", 5e3)
    assert one.output_value == 5.0 and one.expected_value == 5000.0
    frame = score_frame(
        pd.DataFrame({"output": ["5 km", "7"], "expected": ["5000 m", "7 kg"]}), units="strict"
    )
    assert list(frame.columns[-3:]) == ["output_unit", "expected_unit", "output_converted"]
    assert frame["output_unit"].tolist()[0] == "kilometer" and pd.isna(frame["output_unit"][1])
    assert frame["output_converted"].tolist() == [5000.0, 7.0]


def test_the_default_results_and_aggregates_are_unchanged() -> None:
    frame = pd.DataFrame({"output": ["5 km", "5 kg"], "expected": ["5000 m", "5 km"]})
    results = score_frame(frame)
    assert list(results.columns) == ["output", "expected", *RESULT_COLUMNS]
    assert results["score"].tolist() == pytest.approx([0.001, 1.0])
    assert "n_unit_mismatch" not in aggregate(results)


def test_aggregates_count_the_rows_whose_units_do_not_compare() -> None:
    frame = pd.DataFrame([row[:2] for row in SCORED], columns=["output", "expected"])
    for units, mismatch, missing in (("lenient", 2, 0), ("strict", 3, 1)):
        results = score_frame(frame, units=units)
        got = aggregate(results)
        assert (got["n_unit_mismatch"], got["n_unit_missing"]) == (mismatch, missing)
        compared = results["label"].isin(["pass", "fail"])
        assert got["mae"] == pytest.approx(results["abs_error"][compared].mean())
        rows = [
            score(o, e, units=units)
            for o, e in zip(frame["output"], frame["expected"], strict=True)
        ]
        assert aggregate(rows) == pytest.approx(got, nan_ok=True)


def test_the_preset_measurements_is_prose_with_units() -> None:
    options, prose = Options(preset="measurements").as_dict(), Options(preset="prose").as_dict()
    assert options.pop("units") == "lenient" and prose.pop("units") == "none"
    assert {**options, "preset": "prose"} == prose
    options = Options(preset="measurements")
    assert score("44 mg to 50 mg", "0.047 g", options).passed  # a range and its unit
    assert score("two and a half km", "2500 m", options).passed


# --- the one-value and column paths are equal on generated quantities -------------------------

PINT_UNITS = ["km", "m", "kg", "g", "mg", "°C", "degF", "mph", "km/h", "m/s^2", "kWh", "MiB", "s"]
unit_texts = st.sampled_from(
    [*PINT_UNITS, *ALIASES, *STOP, *CURRENCY, "apples", "m2", "km h", "", "M", "million", "%"]
)
blanks = st.sampled_from(["", " ", "\t", "  "])
numbers = st.sampled_from(["5", "-3.5", "1,234", "0.25", "1e3", "12", "2 1/2", "five", "10-12"])
texts = st.builds(
    lambda pre, n, b, u, post: f"{pre}{n}{b}{u}{post}",
    st.sampled_from(["", "about ", "-", "$", "the answer is ", "(", "€-", "x.", "{,}", "####"]),
    numbers,
    blanks,
    unit_texts,
    st.sampled_from(
        ["", ".", " of salt", ")", " 7 m", ", or 3 kg", "/h", "²", " %", " answer is", " k", "^2"]
    ),
)
unit_options = st.builds(
    Options,
    preset=st.sampled_from(["none", "measurements", "answers", "prices"]),
    units=st.sampled_from(["lenient", "strict"]),
    pick=st.sampled_from(["first", "last", "answer"]),
    scale=st.sampled_from(["none", "words"]),
    percent=st.sampled_from(["keep", "fraction"]),
    decimal_comma=st.booleans(),
)


@settings(max_examples=3 * EXAMPLES, deadline=None)  # the only test of this property
@given(
    column=st.one_of(  # text (an Arrow string column), and mixed objects (read one by one)
        st.lists(st.one_of(texts, st.none()), max_size=12),
        st.lists(st.one_of(texts, st.floats(allow_nan=False)), max_size=4),
    ),
    opts=unit_options,
)
def test_the_column_path_reads_every_quantity_as_the_one_value_path(
    column: list[object], opts: Options
) -> None:
    numbers_, (codes, names) = parse_quantities(pd.Series(column, dtype=object), opts)
    np.testing.assert_array_equal(numbers_, parse_column(pd.Series(column, dtype=object), opts))
    for value, number, code in zip(column, numbers_, codes, strict=True):
        one_number, one_unit = parse_quantity(value, opts)
        assert number == one_number if one_number is not None else np.isnan(number), value
        assert (names[code] if code >= 0 else None) == one_unit, value


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(texts, texts), min_size=1, max_size=10), opts=unit_options)
def test_score_frame_equals_score_row_by_row(rows: list[tuple[str, str]], opts: Options) -> None:
    frame = score_frame(pd.DataFrame(rows, columns=["output", "expected"]), options=opts)
    for (output, expected), (_, row) in zip(rows, frame.iterrows(), strict=True):
        one = score(output, expected, opts)
        assert (one.label, one.score) == (row["label"], row["score"]), (output, expected)
        assert one.output_unit == (None if pd.isna(row["output_unit"]) else row["output_unit"])
        got = row["output_converted"]
        assert (one.output_converted is None) == math.isnan(got)


# --- bad input ----------------------------------------------------------------------------------

HOSTILE = [
    "5 " + "k" * 100_000 + "m",
    "5 " + "m/" * 50_000,
    "5 " + "m^" * 50_000 + "2",
    "5 " + "(" * 50_000 + "m",
    "5 " + "m " * 50_000,
    "5 " + " " * 100_000 + "km",
    "5 kilo" + "kilo" * 25_000 + "meter",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_unit_text_is_bounded_and_no_error(text: str) -> None:
    assert len(unit_run(text, 1)) <= MAX_UNIT
    number, unit = parse_quantity(text, LENIENT)
    assert number == 5.0 and (unit is None or len(unit) < 100)
    _, (codes, names) = parse_quantities(pd.Series([text]), LENIENT)
    assert (names[codes[0]] if codes[0] >= 0 else None) == unit


def test_text_pint_cannot_parse_is_no_unit() -> None:
    for text in ("5 )(", "5 m**", "5 ^^", "5 m/)", "5 __init__", "5 degC*degC*degC", "5 a.b"):
        score(text, "5", units="strict")  # never an error
    assert parse_quantity("5 __init__", LENIENT)[1] is None


def test_pint_is_imported_only_with_units_on() -> None:
    code = (
        "import sys, pandas as pd\n"
        "from numdiff_component import score, score_frame\n"
        "frame = pd.DataFrame({'output': ['5 km', 'x'], 'expected': ['5000 m', '1']})\n"
        "score_frame(frame); score('5 km', '5 m')\n"
        "print('pint' in sys.modules)\n"
        "score('5 km', '5 m', units='lenient')\n"
        "print('pint' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


# --- the CLI ------------------------------------------------------------------------------------


@pytest.mark.parametrize("units", ["lenient", "strict"])
def test_the_cli_scores_quantities_and_records_the_option(
    units: str, tmp_path: Path, tracking_uri: str
) -> None:
    frame = pd.DataFrame([row[:2] for row in SCORED], columns=["output", "expected"])
    frame.to_csv(tmp_path / "quantities.csv", index=False)
    args = ["--units", units, "--no-plots", "--results-dir", str(tmp_path / "res")]
    done = invoke("score", str(tmp_path / "quantities.csv"), *args)
    assert done.returncode == 0, done.stderr
    results = pd.read_parquet(tmp_path / "res" / "results.parquet")
    assert results["label"].tolist() == score_frame(frame, units=units)["label"].tolist()
    assert results["output_unit"].tolist()[:2] == ["kilometer", "meter"]
    mismatch = 2 if units == "lenient" else 3
    assert re.search(rf"mismatched +{mismatch}\b", done.stdout), done.stdout
    run_id = re.search(r"run +([0-9a-f]{32})", done.stdout)
    assert run_id, done.stdout
    run = mlflow.MlflowClient(tracking_uri).get_run(run_id[1])
    assert run.data.params["units"] == units
    assert run.data.metrics["numeric_diff/n_unit_mismatch"] == mismatch


def test_the_pyfunc_model_gives_the_unit_columns() -> None:
    frame = pd.DataFrame({"output": ["5 km", "5 kg", "n/a"], "expected": ["5000 m", "5 km", "1"]})
    got = NumericDiffModel(Options(units="strict")).predict(None, frame)
    assert list(got.columns) == list(signature(Options(units="strict")).outputs.input_names())
    assert got["label"].tolist() == ["pass", "unit_mismatch", "unparseable"]
    assert got["output_unit"].tolist() == ["kilometer", "kilogram", None]
    assert got["output_converted"].tolist() == [5000.0, None, None]  # JSON null, not NaN
