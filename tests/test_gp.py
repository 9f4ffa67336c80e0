"""ntkbo.gp against float64 numpy/scipy references written independently of the library."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from ntkbo import data as D
from ntkbo import gp as _gp


class _Jitted:
    """ntkbo.gp with every function jitted (kernel static): op-by-op dispatch is slow."""

    def __getattr__(self, name):
        fn = getattr(_gp, name)
        if not callable(fn) or name in ("Posterior", "EnsemblePosterior"):
            return fn
        static = {"fit": ("kernel",), "log_marginal_likelihood": ("kernel",),
                  "mean": ("kernel",), "variance": ("kernel",), "covariance": ("kernel",),
                  "predict": ("kernel", "full_cov"), "sample": ("kernel", "num_samples"),
                  "gd_ensemble": ("nngp", "ntk", "get"),
                  "gd_ensemble_predict": ("nngp", "ntk", "get", "compute_cov"),
                  "append": ("kernel", "q"), "cholesky_append": ()}[name]
        return jax.jit(fn, static_argnames=static)


gp = _Jitted()


def rbf(x1, x2, ell=0.7, s2=1.3):
    d2 = jnp.sum((x1[:, None, :] - x2[None, :, :]) ** 2, -1)
    return s2 * jnp.exp(-0.5 * d2 / ell**2)


def rbf_np(x1, x2, ell=0.7, s2=1.3):
    d2 = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    return s2 * np.exp(-0.5 * d2 / ell**2)


def arccos1(x1, x2):
    """A second kernel, of another shape: the order-1 arc-cosine kernel plus a constant."""
    n1 = jnp.linalg.norm(x1, axis=-1)[:, None]
    n2 = jnp.linalg.norm(x2, axis=-1)[None, :]
    c = jnp.clip(x1 @ x2.T / (n1 * n2), -1.0, 1.0)
    th = jnp.arccos(c)
    return 0.5 + n1 * n2 * (jnp.sin(th) + (jnp.pi - th) * c) / jnp.pi


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (9, 3))
    y = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=9)
    xs = rng.uniform(-1, 1, (5, 3))
    return x, y, xs


def buffer(x, y, capacity):
    data = D.empty(capacity, x.shape[1], jnp.float64)
    return D.append(data, jnp.asarray(x), jnp.asarray(y))


def reference(x, y, xs, lam, prior_mean=0.0):
    k = rbf_np(x, x) + lam * np.eye(len(x))
    ks = rbf_np(xs, x)
    kss = rbf_np(xs, xs)
    mu = prior_mean + ks @ scipy.linalg.solve(k, y - prior_mean, assume_a="pos")
    cov = kss - ks @ scipy.linalg.solve(k, ks.T, assume_a="pos")
    lml = scipy.stats.multivariate_normal(np.full(len(x), prior_mean), k).logpdf(y)
    return mu, cov, lml


@pytest.mark.parametrize("capacity", [9, 16, 64])
def test_posterior_matches_scipy_and_ignores_padding(problem, capacity):
    x, y, xs = problem
    lam, m0 = 0.05, 0.3
    mu_ref, cov_ref, lml_ref = reference(x, y, xs, lam, m0)
    data = buffer(x, y, capacity)
    # Relative jitter 1e-10 perturbs the noise by ~1e-10: well inside rtol 1e-8.
    post = gp.fit(rbf, data, lam, prior_mean=m0)
    mu, cov = gp.predict(rbf, post, jnp.asarray(xs), full_cov=True)
    _, var = gp.predict(rbf, post, jnp.asarray(xs))
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(var, np.diag(cov_ref), rtol=1e-7, atol=1e-10)
    lml = gp.log_marginal_likelihood(rbf, data, lam, prior_mean=m0)
    np.testing.assert_allclose(lml, lml_ref, rtol=1e-9)


def test_padding_rows_with_garbage_do_not_matter(problem):
    """Padding rows hold whatever an earlier use left there: results must not depend on them."""
    x, y, xs = problem
    data = buffer(x, y, 16)
    junk = data._replace(x=data.x.at[9:].set(123.0), y=data.y.at[9:].set(-7.0))
    for d in (data, junk):
        post = gp.fit(arccos1, d, 0.01)
        mu, var = gp.predict(arccos1, post, jnp.asarray(xs))
        lml = gp.log_marginal_likelihood(arccos1, d, 0.01)
        if d is data:
            first = (mu, var, lml)
    np.testing.assert_allclose(mu, first[0], rtol=1e-12)
    np.testing.assert_allclose(var, first[1], rtol=1e-12)
    np.testing.assert_allclose(lml, first[2], rtol=1e-12)


def test_empty_buffer_is_the_prior(problem):
    _, _, xs = problem
    post = gp.fit(rbf, D.empty(8, 3, jnp.float64), 0.1, prior_mean=0.5)
    mu, cov = gp.predict(rbf, post, jnp.asarray(xs), full_cov=True)
    np.testing.assert_allclose(mu, 0.5)
    np.testing.assert_allclose(cov, rbf_np(xs, xs), rtol=1e-12)
    assert gp.log_marginal_likelihood(rbf, D.empty(8, 3, jnp.float64), 0.1) == 0.0


def test_jit_vmap_and_grad_of_marginal_likelihood(problem):
    x, y, xs = problem
    data = buffer(x, y, 16)

    def lml(log_ell):
        return gp.log_marginal_likelihood(lambda a, b: rbf(a, b, jnp.exp(log_ell)), data, 0.05)

    g = jax.jit(jax.grad(lml))(jnp.log(0.7))
    eps = 1e-5  # central differences: truncation error O(eps^2) ~ 1e-10, far below rtol 1e-6.
    fd = (lml(jnp.log(0.7) + eps) - lml(jnp.log(0.7) - eps)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    # vmap over several datasets (seeds) at once equals the separate fits.
    ys = jnp.stack([jnp.asarray(y), -jnp.asarray(y)])
    datas = jax.vmap(lambda yy: data._replace(y=data.y.at[:9].set(yy)))(ys)
    mus = jax.vmap(lambda d: gp.mean(rbf, gp.fit(rbf, d, 0.05), jnp.asarray(xs)))(datas)
    np.testing.assert_allclose(mus[1], -mus[0], rtol=1e-10)


def test_joint_samples_monte_carlo_moments(problem):
    x, y, xs = problem
    post = gp.fit(rbf, buffer(x, y, 16), 0.05)
    mu, cov = gp.predict(rbf, post, jnp.asarray(xs), full_cov=True)
    s = gp.sample(jax.random.PRNGKey(1), rbf, post, jnp.asarray(xs), num_samples=40000)
    assert s.shape == (40000, 5)
    # Monte Carlo standard error of a mean is sd/sqrt(n) = sd/200; allow 5 standard errors.
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_array_less(np.abs(s.mean(0) - mu), 5 * sd / 200 + 1e-12)
    # The standard error of a sample covariance entry is <= sqrt(2) s_i s_j / sqrt(n); 5 of them.
    emp = np.cov(np.asarray(s).T)
    tol = 5 * np.sqrt(2) * np.outer(sd, sd) / 200
    np.testing.assert_array_less(np.abs(emp - np.asarray(cov)), tol + 1e-12)


def test_noise_free_interpolation(problem):
    x, y, _ = problem
    post = gp.fit(rbf, buffer(x, y, 16), 0.0, jitter=1e-12)
    np.testing.assert_allclose(gp.mean(rbf, post, jnp.asarray(x)), y, atol=1e-5)
    assert np.all(gp.variance(rbf, post, jnp.asarray(x)) < 1e-5)


# ---- trained infinite ensembles (Lee et al. 2019) ------------------------------------------


def ensemble_reference(k_nngp, k_ntk, y, xs_rows, t, lam):
    """Lee et al. 2019 eqs. (14)-(16) with scipy's matrix exponential, independently of gp.py."""
    x_rows = slice(0, len(y))
    theta = k_ntk[x_rows, x_rows] + lam * np.eye(len(y))
    kdd = k_nngp[x_rows, x_rows]
    th_td = k_ntk[xs_rows, x_rows]
    k_td = k_nngp[xs_rows, x_rows]
    k_tt = k_nngp[xs_rows, xs_rows]
    n = len(y)
    if np.isinf(t):
        a = np.linalg.inv(theta)
    else:
        a = np.linalg.solve(theta, np.eye(n) - scipy.linalg.expm(-theta * t / n))
    mu = th_td @ a @ y
    cov = k_tt + th_td @ a @ kdd @ a @ th_td.T - th_td @ a @ k_td.T - k_td @ a @ th_td.T
    return mu, cov


@pytest.mark.parametrize("t", [0.5, 7.0, np.inf])
@pytest.mark.parametrize("capacity", [9, 32])
def test_gd_ensemble_matches_matrix_exponential(problem, t, capacity):
    x, y, xs = problem
    nngp = lambda a, b: rbf(a, b, 0.9, 1.0)  # noqa: E731  (a stand-in pair of PSD kernels)
    ntk = lambda a, b: rbf(a, b, 0.9, 1.0) + arccos1(a, b)  # noqa: E731
    data = buffer(x, y, capacity)
    allx = np.concatenate([x, xs])
    k_nngp = np.asarray(nngp(jnp.asarray(allx), jnp.asarray(allx)))
    k_ntk = np.asarray(ntk(jnp.asarray(allx), jnp.asarray(allx)))
    mu_ref, cov_ref = ensemble_reference(k_nngp, k_ntk, y, slice(9, 14), t, 1e-3)
    post = gp.gd_ensemble(nngp, ntk, data, lam=1e-3)
    mu, cov = gp.gd_ensemble_predict(nngp, ntk, post, jnp.asarray(xs), t)
    # expm/inv vs eigendecomposition of a matrix with condition number ~1e4: agree to ~1e-9.
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cov, cov_ref, rtol=1e-7, atol=1e-9)


def test_gd_ensemble_limits(problem):
    """t -> 0 gives the prior (untrained networks); nngp mode at t = inf is the Bayesian posterior."""
    x, y, xs = problem
    nngp = lambda a, b: rbf(a, b, 0.9, 1.0)  # noqa: E731
    ntk = lambda a, b: 2.0 * rbf(a, b, 0.6, 1.0)  # noqa: E731
    data = buffer(x, y, 16)
    xs = jnp.asarray(xs)
    post = gp.gd_ensemble(nngp, ntk, data)
    mu0, cov0 = gp.gd_ensemble_predict(nngp, ntk, post, xs, 0.0)
    np.testing.assert_allclose(mu0, 0.0, atol=1e-14)
    np.testing.assert_allclose(cov0, nngp(xs, xs), atol=1e-12)
    post_b = gp.gd_ensemble(nngp, ntk, data, lam=0.05, get="nngp")
    mu_b, cov_b = gp.gd_ensemble_predict(nngp, ntk, post_b, xs, jnp.inf, get="nngp")
    bayes = gp.fit(nngp, data, 0.05, jitter=0.0)
    np.testing.assert_allclose(mu_b, gp.mean(nngp, bayes, xs), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov_b, gp.covariance(nngp, bayes, xs), rtol=1e-8, atol=1e-12)
    # A long finite time converges to t = inf (all eigenvalues of Theta + lam I here exceed 1e-3,
    # so exp(-e t / N) < exp(-1e-3 * 1e7 / 9) is negligible).
    post_n = gp.gd_ensemble(nngp, ntk, data, lam=1e-3)
    far = gp.gd_ensemble_predict(nngp, ntk, post_n, xs, 1e7)
    inf = gp.gd_ensemble_predict(nngp, ntk, post_n, xs, jnp.inf)
    np.testing.assert_allclose(far[0], inf[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(far[1], inf[1], rtol=1e-8, atol=1e-10)


def test_cholesky_append_equals_a_full_refactor():
    """``append`` (rank-q extension of the factor, then ``alpha`` re-solved) against ``fit`` on the
    longer buffer: the factor, ``alpha`` and predictions. Rows appended in two batches (q = 3 then
    q = 1) into a padded buffer, with a failed (NaN) row among the old rows and one among the new
    ones, ``start`` traced (jit). Catches: the solve not masked to the rows before ``start``
    (padding or failed columns in ``L_21``), ``L_22`` not downdated by ``L_21 L_21^T``, the new
    rows written at the wrong offset, a failed new row not turned into an identity row."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (14, 3))
    y = np.sin(3 * x[:, 0]) + x[:, 1] ** 2
    y[4], y[12] = np.nan, np.nan
    lam = 1e-3
    data = buffer(x[:10], y[:10], 16)
    post = gp.fit(rbf, data, lam)
    for q in (3, 1):
        start = data.count
        data = D.append(data, jnp.asarray(x[start:start + q]), jnp.asarray(y[start:start + q]))
        post = gp.append(rbf, post, data, start, q, lam)
        full = gp.fit(rbf, data, lam)
        m = np.asarray(D.mask(data))
        cond = np.linalg.cond(np.asarray(full.chol)[m][:, m]) ** 2  # cond(K + lam I)
        # Both factors are backward stable in float64: they agree to ~eps * cond(K) relative
        # (cond ~1e4 here), and alpha = K^-1 y to ~eps * cond(K) * |alpha|.
        tol = 1e-16 * cond
        assert tol < 1e-9
        np.testing.assert_allclose(post.chol, full.chol, rtol=0, atol=10 * tol)
        np.testing.assert_allclose(post.alpha, full.alpha, rtol=0,
                                   atol=10 * tol * np.abs(full.alpha).max())
        np.testing.assert_array_equal(post.mask, full.mask)
        xs = jnp.asarray(rng.uniform(-1, 1, (5, 3)))
        for a, b in zip(gp.predict(rbf, post, xs), gp.predict(rbf, full, xs)):
            np.testing.assert_allclose(a, b, rtol=0, atol=10 * tol * max(1.0, np.abs(b).max()))
    # The padding rows past the last append stay identity rows of the factor.
    n = int(data.count)
    np.testing.assert_array_equal(np.asarray(post.chol)[n:, :], np.eye(16)[n:, :])


def test_solve_lower_and_cholesky_solve_against_scipy():
    """``solve_lower`` (the factor handed to LAPACK as an upper one, ``ntkbo.gp``) and
    ``cholesky_solve`` against scipy's float64 solves, with one or several right-hand sides, a
    batch of factors under ``vmap``, and ``jax.grad`` through them against ``jax.scipy``'s
    ``solve_triangular``. Catches: ``trans`` flipped (``L^-T b`` for ``L^-1 b``), ``lower``
    left True on the transposed factor (its strict lower part is zero), ``cholesky_solve``
    solving with ``L^-1`` twice."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(2, 6, 6))
    chols = np.linalg.cholesky(a @ np.swapaxes(a, 1, 2) + 6 * np.eye(6))
    b = rng.normal(size=(2, 6, 3))
    # cond(L) ~ 3 here, so float64 solves agree to ~1e-15 relative; 1e-12 leaves room.
    for chol, rhs in zip(chols, b):
        np.testing.assert_allclose(jax.jit(_gp.solve_lower)(chol, rhs),
                                   scipy.linalg.solve_triangular(chol, rhs, lower=True),
                                   rtol=1e-12)
        np.testing.assert_allclose(
            jax.jit(functools.partial(_gp.solve_lower, trans=True))(chol, rhs),
            scipy.linalg.solve_triangular(chol, rhs, lower=True, trans="T"), rtol=1e-12)
        np.testing.assert_allclose(jax.jit(_gp.cholesky_solve)(chol, rhs[:, 0]),
                                   scipy.linalg.cho_solve((chol, True), rhs[:, 0]), rtol=1e-12)
    batched = jax.jit(jax.vmap(_gp.cholesky_solve))(chols, b)
    for i in range(2):
        np.testing.assert_allclose(batched[i], scipy.linalg.cho_solve((chols[i], True), b[i]),
                                   rtol=1e-12)

    def loss(solve, chol, rhs):
        return jnp.sum(jnp.sin(solve(chol, rhs)))

    ref = functools.partial(jax.scipy.linalg.solve_triangular, lower=True)
    for argnum in (0, 1):
        g = jax.grad(loss, argnums=argnum + 1)(_gp.solve_lower, chols[0], b[0])
        g_ref = jax.grad(loss, argnums=argnum + 1)(ref, chols[0], b[0])
        # only the lower triangle of the factor is read, by both
        np.testing.assert_allclose(np.tril(g) if argnum == 0 else g,
                                   np.tril(g_ref) if argnum == 0 else g_ref, rtol=1e-10)


def test_gp_algebra_traces_exact_float32_matmuls():
    # On GPUs float32 matrix products default to TF32, which wrecks a Gram matrix's Cholesky
    # factor; every product traced inside ntkbo.gp (the kernel's included) asks for HIGHEST.
    # Checked on the lowered program, which is the same on every backend. Mutation checked:
    # without the exact_matmuls decorator on fit and predict, the products lower with the
    # default precision and this fails.
    import re

    def kernel(a, b):  # a linear-plus-RBF kernel whose distances come from matrix products
        sq = jnp.sum(a**2, -1)[:, None] + jnp.sum(b**2, -1)[None, :] - 2.0 * a @ b.T
        return a @ b.T + jnp.exp(-0.5 * sq)

    x = jnp.linspace(0.0, 1.0, 12, dtype=jnp.float32).reshape(6, 2)
    data = D.append(D.empty(8, 2, jnp.float32), x, jnp.sin(x[:, 0]))

    def run(data, xs):
        post = _gp.fit(kernel, data, 1e-3)
        return _gp.predict(kernel, post, xs), _gp.log_marginal_likelihood(kernel, data, 1e-3)

    text = jax.jit(run).lower(data, x[:3]).as_text()
    dots = re.findall(r"stablehlo\.dot_general.*", text)
    assert len(dots) >= 4 and all("HIGHEST" in d for d in dots), dots


def test_with_inverse_matches_dense_float64_and_the_solve(problem):
    """``with_inverse`` (the factor's inverse once, then matrix products) against dense float64
    algebra (``np.linalg.inv`` of ``K + lam I``), and against the triangular-solve path for the
    values and the input gradient the acquisition ascent uses, padding included. Mutation
    checked: ``with_inverse`` computing ``chol^-T`` (``solve_lower(..., trans=True)``) fails
    every comparison here."""
    x, y, xs = problem
    lam = 0.05
    data = buffer(x, y, 16)  # 7 padding rows: their inverse rows are identity, cross columns 0
    post = gp.fit(rbf, data, lam)
    post_inv = jax.jit(_gp.with_inverse)(post)
    k_inv = np.linalg.inv(rbf_np(x, x) + lam * np.eye(len(x)))
    ks = rbf_np(xs, x)
    cov_ref = rbf_np(xs, xs) - ks @ k_inv @ ks.T
    # Relative jitter 1e-10 moves the noise by ~1e-10, cond(K + lam I) ~ 1e2: 1e-8 is ample.
    np.testing.assert_allclose(gp.variance(rbf, post_inv, jnp.asarray(xs)), np.diag(cov_ref),
                               rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gp.covariance(rbf, post_inv, jnp.asarray(xs)), cov_ref,
                               rtol=1e-8, atol=1e-10)

    def sd_sum(p, z):
        return jnp.sum(jnp.sqrt(_gp.variance(rbf, p, z)))

    grad = jax.jit(jax.grad(sd_sum, argnums=1))
    # Both are backward-stable solves of a system with cond ~ 1e2 in float64: 1e-11 relative.
    np.testing.assert_allclose(grad(post_inv, jnp.asarray(xs)), grad(post, jnp.asarray(xs)),
                               rtol=1e-11, atol=1e-13)


def test_with_inverse_float32_on_an_ill_conditioned_ntk_gram():
    """float32 posterior variances by ``with_inverse`` and by the solve, each against the dense
    float64 variance (``np.linalg.inv``), on ``ntk_gp``'s NTK (depth 2, ReLU, sphere inputs) at
    512 clustered points with noise ``1e-4`` (condition number ~7e4, ten times ``ntk_gp``'s at
    ``lam = 1e-2``). The float32 algebra runs on a tabulated kernel (the gram computed once in
    float64, rounded to float32), since the NTK itself would promote to float64 under the tests'
    x64 flag. Both errors are rounding of size ``cond * eps32`` times the variances; the inverse
    must stay within twice the solve's. Mutation checked: ``with_inverse`` computing the inverse
    through the Gram matrix, ``chol^T (chol chol^T)^-1`` (condition number squared), is off by
    orders of magnitude and fails."""
    from ntkbo.algorithms.observations import to_sphere
    from ntkbo.kernels import as_kernel, mlp

    ntk = as_kernel(mlp(2, 1, "relu", W_std=2.0**0.5, b_std=0.1)[2], "ntk")
    n, m, lam = 512, 256, 1e-4
    rng = np.random.default_rng(3)
    pts = np.clip(0.5 + 0.05 * rng.standard_normal((n + m, 5)), 0.0, 1.0)
    pts[n:] = np.clip(0.5 + 0.075 * rng.standard_normal((m, 5)), 0.0, 1.0)
    z = jnp.asarray(to_sphere(jnp.asarray(pts)))
    k64 = np.asarray(jax.jit(ntk)(z, z))
    y = np.sin(3 * pts[:n, 0])
    noise = lam + _gp.default_jitter(jnp.float32) * np.mean(np.diag(k64)[:n])  # fit's jitter
    ks = k64[n:, :n]
    var_ref = np.diag(k64)[n:] - np.einsum(
        "ij,ij->i", ks @ np.linalg.inv(k64[:n, :n] + noise * np.eye(n)), ks)
    k32 = jnp.asarray(k64, jnp.float32)

    def table(a, b):  # inputs are row indices into the tabulated gram
        return k32[a[:, 0].astype(jnp.int32)][:, b[:, 0].astype(jnp.int32)]

    idx = jnp.arange(n + m, dtype=jnp.float32)[:, None]

    @functools.partial(jax.jit, static_argnums=0)
    def var(inverse):
        data = D.append(D.empty(n, 1, jnp.float32), idx[:n], jnp.asarray(y, jnp.float32))
        post = _gp.fit(table, data, lam)
        post = _gp.with_inverse(post) if inverse else post
        return _gp.variance(table, post, idx[n:])

    assert var(True).dtype == jnp.float32
    err_solve = np.max(np.abs(np.asarray(var(False), np.float64) - var_ref))
    err_inv = np.max(np.abs(np.asarray(var(True), np.float64) - var_ref))
    assert err_inv <= 2 * err_solve, (err_inv, err_solve)


def test_marginal_likelihood_gradient_against_dense_autodiff(problem):
    """``log_marginal_likelihood``'s gradient (its own rule in the Gram matrix, ``(alpha alpha^T -
    K^-1) / 2``) in every argument it is used with by a fit (lengthscale, signal, noise, prior
    mean), on a padded buffer with junk in the padding, equals reverse mode through a dense
    ``slogdet`` and ``solve`` of the valid rows alone (no Cholesky, no padding), float64.
    Mutation checked: dropping ``- a_inv`` (the log-determinant's term) from
    ``_gaussian_log_density_bwd`` fails it, as does ``0.5`` -> ``1.0`` there."""
    x, y, _ = problem
    data = buffer(x, y, 16)
    data = data._replace(x=data.x.at[9:].set(3.0), y=data.y.at[9:].set(-5.0))

    def ours(t):
        k = lambda a, b: rbf(a, b, jnp.exp(t[0]), jnp.exp(t[1]))  # noqa: E731
        return _gp.log_marginal_likelihood(k, data, jnp.exp(t[2]), prior_mean=t[3], jitter=0.0)

    def dense(t):
        xx, r = jnp.asarray(x), jnp.asarray(y) - t[3]
        a = rbf(xx, xx, jnp.exp(t[0]), jnp.exp(t[1])) + jnp.exp(t[2]) * jnp.eye(len(y))
        return (-0.5 * r @ jnp.linalg.solve(a, r) - 0.5 * jnp.linalg.slogdet(a)[1]
                - 0.5 * len(y) * jnp.log(2 * jnp.pi))

    t = jnp.asarray([jnp.log(0.6), jnp.log(1.4), jnp.log(0.03), 0.2])
    v, g = jax.jit(jax.value_and_grad(ours))(t)
    v_ref, g_ref = jax.value_and_grad(dense)(t)
    np.testing.assert_allclose(v, v_ref, rtol=1e-10)
    np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-10)
    # batched (two parameter vectors under vmap) equals one at a time
    ts = jnp.stack([t, t.at[0].add(0.3)])
    gs = jax.jit(jax.vmap(jax.grad(ours)))(ts)
    np.testing.assert_allclose(gs[1], jax.grad(dense)(ts[1]), rtol=1e-8, atol=1e-10)
