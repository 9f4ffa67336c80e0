"""ntkbo: pure-functional JAX black-box optimisation with neural-network surrogates and exact NTKs.

The public surface::

    problem = ntkbo.benchmarks.get("ackley", dim=10)
    algo = ntkbo.algorithms.neural_bo(network=ntkbo.Network(width=64), nu=0.5)
    result = ntkbo.minimize(algo, problem, budget=200, key=key)
    results = jax.vmap(lambda k: ntkbo.minimize(algo, problem, 200, k))(keys)
"""

from typing import TYPE_CHECKING

from ntkbo import (acquisition, algorithms, ask_tell, benchmarks, data, gp, kernels, optimize,
                   parts, qmc, space)
from ntkbo.base import Algorithm, NoInfo
from ntkbo.lapack_threads import configure_blas_threads
from ntkbo.loop import Result, best_so_far, maximize, minimize
from ntkbo.parts import Fit, Network, Residuals, Search, Training

__version__ = "0.1.0"

if TYPE_CHECKING:  # ``experiments`` for type checkers; at run time ``__getattr__`` imports it
    from ntkbo import experiments


def __getattr__(name):
    """``ntkbo.experiments``, imported on first use: the study layer sits above every other
    module here and imports them, so the package does not import it (no import cycle)."""
    if name == "experiments":
        import ntkbo.experiments as experiments  # binds the attribute: no second call here

        return experiments
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Algorithm",
    "Fit",
    "Network",
    "NoInfo",
    "Residuals",
    "Result",
    "Search",
    "Training",
    "acquisition",
    "algorithms",
    "ask_tell",
    "benchmarks",
    "best_so_far",
    "configure_blas_threads",
    "data",
    "experiments",
    "gp",
    "kernels",
    "maximize",
    "minimize",
    "optimize",
    "parts",
    "qmc",
    "space",
]
