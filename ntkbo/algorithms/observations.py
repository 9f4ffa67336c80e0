"""The observations as every surrogate sees them: inputs in the unit cube, outputs standardised.

Every model in ``ntkbo.algorithms`` works on the box mapped to ``[0, 1]^d`` (:func:`to_unit`,
:func:`from_unit`) and on the observations standardised over the valid rows of the fixed-capacity
buffer (:func:`standardize`); the neural models feed the unit sphere (:func:`to_sphere`). The block
that opens their ``suggest``/``update`` is :func:`unit_view`; :func:`best_points` gives the best
observed points the acquisition optimiser starts from.

Sign convention: ntkbo minimises ``f``, so the *best* points are those of the smallest observed
values.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ntkbo import data as D

Array = jax.Array

__all__ = ["UnitView", "best_points", "from_unit", "standardize", "to_sphere", "to_unit",
           "unit_box", "unit_view"]


def to_unit(x: Array, bounds: Array) -> Array:
    """Points ``x`` ``(..., d)`` of the box ``bounds`` ``(2, d)`` mapped affinely onto
    ``[0, 1]^d``."""
    return (x - bounds[0]) / (bounds[1] - bounds[0])


def from_unit(z: Array, bounds: Array) -> Array:
    """Unit-cube points ``z`` ``(..., d)`` mapped back to the box ``bounds`` ``(2, d)``, clipped
    to it (the inverse of :func:`to_unit` up to rounding)."""
    return jnp.clip(bounds[0] + z * (bounds[1] - bounds[0]), bounds[0], bounds[1])


def to_sphere(z: Array) -> Array:
    """Unit-cube points ``z`` ``(n, d)`` onto the unit sphere of ``R^(d+1)``: ``u / |u|`` with
    ``u = (2 z - 1, 1)``, ``(n, d + 1)``. The box centre is the pole and no point maps to the
    origin, the input domain of the NTK theory (unit-norm inputs); used by the neural models, whose
    bias-free ReLU networks are positively homogeneous in their raw input."""
    u = jnp.concatenate([2.0 * z - 1.0, jnp.ones_like(z[..., :1])], axis=-1)
    return u / jnp.linalg.norm(u, axis=-1, keepdims=True)


def standardize(y: Array, mask: Array) -> tuple[Array, Array, Array]:
    """``(y - mean) / std`` over the valid rows (std 1 with fewer than 2 rows); padding set to 0.

    Args:
      y: ``(C,)`` observations; mask: ``(C,)`` bool, the valid rows.

    Returns:
      ``(ys (C,), mean (), std ())``: the standardised values (0 on padding rows), and the mean and
      the (unbiased, ``n - 1``) standard deviation of the valid rows.
    """
    n = jnp.maximum(jnp.sum(mask), 1)
    mean = jnp.sum(jnp.where(mask, y, 0.0)) / n
    var = jnp.sum(jnp.where(mask, (y - mean) ** 2, 0.0)) / jnp.maximum(n - 1, 1)
    std = jnp.where((jnp.sum(mask) > 1) & (var > 0), jnp.sqrt(var), 1.0)
    return jnp.where(mask, (y - mean) / std, 0.0), mean, std


def best_points(z: Array, ys: Array, mask: Array, k: int) -> Array:
    """The ``k`` best (smallest ``ys``) valid rows of ``z``, best first, for the acquisition
    optimiser's starts.

    Args:
      z: ``(C, d)`` points; ys: ``(C,)`` their values (any monotone transform of the observations:
        raw or standardised); mask: ``(C,)`` bool, the valid rows; k: a Python int.

    Returns:
      ``(min(k, C), d)``: the rows of the ``k`` smallest valid values (ties: the lower index first);
      where fewer than ``k`` rows are valid, the remaining rows are NaN (``maximize_acquisition``
      ignores NaN starts).
    """
    k = min(k, z.shape[0])
    _, idx = jax.lax.top_k(-jnp.where(mask, ys, jnp.inf), k)
    return jnp.where(mask[idx][:, None], z[idx], jnp.nan)


def unit_box(d: int, dtype) -> Array:
    """The unit cube ``[0, 1]^d`` as a box ``(2, d)`` (rows: zeros, ones) of ``dtype``."""
    return jnp.stack([jnp.zeros(d, dtype), jnp.ones(d, dtype)])


class UnitView(NamedTuple):
    """The observations of a buffer of capacity ``C`` in dimension ``d``, as the models see them.

    Attributes:
      mask: ``(C,)`` bool, the valid rows (``ntkbo.data.mask``).
      z: ``(C, d)`` the inputs in the unit cube, 0 on padding rows.
      ys: ``(C,)`` the standardised observations (:func:`standardize`), 0 on padding rows.
      unit: ``(2, d)`` the unit box (:func:`unit_box`) in the bounds' dtype.
    """

    mask: Array
    z: Array
    ys: Array
    unit: Array


def unit_view(data: D.Data, bounds: Array) -> UnitView:
    """:class:`UnitView` of the buffer ``data`` (inputs ``(C, d)``) in the box ``bounds``
    ``(2, d)``: ``mask``, ``z = where(mask, to_unit(x), 0)``, ``ys = standardize(y, mask)[0]``
    and the unit box of ``bounds.dtype``."""
    mask = D.mask(data)
    z = jnp.where(mask[:, None], to_unit(data.x, bounds), 0.0)
    ys = standardize(data.y, mask)[0]
    return UnitView(mask, z, ys, unit_box(bounds.shape[-1], bounds.dtype))
