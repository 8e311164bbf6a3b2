"""Memory of a row longer than the streaming block: ``numdiff score t.csv.gz -q --no-plots`` on a
gzipped CSV of a few short rows and one cell of N MiB (a few MiB compressed), logged into a fresh
sqlite store, against the same job on a file whose long cell is 1 KiB (the baseline, measured in
the same run). Prints each job's peak resident memory, its excess over the baseline, and that
excess as a multiple of the cell: what a row read whole costs beyond the job's usual memory.

    python benchmarks/bench_long_row.py                   # cells of 16, 64 and 128 MiB
    python benchmarks/bench_long_row.py --sizes 32 256
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

from bench_job import timed, tracking_env


def write_long_row(path: Path, cell_bytes: int) -> None:
    """A gzipped CSV: ten short rows, then one whose output cell is ``cell_bytes`` long."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b"id,output,expected\n")
        out.writelines(f"r{i},{i},{i}\n".encode() for i in range(10))
        out.write(b"long,")
        block = b"the answer is 42 " * (1 << 16)
        for _ in range(cell_bytes // len(block)):
            out.write(block)
        out.write(b"x" * (cell_bytes % len(block)) + b",42\n")


def peak(folder: Path, cell_bytes: int, env: dict[str, str]) -> float:
    """The peak resident MiB of ``numdiff score`` on a file with a cell of ``cell_bytes``."""
    source = folder / f"long-{cell_bytes}.csv.gz"
    write_long_row(source, cell_bytes)
    command = [sys.executable, "-m", "numdiff_component", "score", str(source), "-q"]
    command += ["--no-plots", "--results-dir", str(folder / f"res-{cell_bytes}")]
    _, mib = timed(command, env)
    return mib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 128], help="MiB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**tracking_env(folder), "NUMDIFF_MAX_ROW_BYTES": str(max(args.sizes) + 1 << 20)}
        base = peak(folder, 1 << 10, env)
        print(f"{'cell':>10}  {'peak RSS':>10}  {'over baseline':>14}  {'x cell':>7}")
        print(f"{'1 KiB':>10}  {base:>7.0f} MiB  {'(baseline)':>14}")
        for size in args.sizes:
            mib = peak(folder, size << 20, env)
            over = mib - base
            print(f"{size:>6} MiB  {mib:>7.0f} MiB  {over:>10.0f} MiB  {over / size:>6.1f}x")


if __name__ == "__main__":
    main()
