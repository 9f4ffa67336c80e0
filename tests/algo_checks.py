"""Checks shared by the algorithm test files (imported as ``algo_checks``: ``tests/`` is on
``sys.path`` under pytest, see ``nt_shim.py``)."""

import jax
import numpy as np

import ntkbo


def vmapped_twice(algo, problem, budget: int, n_init: int = 3, seeds: int = 2):
    """The same jitted, vmapped ``minimize`` over ``seeds`` keys run twice: ``(res, again)``."""
    run = jax.jit(jax.vmap(lambda k: ntkbo.minimize(algo, problem, budget, k, n_init=n_init)))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    return run(keys), run(keys)


def assert_in_box_and_deterministic(res, again, bounds, budget: int) -> None:
    """Every point is in the box, no point twice (``assert_distinct``), the two runs are
    bit-identical leaf by leaf, and the seeds differ (so the keys reach the algorithm)."""
    b = np.asarray(bounds)
    x = np.asarray(res.x)
    assert x.shape == (2, budget, b.shape[1])
    assert np.all((x >= b[0]) & (x <= b[1]))
    assert_distinct(x, b)
    for a, c in zip(jax.tree_util.tree_leaves(res), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    assert not np.array_equal(x[0], x[1])


def assert_distinct(x, bounds) -> None:
    """No two rows of ``x`` ``(..., n, d)`` (one run per leading index) lie within
    ``ntkbo.optimize.MIN_DISTANCE`` of each other in every coordinate, in units of the box's width:
    no point was evaluated twice."""
    b = np.asarray(bounds, float)
    u = (np.asarray(x, float) - b[0]) / np.where(b[1] > b[0], b[1] - b[0], 1.0)
    u = u.reshape(-1, *u.shape[-2:])
    for run in u:
        gap = np.where(np.eye(len(run), dtype=bool), np.inf,
                       np.max(np.abs(run[:, None] - run[None]), axis=-1))
        i, j = np.unravel_index(np.argmin(gap), gap.shape)
        assert gap[i, j] > ntkbo.optimize.MIN_DISTANCE, (
            f"evaluations {min(i, j)} and {max(i, j)} are one point: {run[i]} and {run[j]}")

