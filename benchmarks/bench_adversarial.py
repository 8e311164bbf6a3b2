"""Reading a value takes time linear in its length, whatever the text (SPEC §1).

    python benchmarks/bench_adversarial.py [--sizes 1 2 4] [--case NAME ...] [--clock cpu]

For each adversarial text, built at each size (MB), prints the time per MB of the plain path
(`parse_number`) and of the vectorised path (`parse_column` on a one-cell column), with
``pick="first"`` and ``pick="last"`` (and, for the texts aimed at the readings of SPEC §1.1,
``pick="answer"`` too, each with every reading on), and the ratio of the time per MB at the
largest size to that at the smallest: about 1 when linear (2 would mean twice the cost per MB,
i.e. quadratic over a doubling; a quadratic blow-up shows as a ratio near largest/smallest size).
The texts dense in tokens (`DENSE_CASES`) are read under the default options, the presets and
single readings of SPEC §1.2 (`DENSE_OPTIONS`): the figures docs/guarantees.md states per reading,
measured with ``--case`` naming them and ``--sizes 0.25 1 --repeat 1``. ``--clock cpu``: this
process's CPU time instead of wall time (steadier on a shared machine).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import pyarrow as pa

from numdiff_component import Options, parse_column, parse_number

MB = 1_000_000


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit.encode())) + tail


CASES: dict[str, Callable[[int], str]] = {
    "a million digits": lambda n: _repeat("7", n),
    "long fraction": lambda n: _repeat("2", n, head="1."),
    "huge exponent": lambda n: _repeat("9", n, head="1e"),
    "minus signs": lambda n: _repeat("-", n, tail="5"),
    "mixed signs": lambda n: _repeat("+-\u2212", n, tail="5"),
    "commas": lambda n: _repeat(",", n, tail="5"),
    "dots": lambda n: _repeat(".", n, tail="5"),
    "e's": lambda n: _repeat("e", n, tail="5"),
    "1,234,234,...,2345": lambda n: _repeat(",234", n, head="1", tail="5"),
    "1,234,...,234 (clean)": lambda n: _repeat(",234", n, head="1"),
    "1,2,3,...": lambda n: _repeat("1,", n),
    ".5.5.5...": lambda n: _repeat(".5", n),
    "1e1e1e...": lambda n: _repeat("1e", n),
    "-1-1-1...": lambda n: _repeat("-1", n),
    "a-5a-5...": lambda n: _repeat("a-5", n),
    "5 then spaces (percent)": lambda n: _repeat(" ", n, head="5", tail="x"),
    "NUL bytes": lambda n: _repeat("\x00", n, tail="5"),
    "prose, number at the end": lambda n: _repeat("The answer is ", n, tail="$1,234.50"),
}
# Aimed at SPEC §1.1 (markers, brace spans, scale words, separators, fractions).
READING_CASES: dict[str, Callable[[int], str]] = {
    "\\boxed{\\boxed{...": lambda n: _repeat("\\boxed{", n, tail="5"),
    "\\boxed{ then {{{{...": lambda n: _repeat("{", n, head="\\boxed{", tail="5"),
    "{{{{... then \\boxed{": lambda n: _repeat("{", n, tail="\\boxed{5"),
    "answer is answer is ...": lambda n: _repeat("answer is ", n, tail="5"),
    "answer: 5 then prose": lambda n: _repeat("x", n, head="answer: 5 "),
    "#####...": lambda n: _repeat("#", n, tail="5"),
    "5 then prose": lambda n: _repeat("x ", n, head="5 "),
    "1 000 000 ... (groups)": lambda n: _repeat(" 000", n, head="1"),
    "1 000 ... 0000 (broken)": lambda n: _repeat(" 000", n, head="1", tail="0"),
    "1\\,000\\,000 ...": lambda n: _repeat("\\,000", n, head="1"),
    "1{,}1{,}1 ...": lambda n: _repeat("1{,}", n),
    "1/1/1/...": lambda n: _repeat("1/", n, tail="1"),
    "12/05/2023 12/05/2023 ...": lambda n: _repeat("12/05/2023 ", n),
    "1/2 1/2 1/2 ...": lambda n: _repeat("1/2 ", n),
    "5k5k5k...": lambda n: _repeat("5k", n),
    "5 then spaces then k": lambda n: _repeat(" ", n, head="5", tail="k"),
    "5 million million ...": lambda n: _repeat(" million", n, head="5"),
    "\\frac{1}{\\frac{1}{...": lambda n: _repeat("\\frac{1}{", n),
    "\\frac{ then spaces": lambda n: _repeat(" ", n, head="\\frac{1", tail="}{2}"),
    "\\frac{1}{2}\\frac{1}{2}...": lambda n: _repeat("\\frac{1}{2}", n),
    "5\\%\\%\\%...": lambda n: _repeat("\\%", n, head="5"),
}

# Aimed at SPEC §1.2 (number words, ranges, vulgar fractions, exponents, parentheses, scripts).
V3_CASES: dict[str, Callable[[int], str]] = {
    "two hundred and two hundred and ...": lambda n: _repeat("two hundred and ", n),
    "1-2-3-...": lambda n: _repeat("1-2-", n, tail="3"),
    "\u00bd\u00bd\u00bd...": lambda n: _repeat("\u00bd", n),
    "1\u00d710^1\u00d710^...": lambda n: _repeat("1\u00d710^", n, tail="1"),
    "((((...": lambda n: _repeat("(", n, tail="5)"),
    "\u0661\u0662\u0663...": lambda n: _repeat("\u0661\u0662\u0663 ", n),
    "5 to 5 to ...": lambda n: _repeat("5 to ", n, tail="5"),
    "between between ...": lambda n: _repeat("between ", n, tail="4 and 6"),
    "$119. $119. ...": lambda n: _repeat("$119. ", n, tail="95"),
    "twenty-twenty-...": lambda n: _repeat("twenty-", n, tail="one"),
}

# Aimed at SPEC v4 (words="all", Indian grouping, powers): each new rule's worst text.
V4_CASES: dict[str, Callable[[int], str]] = {
    "point point point ...": lambda n: _repeat("point ", n, tail="5"),
    "two point nine nine ...": lambda n: _repeat(" nine", n, head="two point"),
    "minus minus ...": lambda n: _repeat("minus ", n, tail="5"),
    "minus then spaces": lambda n: _repeat(" ", n, head="x minus", tail="5"),
    "1 out of 1 out of ...": lambda n: _repeat("1 out of ", n, tail="1"),
    "3 dollars 3 dollars ...": lambda n: _repeat("3 dollars ", n, tail="50 cents"),
    "half half half ...": lambda n: _repeat("half ", n),
    "the half the half ...": lambda n: _repeat("the half ", n),
    "a third a third ...": lambda n: _repeat("a third ", n),
    "a third then spaces": lambda n: _repeat(" ", n, head="a third", tail="x"),
    "twentyone-twentyone-...": lambda n: _repeat("twentyone-", n, tail="one"),
    "three billions billions ...": lambda n: _repeat(" billions", n, head="three"),
    "5-5-5-...-million": lambda n: _repeat("5-", n, tail="million"),
    "5 dozens dozens ...": lambda n: _repeat(" dozens", n, head="5"),
    "1^1^1^...": lambda n: _repeat("1^", n, tail="1"),
    "2^99999...": lambda n: _repeat("9", n, head="2^"),
    "1,23,23,23,...": lambda n: _repeat(",23", n, head="1", tail=",456"),
    "1,23,1,23,...": lambda n: _repeat("1,23,", n),
}

# Ordinary-looking texts dense in tokens (one every 2 to 4 bytes), under the presets and the
# readings that read them token by token in Python (issue 33): the true bound per reading.
DENSE_CASES: dict[str, Callable[[int], str]] = {
    "5-4-5-4-...": lambda n: _repeat("5-4-", n),
    "1-2-1-2-...": lambda n: _repeat("1-2-", n),
    "a a a ...": lambda n: _repeat("a ", n),
    "one one one ...": lambda n: _repeat("one ", n),
    "5 5 5 ...": lambda n: _repeat("5 ", n),
    "(5 then spaces": lambda n: _repeat(" ", n, head="(5"),
}

PATHS: dict[str, Callable[[str, Options], object]] = {
    "plain": lambda text, opts: parse_number(text, opts),
    "column": lambda text, opts: parse_column(pa.array([text]), opts),
}
OPTIONS = {
    "first": Options(percent="fraction"),
    "last": Options(pick="last", percent="fraction"),
}
_EVERY_READING = {"percent": "fraction", "scale": "words", "thousands": "any", "fractions": True}
READING_OPTIONS = {
    "first+": Options(**_EVERY_READING),  # type: ignore[arg-type]
    "last+": Options(pick="last", **_EVERY_READING),  # type: ignore[arg-type]
    "answer+": Options(pick="answer", **_EVERY_READING),  # type: ignore[arg-type]
}


_EVERY_V3 = {
    **_EVERY_READING,
    "fractions": "all",
    "words": "en",
    "digits": "any",
    "scientific": True,
    "ranges": "mid",
    "negative": "parens",
    "prices": True,
}
V3_OPTIONS = {  # pick="last": every token of the text is read (the worst case)
    "last v3": Options(pick="last", **_EVERY_V3),  # type: ignore[arg-type]
    "answer v3": Options(pick="answer", **_EVERY_V3),  # type: ignore[arg-type]
}


_EVERY_V4 = {**_EVERY_V3, "words": "all"}
V4_OPTIONS = {
    "last v4": Options(pick="last", **_EVERY_V4),  # type: ignore[arg-type]
    "answer v4": Options(pick="answer", **_EVERY_V4),  # type: ignore[arg-type]
    "prose": Options.of(preset="prose"),
}


DENSE_OPTIONS = {  # the readings by which the guide states its bounds (docs/guarantees.md)
    "default": Options(),
    "prose": Options(preset="prose"),
    "prose last": Options(preset="prose", pick="last"),
    "answers": Options(preset="answers"),
    "words": Options(words="en"),
    "ranges last": Options(ranges="mid", pick="last"),
    "parens": Options(negative="parens"),
}


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def seconds(fn: Callable[[], object], repeat: int = 3, clock: str = "wall") -> float:
    best = float("inf")
    for _ in range(repeat):
        start = CLOCKS[clock]()
        fn()
        best = min(best, CLOCKS[clock]() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4], help="MB")
    every = {**CASES, **READING_CASES, **V3_CASES, **DENSE_CASES, **V4_CASES}
    parser.add_argument("--case", nargs="*", choices=list(every), help="default: all")
    parser.add_argument("--repeat", type=int, default=3, help="best of R runs")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall")
    parser.add_argument("--path", nargs="*", choices=list(PATHS), help="default: both")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    size_head = " ".join(f"{s:g} MB".rjust(7) for s in sizes)
    at = ", ".join(f"{s:g}" for s in sizes)
    print(f"ms per MB at sizes {at} MB ({args.clock} clock); ratio = last / first size")
    print("first+, last+, answer+: with scale, thousands, fractions and percent readings on")
    print("last v3, answer v3: with every reading of SPEC §1.1 and §1.2 on")
    print("last v4, answer v4, prose: every reading with words='all' (SPEC v4); the prose preset")
    print("dense texts: under the default options, the presets and single readings (named)")
    print(f"{'case':<28} {'path':<19} {size_head} {'ratio':>6}")
    worst = 0.0
    for case in args.case or list(every):
        texts = [every[case](int(s * MB)) for s in sizes]
        options = READING_OPTIONS if case in READING_CASES else OPTIONS
        options = V3_OPTIONS if case in V3_CASES else options
        options = DENSE_OPTIONS if case in DENSE_CASES else options
        options = V4_OPTIONS if case in V4_CASES else options
        for path in args.path or list(PATHS):
            read = PATHS[path]
            for pick, opts in options.items():
                per_mb = [
                    seconds(lambda t=text, o=opts: read(t, o), args.repeat, args.clock)  # noqa: B023
                    * 1000
                    / (len(text.encode()) / MB)
                    for text in texts
                ]
                ratio = per_mb[-1] / per_mb[0]
                worst = max(worst, ratio)
                cells = " ".join(f"{v:7.1f}" for v in per_mb)
                print(f"{case:<28} {path + ' ' + pick:<19} {cells} {ratio:6.2f}", flush=True)
    quadratic = sizes[-1] / sizes[0]
    print(f"\nworst ratio: {worst:.2f} (linear: about 1; quadratic: about {quadratic:g})")


if __name__ == "__main__":
    main()
