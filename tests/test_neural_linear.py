"""Neural-linear BO (DNGO / NeuralLinTS): the Bayesian linear regression against closed forms
computed independently (numpy, scipy), the features, the batch rules, and the driver."""

import importlib
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from jax.flatten_util import ravel_pytree

import ntkbo
from algo_checks import assert_in_box_and_deterministic, vmapped_twice
from ntkbo.kernels import mlp

NL = importlib.import_module("ntkbo.algorithms.neural_linear")

SMALL = dict(network=dict(width=8, depth=2), training=dict(num_steps=20),
             search=dict(num_candidates=32, num_restarts=2, num_steps=3))


@pytest.fixture(scope="module")
def branin():
    return ntkbo.benchmarks.get("branin")


def _log_evidence(phi, y, alpha, beta):
    """log N(y; 0, Phi Phi^T / alpha + I / beta) by scipy: the marginal likelihood of the BLR."""
    cov = phi @ phi.T / alpha + np.eye(len(y)) / beta
    return scipy.stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y)


def test_blr_posterior_closed_form():
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(10, 4))
    y = rng.normal(size=10)
    mask = np.arange(10) < 8  # the last two rows are padding and must be ignored
    alpha, beta = 2.0, 5.0
    post = NL.blr_posterior(jnp.asarray(phi), jnp.asarray(y), jnp.asarray(mask), alpha, beta)
    pv, yv = phi[mask], y[mask]
    s = np.linalg.inv(alpha * np.eye(4) + beta * pv.T @ pv)
    m = beta * s @ pv.T @ yv
    # float64 Cholesky solves of a well-conditioned 4 x 4 system: agreement to ~1e-14.
    np.testing.assert_allclose(np.asarray(post.mean), m, rtol=1e-10, atol=1e-12)
    star = rng.normal(size=(3, 4))
    mu, var = NL.blr_predict(post, jnp.asarray(star))
    np.testing.assert_allclose(np.asarray(mu), star @ m, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(var), np.einsum("ip,pq,iq->i", star, s, star),
                               rtol=1e-10)
    ev = NL.blr_evidence(jnp.asarray(phi), jnp.asarray(y), jnp.asarray(mask), alpha, beta)
    np.testing.assert_allclose(float(ev), _log_evidence(pv, yv, alpha, beta), rtol=1e-10)


def test_evidence_fixed_point_is_the_maximum():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(30, 3))
    y = phi @ np.array([0.5, -1.0, 0.3]) + 0.3 * rng.normal(size=30)
    mask = np.ones(30, bool)
    post = NL.blr_posterior(jnp.asarray(phi), jnp.asarray(y), jnp.asarray(mask),
                            num_evidence_iters=200)
    res = scipy.optimize.minimize(lambda t: -_log_evidence(phi, y, *np.exp(t)), np.zeros(2),
                                  method="Nelder-Mead",
                                  options=dict(xatol=1e-8, fatol=1e-12, maxiter=4000))
    # MacKay's fixed point is a stationary point of the evidence; Nelder-Mead's optimum agrees
    # to its tolerance (1e-3 relative in alpha, beta is far looser than either method's error).
    np.testing.assert_allclose([float(post.alpha), float(post.beta)], np.exp(res.x), rtol=1e-3)


def test_evidence_keeps_a_finite_posterior_in_float32():
    """Features and targets of a float32 DNGO run on Branin (37 observations, 51 features) where
    the evidence iterations step to ``alpha ~ 0.02, beta ~ 5e3`` and the Cholesky factor of ``A``
    (condition ~2e7) failed in single precision, leaving NaN ``alpha``, ``beta`` and posterior.
    The iterations must stop at a finite posterior; checked against float64 numpy at the
    ``(alpha, beta)`` returned. Mutation caught (checked): without the finiteness guard in
    ``blr_posterior`` the posterior is NaN."""
    data = np.load(os.path.join(os.path.dirname(__file__), "data", "blr_float32_failure.npz"))
    phi, y = data["phi"], data["y"]
    assert phi.dtype == np.float32 and phi.shape == (37, 51)
    post = NL.blr_posterior(jnp.asarray(phi), jnp.asarray(y), jnp.ones(len(y), bool))
    assert np.all(np.isfinite(np.asarray(post.chol))) and np.all(np.isfinite(np.asarray(post.mean)))
    a, b = float(post.alpha), float(post.beta)
    p64, y64 = phi.astype(np.float64), y.astype(np.float64)
    m = b * np.linalg.solve(a * np.eye(51) + b * p64.T @ p64, p64.T @ y64)
    # The fitted values in float32 against float64 at the same (alpha, beta): at a condition of
    # ~2e7 float32 (eps 6e-8) keeps no digit of m's worst direction, but the fitted values, what
    # the acquisition reads, stay within 1e-2 of the targets' unit std (4e-3 seen).
    np.testing.assert_allclose(phi @ np.asarray(post.mean), p64 @ m, atol=1e-2)
    # The iterations climbed the evidence from their start (1, 100) (scipy's closed form).
    assert _log_evidence(p64, y64, a, b) > _log_evidence(p64, y64, 1.0, 100.0) + 10.0


def test_last_layer_features_reproduce_the_network():
    init_fn, apply_fn, _ = mlp(2, 8, "erf", W_std=1.0, b_std=1.0)
    _, params = init_fn(jax.random.PRNGKey(0), (-1, 3))
    x = jax.random.uniform(jax.random.PRNGKey(1), (5, 3))
    phi = NL.last_layer_features(apply_fn, params, 2, x)
    ro = params["params"]["Dense_2"]
    w = np.asarray(ravel_pytree(ro)[0])  # the features' order: the readout's flattening
    assert phi.shape == (5, 9)
    # h(x) = phi(x) . w_L exactly (the readout is linear in its parameters).
    np.testing.assert_allclose(np.asarray(phi) @ w, np.asarray(apply_fn(params, x)[:, 0]),
                               rtol=1e-12, atol=1e-12)
    # The bias feature is the constant b_std = 1 (ravel_pytree puts "bias" before "kernel").
    np.testing.assert_allclose(np.asarray(phi[:, 0]), 1.0)


def _state(algo, branin):
    state = algo.init(jax.random.PRNGKey(5), branin.bounds, 8)
    x0 = ntkbo.loop.initial_design(jax.random.PRNGKey(2), branin.bounds, 5)
    return algo.update(state, x0, jax.vmap(branin.fn)(x0))[0]


def test_ei_batch_is_kriging_believer(branin):
    algo = NL.neural_linear(q=2, prior_precision=1.0, noise_precision=50.0, **SMALL)
    state = _state(algo, branin)
    x, info = jax.jit(algo.suggest)(jax.random.PRNGKey(3), state)
    b = np.asarray(branin.bounds)
    assert np.all((np.asarray(x) >= b[0]) & (np.asarray(x) <= b[1]))
    assert not np.allclose(np.asarray(x[0]), np.asarray(x[1]))
    _, apply_fn, _ = mlp(2, 8, "erf", W_std=1.0, b_std=1.0)
    z = (np.asarray(x) - b[0]) / (b[1] - b[0])
    phi = np.asarray(NL.last_layer_features(apply_fn, state.params, 2, jnp.asarray(z)))
    a = np.asarray(state.blr.chol) @ np.asarray(state.blr.chol).T
    # First query: the posterior itself; second: A + beta phi_1 phi_1^T (mean unchanged).
    sd1 = np.sqrt(phi[0] @ np.linalg.inv(a) @ phi[0])
    sd2 = np.sqrt(phi[1] @ np.linalg.inv(a + 50.0 * np.outer(phi[0], phi[0])) @ phi[1])
    np.testing.assert_allclose(np.asarray(info.std), [sd1, sd2], rtol=1e-8)
    np.testing.assert_allclose(np.asarray(info.mean), phi @ np.asarray(state.blr.mean),
                               rtol=1e-9, atol=1e-12)


def test_ts_batch_distinct_and_inside(branin):
    algo = NL.neural_linear(acquisition="ts", q=3, **SMALL)
    x, info = jax.jit(algo.suggest)(jax.random.PRNGKey(3), _state(algo, branin))
    b = np.asarray(branin.bounds)
    assert x.shape == (3, 2) and np.all((np.asarray(x) >= b[0]) & (np.asarray(x) <= b[1]))
    assert len({tuple(np.round(np.asarray(r), 12)) for r in x}) == 3


@pytest.fixture(scope="module")
def vmapped(branin):
    algo = NL.neural_linear(**SMALL)
    return vmapped_twice(algo, branin, 7)


def test_runs_vmapped_and_deterministic(vmapped, branin):
    res, again = vmapped
    assert_in_box_and_deterministic(res, again, branin.bounds, 7)
    assert bool(np.all(res.update_info.train_ok))


@pytest.mark.parametrize("kwargs, match", [
    (dict(acquisition="ucb"), "acquisition"), (dict(prior_precision=0.0), "prior_precision"),
    (dict(noise_precision="ml"), "noise_precision"), (dict(network=dict(width=0)), "width"), (dict(q=0), "q"),
    (dict(training=dict(learning_rate=-1.0)), "learning_rate"),
    (dict(num_evidence_iters=0), "num_evidence"),
    (dict(network=dict(activation="nope")), "activation"),
    (dict(search=dict(method="bfgs")), "search.method"),
    (dict(y_transform="box-cox"), "y_transform"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NL.neural_linear(**kwargs)


def test_y_transform_rank_is_the_default_on_normal_scores(branin):
    """``y_transform="rank"`` on ``y`` is the untransformed algorithm on the normal scores of
    ``y`` computed with scipy: the same network, Bayesian last layer and suggestion."""
    x = np.array([[0.0, 5.0], [5.0, 10.0], [-2.0, 1.0], [8.0, 3.0], [3.0, 3.0], [9.0, 14.0]])
    y = np.asarray(jax.vmap(branin.fn)(jnp.asarray(x)))
    scores = scipy.stats.norm.ppf((scipy.stats.rankdata(y) - 0.5) / len(y))
    key = jax.random.PRNGKey(9)
    out = []
    for kwargs, obs in ((dict(y_transform="rank"), y), ({}, scores)):
        algo = NL.neural_linear(**SMALL, **kwargs)
        state, _ = algo.update(algo.init(key, branin.bounds, 8), jnp.asarray(x),
                               jnp.asarray(obs))
        out.append((state, algo.suggest(key, state)[0]))
    (s_rank, x_rank), (s_ref, x_ref) = out
    # Identical standardised targets up to float64 rounding (~1e-15); 20 Adam steps, the evidence
    # fixed point and one acquisition maximisation keep the difference far below these margins.
    np.testing.assert_allclose(ravel_pytree(s_rank.params)[0], ravel_pytree(s_ref.params)[0],
                               rtol=0, atol=1e-8)
    np.testing.assert_allclose(s_rank.blr.mean, s_ref.blr.mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(x_rank, x_ref, rtol=0, atol=1e-6)
