"""Rendering a comparison (`numdiff_component.compare.comparison`): a JSON-ready summary, and
text for the terminal."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.compare.comparison import TEST_NAME, Comparison, Delta
from numdiff_component.errors import visible
from numdiff_component.intervals import LEVEL

METHODS = {"pass_rate": "Newcombe's paired score interval", "mean_score": "paired t interval"}
"""How the interval of each paired difference B - A is made (`comparison.Comparison.deltas`)."""


def to_json(comparison: Comparison, limit: int | None = 20) -> dict[str, Any]:
    """A JSON-ready summary; each row list holds at most ``limit`` rows (all when None)."""

    def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
        shown = frame if limit is None else frame.head(limit)
        shown = shown.drop(columns=["passed_a", "passed_b"])
        return [_json_row(r) for r in shown.to_dict("records")]

    return {
        "matched_by": {"id_col": comparison.matched_by} if comparison.matched_by else "position",
        "n_pairs": len(comparison.rows),
        "n_only_a": comparison.n_only_a,
        "n_only_b": comparison.n_only_b,
        "n_expected_differ": comparison.n_expected_differ,
        "aggregates": {
            name: {
                k: _json_number(int(v) if name.startswith("n_") else v) for k, v in values.items()
            }
            for name, values in comparison.aggregates.items()
        },
        "deltas": {
            name: {
                "diff": _json_number(delta.diff),
                "ci_low": _json_number(delta.low),
                "ci_high": _json_number(delta.high),
                "level": LEVEL,
                "method": METHODS[name],
            }
            for name, delta in comparison.deltas.items()
        },
        "test": {
            "name": TEST_NAME,
            "p_value": comparison.p_value,
            "alpha": comparison.alpha,
            "beyond_noise": comparison.beyond_noise,
            "n_regressed": comparison.n_regressed,
            "n_improved": comparison.n_improved,
            "verdict": comparison.verdict,
        },
        "regressed": records(comparison.regressed()),
        "improved": records(comparison.improved()),
        "largest_score_drops": records(comparison.largest_drops(limit or len(comparison.rows))),
    }


def format_text(
    comparison: Comparison,
    a: str,
    b: str,
    limit: int | None = 20,
    options: tuple[Mapping[str, str], Mapping[str, str]] = ({}, {}),
) -> str:
    """The comparison as text for the terminal; row lists cut at ``limit`` rows. ``options``:
    the options each side was scored with, as recorded (shown when known)."""
    summary = to_json(comparison, limit)
    how = f"by id column {comparison.matched_by!r}" if comparison.matched_by else "by row position"
    lines = [
        "numeric diff comparison",
        f"  A  {visible(a)}",
        f"  B  {visible(b)}",
        f"  {len(comparison.rows):,} rows matched {how}",
        *_options_lines(*options),
        "",
        f"  {'aggregate':<18} {'A':>12} {'B':>12} {'B - A':>12}  {LEVEL:.0%} interval of B - A",
    ]
    for name, values in comparison.aggregates.items():
        if "diff" not in values:  # each side's interval bounds: in --json
            continue
        cells = [_text_number(name, values[k], signed=k == "diff") for k in ("a", "b", "diff")]
        line = f"  {name:<18} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}"
        if name in comparison.deltas:
            line += f"  {interval(comparison.deltas[name])} ({METHODS[name]})"
        lines.append(line)
    noise = "beyond noise" if comparison.beyond_noise else "within noise"
    lines += [
        "",
        f"  pass/fail changes: {comparison.n_regressed:,} regressed, "
        f"{comparison.n_improved:,} improved",
        f"  {TEST_NAME} on the {comparison.n_regressed + comparison.n_improved:,} changed "
        f"pairs: p = {comparison.p_value:.4g}, {noise} (alpha {comparison.alpha:g})",
        f"  verdict: B is {_VERDICTS[comparison.verdict]} A",
    ]
    if comparison.n_expected_differ:
        lines.append(
            f"  note: the expected number differs in {comparison.n_expected_differ:,} pairs; "
            "are the rows matched right (--id-col)?"
        )
    sections = (
        ("regressed (passed in A, failed in B)", "regressed", comparison.n_regressed),
        ("improved (failed in A, passed in B)", "improved", comparison.n_improved),
        ("largest score drops", "largest_score_drops", None),
    )
    for title, key, total in sections:
        shown = summary[key]
        count = f": {total:,}" if total is not None else ""
        more = f" (first {len(shown)} shown)" if total is not None and len(shown) < total else ""
        lines += ["", f"  {title}{count}{more}"]
        if not shown:
            lines.append("    none")
            continue
        lines.append(
            f"    {'id':<16} {'score A':>9} {'score B':>9} "
            f"{'output A':>12} {'output B':>12} {'expected':>12}"
        )
        for row in shown:
            lines.append(
                f"    {visible(str(row['id']))[:16]:<16} {_text_number('s', row['score_a']):>9} "
                f"{_text_number('s', row['score_b']):>9} "
                f"{_text_number('v', row['output_value_a']):>12} "
                f"{_text_number('v', row['output_value_b']):>12} "
                f"{_text_number('v', row['expected_value_b']):>12}"
            )
    return "\n".join(lines)


_VERDICTS = {
    "better": "better than",
    "worse": "worse than",
    "no significant difference": "not significantly different from",
}


def interval(delta: Delta) -> str:
    """A paired difference's interval as shown: ``[-0.0896, +0.1441]``."""
    if math.isnan(delta.low):
        return "[n/a]"
    return f"[{delta.low:+.4f}, {delta.high:+.4f}]"


def verdict_sentence(comparison: Comparison, baseline: str) -> str:
    """The verdict on B against its ``baseline`` A in one sentence, with the figures.

    >>> from numdiff_component import score_frame
    >>> from numdiff_component.compare.comparison import compare_results
    >>> a = score_frame(pd.DataFrame({"output": ["1"] * 8, "expected": ["1"] * 8}))
    >>> b = score_frame(pd.DataFrame({"output": ["2"] * 8, "expected": ["1"] * 8}))
    >>> sentence = verdict_sentence(compare_results(a, b), "v1")
    >>> sentence[:56]
    "Worse than the baseline 'v1': pass rate 1.0000 -> 0.0000"
    >>> sentence[sentence.index(";") + 2 :]
    '8 regressed, 0 improved of 8 shared rows, McNemar p = 0.0078.'
    """
    rate, mean = comparison.deltas["pass_rate"], comparison.deltas["mean_score"]
    before = comparison.aggregates["pass_rate"]["a"]
    start = {
        "better": "Better than",
        "worse": "Worse than",
        "no significant difference": "No significant difference from",
    }[comparison.verdict]
    return (
        f"{start} the baseline {baseline!r}: pass rate {before:.4f} -> {before + rate.diff:.4f} "
        f"({rate.diff:+.4f}, {LEVEL:.0%} interval {interval(rate)}), mean score "
        f"{mean.diff:+.4f} {interval(mean)}; {comparison.n_regressed:,} regressed, "
        f"{comparison.n_improved:,} improved of {len(comparison.rows):,} shared rows, "
        f"McNemar p = {comparison.p_value:.2g}."
    )


def _options_lines(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    if not a and not b:
        return []
    if a == b:
        return ["  options (A and B): " + ", ".join(f"{k} {_shown(v)}" for k, v in a.items())]
    differ = [k for k in {**a, **b} if a.get(k) != b.get(k)]
    return [
        "  options differ: "
        + "; ".join(
            f"{k} {_shown(a.get(k, '?'))} in A, {_shown(b.get(k, '?'))} in B" for k in differ
        )
    ]


def _shown(value: str) -> str:
    """An option's recorded value as shown: "none" for an empty list option's ""."""
    return visible(value) if value else "none"


def _text_number(name: str, value: float | None, *, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    sign = "+" if signed else ""
    return f"{value:{sign},.0f}" if name.startswith("n_") else f"{value:{sign}.6g}"


def _json_number(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _json_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: _json_number(v) for k, v in row.items()}
    if not isinstance(out["id"], (str, int, float, bool, type(None))):
        out["id"] = str(out["id"])
    return out
