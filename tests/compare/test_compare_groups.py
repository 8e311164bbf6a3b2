"""``numdiff compare`` group by group (SPEC §3.1): which groups regressed, on the same pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from numdiff_component.compare.comparison import mcnemar_p_value
from tests.fixtures.commands import invoke
from tests.fixtures.tables import write_table


def _tables(tmp_path: Path) -> tuple[Path, Path]:
    """Run B fails every 'geometry' row that run A passes, and one 'algebra' row."""
    n = 60
    category = ["algebra", "geometry", "words"] * (n // 3)
    a = pd.DataFrame(
        {"id": [f"q{i}" for i in range(n)], "category": category, "output": "5", "expected": "5"}
    )
    b = a.copy()
    b.loc[b["category"] == "geometry", "output"] = "9"
    b.loc[0, "output"] = "9"
    shuffled = b.sample(frac=1, random_state=1)  # paired by id, not by position
    return write_table(a, tmp_path / "a.csv"), write_table(shuffled, tmp_path / "b.csv")


def test_compare_names_the_groups_that_regressed(tracking_uri: str, tmp_path: Path) -> None:
    paths = _tables(tmp_path)
    results = []
    for path in paths:
        folder = tmp_path / path.stem
        done = invoke("score", str(path), "--id-col", "id", "--by", "category",
                      "--no-plots", "-q", "--results-dir", str(folder))  # fmt: skip
        assert done.returncode == 0, done.stderr
        results.append(str(folder / "results.parquet"))
    done = invoke("compare", *results, "--json")
    assert done.returncode == 0, done.stderr
    groups = {g["value"]: g for g in json.loads(done.stdout)["groups"]}
    a, b = (pd.read_parquet(r).set_index("id") for r in results)
    b = b.loc[a.index]
    for value, g in groups.items():
        rows = a["category"] == value
        regressed = int((a.loc[rows, "passed"] & ~b.loc[rows, "passed"]).sum())
        improved = int((~a.loc[rows, "passed"] & b.loc[rows, "passed"]).sum())
        assert (g["n_regressed"], g["n_improved"], g["n"]) == (regressed, improved, rows.sum())
        assert g["p_value"] == pytest.approx(mcnemar_p_value(regressed, improved))
        assert g["pass_rate_b"] == pytest.approx(b.loc[rows, "passed"].mean())
    assert groups["geometry"]["verdict"] == "worse"
    assert groups["algebra"]["verdict"] == "no significant difference"  # 1 of 20
    text = invoke("compare", *results).stdout
    assert "by category: 1 of 3 groups regressed" in text
    assert "'geometry': pass rate 1.0000 -> 0.0000 (n 20; 20 regressed, 0 improved" in text
