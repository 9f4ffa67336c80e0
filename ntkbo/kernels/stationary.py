"""Stationary ARD kernels of the standard GP baseline (Rasmussen and Williams 2006, section 4.2).

With the scaled distance ``r^2 = sum_i (x_i - x'_i)^2 / ell_i^2``:

* ``rbf``:       ``k = s2 exp(-r^2 / 2)``                                   (eq. 4.9)
* ``matern52``:  ``k = s2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)``         (eq. 4.17, nu = 5/2)
* ``matern32``:  ``k = s2 (1 + sqrt3 r) exp(-sqrt3 r)``                      (eq. 4.17, nu = 3/2)
* ``matern12``:  ``k = s2 exp(-r)``               (nu = 1/2, section 4.2.1: the exponential kernel)

The distance is computed from differences (not the expanded ``|x|^2 + |x'|^2 - 2 x.x'`` form) so that
``k(x, x) = s2`` exactly, and ``r`` has a safe gradient at ``r = 0``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def scaled_sq_dist(x1: Array, x2: Array, lengthscale) -> Array:
    """``(n1, n2)`` squared distances after dividing each input dimension by ``lengthscale``."""
    diff = (x1[:, None, :] - x2[None, :, :]) / lengthscale
    return jnp.sum(diff * diff, axis=-1)


def rbf(x1: Array, x2: Array, lengthscale: float | Array = 1.0,
        variance: float | Array = 1.0) -> Array:
    """Squared-exponential (RBF) kernel ``(n1, n2)``; ``lengthscale`` scalar or ``(d,)``."""
    return variance * jnp.exp(-0.5 * scaled_sq_dist(x1, x2, lengthscale))


def _distance(r2: Array) -> Array:
    """``sqrt(r2)`` with a zero-safe gradient: ``d sqrt(r2) / d r2`` is infinite at 0 (the
    kernels below are differentiable there or, for ``matern12``, have a one-sided slope)."""
    safe = jnp.where(r2 > 0, r2, 1.0)
    return jnp.where(r2 > 0, jnp.sqrt(safe), 0.0)


def matern52(x1: Array, x2: Array, lengthscale: float | Array = 1.0,
             variance: float | Array = 1.0) -> Array:
    """Matern-5/2 kernel ``(n1, n2)``; ``lengthscale`` scalar or ``(d,)``."""
    r2 = scaled_sq_dist(x1, x2, lengthscale)
    s5r = jnp.sqrt(5.0) * _distance(r2)
    return variance * (1.0 + s5r + 5.0 / 3.0 * r2) * jnp.exp(-s5r)


def matern32(x1: Array, x2: Array, lengthscale: float | Array = 1.0,
             variance: float | Array = 1.0) -> Array:
    """Matern-3/2 kernel ``(n1, n2)``; ``lengthscale`` scalar or ``(d,)``."""
    s3r = jnp.sqrt(3.0) * _distance(scaled_sq_dist(x1, x2, lengthscale))
    return variance * (1.0 + s3r) * jnp.exp(-s3r)


def matern12(x1: Array, x2: Array, lengthscale: float | Array = 1.0,
             variance: float | Array = 1.0) -> Array:
    """Matern-1/2 (Laplace, exponential) kernel ``(n1, n2)``; ``lengthscale`` scalar or ``(d,)``.
    On the sphere its RKHS is the ReLU NTK's (Geifman et al. 2020; Chen and Xu 2021)."""
    return variance * jnp.exp(-_distance(scaled_sq_dist(x1, x2, lengthscale)))


STATIONARY = {"rbf": rbf, "matern52": matern52, "matern32": matern32, "matern12": matern12}
