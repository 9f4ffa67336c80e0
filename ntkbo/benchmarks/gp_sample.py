"""A fixed sample path of a Gaussian process: STO-BNTS's synthetic objective (Dai et al. 2022,
arXiv:2210.06850, Section 5.1 and App. F.1).

The paper draws ``f`` from a zero-mean GP with the squared-exponential kernel

    k(x, x') = exp(-(x - x')^2 / (2 l^2)),   l = 0.1,

on a uniform grid of 1,000 points in ``[0, 1]`` and optimises over that grid (maximising; the
distribution of ``f`` is symmetric, so minimising the same path is the same task). ntkbo's
optimisers work on continuous boxes, so the problem is the piecewise-linear interpolant of the grid
values: its minimum over any sub-box is attained at a grid point or at an end of the box
(``grid_minimum``), so the optimum is known exactly.

The grid values are ``A z`` with ``A = V diag(sqrt(max(w, 0)))`` from the eigendecomposition
``K = V diag(w) V^T`` of the grid's kernel matrix (``K`` is numerically singular at this length
scale, so a Cholesky factor would need jitter that changes the sample's covariance) and
``z ~ N(0, I)`` from ``numpy.random.default_rng(seed)``: the same seed gives the same function on
every machine up to the rounding of the eigensolver.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

#: The paper's grid size and length scale (Dai et al. 2022, Section 5.1 and App. F.1).
GRID_SIZE = 1000
LENGTHSCALE = 0.1


@functools.lru_cache(maxsize=8)
def _factor(n: int, lengthscale: float) -> np.ndarray:
    """``A`` ``(n, n)`` with ``A A^T = K`` on the grid ``linspace(0, 1, n)`` (float64)."""
    grid = np.linspace(0.0, 1.0, n)
    k = np.exp(-0.5 * ((grid[:, None] - grid[None, :]) / lengthscale) ** 2)
    w, v = np.linalg.eigh(k)
    return v * np.sqrt(np.clip(w, 0.0, None))[None, :]


@functools.lru_cache(maxsize=64)
def grid_values(seed: int = 0, n: int = GRID_SIZE, lengthscale: float = LENGTHSCALE) -> np.ndarray:
    """The sample path's values ``(n,)`` at ``linspace(0, 1, n)`` (float64, read-only)."""
    if n < 2:
        raise ValueError(f"n must be >= 2 grid points, got {n}")
    if not lengthscale > 0:
        raise ValueError(f"lengthscale must be > 0, got {lengthscale}")
    z = np.random.default_rng(seed).standard_normal(n)
    values = _factor(n, float(lengthscale)) @ z
    values.setflags(write=False)
    return values


class GpSample(NamedTuple):
    """``x (1,) -> ()``: the interpolated sample path with ``seed`` (hashable, so jitted code
    taking a ``Problem`` with this ``fn`` compiles once per seed)."""

    seed: int = 0
    n: int = GRID_SIZE
    lengthscale: float = LENGTHSCALE

    def __call__(self, x):
        values = grid_values(self.seed, self.n, self.lengthscale)
        grid = jnp.linspace(0.0, 1.0, self.n, dtype=x.dtype)
        return jnp.interp(x[0], grid, jnp.asarray(values, x.dtype))


def grid_minimum(fn: GpSample, lower: float, upper: float) -> tuple[float, float]:
    """``(min, argmin)`` of the interpolant over ``[lower, upper]``: the smallest of the grid values
    inside the interval and the interpolated values at its two ends (a piecewise-linear function
    attains its minimum at a breakpoint or an end)."""
    values = grid_values(fn.seed, fn.n, fn.lengthscale)
    grid = np.linspace(0.0, 1.0, fn.n)
    inside = (grid >= lower) & (grid <= upper)
    xs = np.concatenate([grid[inside], [lower, upper]])
    fs = np.concatenate([values[inside], np.interp([lower, upper], grid, values)])
    i = int(np.argmin(fs))
    return float(fs[i]), float(xs[i])
