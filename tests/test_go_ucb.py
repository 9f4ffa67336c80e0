"""GO-UCB: the Phase-II estimate against an independent numpy replay of eqs. (3)-(5), the
closed-form bonus against the maximum over the ellipsoid, the projection against scipy, runs through
``ntkbo.minimize`` (both optimistic steps, vmap over keys), argument validation, and the refitting
option (not in the paper): its rebuilt ``w0``, ``Sigma`` and ``b`` against independent
computations. Whether the refitting variant beats random search is a study, not a test:
``benchmarks/specs/status.toml`` (rows ``go_ucb-refit-*``) and its committed report."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import importlib

import scipy.optimize

import ntkbo
from algo_checks import assert_distinct
from ntkbo.parts import merge

# The module (``ntkbo.algorithms.go_ucb`` the attribute is the factory function of the same name).
G = importlib.import_module("ntkbo.algorithms.go_ucb")

PROBLEM = ntkbo.benchmarks.get("branin")
BUDGET, N_INIT, HORIZON = 16, 3, 12  # n_explore = ceil(sqrt(12)) = 4: one Phase-I suggest, then 12
WIDTH = 8  # p = (d + 2) width + 1 = 33 parameters
# refit_every=0: the paper's Algorithm 1 (one oracle fit), which the replays below check; the
# default's Phase-II refits have tests of their own.
SMALL = dict(horizon=HORIZON, network=dict(width=WIDTH),
             training=dict(num_steps=1000, num_restarts=2, refit_every=0),
             search=dict(num_candidates=64, num_restarts=2, num_steps=5))
KEY = jax.random.PRNGKey(7)


# ---------------------------------------------------------------------------------------------
# Independent reference: the default network and its parameter gradient, written out in numpy.


def np_net(w, z, d=2, m=WIDTH):
    """``f(z)`` and ``grad_w f(z)`` of ``linear2(sigmoid(linear1(z)))``. The flat layout is
    ``ravel_pytree``'s order of the sorted dict keys: hidden bias (m), hidden kernel (d, m)
    row-major, readout bias (1), readout kernel (m, 1)."""
    b1, W1 = w[:m], w[m : m + d * m].reshape(d, m)
    b2, W2 = w[m + d * m], w[m + d * m + 1 :]
    h = 1.0 / (1.0 + np.exp(-(z @ W1 + b1)))
    s = W2 * h * (1.0 - h)
    grad = np.concatenate([s, np.outer(z, s).reshape(-1), [1.0], h])
    return float(h @ W2 + b2), grad


def np_sums_at(w0, z, u, lam):
    """``Sigma = lam I + G^T G`` and ``b = lam w0 + G^T (G w0 + u - f)`` with every point of ``z``
    linearised at ``w0`` by the numpy network (eqs. 3 and 5, all points at one estimate)."""
    fg = [np_net(w0, zi) for zi in z]
    g0 = np.stack([g for _, g in fg])
    f0 = np.array([f for f, _ in fg])
    return lam * np.eye(w0.size) + g0.T @ g0, lam * w0 + g0.T @ (g0 @ w0 + u - f0)


def in_box(x):
    x = np.asarray(x)
    return np.all(x >= PROBLEM.bounds[0]) and np.all(x <= PROBLEM.bounds[1])


@pytest.fixture(scope="module")
def linearized():
    algo = G.go_ucb(**SMALL)
    return algo, ntkbo.minimize(algo, PROBLEM, BUDGET, KEY, n_init=N_INIT)


@pytest.fixture(scope="module")
def replay(linearized):
    """Phase II replayed in numpy from ``w0`` and the observations: per round ``w_i``, ``Sigma_i``,
    ``g_i``, ``z_i`` (eqs. 3-5), with ``np.linalg.solve``."""
    _, r = linearized
    s = r.state
    lo, hi = np.asarray(PROBLEM.bounds)
    z = (np.asarray(r.x) - lo) / (hi - lo)
    u = -(np.asarray(r.y) - float(s.y_mean)) / float(s.y_std)
    lam = G.lam_paper(HORIZON)
    w0 = np.asarray(s.w0)
    p = w0.size
    n1 = G.n_explore_paper(HORIZON)
    sigma, b, w = lam * np.eye(p), lam * w0, w0.copy()
    rounds = []
    for i in range(n1, BUDGET):
        f, g = np_net(w, z[i])
        rounds.append(dict(w=w.copy(), sigma=sigma.copy(), g=g, f=f, target=g @ w + u[i] - f))
        sigma = sigma + np.outer(g, g)
        b = b + g * rounds[-1]["target"]
        w = np.linalg.solve(sigma, b)
    return dict(rounds=rounds, sigma=sigma, w=w, w0=w0, lam=lam, z=z, u=u, n1=n1)


def test_phases_and_frozen_standardisation(linearized, replay):
    _, r = linearized
    assert_distinct(r.x, PROBLEM.bounds)
    # Sobol design of 3 < n_explore = 4: one uniform Phase-I suggest, then Phase II.
    np.testing.assert_array_equal(r.info.phase, [1] + [2] * (BUDGET - N_INIT - 1))
    np.testing.assert_array_equal(r.info.t[1:], np.arange(1, BUDGET - N_INIT))
    assert bool(r.state.fitted) and int(r.state.t) == BUDGET - replay["n1"]
    assert np.isnan(r.info.acq_value[0]).all() and np.isfinite(r.info.acq_value[1:]).all()
    y1 = np.asarray(r.y[: replay["n1"]])
    np.testing.assert_allclose(r.state.y_mean, y1.mean(), rtol=1e-12)
    np.testing.assert_allclose(r.state.y_std, y1.std(ddof=1), rtol=1e-12)
    # The oracle's reported loss is the Phase-I mean squared error at w0 (numpy network).
    mse = np.mean([(np_net(replay["w0"], replay["z"][i])[0] - replay["u"][i]) ** 2
                   for i in range(replay["n1"])])
    # the update that ran it (and no other) reports it (Result.update_info: the design's first)
    ran = np.asarray(r.update_info.oracle_ran)
    assert ran.sum() == 1
    np.testing.assert_allclose(np.asarray(r.update_info.oracle_loss)[ran][0], mse, rtol=1e-8,
                               atol=1e-12)
    assert np.isnan(np.asarray(r.update_info.oracle_loss)[~ran]).all()
    assert "oracle_loss" not in G.GOUCBState._fields  # diagnostics are info, not state
    # 33 parameters, 4 points, 1000 Adam steps: far below the variance 1 of the standardised data.
    assert mse < 0.05
    assert in_box(r.x)


def test_sigma_and_w_equal_the_replay(linearized, replay):
    _, r = linearized
    # Float64 throughout; the only differences are rounding of sums, solves and exp (numpy vs XLA),
    # amplified at most by cond(Sigma) ~ 1e2 per round over 12 rounds: 1e-9 relative is ample.
    np.testing.assert_allclose(r.state.sigma, replay["sigma"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r.state.w_hat, replay["w"], rtol=1e-9, atol=1e-12)
    # Sigma_t by its definition, lam I + sum g_i g_i^T, with the gradients stacked at once.
    gs = np.stack([rd["g"] for rd in replay["rounds"]])
    np.testing.assert_allclose(r.state.sigma, replay["lam"] * np.eye(gs.shape[1]) + gs.T @ gs,
                               rtol=1e-12, atol=1e-12)


def test_w_is_ridge_regression_toward_w0(linearized, replay):
    _, r = linearized
    # Eq. (4) is least squares on [sqrt(lam) I; G] w = [sqrt(lam) w0; z]: solved by lstsq (an SVD),
    # an independent route from eq. (5)'s normal equations. Same tolerance reasoning as above.
    gs = np.stack([rd["g"] for rd in replay["rounds"]])
    zs = np.array([rd["target"] for rd in replay["rounds"]])
    sl = np.sqrt(replay["lam"])
    a = np.vstack([sl * np.eye(gs.shape[1]), gs])
    rhs = np.concatenate([sl * replay["w0"], zs])
    w_ls = np.linalg.lstsq(a, rhs, rcond=None)[0]
    np.testing.assert_allclose(r.state.w_hat, w_ls, rtol=1e-8, atol=1e-10)
    # ... and the ellipsoid of the reference contains the library's w_t (up to rounding).
    d = np.asarray(r.state.w_hat) - w_ls
    beta = float(G.beta_theory(int(r.state.t) + 1, HORIZON, gs.shape[1]))
    assert d @ replay["sigma"] @ d <= 1e-12 * beta


def test_suggestions_maximise_the_closed_form_bonus(linearized, replay):
    _, r = linearized
    # Each Phase-II suggestion's reported value is f_x(w_t) + sqrt(beta_t) |g|_{Sigma_t^-1} at the
    # chosen x, with w_t and Sigma_t from the replay (numpy): rounding only.
    for k, rd in enumerate(replay["rounds"]):
        j = replay["n1"] - N_INIT + k  # index into the per-round info
        beta = G.beta_theory(k + 1, HORIZON, rd["g"].size)
        bonus = np.sqrt(beta * rd["g"] @ np.linalg.solve(rd["sigma"], rd["g"]))
        np.testing.assert_allclose(r.info.beta[j], beta, rtol=1e-12)
        np.testing.assert_allclose(r.info.mean[j, 0], rd["f"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(r.info.bonus[j, 0], bonus, rtol=1e-9)
        np.testing.assert_allclose(r.info.acq_value[j, 0], rd["f"] + bonus, rtol=1e-9)


def test_bonus_is_the_max_of_the_linearisation_over_the_ellipsoid(linearized):
    _, r = linearized
    s = r.state
    sigma, w_hat = np.asarray(s.sigma), np.asarray(s.w_hat)
    beta = 2.5
    _, g = np_net(w_hat, np.array([0.3, 0.8]))
    chol = jnp.linalg.cholesky(s.sigma)
    bonus = float(G.linearized_ucb(0.0, jnp.asarray(g), chol, beta))
    # scipy SLSQP on max g.(w - w_hat) s.t. |w - w_hat|^2_Sigma <= beta, 33 variables: an
    # independent solver, converged to ~1e-7 relative (its ftol 1e-12 on a linear objective).
    res = scipy.optimize.minimize(
        lambda v: -g @ v, np.zeros_like(g), jac=lambda v: -g, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda v: beta - v @ sigma @ v,
                      "jac": lambda v: -2.0 * sigma @ v}], options={"ftol": 1e-12, "maxiter": 500})
    np.testing.assert_allclose(-res.fun, bonus, rtol=1e-6)
    # The closed-form maximiser is on the boundary and attains the bound.
    w_star = np.asarray(G.ellipsoid_maximizer(s.w_hat, chol, beta, jnp.asarray(g)))
    np.testing.assert_allclose((w_star - w_hat) @ sigma @ (w_star - w_hat), beta, rtol=1e-10)
    np.testing.assert_allclose(g @ (w_star - w_hat), bonus, rtol=1e-10)
    # Boundary samples w = w_hat + sqrt(beta) L^-T v, |v| = 1, never exceed it (Cauchy-Schwarz).
    v = np.random.default_rng(0).normal(size=(4096, g.size))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    dw = np.sqrt(beta) * np.linalg.solve(np.asarray(chol).T, v.T).T
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", dw, sigma, dw), beta, rtol=1e-10)
    assert np.max(dw @ g) <= bonus * (1 + 1e-12)


def test_bonus_max_by_sampling_in_low_dimension():
    # p = 3: 2e5 uniform boundary points come within angle ~2/sqrt(2e5) of the maximiser, i.e. a
    # relative gap ~1e-5 (1 - cos), so the sampled maximum matches the closed form to 1e-3.
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    sigma = a @ a.T + 0.5 * np.eye(3)
    g, beta, f = rng.normal(size=3), 0.7, 0.25
    chol = jnp.linalg.cholesky(jnp.asarray(sigma))
    ucb = float(G.linearized_ucb(f, jnp.asarray(g), chol, beta))
    v = rng.normal(size=(200_000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    dw = np.sqrt(beta) * np.linalg.solve(np.linalg.cholesky(sigma).T, v.T).T
    sampled = f + np.max(dw @ g)
    assert sampled <= ucb * (1 + 1e-12)
    np.testing.assert_allclose(sampled, ucb, rtol=1e-3)


def test_projection_equals_scipy():
    # Euclidean projection on an ellipsoid by a separate solver (SLSQP), p = 5, condition ~1e2.
    rng = np.random.default_rng(2)
    a = rng.normal(size=(5, 5))
    sigma = a @ a.T + 0.1 * np.eye(5)
    c, beta = rng.normal(size=5), 0.3
    evals, evecs = jnp.linalg.eigh(jnp.asarray(sigma))
    project = jax.jit(G.project_to_ellipsoid)
    for scale in (0.01, 1.0, 10.0, 1e4):
        v = c + scale * rng.normal(size=5)
        w = np.asarray(project(jnp.asarray(v), jnp.asarray(c), evals, evecs, beta))
        ratio = (w - c) @ sigma @ (w - c) / beta
        assert ratio <= 1 + 1e-12
        inside = (v - c) @ sigma @ (v - c) <= beta
        if inside:
            np.testing.assert_array_equal(w, v)
            continue
        np.testing.assert_allclose(ratio, 1.0, rtol=1e-10)  # an outside point lands on the boundary
        res = scipy.optimize.minimize(
            lambda x: np.sum((x - v) ** 2), c, jac=lambda x: 2 * (x - v), method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda x: beta - (x - c) @ sigma @ (x - c),
                          "jac": lambda x: -2.0 * sigma @ (x - c)}],
            options={"ftol": 1e-14, "maxiter": 1000})
        # SLSQP's ftol on a squared distance: the minimiser agrees to ~1e-6 of the distance.
        np.testing.assert_allclose(w, res.x, atol=1e-6 * max(1.0, np.linalg.norm(v - c)))


def test_joint_variant_runs_and_never_leaves_the_ball():
    algo = G.go_ucb(optimistic="joint", **merge(SMALL, dict(
        search=dict(joint_steps=30, joint_learning_rate=0.05))))
    r = ntkbo.minimize(algo, PROBLEM, BUDGET, KEY, n_init=N_INIT)
    ph2 = np.asarray(r.info.phase) == 2
    assert ph2.sum() == BUDGET - N_INIT - 1
    ball = np.asarray(r.info.ball_max)[ph2]
    # Every iterate of every start is projected: |w - w_t|^2_Sigma / beta <= 1 up to rounding (the
    # projection ends with a radial rescaling, exact to a few ulps). The starts lie on the boundary
    # (the linearised maximiser) and the w-gradient there points outward, so the projection is
    # active: the largest ratio is 1, not below it.
    assert np.all(ball <= 1 + 1e-9), ball.max()
    assert np.max(ball) > 0.999
    assert np.isfinite(r.info.acq_value[ph2]).all() and np.isfinite(r.y).all()
    assert in_box(r.x)


def test_vmap_over_keys_equals_separate_runs(linearized):
    algo, single = linearized
    keys = jnp.stack([KEY, jax.random.PRNGKey(8), jax.random.PRNGKey(9)])
    many = jax.vmap(lambda k: ntkbo.minimize(algo, PROBLEM, BUDGET, k, n_init=N_INIT))(keys)
    assert many.x.shape == (3, BUDGET, 2)
    for i in range(3):
        one = single if i == 0 else ntkbo.minimize(algo, PROBLEM, BUDGET, keys[i], n_init=N_INIT)
        # vmapped and unbatched XLA kernels may round differently; 1e-9 leaves room for that.
        np.testing.assert_allclose(many.x[i], one.x, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(many.state.w_hat[i], one.state.w_hat, rtol=1e-7, atol=1e-9)


def test_schedules():
    assert G.n_explore_paper(25) == 5 and G.n_explore_paper(64) == 8  # the paper's experiments
    np.testing.assert_allclose(G.lam_paper(25), 51.8, atol=0.05)  # Section 6's sqrt(T) ln^2 T
    np.testing.assert_allclose(G.lam_paper(64), 138.4, atol=0.05)
    np.testing.assert_allclose(G.beta_paper(5, 25, 551, 1.0), 551**3 / 5)
    assert float(G.beta_theory(2, 10, 3)) > float(G.beta_theory(1, 10, 3))  # increasing in t


@pytest.mark.parametrize("kwargs, name", [
    (dict(horizon=0), "horizon"),
    (dict(horizon=1), "horizon"),  # lam="paper" needs ln T > 0
    (dict(n_explore=0), "n_explore"),
    (dict(lam=-1.0), "lam"),
    (dict(lam="theory"), "lam"),
    (dict(beta="huge"), "beta"),
    (dict(beta=-1.0), "beta"),
    (dict(beta_scale=float("nan")), "beta_scale"),
    (dict(F=0.0), "F"),
    (dict(optimistic="exact"), "optimistic"),
    (dict(network=dict(width=0)), "width"),
    (dict(network=(1, 2)), "network"),
    (dict(sigma_phase1=1), "sigma_phase1"),
    (dict(training=dict(num_steps=-1)), "training.num_steps"),
    (dict(training=dict(learning_rate=0.0)), "training.learning_rate"),
    (dict(training=dict(optimizer="lbfgs")), "training.optimizer"),
    (dict(training=dict(num_restarts=0)), "training.num_restarts"),
    (dict(q=0), "q"),
    (dict(search=dict(num_candidates=4, num_restarts=8)), "num_restarts"),
    (dict(search=dict(joint_learning_rate=-1e-4)), "joint_learning_rate"),
])
def test_bad_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        G.go_ucb(**kwargs)


def test_sigma_phase1_folds_phase1_into_the_sums(linearized):
    # Reading (b) of eqs. 3-5 (``sigma_phase1``): the oracle's update also adds the Phase-I points
    # linearised at w0.
    algo = G.go_ucb(sigma_phase1=True, **SMALL)
    x, y = linearized[1].x[:4], linearized[1].y[:4]
    s, _ = jax.jit(algo.update)(algo.init(KEY, PROBLEM.bounds, 16), x, y)
    assert bool(s.fitted) and int(s.t) == 0
    lo, hi = np.asarray(PROBLEM.bounds)
    z = (np.asarray(x) - lo) / (hi - lo)
    yn = np.asarray(y)
    u = -(yn - yn.mean()) / yn.std(ddof=1)
    w0 = np.asarray(s.w0)
    sigma, b = np_sums_at(w0, z, u, G.lam_paper(HORIZON))
    # Float64 sums and one solve with cond(Sigma) <= 1 + |G0|^2 / lam ~ 1: rounding only.
    np.testing.assert_allclose(s.sigma, sigma, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.w_hat, np.linalg.solve(sigma, b), rtol=1e-9, atol=1e-12)


def test_state_round_trips_through_flax_serialization(linearized):
    from flax import serialization

    _, r = linearized
    restored = serialization.from_bytes(r.state, serialization.to_bytes(r.state))
    for a, b in zip(jax.tree_util.tree_leaves(r.state), jax.tree_util.tree_leaves(restored)):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


# ---------------------------------------------------------------------------------------------
# refit_every (not in the paper): the oracle re-run on all data and the sums rebuilt around it.


def _flat_apply(d=2, m=WIDTH):
    """``apply_w(w (p,), z (n, d)) -> (n,)`` of the default network for ``fit_oracle``."""
    from jax.flatten_util import ravel_pytree

    init_fn, apply_fn = G.sigmoid_network(m)
    unravel = ravel_pytree(init_fn(KEY, (-1, d))[1])[1]
    return lambda w, z: apply_fn(unravel(w), z)[:, 0]


def test_refit_rebuilds_w0_sigma_and_b(linearized):
    _, r = linearized
    algo = G.go_ucb(**merge(SMALL, dict(training=dict(refit_every=2, refit_steps=50))))
    update = jax.jit(algo.update)
    lo, hi = np.asarray(PROBLEM.bounds)
    s = algo.init(KEY, PROBLEM.bounds, 16)
    s, info = update(s, r.x[:4], r.y[:4])  # the oracle: Phase II starts, t = 0
    assert type(info) is G.GOUCBUpdateInfo and bool(info.oracle_ran)
    assert np.isfinite(info.oracle_loss)
    s1, info1 = update(s, r.x[4:5], r.y[4:5])  # t = 1: a plain Phase-II update, no refit
    assert not bool(info1.oracle_ran) and np.isnan(info1.oracle_loss)
    np.testing.assert_array_equal(s1.w0, s.w0)
    assert int(s1.t) == 1
    s2, info2 = update(s1, r.x[5:6], r.y[5:6])  # t = 2: a multiple of refit_every, refit
    assert bool(info2.oracle_ran)
    assert int(s2.t) == 2 and bool(s2.fitted)
    # The round's own update first (numpy replay of eqs. 3-5 at w_1), then the refit from there.
    z = (np.asarray(r.x[:6]) - lo) / (hi - lo)
    u = -(np.asarray(r.y[:6]) - float(s.y_mean)) / float(s.y_std)
    w1 = np.asarray(s1.w_hat)
    f, g = np_net(w1, z[5])
    sigma_mid = np.asarray(s1.sigma) + np.outer(g, g)
    w_mid = np.linalg.solve(sigma_mid, np.asarray(s1.b) + g * (g @ w1 + u[5] - f))
    # w0 = the oracle on all 6 observations (frozen units), one start at the updated w_t.
    w0, loss = G.fit_oracle(_flat_apply(), jnp.asarray(w_mid)[None], jnp.asarray(z),
                            jnp.asarray(u), jnp.ones(6, bool), num_steps=50,
                            learning_rate=1e-2)
    # Same float64 Adam steps from starting points equal up to solve rounding (~1e-12): 1e-7.
    np.testing.assert_allclose(s2.w0, w0, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(info2.oracle_loss, loss, rtol=1e-7)
    assert not np.allclose(s2.w0, s.w0)  # the refit moved w0
    # Sigma and b: every observation linearised at the new w0 (numpy network), lam I + G^T G.
    sigma, b = np_sums_at(np.asarray(s2.w0), z, u, G.lam_paper(HORIZON))
    np.testing.assert_allclose(s2.sigma, sigma, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2.b, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s2.w_hat, np.linalg.solve(sigma, b), rtol=1e-9, atol=1e-12)
    # The standardisation stays frozen at the Phase-I values.
    np.testing.assert_array_equal(s2.y_mean, s.y_mean)
    np.testing.assert_array_equal(s2.y_std, s.y_std)


def test_refit_runs_through_minimize():
    algo = G.go_ucb(**merge(SMALL, dict(training=dict(refit_every=3, refit_steps=20))))
    r = ntkbo.minimize(algo, PROBLEM, BUDGET, KEY, n_init=N_INIT)
    assert int(r.state.t) == BUDGET - G.n_explore_paper(HORIZON)
    assert np.isfinite(r.info.acq_value[1:]).all() and np.isfinite(r.state.w_hat).all()
    assert in_box(r.x)


def test_sigmoid_network_input_scale():
    init_fn, plain = G.sigmoid_network(WIDTH)
    _, scaled = G.sigmoid_network(WIDTH, input_scale=5.0)
    _, params = init_fn(KEY, (-1, 2))
    z = jax.random.uniform(jax.random.PRNGKey(1), (7, 2), jnp.float64)
    np.testing.assert_allclose(scaled(params, z), plain(params, 5.0 * (2.0 * z - 1.0)), rtol=1e-14)
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="input_scale"):
            G.sigmoid_network(WIDTH, input_scale=bad)


@pytest.mark.parametrize("kwargs, name", [
    (dict(training=dict(refit_every=-1)), "refit_every"),
    (dict(training=dict(refit_every=1.5)), "refit_every"),
    (dict(training=dict(refit_every=True)), "refit_every"),
    (dict(training=dict(refit_every=1, refit_steps=-1)), "refit_steps"),
])
def test_bad_refit_arguments_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        G.go_ucb(**kwargs)


def test_input_scale_option_is_the_default_network_with_that_scale():
    # go_ucb(network={"input_scale": a}) (a plain number, so a TOML spec can set it) must be
    # go_ucb with network=sigmoid_network(width, a): the same key gives the same run. Catches the
    # mutation that drops input_scale (the default network would see the unit cube: a different
    # run, checked).
    small = dict(horizon=4, n_explore=3, training=dict(num_steps=5, num_restarts=1),
                 search=dict(num_candidates=16, num_restarts=1, num_steps=2))
    problem, key = ntkbo.benchmarks.get("branin"), jax.random.PRNGKey(5)

    def xs(algo):
        return np.asarray(ntkbo.minimize(algo, problem, 5, key, n_init=3).x)

    via_option = xs(G.go_ucb(network=dict(width=6, input_scale=5.0), **small))
    np.testing.assert_array_equal(
        via_option, xs(G.go_ucb(network=G.sigmoid_network(6, input_scale=5.0), **small)))
    assert not np.allclose(via_option, xs(G.go_ucb(network=dict(width=6), **small)))


def test_phase2_observe_and_the_linearisation_called_directly(linearized):
    """The module functions the factory wires, called directly on the run's final
    state: ``flat_network`` + ``values_and_gradients`` against the numpy network (float64, same
    formula: 1e-12), and ``phase2_observe`` on a batch of 3 with a failed observation against the
    numpy sums of eqs. (3) and (5) at ``w_t``. Mutations caught: the failed row added (NaN sums),
    the gradients taken at ``w0`` instead of ``w_t`` (they differ after 12 Phase-II rounds),
    ``t`` not advanced by the batch."""
    _, r = linearized
    s = r.state
    _, apply_w = G.flat_network(*G.sigmoid_network(WIDTH), 2)
    w = np.asarray(s.w_hat)
    assert not np.allclose(w, np.asarray(s.w0))
    z = np.random.default_rng(3).uniform(size=(3, 2))
    f, g = G.values_and_gradients(apply_w, jnp.asarray(w), jnp.asarray(z))
    ref = [np_net(w, zi) for zi in z]
    np.testing.assert_allclose(f, [a for a, _ in ref], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, np.stack([b for _, b in ref]), rtol=1e-12, atol=1e-12)

    lo, hi = np.asarray(PROBLEM.bounds)
    y = np.array([1.0, np.nan, 3.0])
    new = jax.jit(lambda st, x, yy: G.phase2_observe(st, x, yy, apply_w))(s, lo + z * (hi - lo), y)
    u = -(y - float(s.y_mean)) / float(s.y_std)
    sigma, b = np.asarray(s.sigma), np.asarray(s.b)
    for i in (0, 2):
        fi, gi = ref[i]
        sigma = sigma + np.outer(gi, gi)
        b = b + gi * (gi @ w + u[i] - fi)
    np.testing.assert_allclose(new.sigma, sigma, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(new.b, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(new.w_hat, np.linalg.solve(sigma, b), rtol=1e-9, atol=1e-12)
    assert int(new.t) == int(s.t) + 3


def test_default_refits_every_round_and_the_paper_preset_never():
    """GO-UCB's default re-runs the oracle after every Phase-II observation (a departure from the
    paper, chosen on tuning keys); ``preset="paper"`` keeps Algorithm 1's single fit. Mutation
    caught (checked): the default back at ``refit_every=0`` fails the first assertion."""
    assert ntkbo.algorithms.go_ucb().config["training"]["refit_every"] == 1
    assert ntkbo.algorithms.go_ucb(preset="paper").config["training"]["refit_every"] == 0
