"""Benchmark problems: pure JAX test functions with their boxes, known optima and noise.

Example::

    import jax
    from ntkbo import benchmarks

    problem = benchmarks.get("ackley", dim=10, noise="relative")  # bounds (2, 10), optimum 0.0
    x = benchmarks.uniform(jax.random.PRNGKey(0), problem.bounds, 5)  # (5, 10) points of the box
    y = problem.evaluate(jax.random.PRNGKey(1), x)  # (5,) noisy observations
    regret = problem.fn_batch(x) - problem.optimum  # (5,) noise-free simple regrets

Everything is minimised. ``names()`` lists the problems; ``get``'s docstring shows how to set up
each seed paper's benchmarks. The functions themselves live in ``ntkbo.benchmarks.synthetic``;
the papers' real-world tasks (robot pushing, rover, Lunar Lander, tuning: host programs behind a
``jax.pure_callback``) in ``ntkbo.benchmarks.tasks``, with the ``tasks`` extra.
"""

from ntkbo.benchmarks import synthetic, tasks  # tasks imports its packages only when evaluated
from ntkbo.benchmarks.optima import separable_minimum
from ntkbo.benchmarks.problem import Problem, relative_noise_std, uniform
from ntkbo.benchmarks.registry import get, names
from ntkbo.benchmarks.suites import suite, suite_names

__all__ = [
    "Problem",
    "get",
    "names",
    "relative_noise_std",
    "separable_minimum",
    "suite",
    "suite_names",
    "synthetic",
    "tasks",
    "uniform",
]
