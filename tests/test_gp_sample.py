"""The STO-BNTS synthetic objective: a fixed SE-kernel GP sample path on a 1-D grid.

References: the SE kernel's closed form (a Monte Carlo estimate of the sample paths' covariance over
many seeds), numpy's ``interp`` and a brute-force minimum on a fine grid.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo import benchmarks as B
from ntkbo.benchmarks import gp_sample as G


def test_paths_have_the_se_covariance():
    """Catches a wrong length scale (mutation: ``-0.5`` -> ``-1.0`` in the exponent, i.e.
    ``l -> l / sqrt(2)``) or a factor that is not a square root of K, twice:
    (1) the factor's ``A A^T`` equals the closed-form kernel matrix (float64 eigendecomposition of
    a 1000 x 1000 PSD matrix: errors ~1e-13; 1e-9 leaves room, the mutation moves entries by 0.2);
    (2) over 1000 seeds the empirical covariance at lags 0.1 and 0.2 matches exp(-d^2 / (2 l^2))
    (standard error sqrt((1 + rho^2) / 1000) <= 0.037: tolerance 0.15 is 4 se; the mutation moves
    rho at lag 0.1 from 0.61 to 0.37)."""
    grid = np.linspace(0, 1, 1000)
    a = G._factor(1000, G.LENGTHSCALE)
    k = np.exp(-0.5 * ((grid[:, None] - grid[None, :]) / G.LENGTHSCALE) ** 2)
    np.testing.assert_allclose(a @ a.T, k, rtol=0, atol=1e-9)
    paths = np.stack([G.grid_values(s, 1000) for s in range(1000)])
    i = 300
    for lag in (0, 100, 200):
        emp = np.mean(paths[:, i] * paths[:, i + lag])
        rho = np.exp(-0.5 * ((grid[i + lag] - grid[i]) / G.LENGTHSCALE) ** 2)
        assert abs(emp - rho) < 0.15, (lag, emp, rho)


def test_problem_interpolates_and_knows_its_minimum():
    """Catches an interpolant on the wrong grid (e.g. ``n + 1`` points) and a wrong optimum: the
    problem's values equal numpy's interp of the grid values (float64, same formula: 1e-12), and
    its optimum equals a brute-force minimum over 20,001 points, which contains every grid point
    (1e-12: the interpolant's minimum is at a grid point)."""
    p = B.get("gp_sample_1d")
    assert p.dim == 1
    values = G.grid_values(0)
    grid = np.linspace(0, 1, 1000)
    x = np.random.default_rng(0).uniform(size=(64, 1))
    np.testing.assert_allclose(np.asarray(p.fn_batch(jnp.asarray(x))),
                               np.interp(x[:, 0], grid, values), rtol=0, atol=1e-12)
    fine = np.union1d(np.linspace(0, 1, 20001), grid)
    assert p.optimum == pytest.approx(np.interp(fine, grid, values).min(), abs=1e-12)
    np.testing.assert_allclose(np.asarray(p.fn_batch(p.optimizer)), p.optimum, atol=1e-12)
    # a sub-box whose ends are not grid points: the minimum may sit at an end
    q = B.get("gp_sample_1d", bounds=(0.40005, 0.5))
    sub = fine[(fine >= 0.40005) & (fine <= 0.5)]
    sub = np.concatenate([sub, [0.40005]])
    assert q.optimum == pytest.approx(np.interp(sub, grid, values).min(), abs=1e-12)


def test_same_seed_same_function_and_jit():
    """Catches a draw that depends on call order: two problems from ``get`` are equal and hash
    equal (one compilation), and the jitted value equals the eager one bit for bit."""
    p, q = B.get("gp_sample_1d"), B.get("gp_sample_1d")
    assert p.fn == q.fn and hash(p.fn) == hash(q.fn)
    x = jnp.array([0.123])
    assert float(jax.jit(lambda v: p.fn(v))(x)) == float(p.fn(x))
