"""NeuralBO, an NTK-GP and a GP on Hartmann-6, 4 seeds each in one vmapped program per algorithm.

    python examples/quickstart.py
"""

import jax
import numpy as np

import ntkbo

problem = ntkbo.benchmarks.get("hartmann6")
keys = jax.random.split(jax.random.PRNGKey(0), 4)
for name, algo in [("neural_bo", ntkbo.algorithms.neural_bo(width=200)),
                   ("ntk_gp_ucb", ntkbo.algorithms.ntk_gp(acquisition="ucb")),
                   ("gp_ei", ntkbo.algorithms.gp(acquisition="ei")),
                   ("random", ntkbo.algorithms.random_search())]:
    runs = jax.vmap(lambda k: ntkbo.minimize(algo, problem, 40, k, n_init=10))(keys)
    best = np.asarray(runs.f.min(axis=1))
    print(f"{name:>10}: best f = {best.mean():.3f} +- {best.std(ddof=1) / 2:.3f} "
          f"(optimum {problem.optimum:.3f})")
