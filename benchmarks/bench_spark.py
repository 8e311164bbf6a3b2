"""Scale figure: a generated table scored by the pandas engine and through a standalone Spark
cluster on this machine (a master and one worker on 127.0.0.1, started and stopped here).

Each engine runs the job of ``numdiff score`` (`run_job`, without tracking) in its own process;
the script prints each one's throughput (rows per second, the whole job: reading, scoring,
writing the results, the report), their ratio, and the peak memory of each job's Python driver
(``ru_maxrss``), which stays bounded however many rows there are. A figure, not a goal: one
worker on a small machine cannot show a cluster's gain.

    python benchmarks/bench_spark.py            # 20,000,000 rows
    python benchmarks/bench_spark.py --rows 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
CHUNK = 1_000_000
OUTPUTS = [
    "The answer is $1,234.50.",
    "x=-3",
    "Between 3 and 4, final answer 4",
    "12%",
    "twelve",
    "about 2.5",
    "1e5",
    "",
]

JOB = """
import json, resource, sys, time
from numdiff_component.task.config import JobConfig
from numdiff_component.job.run import run_job
start = time.perf_counter()
outcome = run_job(JobConfig(predictions=sys.argv[1], results_dir=sys.argv[2], track=False,
                            engine=sys.argv[3]))
seconds = time.perf_counter() - start
master = "local"
if sys.argv[3] == "spark":
    from pyspark.sql import SparkSession
    master = SparkSession.getActiveSession().sparkContext.master
print(json.dumps({"seconds": seconds, "rows": outcome.evaluation.n_rows,
                  "master": master, "mean_score": outcome.evaluation.aggregates["mean_score"],
                  "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def make_table(path: Path, rows: int) -> None:
    """``rows`` rows of prose outputs and numeric expected values, in row groups of 1M."""
    rng = np.random.default_rng(0)
    outputs = np.array(OUTPUTS, dtype=object)
    schema = pa.schema([("id", pa.int64()), ("output", pa.string()), ("expected", pa.string())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            expected = np.round(rng.normal(1000, 500, n), 2).astype(str).astype(object)
            writer.write_table(
                pa.table(
                    {
                        "id": np.arange(start, start + n),
                        "output": outputs[rng.integers(0, len(OUTPUTS), n)],
                        "expected": expected,
                    },
                    schema=schema,
                )
            )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(ready, what: str, seconds: float = 180) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    raise SystemExit(f"{what} not ready within {seconds:g} s")


def start_cluster(tmp: Path, env: dict[str, str]) -> tuple[str, list[subprocess.Popen[bytes]]]:
    port, ui = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    log = open(tmp / "cluster.log", "ab")  # noqa: SIM115 - open while the cluster runs
    procs = []

    def start(*args: str) -> None:
        procs.append(
            subprocess.Popen(
                [spark_class, *args], env=env, stdout=log, stderr=log, start_new_session=True
            )
        )

    def alive() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as page:
                return int(json.load(page).get("aliveworkers", 0)) >= 1
        except OSError:
            return False

    url = f"spark://127.0.0.1:{port}"
    start(
        "org.apache.spark.deploy.master.Master",
        *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
    )
    start(
        "org.apache.spark.deploy.worker.Worker",
        *("--host", "127.0.0.1", "--cores", "2", "--memory", "3g"),
        *("--webui-port", str(free_port()), "--work-dir", str(tmp / "work"), url),
    )
    wait(alive, "standalone cluster")
    return url, procs


def run(engine: str, table: Path, out: Path, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", JOB, str(table), str(out), engine],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{engine} job failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as folder:
        tmp = Path(folder)
        table = tmp / "preds.parquet"
        start = time.perf_counter()
        make_table(table, args.rows)
        print(
            f"table: {args.rows:,} rows, {table.stat().st_size / 1e6:.0f} MB Parquet "
            f"(made in {time.perf_counter() - start:.0f} s)"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(tmp / "logs"),
            PYSPARK_PYTHON=sys.executable,
            MLFLOW_DISABLE_TELEMETRY="true",
        )
        pandas = run("pandas", table, tmp / "pandas", env)
        url, procs = start_cluster(tmp, env)
        try:
            spark = run(
                "spark",
                table,
                tmp / "spark",
                {**env, "PYSPARK_SUBMIT_ARGS": f"--master {url} pyspark-shell"},
            )
        finally:
            for proc in procs:
                os.killpg(proc.pid, signal.SIGTERM)
            for proc in procs:
                proc.wait(30)
    assert pandas["rows"] == spark["rows"] == args.rows
    assert spark["master"] == url, spark["master"]  # scored on the cluster, not in local mode
    assert abs(pandas["mean_score"] - spark["mean_score"]) < 1e-9
    for name, got in (("pandas engine", pandas), (f"spark ({url})", spark)):
        print(
            f"{name:<36} {got['rows'] / got['seconds']:>12,.0f} rows/s  "
            f"{got['seconds']:>7.1f} s  driver peak {got['peak_kib'] / 1024:>6.0f} MiB"
        )
    ratio = (spark["rows"] / spark["seconds"]) / (pandas["rows"] / pandas["seconds"])
    print(f"spark / pandas throughput: {ratio:.2f}")


if __name__ == "__main__":
    main()
