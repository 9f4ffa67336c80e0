"""The numeric cores of the theory checks ``pinn_gp_sample`` and ``neural_cbo_coverage`` against
independent references (numpy closed forms, gradient descent on the stated loss). That each passes
at smoke scale without a fault and fails with each fault of its ``DETECTS["smoke"]`` is tested with
every other check in ``tests/test_theory_checks.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from theory_checks import pinn_gp_sample as PGS

KEY = jax.random.PRNGKey(0)

pytestmark = pytest.mark.compile_bound


# -- pinn_gp_sample ------------------------------------------------------------------------------


def test_pinn_sample_is_the_minimiser_of_the_stated_loss():
    """``sample`` = ``nu J_t theta*`` with ``theta*`` the minimiser of the module docstring's loss
    ``sum (y + nu sqrt(lam) eps - nu J theta)^2 / lam + nu^2 |theta - theta_0|^2``, solved here by
    numpy's least squares on the stacked system and by gradient descent.
    Mutations caught: ``t = targets + ...`` without ``/ nu`` (mean off by nu); the perturbation
    without ``sqrt(noise)``; ``j_test @ theta0`` dropped (the prior draw lost)."""
    rng = np.random.default_rng(0)
    n, p, n_t, nu = 5, 12, 3, 2.0
    j, j_t = rng.normal(size=(n, p)), rng.normal(size=(n_t, p))
    theta0, targets, eps = rng.normal(size=p), rng.normal(size=n), rng.normal(size=n)
    noise = np.array([0.1, 0.1, 0.1, 0.01, 0.01])
    got = np.asarray(PGS.sample(jnp.asarray(j), jnp.asarray(j_t), jnp.asarray(theta0),
                                jnp.asarray(noise), jnp.asarray(targets), jnp.asarray(eps), nu))
    # loss = |A theta - b|^2 with A = [nu J / sqrt(lam); nu I], b = [(y + nu sqrt(lam) eps) /
    # sqrt(lam); nu theta0]
    a = np.concatenate([nu * j / np.sqrt(noise)[:, None], nu * np.eye(p)])
    b = np.concatenate([(targets + nu * np.sqrt(noise) * eps) / np.sqrt(noise), nu * theta0])
    theta = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(got, nu * j_t @ theta, rtol=1e-10)  # float64 solves, kappa ~ 1e3
    # gradient descent on the same loss from theta0 converges to it (step 1 / L, L = |A|_2^2)
    th, step = theta0.copy(), 1.0 / np.linalg.norm(a, 2) ** 2
    for _ in range(20000):
        th -= step * a.T @ (a @ th - b)
    np.testing.assert_allclose(nu * j_t @ th, got, rtol=1e-6)  # GD stopped at 20000 steps


def test_pinn_posterior_equals_the_feature_form():
    """The library side of the exact part (``pinn_kernels`` of the empirical NTK, ``joint_fit``,
    the covariance assembled from its factor) against the feature-space posterior of Lemma 5.3.4
    written in numpy: ``mu = Phi_t xi^T (xi xi^T + Lambda)^-1 [y; u]``, ``Sigma = Phi_t Phi_t^T -
    Phi_t xi^T (xi xi^T + Lambda)^-1 xi Phi_t^T``, ``xi = [Phi; Omega]``. Mutations caught: the
    noises swapped in ``posterior``'s ``joint_fit`` call; the cross block ``k_ur`` dropped from the
    assembled covariance."""
    from ntkbo.kernels import mlp
    from jax.flatten_util import ravel_pytree

    s = dict(PGS.SCALES["smoke"], width_exact=8, n=4, num_residuals=3, n_test=2)
    x, y, z, u, xt = PGS._problem(jax.random.PRNGKey(3), s)
    init_fn, apply_fn, _ = mlp(s["depth"], 8, s["activation"], W_std=s["W_std"], b_std=s["b_std"])
    params = init_fn(jax.random.PRNGKey(4), (-1, 2))[1]
    j_train, j_test = (np.asarray(a) for a in PGS.features(apply_fn, params, x, z, xt))
    g = lambda a: ravel_pytree(jax.grad(lambda q: apply_fn(q, a[None, :])[0, 0])(params))[0]  # noqa: E731,E501
    kernel = lambda a, b: jax.vmap(lambda p: jax.vmap(lambda q: g(p) @ g(q))(b))(a)  # noqa: E731
    mu, cov, var = PGS.posterior(kernel, s, x, y, z, u, xt)
    lam = np.concatenate([np.full(4, s["lam1"]), np.full(3, s["lam2"])])
    a = j_train @ j_train.T + np.diag(lam)
    cross = j_test @ j_train.T
    want_mu = cross @ np.linalg.solve(a, np.concatenate([y, u]))
    want_cov = j_test @ j_test.T - cross @ np.linalg.solve(a, cross.T)
    # the library adds a relative jitter 1e-10-ish to the Cholesky; K entries are O(1)-O(1e2)
    np.testing.assert_allclose(mu, want_mu, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cov, want_cov, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var, np.diag(want_cov), rtol=1e-6, atol=1e-8)


def test_pinn_far_variance_ratio_and_gaussian_rows():
    """``far_variance_ratio`` is numpy's pooled ``var(ddof=1) / var`` and its SE is the standard
    error of a mean over members (Monte Carlo: over 400 repetitions of Gaussian members its z has
    sd within 15% of 1); ``gaussian_rows``' covariance scale of draws of ``N(0, C)`` is ``tr(C^-1
    S)/n``. Mutations caught: ``ddof`` dropped (v off by M/(M-1): the first assertion); SE without
    ``sqrt(M)`` (z sd far from 1)."""
    rng = np.random.default_rng(1)
    samples = rng.normal(size=(200, 3)) * np.array([1.0, 2.0, 3.0])
    var = np.array([1.0, 4.0, 9.0])
    v, _ = PGS.far_variance_ratio(samples, var)
    np.testing.assert_allclose(v, np.mean(samples.var(0, ddof=1) / var), rtol=1e-12)
    zs = []
    for _ in range(400):
        smp = rng.normal(size=(100, 3)) * np.sqrt(var)
        v, se = PGS.far_variance_ratio(smp, var)
        zs.append((v - 1) / se)
    assert 0.85 < np.std(zs) < 1.15  # sd of 400 draws: SE about 0.035
    c = np.array([[2.0, 0.5], [0.5, 1.0]])
    smp = rng.multivariate_normal([0, 0], c, size=500)
    _, _, _, scale = PGS.gaussian_rows(smp, np.zeros(2), c)
    np.testing.assert_allclose(scale, np.trace(np.linalg.solve(c, np.cov(smp, rowvar=False))) / 2,
                               rtol=1e-10)


# -- neural_cbo_coverage -------------------------------------------------------------------------


def test_cbo_bands_against_numpy():
    """``neural_cbo_coverage.bands`` (the library's ``posterior_moments``, ``information_gain``,
    ``beta_theory``, ``lower_confidence_bound`` and standardisation) against the formulas of the
    module docstring written in numpy on the smoke run's first final state: ``sigma^2 = lam g^T
    (lam I + G^T G)^-1 g`` with the gradient features ``g`` at ``W_0``, ``gamma = 1/2 log det(I +
    G G^T / lam)``, ``beta = B + R sqrt(gamma + 2 + 2 log(1/delta))``, ``B = (B0 + |m + shift| /
    b_std) / s``, the mean ``m + s a(x; W_t)``. Mutations caught: ``|mean - shifts|`` in ``B``
    (the constraint's half-width); ``noise`` not divided by ``std`` (``R`` in original units);
    ``information_gain`` of the objective's factor used for both."""
    from ntkbo.kernels import grad_features, mlp
    from theory_checks import neural_cbo_coverage as NCC

    # the smoke run's BO runs (cached by NCC._runs: computed here unless
    # tests/test_theory_checks.py's smoke run of the check came first in this process)
    s = dict(NCC.SCALES["smoke"], fault=None)
    k_fun, _, _ = jax.random.split(KEY, 3)
    _, _, shift = NCC._setup(k_fun, s)
    res = NCC._runs(KEY, s, None)
    state = jax.tree_util.tree_map(lambda v: v[0], res.state)
    zt = jax.random.uniform(jax.random.PRNGKey(5), (7, 2))
    shifts = jnp.asarray([0.0, shift])
    mean, half = (np.asarray(a) for a in NCC.bands(state, zt, s, s["norm"], s["b_std"],
                                                   s["noise"], s["delta"], shifts))
    apply_fn = mlp(s["depth"], s["width"], "relu", W_std=NCC.NB.paper_W_std(3, s["depth"]),
                   b_std=s["b_std"])[1]
    feats = grad_features(apply_fn)
    n = int(state.data.count)
    x = np.asarray(state.data.x[:n])
    ys = np.stack([np.asarray(state.data.y[:n]), np.asarray(state.constraint_data[0].y[:n])])
    lam = s["lam"]
    for a in range(2):
        p0 = jax.tree_util.tree_map(lambda v: v[a], state.params0)
        p = jax.tree_util.tree_map(lambda v: v[a], state.params)
        g = np.asarray(feats(NCC.NB.embed(jnp.asarray(x), "sphere"), p0))
        gt = np.asarray(feats(NCC.NB.embed(zt, "sphere"), p0))
        u = lam * np.eye(g.shape[1]) + g.T @ g
        var = lam * np.einsum("ip,ip->i", gt, np.linalg.solve(u, gt.T).T)
        gamma = 0.5 * np.linalg.slogdet(np.eye(n) + g @ g.T / lam)[1]
        m, sd = ys[a].mean(), ys[a].std(ddof=1)  # ntkbo standardises with the n - 1 std
        B = (s["norm"] + abs(m + float(shifts[a])) / s["b_std"]) / sd
        beta = B + s["noise"] / sd * np.sqrt(gamma + 2 + 2 * np.log(1 / s["delta"]))
        mu = np.asarray(apply_fn(p, NCC.NB.embed(zt, "sphere")))[:, 0]
        # float64; the library's dual form with a 1e-10-ish relative jitter against the primal
        np.testing.assert_allclose(mean[a], m + sd * mu, rtol=1e-8)
        np.testing.assert_allclose(half[a], sd * beta * np.sqrt(var), rtol=1e-5)
