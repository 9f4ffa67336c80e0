"""Neural Greedy (SimpleSMB / PosteriorSMB): the GP correspondences of Props. 1-2 at large width,
the building blocks, and the algorithm through ``ntkbo.minimize``."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from algo_checks import assert_in_box_and_deterministic, vmapped_twice
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.kernels import as_kernel

NG = importlib.import_module("ntkbo.algorithms.neural_greedy")

# A fixed small data set in R^2 and test points near and far from it.
X_TRAIN = np.array([[-1.0, 0.5], [-0.3, -0.8], [0.4, 0.2], [1.1, -0.4]])
Y_TRAIN = np.sin(2.0 * X_TRAIN[:, 0]) + 0.5 * X_TRAIN[:, 1]
X_TEST = np.array([[-0.7, 0.0], [0.0, 0.0], [0.8, 0.8], [1.5, -1.0], [-1.6, 1.4]])
SIGMA, NU = 0.3, 1.5  # sigma^2 = 0.09: target noise and regulariser both on; nu != 1 is checked
GAMMA = 1.0
WIDTH, MEMBERS = 2048, 300


def _ensemble(posterior):
    apply_fn, prior_var, kernel_fn = NG.smb_network(2, WIDTH, 1, "erf", GAMMA)
    build = NG.posterior_smb if posterior else NG.simple_smb
    x, y, xt = (jnp.asarray(a) for a in (X_TRAIN, Y_TRAIN, X_TEST))

    def one(key):
        fn, (l0, l1, ok) = build(key, apply_fn, prior_var, 1, x, y, sigma=SIGMA, nu=NU,
                                 optimizer="levenberg_marquardt", num_steps=3)
        return fn(xt), ok

    keys = jax.random.split(jax.random.PRNGKey(7), MEMBERS)
    outs, ok = jax.jit(jax.vmap(one))(keys)
    assert bool(jnp.all(ok))
    return np.asarray(outs), kernel_fn


def _kernels(kernel_fn, a, b):
    k = kernel_fn(jnp.asarray(a), jnp.asarray(b), ("nngp", "ntk"))
    return np.asarray(k.nngp), np.asarray(k.ntk)


def _check_moments(outs, mu, var):
    """Monte Carlo check of an ensemble's mean and variance per test point.

    Tolerances: the mean's standard error is ``sqrt(var / M)`` and the variance's relative standard
    error ``sqrt(2 / M)`` (~0.08 for M = 300, Gaussian outputs); we allow 4 standard errors plus a
    finite-width allowance (0.05 absolute on the mean, 10% on the variance): at width 2048 the
    empirical NTK and the NNGP deviate from their limits by O(1/sqrt(width)) ~ 2% and training is
    not exactly lazy (three Levenberg-Marquardt steps on the nonlinear network).
    """
    m = outs.shape[0]
    mean_hat, var_hat = outs.mean(0), outs.var(0, ddof=1)
    se_mean = np.sqrt(var / m)
    assert np.all(np.abs(mean_hat - mu) <= 4 * se_mean + 0.05), (mean_hat, mu, se_mean)
    rel = np.abs(var_hat / var - 1.0)
    assert np.all(rel <= 4 * np.sqrt(2.0 / m) + 0.10), (var_hat, var)
    return np.max(np.abs(mean_hat - mu) / se_mean), np.max(rel)


@pytest.mark.slow
def test_posterior_smb_is_ntk_gp_posterior_sample():
    # Prop. 2: nu (f + delta) ~ GP posterior with prior GP(0, nu^2 Theta) and noise nu^2 sigma^2:
    # mean Theta_xX (Theta + sigma^2 I)^-1 Y, variance nu^2 (Theta_xx - Theta_xX (..)^-1 Theta_Xx).
    outs, kernel_fn = _ensemble(posterior=True)
    kern = as_kernel(kernel_fn, "ntk")
    data = D.append(D.empty(4, 2), jnp.asarray(X_TRAIN), jnp.asarray(Y_TRAIN))
    post = G.fit(kern, data, SIGMA**2, jitter=0.0)
    mu = np.asarray(G.mean(kern, post, jnp.asarray(X_TEST)))
    var = NU**2 * np.asarray(G.variance(kern, post, jnp.asarray(X_TEST)))
    z_mean, rel_var = _check_moments(outs, mu, var)
    print(f"PosteriorSMB vs NTK-GP: max |mean z| {z_mean:.2f}, max rel var err {rel_var:.3f}")


@pytest.mark.slow
def test_simple_smb_covariance_is_proposition_1():
    # Be-Greedy's Prop. 1, with K the NNGP and Theta the NTK, A = Theta_XX + sigma^2 I:
    # nu^2 [K_xx' - (Theta_xX A^-1 K_Xx' + h.c.) + Theta_xX A^-1 (K_XX + sigma^2 I) A^-1 Theta_Xx'].
    outs, kernel_fn = _ensemble(posterior=False)
    k_dd, t_dd = _kernels(kernel_fn, X_TRAIN, X_TRAIN)
    k_td, t_td = _kernels(kernel_fn, X_TEST, X_TRAIN)
    k_tt, _ = _kernels(kernel_fn, X_TEST, X_TEST)
    s2 = SIGMA**2
    a_inv = np.linalg.inv(t_dd + s2 * np.eye(4))
    mu = t_td @ a_inv @ Y_TRAIN
    c = t_td @ a_inv @ k_td.T
    cov = NU**2 * (k_tt - (c + c.T) + t_td @ a_inv @ (k_dd + s2 * np.eye(4)) @ a_inv @ t_td.T)
    z_mean, rel_var = _check_moments(outs, mu, np.diag(cov))
    # The full covariance too (off-diagonal entries relative to the diagonal scale).
    cov_hat = np.cov(outs.T)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    # Correlation estimates have standard error <= 1/sqrt(M) ~ 0.058: 4 SE plus 0.1 finite width.
    assert np.all(np.abs(cov_hat - cov) / scale <= 4 / np.sqrt(outs.shape[0]) + 0.1)
    print(f"SimpleSMB vs Prop. 1: max |mean z| {z_mean:.2f}, max rel var err {rel_var:.3f}")


def test_building_blocks_share_theta0_and_interpolate():
    apply_fn, prior_var, _ = NG.smb_network(2, 64, 1, "erf", GAMMA)
    key = jax.random.PRNGKey(3)
    x, y = jnp.asarray(X_TRAIN), jnp.asarray(Y_TRAIN)
    kw = dict(optimizer="levenberg_marquardt", num_steps=20)
    th_s, th0_s, thp_s, _ = NG.train_smb(key, apply_fn, prior_var, 1, x, y, posterior=False, **kw)
    th_p, th0_p, thp_p, _ = NG.train_smb(key, apply_fn, prior_var, 1, x, y, posterior=True, **kw)
    leaves = jax.tree_util.tree_leaves
    # Same key -> same theta_0; SimpleSMB's theta~_0 is zero, PosteriorSMB's readout is zeroed.
    assert all(np.array_equal(a, b) for a, b in zip(leaves(th0_s), leaves(th0_p)))
    assert all(np.all(np.asarray(a) == 0) for a in leaves(thp_s))
    readout = thp_p["params"]["Dense_1"]
    assert all(np.all(np.asarray(a) == 0) for a in leaves(readout))
    assert np.any(np.asarray(thp_p["params"]["Dense_0"]["kernel"]) != 0)
    # sigma = 0 (the paper's experiments): 4 points, 64 * 4 + 1 parameters, so both builders fit
    # the data; 20 Levenberg-Marquardt steps reach it to ~1e-6 (relative jitter 1e-10).
    for post in (False, True):
        fn, (l0, l1, ok) = (NG.posterior_smb if post else NG.simple_smb)(
            key, apply_fn, prior_var, 1, x, y, **kw)
        assert bool(ok) and float(l1) < 1e-3 * float(l0)
        np.testing.assert_allclose(fn(x), Y_TRAIN, atol=1e-3)
    # The Adam path (the paper's optimiser) lowers the same loss.
    fn, (l0, l1, ok) = NG.simple_smb(key, apply_fn, prior_var, 1, x, y, optimizer="adam",
                                     num_steps=300, learning_rate=1e-2)
    assert bool(ok) and float(l1) < 0.1 * float(l0)


def test_paper_num_explore():
    # App. F.2: 5 d clipped to [0.025 T, 0.075 T].
    assert NG.paper_num_explore(2, 200) == 10
    assert NG.paper_num_explore(6, 200) == 15
    assert NG.paper_num_explore(1, 400) == 10


# ---------------------------------------------------------------------------------------------
# The algorithm through the driver (small network, few steps: structural checks).

SMALL = dict(network=dict(width=32), training=dict(optimizer="levenberg_marquardt", num_steps=2),
             search=dict(num_candidates=16, num_restarts=2, num_steps=3, sampler="sobol",
                         num_best=2))


@pytest.fixture(scope="module")
def branin():
    return ntkbo.benchmarks.get("branin")


@pytest.fixture(scope="module")
def vmapped(branin):
    algo = NG.neural_greedy(smb="posterior", sigma=0.1, num_explore=5, **SMALL)
    return vmapped_twice(algo, branin, 8)


def test_runs_vmapped_and_deterministic(vmapped, branin):
    res, again = vmapped
    assert_in_box_and_deterministic(res, again, branin.bounds, 8)
    # Rounds while count < num_explore = 5 (counts 3, 4) explore; the rest are greedy.
    np.testing.assert_array_equal(np.asarray(res.info.explore[0]), [1, 1, 0, 0, 0])
    assert bool(np.all(res.info.train_ok[:, 2:]))


def test_batch_suggestions_distinct_and_inside(branin):
    algo = NG.neural_greedy(smb="simple", q=3, num_explore=0, **SMALL)
    state = algo.init(jax.random.PRNGKey(1), branin.bounds, 8)
    x0 = ntkbo.loop.initial_design(jax.random.PRNGKey(2), branin.bounds, 4)
    state, _ = algo.update(state, x0, jax.vmap(branin.fn)(x0))
    x, info = jax.jit(algo.suggest)(jax.random.PRNGKey(3), state)
    b = np.asarray(branin.bounds)
    assert x.shape == (3, 2) and np.all((np.asarray(x) >= b[0]) & (np.asarray(x) <= b[1]))
    assert len({tuple(np.round(np.asarray(r), 12)) for r in x}) == 3
    assert not bool(info.explore) and info.acq_value.shape == (3,)


@pytest.mark.parametrize("kwargs, match", [
    (dict(smb="exact"), "smb"), (dict(network=dict(width=0)), "width"),
    (dict(sigma=-1.0), "sigma"), (dict(nu=0.0), "nu"),
    (dict(training=dict(optimizer="sgd")), "optimizer"), (dict(q=0), "q"),
    (dict(num_explore=-1), "num_explore"), (dict(input_map="ball"), "input_map"),
    (dict(search=dict(num_candidates=2, num_restarts=4)), "num_restarts"),
    (dict(gamma=0.0), "gamma"), (dict(network=dict(activation="tanhh")), "activation"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NG.neural_greedy(**kwargs)
