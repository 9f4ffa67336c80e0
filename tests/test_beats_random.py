"""Statistical end-to-end check of the GP baselines: each beats random search, on keys
from the reporting range that no tuning used.

The protocol is ``beats_random``'s (8 seeds ``PRNGKey(100000 + i)``, Branin budget 40, Hartmann-6
budget 60, one-sided Welch t-test at 0.05). These are the few statistical cells CI keeps; every
other algorithm's claim is a study with a committed report (``benchmarks/specs/status*.toml``,
``benchmarks/results/status*/``), not a test.
"""

import jax
import pytest
import scipy.stats

import ntkbo
from beats_random import LEVEL, PROBLEMS, assert_beats_random, best_values_on

# name -> factory with its defaults (the GP baselines need no per-problem settings)
ALGORITHMS = {
    "gp_ei": lambda: ntkbo.algorithms.gp(acquisition="ei"),
    "ntk_gp_ei": lambda: ntkbo.algorithms.ntk_gp(acquisition="ei"),
}


@pytest.mark.slow
@pytest.mark.parametrize("problem_name", PROBLEMS)
@pytest.mark.parametrize("algo_name", sorted(ALGORITHMS))
def test_beats_random_search(algo_name, problem_name):
    assert_beats_random(ALGORITHMS[algo_name](), problem_name, algo_name)


@pytest.mark.slow
def test_neural_bo_defaults_beat_random_search_where_users_start():
    # `minimize(neural_bo(), branin, 40, key)` with nothing else set: the default width, nu,
    # initial design (d + 1 = 3 points) and precision (float32, JAX's default; conftest turns
    # x64 on for the rest), on the protocol's reporting keys; random search gets the same design
    # size. Measured: mean 0.48 against 1.63, p = 0.035. The margin is thin at 8 seeds: in float64
    # one seed stalls at regret 1.27 and p = 0.055; the 16-key low-budget panel
    # (benchmarks/results/low-budget-cpu) is the evidence, this cell guards against regressions.
    # Mutation caught (checked): nu=0.3 on every dimension (the former default) gives mean 2.73.
    with jax.enable_x64(False):
        problem = ntkbo.benchmarks.get("branin")
        n_init = ntkbo.loop.default_n_init(problem, 40)
        best = best_values_on(ntkbo.algorithms.neural_bo(), problem, 40, n_init)
        rand = best_values_on(ntkbo.algorithms.random_search(), problem, 40, n_init)
    t = scipy.stats.ttest_ind(best, rand, equal_var=False, alternative="less")
    assert best.mean() < rand.mean() and t.pvalue < LEVEL, (best.mean(), rand.mean(), t.pvalue)
