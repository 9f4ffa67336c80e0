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


# ---- numerics that stay sighted ------------------------------------------------------------------


def _numpy_standardize(y, mask):
    """The formula in float64 numpy, on ``y / max|y|`` so that it cannot over- or underflow."""
    v = np.asarray(y, np.float64)[mask]
    a = np.abs(v).max()
    u = v / a
    return (u - u.mean()) / u.std(ddof=1), u.mean() * a, u.std(ddof=1) * a


@pytest.mark.parametrize("scale", [1e20, 1e-30, 3e37, 1.0])
def test_standardize_is_safe_for_any_finite_float32(scale):
    """In float32, ``|y| ~ 1e20`` squared overflows (the plain formula gave inf variance, ys = 0)
    and ``1e-30`` squared underflows (std 1: ys ~ 1e-30, a blind model). Against float64 numpy;
    tolerance: a few float32 ulps (rtol 1e-5). Also a failed (NaN) row and padding stay out.
    Catches: removing the rescaled path (either extreme), or letting the NaN row into the sums."""
    base = np.array([1.0, 2.0, 3.0, 5.0, -4.0, np.nan, 0.0])
    mask = np.array([1, 1, 1, 1, 1, 0, 0], bool)  # a failed row (NaN) and a padding row
    y = jnp.asarray(base * scale, jnp.float32)
    ys, mean, std = OBS.standardize(y, jnp.asarray(mask))
    ref, ref_mean, ref_std = _numpy_standardize(base * scale, mask)
    assert ys.dtype == jnp.float32 and np.all(np.isfinite(ys))
    np.testing.assert_allclose(np.asarray(ys)[mask], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(ys)[~mask], 0.0)
    np.testing.assert_allclose(float(mean), ref_mean, rtol=1e-5)
    np.testing.assert_allclose(float(std), ref_std, rtol=1e-5)


def test_standardize_plain_path_is_unchanged_in_float64():
    """Ordinary data takes the plain formula bit for bit (the pinned statistical cells depend on it).
    Catches: routing every input through the rescaled path (changes the last bits)."""
    rng = np.random.default_rng(0)
    y = jnp.asarray(rng.normal(3.0, 7.0, 16))
    mask = jnp.arange(16) < 11
    n = 11
    mean = jnp.sum(jnp.where(mask, y, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(mask, (y - mean) ** 2, 0.0)) / (n - 1))
    ys, m, s = OBS.standardize(y, mask)
    np.testing.assert_array_equal(ys, jnp.where(mask, (y - mean) / std, 0.0))
    assert float(m) == float(mean) and float(s) == float(std)


def test_log_transform_survives_a_range_wider_than_float32():
    """``hi - lo`` overflows to inf for values near +-3e38: the plain ratio was 0 everywhere (all
    rows equal after the warp). Catches: removing the halves path."""
    y = jnp.asarray([-3e38, 0.0, 3e38, 1e38], jnp.float32)
    mask = jnp.ones(4, bool)
    w = np.asarray(OBS.transform_outputs(y, mask, "log"))
    assert np.all(np.isfinite(w)) and np.all(np.diff(w[:3]) > 0)
    ref = np.log((np.array([-3e38, 0.0, 3e38, 1e38]) + 3e38) / 6e38 + OBS.LOG_OFFSET)
    np.testing.assert_allclose(w, ref, rtol=1e-5)


def _rbf_cov(n, dtype):
    """The covariance of a smooth GP at ``n`` close points in 2-D: numerically rank-deficient."""
    x = jnp.asarray(np.random.default_rng(1).uniform(size=(n, 2)), dtype)
    d2 = jnp.sum((x[:, None] - x[None]) ** 2, -1)
    return jnp.exp(-0.5 * d2 / 0.3**2)


def test_joint_draws_over_1000_candidates_never_nan_in_float32():
    """The former gp(acquisition="ts") failure: the jittered Cholesky of the joint covariance
    at ~1000 candidates fails in float32 (checked), every draw was NaN and argmax picked candidate 0.
    Now the jitter grows and the retries are counted. The draws have the right mean and covariance:
    over 400 draws the sample mean is within 5 standard errors of ``mu`` at every candidate.
    Catches: going back to a single factorisation (NaN draws) or not counting the retries."""
    from ntkbo import acquisition as acq

    cov = _rbf_cov(1024, jnp.float32)
    mu = jnp.linspace(-1.0, 1.0, 1024, dtype=jnp.float32)
    eye = jnp.eye(1024, dtype=jnp.float32)
    assert not np.all(np.isfinite(jnp.linalg.cholesky(cov + 1e-6 * eye)))  # the failing input
    draws, retries = jax.jit(acq.joint_normal_draws, static_argnums=3)(
        jax.random.PRNGKey(0), mu, cov, 400)
    assert draws.dtype == jnp.float32 and np.all(np.isfinite(draws))
    assert 0 < int(retries) <= acq.JOINT_MAX_RETRIES
    se = np.sqrt(np.diag(np.asarray(cov, np.float64)) / 400)
    assert np.all(np.abs(np.asarray(draws).mean(0) - np.asarray(mu)) < 5 * se + 1e-3)


def test_joint_draws_equal_gp_sample_gaussian_when_the_factor_succeeds():
    """No retry, no change: the draws are ``ntkbo.gp.sample_gaussian``'s bit for bit (the pinned
    statistical cells of GP-TS depend on it). Catches: any change to the first factorisation."""
    from ntkbo import acquisition as acq
    from ntkbo import gp as G

    cov = _rbf_cov(40, jnp.float64) + 0.1 * jnp.eye(40)
    mu = jnp.arange(40.0)
    key = jax.random.PRNGKey(3)
    draws, retries = acq.joint_normal_draws(key, mu, cov, num_samples=3)
    assert int(retries) == 0
    np.testing.assert_array_equal(draws, G.sample_gaussian(key, mu, cov, num_samples=3))


def test_joint_draws_fall_back_to_marginals_and_never_return_nan():
    """A covariance no jitter can fix (NaN entries off the diagonal): the marginal fallback, counted
    as ``max_retries + 1``; a NaN mean gives +inf, not NaN (an argmin never picks it)."""
    from ntkbo import acquisition as acq

    cov = jnp.eye(4).at[0, 1].set(jnp.nan)
    mu = jnp.array([0.0, 1.0, jnp.nan, 3.0])
    draws, retries = acq.joint_normal_draws(jax.random.PRNGKey(0), mu, cov, num_samples=2)
    assert int(retries) == acq.JOINT_MAX_RETRIES + 1
    assert not np.any(np.isnan(draws)) and np.all(draws[:, 2] == np.inf)


def test_gp_thompson_sampling_in_float32_is_sighted():
    """End to end at the failing input: ``gp(acquisition="ts")`` in float32 with 1024 candidates.
    Every round's acquisition value is finite (it was NaN in every round) and the retries are
    reported in ``info``. Catches: gp_bo not using the safe draws, or dropping ``ts_retries``."""
    with jax.enable_x64(False):
        algo = GP_BO.gp(acquisition="ts", fit=dict(enabled=False),
                        search=dict(num_ts_candidates=1024))
        p = importlib.import_module("ntkbo").benchmarks.get("branin")
        r = importlib.import_module("ntkbo").minimize(algo, p, 8, jax.random.PRNGKey(0), n_init=5)
    assert r.x.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(r.info.acq_value)))
    assert np.all(np.asarray(r.info.ts_retries) >= 0)


def test_bayesian_linear_regression_is_finite_in_float32_on_degenerate_features():
    """neural_linear's evidence fixed point divided by ``max(., 1e-300)``, which is 0 in float32:
    zero features (or all-equal targets) gave 0/0 = NaN and NaN Thompson draws. Catches: a floor
    that underflows in float32."""
    from ntkbo.algorithms.neural_linear import blr_posterior

    mask = jnp.arange(8) < 6
    for phi, y in [(jnp.zeros((8, 5), jnp.float32), jnp.zeros(8, jnp.float32)),
                   (jnp.ones((8, 5), jnp.float32), jnp.zeros(8, jnp.float32))]:
        post = blr_posterior(phi, y, mask)
        assert post.mean.dtype == jnp.float32
        assert np.all(np.isfinite(post.mean)) and np.isfinite(post.alpha) and np.isfinite(post.beta)
