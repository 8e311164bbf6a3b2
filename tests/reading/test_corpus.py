"""The real-text corpus of issue 15 (tests/data/corpus.jsonl): strings from other projects' test
suites, each with the number that project expects and the preset it belongs to.

Both readers must read every line the same, and agreement with the other projects must not fall
below what was measured (`benchmarks/corpus_agreement.py` prints the figures and the lines).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from numdiff_component.options import Options
from numdiff_component.reading import parse_column, parse_number

CORPUS = Path(__file__).parents[1] / "data" / "corpus.jsonl"
LINES: list[dict[str, Any]] = [
    json.loads(row) for row in CORPUS.read_text(encoding="utf-8").splitlines() if row.strip()
]
# Lines read as the other project expects, measured when the corpus was built (the figures of
# benchmarks/corpus_agreement.py); why each line that disagrees is read so: tests/data/corpus.md.
AGREEING = {"answers": 92, "none": 6, "prices": 232, "prose": 435}


def _options(line: dict[str, Any]) -> Options:
    return Options.of(preset=line["preset"], **line.get("options", {}))


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def _groups() -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in LINES:
        groups[json.dumps([line["preset"], line.get("options", {})], sort_keys=True)].append(line)
    return groups


def test_corpus_is_well_formed() -> None:
    assert len(LINES) >= 300
    for line in LINES:
        assert set(line) <= {"text", "expected", "source", "preset", "options"}, line
        assert isinstance(line["text"], str) and ":" in line["source"], line
        assert line["expected"] is None or math.isfinite(line["expected"]), line
        _options(line)  # a preset or option outside its domain raises


@pytest.mark.parametrize("group", sorted(_groups()))
def test_column_reader_reads_every_line_as_parse_number(group: str) -> None:
    lines = _groups()[group]
    opts = _options(lines[0])
    column = parse_column([line["text"] for line in lines], opts).tolist()
    for line, value in zip(lines, column, strict=True):
        one = parse_number(line["text"], opts)
        assert _same(None if math.isnan(value) else value, one), (line["text"], one, value)


def test_agreement_with_the_other_projects_does_not_fall() -> None:
    agreeing: dict[str, int] = defaultdict(int)
    for line in LINES:
        read = parse_number(line["text"], _options(line))
        agreeing[line["preset"]] += _same(read, line["expected"])
    for preset, measured in AGREEING.items():
        assert agreeing[preset] >= measured, (preset, agreeing[preset], measured)
