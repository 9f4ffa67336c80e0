r"""Benchmarks with black-box constraints ``c_k(x) <= 0`` (Neural-CBO, thesis Section 4.3).

Each problem is an objective ``f`` (a function of one point ``x`` ``(d,)`` to a scalar) and a
constraint function ``c`` mapping ``x`` to ``(K,)`` values; **a point is feasible iff every
``c_k(x) <= 0``** (``ntkbo.benchmarks.Problem.constraints``). Everything is minimised. Registered in
``ntkbo.benchmarks.get`` as:

=========================  ===  ===  ===================================================
name                        d    K   constrained optimum ``f*`` (minimiser)
=========================  ===  ===  ===================================================
``branin_constrained``      2    1   ``5 / (4 pi) = 0.397887`` at ``(pi, 2.275)``
``simionescu_constrained``  2    1   ``-0.072`` at ``+-(0.84852813, -0.84852813)``
``ackley_constrained``      5    2   ``0`` at the origin (feasible)
``hartmann6_constrained``   6    1   ``-3.32236801141551`` (the unconstrained minimiser)
``gas_transmission``        4    1   ``2964895.4173`` at ``(50, 1.17828, 24.59259, 0.38835)``
``speed_reducer``           7   11   ``2994.4244658`` at ``(3.5, 0.7, 17, 7.3, 7.71532,
                                     3.35054, 5.28665)``
=========================  ===  ===  ===================================================

The synthetic constraints are those of the authors' code (``utils/objectives.py``; the thesis says
they are in a supplement that does not exist). The two engineering problems follow the formulas
printed in the thesis (sections 4.3.3-4.3.4), which are those of Kumar et al. (2020), "A
test-suite of non-convex constrained optimization problems from the real-world", with:

- Speed reducer: the printed ``c_9 = -x_1 / x_2 - 12`` is a sign error (it can never be positive);
  the standard ``c_9 = x_1 / x_2 - 12`` is used. Bounds are Kumar et al.'s, with
  ``x_5 in [7.3, 8.3]``; the authors' code uses ``x_5 >= 7.8``, where the optimum is 2996.30 and
  their reported ``best_feasible_y = 2994.4`` cannot be reached there. With the
  thesis's coefficients (``7.477``, ``16.91e6``) the optimum is exactly the published 2994.4244658
  (checked in the tests by solving the active constraints).
- Gas transmission: the thesis formula and Kumar et al.'s bounds; the authors' code runs a rescaled,
  normalised, negated variant with a different constraint (``+x_2^2``), not this one.

Noise: ``get(..., noise="relative", noise_scale=0.05)`` is the Neural-CBO code's rule, applied to
the objective and to each constraint separately (``relative_constraint_noise_std``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo.benchmarks import synthetic as S
from ntkbo.benchmarks.problem import uniform

Array = jax.Array

__all__ = [
    "branin_constraint",
    "simionescu_constraint",
    "ackley_constraints",
    "hartmann6_constraint",
    "gas_transmission",
    "gas_transmission_constraint",
    "speed_reducer",
    "speed_reducer_constraints",
    "relative_constraint_noise_std",
]


def _f(x):
    return S.as_float(x)


def branin_constraint(x: Array) -> Array:
    """``(x_1 - 2.5)^2 + (x_2 - 7.5)^2 - 50``, ``(1,)``: a disc of radius ``sqrt(50)`` centred in
    Branin's box; of Branin's three minimisers only ``(pi, 2.275)`` is inside."""
    x = _f(x)
    return ((x[0] - 2.5) ** 2 + (x[1] - 7.5) ** 2 - 50.0)[None]


def simionescu_constraint(x: Array, r_t: float = 1.0, r_s: float = 0.2, n: int = 8) -> Array:
    """``x_1^2 + x_2^2 - (r_T + r_S cos(n atan(x_1 / x_2)))^2``, ``(1,)``, with ``r_T = 1``,
    ``r_S = 0.2``, ``n = 8`` (Simionescu and Beale 2002): a flower with 8 petals.

    Computed with ``atan2(x_1, x_2)``, which differs from ``atan(x_1 / x_2)`` by ``pi`` when
    ``x_2 < 0`` and so gives the same ``cos(8 .)``, and is defined at ``x_2 = 0`` (also at the
    origin, where the raw formula is ``0 / 0``).
    """
    x = _f(x)
    radius = r_t + r_s * jnp.cos(n * jnp.arctan2(x[0], x[1]))
    return (x[0] ** 2 + x[1] ** 2 - radius**2)[None]


def ackley_constraints(x: Array) -> Array:
    """``(1 - (|x - 1|_2 - 5.5)^2, |x|_inf^2 - 9)``, ``(2,)`` (the Neural-CBO code's Ackley 5-D).
    The origin, Ackley's minimiser, is feasible: ``|x - 1|_2 = sqrt(5)``."""
    x = _f(x)
    r = S.safe_sqrt(jnp.sum((x - 1.0) ** 2))
    return jnp.stack([1.0 - (r - 5.5) ** 2, jnp.max(jnp.abs(x)) ** 2 - 9.0])


def hartmann6_constraint(x: Array) -> Array:
    """``|x|_2 - 1``, ``(1,)``; inactive at Hartmann-6's minimiser (norm 0.946)."""
    x = _f(x)
    return (S.safe_sqrt(jnp.sum(x**2)) - 1.0)[None]


def gas_transmission(x: Array) -> Array:
    r"""Gas transmission compressor design cost (thesis section 4.3.3; Kumar et al. 2020), d = 4.

    ``f = 8.61e5 x_1^{1/2} x_2 x_3^{-2/3} x_4^{-1/2} + 3.69e4 x_3 + 7.72e8 x_1^{-1} x_2^{0.219}
    - 765.43e6 x_1^{-1}`` on ``[20, 50] x [1, 10] x [20, 50] x [0.1, 60]``.
    """
    x = _f(x)
    x1, x2, x3, x4 = x[0], x[1], x[2], x[3]
    return (8.61e5 * jnp.sqrt(x1) * x2 * x3 ** (-2.0 / 3.0) / jnp.sqrt(x4) + 3.69e4 * x3
            + 7.72e8 / x1 * x2**0.219 - 765.43e6 / x1)


def gas_transmission_constraint(x: Array) -> Array:
    """``x_4 x_2^{-2} + x_2^{-2} - 1``, ``(1,)``; active at the optimum (``x_4 = x_2^2 - 1``)."""
    x = _f(x)
    return ((x[3] + 1.0) / x[1] ** 2 - 1.0)[None]


def speed_reducer(x: Array) -> Array:
    r"""Speed reducer weight (thesis section 4.3.4; Kumar et al. 2020), d = 7.

    ``f = 0.7854 x_2^2 x_1 (14.9334 x_3 - 43.0934 + 3.3333 x_3^2) + 0.7854 (x_5 x_7^2 + x_4 x_6^2)
    - 1.508 x_1 (x_7^2 + x_6^2) + 7.477 (x_7^3 + x_6^3)`` on ``[2.6, 3.6] x [0.7, 0.8] x [17, 28] x
    [7.3, 8.3] x [7.3, 8.3] x [2.9, 3.9] x [5, 5.5]``.
    """
    x = _f(x)
    x1, x2, x3, x4, x5, x6, x7 = (x[i] for i in range(7))
    return (0.7854 * x2**2 * x1 * (14.9334 * x3 - 43.0934 + 3.3333 * x3**2)
            + 0.7854 * (x5 * x7**2 + x4 * x6**2) - 1.508 * x1 * (x7**2 + x6**2)
            + 7.477 * (x7**3 + x6**3))


def speed_reducer_constraints(x: Array) -> Array:
    """The 11 constraints of the thesis (section 4.3.4), ``(11,)``, with ``c_9 = x_1 / x_2 - 12``
    (the printed ``-x_1 / x_2 - 12`` is a sign error)."""
    x = _f(x)
    x1, x2, x3, x4, x5, x6, x7 = (x[i] for i in range(7))
    return jnp.stack([
        -x1 * x2**2 * x3 + 27.0,
        -x1 * x2**2 * x3**2 + 397.5,
        -x2 * x6**4 * x3 / x4**3 + 1.93,
        -x2 * x7**4 * x3 / x5**3 + 1.93,
        10.0 / x6**3 * jnp.sqrt(16.91e6 + (745.0 * x4 / (x2 * x3)) ** 2) - 1100.0,
        10.0 / x7**3 * jnp.sqrt(157.5e6 + (745.0 * x5 / (x2 * x3)) ** 2) - 850.0,
        x2 * x3 - 40.0,
        -x1 / x2 + 5.0,
        x1 / x2 - 12.0,
        1.5 * x6 - x4 + 1.9,
        1.1 * x7 - x5 + 1.9,
    ])


# Known constrained minimisers, each nudged inward by ~1e-12 where a constraint is active so that
# it is feasible in floating point (the value changes by < 1e-8 relative).
BRANIN_MINIMISER = np.array([[math.pi, 2.275]])
SIMIONESCU_MINIMISERS = np.array([[0.848528137423857, -0.848528137423857],
                                  [-0.848528137423857, 0.848528137423857]]) * (1.0 - 1e-12)
ACKLEY_MINIMISER = np.zeros((1, 5))
# the standard minimiser x1 = 50, x4 = x2^2 - 1 (constraint active), (x2, x3) minimising f there
GAS_MINIMISER = np.array([[50.0, 1.1782839386483315, 24.59259122506508, 0.388353040076]])
GAS_OPTIMUM = 2964895.4173
# x1, x2, x3, x4 at their bounds; x6, x7 solve c_5 = c_6 = 0 and x5 = 1.1 x7 + 1.9 (c_11 = 0)
SPEED_REDUCER_MINIMISER = np.array(
    [[3.5, 0.7, 17.0, 7.3, 7.71531991147827, 3.35054094910590, 5.28665446498023]])
SPEED_REDUCER_OPTIMUM = 2994.4244658


def relative_constraint_noise_std(constraints, bounds, scale: float = 0.05,
                                  num_points: int = 10_000, key=None) -> np.ndarray:
    """``scale * std(c_k(X))`` per constraint, ``X`` uniform in the box: the Neural-CBO code's
    noise rule (``0.05 std``, estimated on 10,000 points) applied to each constraint. Returns
    ``(K,)`` as numpy; deterministic (``key`` defaults to ``PRNGKey(0)``)."""
    key = jax.random.PRNGKey(0) if key is None else key
    return scale * np.asarray(_constraint_spread(constraints, key, jnp.asarray(bounds),
                                                 int(num_points)), dtype=float)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _constraint_spread(constraints, key, bounds, num_points):
    return jnp.std(jax.vmap(constraints)(uniform(key, bounds, num_points)), axis=0, ddof=1)
