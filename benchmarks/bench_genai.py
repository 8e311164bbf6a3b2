"""``mlflow.genai.evaluate`` with the numeric diff scorer on a sqlite store: the defaults against
the setting the guide gives (``MLFLOW_GENAI_EVAL_MAX_WORKERS=1``), side by side in one run.

    python benchmarks/bench_genai.py [--rows 20] [--repeat 1]

Each evaluation runs in a process of its own (the settings are read when MLflow starts its
threads), on a new sqlite store made beforehand (creating its tables is not timed), with what
``evaluate`` imports on first use imported before the clock starts. Prints the
seconds of each ``mlflow.genai.evaluate`` call, the traces MLflow failed to send, and the ratio
of each setting's median to the defaults'.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SETTINGS = {
    "defaults": {},
    "MLFLOW_GENAI_EVAL_MAX_WORKERS=1": {"MLFLOW_GENAI_EVAL_MAX_WORKERS": "1"},
    "MLFLOW_SQLALCHEMYSTORE_POOLCLASS=NullPool": {"MLFLOW_SQLALCHEMYSTORE_POOLCLASS": "NullPool"},
}

_CHILD = """
import json, logging, sys, time
import mlflow
from numdiff_component import numeric_diff_scorer
lost = []
handler = logging.Handler(logging.WARNING)
handler.emit = lambda r: lost.append(r) if "Failed to send trace" in r.getMessage() else None
logging.getLogger("mlflow").addHandler(handler)
rows = [{"inputs": {"q": f"q{i}"}, "outputs": f"It is {i}.", "expectations": {"expected": i}}
        for i in range(int(sys.argv[1]))]
# What evaluate imports and opens on first use is not the evaluation: done before the clock.
import mlflow.genai.evaluation.harness, mlflow.store.tracking.sqlalchemy_store
try:
    import databricks.sdk
except ImportError:
    pass
mlflow.MlflowClient().search_experiments()
start = time.perf_counter()
mlflow.genai.evaluate(data=rows, scorers=[numeric_diff_scorer])
print(json.dumps({"seconds": time.perf_counter() - start, "lost": len(lost)}))
"""


def _one(rows: int, env: dict[str, str], folder: Path) -> dict[str, float]:
    store = f"sqlite:///{folder}/mlflow.db"
    base = {**os.environ, "MLFLOW_TRACKING_URI": store, "MLFLOW_DISABLE_TELEMETRY": "true"}
    init = "from mlflow import MlflowClient; MlflowClient().search_experiments()"
    subprocess.run(
        [sys.executable, "-c", init], env=base, check=True, capture_output=True, cwd=folder
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(rows)],
        env={**base, **env},
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    medians = {}
    for name, env in SETTINGS.items():
        runs = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="bench-genai-") as folder:
                runs.append(_one(args.rows, env, Path(folder)))
        medians[name] = statistics.median(r["seconds"] for r in runs)
        lost = sum(r["lost"] for r in runs)
        print(f"{name:<45} {medians[name]:7.1f} s  traces lost: {lost}")
    for name, seconds in medians.items():
        print(f"{name:<45} {seconds / medians['defaults']:7.2f} x the defaults")


if __name__ == "__main__":
    main()
