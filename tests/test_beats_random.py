"""Statistical end-to-end check: each model-based optimiser beats random search (issues 3 and 4).

8 seeds per algorithm, vmapped; the same 8 keys for every algorithm, so all start from the same
initial design. The claim tested is the papers' weakest one: in mean best noise-free value after the
budget, the algorithm is better than random search, and significantly so by a one-sided Welch t-test
at level 0.05. Runs are deterministic for fixed keys, so the test cannot flake on one machine; the
level guards against a pass by luck of the chosen keys.

Every run uses one buffer capacity (``min_capacity=64`` >= every budget), so each algorithm compiles
its scan once per problem; compilation dominates the cost of this file.
"""

import jax
import numpy as np
import pytest
import scipy.stats

import ntkbo

SEEDS = 8
CAPACITY = 64
SETTINGS = {"branin": dict(budget=40, n_init=5), "hartmann6": dict(budget=60, n_init=10)}

# name -> (factory, {problem: options}); options not named for a problem are the factory defaults.
# Each entry's settings are the ones its docstring documents; the measured values are in
# README.md's "Status" section.
ALGORITHMS = {
    "gp_ei": (lambda **o: ntkbo.algorithms.gp(acquisition="ei", **o), {}),
    "ntk_gp_ei": (lambda **o: ntkbo.algorithms.ntk_gp(acquisition="ei", **o), {}),
    # The paper picks nu per problem from the grid {0.1, 1, 10} (seed-000 digest, section 4.1), and
    # so do we: nu = 10 on Branin, 1 on Hartmann-6 (with nu = 1 on Branin the mean is worse than
    # random search's: one seed of 8 stalls on the boundary x2 = 0). Width 100 instead of 500 to
    # keep CI fast; the width-500 runs are in the README's "Status".
    "neural_bo": (lambda **o: ntkbo.algorithms.neural_bo(width=100, **o),
                  {"branin": dict(nu=10.0), "hartmann6": dict(nu=1.0)}),
}


@pytest.fixture(scope="module")
def random_results():
    out = {}
    for name, s in SETTINGS.items():
        problem = ntkbo.benchmarks.get(name)
        out[name] = run(ntkbo.algorithms.random_search(), problem, **s)
    return out


def run(algo, problem, budget, n_init):
    keys = jax.random.split(jax.random.PRNGKey(2024), SEEDS)
    res = jax.vmap(lambda k: ntkbo.minimize(algo, problem, budget, k, n_init=n_init,
                                            min_capacity=CAPACITY))(keys)
    return np.asarray(res.f.min(axis=1))


@pytest.mark.slow
@pytest.mark.parametrize("problem_name", sorted(SETTINGS))
@pytest.mark.parametrize("algo_name", sorted(ALGORITHMS))
def test_beats_random_search(algo_name, problem_name, random_results):
    problem = ntkbo.benchmarks.get(problem_name)
    factory, options = ALGORITHMS[algo_name]
    best = run(factory(**options.get(problem_name, {})), problem, **SETTINGS[problem_name])
    rand = random_results[problem_name]
    t = scipy.stats.ttest_ind(best, rand, equal_var=False, alternative="less")
    msg = (f"{algo_name} on {problem_name}: mean best {best.mean():.4g} vs random "
           f"{rand.mean():.4g} (optimum {problem.optimum:.4g}), Welch p = {t.pvalue:.3g}")
    print(msg)
    assert best.mean() < rand.mean() and t.pvalue < 0.05, msg
