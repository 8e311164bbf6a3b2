"""The hint: on tables where one change is right, the preset or the single option it names is
that change, with the passing rows it would fail; the single options come from the schema."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from numdiff_component import Options, score_frame
from numdiff_component.hints import NAMED_ROWS, PresetHint, single_changes
from numdiff_component.job.run import advice_note
from numdiff_component.options import SCHEMA
from numdiff_component.slices.thresholds import ROW_THRESHOLD, apply_row_thresholds


def hint(
    rows: list[tuple[str, str]], options: Options | None = None, ids: bool = False
) -> PresetHint:
    """A hint fed ``rows`` (output, expected) in batches of two, with ids ``i1, i2...`` when
    ``ids``."""
    options = options or Options()
    frame = pd.DataFrame(rows, columns=["output", "expected"])
    frame.insert(0, "id", [f"i{n}" for n in range(1, len(rows) + 1)])
    found = PresetHint(options, "output", "expected", "id" if ids else None)
    for start in range(0, len(frame), 2):
        found.add(score_frame(frame.iloc[start : start + 2], "output", "expected", options))
    return found


PASSING = [("12", "12"), ("7 apples", "7")]
"""Rows every option below still passes."""
RIGHT = {  # failing rows, and the single option (the first suggested) that reads them
    "percent": ([("50 %", "0.5"), ("12.5%", "0.125")], {"percent": "fraction"}),
    "decimal comma": ([("1.234", "1234"), ("2.500.000 m", "2500000")], {"decimal_comma": True}),
    "last": ([("3 + 4 = 7", "7"), ("from 2 to 9", "9")], {"pick": "last"}),
    "scale": ([("2.1 billion", "2100000000"), ("12k", "12000")], {"scale": "words"}),
    "words": ([("twenty-one", "21"), ("forty two", "42")], {"words": "en"}),
    "parens": ([("($5.00)", "-5"), ("loss: (12)", "-12")], {"negative": "parens"}),
    "scientific": (
        [("2.5\u00d710^3", "2500"), ("1 \\times 10^{6}", "1000000")],
        {"scientific": True},
    ),
}


@pytest.mark.parametrize("case", RIGHT)
def test_the_first_single_option_suggested_is_the_one_that_reads_the_table(case: str) -> None:
    failing, change = RIGHT[case]
    advice = hint(failing + PASSING).single_options()
    assert advice and advice[0].change == change, [a.change for a in advice]
    assert (advice[0].gained, advice[0].lost, advice[0].broken) == (2, 0, ())
    assert len({next(iter(a.change)) for a in advice}) == len(advice)  # one value per option


def test_an_option_that_fails_as_many_rows_as_it_passes_is_not_suggested() -> None:
    """Reading percent as a fraction passes '25%' against 0.25 and fails '40%' against 40."""
    rows = [("25%", "0.25"), ("40%", "40")]
    assert {"percent": "fraction"} not in [a.change for a in hint(rows).single_options()]
    assert hint(PASSING).single_options() == [] and hint(PASSING).best() is None


@pytest.mark.parametrize("ids", [False, True])
def test_the_advice_names_the_passing_rows_it_would_fail(ids: bool) -> None:
    """Seven rows give a percent whose expected value is a fraction and fail; reading percent
    as a fraction passes them and fails three of the four passing rows, written the other way:
    they are named, by id or row number."""
    rows = [("25%", "0.25")] * 7 + [("40%", "40"), ("8", "8"), ("10 %", "10"), ("3%", "3")]
    advice = hint(rows, ids=ids).single_options()[0]
    assert advice.change == {"percent": "fraction"} and (advice.gained, advice.lost) == (7, 3)
    assert advice.broken == (("i8", "i10", "i11") if ids else ("row 8", "row 10", "row 11"))
    assert advice_note(advice) == (
        "--percent fraction (-P percent=fraction) would pass 7 of the 7 failing rows and fail 3 "
        f"of the 4 passing ones ({', '.join(advice.broken)}; pass rate 0.3636 -> 0.7273)"
    )
    switch = hint([("1.234", "1234"), ("8", "8")]).single_options()[0]
    assert advice_note(switch).startswith("--decimal-comma (-P decimal_comma=true) would pass 1 ")


def test_a_preset_names_at_most_five_passing_rows_it_would_fail() -> None:
    """'answers' reads the final answer: it passes the chains of thought and fails the rows
    whose answer is the first number; six of them, five named."""
    chains = [("Step 1: 3+4=7. Answer: 14", "14")] * 8
    firsts = [(f"{n} apples and 2 pears", str(n)) for n in range(3, 9)]
    advice = hint(chains + firsts).best()
    assert advice is not None and advice.change == {"preset": "answers"}
    assert (advice.gained, advice.lost) == (8, 6) and len(advice.broken) == NAMED_ROWS
    assert advice.broken == tuple(f"row {n}" for n in range(9, 14))
    assert "and fail 6 of the 6 passing ones (row 9, row 10, row 11, row 12, row 13, ...;" in (
        advice_note(advice)
    )


def test_the_single_options_are_the_schema_s_enumerated_domains() -> None:
    """Every other value of every switch and choice but the preset and units; not the bar
    (threshold, floor) nor the lists."""
    changes = list(single_changes(Options()))
    names = {next(iter(c)) for c in changes}
    enumerated = {s.name for s in SCHEMA if s.kind in (bool, str)} - {"preset", "units"}
    assert names == enumerated and {"threshold", "floor", "markers"}.isdisjoint(names)
    for spec in SCHEMA:
        expected: tuple[Any, ...] = (
            (False, True, *spec.choices) if spec.kind is bool else spec.choices
        )
        if spec.name in names:
            assert [c[spec.name] for c in changes if spec.name in c] == [
                v for v in expected if v != spec.default
            ]


def test_single_options_are_said_beside_a_preset_only_when_they_gain_as_much() -> None:
    """On chains of thought 'answers' passes every row: '--pick answer', which passes them too,
    is said; '--pick last', which passes none, is not. An option that gains as many rows as the
    preset is said beside it."""
    chains = [("3+4=7. Answer: 14 (7 times 2)", "14"), ("the answer is 5, from 2 and 3", "5")]
    answers = hint(chains + PASSING).advice()
    assert [a.change for a in answers] == [{"preset": "answers"}, {"pick": "answer"}]
    rows = [("twenty-one", "21"), ("3 apples and 4 pears", "3"), *PASSING]
    said = [a.change for a in hint(rows).advice()]
    assert said[0] == {"preset": "prose"} and {"words": "en"} in said[1:], said


@pytest.mark.parametrize("n", [2, 60])  # by the one-value reader; by the column reader
def test_rows_held_to_their_own_threshold_are_tried_against_it(n: int) -> None:
    """'12.5%' against 0.12 read as a fraction scores 0.995: it would pass the global 0.99, not
    a row threshold of 1 (SPEC §3.2); the option is advised only without it."""
    frame = pd.DataFrame({"output": ["12.5%"] * n, "expected": "0.12", "tol": ["1"] * n})
    for tol, advised in [("", True), ("1", False)]:
        found = PresetHint(Options(), "output", "expected", limits_col=ROW_THRESHOLD)
        found.add(apply_row_thresholds(score_frame(frame.assign(tol=tol)), "tol", 0.99))
        changes = [a.change for a in found.single_options()]
        assert ({"percent": "fraction"} in changes) is advised, (tol, changes)
