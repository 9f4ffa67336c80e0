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

# The package imports only the ``Problem`` type eagerly; the problems themselves (the registry,
# its functions, suites and host tasks) load on first use (PEP 562 ``__getattr__``). The drivers
# and the algorithms need none of this package (they take any object with ``ntkbo.objective``'s
# ``Problem`` protocol; PINN-BO's ``Pde`` type lives in the neutral ``ntkbo.pde``).
import importlib
from typing import TYPE_CHECKING

from ntkbo.benchmarks.problem import Problem, relative_noise_std, uniform

if TYPE_CHECKING:  # the lazy names below, for type checkers (never imported at run time)
    from ntkbo.benchmarks import synthetic, tasks
    from ntkbo.benchmarks.optima import separable_minimum
    from ntkbo.benchmarks.registry import names
    from ntkbo.benchmarks.suites import get, suite, suite_names
    from ntkbo.benchmarks.tasks.host import numpy_problem

#: Public names defined in submodules, loaded on first access: name -> (module, attribute).
_LAZY = {
    "get": ("suites", "get"), "names": ("registry", "names"),
    "suite": ("suites", "suite"), "suite_names": ("suites", "suite_names"),
    "separable_minimum": ("optima", "separable_minimum"),
    "synthetic": ("synthetic", None), "tasks": ("tasks", None),
    "numpy_problem": ("tasks.host", "numpy_problem"),
}


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = importlib.import_module(f"ntkbo.benchmarks.{module}")
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value
    raise AttributeError(f"module 'ntkbo.benchmarks' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Problem",
    "get",
    "names",
    "numpy_problem",
    "relative_noise_std",
    "separable_minimum",
    "suite",
    "suite_names",
    "synthetic",
    "tasks",
    "uniform",
]
