"""NeuralUCB / NeuralTS: the bonus and the Thompson std against a dense float64 inverse of
``U = lam I + sum g g^T`` built independently, the batch (believer) rule, and the driver."""

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import ntkbo
from algo_checks import assert_in_box_and_deterministic, vmapped_twice
from ntkbo.kernels import mlp

NU_MOD = importlib.import_module("ntkbo.algorithms.neural_ucb")

WIDTH, LAM, NU = 8, 0.1, 0.7
SMALL = dict(network=dict(width=WIDTH), lam=LAM, nu=NU, training=dict(num_steps=5),
             search=dict(num_candidates=32, num_restarts=2))
#: ``SMALL`` with 3 ascent steps (NeuralUCB only: NeuralTS has no ascent).
SMALL_ASCENT = dict(SMALL, search=dict(SMALL["search"], num_steps=3))


@pytest.fixture(scope="module")
def branin():
    return ntkbo.benchmarks.get("branin")


def _embed(z):
    """Unit cube -> sqrt(d + 1) times the unit sphere, written out independently."""
    u = np.concatenate([2.0 * z - 1.0, np.ones((z.shape[0], 1))], axis=1)
    return math.sqrt(u.shape[1]) * u / np.linalg.norm(u, axis=1, keepdims=True)


def _grads(params, x):
    """Per-point gradients of the network w.r.t. all parameters, flattened: (n, p)."""
    _, apply_fn, _ = mlp(1, WIDTH, "relu", W_std=math.sqrt(2.0))
    flat, unravel = ravel_pytree(params)
    g = jax.vmap(jax.grad(lambda f, xi: apply_fn(unravel(f), xi[None])[0, 0]), (None, 0))
    return np.asarray(g(flat, jnp.asarray(x)))


def _history(algo, branin, batches):
    """Runs init + updates; returns the state and the features g(x_i; theta_{i-1}) (numpy)."""
    b = np.asarray(branin.bounds)
    state = algo.init(jax.random.PRNGKey(5), branin.bounds, 8)
    feats = []
    for xb in batches:
        feats.append(_grads(state.params, _embed((xb - b[0]) / (b[1] - b[0]))))
        state, _ = algo.update(state, jnp.asarray(xb), jax.vmap(branin.fn)(jnp.asarray(xb)))
    return state, np.concatenate(feats)


BATCHES = [np.array([[0.0, 5.0], [5.0, 10.0], [-2.0, 1.0]]), np.array([[8.0, 3.0], [3.0, 3.0]])]


@pytest.mark.parametrize("u", ["full", "diag"])
def test_ucb_bonus_matches_dense_inverse(u, branin):
    algo = NU_MOD.neural_ucb(u=u, q=2, **SMALL_ASCENT)
    state, g_obs = _history(algo, branin, BATCHES)
    x, info = jax.jit(algo.suggest)(jax.random.PRNGKey(9), state)
    b = np.asarray(branin.bounds)
    xe = _embed((np.asarray(x) - b[0]) / (b[1] - b[0]))
    g = _grads(state.params, xe)  # features of the current (trained) network at the queries
    p = g.shape[1]
    if u == "full":
        u_mat = LAM * np.eye(p) + g_obs.T @ g_obs
        b1 = NU * np.sqrt(g[0] @ np.linalg.inv(u_mat) @ g[0])
        # Believer: the first query's feature joins U before the second is chosen.
        u_mat2 = u_mat + np.outer(g[0], g[0])
        b2 = NU * np.sqrt(g[1] @ np.linalg.inv(u_mat2) @ g[1])
    else:
        u_diag = LAM + np.sum(g_obs**2, axis=0)
        b1 = NU * np.sqrt(np.sum(g[0] ** 2 / u_diag))
        b2 = NU * np.sqrt(np.sum(g[1] ** 2 / (u_diag + g[0] ** 2)))
    # float64 dual (Woodbury) form with a 1e-10 relative jitter against a dense inverse: agreement
    # to ~1e-8 relative; 1e-6 leaves room for the conditioning of U (lam = 0.1).
    np.testing.assert_allclose(np.asarray(info.bonus), [b1, b2], rtol=1e-6)
    _, apply_fn, _ = mlp(1, WIDTH, "relu", W_std=math.sqrt(2.0))
    np.testing.assert_allclose(np.asarray(info.mean),
                               np.asarray(apply_fn(state.params, jnp.asarray(xe))[:, 0]),
                               rtol=1e-10, atol=1e-12)
    # The acquisition maximised is -(h - bonus).
    np.testing.assert_allclose(np.asarray(info.acq_value),
                               np.asarray(info.bonus) - np.asarray(info.mean), rtol=1e-9)
    # Building block: ucb_bonus on the stored features equals the first query's bonus.
    if u == "full":
        assert isinstance(state.u, NU_MOD.FeaturesU)
        direct = NU_MOD.ucb_bonus(jnp.asarray(g[:1]), NU, LAM, u=u, g_obs=state.u.g_obs.x,
                                  mask=ntkbo.data.mask(state.u.g_obs))
    else:
        assert isinstance(state.u, NU_MOD.DiagU)
        direct = NU_MOD.ucb_bonus(jnp.asarray(g[:1]), NU, LAM, u=u, u_diag=state.u.diag)
    np.testing.assert_allclose(np.asarray(direct), [b1], rtol=1e-6)


@pytest.mark.parametrize("style", ["ucb", "ts"])
def test_state_fields_have_one_shape_per_form(style, branin):
    """Each form of ``U`` has its type and no field of the state is a placeholder: ``u="full"``
    keeps ``FeaturesU`` (features ``(C, p)``), ``u="diag"`` ``DiagU`` (``(p,)``), and the other
    fields have the same shapes in both. Mutation caught (checked): the ``(C, 1)`` zero features
    kept beside ``DiagU``."""
    factory = NU_MOD.neural_ucb if style == "ucb" else NU_MOD.neural_ts
    states = {u: jax.eval_shape(lambda k, u=u: factory(u=u, **SMALL).init(k, branin.bounds, 8),
                                jax.random.PRNGKey(0)) for u in ("full", "diag")}
    full, diag = states["full"], states["diag"]
    p = full.u.g_obs.x.shape[1]
    assert isinstance(full.u, NU_MOD.FeaturesU) and full.u.g_obs.x.shape == (8, p)
    assert isinstance(diag.u, NU_MOD.DiagU) and diag.u.diag.shape == (p,)
    assert full._fields == diag._fields == ("data", "bounds", "params0", "params", "u")
    rest = [jax.tree.map(lambda a: a.shape, s._replace(u=None)) for s in (full, diag)]
    assert rest[0] == rest[1]


def test_ucb_bonus_names_a_missing_argument():
    """``ucb_bonus`` refuses ``u="full"`` without the observed features (``g_obs``, ``mask``) and
    ``u="diag"`` without ``u_diag``, naming them. Mutation caught (checked): the checks removed
    (``None`` then reaches the linear algebra, which fails with another error)."""
    g = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="u='full' needs g_obs and mask"):
        NU_MOD.ucb_bonus(g, 1.0, 1.0, u="full", mask=jnp.ones(2, bool))
    with pytest.raises(ValueError, match="u='diag' needs u_diag"):
        NU_MOD.ucb_bonus(g, 1.0, 1.0, u="diag")


@pytest.mark.parametrize("u", ["full", "diag"])
def test_ts_std_matches_dense_inverse(u, branin):
    algo = NU_MOD.neural_ts(u=u, q=2, **SMALL)
    state, g_obs = _history(algo, branin, BATCHES)
    x, info = jax.jit(algo.suggest)(jax.random.PRNGKey(9), state)
    b = np.asarray(branin.bounds)
    g = _grads(state.params, _embed((np.asarray(x) - b[0]) / (b[1] - b[0])))
    if u == "full":
        u_inv = np.linalg.inv(LAM * np.eye(g.shape[1]) + g_obs.T @ g_obs)
        quad = np.einsum("ip,pq,iq->i", g, u_inv, g)
    else:
        quad = np.sum(g**2 / (LAM + np.sum(g_obs**2, axis=0)), axis=1)
    # NeuralTS: nu sigma, sigma^2 = lam g^T U^-1 g (no believer step: independent draws).
    np.testing.assert_allclose(np.asarray(info.std), NU * np.sqrt(LAM * quad), rtol=1e-6)


@pytest.fixture(scope="module")
def vmapped(branin):
    algo = NU_MOD.neural_ucb(**SMALL_ASCENT)
    return vmapped_twice(algo, branin, 7)


def test_runs_vmapped_and_deterministic(vmapped, branin):
    res, again = vmapped
    assert_in_box_and_deterministic(res, again, branin.bounds, 7)
    assert bool(np.all(res.update_info.train_ok))


def test_neural_ts_runs_with_batch(branin):
    algo = NU_MOD.neural_ts(u="diag", q=3, **SMALL)
    res = ntkbo.minimize(algo, branin, 9, jax.random.PRNGKey(1), n_init=3)
    b = np.asarray(branin.bounds)
    assert res.x.shape == (9, 2)
    assert np.all((np.asarray(res.x) >= b[0]) & (np.asarray(res.x) <= b[1]))
    for r in range(2):  # each batch of 3 is distinct
        batch = np.asarray(res.x[3 + 3 * r: 6 + 3 * r])
        assert len({tuple(np.round(row, 12)) for row in batch}) == 3


@pytest.mark.parametrize("factory, style, low", [("neural_ucb", "ucb", 0.3), ("neural_ts", "ts", 1.0)])
def test_default_nu_follows_the_dimension(factory, style, low):
    """The default ``nu="by_dimension"``: the value chosen on the tuning keys when ``d <= 6``, the
    papers' 0.1 above, as the ``nu`` the suggestion used (its ``info``). Mutation caught
    (checked): a constant default ``nu = 0.1`` fails at d = 2; a limit ``d < 6`` would make the
    rule's own function disagree at d = 6."""
    assert NU_MOD.nu_by_dimension(style, 6) == low and NU_MOD.nu_by_dimension(style, 7) == 0.1
    algo = getattr(NU_MOD, factory)(network=dict(width=WIDTH), training=dict(num_steps=1),
                                    search=dict(num_candidates=8, num_restarts=1))
    for d, want in [(2, low), (7, 0.1)]:
        bounds = jnp.stack([jnp.zeros(d), jnp.ones(d)])
        state = algo.init(jax.random.PRNGKey(0), bounds, 4)
        x = jax.random.uniform(jax.random.PRNGKey(1), (3, d))
        state, _ = algo.update(state, x, jnp.sum(x**2, axis=1))
        _, info = jax.jit(algo.suggest)(jax.random.PRNGKey(2), state)
        assert float(info.nu) == want


@pytest.mark.parametrize("factory", ["neural_ucb", "neural_ts"])
@pytest.mark.parametrize("kwargs, match", [
    (dict(lam=0.0), "lam"), (dict(nu=-1.0), "nu"), (dict(u="primal"), "u"),
    (dict(q=0), "q"), (dict(network=dict(width=0)), "width"), (dict(input_map="ball"), "input_map"),
    (dict(training=dict(num_steps=-1)), "num_steps"),
    (dict(network=dict(activation="nope")), "activation"),
    (dict(y_transform="box-cox"), "y_transform"), (dict(nu="repo"), "nu"),
])
def test_bad_arguments(factory, kwargs, match):
    with pytest.raises(ValueError, match=match):
        getattr(NU_MOD, factory)(**kwargs)



@pytest.mark.parametrize("factory", ["neural_ucb", "neural_ts"])
def test_y_transform_log_is_the_default_on_log_warped_observations(factory, branin):
    """``y_transform="log"`` on ``y`` is the untransformed algorithm on
    ``log((y - min) / (max - min) + 0.01)`` computed here with numpy: the same trained network
    and the same suggestion."""
    x = np.concatenate(BATCHES)
    y = np.asarray(jax.vmap(branin.fn)(jnp.asarray(x)))
    warped = np.log((y - y.min()) / (y.max() - y.min()) + 0.01)
    key = jax.random.PRNGKey(8)
    states = []
    for kwargs, obs in ((dict(y_transform="log"), y), ({}, warped)):
        algo = getattr(NU_MOD, factory)(**SMALL, **kwargs)
        state, _ = algo.update(algo.init(key, branin.bounds, 8), jnp.asarray(x),
                               jnp.asarray(obs))
        states.append((state, algo.suggest(key, state)[0]))
    (s_log, x_log), (s_ref, x_ref) = states
    # Both runs see the same standardised targets up to float64 rounding (~1e-15); 5 GD steps
    # and one argmax over the same candidates keep the difference at that level.
    np.testing.assert_allclose(ravel_pytree(s_log.params)[0], ravel_pytree(s_ref.params)[0],
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(x_log, x_ref, rtol=0, atol=1e-8)
