"""Comparing the per-item results of two scoring runs: what changed, and is it beyond noise.

The comparison is plain functions over two results frames (from `score_frame`): `align` pairs
the rows (by an id column, or by position), `compare_results` computes the aggregates of each
side, McNemar's exact test on the pass/fail changes, and the rows that regressed, improved or
dropped most. `load_results` and `log_comparison` are the only parts that touch MLflow.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from numdiff_component.aggregate import aggregate
from numdiff_component.errors import InputError, TrackingError, first_line
from numdiff_component.scoring import RESULT_COLUMNS
from numdiff_component.tracking import PREFIX, RESULTS_PARQUET, experiment_id

TEST_NAME = "McNemar exact test"  # two-sided binomial test on the discordant pairs
_EXACT_MAX_PAIRS = 5_000  # above this, the binomial tail is summed in log space
_ROW_FIELDS = ("score", "label", "output_value", "expected_value")


@dataclass(frozen=True)
class RunResults:
    """The per-item results of one run (or one local Parquet file) and what it was scored with."""

    frame: pd.DataFrame
    source: str
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def id_col(self) -> str | None:
        return self.params.get(f"{PREFIX}/id_col") or None


@dataclass(frozen=True)
class Comparison:
    """Run B against run A, row by row. ``rows``: one row per pair, in A's order."""

    matched_by: str | None  # the id column, or None when matched by position
    aggregates: dict[str, dict[str, float]]
    n_regressed: int
    n_improved: int
    p_value: float
    alpha: float
    rows: pd.DataFrame
    n_expected_differ: int  # pairs whose expected numbers differ: a hint of misaligned rows

    @property
    def beyond_noise(self) -> bool:
        return self.p_value < self.alpha

    def regressed(self) -> pd.DataFrame:
        """Pairs that passed in A and failed in B, in A's order."""
        return self.rows[self.rows["passed_a"] & ~self.rows["passed_b"]]

    def improved(self) -> pd.DataFrame:
        """Pairs that failed in A and passed in B, in A's order."""
        return self.rows[~self.rows["passed_a"] & self.rows["passed_b"]]

    def largest_drops(self, k: int) -> pd.DataFrame:
        """The ``k`` pairs whose score fell most from A to B (ties: A's order)."""
        dropped = self.rows[self.rows["score_change"] < 0]
        return dropped.sort_values("score_change", kind="stable").head(k)

    def to_dict(self, limit: int | None = 20) -> dict[str, Any]:
        """A JSON-ready summary; each row list holds at most ``limit`` rows (all when None)."""

        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            shown = frame if limit is None else frame.head(limit)
            shown = shown.drop(columns=["passed_a", "passed_b"])
            return [_json_row(r) for r in shown.to_dict("records")]

        return {
            "matched_by": {"id_col": self.matched_by} if self.matched_by else "position",
            "n_pairs": len(self.rows),
            "n_expected_differ": self.n_expected_differ,
            "aggregates": {
                name: {
                    k: _json_number(int(v) if name.startswith("n_") else v)
                    for k, v in values.items()
                }
                for name, values in self.aggregates.items()
            },
            "test": {
                "name": TEST_NAME,
                "p_value": self.p_value,
                "alpha": self.alpha,
                "beyond_noise": self.beyond_noise,
                "n_regressed": self.n_regressed,
                "n_improved": self.n_improved,
            },
            "regressed": records(self.regressed()),
            "improved": records(self.improved()),
            "largest_score_drops": records(self.largest_drops(limit or len(self.rows))),
        }


def mcnemar_p_value(n_regressed: int, n_improved: int) -> float:
    """Two-sided p-value of McNemar's exact test: the discordant pairs against Binomial(n, ½).

    ``2 · P(X ≤ min(b, c))`` for ``X ~ Binomial(b + c, ½)``, at most 1; 1 with no discordant
    pair. Exact integer arithmetic up to 5,000 discordant pairs, a log-space sum beyond.

    >>> mcnemar_p_value(0, 0), mcnemar_p_value(5, 5)
    (1.0, 1.0)
    >>> round(mcnemar_p_value(10, 0), 6)  # 2 / 2**10
    0.001953
    """
    n, k = n_regressed + n_improved, min(n_regressed, n_improved)
    if n == 0:
        return 1.0
    if n <= _EXACT_MAX_PAIRS:
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, 2 * tail / 2**n)
    return _log_space_p_value(n, k)


def _log_space_p_value(n: int, k: int) -> float:
    """``min(1, 2 · P(X ≤ k))`` for ``X ~ Binomial(n, ½)``, summed in log space."""
    i = np.arange(1, k + 1, dtype=float)
    log_terms = np.concatenate([[0.0], np.cumsum(np.log((n - i + 1) / i))]) - n * math.log(2)
    top = float(log_terms.max())
    return min(1.0, 2 * math.exp(top) * float(np.exp(log_terms - top).sum()))


def _check_results(frame: pd.DataFrame, side: str) -> None:
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            f"run {side} is not a numeric diff results table: column {missing[0]!r} is missing "
            f"(expected the columns {', '.join(RESULT_COLUMNS)})"
        )


def _check_ids(frame: pd.DataFrame, id_col: str, side: str) -> pd.Index:
    if id_col not in frame.columns:
        existing = ", ".join(repr(str(c)) for c in frame.columns)
        raise InputError(f"id column {id_col!r} not in run {side}; the columns are: {existing}")
    ids = pd.Index(frame[id_col])
    if ids.hasnans:
        raise InputError(f"run {side} has rows with no {id_col!r}; every row needs an id to match")
    duplicated = ids[ids.duplicated()]
    if len(duplicated):
        raise InputError(
            f"run {side} has duplicate ids in {id_col!r} (e.g. {duplicated[0]!r}, "
            f"{len(duplicated):,} repeated); ids must be unique to match rows"
        )
    return ids


def align(
    a: pd.DataFrame, b: pd.DataFrame, id_col: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The rows of ``a`` and ``b`` paired up, in ``a``'s order, and the id of each pair.

    With ``id_col`` rows are paired by that column (the position in ``a`` otherwise). A table
    that does not line up (different lengths, an id on one side only, a duplicate or missing
    id) raises `InputError`.
    """
    _check_results(a, "A")
    _check_results(b, "B")
    if id_col is None:
        if len(a) != len(b):
            raise InputError(
                f"run A has {len(a):,} rows and run B {len(b):,}: matching rows by position "
                "needs tables of the same length (match by id with --id-col)"
            )
        return a.reset_index(drop=True), b.reset_index(drop=True), np.arange(len(a))
    ids_a, ids_b = _check_ids(a, id_col, "A"), _check_ids(b, id_col, "B")
    position = ids_b.get_indexer(ids_a)
    only_a = ids_a[position < 0]
    only_b = ids_b.difference(ids_a, sort=False)
    if len(only_a) or len(only_b):
        examples = [
            f"{len(ids):,} only in {side}" + (f" (e.g. {ids[0]!r})" if len(ids) else "")
            for side, ids in (("A", only_a), ("B", only_b))
        ]
        raise InputError(
            f"the runs hold different items by {id_col!r}: {examples[0]}, {examples[1]}; "
            "compare needs the same ids on both sides"
        )
    return a.reset_index(drop=True), b.iloc[position].reset_index(drop=True), ids_a.to_numpy()


def compare_results(
    a: pd.DataFrame, b: pd.DataFrame, *, id_col: str | None = None, alpha: float = 0.05
) -> Comparison:
    """Compare run B's results with run A's, row by row (see `align` for the pairing).

    Aggregates of both sides and their difference (B - A; for ``mean_score`` also the paired
    standard error of the difference), McNemar's exact test on the rows whose pass/fail
    changed, and every pair's scores.

    >>> from numdiff_component import score_frame
    >>> a = score_frame(pd.DataFrame({"output": ["1", "2", "3"], "expected": ["1", "2", "3"]}))
    >>> b = score_frame(pd.DataFrame({"output": ["1", "9", "3"], "expected": ["1", "2", "3"]}))
    >>> c = compare_results(a, b)
    >>> c.n_regressed, c.n_improved, c.regressed()["id"].tolist()
    (1, 0, [1])
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}")
    a, b, ids = align(a, b, id_col)
    passed_a = a["passed"].to_numpy(dtype=bool)
    passed_b = b["passed"].to_numpy(dtype=bool)
    rows = pd.DataFrame({"id": ids, "passed_a": passed_a, "passed_b": passed_b})
    for name in _ROW_FIELDS:
        rows[f"{name}_a"] = a[name].to_numpy()
        rows[f"{name}_b"] = b[name].to_numpy()
    change = b["score"].to_numpy(dtype=float) - a["score"].to_numpy(dtype=float)
    rows["score_change"] = change
    agg_a, agg_b = aggregate(a), aggregate(b)
    aggregates = {
        name: {
            "a": float(agg_a[name]),
            "b": float(agg_b[name]),
            "diff": float(agg_b[name]) - float(agg_a[name]),
        }
        for name in agg_a
    }
    n = len(change)
    aggregates["mean_score"]["diff_stderr"] = (
        float(np.std(change, ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    )
    expected_a = a["expected_value"].to_numpy(dtype=float)
    expected_b = b["expected_value"].to_numpy(dtype=float)
    same = (expected_a == expected_b) | (np.isnan(expected_a) & np.isnan(expected_b))
    n_regressed = int(np.count_nonzero(passed_a & ~passed_b))
    n_improved = int(np.count_nonzero(~passed_a & passed_b))
    return Comparison(
        matched_by=id_col,
        aggregates=aggregates,
        n_regressed=n_regressed,
        n_improved=n_improved,
        p_value=mcnemar_p_value(n_regressed, n_improved),
        alpha=alpha,
        rows=rows,
        n_expected_differ=int(np.count_nonzero(~same)),
    )


def resolve_id_col(explicit: str | None, a: RunResults, b: RunResults) -> str | None:
    """The id column to match on: the one given, else a run's ``id_col`` both tables hold."""
    if explicit:
        return explicit
    for name in (a.id_col, b.id_col):
        if name and name in a.frame.columns and name in b.frame.columns:
            return name
    return None


def format_text(comparison: Comparison, a: str, b: str, limit: int | None = 20) -> str:
    """The comparison as text for the terminal; row lists cut at ``limit`` rows."""
    summary = comparison.to_dict(limit)
    how = f"by id column {comparison.matched_by!r}" if comparison.matched_by else "by row position"
    lines = [
        "numeric diff comparison",
        f"  A  {a}",
        f"  B  {b}",
        f"  {len(comparison.rows):,} rows matched {how}",
        "",
        f"  {'aggregate':<18} {'A':>12} {'B':>12} {'B - A':>12}",
    ]
    for name, values in comparison.aggregates.items():
        cells = [_text_number(name, values[k], signed=k == "diff") for k in ("a", "b", "diff")]
        line = f"  {name:<18} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}"
        if "diff_stderr" in values and not math.isnan(values["diff_stderr"]):
            line += f"  ± {values['diff_stderr']:.2g} (paired standard error)"
        lines.append(line)
    verdict = "beyond noise" if comparison.beyond_noise else "within noise"
    lines += [
        "",
        f"  pass/fail changes: {comparison.n_regressed:,} regressed, "
        f"{comparison.n_improved:,} improved",
        f"  {TEST_NAME} on the {comparison.n_regressed + comparison.n_improved:,} changed "
        f"pairs: p = {comparison.p_value:.4g}, {verdict} (alpha {comparison.alpha:g})",
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
                f"    {str(row['id'])[:16]:<16} {_text_number('s', row['score_a']):>9} "
                f"{_text_number('s', row['score_b']):>9} "
                f"{_text_number('v', row['output_value_a']):>12} "
                f"{_text_number('v', row['output_value_b']):>12} "
                f"{_text_number('v', row['expected_value_b']):>12}"
            )
    return "\n".join(lines)


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


# --- MLflow: reading the results of a run, and logging a comparison ----------------------------


def load_results(ref: str) -> RunResults:
    """The results of run ``ref`` (a run id), or of a local Parquet file when ``ref`` is one."""
    path = Path(ref)
    if path.suffix == ".parquet" or path.exists():
        if not path.is_file():
            raise InputError(f"results file not found: {ref!r}")
        try:
            return RunResults(pd.read_parquet(path), ref)
        except Exception as exc:  # pyarrow raises many types for a bad file
            raise InputError(f"cannot read {ref!r} as parquet: {first_line(exc)}") from exc

    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        run = mlflow.MlflowClient().get_run(ref)
        local = mlflow.artifacts.download_artifacts(
            run_id=ref, artifact_path=f"{PREFIX}/{RESULTS_PARQUET}", dst_path=tempfile.mkdtemp()
        )
        frame = pd.read_parquet(local)
    except MlflowException as exc:
        raise InputError(
            f"cannot read the results of run {ref!r} ({PREFIX}/{RESULTS_PARQUET}): "
            f"{first_line(exc)}"
        ) from exc
    except OSError as exc:
        raise TrackingError(
            f"could not reach MLflow at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc
    return RunResults(frame, ref, dict(run.data.params))


def log_comparison(
    summary: Mapping[str, Any], a: str, b: str, *, experiment_name: str | None = None
) -> str:
    """Record a comparison (``Comparison.to_dict``) in a new MLflow run; its run id.

    Metrics ``compare/<aggregate>_diff``, ``compare/p_value``, ``compare/n_regressed`` and
    ``compare/n_improved``; params ``compare/run_a`` and ``compare/run_b``; the summary as the
    artifact ``compare/comparison.json``.
    """
    import mlflow

    metrics = {
        f"compare/{name}_diff": values["diff"]
        for name, values in summary["aggregates"].items()
        if values["diff"] is not None
    }
    test = summary["test"]
    metrics.update(
        {
            "compare/p_value": test["p_value"],
            "compare/n_regressed": test["n_regressed"],
            "compare/n_improved": test["n_improved"],
        }
    )
    try:
        name = f"compare {a[:8]} {b[:8]}"
        with mlflow.start_run(run_name=name, experiment_id=experiment_id(experiment_name)) as run:
            mlflow.log_params({"compare/run_a": a, "compare/run_b": b})
            mlflow.log_metrics(metrics)
            mlflow.log_text(json.dumps(summary, indent=2), "compare/comparison.json")
            return str(run.info.run_id)
    except Exception as exc:
        raise TrackingError(
            f"could not log to MLflow at {mlflow.get_tracking_uri()}: {first_line(exc)}"
        ) from exc
