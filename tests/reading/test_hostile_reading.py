"""Attacks of a hostile user on the readers (issue 33, cases 1 to 6): one row never ends a job,
the two readers agree on any Python string, and the readings stay linear. Each against the real
thing: both readers, `score`, the genai scorer, the metric, the pyfunc model, the CLI as a real
process logging to a real sqlite store."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from mlflow import MlflowClient

from numdiff_component import (
    NumericDiffModel,
    Options,
    make_numeric_diff_metric,
    make_numeric_diff_scorer,
    parse_column,
    parse_number,
    score,
    score_frame,
)
from numdiff_component.reading.column import several_numbers
from numdiff_component.reading.grammar import decimal_ranges
from tests.fixtures.commands import invoke, numdiff_process

GUARD = 120  # seconds: a hang guard for each process, never a measure of speed
HUGE = "1" * 400  # digits beyond a float (1e399)
FIVE_THOUSAND = "1" * 5000  # beyond Python's 4,300-digit limit of int(str)


def _both(text: str, opts: Options) -> tuple[float | None, float | None]:
    """The number of ``text`` by the one-value reader and by the column reader (None for NaN),
    the text in a column beside an ordinary row, which must read as ever."""
    column = parse_column([text, "7"], opts)
    assert column[1] == 7.0
    return parse_number(text, opts), None if math.isnan(column[0]) else float(column[0])


# --- case 1: a value beyond a float is no number, for that row only -------------------------------

BEYOND_A_FLOAT: list[tuple[str, dict[str, Any], float | None]] = [
    (HUGE + " 1/2", {"preset": "answers"}, None),
    (HUGE + " 1/2", {"fractions": "all"}, None),
    (HUGE + " 1/2", {"preset": "prose"}, None),
    (HUGE + "\u00bd", {"preset": "prose"}, None),
    (HUGE + " \u00bd", {"fractions": "all"}, None),
    (HUGE + "\\frac{1}{2}", {"fractions": "all"}, None),
    (f"{FIVE_THOUSAND}/3", {"fractions": True}, None),
    (f"3/{FIVE_THOUSAND}", {"fractions": True}, None),  # a side beyond a float: no number
    (f"{FIVE_THOUSAND}/{FIVE_THOUSAND}", {"fractions": True}, None),
    (f"x {FIVE_THOUSAND}/3 then 5", {"fractions": True, "pick": "last"}, 5.0),
    (f"{FIVE_THOUSAND}/3 then 5", {"fractions": True, "pick": "first"}, None),
    # The token A/B is read whole and has no number: its B is not read as the last token.
    (f"{FIVE_THOUSAND}/3", {"fractions": True, "pick": "last"}, None),
    ("1/" + "0" * 5000 + "1", {"fractions": True}, 1.0),  # B is 1: leading zeros are nothing
    ("1/" + "0" * 5000, {"fractions": True}, 1.0),  # B is zero: no fraction, the 1 is read
    (f"\\frac{{3}}{{{HUGE}}}", {"fractions": True}, None),
    (f"5 {FIVE_THOUSAND}/{FIVE_THOUSAND}2", {"fractions": "all"}, None),  # W + A/B, A < B
    (f"5 {FIVE_THOUSAND}2/{FIVE_THOUSAND}", {"fractions": "all"}, 5.0),  # A > B: W, then A/B
]


@pytest.mark.parametrize(("text", "options", "want"), BEYOND_A_FLOAT)
def test_a_value_beyond_a_float_is_no_number_in_both_readers(
    text: str, options: dict[str, Any], want: float | None
) -> None:
    opts = Options.of(None, **options)
    assert _both(text, opts) == (want, want)
    result = score(text, 5, opts)
    assert result.label == ("unparseable" if want is None else "pass" if want == 5 else "fail")
    feedback, _ = make_numeric_diff_scorer(**options)(outputs=text, expectations={"expected": 5})
    assert feedback.value == result.score and feedback.metadata["label"] == result.label


def test_rows_beyond_a_float_end_no_job_and_the_run_is_logged(
    tracking_uri: str, tmp_path: Path
) -> None:
    """With the default options (the preset hint reads failing rows again under every preset),
    and under a preset: exit by the gate, one line, the run logged and FINISHED. The first as
    a real process (within `GUARD`): its hint has read the rows under every preset already,
    so the presets' own jobs run in this process."""
    rows = [HUGE + " 1/2", HUGE + "\u00bd", f"{FIVE_THOUSAND}/3", "1/" + "0" * 5000 + "1", "5"]
    source = tmp_path / "t.csv"
    pd.DataFrame({"output": rows, "expected": [5] * len(rows)}).to_csv(source, index=False)
    for i, preset in enumerate(["none", "answers", "prose"]):
        out = tmp_path / f"out{i}"
        args = [str(source), "-q", "--no-plots", "--results-dir", str(out), "--preset", preset]
        if preset == "none":
            done = numdiff_process("score", *args, "--fail-under", "0.9", timeout=GUARD)
        else:
            done = invoke("score", *args, "--fail-under", "0.9")
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr and "is below --fail-under 0.9" in done.stderr
        results = pd.read_parquet(out / "results.parquet")
        opts = Options.of(None, preset=preset)
        assert results["output_value"].tolist() == pytest.approx(
            [math.nan if (v := parse_number(t, opts)) is None else v for t in rows], nan_ok=True
        )
    runs = MlflowClient(tracking_uri).search_runs([os.environ["MLFLOW_EXPERIMENT_ID"]])
    assert [r.info.status for r in runs] == ["FINISHED"] * 3


# --- case 2: A/B is float(A) / float(B) in both readers -----------------------------------------

ABOVE_2_53 = 2**53 + 1  # float(A) is 2**53: A/3 is 3002399751580330.5, int(A)/3 3002399751580331


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (f"{ABOVE_2_53}/3", float(ABOVE_2_53) / 3),
        (f"\\frac{{{ABOVE_2_53}}}{{3}}", float(ABOVE_2_53) / 3),
        (f"{'1' * 309}/{'1' * 309}0", None),  # B beyond a float; int(A)/int(B) would be 0.1
        (f"{'9' * 308}/{'3' * 308}", 3.0),
        (f"{'7' * 40}/{'3' * 45}", float("7" * 40) / float("3" * 45)),
    ],
)
def test_a_quotient_is_float_a_over_float_b_in_both_readers(text: str, want: float | None) -> None:
    opts = Options(fractions=True)
    assert _both(text, opts) == (want, want)
    if want is not None:  # the same pass/fail at threshold=1 in score() and the column scorer
        frame = pd.DataFrame({"output": [text], "expected": [repr(want)]})
        assert score(text, repr(want), opts, threshold=1).passed
        assert score_frame(frame, options=opts, threshold=1)["passed"].tolist() == [True]


def test_the_cli_and_score_agree_on_quotients_at_threshold_1(
    tracking_uri: str, tmp_path: Path
) -> None:
    rows = [f"{ABOVE_2_53}/3", f"{'1' * 309}/{'1' * 309}0", f"{ABOVE_2_53}/{ABOVE_2_53 - 1}"]
    expected = ["3002399751580331", "0.1", "1"]
    source = tmp_path / "t.csv"
    pd.DataFrame({"output": rows, "expected": expected}).to_csv(source, index=False)
    args = ["-q", "--no-plots", "--fractions", "--threshold", "1", "--results-dir", str(tmp_path)]
    done = invoke("score", str(source), *args)  # what it proves is the reading, not the process
    assert done.returncode == 0, done.stderr
    results = pd.read_parquet(tmp_path / "results.parquet")
    plain = [score(a, b, fractions=True, threshold=1) for a, b in zip(rows, expected, strict=True)]
    assert results["label"].tolist() == [r.label for r in plain] == ["fail", "unparseable", "pass"]


# --- case 3: one character table for digits -----------------------------------------------------


def test_the_column_readers_digits_are_pythons_str_isdecimal() -> None:
    """Every code point (but surrogates) matched against the RE2 class the column reader's
    tests use: exactly the non-ASCII ``str.isdecimal`` characters (Unicode 15's Kawi and Nag
    Mundari digits are not digits to Python 3.11, so not to the column reader either)."""
    codes = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    chars = pa.array([chr(c) for c in codes])
    matched = np.asarray(pc.match_substring_regex(chars, f"^[{decimal_ranges()}]$"))
    python = np.array([chr(c).isdecimal() and not chr(c).isascii() for c in codes])
    assert (matched == python).all()


@pytest.mark.parametrize("digit", ["\U00011f52", "\U0001e4f6", "\u0662", "\uff12"])
@pytest.mark.parametrize("options", [{"ranges": "mid"}, {"preset": "prose"}, {"digits": "any"}])
def test_digits_newer_than_python_read_the_same_in_both_readers(
    digit: str, options: dict[str, Any]
) -> None:
    opts = Options.of(None, **options)
    for text in [f"5 mg{digit} to 10 mg{digit}", f"5{digit}-9{digit}", f"x{digit} 5 to 7"]:
        plain, column = _both(text, opts)
        assert plain == column, text
    frame = pd.DataFrame({"output": [f"5 mg{digit} to 10 mg{digit}"], "expected": ["7.5"]})
    want = score(frame.output[0], "7.5", opts).label
    assert score_frame(frame, options=opts)["label"].tolist() == [want]


# --- case 4a: a range after a number with an exponent ------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1e0e-5e", 3.0),
        ("1E2E-300E", 200.0),
        ("1e+0e-5e", 3.0),
        ("1.5e0e-2.5e", 2.0),
        ("1e\u22120e-5e", 3.0),
        ("x 2e1e-40e y", 30.0),
        ("6.72e-03", 0.00672),  # an exponent, as ever
    ],
)
@pytest.mark.parametrize("options", [{"ranges": "mid"}, {"preset": "prose"}])
def test_a_range_after_an_exponent_reads_the_same_in_both_readers(
    text: str, want: float, options: dict[str, Any]
) -> None:
    assert _both(text, Options.of(None, **options)) == (want, want)


# --- case 4: lone surrogates --------------------------------------------------------------------

SURROGATES = [json.loads('"\\ud800 5"'), json.loads('"x \\udfff 5 to 7"'), "\udc80(3)", "4"]


@pytest.mark.parametrize(
    "options", [{}, {"preset": "prose"}, {"preset": "answers"}, {"negative": "parens"}]
)
def test_lone_surrogates_read_as_the_one_value_reader_reads_them(options: dict[str, Any]) -> None:
    opts = Options.of(None, **options)
    plain = [parse_number(t, opts) for t in [*SURROGATES, None]]
    want = [math.nan if v is None else v for v in plain]
    column = pd.Series([*SURROGATES, None], dtype=object, index=[9, 3, 5, 1, 0])
    np.testing.assert_array_equal(parse_column(column, opts), want)
    np.testing.assert_array_equal(parse_column(list(column), opts), want)
    counts = several_numbers(column, opts)
    assert counts.tolist() == [
        isinstance(t, str) and len(list(_tokens(t, opts))) >= 2 for t in column
    ]

    frame = pd.DataFrame({"output": SURROGATES, "expected": SURROGATES[::-1]}, dtype=object)
    results = score_frame(frame, options=opts)
    rows = [score(a, b, opts) for a, b in zip(frame.output, frame.expected, strict=True)]
    assert results["label"].tolist() == [r.label for r in rows]
    assert results["score"].tolist() == [r.score for r in rows]
    predicted = NumericDiffModel(opts).predict(None, frame)
    assert predicted["label"].tolist() == [r.label for r in rows]
    metric = make_numeric_diff_metric(**options).eval_fn(frame.output, frame.expected)
    assert metric.scores == [r.score for r in rows]
    feedback, _ = make_numeric_diff_scorer(**options)(
        outputs=SURROGATES[1], expectations={"expected": SURROGATES[0]}
    )
    assert feedback.value == score(SURROGATES[1], SURROGATES[0], opts).score


def _tokens(text: str, opts: Options) -> list[object]:
    from numdiff_component.reading.plain import latex_commas, tokens

    return list(tokens(latex_commas(text, opts), opts))


# --- case 5: negative="parens" is linear --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("(5" + " " * (1 << 20), 5.0),  # 1 MB of blanks no ")" closes: 25 min if quadratic
        ("(5" + " " * (1 << 20) + ")", -5.0),
        ("(5 %" + " " * (1 << 20) + "x", 5.0),
        ("(5" + " 5" * (1 << 19), 5.0),
    ],
)
def test_parentheses_after_megabytes_of_blanks_read_in_linear_time(text: str, want: float) -> None:
    """Sizes that a quadratic reader would not finish; the time per MB is measured by
    ``benchmarks/bench_adversarial.py --case "(5 then spaces"``."""
    opts = Options(negative="parens")
    assert _both(text, opts) == (want, want)
