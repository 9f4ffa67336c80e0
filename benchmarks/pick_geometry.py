"""Where each algorithm's suggestions fall: at the box's boundary, and how far from the incumbent.

    python benchmarks/pick_geometry.py benchmarks/results/defaults-cpu \
        --problems levy20,ackley20,rastrigin20,levy10,michalewicz10 \
        --algorithms gp_ei,ntk_gp_ei,neural_bo,random_search

Reads the stored cells of a ``benchmarks/defaults.py`` folder (every evaluated ``x`` and ``y`` per
seed; no algorithm is run) and prints, per problem and algorithm, over the suggestions after the
initial design (``2 d`` points) of every seed:

* **at bound**: the fraction of coordinates within 1% of the box's width of a bound (a uniformly
  random point has 2% there);
* **to incumbent**: the distance from the suggestion to the best point observed before it, in the
  unit cube, divided by ``sqrt(d)`` (the root-mean-square coordinate difference; two uniformly
  random points are ``1 / sqrt(6)`` ~ 0.41 apart).

It explains a gap in the defaults table with the runs themselves: its GP-EI against NTK-GP-EI
(docs/results.md, "Defaults on the development suite").
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import ntkbo

EDGE = 0.01  # "at a bound": within 1% of the box's width


def geometry(x: np.ndarray, y: np.ndarray, n_init: int) -> tuple[float, float]:
    """``(at_bound, to_incumbent)`` of the suggestions ``x[:, n_init:]`` (module docstring).

    Args:
      x: ``(seeds, n, d)`` points in the unit cube; y: ``(seeds, n)`` observations (minimised;
        non-finite ones never become the incumbent); n_init: initial-design points per seed.
    """
    seeds, n, d = x.shape
    y = np.where(np.isfinite(y), y, np.inf)
    at_bound, dist = [], []
    for s in range(seeds):
        for t in range(n_init, n):
            incumbent = x[s, int(np.argmin(y[s, :t]))]
            at_bound.append(np.mean((x[s, t] < EDGE) | (x[s, t] > 1.0 - EDGE)))
            dist.append(np.linalg.norm(x[s, t] - incumbent) / np.sqrt(d))
    return float(np.mean(at_bound)), float(np.mean(dist))


def table(out: str, problems: list[str], algorithms: list[str]) -> str:
    rows = ["| problem | algorithm | at bound | to incumbent |", "|---|---|---:|---:|"]
    for prob in problems:
        problem = ntkbo.benchmarks.get(f"dev/{prob}")
        lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)
        d = problem.dim
        for a in algorithms:
            path = os.path.join(out, "cells", f"{a}__{prob}__d{d}.npz")
            if not os.path.exists(path):
                rows.append(f"| {prob} | {a} | not run | |")
                continue
            z = np.load(path)
            unit = (np.asarray(z["x"], float) - lo) / (hi - lo)
            b, r = geometry(unit, np.asarray(z["y"], float), 2 * d)
            rows.append(f"| {prob} | {a} | {b:.2f} | {r:.3f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="a benchmarks/defaults.py folder")
    p.add_argument("--problems", default="levy20,ackley20,rastrigin20,levy10,michalewicz10")
    p.add_argument("--algorithms", default="gp_ei,ntk_gp_ei,neural_bo,random_search")
    args = p.parse_args(argv)
    print(table(args.out, args.problems.split(","), args.algorithms.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
