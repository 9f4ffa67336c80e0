"""Statistical end-to-end check of the core optimisers: each beats random search (issue 3).

The protocol is ``beats_random``'s (8 seeds, Branin budget 40, Hartmann-6 budget 60, one-sided Welch
t-test at 0.05); the other algorithms' cells are in their own test files (issue 4).
"""

import pytest

import ntkbo
from beats_random import PROBLEMS, assert_beats_random

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


@pytest.mark.slow
@pytest.mark.parametrize("problem_name", PROBLEMS)
@pytest.mark.parametrize("algo_name", sorted(ALGORITHMS))
def test_beats_random_search(algo_name, problem_name):
    factory, options = ALGORITHMS[algo_name]
    assert_beats_random(factory(**options.get(problem_name, {})), problem_name, algo_name)
