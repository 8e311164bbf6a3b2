"""SPEC v3 §1-§2.1: every example of the spec's text (and of issue 15), through `parse_number`
and `parse_column`, which must agree; and the readings' edges where the spec is silent."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from numdiff_component import parse_column, parse_number
from numdiff_component.options import PRESETS as OPTION_PRESETS

W = {"words": "en"}
D = {"digits": "any"}
F = {"fractions": "all"}
S = {"scientific": True}
R = {"ranges": "mid"}
N = {"negative": "parens"}
P = {"prices": True}
# SPEC §2.1's presets as plain option dicts, passed to the readers as keywords
# (tests/test_options.py checks the table against the spec).
PRESETS = {name: dict(options) for name, options in OPTION_PRESETS.items() if options}
ANSWERS, PROSE, PRICES = PRESETS["answers"], PRESETS["prose"], PRESETS["prices"]

SPEC_V3 = [
    # §1: the sign before one currency symbol (the one change to the default reading).
    ("-3", {}, -3.0),
    ("x=-3", {}, -3.0),
    ("(\u22122)", {}, -2.0),
    ("$-3.50", {}, -3.5),
    ("--5", {}, -5.0),
    ("-$5", {}, -5.0),
    ("Loss: -$1,234.50", {}, -1234.5),
    ("COVID-19", {}, 19.0),
    ("a-5", {}, 5.0),
    ("E-5", {}, 5.0),
    ("US-$5", {}, 5.0),
    ("- $5", {}, 5.0),
    ("-$ 5", {}, 5.0),
    ("The answer is -$5.", {}, -5.0),
    ("\u2212\u20ac3", {}, -3.0),
    ("+\u00a35", {}, 5.0),
    ("-\u00a5 5", {}, 5.0),
    ("-$$5", {}, 5.0),  # one currency symbol only
    ("x-$5", {}, 5.0),  # the sign follows a letter: no sign
    ("-\u20b95", {"pick": "last"}, -5.0),
    # §1.1 with the v3 sign.
    ("####-$5", {"pick": "answer"}, -5.0),
    ("\u2212\u20ac3.2 billion", {"scale": "words"}, -3.2e9),
    ("Loss of \u2212$3.2 billion", {"scale": "words"}, -3.2e9),
    # §1.2.1 words="en"
    ("twelve hundred", W, 1200.0),
    ("two thousand and nineteen", W, 2019.0),
    ("three million, two hundred & forty", W, 3000240.0),
    ("a hundred and two", W, 102.0),
    ("hundred", W, 100.0),
    ("million", W, 1e6),
    ("5 million", W, 5.0),
    ("5 million", {**W, "scale": "words"}, 5e6),
    ("two thirds", W, 2 / 3),
    ("one-half", W, 0.5),
    ("two and a half", W, 2.5),
    ("one and three quarters", W, 1.75),
    ("-five", W, -5.0),
    ("12 \u2026 the three conditions", {**W, "pick": "answer"}, 12.0),
    ("the three conditions", {**W, "pick": "answer"}, 3.0),
    ("twenty-first", W, 20.0),
    ("a dozen", W, None),
    ("a third", W, None),
    ("minus five", W, 5.0),
    ("three point five", W, 3.0),
    ("nineteen eighty four", W, 19.0),
    ("nineteen eighty four", {**W, "pick": "last"}, 84.0),
    ("zero", W, 0.0),
    ("twenty-one", W, 21.0),
    ("The answer is eight", {**W, "pick": "answer"}, 8.0),
    ("The answer is eight", {"pick": "answer"}, None),
    ("twelve", {}, None),
    # §1.2.2 digits="any"
    ("\uff11\uff12\uff13", D, 123.0),
    ("\u0661\u0662\u0663", D, 123.0),
    ("\uff11\uff12\uff13", {}, None),
    ("-\u0663", D, -3.0),
    # §1.2.3 fractions="all"
    ("\\frac12", F, 0.5),
    ("\\frac12", {"fractions": True}, 12.0),
    ("\\frac3{4}", F, 0.75),
    ("2 1/2", F, 2.5),
    ("2\\frac{1}{2}", F, 2.5),
    ("2 3/2", F, 2.0),
    ("2 3/2", {**F, "pick": "last"}, 1.5),
    ("\u00bd", F, 0.5),
    ("2 \u00bd", F, 2.5),
    ("2\u00bd", F, 2.5),
    ("-\u00bd", F, -0.5),
    ("2 1/2 in", F, 2.5),
    ("3/4", F, 0.75),
    ("12/05/2023", F, 12.0),
    # §1.2.4 scientific=True
    ("2.48\u00d710\u22125", S, 2.48e-5),
    ("3 \\times 10^{8}", S, 3e8),
    ("1.5 \\times 10^3", S, 1500.0),
    ("10^6", S, 1e6),
    ("5x10", S, 5.0),
    ("10-5", S, 10.0),
    ("8x2^10", S, 8.0),
    ("6.02 \u00d7 10\u00b2\u00b3", S, 6.02e23),
    ("2.48\u00d710\u22125", {}, 2.48),
    # §1.2.5 ranges="mid"
    ("5-10", R, 7.5),
    ("5 - 10", R, 5.0),
    ("10-5", R, 10.0),
    ("2013-14", R, 2013.0),
    ("$5 to $10", R, 7.5),
    ("$5-$10", R, 7.5),
    ("-$5 to -$3", R, -4.0),
    ("between 44 and 50", R, 47.0),
    ("5 to 10 million", {**R, "scale": "words"}, 7.5e6),
    ("8- to 16-meter", R, 12.0),
    ("44 mg to 50 mg", R, 47.0),
    ("7 to 10", R, 8.5),
    ("3.5\u20134.0 TeV", R, 3.75),
    ("3.5 \u2013 4.0 TeV", R, 3.75),
    ("1-2-3", R, 1.0),
    ("44 and 50", R, 44.0),
    # §1.2.6 negative="parens"
    ("($99.99)", N, -99.99),
    ("(1,234)", N, -1234.0),
    ("(-$5)", N, -5.0),
    ("(-2)", N, -2.0),
    ("\\( 9 \\)", N, 9.0),
    ("(2 items)", N, 2.0),
    ("($99.99)", {}, 99.99),
    # §1.2.7 prices=True
    ("$119. 95", P, 119.95),
    ("118, 99", {**P, "decimal_comma": True}, 118.99),
    ("35\u20ac99", P, 35.99),
    ("35\u20ac 99", P, 35.99),
    ("10\u20ac 20\u20ac", P, 10.0),
    ("$119. 95", {}, 119.0),
    # §2.1 presets
    ("The answer is twenty-one.", ANSWERS, 21.0),
    ("7 to 10 people", PROSE, 8.5),
    ("$119. 95", PRICES, 119.95),
    ("7 to 10 people", {**ANSWERS, "pick": "last"}, 10.0),
]

# Where the spec is silent: the readings chosen (see docs/readings-limits.md).
SILENT = [
    ("one hundred and three quarters", W, 100.75),  # "and N'/D" read before "hundred and N"
    ("twenty-fifth", W, 4.0),  # an ordinal ending in a fraction word reads as a fraction
    ("5 million to 10 million", {**R, "scale": "words"}, 7.5e6),  # scale after Y, before its unit
    ("5%-10%", {**R, "percent": "fraction"}, 0.075),
    ("-5 to -3", R, -4.0),  # a sign alone is also Y's prefix
    ("five to ten", {**R, **W}, 7.5),
    ("(5%)", {**N, "percent": "fraction"}, -0.05),
    ("(5 million)", {**N, "scale": "words"}, -5e6),
    ("(5-10)", {**N, **R}, 7.5),  # a range is never negated by parentheses
    ("05/2023", {"fractions": True}, 5 / 2023),
    ("12/25", {"fractions": True}, 0.48),
    ("5T-shirts", {"scale": "words"}, 5e12),
    ("5 - 10 to ", {**R, "pick": "last"}, 10.0),  # a connector at the end: Y looked for there
]


def _column(value: str, options: dict) -> float | None:
    got = parse_column([value, None, "x"], **options)[0]
    return None if math.isnan(got) else float(got)


@pytest.mark.parametrize(("value", "options", "expected"), SPEC_V3 + SILENT)
def test_spec_v3_examples(value: str, options: dict, expected: float | None) -> None:
    plain = parse_number(value, **options)
    assert plain == pytest.approx(expected, rel=1e-15) if expected is not None else plain is None
    assert _column(value, options) == plain


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize(("value", "options", "expected"), SPEC_V3 + SILENT)
def test_every_example_under_every_preset_agrees(
    name: str, value: str, options: dict, expected: float | None
) -> None:
    opts = {**PRESETS[name], **options}
    assert _column(value, opts) == parse_number(value, **opts)


# --- the package's import rules (docs/architecture.md) -------------------------------------

READING = Path(__file__).resolve().parents[2] / "numdiff_component" / "reading"


@pytest.mark.parametrize("path", sorted(READING.glob("*.py")), ids=lambda p: p.name)
def test_reading_modules_import_only_options_errors_and_reading(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top not in {"mlflow", "click", "pyspark", "os", "pathlib", "io"}, name
            if top == "numdiff_component":
                assert name.split(".")[1] in {"options", "errors", "reading"}, name
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 450
