"""End to end: ``numdiff score`` on a generated CSV of two number columns, with MLflow logging.

Prints the wall time, the peak resident memory of the scoring process, the time spent in the
core (`score_frame`, measured in this process over the same batches) and the share outside it.

    python benchmarks/bench_job.py --rows 1000000
    python benchmarks/bench_job.py --rows 20000000     # the memory bound: peak under 1 GiB
    python benchmarks/bench_job.py --sample-run        # the sample run against MLflow's floor
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv


def write_table(path: Path, rows: int) -> None:
    """Two columns of numbers as text, written a million rows at a time."""
    rng = np.random.default_rng(0)
    with pa_csv.CSVWriter(
        path, pa.schema([("output", pa.string()), ("expected", pa.string())])
    ) as w:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            expected = rng.normal(100, 30, n).round(3)
            output = (expected * rng.normal(1, 0.01, n)).round(3)
            w.write_table(
                pa.table({"output": output.astype(str), "expected": expected.astype(str)})
            )


def core_seconds(path: Path) -> float:
    from numdiff_component import score_frame
    from numdiff_component.tables import open_table

    total = 0.0
    for batch in open_table(str(path)).batches():
        start = time.perf_counter()
        score_frame(batch)
        total += time.perf_counter() - start
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table = folder / "predictions.csv"
        write_table(table, args.rows)
        env = {
            **os.environ,
            "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/mlflow.db",
            "MLFLOW_DISABLE_TELEMETRY": "true",
        }
        subprocess.run(
            [sys.executable, "-c", "import mlflow; mlflow.MlflowClient().search_experiments()"],
            env=env,
            check=True,
        )
        start = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "numdiff_component",
                "score",
                str(table),
                "-q",
                "--results-dir",
                str(folder / "res"),
            ],
            env=env,
            check=True,
        )
        wall = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        core = core_seconds(table)
        size_mib = table.stat().st_size / 2**20
        rows_out = pa.parquet.ParquetFile(folder / "res" / "results.parquet").metadata.num_rows
    print(
        f"rows                      {args.rows:,} ({size_mib:,.0f} MiB of CSV); "
        f"results rows {rows_out:,}"
    )
    print(f"numdiff score wall time   {wall:.1f} s ({args.rows / wall:,.0f} rows/s)")
    print(f"peak resident memory      {peak_mib:,.0f} MiB")
    print(
        f"core (score_frame)        {core:.1f} s; "
        f"outside the core {wall - core:.1f} s ({(wall - core) / wall:.0%})"
    )


FLOOR = """
import sys, mlflow
with mlflow.start_run():
    mlflow.log_metrics({"a": 1.0, "b": 2.0, "c": 3.0})
    mlflow.log_artifact(sys.argv[1])
"""


def sample_run_against_floor(repeats: int = 5) -> tuple[float, float]:
    """``numdiff score --quiet`` (the packaged sample, 36 rows, plots on) against MLflow's own
    floor (import mlflow, start a run, log three metrics and one artifact), each a whole
    process on a fresh initialised sqlite store, taken in turn; the medians, printed with
    their ratio (issue 18's bound: 1.2)."""
    timings: dict[str, list[float]] = {"floor": [], "sample": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        artifact = folder / "artifact.txt"
        artifact.write_text("one artifact\n")
        for i in range(repeats):
            for kind in ("floor", "sample"):
                store = folder / f"{kind}{i}.db"
                env = {
                    **os.environ,
                    "MLFLOW_TRACKING_URI": f"sqlite:///{store}",
                    "MLFLOW_DISABLE_TELEMETRY": "true",
                    "TMPDIR": tmp,
                }
                init = "import mlflow; mlflow.MlflowClient().search_experiments()"
                subprocess.run([sys.executable, "-c", init], env=env, check=True)
                command = (
                    [sys.executable, "-c", FLOOR, str(artifact)]
                    if kind == "floor"
                    else [sys.executable, "-m", "numdiff_component", "score", "--quiet"]
                )
                start = time.perf_counter()
                subprocess.run(command, env=env, check=True, cwd=tmp, capture_output=True)
                timings[kind].append(time.perf_counter() - start)
    floor, sample = (sorted(timings[k])[len(timings[k]) // 2] for k in ("floor", "sample"))
    print(f"MLflow floor (3 metrics, 1 artifact)   {floor:.2f} s (median of {repeats})")
    print(f"numdiff score --quiet (sample)         {sample:.2f} s (median of {repeats})")
    print(f"ratio                                  {sample / floor:.2f}x (bound 1.2x)")
    return floor, sample


if __name__ == "__main__":
    import pyarrow.parquet

    if "--sample-run" in sys.argv:
        sample_run_against_floor()
    else:
        main()
