"""Does NeuralBO's TrainNN fit its data? Training ``R^2`` along a run.

The paper's analysis assumes TrainNN reaches the minimiser of its regularised loss; the authors'
code, ported naively, decays the weights ``m`` times too hard. This script feeds the same points,
one per round, to each configuration's own ``update`` (``ntkbo.algorithms.neural_bo``: the buffer,
``U``, TrainNN, exactly as a run does; ``suggest`` is not called) and prints the training ``R^2`` on
the standardised targets (``update``'s ``info.train_r2``, ``fit_r2``) after ``n`` points, with the seconds of
all the updates. The reference: the ``R^2`` of the minimiser of the linearised network's loss
(kernel ridge regression with the empirical NTK at ``theta_0`` and ``lam``,
``h_0 + K (K + lam I)^-1 (y - h_0)``), what GD on the paper's objective converges to at large width.

Points: ``n_max`` scrambled-Sobol points (seed 1) of the box of ``dev/levy10`` (d = 10, optimum off
centre); Levy's values. A BO run's points cluster near good values; these do not, so they are
the harder case for the fit.

Usage::

    python benchmarks/neuralbo_fit.py                  # n = 50, 100, 200, 400 on dev/levy10
    python benchmarks/neuralbo_fit.py --problem dev/ackley10 --n 100,200
"""

from __future__ import annotations

import argparse
import importlib
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import ntkbo
from ntkbo.algorithms.gp_bo import to_unit

NB = importlib.import_module("ntkbo.algorithms.neural_bo")

#: label -> options of ``ntkbo.algorithms.neural_bo`` (``preset`` included).
CONFIGS = {
    "defaults": {},
    "paper preset (GD from theta_0, J = 200)": {"preset": "paper"},
    "GD, J = 1000": {"training": {"num_steps": 1000}},
    "GD from theta_{t-1} (warm_start)": {"training": {"warm_start": True}},
    "Adam (1e-2), J = 200": {"training": {"optimizer": "adam"}},
    "authors preset (decay lam / m, Adam state kept)": {"preset": "authors"},
    "authors, decay lam (uncorrected)": {"preset": "authors", "training": {"penalty": 0.005}},
}


def points(problem, n: int):
    from scipy.stats import qmc

    lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)
    x = lo + (hi - lo) * qmc.Sobol(problem.dim, scramble=True, seed=1).random(n)
    x = jnp.asarray(x, problem.bounds.dtype)
    return x, jnp.asarray(problem.fn_batch(x))


def r2_path(algo, problem, x, y, checkpoints, key):
    """``({n: R^2 after n points}, seconds)``: ``algo.update`` one point at a time."""
    update = jax.jit(algo.update)
    state = algo.init(key, problem.bounds, int(2 ** np.ceil(np.log2(len(x)))))
    out, t0 = {}, time.perf_counter()
    for i in range(len(x)):
        state, info = update(state, x[i:i + 1], y[i:i + 1])
        if i + 1 in checkpoints:
            out[i + 1] = float(info.train_r2)
    return out, time.perf_counter() - t0


def linearised_r2(problem, x, y, n, key, lam=0.01):
    """``R^2`` of the linearised network's penalised least squares (module docstring), the
    default network (width 500, sphere inputs), the first ``n`` points, float64 numpy."""
    init_fn, apply_fn, feats = NB.network(problem.dim, 1, 500, "relu", "paper", None, "sphere")
    _, p0 = init_fn(key, (-1, problem.dim + 1))
    z = NB.embed(to_unit(x[:n], problem.bounds), "sphere")
    ys = np.asarray(y[:n], float)
    ys = (ys - ys.mean()) / ys.std()
    g = np.asarray(feats(z, p0), float)
    k = g @ g.T
    h0 = np.asarray(apply_fn(p0, z)[:, 0], float)
    pred = h0 + k @ np.linalg.solve(k + lam * np.eye(n), ys - h0)
    return 1.0 - np.sum((pred - ys) ** 2) / np.sum((ys - ys.mean()) ** 2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="dev/levy10")
    parser.add_argument("--n", default="50,100,200,400", help="checkpoints (points seen)")
    parser.add_argument("--only", default=None, help="comma-separated indices into CONFIGS")
    args = parser.parse_args(argv)
    problem = ntkbo.benchmarks.get(args.problem)
    checkpoints = sorted(int(v) for v in args.n.split(","))
    x, y = points(problem, checkpoints[-1])
    key = jax.random.PRNGKey(0)
    load = os.getloadavg()
    print(f"## TrainNN's fit on {args.problem} (Sobol points, one per round); load "
          f"{load[0]:.1f}; jax {jax.__version__}\n")
    print("| configuration | " + " | ".join(f"R^2 at n = {n}" for n in checkpoints)
          + " | seconds (all updates) |")
    print("|---|" + "---:|" * (len(checkpoints) + 1))
    lin = [linearised_r2(problem, x, y, n, key) for n in checkpoints]
    print("| linearised minimiser (reference) | " + " | ".join(f"{v:.3f}" for v in lin) + " | |")
    items = list(CONFIGS.items())
    if args.only:
        items = [items[int(i)] for i in args.only.split(",")]
    for label, options in items:
        r2, secs = r2_path(ntkbo.algorithms.neural_bo(**options), problem, x, y, checkpoints, key)
        print(f"| {label} | " + " | ".join(f"{r2[n]:.3f}" for n in checkpoints)
              + f" | {secs:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
