"""Throughput of `score_frame` against baselines measured in the same run.

    python benchmarks/bench_core.py [--rows N] [--autoevals-rows M] [--repeat R] [--clock cpu]

Three tables of N rows (both columns strings): (a) clean numeric strings, (b) numbers inside
prose, shaped like LLM answers (currency, grouping, signs, exponents, percents, several numbers,
a few with no number), (d) chain-of-thought outputs of about 400 characters (the answer after a
marker on most rows, in a ``\\boxed{}`` on some, the last number on the rest) against clean
expected answers. Baselines: (a) the floor, ``pyarrow.compute.cast`` of both columns to
float64 plus the score arithmetic in numpy; (b) one ``extract_regex`` pass per column with a
simple number pattern, plus the cast and the arithmetic; (c) a Python loop calling
``autoevals.NumericDiff`` on numbers already converted to floats (on M rows), skipped when
autoevals is not installed; (d) like (b) but extracting the LAST simple number (greedy ``(?s).*``
before the pattern), on the prose and the chain-of-thought tables, beside the readings of SPEC
§1.1, each alone and all together; (e) the option sets of SPEC §2.1's presets "answers" (on the
chain-of-thought table, against (d)) and "prose" (on the prose table, against (b)); (f) a table
of quantities (SPEC §1.3: numbers of the prose table's shapes with a unit, bare or in a
sentence) with the preset "measurements" (units read and converted), against (b) on that table.
Best of R runs, in wall time, or with ``--clock cpu`` in this process's CPU time (steadier on a
shared machine: time spent waiting for a core is not counted, for the floors and the reader
alike).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from numdiff_component import score_frame

PROSE = [
    "The answer is ${g}.",
    "approximately {e} units",
    "{f}",
    "I believe the result is {i}.",
    "Final answer: {f}",
    "The total comes to {g} dollars.",
    "About {i}% of respondents agreed.",
    "x = {s}",
    "It is roughly {e} meters away.",
    "**Answer:** {i}",
    "There are {i} apples and 4 oranges, so {i} fruits.",
    "Step 1: add 3 and 4. Step 2: multiply by {f}. The result is {f}.",
    "The value is {s}, give or take.",
    "I cannot determine the answer from the information given.",
    "twelve",
]


STEPS = [
    "First, {a} plus {b} makes {c}. ",
    "Then we multiply by {b} to get {c}. ",
    "There were {a} apples and {b} pears at the start. ",
    "Each box holds {b} items, so {a} boxes hold {c}. ",
    "Subtracting {a} from {c} leaves {b}. ",
    "The price rose by {b}% over {a} years. ",
    "So far we have {c} in total, which we check again carefully. ",
]
ENDINGS = [
    "Therefore, the answer is {x}.",
    "#### {x}",
    "Final answer: {x}",
    "So the final answer is $\\boxed{{{x}}}$.",
    "The answer is: \\boxed{{{x}}}",
    "Putting it together gives {x}.",
    "That leaves {x} for the last step.",
]


def cot_column(rng: np.random.Generator, n: int) -> list[str]:
    """Chain-of-thought answers of about 400 characters: reasoning with numbers, then the answer
    after a marker (most rows), in a box (some) or as the last number (the rest)."""
    a, b = rng.integers(2, 500, n), rng.integers(2, 50, n)
    x = [f"{v:,}" if v > 9999 else str(v) for v in rng.integers(0, 100_000, n).tolist()]
    steps = rng.integers(0, len(STEPS), (n, 9)).tolist()
    endings = rng.integers(0, len(ENDINGS), n).tolist()
    rows = []
    for i in range(n):
        nums = {"a": a[i], "b": b[i], "c": a[i] * b[i]}
        body = "".join(STEPS[k].format(**nums) for k in steps[i])
        rows.append(body + ENDINGS[endings[i]].format(x=x[i]))
    return rows


def _numbers(rng: np.random.Generator, n: int) -> dict[str, list[str]]:
    mags = 10.0 ** rng.uniform(-3, 6, n)
    signs = rng.choice([-1.0, 1.0], n, p=[0.2, 0.8])
    values = mags * signs
    return {
        "f": [f"{v:.4g}" for v in values],
        "g": [f"{abs(v):,.2f}" for v in values],
        "e": [f"{v:.2e}" for v in values],
        "i": [str(int(abs(v))) for v in values],
        "s": [f"{v:.3f}" for v in values],
    }


MEASURES = [
    "{f} {u}",
    "{s} {u}",
    "{g} {u}.",
    "{i}{u}",
    "about {f} {u}",
    "The distance is {f} {u}.",
    "It is roughly {e} {u} away.",
    "{i} {u} in total",
]
UNITS = ["km", "m", "kg", "g", "mg", "°C", "degF", "mph", "km/h", "m/s^2", "kWh", "MiB", "hours"]


def measurements_column(rng: np.random.Generator, n: int) -> list[str]:
    """Quantities (SPEC §1.3): numbers of the prose table's shapes with a unit, bare or in a
    sentence."""
    nums = _numbers(rng, n)
    picks = rng.integers(0, len(MEASURES), n).tolist()
    units = rng.integers(0, len(UNITS), n).tolist()
    return [
        MEASURES[k].format(u=UNITS[units[row]], **{key: nums[key][row] for key in "fgeis"})
        for row, k in enumerate(picks)
    ]


def clean_column(rng: np.random.Generator, n: int) -> list[str]:
    values = 10.0 ** rng.uniform(-3, 6, n) * rng.choice([-1.0, 1.0], n, p=[0.2, 0.8])
    shapes = rng.integers(0, 4, n)
    formats = ["{:.6g}", "{:.2f}", "{:.0f}", "{:.3e}"]
    return [formats[k].format(v) for k, v in zip(shapes.tolist(), values.tolist(), strict=True)]


def prose_column(rng: np.random.Generator, n: int) -> list[str]:
    nums = _numbers(rng, n)
    picks = rng.integers(0, len(PROSE), n).tolist()
    return [
        PROSE[k].format(**{key: nums[key][row] for key in "fgeis"}) for row, k in enumerate(picks)
    ]


def frame(kind: str, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    if kind == "cot":  # model outputs against a dataset's clean answers
        expected = [str(v) for v in rng.integers(0, 100_000, n).tolist()]
        return pd.DataFrame({"output": cot_column(rng, n), "expected": expected})
    make = {"clean": clean_column, "prose": prose_column, "measurements": measurements_column}[kind]
    return pd.DataFrame({"output": make(rng, n), "expected": make(rng, n)})


def _arith(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
        return np.clip(1 - d / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0), 0, 1)


def cast_floor(df: pd.DataFrame) -> np.ndarray:
    a, b = (pc.cast(pa.array(df[c]), pa.float64()).to_numpy() for c in ("output", "expected"))
    return _arith(a, b)


SIMPLE = r"(?P<n>[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"


def _regex_floor(df: pd.DataFrame, pattern: str) -> np.ndarray:
    """One `pc.extract_regex` of ``pattern`` per column, the cast, the score arithmetic."""
    cols = []
    for c in ("output", "expected"):
        tok = pc.struct_field(pc.extract_regex(pa.array(df[c]), pattern), [0])
        cols.append(pc.cast(tok, pa.float64()).to_numpy(zero_copy_only=False))
    return _arith(*cols)


LAST = rf"(?s).*{SIMPLE}"


def extract_floor(df: pd.DataFrame) -> np.ndarray:
    return _regex_floor(df, SIMPLE)


def last_floor(df: pd.DataFrame) -> np.ndarray:
    return _regex_floor(df, LAST)


PROSE_FLOOR = "floor (b): extract_regex + cast + arithmetic, prose"
MEASURES_FLOOR = "floor (b): extract_regex + cast + arithmetic, measurements"
READINGS: dict[str, dict[str, object]] = {  # SPEC §1.1, each alone and all together
    "defaults": {},
    "pick=answer": {"pick": "answer"},
    "scale=words": {"scale": "words"},
    "thousands=any": {"thousands": "any"},
    "fractions=True": {"fractions": True},
    "percent=fraction": {"percent": "fraction"},
    "all": {
        "pick": "answer",
        "scale": "words",
        "thousands": "any",
        "fractions": True,
        "percent": "fraction",
    },
}
AUTOEVALS = "(c) autoevals.NumericDiff loop on floats"
OTHER_OPTIONS: dict[str, dict[str, object]] = {
    "pick=last": {"pick": "last"},
    "decimal_comma=True": {"decimal_comma": True},
    "percent=fraction": {"percent": "fraction"},
}


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def seconds(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    start = clock()
    fn()
    return clock() - start


def autoevals_loop(df: pd.DataFrame, m: int) -> Callable[[], list[float]] | None:
    try:
        from autoevals import NumericDiff
    except ImportError:
        return None

    scorer = NumericDiff()
    a = [float(x) for x in df["output"][:m]]
    b = [float(x) for x in df["expected"][:m]]
    return lambda: [scorer.eval(output=x, expected=y).score for x, y in zip(a, b, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--autoevals-rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall")
    args = parser.parse_args()
    n, r = args.rows, args.repeat

    clean, prose = frame("clean", n, seed=1), frame("prose", n, seed=2)
    cot = frame("cot", n, seed=3)
    m = min(n, args.autoevals_rows)
    # Each measurement alternates with its baselines, so that a busy machine slows all alike.
    runs: dict[str, tuple[Callable[[], object], int]] = {
        "score_frame, clean": (lambda: score_frame(clean), n),
        "floor (a): cast + arithmetic, clean": (lambda: cast_floor(clean), n),
        "score_frame, prose": (lambda: score_frame(prose), n),
        PROSE_FLOOR: (lambda: extract_floor(prose), n),
    }
    loop = autoevals_loop(clean, m)
    if loop is not None:
        runs[AUTOEVALS] = (loop, m)
    for label, option in OTHER_OPTIONS.items():  # the other options, on prose (no target)
        runs[f"score_frame, prose, {label}"] = (lambda o=option: score_frame(prose, **o), n)
    for table, df in (("prose", prose), ("cot", cot)):
        runs[f"floor (d): last number, {table}"] = (lambda d=df: last_floor(d), n)
        for label, option in READINGS.items():
            run = lambda d=df, o=option: score_frame(d, **o)  # noqa: E731
            runs[f"score_frame, {table}, {label}"] = (run, n)
    runs["score_frame, cot, preset answers"] = (lambda: score_frame(cot, preset="answers"), n)
    runs["score_frame, prose, preset prose"] = (lambda: score_frame(prose, preset="prose"), n)
    measures = frame("measurements", n, seed=4)
    runs["score_frame, measurements, preset measurements"] = (
        lambda: score_frame(measures, preset="measurements"),
        n,
    )
    runs[MEASURES_FLOOR] = (lambda: extract_floor(measures), n)
    best = {name: float("inf") for name in runs}
    for _ in range(r):
        for name, (fn, _rows) in runs.items():
            best[name] = min(best[name], seconds(fn, CLOCKS[args.clock]))
    rate = {name: rows / best[name] for name, (_fn, rows) in runs.items()}
    unparseable = int((score_frame(prose)["label"] == "unparseable").sum())
    print(f"rows: {n:,} per table (prose: {unparseable:,} unparseable); autoevals on {m:,} rows")
    print(f"best of {r} runs ({args.clock} clock), each alternating with the others")
    print(f"{'what':<52} {'rows/s':>12}")
    for name, value in rate.items():
        print(f"{name:<52} {value:>12,.0f}")
    clean_rate, prose_rate = rate["score_frame, clean"], rate["score_frame, prose"]
    checks = [
        ("(a) clean / cast floor", clean_rate / rate["floor (a): cast + arithmetic, clean"], 0.7),
        ("(b) prose / extract+cast floor", prose_rate / rate[PROSE_FLOOR], 1.0),
    ]
    if AUTOEVALS in rate:
        auto = rate[AUTOEVALS]
        checks += [
            ("(c) clean / autoevals", clean_rate / auto, 10.0),
            ("(c) prose / autoevals (no target: autoevals reads no text)", prose_rate / auto, 0.0),
        ]
    for table in ("prose", "cot"):
        floor = rate[f"floor (d): last number, {table}"]
        for label in READINGS:
            target = 0.5 if label == "all" else 0.0
            ratio = rate[f"score_frame, {table}, {label}"] / floor
            checks.append((f"(d) {table}, {label} / last-number floor", ratio, target))
    answers = rate["score_frame, cot, preset answers"] / rate["floor (d): last number, cot"]
    checks.append(("(e) cot, preset answers / last-number floor (goal 1.0)", answers, 0.5))
    prose_preset = rate["score_frame, prose, preset prose"] / rate[PROSE_FLOOR]
    checks.append(("(e) prose, preset prose / extract+cast floor", prose_preset, 0.5))
    units = rate["score_frame, measurements, preset measurements"] / rate[MEASURES_FLOOR]
    checks.append(("(f) measurements, preset measurements / extract+cast floor", units, 0.3))
    print(f"\n{'ratio':<60} {'value':>6} {'target':>8}")
    for name, value, target in checks:
        verdict = "" if not target else "ok" if value >= target else "MISS"
        goal = f">= {target:g}" if target else "-"
        print(f"{name:<60} {value:>6.2f} {goal:>8} {verdict}")
    if AUTOEVALS not in rate:
        print("(c) skipped: autoevals is not installed (pip install autoevals)")


if __name__ == "__main__":
    main()
