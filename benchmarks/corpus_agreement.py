"""Agreement with other projects on real strings from their test suites (issue 15).

    python benchmarks/corpus_agreement.py [--corpus tests/data/corpus.jsonl] [--quiet]

Each line of the corpus (JSON Lines) holds ``text``, the number the other project expects
(``expected``, null for "no number"), ``source`` (repository:path) and the ``preset`` it belongs
to (``answers``, ``prose``, ``prices`` or ``none``), plus optional ``options`` (the locale's
``decimal_comma``). Every line is read with `parse_number` and, per option set, with
`parse_column`; the script prints agreement with the expected values per source and per
preset, the lines where the two readers differ (there must be none) and the disagreements.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numdiff_component.options import Options
from numdiff_component.reading import parse_column, parse_number

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus.jsonl"


@dataclass(frozen=True)
class Line:
    """One corpus line: its text, the expected number, where it comes from, how it is read."""

    text: str
    expected: float | None
    source: str
    preset: str
    options: dict[str, Any] = field(default_factory=dict)

    def opts(self) -> Options:
        return Options.of(preset=self.preset, **self.options)


def load(path: Path = CORPUS) -> list[Line]:
    """The corpus lines of ``path`` (JSON Lines)."""
    with path.open(encoding="utf-8") as f:
        return [Line(**json.loads(row)) for row in f if row.strip()]


def same(a: float | None, b: float | None) -> bool:
    """Whether two readings are the same number (or both no number); 1e-9 relative."""
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def read_one(lines: Iterable[Line]) -> list[float | None]:
    """Every line read by `parse_number` with its options."""
    return [parse_number(line.text, line.opts()) for line in lines]


def read_columns(lines: list[Line]) -> list[float | None]:
    """Every line read by `parse_column`, one column per distinct option set."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        groups[json.dumps([line.preset, line.options], sort_keys=True)].append(i)
    read: list[float | None] = [None] * len(lines)
    for indices in groups.values():
        opts = lines[indices[0]].opts()
        values = parse_column([lines[i].text for i in indices], opts)
        for i, v in zip(indices, values.tolist(), strict=True):
            read[i] = None if math.isnan(v) else v
    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--quiet", action="store_true", help="figures only, no line listing")
    args = parser.parse_args()
    lines = load(args.corpus)
    one, column = read_one(lines), read_columns(lines)

    def table(key: str) -> None:
        agree: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for line, value in zip(lines, one, strict=True):
            counts = agree[getattr(line, key)]
            counts[0] += same(value, line.expected)
            counts[1] += 1
        print(f"\nagreement per {key}:")
        for name, (ok, n) in sorted(agree.items()):
            print(f"  {name:72} {ok:4d}/{n:<4d} {ok / n:7.1%}")

    table("source")
    table("preset")
    total = sum(same(v, line.expected) for line, v in zip(lines, one, strict=True))
    print(f"\ntotal: {total}/{len(lines)} = {total / len(lines):.1%}")

    differ = [(line, a, b) for line, a, b in zip(lines, one, column, strict=True) if not same(a, b)]
    print(f"parse_number and parse_column differ on {len(differ)} line(s)")
    for line, a, b in differ:
        print(f"  DIFFER [{line.preset}] {line.text!r}: parse_number {a!r}, parse_column {b!r}")
    if not args.quiet:
        print("\ndisagreements with the expected values:")
        for line, value in zip(lines, one, strict=True):
            if not same(value, line.expected):
                extra = f" {line.options}" if line.options else ""
                print(
                    f"  [{line.preset}{extra}] {line.text[:90]!r}: read {value!r},"
                    f" expected {line.expected!r}  ({line.source.split(':')[0]})"
                )


if __name__ == "__main__":
    main()
