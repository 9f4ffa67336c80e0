"""NeuralBO: the uncertainty identities, TrainNN against its linearisation, runs through the driver.

Independent references: the primal ``lam g^T U^-1 g`` in numpy from the gradient features, the GP
posterior variance of ``ntkbo.gp`` with the empirical NTK (``ntkbo.kernels.empirical_ntk``) as
kernel, and kernel ridge regression on the empirical NTK for the trained network.
"""

import importlib
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

import ntkbo
from algo_checks import assert_distinct
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.algorithms.neural_bo import (
    DiagU,
    NeuralBOSuggestInfo,
    NeuralBOUpdateInfo,
    PrimalU,
    cholesky_update,
    dual_factor,
    init_u,
    neural_bo,
    nu_repo,
    nu_schedule,
    paper_W_std,
    posterior,
    thompson_select,
    update_u,
    variance_diag,
    variance_dual,
    variance_primal,
)
from ntkbo.kernels import empirical_ntk, grad_features, mlp

LAM = 0.01
BRANIN = ntkbo.benchmarks.get("branin")
UNIT3 = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


# ---- the uncertainty: dual == primal == GP posterior variance; diag == its formula -------------


@pytest.fixture(scope="module")
def setup():
    """A width-64 paper network in d = 3, a buffer of capacity 16 holding 8 points (padding rows are
    garbage, to check the masking), and 40 test points, two of them observed."""
    d, width, n = 3, 64, 8
    init_fn, apply_fn, _ = mlp(1, width, W_std=paper_W_std(d, 1))
    _, params0 = jax.jit(lambda k: init_fn(k, (-1, d)))(jax.random.PRNGKey(0))
    feats = jax.jit(grad_features(apply_fn))
    rng = np.random.default_rng(1)  # numpy draws: no jax.random compilation in the tests' inputs
    z = rng.uniform(size=(n, d))
    buf = np.concatenate([z, np.full((16 - n, d), 0.7)])  # padding with nonzero features
    mask = np.arange(16) < n
    zc = np.concatenate([z[:2], rng.uniform(size=(38, d))])
    g_data, gc = np.asarray(feats(z, params0)), np.asarray(feats(zc, params0))
    p = g_data.shape[1]
    u = LAM * np.eye(p) + g_data.T @ g_data
    primal = LAM * np.einsum("ij,ji->i", gc, np.linalg.solve(u, gc.T))
    return dict(d=d, width=width, n=n, apply_fn=apply_fn, params0=params0, feats=feats, z=z,
                buf=buf, mask=mask, zc=zc, g_data=g_data, gc=gc, u=u, primal=primal)


# U = lam I + G^T G has condition number <= 1 + |G|^2 / lam ~ 1e3 here, so solves lose at most
# ~1e-13 relative; the dual subtraction k - k^T (K + lam I)^-1 k loses ~1e-13 absolute; the Cholesky
# jitter (1e-10 of the mean prior variance, ntkbo.gp's default) shifts lam by ~1e-8 relative. So
# rtol 1e-6 with atol 1e-10 (variances are >= ~lam/10 = 1e-3) leaves a wide margin.
RTOL, ATOL = 1e-6, 1e-10


def test_dual_equals_primal_and_gp_posterior_variance(setup):
    s = setup
    g_buf = s["feats"](s["buf"], s["params0"])
    dual = jax.jit(lambda g, gb, m: variance_dual(g, gb, m, dual_factor(gb, m, LAM)))(
        jnp.asarray(s["gc"]), g_buf, s["mask"])
    np.testing.assert_allclose(dual, s["primal"], rtol=RTOL, atol=ATOL)
    # ntkbo.gp with the empirical NTK at theta_0 as the kernel of the raw inputs, noise lam.
    ntk = empirical_ntk(s["apply_fn"])

    @jax.jit
    def gp_variance(params, buf, zc):
        kernel = lambda a, b: ntk(a, b, params)  # noqa: E731
        post = G.fit(kernel, D.Data(buf, jnp.zeros(16), jnp.asarray(s["n"], jnp.int32)), LAM)
        return G.variance(kernel, post, zc)

    gp_var = gp_variance(s["params0"], s["buf"], s["zc"])
    np.testing.assert_allclose(gp_var, s["primal"], rtol=RTOL, atol=ATOL)
    # at observed points the variance is below lam (posterior of a noisy observation)
    assert np.all(s["primal"][:2] < LAM)


def test_primal_and_diag_state_follow_the_updates(setup):
    """The states kept by ``uncertainty="primal"`` (Cholesky factor of U by rank-one updates),
    ``"diag"`` (diag U) and ``"dual"`` (the Gram matrix's factor, extended row by row) after
    ``update``, against numpy; no training (``num_steps=0``)."""
    s = setup
    y = np.arange(s["n"], dtype=np.float64)
    for mode in ("primal", "diag", "dual"):
        algo = neural_bo(network=dict(width=s["width"]), uncertainty=mode,
                         training=dict(num_steps=0), input_map="cube")
        state = jax.jit(algo.init, static_argnums=2)(jax.random.PRNGKey(0), UNIT3, 16)
        # the algorithm draws the same theta_0 from the same key as the fixture
        np.testing.assert_array_equal(state.params0["params"]["Dense_0"]["kernel"],
                                      s["params0"]["params"]["Dense_0"]["kernel"])
        update = jax.jit(algo.update)
        state, _ = update(update(state, s["z"][:4], y[:4])[0], s["z"][4:], y[4:])  # rank 4, twice
        if mode == "dual":
            # Static features: the state carries the Cholesky factor of the empirical-NTK Gram
            # matrix, extended by 4 rows twice. Reference: numpy's Cholesky of
            # G G^T + (lam + jitter) I, the jitter ntkbo.gp's 1e-10 of the mean diagonal. Mutations
            # caught: the factor not extended (identity), rows appended at the new count instead
            # of the old one, lam dropped from the new rows.
            gram = s["g_data"] @ s["g_data"].T
            gram += (LAM + 1e-10 * np.mean(np.diag(gram))) * np.eye(s["n"])
            chol = np.asarray(state.u.chol)
            assert chol.shape == (16, 16)
            np.testing.assert_allclose(chol[: s["n"], : s["n"]], np.linalg.cholesky(gram),
                                       rtol=1e-9, atol=1e-12)  # float64, cond(gram) ~ 1e5
            np.testing.assert_array_equal(chol[s["n"]:, s["n"]:], np.eye(16 - s["n"]))
            g_buf = s["feats"](s["buf"], s["params0"])
            var = variance_dual(jnp.asarray(s["gc"]), g_buf, s["mask"], state.u.chol)
            np.testing.assert_allclose(var, s["primal"], rtol=RTOL, atol=ATOL)
        elif mode == "primal":
            assert type(state.u) is PrimalU
            r = np.asarray(state.u.chol)
            np.testing.assert_allclose(np.triu(r), r)  # upper triangular
            np.testing.assert_allclose(r.T @ r, s["u"], rtol=1e-10, atol=1e-12)
            var = variance_primal(jnp.asarray(s["gc"]), state.u.chol, LAM)
            np.testing.assert_allclose(var, s["primal"], rtol=RTOL, atol=ATOL)
        else:
            diag_u = LAM + np.sum(s["g_data"] ** 2, axis=0)
            assert type(state.u) is DiagU
            np.testing.assert_allclose(state.u.diag, diag_u, rtol=1e-12)
            expect = LAM * np.sum(s["gc"] ** 2 / diag_u, axis=1)
            np.testing.assert_allclose(variance_diag(jnp.asarray(s["gc"]), state.u.diag, LAM),
                                       expect, rtol=1e-12)
            # diag(U) >= the eigen-weights the full U gives along each axis, so the diagonal
            # approximation is not the exact variance: it differs from the primal somewhere
            assert np.max(np.abs(expect - s["primal"])) > 1e-6


def test_sphere_input_map():
    """The default ``input_map="sphere"``: the network sees ``u / |u|``, ``u = (2 z - 1, 1)``
    (computed here in numpy), through a network with ``d + 1`` inputs; checked on the ``"diag"``
    state ``lam + sum_i g(u_i)^2`` (no training), against features of an independently built
    network with the same key."""
    d, width, lam = 3, 16, 0.01
    z = np.random.default_rng(5).uniform(size=(5, d))
    u = np.column_stack([2 * z - 1, np.ones(5)])
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    algo = neural_bo(network=dict(width=width), lam=lam, uncertainty="diag",
                     training=dict(num_steps=0))
    state, _ = algo.update(algo.init(jax.random.PRNGKey(0), UNIT3, 8), z, np.arange(5.0))
    init_fn, apply_fn, _ = mlp(1, width, W_std=paper_W_std(d + 1, 1))
    _, params0 = init_fn(jax.random.PRNGKey(0), (-1, d + 1))
    g = np.asarray(grad_features(apply_fn)(jnp.asarray(u), params0))
    np.testing.assert_allclose(state.u.diag, lam + np.sum(g**2, axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="input_map"):
        neural_bo(input_map="ball")


def test_cholesky_update_rank_one():
    a = np.random.default_rng(0).normal(size=(5, 5))
    u = a @ a.T + np.eye(5)
    r = np.linalg.cholesky(u).T
    v = np.random.default_rng(1).normal(size=5)
    r1 = np.asarray(cholesky_update(jnp.asarray(r), jnp.asarray(v)))
    # one rank-one update in float64 is backward stable: error ~ eps |U|
    np.testing.assert_allclose(r1.T @ r1, u + np.outer(v, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(cholesky_update(jnp.asarray(r), jnp.zeros(5)), r)


def test_paper_network_ntk_limit():
    """``W_std="paper"`` = (sqrt(d), 1): ntkbo's analytic NTK is the closed-form ReLU NTK of the paper's
    experimental network (its Section 7's ``sqrt(m) W_2 relu(W_1 x)``), and the empirical NTK
    g(x).g(x') (the paper's <g_W, g_W'>/m) of a width-4096 network matches it. The empirical NTK at
    initialisation is a mean over m neurons, so its relative fluctuation is ~ 1/sqrt(m) * O(1) ~
    2-3%; we allow 10%."""
    d = 3
    x = np.random.default_rng(5).uniform(size=(5, d))
    init_fn, apply_fn, kernel_fn = mlp(1, 4096, W_std=paper_W_std(d, 1))
    nx = np.linalg.norm(x, axis=1)
    cos = np.clip(x @ x.T / np.outer(nx, nx), -1.0, 1.0)
    t = np.arccos(cos)
    closed = (x @ x.T * (np.pi - t) + np.outer(nx, nx) * (np.sin(t) + (np.pi - t) * cos))
    closed /= 2 * np.pi
    analytic = jax.jit(lambda a: kernel_fn(a, a, "ntk"))(x)
    # At x = x' both compute the angle from a rounding-level quantity (sqrt(1e-16) ~ 1e-8 rad),
    # which moves the diagonal by ~ angle / (2 pi) ~ 3e-9 relative: rtol 1e-8.
    np.testing.assert_allclose(analytic, closed, rtol=1e-8)
    np.testing.assert_allclose(np.diag(closed), nx**2, rtol=1e-8)  # k(x, x) = |x|^2

    @jax.jit
    def empirical(key):
        _, p0 = init_fn(key, (-1, d))
        g = grad_features(apply_fn)(x, p0)
        return g @ g.T

    np.testing.assert_allclose(empirical(jax.random.PRNGKey(1)), closed, rtol=0.1)


# ---- TrainNN approaches the minimiser of the linearised loss as the width grows ----------------


def test_training_approaches_kernel_ridge_regression():
    """``update`` retrains from theta_0 by GD on 1/2 sum (h - y)^2 + 1/2 lam |theta - theta_0|^2.
    The linearised network's minimiser predicts ``h_0(x) + k_X(x)^T (K + lam I)^-1 (y - h_0(X))``
    (kernel ridge regression on the empirical NTK at theta_0).

    Tolerance: the trained network differs from it by the linearisation error, ~ C |alpha|^2 /
    sqrt(m) for the two-layer net, with alpha = (K + lam I)^-1 (y - h_0) the size of the parameter
    move. With lam = 1, |alpha| = O(1); the max error over 50 test points, averaged over 4 seeds,
    was measured at 0.051, 0.011 and 0.0046 for m = 64, 512 and 4096 (the 1/sqrt(m) law, C ~ 0.35),
    so ~0.008 at the moderate m = 2048 used here; we allow 0.02 for the largest of 4 seeds and 0.012
    for their mean. With the paper's lam = 0.01, alpha is ~100x larger and the linear regime needs
    far wider networks (the theory's m >= poly(T, 1/lam)). GD with eta = 1 / (lam + tr K) contracts
    every direction by at least 1 - eta lam ~ 0.8 per step here, so 300 steps reach the minimiser
    to rounding: what remains is the linearisation error.
    """
    lam, d, n, width = 1.0, 2, 6, 2048
    bounds = np.array([[0.0, 0.0], [1.0, 1.0]])
    rng = np.random.default_rng(2)
    z, zt = rng.uniform(size=(n, d)), rng.uniform(size=(50, d))
    y = np.sin(3 * z[:, 0]) + z[:, 1] ** 2
    algo = neural_bo(network=dict(width=width), lam=lam, training=dict(num_steps=300),
                     standardize_y=False, input_map="cube")
    _, apply_fn, _ = mlp(1, width, W_std=paper_W_std(d, 1))
    feats = grad_features(apply_fn)

    @jax.jit
    def one(key):
        state, info = algo.update(algo.init(key, bounds, 8), z, y)
        p0 = state.params0
        g, gt = feats(z, p0), feats(zt, p0)
        h0, h0t = apply_fn(p0, z)[:, 0], apply_fn(p0, zt)[:, 0]
        krr = h0t + gt @ g.T @ jnp.linalg.solve(g @ g.T + lam * jnp.eye(n), y - h0)
        pred = apply_fn(state.params, zt)[:, 0]
        return jnp.max(jnp.abs(pred - krr)), jnp.max(jnp.abs(krr - h0t)), info.train_loss, \
            info.train_ok

    err, move, loss, ok = jax.vmap(one)(jax.random.split(jax.random.PRNGKey(4), 4))
    assert np.all(ok)
    assert np.all(loss[:, 1] < loss[:, 0])  # the loss decreases
    assert np.all(move > 0.1)  # training moved the predictions, so the comparison is not empty
    assert err.max() < 0.02 and err.mean() < 0.012, err


# ---- runs through ntkbo.minimize ----------------------------------------------------------------

KEY = jax.random.PRNGKey(0)
BUDGET = 20  # n_init = 3 and 17 rounds; min_capacity=32 keeps one buffer size (one compilation)


def run(algo, key=KEY, n_init=None):
    return ntkbo.minimize(algo, BRANIN, BUDGET, key, n_init=n_init, min_capacity=32)


@pytest.fixture(scope="module")
def default_algo():
    return neural_bo(network=dict(width=32))


def test_minimize_default(default_algo):
    r = run(default_algo)
    assert r.x.shape == (BUDGET, 2) and np.all(np.isfinite(r.y))
    lo, hi = np.asarray(BRANIN.bounds)
    assert np.all(r.x >= lo) and np.all(r.x <= hi)
    assert_distinct(r.x, BRANIN.bounds)
    assert len({tuple(row) for row in np.asarray(r.x)}) > BUDGET // 2  # it moves around
    info, fit = r.info, r.update_info
    rounds = BUDGET - 3
    # typed infos: suggest's per round, update's per update (the initial design's first)
    assert type(info) is NeuralBOSuggestInfo and type(fit) is NeuralBOUpdateInfo
    assert info.acq_value.shape == (rounds, 1) and fit.train_loss.shape == (rounds + 1, 2)
    assert np.all(fit.train_ok) and np.all(np.isfinite(info.std))
    assert np.all(fit.train_loss[:, 1] < fit.train_loss[:, 0])
    # the default nu is "by_dimension": 1.0 on this 2-D problem. Mutation caught (checked): the
    # rule's threshold compared with d + 1 or its values swapped gives 0.3 here.
    assert inspect.signature(ntkbo.algorithms.neural_bo).parameters["nu"].default == "by_dimension"
    np.testing.assert_array_equal(info.nu, 1.0)
    # train_r2: numpy's R^2 of the final network on the standardised targets
    # of the 20 observations, from the state's parameters; the buffer has 12 padding rows, so
    # mutations caught (each checked): the padding rows counted (ybar and both sums change); the
    # raw instead of the standardised targets; the R^2 of theta_0 instead of theta_t
    NB = importlib.import_module("ntkbo.algorithms.neural_bo")  # the module, not the factory
    apply_fn = NB.network(2, 1, 32, "relu", "paper", None, "sphere")[1]
    st = r.state
    z = NB.embed(ntkbo.algorithms.gp_bo.to_unit(st.data.x, st.bounds), "sphere")
    y = np.asarray(r.y, np.float64)
    ys = (y - y.mean()) / y.std(ddof=1)
    pred = np.asarray(apply_fn(st.params, z))[:20, 0]
    r2 = 1.0 - np.sum((pred - ys) ** 2) / np.sum((ys - ys.mean()) ** 2)
    # float64 sums of 20 terms: 1e-10
    np.testing.assert_allclose(float(fit.train_r2[-1]), r2, rtol=1e-10, atol=1e-12)
    assert st.data.capacity == 32 and fit.train_r2.shape == (rounds + 1,)
    # same key, bit-identical run
    again = run(default_algo)
    np.testing.assert_array_equal(again.x, r.x)
    # the state round-trips through flax.serialization
    restored = serialization.from_state_dict(r.state, serialization.to_state_dict(r.state))
    for a, b in zip(jax.tree_util.tree_leaves(restored), jax.tree_util.tree_leaves(r.state)):
        np.testing.assert_array_equal(a, b)


VARIANTS = {
    # the authors' code: dynamic features, warm start, Adam, weight decay, mean loss, nu schedule,
    # with the primal U accumulated from g(x_t; theta_{t-1})
    "repo": dict(features="dynamic",
                 training=dict(warm_start=True, optimizer="adam", reg_center="zero",
                               loss_reduction="mean"), nu="repo",
                 uncertainty="primal"),
    # dynamic features with the dual form (Gram matrix recomputed at theta_t), pathwise draws
    # (the factor made inside the draw; info's std from the posterior at the chosen point)
    "dynamic_dual": dict(features="dynamic", thompson="pathwise"),
    # batches, biases, a second hidden layer, a fixed learning rate, a callable nu, diag U,
    # chunked candidates, more best points than the buffer's capacity (16), q pathwise draws
    "misc": dict(q=2, network=dict(b_std=0.1, depth=2, width=16), training=dict(learning_rate=1e-3),
                 search=dict(chunk_size=100, num_best=20, num_steps=5), nu=lambda t: 0.5 + 0.0 * t,
                 uncertainty="diag", standardize_y=False, thompson="pathwise"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_run(name):
    """Each switch through init, update, suggest (jitted directly, not through the driver: one
    compilation of each function, which is what dominates the time of this test)."""
    kw = dict(network=dict(width=32),
              search=dict(num_candidates=256, num_perturbations=64, sampler="kronecker"))
    kw.update(VARIANTS[name])
    algo = neural_bo(**kw)
    q = kw.get("q", 1)
    update, suggest = jax.jit(algo.update), jax.jit(algo.suggest)
    fn = jax.jit(jax.vmap(BRANIN.fn))
    lo, hi = np.asarray(BRANIN.bounds)
    state = jax.jit(algo.init, static_argnums=2)(KEY, BRANIN.bounds, 16)
    x0 = lo + (hi - lo) * np.array([[0.1, 0.2], [0.7, 0.4], [0.4, 0.9], [0.9, 0.8]])
    for i in range(0, 4, q):  # the initial design in batches of q: update compiles once
        state, fit = update(state, x0[i:i + q], fn(x0[i:i + q]))
    for k in jax.random.split(KEY, 3):
        x, info = suggest(k, state)
        assert x.shape == (q, 2) and np.all(x >= lo) and np.all(x <= hi)
        assert info.acq_value.shape == (q,) and np.all(np.isfinite(np.asarray(info.std)))
        assert bool(fit.train_ok) and fit.train_loss[1] < fit.train_loss[0]
        state, fit = update(state, x, fn(x))
    assert int(state.data.count) == 4 + 3 * q
    if name == "repo":
        np.testing.assert_allclose(info.nu, nu_repo(4 + 2 * q), rtol=1e-12)
        assert not jnp.allclose(state.params0["params"]["Dense_0"]["kernel"],
                                state.params["params"]["Dense_0"]["kernel"])


def test_nu_by_dimension_is_the_rule():
    # nu = 1 up to d = 6 and 0.3 above, whatever t (the rule committed before its reporting run).
    # Mutations caught (checked): "<" for "<=" (d = 6 gives 0.3), the two values swapped.
    fn = nu_schedule("by_dimension")
    got = [float(fn(jnp.asarray(t), d)) for d in (1, 2, 6, 7, 20) for t in (1, 50)]
    assert got == [1.0] * 6 + [0.3] * 4
    with pytest.raises(ValueError, match="nu"):
        nu_schedule("by_dim")


def test_vmap_over_keys_equals_separate_runs(default_algo):
    keys = jnp.stack([KEY, jax.random.PRNGKey(7)])
    many = jax.vmap(lambda k: run(default_algo, k))(keys)
    for i in range(2):
        one = run(default_algo, keys[i])  # compiled by test_minimize_default
        # vmapped matmuls may round differently; the chosen points are the same candidates
        np.testing.assert_allclose(many.x[i], one.x, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(features="fixed"), "features"),
        (dict(uncertainty="full"), "uncertainty"),
        (dict(training=dict(optimizer="sgd")), 'training.optimizer'),
        (dict(training=dict(reg_center="origin")), 'training.reg_center'),
        (dict(training=dict(loss_reduction="max")), 'training.loss_reduction'),
        (dict(lam=0.0), "lam"),
        (dict(lam=-1.0), "lam"),
        (dict(nu=-0.1), "nu"),
        (dict(nu="fast"), "nu"),
        (dict(training=dict(learning_rate=0.0)), 'training.learning_rate'),
        (dict(training=dict(num_steps=-1)), 'training.num_steps'),
        (dict(training=dict(num_steps=2.5)), 'training.num_steps'),
        (dict(q=0), "q"),
        (dict(search=dict(num_candidates=0)), 'search.num_candidates'),
        (dict(search=dict(num_best=0)), 'search.num_perturbations'),
        (dict(search=dict(perturb_scale=-0.1)), 'search.perturb_scale'),
        (dict(search=dict(chunk_size=0)), 'search.chunk_size'),
        (dict(training=dict(warm_start=1)), 'training.warm_start'),
        (dict(standardize_y="yes"), "standardize_y"),
        (dict(search=dict(sampler="halton")), 'search.sampler'),
        (dict(network=dict(W_std="theory")), 'network.W_std'),
        (dict(network=dict(W_std=(1.0, 1.0, 1.0))), 'network.W_std'),
        (dict(network=dict(width=0)), 'network.width'),
        (dict(network=dict(depth=0)), 'network.depth'),
        (dict(network=dict(b_std=-1.0)), 'network.b_std'),
        (dict(input_map="ball"), "input_map"),
        (dict(training=dict(keep_optimizer_state=True, warm_start=False)), 'training.keep_optimizer_state'),
        (dict(training=dict(keep_optimizer_state=1, warm_start=True)), 'training.keep_optimizer_state'),
        (dict(training=dict(penalty=-1.0)), 'training.penalty'),
        (dict(thompson="joint"), "thompson"),
        (dict(search=dict(method="newton")), 'search.method'),
        (dict(search=dict(num_restarts=0)), 'search.num_restarts'),
        (dict(search=dict(num_steps=-1)), 'search.num_steps'),
        (dict(thompson="pathwise", search=dict(num_candidates=2, num_restarts=4)), 'search.num_restarts'),
    ],
)
def test_bad_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        neural_bo(**kwargs)


# ---- the selection rule --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def selection_setup():
    """A width-32 network in d = 2 after 6 observations, for nu = 3 and both reg_centers: the
    states and the suggestions of one key."""
    d, n, width, lam = 2, 6, 32, 0.1
    bounds = np.array([[-1.0, 0.0], [2.0, 4.0]])
    rng = np.random.default_rng(11)
    x = bounds[0] + (bounds[1] - bounds[0]) * rng.uniform(size=(n, d))
    y = np.sin(2 * x[:, 0]) + 0.3 * x[:, 1] ** 2
    out = {}
    for reg_center in ("init", "zero"):
        # candidates only (num_best = 0): the rule is the argmin over the Sobol set
        algo = neural_bo(network=dict(width=width), lam=lam, nu=3.0,
                         training=dict(reg_center=reg_center, num_steps=50), input_map="cube",
                         search=dict(num_candidates=128, num_best=0, num_perturbations=0))

        @jax.jit
        def one(key, algo=algo):
            state, _ = algo.update(algo.init(jax.random.PRNGKey(1), bounds, 8), x, y)
            return state, algo.suggest(key, state)

        out[reg_center] = one(jax.random.PRNGKey(5))
    return dict(d=d, width=width, lam=lam, bounds=bounds, out=out)


def test_thompson_choice_is_the_argmin_of_the_draw(selection_setup):
    """The suggestion is ``argmin_c h(c) + nu sigma(c) eps_c`` over the candidates (Alg. 1 lines
    3-5 for minimisation), recomputed here from the state: ``h`` from the network at
    ``state.params``, ``sigma^2`` the GP posterior variance of ``ntkbo.gp`` under the empirical NTK
    at ``theta_0`` (not the algorithm's ``variance_dual``), the candidates and ``eps`` drawn from
    the same keys as ``suggest`` draws them.

    Mutations this catches (each checked by hand): the argmax of the draw instead of its argmin
    (``values = mu + nu sigma eps``); ``nu`` ignored (``nu_t = 1``); ``sigma^2`` without the
    noise ``lam`` (``k - k (K + lam' I)^-1 k`` with another ``lam'``); ``reg_center`` ignored
    (the two states' networks would be equal, asserted below)."""
    s = selection_setup
    from ntkbo import qmc
    from ntkbo.algorithms.neural_bo import embed

    d, lam, bounds = s["d"], s["lam"], s["bounds"]
    _, apply_fn, _ = mlp(1, s["width"], W_std=paper_W_std(d, 1))
    k_cand, k_noise = jax.random.split(jax.random.PRNGKey(5))
    unit = np.stack([np.zeros(d), np.ones(d)])
    cand = np.asarray(qmc.sobol(k_cand, 128, unit))
    eps = np.asarray(jax.random.normal(k_noise, (128,), jnp.float64))
    chosen = {}
    for reg_center, (state, (x, info)) in s["out"].items():
        z = embed((np.asarray(state.data.x)[:6] - bounds[0]) / (bounds[1] - bounds[0]), "cube")
        zc = embed(cand, "cube")
        h = np.asarray(apply_fn(state.params, zc))[:, 0]
        # sigma^2 = k(c, c) - k_X(c)^T (K + lam I)^-1 k_X(c) with the empirical NTK at theta_0,
        # dense in numpy (float64)
        ntk = empirical_ntk(apply_fn)
        kxx = np.asarray(ntk(z, z, state.params0))
        kcx = np.asarray(ntk(zc, z, state.params0))
        kcc = np.diag(np.asarray(ntk(zc, zc, state.params0)))
        sigma = np.sqrt(np.maximum(
            kcc - np.einsum("ij,ji->i", kcx, np.linalg.solve(kxx + lam * np.eye(6), kcx.T)), 0.0))
        draw = h + 3.0 * sigma * eps
        i = int(np.argmin(draw))
        # the draw's minimum is isolated: the second-best value is further than rounding away
        assert np.sort(draw)[1] - draw[i] > 1e-9
        expect = bounds[0] + (bounds[1] - bounds[0]) * cand[i]
        np.testing.assert_allclose(np.asarray(x)[0], expect, rtol=0, atol=1e-12)
        # nu sigma at x; the algorithm's Cholesky jitter (1e-10 relative) moves sigma by ~1e-8
        np.testing.assert_allclose(info.std, 3.0 * sigma[i], rtol=1e-6)
        chosen[reg_center] = h
    # reg_center is observable: the two penalties train different networks
    assert np.max(np.abs(chosen["init"] - chosen["zero"])) > 1e-3


# ---- the round's module functions, called directly ----------------------------------------------


def test_update_u_is_the_dense_gram_update(setup):
    """``init_u`` then ``update_u`` twice (a batch of 3 with a failed row, then 2 rows) against
    ``U = lam I + sum_ok g g^T`` built densely in numpy from the features: ``"primal"`` keeps an
    upper factor ``R`` with ``R^T R = U``, ``"diag"`` keeps ``diag U``, ``"dual"`` keeps nothing.

    Tolerance: five rank-one Cholesky updates in float64 are backward stable, error ~ eps |U|
    with ``|U| ~ 1e2`` here: rtol 1e-10, atol 1e-12 (as test_primal_and_diag_state_follow_the_updates).

    Mutations caught (checked by hand): the ``ok`` mask ignored (the failed row's features added,
    ``U`` too large along them); the diagonal form adding ``g`` instead of ``g^2``."""
    s = setup
    p = s["g_data"].shape[1]
    z1, z2 = s["z"][:3], s["z"][3:5]
    ok1, ok2 = np.array([[True], [False], [True]]), np.ones((2, 1), bool)
    g = np.concatenate([s["g_data"][[0, 2]], s["g_data"][3:5]])  # the rows that count
    dense = LAM * np.eye(p) + g.T @ g

    @jax.jit
    def both(z1, z2):
        out = {}
        for mode in ("primal", "diag", "dual"):
            u = init_u(mode, p, LAM, jnp.float64)
            u = update_u(u, s["feats"], s["params0"], z1, ok1, mode)
            out[mode] = update_u(u, s["feats"], s["params0"], z2, ok2, mode)
        return out

    out = both(z1, z2)
    r = np.asarray(out["primal"])
    np.testing.assert_array_equal(np.triu(r), r)
    np.testing.assert_allclose(r.T @ r, dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["diag"], np.diag(dense), rtol=1e-10)
    assert out["dual"].shape == (0,)


def test_posterior_in_chunks_is_the_dense_variance(setup):
    """``posterior`` at 40 points in chunks of 7 (6 chunks, the last padded): ``mu`` is the
    network's output at each point (one unchunked call), ``var`` the dense numpy
    ``lam g^T (lam I + G^T G)^-1 g`` of the fixture, for the dual form on a buffer with garbage
    padding rows and for the primal form on the factor of that ``U``.

    Tolerance: RTOL, ATOL of the variance identities above (same matrices, same conditioning); the
    mean is the same network on the same rows, so only the chunked matmul's rounding, 1e-12.

    Mutation caught (checked by hand): ``map_chunks`` not cutting the padding (shapes ``(42,)``)
    or reversing the chunks (``[::-1]``)."""
    s = setup
    r = np.linalg.cholesky(s["u"]).T
    zc = jnp.asarray(s["zc"])

    @jax.jit
    def run(buf, mask, r):
        out = {}
        for mode, u in (("dual", jnp.zeros((0,))), ("primal", r)):
            out[mode] = posterior(s["apply_fn"], s["feats"], s["params0"], s["params0"], u, buf,
                                  mask, zc, LAM, uncertainty=mode, input_map="cube",
                                  chunk_size=7)
        return out

    out = run(s["buf"], s["mask"], r)
    mu_ref = np.asarray(s["apply_fn"](s["params0"], zc))[:, 0]
    for mu, var in out.values():
        assert mu.shape == var.shape == (40,)
        np.testing.assert_allclose(mu, mu_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(var, s["primal"], rtol=RTOL, atol=ATOL)


def test_default_chunk_follows_the_platform(setup, monkeypatch):
    """With ``chunk_size=None`` the primal form's candidates go through ``map_chunks`` in chunks
    of ``chunk_entries() // p`` rows, ``chunk_entries()`` being ``GPU_CHUNK_ENTRIES`` when the
    default backend is ``"gpu"`` and ``CHUNK_ENTRIES`` otherwise (the CPU and unmeasured
    platforms); the backend is forced, so this runs on CPU. Exact integers, no tolerance.

    Mutation caught (checked by hand): ``posterior`` dividing ``CHUNK_ENTRIES`` whatever the
    platform (the ``"gpu"`` chunk is then half as long)."""
    NB = importlib.import_module("ntkbo.algorithms.neural_bo")  # the package's name is the factory
    s = setup
    p = sum(leaf.size for leaf in jax.tree_util.tree_leaves(s["params0"]))
    seen = []
    real = NB.map_chunks
    monkeypatch.setattr(NB, "map_chunks", lambda fn, x, chunk: seen.append(chunk) or real(fn, x,
                                                                                            chunk))
    r = jnp.asarray(np.linalg.cholesky(s["u"]).T)
    for platform in ("cpu", "gpu", "tpu"):
        monkeypatch.setattr(jax, "default_backend", lambda platform=platform: platform)
        NB.posterior(s["apply_fn"], s["feats"], s["params0"], s["params0"], r, s["buf"], s["mask"],
                     jnp.asarray(s["zc"]), LAM, uncertainty="primal", input_map="cube")
    assert seen == [NB.CHUNK_ENTRIES // p, NB.GPU_CHUNK_ENTRIES // p, NB.CHUNK_ENTRIES // p]
    assert NB.GPU_CHUNK_ENTRIES // p > NB.CHUNK_ENTRIES // p  # the platforms differ here


def test_thompson_select_is_each_draws_argmin():
    """``thompson_select`` against numpy: draw ``j`` is ``mu + nu sqrt(max(var, 0)) eps_j``, its
    choice the argmin, ``acq_value`` minus the minimum, ``std`` ``nu sigma`` there. The variances
    include negative rounding values (clipped to 0); continuous draws make ties improbable.

    Exact comparison of indices; values to 1e-15 relative (the same float64 operations in numpy).

    Mutations caught (checked by hand): the argmax of the draw instead of its argmin
    (``values = mu + nu sigma eps``); the clipping dropped (``sqrt`` of a negative variance is
    NaN, which ``argmax`` picks); ``std`` reported without ``nu``."""
    rng = np.random.default_rng(3)
    n, q, nu = 50, 3, 2.5
    mu, var = rng.normal(size=n), rng.uniform(-1e-3, 1.0, size=n)
    # negative rounding at 5 candidates whose mean is high: never chosen when clipped, chosen
    # (as NaN) when not
    var[:5], mu[:5] = -1e-12, 5.0
    eps = rng.normal(size=(q, n))
    i, info = jax.jit(thompson_select)(mu, var, jnp.asarray(nu), eps)
    draw = mu + nu * np.sqrt(np.maximum(var, 0.0)) * eps
    expect = np.argmin(draw, axis=1)
    assert np.all(expect >= 5) and len(set(expect)) > 1  # distinct draws, clipped rows not chosen
    np.testing.assert_array_equal(i, expect)
    np.testing.assert_allclose(info.acq_value, -draw[np.arange(q), expect], rtol=1e-15)
    np.testing.assert_allclose(info.mean, mu[expect], rtol=1e-15)
    np.testing.assert_allclose(info.std, nu * np.sqrt(np.maximum(var[expect], 0.0)),
                               rtol=1e-15)
    assert float(info.nu) == nu
    assert int(info.duplicates_replaced) == 0
    # Observed candidates: draw 0's minimiser marked as one, it takes its best other candidate;
    # the other draws keep theirs. Mutation checked: ignoring ``duplicate`` fails here.
    dup = np.zeros(n, bool)
    dup[expect[0]] = True
    i, info = jax.jit(thompson_select)(mu, var, jnp.asarray(nu), eps, jnp.asarray(dup))
    second = np.argmin(np.where(dup, np.inf, draw[0]))
    want = [second] + [e if e != expect[0] else np.argmin(np.where(dup, np.inf, draw[j]))
                       for j, e in enumerate(expect[1:], 1)]
    np.testing.assert_array_equal(i, want)
    assert int(info.duplicates_replaced) == sum(e == expect[0] for e in expect)


# ---- training options of the authors' recipe, presets ---------------------------------------------


def _tiny_training_problem():
    """A width-16 network in d = 2 with 6 points (numpy inputs): the training tests' data."""
    d, width = 2, 16
    init_fn, apply_fn, _ = mlp(1, width, W_std=paper_W_std(d, 1), b_std=0.1)
    _, params0 = init_fn(jax.random.PRNGKey(3), (-1, d))
    rng = np.random.default_rng(4)
    z = rng.uniform(-1.0, 1.0, size=(6, d))
    y = np.sin(2.0 * z[:, 0]) - z[:, 1]
    return apply_fn, grad_features(apply_fn), params0, z, y, np.ones(6, bool)


def test_kept_adam_state_continues_the_training():
    """Two TrainNN calls of J Adam steps, the second continuing the first's optimiser state, are one
    call of 2 J steps (the same data: the authors' kept ``torch.optim.Adam``), to float rounding
    (float64, 40 steps: 1e-12). The rate is small enough that the loss decreases at every step, so
    the returned best iterate is the last one, as the comparison needs (asserted).
    Mutation caught: the second call starting a fresh Adam state (``opt_state=None``) differs by
    Adam's bias correction and zeroed moments (applied by hand: the test fails)."""
    from ntkbo.algorithms.neural_bo import train_nn

    apply_fn, feats, params0, z, y, mask = _tiny_training_problem()
    kw = dict(learning_rate=1e-3, optimizer="adam", warm_start=True, reg_center="zero",
              reduction="mean", penalty=1e-4)
    p1, _, l1, ok1, s1 = train_nn(apply_fn, feats, params0, params0, z, y, mask, LAM,
                                  num_steps=20, **kw)
    p2, _, l2, ok2, s2 = train_nn(apply_fn, feats, params0, p1, z, y, mask, LAM, num_steps=20,
                                  opt_state=s1, **kw)
    p_one, _, l_one, _, s_one = train_nn(apply_fn, feats, params0, params0, z, y, mask, LAM,
                                         num_steps=40, **kw)
    assert bool(ok1) and bool(ok2) and float(l2) < float(l1)
    for a, b in zip(jax.tree_util.tree_leaves(p2), jax.tree_util.tree_leaves(p_one)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert int(s2[0].count) == int(s_one[0].count) == 40
    np.testing.assert_allclose(float(l2), float(l_one), rtol=1e-12)


def test_update_keeps_the_optimizer_state_only_when_asked():
    """``update`` stores Adam's state after each training when ``keep_optimizer_state`` (its step
    count grows by ``num_steps`` per update) and keeps none (``()``) otherwise.
    Mutation caught: ``update`` not storing the trained state (count stays 0)."""
    bounds = np.array([[0.0, 0.0], [1.0, 1.0]])
    x = np.array([[0.1, 0.2], [0.7, 0.4], [0.4, 0.9]])
    y = np.array([0.3, -0.2, 1.0])
    counts = {}
    for keep in (True, False):
        algo = neural_bo(network=dict(width=8),
                         training=dict(optimizer="adam", warm_start=True,
                                       keep_optimizer_state=keep, num_steps=5),
                         input_map="centered")

        @jax.jit
        def three(algo=algo):
            state = algo.init(jax.random.PRNGKey(0), bounds, 4)
            for i in range(3):
                state, _ = algo.update(state, x[i:i + 1], y[i:i + 1])
            return state.opt_state

        counts[keep] = three()
    assert int(counts[True][0].count) == 15 and counts[False] == ()


def test_train_penalty_is_the_weight_decay_coefficient():
    """One GD step with rate ``eta`` is ``theta - eta (grad L_data + penalty (theta - c))`` with
    ``c = 0`` (``reg_center="zero"``), ``L_data = 1/2 sum (h - y)^2``, computed here with
    ``jax.grad`` of the data term alone (float64: 1e-12). ``penalty = 0.3`` differs from
    ``lam`` so that the rule is visible. Mutation caught: the penalty ignored (``lam`` used),
    or the centre ``theta_0`` used with ``reg_center="zero"``."""
    from ntkbo.algorithms.neural_bo import train_nn

    apply_fn, feats, params0, z, y, mask = _tiny_training_problem()
    start = jax.tree_util.tree_map(lambda v: 1.5 * v + 0.01, params0)  # theta_{t-1} != theta_0
    eta, penalty = 1e-2, 0.3
    p1, *_ = train_nn(apply_fn, feats, params0, start, z, y, mask, LAM, learning_rate=eta,
                      num_steps=1, optimizer="gd", warm_start=True, reg_center="zero",
                      reduction="sum", penalty=penalty)
    g = jax.grad(lambda p: 0.5 * jnp.sum((apply_fn(p, z)[:, 0] - y) ** 2))(start)
    expect = jax.tree_util.tree_map(lambda t, gi: t - eta * (gi + penalty * t), start, g)
    for a, b in zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(expect)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_centered_input_map_is_the_authors_normalisation():
    """``input_map="centered"`` feeds ``2 z - 1`` (the box mapped to ``[-1, 1]^d``, the authors'
    code's ``(x - mid) / half-range``) on ``d`` inputs. Mutation caught: mapping to the unit cube
    instead."""
    from ntkbo.algorithms.neural_bo import embed, input_dim

    lo, hi = np.array([-2.0, 10.0]), np.array([4.0, 14.0])
    x = np.array([[-2.0, 10.0], [1.0, 12.0], [4.0, 14.0], [2.5, 11.0]])
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    np.testing.assert_allclose(embed((x - lo) / (hi - lo), "centered"), (x - mid) / half,
                               atol=1e-15)
    assert input_dim(2, "centered") == 2


def test_presets_expand_and_the_given_options_win():
    """``preset=P`` is ``PRESETS[P]`` with the given options on top: the record (every resolved
    option) equals that of the expanded call, an option given with it overrides the preset's,
    ``resolved_options`` (experiment digests) agrees, and an unknown preset or one of an algorithm
    without presets is refused naming ``preset``.
    Mutations caught: the preset applied over the given options (``{**options, **preset}``: the
    width override is lost); the preset's name recorded instead of its options."""
    from ntkbo.algorithms.neural_bo import PRESETS

    A = ntkbo.algorithms
    for name, options in PRESETS.items():
        assert A.neural_bo(preset=name).config == A.neural_bo(**options).config
        assert A.resolved_options("neural_bo", preset=name) == A.resolved_options("neural_bo",
                                                                                   **options)
    mixed = A.get("neural_bo", preset="authors", network=dict(width=64)).config.to_json()
    # the given network field merges into the preset's network, the other parts stay (mutation
    # checked: with_preset replacing a part whole, {**preset, **options}, loses b_std=1.0)
    assert mixed["network"]["width"] == 64 and mixed["network"]["b_std"] == 1.0
    assert mixed["training"]["optimizer"] == "adam"
    assert mixed["training"]["penalty"] == PRESETS["authors"]["training"]["penalty"]
    assert "preset" not in mixed
    with pytest.raises(ValueError, match="preset"):
        A.neural_bo(preset="theory")
    with pytest.raises(ValueError, match="preset"):
        A.gp(preset="paper")
