"""End to end: ``numdiff score`` against its floors, whole processes timed in turn in one run.

The large job (`large_job`): ``numdiff score big.csv --no-plots --quiet --results-dir X`` on a
generated CSV of two number columns (MLflow logging into a fresh sqlite store), against the
pyarrow pass over the same file (`FLOOR`): stream it with pyarrow's CSV reader, cast both
columns to float and write one Parquet file holding the two text columns and their floats (the
job also keeps the input columns in its results). Prints the median wall times, their ratio,
and each process's peak resident memory.

The sample run (`sample_run_against_floor`): ``numdiff score --quiet`` on the packaged sample
(plots on) and with ``--no-plots``, against MLflow's own floor (`MLFLOW_FLOOR`).

    python benchmarks/bench_job.py                     # 20,000,000 rows, 3 runs of each
    python benchmarks/bench_job.py --rows 1000000 --runs 5
    python benchmarks/bench_job.py --sample-run        # only the sample run against MLflow's floor
    python benchmarks/bench_job.py --sample-run --runs 9
    python benchmarks/bench_job.py --slices            # --by and --item-col against neither

The slices job (`slices_job`): the large job on a table whose rows are 5 samples each of
``rows / 5`` items (an item's samples ``rows / 5`` rows apart: never together), each item in one
of ``--groups`` groups (1,000), run without slices, with ``--by group``, with ``--item-col item
--k 1,5``, and with both, in turn in one run (issue 31's goal: at most 1.3x the job without
them, peak under 512 MiB).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

FLOOR = """
import sys
import pyarrow as pa, pyarrow.csv as pa_csv, pyarrow.parquet as pq
names = pa_csv.open_csv(sys.argv[1]).schema.names
convert = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()))
writer = None
for batch in pa_csv.open_csv(sys.argv[1], convert_options=convert):
    table = pa.Table.from_batches([batch])
    for name in names:
        table = table.append_column(name + "_value", batch.column(name).cast(pa.float64()))
    writer = writer or pq.ParquetWriter(sys.argv[2], table.schema)
    writer.write_table(table)
writer.close()
"""
"""The floor of the large job: the pyarrow pass over the same CSV."""


def write_table(path: str | Path, rows: int | str) -> None:
    """Two columns of numbers as text, written a million rows at a time."""
    rows = int(rows)
    rng = np.random.default_rng(0)
    names = ["output", "expected"]
    with pa_csv.CSVWriter(path, pa.schema([(name, pa.string()) for name in names])) as w:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            expected = rng.normal(100, 30, n).round(3)
            output = (expected * rng.normal(1, 0.01, n)).round(3)
            w.write_table(
                pa.table({"output": output.astype(str), "expected": expected.astype(str)})
            )


SAMPLES_PER_ITEM = 5


def write_items_table(path: str | Path, rows: int | str, groups: int | str) -> None:
    """Four columns of text: the item (``q<n>``), an output, the item's expected number and its
    group (``g<item mod groups>``); row i is a sample of item i mod (rows / 5)."""
    rows, groups = int(rows), int(groups)
    items = max(1, rows // SAMPLES_PER_ITEM)
    rng = np.random.default_rng(0)
    expected = rng.normal(100, 30, items).round(3)
    names = ["item", "output", "expected", "group"]
    schema = pa.schema([(name, pa.string()) for name in names])
    with pa_csv.CSVWriter(path, schema) as w:
        for start in range(0, rows, 1_000_000):
            item = np.arange(start, min(start + 1_000_000, rows)) % items
            want = expected[item]
            output = (want * rng.normal(1, 0.01, len(item))).round(3)
            w.write_table(
                pa.table(
                    {
                        "item": np.char.add("q", item.astype(str)),
                        "output": output.astype(str),
                        "expected": want.astype(str),
                        "group": np.char.add("g", (item % groups).astype(str)),
                    }
                )
            )


SLICES = {
    "without slices": [],
    "--by group": ["--by", "group"],
    "--item-col item --k 1,5": ["--item-col", "item", "--k", "1,5"],
    "both": ["--by", "group", "--item-col", "item", "--k", "1,5"],
}
"""The slices job's variants: the options added to the large job."""


def slices_job(rows: int, runs: int, groups: int) -> None:
    """The large job with each of `SLICES` on one table, run in turn ``runs`` times; median wall
    times and peaks, and their ratio to the job without slices."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _, env, job = prepared_job(folder, "write_items_table", rows, groups)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in SLICES}
        for _ in range(runs):
            for name, options in SLICES.items():
                times[name].append(timed([*job, *options], env, folder / ARTIFACTS))
        n_items = pq.ParquetFile(folder / "res" / "items.parquet").metadata.num_rows
        n_groups = pq.ParquetFile(folder / "res" / "groups.parquet").metadata.num_rows
    walls = {name: statistics.median(wall for wall, _ in runs) for name, runs in times.items()}
    print(
        f"slices job: {rows:,} rows, {n_items:,} items of {SAMPLES_PER_ITEM}, {n_groups:,} groups"
    )
    for name, runs_of in times.items():
        ratio = walls[name] / walls["without slices"]
        peak = max(p for _, p in runs_of)
        print(f"  {name:<26} {walls[name]:6.1f} s  {ratio:5.2f}x  peak {peak:5.0f} MiB")
    print("  goal: <= 1.3x the job without slices, peak < 512 MiB")
    print(f"  each run (s): { ({name: _rounded(r) for name, r in times.items()}) }")


def waited(process: subprocess.Popen[bytes]) -> tuple[int, resource.struct_rusage]:
    """``process``'s wait status and resource usage (its reaped children included), once it
    ends; stopped meanwhile (Ctrl-C, SIGTERM), this kills it first."""
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    return status, usage


def timed(
    command: list[str], env: dict[str, str], artifacts: Path | None = None
) -> tuple[float, float]:
    """Run ``command`` to completion: its wall time in seconds and its peak resident MiB. The
    disk first takes what earlier jobs wrote (`os.sync`), and the ``artifacts`` folder the job
    logged to is removed after it (a copy of its results a run), so that no job pays for
    another's."""
    os.sync()
    start = time.perf_counter()
    status, usage = waited(subprocess.Popen(command, env=env))
    wall = time.perf_counter() - start
    if artifacts is not None:
        shutil.rmtree(artifacts, ignore_errors=True)
    if code := os.waitstatus_to_exitcode(status):
        raise subprocess.CalledProcessError(code, command)
    return wall, usage.ru_maxrss / 1024


ARTIFACTS = "mlruns"
"""Where the store of `tracking_env` keeps its artifacts, in its folder."""


def tracking_env(folder: Path) -> dict[str, str]:
    """MLflow logging into a sqlite store in ``folder``, created before anything is timed, from
    ``folder``: the store's first experiment keeps its artifacts there (`ARTIFACTS`)."""
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/mlflow.db",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
    subprocess.run(
        [sys.executable, "-c", "import mlflow; mlflow.MlflowClient().search_experiments()"],
        env=env,
        check=True,
        cwd=folder,
    )
    return env


def prepared_job(folder: Path, writer: str, *args: Any) -> tuple[Path, dict[str, str], list[str]]:
    """A table written by ``writer`` (a function of this module, with ``args``) in a process of
    its own (a child's peak memory counts its parent's at fork, on Linux), the tracking
    environment, and the ``numdiff score`` command of the large job on that table."""
    table = folder / f"{writer}.csv"
    code = f"import sys; from bench_job import {writer} as w; w(*sys.argv[1:])"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    command = [sys.executable, "-c", code, str(table), *map(str, args)]
    subprocess.run(command, env=env, check=True)
    job = [sys.executable, "-m", "numdiff_component", "score", str(table)]
    job += ["--no-plots", "--quiet", "--results-dir", str(folder / "res")]
    return table, tracking_env(folder), job


def large_job(rows: int, runs: int) -> None:
    """The large job against its floor, run in turn ``runs`` times; medians."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table, env, job = prepared_job(folder, "write_table", rows)
        floor = [sys.executable, "-c", FLOOR, str(table), str(folder / "floor.parquet")]
        floors, jobs = [], []
        for _ in range(runs):
            floors.append(timed(floor, env))
            jobs.append(timed(job, env, folder / ARTIFACTS))
        size_mib = table.stat().st_size / 2**20
        rows_out = pq.ParquetFile(folder / "res" / "results.parquet").metadata.num_rows
    floor_wall = statistics.median(wall for wall, _ in floors)
    job_wall = statistics.median(wall for wall, _ in jobs)
    floor_peak, job_peak = max(p for _, p in floors), max(p for _, p in jobs)
    print(f"large job: {rows:,} rows ({size_mib:,.0f} MiB of CSV), results rows {rows_out:,}")
    print(f"  pyarrow pass (floor)  {floor_wall:6.1f} s  peak {floor_peak:5.0f} MiB")
    print(f"  numdiff score         {job_wall:6.1f} s  peak {job_peak:5.0f} MiB")
    print(f"  ratio                 {job_wall / floor_wall:6.2f}x (goal <= 1.2x; peak < 512 MiB)")
    print(f"  each run (s): floor {_rounded(floors)}, job {_rounded(jobs)}")


def _rounded(runs: list[tuple[float, float]]) -> list[float]:
    return [round(wall, 1) for wall, _ in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--runs", type=int, help="runs of each (default 3; sample run 5)")
    parser.add_argument("--sample-run", action="store_true", help="only the sample run")
    parser.add_argument("--slices", action="store_true", help="only the slices job")
    parser.add_argument("--groups", type=int, default=1_000, help="groups of the slices job")
    args = parser.parse_args()
    # SIGTERM (a timeout, a killed job) ends like Ctrl-C: the temporary folders, gigabytes on
    # 20,000,000 rows, are removed on the way out.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.slices:
        slices_job(args.rows, args.runs or 3, args.groups)
        return
    if not args.sample_run:
        large_job(args.rows, args.runs or 3)
    sample_run_against_floor(args.runs or 5)


MLFLOW_FLOOR = """
import sys, mlflow
with mlflow.start_run():
    mlflow.log_metrics({"a": 1.0, "b": 2.0, "c": 3.0})
    mlflow.log_artifact(sys.argv[1])
"""
"""The floor of the sample run: MLflow's own (a name of its own: `large_job` reads `FLOOR`)."""


def sample_run_against_floor(repeats: int = 5) -> tuple[float, float]:
    """``numdiff score --quiet`` (the packaged sample, 36 rows, plots on) against MLflow's own
    floor (import mlflow, start a run, log three metrics and one artifact), and the same run
    with ``--no-plots`` (what the report costs), each a whole process on a fresh initialised
    sqlite store, taken in turn; the medians of wall time, and of CPU time (user + sys, of the
    process and the children it waited for: steadier on a shared machine), printed with their
    ratios (issue 18's bound: 1.2). Returns the wall medians of the floor and the sample run."""
    commands = {
        "floor": [sys.executable, "-c", MLFLOW_FLOOR],
        "sample": [sys.executable, "-m", "numdiff_component", "score", "--quiet"],
        "no-plots": [sys.executable, "-m", "numdiff_component", "score", "--quiet", "--no-plots"],
    }
    walls: dict[str, list[float]] = {kind: [] for kind in commands}
    cpus: dict[str, list[float]] = {kind: [] for kind in commands}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        artifact = folder / "artifact.txt"
        artifact.write_text("one artifact\n")
        commands["floor"].append(str(artifact))
        for i in range(repeats):
            for kind, command in commands.items():
                store = folder / f"{kind}{i}.db"
                env = {
                    **os.environ,
                    "MLFLOW_TRACKING_URI": f"sqlite:///{store}",
                    "MLFLOW_DISABLE_TELEMETRY": "true",
                    "TMPDIR": tmp,
                }
                init = "import mlflow; mlflow.MlflowClient().search_experiments()"
                subprocess.run([sys.executable, "-c", init], env=env, check=True, cwd=tmp)
                log = folder / f"{kind}{i}.log"
                with log.open("wb") as stderr:
                    start = time.perf_counter()
                    process = subprocess.Popen(
                        command, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=stderr
                    )
                    status, usage = waited(process)
                walls[kind].append(time.perf_counter() - start)
                cpus[kind].append(usage.ru_utime + usage.ru_stime)
                if os.waitstatus_to_exitcode(status):
                    sys.exit(f"{kind} failed: {log.read_text()[-2000:]}")
    wall = {kind: statistics.median(runs) for kind, runs in walls.items()}
    cpu = {kind: statistics.median(runs) for kind, runs in cpus.items()}
    titles = {
        "floor": "MLflow floor (3 metrics, 1 artifact)",
        "sample": "numdiff score --quiet (sample)",
        "no-plots": "  the same with --no-plots",
    }
    print(f"medians of {repeats} runs, taken in turn (bound 1.2x)")
    for kind, title in titles.items():
        ratios = f"{wall[kind] / wall['floor']:.2f}x wall, {cpu[kind] / cpu['floor']:.2f}x CPU"
        print(f"{title:38s} {wall[kind]:5.2f} s wall, {cpu[kind]:5.2f} s CPU   {ratios}")
    for kind, runs in walls.items():
        print(f"  each run (s wall), {kind}: {[round(w, 1) for w in runs]}")
    return wall["floor"], wall["sample"]


if __name__ == "__main__":
    main()
