"""`sweep law fit`'s wall time against the rows of its CSV (docs/ladder.md: the 6,500-row bound and the minute it
must finish in on 2 cores): a table drawn from the known law of tests/sweep/ladder/synthetic.py with an n x n grid
per rung (4 rungs, n x n trials and 2 replicated points each, 4 evaluations a trial: 4 (n^2 + 2) 4 rows), written as
the command's CSV and fitted by the command itself, timed with its peak memory.

    nice -n 10 .venv/bin/python benchmarks/law_fit_time.py --grid 20      # 6,432 rows, 200 refits

prints one line a table: rows, refits, wall seconds, peak resident MB. Figures in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the synthetic draw lives with the tests that share it

from tests.sweep.ladder.synthetic import as_csv, draw  # noqa: E402


def table_csv(grid: int, folder: Path) -> tuple[Path, int]:
    """A drawn table of `grid` x `grid` trials per rung as a CSV in `folder`, and its rows."""
    table = draw(
        lr_fractions=tuple(np.geomspace(0.05, 0.8, grid)),
        shares=tuple(np.linspace(1 / 9, 2 / 3, grid)),
    )
    path = folder / f"law_runs_{grid}x{grid}.csv"
    path.write_text(as_csv(table))
    return path, len(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", type=int, nargs="+", default=[20], help="trials per axis per rung (default 20)")
    parser.add_argument("--refits", type=int, default=200, help="bootstrap refits (default 200)")
    args = parser.parse_args()
    sweep = Path(sys.executable).with_name("sweep")
    with tempfile.TemporaryDirectory() as folder:
        for grid in args.grid:
            path, rows = table_csv(grid, Path(folder))
            command = [str(sweep), "law", "fit", str(path), "--target", "llama3.1-70b", "--refits", str(args.refits)]
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"{rows:,} rows, {args.refits} refits: {wall:.0f} s, peak {peak:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
