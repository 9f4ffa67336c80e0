"""Repeated evaluations in stored studies: per algorithm, the runs that evaluated a point within
``ntkbo.optimize.MIN_DISTANCE`` of the box's width (in every coordinate) of an earlier one.

A noise-free objective evaluated twice at one point teaches the model nothing; the acquisition
search's stage 5 (``ntkbo.optimize``) replaces such a maximiser. This reads the ``x`` of every cell
of the given study folders (``ntkbo.experiments.store``) with the problem's bounds from the cell's
meta, and prints a table: algorithm, runs, runs with a repeat, the largest number of repeats in
one run. Cells made by code older than the guard show what it fixed, not what the code does now.

    python benchmarks/no_repeats.py benchmarks/results/low-budget-cpu [more folders]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ntkbo.experiments import store  # noqa: E402
from ntkbo.optimize import MIN_DISTANCE  # noqa: E402


def repeats(x: np.ndarray, bounds) -> int:
    """Evaluations of ``x`` ``(B, d)`` within ``MIN_DISTANCE`` of the box's width of an earlier
    one (Chebyshev distance in units of the width)."""
    lo, hi = (np.asarray(b, np.float64) for b in bounds)
    u = (np.asarray(x, np.float64) - lo) / np.where(hi > lo, hi - lo, 1.0)
    close = np.abs(u[:, None, :] - u[None, :, :]).max(-1) <= MIN_DISTANCE
    return int(np.tril(close, -1).any(axis=1).sum())


def scan(folder: str) -> dict:
    """``{algorithm label: [runs, runs with a repeat, most repeats in a run]}`` over ``folder``."""
    rows: dict = {}
    if not store.list_cells(folder):
        raise SystemExit(f"{folder} holds no raw cell files (cells/*.npz), which this script reads: "
                         "regenerate them with the command in its report's header, or restore "
                         "them from git history (benchmarks/README.md, Committed studies)")
    for path in store.list_cells(folder):
        meta = store.read_meta(path)
        x = np.load(path)["x"]
        counts = [repeats(run, meta["problem"]["bounds"]) for run in x]
        row = rows.setdefault(meta["algorithm"]["label"], [0, 0, 0])
        row[0] += len(counts)
        row[1] += sum(c > 0 for c in counts)
        row[2] = max(row[2], max(counts, default=0))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", help="study folders (with cells/)")
    args = p.parse_args(argv)
    for folder in args.folders:
        print(f"\n{folder}\n\n| algorithm | runs | runs with a repeat | most repeats in a run |")
        print("|---|---:|---:|---:|")
        for label, (runs, bad, most) in sorted(scan(folder).items()):
            print(f"| {label} | {runs} | {bad} | {most} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
