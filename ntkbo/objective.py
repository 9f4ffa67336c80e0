"""What the drivers need of a problem: the ``Problem`` protocol, and the constraint violation.

``ntkbo.minimize`` and ``ntkbo.maximize`` take any object with these attributes, not only the
catalogue's ``ntkbo.benchmarks.Problem`` (which has them all), so the drivers import no problem
catalogue. Convention: minimisation; ``fn`` maps one point ``x`` ``(d,)`` to a scalar, noise free.

Read when present (an object without them is an unconstrained, unnamed problem):
``name`` (str), ``constraints`` (``x (d,) -> (K,)``, feasible iff every ``c_k(x) <= 0``),
``n_constraints`` (``K``), ``constraint_noise_std`` (scalar or ``(K,)``). ``maximize`` needs
``replace`` (a ``flax.struct`` dataclass) or ``_replace`` (a NamedTuple) to negate ``fn``.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

__all__ = ["Problem", "is_noisy", "violation"]


@runtime_checkable
class Problem(Protocol):
    """A box-constrained minimisation problem as the drivers read it.

    Attributes:
      fn: pure JAX function, ``x`` ``(d,)`` -> scalar, noise free (traceable: the run is compiled).
      bounds: array ``(2, d)``; row 0 the lower bounds, row 1 the upper bounds.
      noise_std: standard deviation of the additive Gaussian observation noise.
      optimum: the known global minimum of ``fn`` on ``bounds`` (the regret's reference), or
        ``None``.
    """

    fn: Callable[[Array], Array]
    bounds: Array
    noise_std: Any
    optimum: Any


def violation(c: Array) -> Array:
    """Total violation ``sum_k [c_k]^+`` over the last axis of constraint values ``c`` ``(..., K)``
    (0 for feasible rows and for ``K = 0``); Phan-Trong's thesis, Def. 4.2.1."""
    return jnp.sum(jnp.maximum(jnp.asarray(c), 0.0), axis=-1)


def is_noisy(problem) -> bool:
    """Whether ``problem``'s observations are noisy: some entry of its ``noise_std`` or of its
    ``constraint_noise_std`` (0 when absent) is positive. Read before tracing: ``ValueError``
    when one is a tracer (a problem passed as an argument of ``jax.jit``), since what depends on
    it (the duplicate guard's ``"auto"``, ``ntkbo.optimize.avoid_observed_for``) is fixed in
    the program."""
    out = False
    for field in ("noise_std", "constraint_noise_std"):
        value = getattr(problem, field, 0.0)
        try:
            value = np.asarray(value)
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
            raise ValueError(
                f"the problem's {field} is traced, so whether it is noisy is not known before "
                "the program is compiled: close over the problem instead of passing it to "
                "jax.jit, or build the algorithm with search.avoid_observed True or False "
                "(ntkbo.algorithms.for_problem does)") from None
        out = out or bool(np.any(value > 0))
    return out
