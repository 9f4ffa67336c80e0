"""NeuralBO, an NTK-GP and a GP on Hartmann-6, 4 seeds each in one vmapped program per algorithm.

    python examples/quickstart.py
    NTKBO_EXAMPLE_SMALL=1 python examples/quickstart.py   # tiny budget: what CI runs

Prints, per algorithm, the mean best value over the seeds with its standard error.
"""

import os

import jax
import numpy as np

import ntkbo

# NTKBO_EXAMPLE_SMALL=1 (tests/test_examples.py sets it): the same code at a budget that only
# checks it runs; the results mean nothing at that size.
small = os.environ.get("NTKBO_EXAMPLE_SMALL") == "1"
budget, n_init, n_seeds, width = (12, 6, 2, 16) if small else (40, 10, 4, 200)

problem = ntkbo.benchmarks.get("hartmann6")
keys = jax.random.split(jax.random.PRNGKey(0), n_seeds)
for name, algo in [("neural_bo", ntkbo.algorithms.neural_bo(network=dict(width=width))),
                   ("ntk_gp_ucb", ntkbo.algorithms.ntk_gp(acquisition="ucb")),
                   ("gp_ei", ntkbo.algorithms.gp(acquisition="ei")),
                   ("random", ntkbo.algorithms.random_search())]:
    runs = jax.vmap(lambda k: ntkbo.minimize(algo, problem, budget, k, n_init=n_init))(keys)
    best = np.asarray(runs.f.min(axis=1))
    print(f"{name:>10}: best f = {best.mean():.3f} +- {best.std(ddof=1) / np.sqrt(n_seeds):.3f} "
          f"(optimum {problem.optimum:.3f})")
