"""Reading a value takes time linear in its length, whatever the text (SPEC §1).

    python benchmarks/bench_adversarial.py [--sizes 1 2 4] [--case NAME ...]

For each adversarial text, built at each size (MB), prints the time per MB of the plain path
(`parse_number`) and of the vectorised path (`parse_column` on a one-cell column), with
``pick="first"`` and ``pick="last"``, and the ratio of the time per MB at the largest size to
that at the smallest: about 1 when linear (2 would mean twice the cost per MB, i.e. quadratic
over a doubling; a quadratic blow-up shows as a ratio near largest/smallest size).
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

PATHS: dict[str, Callable[[str, Options], object]] = {
    "plain": lambda text, opts: parse_number(text, opts),
    "column": lambda text, opts: parse_column(pa.array([text]), opts),
}
OPTIONS = {
    "first": Options(percent="fraction"),
    "last": Options(pick="last", percent="fraction"),
}


def seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4], help="MB")
    parser.add_argument("--case", nargs="*", choices=list(CASES), help="default: all")
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    columns = [f"{path} {pick}" for path in PATHS for pick in OPTIONS]
    size_head = " ".join(f"{s:g} MB".rjust(7) for s in sizes)
    print(f"ms per MB at sizes {', '.join(f'{s:g}' for s in sizes)} MB; ratio = last / first size")
    print(f"{'case':<26} {'path':<13} {size_head} {'ratio':>6}")
    worst = 0.0
    for case in args.case or list(CASES):
        texts = [CASES[case](int(s * MB)) for s in sizes]
        for column in columns:
            path, pick = column.split()
            read, opts = PATHS[path], OPTIONS[pick]
            per_mb = [
                seconds(lambda t=text: read(t, opts)) * 1000 / (len(text.encode()) / MB)  # noqa: B023
                for text in texts
            ]
            ratio = per_mb[-1] / per_mb[0]
            worst = max(worst, ratio)
            cells = " ".join(f"{v:7.1f}" for v in per_mb)
            print(f"{case:<26} {column:<13} {cells} {ratio:6.2f}")
    quadratic = sizes[-1] / sizes[0]
    print(f"\nworst ratio: {worst:.2f} (linear: about 1; quadratic: about {quadratic:g})")


if __name__ == "__main__":
    main()
