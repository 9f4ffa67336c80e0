"""The shared observations view (``ntkbo.algorithms.observations``) against plain numpy, and the
shared acquisition-option check (``ntkbo.validation.check_acquisition_options``)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from ntkbo import data as D
from ntkbo import optimize
from ntkbo.validation import check_acquisition_options

OBS = importlib.import_module("ntkbo.algorithms.observations")
GP_BO = importlib.import_module("ntkbo.algorithms.gp_bo")


def naive_best_points(z, ys, mask, k):
    """A numpy loop: walk the rows in increasing ``ys`` (stable argsort), keep the valid ones."""
    rows = []
    for i in np.argsort(ys, kind="stable"):
        if mask[i] and len(rows) < k:
            rows.append(z[i])
    k = min(k, z.shape[0])
    while len(rows) < k:
        rows.append(np.full(z.shape[1], np.nan))
    return np.stack(rows)


@pytest.mark.parametrize("n_valid", [0, 2, 7, 12])
@pytest.mark.parametrize("k", [1, 4, 20])
def test_best_points_matches_a_numpy_loop(n_valid, k):
    rng = np.random.default_rng(10 * n_valid + k)
    C, d = 12, 3
    z = rng.uniform(size=(C, d))
    ys = rng.permutation(C).astype(float) + rng.uniform(0, 0.5, C)  # distinct: no ties
    mask = np.zeros(C, bool)
    mask[rng.choice(C, n_valid, replace=False)] = True  # any valid set, not only a prefix
    got = np.asarray(jax.jit(OBS.best_points, static_argnums=3)(z, ys, mask, k))
    want = naive_best_points(z, ys, mask, k)
    assert got.shape == (min(k, C), d)
    # Exact: best_points only selects rows, it does no arithmetic on them.
    np.testing.assert_array_equal(got, want)
    # Fewer valid rows than k: exactly the missing rows are NaN (the optimiser ignores them).
    assert np.isnan(got).all(axis=1).sum() == max(0, min(k, C) - n_valid)


def test_best_points_invalid_rows_are_never_chosen_even_if_smallest():
    z = np.arange(8.0).reshape(4, 2)
    ys = np.array([5.0, -100.0, 1.0, -200.0])  # the two smallest values are padding
    mask = np.array([True, False, True, False])
    got = np.asarray(OBS.best_points(z, ys, mask, 3))
    # Independent: by hand, rows 2 (y=1) then 0 (y=5), then one NaN row.
    np.testing.assert_array_equal(got[:2], z[[2, 0]])
    assert np.isnan(got[2]).all()


def test_unit_view_matches_numpy():
    rng = np.random.default_rng(0)
    lo, hi = np.array([-5.0, 0.0, 2.0]), np.array([10.0, 15.0, 2.5])
    n, C = 5, 8
    x = lo + (hi - lo) * rng.uniform(size=(n, 3))
    y = rng.normal(3.0, 2.0, n)
    bounds = jnp.asarray(np.stack([lo, hi]))
    data = D.append(D.empty(C, 3, jnp.float64), x, y)
    view = jax.jit(OBS.unit_view)(data, bounds)

    mask = np.arange(C) < n
    z = np.zeros((C, 3))
    z[:n] = (x - lo) / (hi - lo)
    ys = np.zeros(C)
    ys[:n] = (y - y.mean()) / y.std(ddof=1)
    np.testing.assert_array_equal(view.mask, mask)
    # float64, a handful of roundings on O(1) numbers: 1e-12 is far above the ~1e-15 error.
    np.testing.assert_allclose(view.z, z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(view.ys, ys, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(view.unit, np.stack([np.zeros(3), np.ones(3)]))
    assert view.unit.dtype == bounds.dtype
    # The padding rows are zero whatever the buffer holds there.
    assert np.all(np.asarray(view.z)[n:] == 0) and np.all(np.asarray(view.ys)[n:] == 0)


def naive_transform(y, method):
    """The output warps written out with numpy/scipy on the valid values only."""
    if method == "log":
        return np.log((y - y.min()) / (y.max() - y.min()) + 0.01)
    # scipy's 1-based average ranks r1: the 0-based mid-rank plus 1/2 is r1 - 1/2.
    return scipy.stats.norm.ppf((scipy.stats.rankdata(y) - 0.5) / len(y))


@pytest.mark.parametrize("method", ["log", "rank"])
def test_transform_outputs_matches_numpy_and_ignores_padding(method):
    rng = np.random.default_rng(3)
    n, C = 9, 13
    y = np.concatenate([rng.lognormal(0.0, 2.0, n - 2), [0.5, 0.5]])  # heavy tail and one tie
    # Padding rows hold values below the valid minimum: they must not enter min, max or ranks.
    y_buf = np.concatenate([y, np.full(C - n, -1e3)])
    mask = np.arange(C) < n
    out = np.asarray(jax.jit(OBS.transform_outputs, static_argnums=2)(
        jnp.asarray(y_buf), jnp.asarray(mask), method))
    # float64 logs and ndtri of O(1) numbers: errors ~1e-15, 1e-12 is a wide margin.
    np.testing.assert_allclose(out[:n], naive_transform(y, method), rtol=0, atol=1e-12)
    assert np.all(out[n:] == 0)
    assert out[n - 1] == out[n - 2]  # a tie stays a tie
    order = np.argsort(y)
    assert np.all(np.diff(out[:n][order]) >= 0)  # increasing in y


def test_transform_outputs_invariances():
    """``log`` is invariant under ``y -> a y + b`` (``a > 0``); ``rank`` under any strictly
    increasing map; ``standardize`` leaves ``y`` unchanged on the valid rows."""
    rng = np.random.default_rng(4)
    y = jnp.asarray(rng.normal(size=10))
    mask = jnp.arange(10) < 8
    t = OBS.transform_outputs
    np.testing.assert_allclose(t(3.0 * y - 7.0, mask, "log"), t(y, mask, "log"), atol=1e-12)
    np.testing.assert_allclose(t(jnp.exp(2.0 * y), mask, "rank"), t(y, mask, "rank"),
                               atol=1e-12)
    np.testing.assert_array_equal(t(y, mask, "standardize"), jnp.where(mask, y, 0.0))
    # A constant sample: every value is the minimum, log c; no division by zero.
    np.testing.assert_allclose(t(jnp.ones(10), mask, "log")[:8], np.log(OBS.LOG_OFFSET))
    with pytest.raises(ValueError, match="y_transform"):
        t(y, mask, "box-cox")


def test_unit_view_applies_the_transform_before_standardising():
    rng = np.random.default_rng(5)
    n, C = 6, 8
    x = rng.uniform(size=(n, 2))
    y = rng.lognormal(0.0, 1.5, n)
    data = D.append(D.empty(C, 2, jnp.float64), x, y)
    view = OBS.unit_view(data, OBS.unit_box(2, jnp.float64), "log")
    w = naive_transform(y, "log")
    # As test_unit_view_matches_numpy: O(1) numbers in float64.
    np.testing.assert_allclose(np.asarray(view.ys)[:n], (w - w.mean()) / w.std(ddof=1),
                               rtol=0, atol=1e-12)


def test_unit_box_keeps_the_bounds_dtype():
    box = OBS.unit_view(D.empty(4, 2, jnp.float32), jnp.array([[0.0, 1.0], [2.0, 3.0]],
                                                                 jnp.float32)).unit
    assert box.dtype == jnp.float32
    np.testing.assert_array_equal(box, [[0.0, 0.0], [1.0, 1.0]])


def test_to_sphere_gives_unit_norm_rows_and_the_centre_is_the_pole():
    rng = np.random.default_rng(1)
    z = np.concatenate([rng.uniform(size=(50, 4)), np.zeros((1, 4)), np.ones((1, 4))])
    u = np.asarray(OBS.to_sphere(z))
    assert u.shape == (52, 5)
    # float64 division by a computed norm: rows have norm 1 to a few ulps.
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=0, atol=1e-14)
    # Closed form: u = (2z - 1, 1) / |(2z - 1, 1)|; the box centre maps to the pole e_{d+1}.
    v = np.concatenate([2 * z - 1, np.ones((52, 1))], axis=1)
    np.testing.assert_allclose(u, v / np.linalg.norm(v, axis=1, keepdims=True), atol=1e-14)
    np.testing.assert_allclose(OBS.to_sphere(np.full((1, 4), 0.5)), [[0, 0, 0, 0, 1.0]],
                               atol=1e-15)


def test_from_unit_inverts_to_unit_and_gp_bo_reexports():
    bounds = jnp.array([[-2.0, 0.0], [2.0, 3.0]])
    x = jnp.array([[-2.0, 0.0], [0.3, 2.9], [2.0, 3.0]])
    # float64 round trip of an affine map on O(1) numbers: error ~1e-16.
    np.testing.assert_allclose(OBS.from_unit(OBS.to_unit(x, bounds), bounds), x, atol=1e-14)
    for name in ("to_unit", "from_unit", "to_sphere", "standardize"):
        assert getattr(GP_BO, name) is getattr(OBS, name)


@pytest.mark.parametrize("args, match", [
    ((0, 1, 0, "pgd"), r"^num_candidates must be an int >= 1, got 0"),
    ((4, 0, 0, "pgd"), r"^num_restarts must be an int >= 1, got 0"),
    ((4, 8, 0, "pgd"), r"^num_restarts must be <= num_candidates=4, got 8"),
    ((4, 2, -1, "pgd"), r"^num_acq_steps must be an int >= 0, got -1"),
    ((4, 2, 3, "bfgs"), r"^acq_method must be one of"),
    ((4.0, 2, 3, "pgd"), r"^num_candidates must be an int"),
])
def test_check_acquisition_options_names_the_argument(args, match):
    with pytest.raises(ValueError, match=match):
        check_acquisition_options(*args, optimize.METHODS)


def test_check_acquisition_options_accepts_the_boundary():
    # num_restarts == num_candidates and zero ascent steps are allowed: no exception, None back.
    assert check_acquisition_options(4, 4, 0, optimize.METHODS[0], optimize.METHODS) is None
