"""Global minima of separable functions, computed coordinate by coordinate.

For ``f(x) = sum_i t_i(x_i)`` on a box, the global minimum is
``sum_i min_{l_i <= s <= u_i} t_i(s)``: ``d`` one-dimensional problems, solved all at once:

1. a dense grid finds, per coordinate, the ``candidates`` lowest local minima of the sampled
   ``t_i`` (several, because two narrow wells of nearly equal depth can swap order on a grid:
   Michalewicz with ``i ~ 100`` has wells ``~3e-3`` wide whose depths differ by ``~1e-4``);
2. golden-section search on the two grid cells around each candidate polishes it to machine
   precision; the best polished candidate wins.

The grid must put a few points in the narrowest well of ``t_i``; the default
``max(20_001, 64 d + 1)`` points do so for the separable functions registered here (Michalewicz's
wells narrow like ``1/i``). ``tests/test_benchmarks.py`` checks the results against published
optima and an independent scipy computation. DIRECTGOLib computes Michalewicz's minimum the same
way (``Box/Classical/Michalewicz.m``).
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

_INV_PHI = (np.sqrt(5.0) - 1.0) / 2.0  # 1 / golden ratio


def separable_minimum(
    terms: Callable[[Array], Array],
    lower: np.ndarray,
    upper: np.ndarray,
    grid_size: Optional[int] = None,
    candidates: int = 8,
    iterations: int = 90,
) -> tuple[float, np.ndarray]:
    """Global minimum of ``f(x) = sum(terms(x))`` over the box ``[lower, upper]``.

    Args:
      terms: pure JAX function, ``x`` of shape ``(d,)`` -> per-coordinate terms ``(d,)``, where
        term ``i`` depends on ``x_i`` only. Must be hashable (results are cached per function).
      lower, upper: the box, arrays of shape ``(d,)``.
      grid_size: grid points per coordinate; default ``max(20_001, 64 d + 1)``.
      candidates: grid local minima polished per coordinate.
      iterations: golden-section iterations; 90 shrink a bracket by ``0.618^90 ~ 1e-19``.

    Returns:
      ``(f_star, x_star)``: the minimum value (a Python float) and the minimiser, shape ``(d,)``.
      Runs in the default JAX float precision (float64 when ``jax_enable_x64`` is on). Call
      outside ``jit``.
    """
    lo = tuple(float(v) for v in np.ravel(lower))  # hashable: the cache's key
    hi = tuple(float(v) for v in np.ravel(upper))
    if grid_size is None:
        grid_size = max(20_001, 64 * len(lo) + 1)
    value, x = _cached(
        terms, lo, hi, int(grid_size), int(candidates), int(iterations),
        bool(jax.config.read("jax_enable_x64")),
    )
    return value, x.copy()


@functools.lru_cache(maxsize=256)
def _cached(terms, lower, upper, grid_size, candidates, iterations, _x64):
    lo, hi = np.asarray(lower), np.asarray(upper)
    d = lo.shape[0]
    dtype = jnp.result_type(float)
    batch = jax.jit(jax.vmap(terms))

    def t(x):  # per-coordinate terms at each row of x (k, d), as numpy
        return np.asarray(batch(jnp.asarray(x, dtype=dtype)))

    grid = np.linspace(0.0, 1.0, grid_size)
    cells = grid_size - 1

    # 1. grid local minima, in equal chunks of rows (one compilation, ~4M numbers at a time);
    #    each chunk carries one row of overlap on either side for the neighbour comparison
    chunk = max(1, min(grid_size, (1 << 22) // max(d, 1) - 2))
    best_val = np.full((candidates, d), np.inf)
    best_idx = np.zeros((candidates, d), dtype=int)
    cols = np.arange(d)
    for start in range(0, grid_size, chunk):
        idx = np.clip(np.arange(start - 1, start + chunk + 1), 0, cells)
        vals = t(lo + grid[idx, None] * (hi - lo))  # (chunk + 2, d)
        centre, left, right = vals[1:-1], vals[:-2], vals[2:]
        local_min = (centre <= left) & (centre <= right)
        centre = np.where(local_min & (idx[1:-1, None] >= start), centre, np.inf)
        merged_val = np.concatenate([best_val, centre])
        merged_idx = np.concatenate([best_idx, np.broadcast_to(idx[1:-1, None], centre.shape)])
        keep = np.argsort(merged_val, axis=0, kind="stable")[:candidates]
        best_val, best_idx = merged_val[keep, cols], merged_idx[keep, cols]

    # 2. golden-section search on [grid[k-1], grid[k+1]] for every candidate and coordinate
    a = lo + grid[np.maximum(best_idx - 1, 0)] * (hi - lo)
    b = lo + grid[np.minimum(best_idx + 1, cells)] * (hi - lo)
    c = b - _INV_PHI * (b - a)
    e = a + _INV_PHI * (b - a)
    fc, fe = t(c), t(e)
    for _ in range(iterations):
        left = fc <= fe  # the minimum is in [a, e]; otherwise in [c, b]
        a, b = np.where(left, a, c), np.where(left, e, b)
        c, e = np.where(left, b - _INV_PHI * (b - a), e), np.where(left, c, a + _INV_PHI * (b - a))
        new = t(np.where(left, c, e))  # one new evaluation per candidate and coordinate
        fc, fe = np.where(left, new, fe), np.where(left, fc, new)
    x_cand = np.where(fc <= fe, c, e)
    f_cand = np.minimum(fc, fe)
    # keep a grid point where it is better (guards against a non-unimodal bracket); unused
    # candidate slots (fewer local minima than `candidates`) have best_val = inf and lose
    x_grid = lo + grid[best_idx] * (hi - lo)
    x_cand = np.where(f_cand <= best_val, x_cand, x_grid)
    f_cand = np.where(np.isfinite(best_val), np.minimum(f_cand, best_val), np.inf)
    winner = np.argmin(f_cand, axis=0)
    x_star = x_cand[winner, cols]
    return float(np.sum(t(x_star[None, :]))), x_star
