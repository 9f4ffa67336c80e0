"""NeuralBO's pathwise Thompson draws (``thompson="pathwise"``): one joint draw with the paper's
marginals, minimised over the candidates and refined by gradients.

Independent references: the covariance ``lam g(a)^T U^-1 g(b)`` (and its diagonal approximation)
in numpy from the explicit gradient features (``ntkbo.kernels.grad_features``), against which a
Monte Carlo estimate of the draws' covariance is checked; the draw ``h + nu g . v`` recomputed in
numpy from those features for the selection rule.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbo import gp as G
from ntkbo.algorithms.neural_bo import (
    cholesky_update,
    embed,
    gram_factor,
    empirical_gram,
    init_u,
    neural_bo,
    paper_W_std,
    pathwise_direction,
    pathwise_draw,
)
from ntkbo.kernels import grad_features, mlp

D_IN, WIDTH, N_OBS, CAP = 3, 16, 6, 8
# lam large enough that the observation noise shapes the posterior: dropping Matheron's noise term
# e moves the variance at the observed points by more than the Monte Carlo tolerance below.
LAM = 0.3
NUM_DRAWS = 8192


@pytest.fixture(scope="module")
def draws():
    """A width-16 network on 3 inputs, a buffer of capacity 8 holding 6 points (the padding rows
    are garbage, to check the masking), 5 test points (two of them observed), and ``NUM_DRAWS``
    values of ``s(x) = g(x) . v`` at the test points for each form of ``U``."""
    init_fn, apply_fn, _ = mlp(1, WIDTH, W_std=paper_W_std(D_IN, 1))
    _, theta = jax.jit(lambda k: init_fn(k, (-1, D_IN)))(jax.random.PRNGKey(0))
    feats = jax.jit(grad_features(apply_fn))
    rng = np.random.default_rng(3)
    z = rng.normal(size=(N_OBS, D_IN))
    buf = np.concatenate([z, np.full((CAP - N_OBS, D_IN), 0.7)])
    mask = np.arange(CAP) < N_OBS
    zt = np.concatenate([z[:2], rng.normal(size=(3, D_IN))])
    g_data, g_t = np.asarray(feats(z, theta)), np.asarray(feats(zt, theta))
    p = g_data.shape[1]
    u_dense = LAM * np.eye(p) + g_data.T @ g_data
    cov = {"dual": LAM * g_t @ np.linalg.solve(u_dense, g_t.T)}
    cov["primal"] = cov["dual"]
    u_diag_np = LAM + np.sum(g_data**2, axis=0)
    cov["diag"] = LAM * (g_t / u_diag_np) @ g_t.T
    # the states each form keeps (built by the module's own update functions, as `update` does)
    r = init_u("primal", p, LAM, jnp.float64)
    for row in g_data:
        r = cholesky_update(r, jnp.asarray(row))
    states = {"dual": G.Factor(gram_factor(empirical_gram(apply_fn, theta, buf, buf), mask, LAM)),
              "dual_refactored": jnp.zeros((0,)),  # not a Factor: factored inside the draw
              "primal": r, "diag": jnp.asarray(u_diag_np)}
    keys = jax.random.split(jax.random.PRNGKey(7), NUM_DRAWS)
    out = {}
    for name, u in states.items():
        form = "dual" if name.startswith("dual") else name

        @jax.jit
        def s_at_test_points(keys, u=u, form=form):
            def one(k):
                v = pathwise_direction(k, apply_fn, theta, u, jnp.asarray(buf), jnp.asarray(mask),
                                       LAM, uncertainty=form)
                # nu = 1 and a zero mean network: the draw is s itself
                return pathwise_draw(apply_fn, jax.tree_util.tree_map(jnp.zeros_like, theta),
                                     theta, v, jnp.asarray(zt), 1.0, "cube")
            return jax.vmap(one)(keys)

        out[name] = (np.asarray(s_at_test_points(keys)), cov[form])
    return out


@pytest.mark.parametrize("name", ["dual", "dual_refactored", "primal", "diag"])
def test_pathwise_draws_have_the_posterior_covariance(draws, name):
    """The Monte Carlo covariance of ``s(x) = g(x) . v`` over ``NUM_DRAWS`` draws equals
    ``lam g(a)^T U^-1 g(b)`` (``diag U`` for ``"diag"``) from numpy: a joint draw whose marginal
    variance is the paper's ``sigma^2`` (Alg. 1 line 3), and mean zero.

    Mutations this catches (each checked by hand): Matheron's correction left out (``v = w``,
    the prior: variance ``k(x, x)`` at the observed points); its noise term left out (``b = G w``);
    ``sqrt(lam)`` left out in the primal and diagonal forms; ``R^-T w`` instead of ``R^-1 w``
    (``trans="T"``); the diagonal form dividing by ``diag U`` instead of its square root."""
    s, cov = draws[name]
    est = np.cov(s, rowvar=False)
    # Standard error of a sample covariance of Gaussians: sqrt((C_aa C_bb + C_ab^2) / N); 5 of them
    # (25 entries checked: a false alarm has probability about 1.5e-5; the keys are fixed, so the
    # outcome is deterministic on a machine).
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / NUM_DRAWS)
    assert np.all(np.abs(est - cov) <= 5 * se), (est, cov)
    # the mean: 5 standard errors of a sample mean
    assert np.all(np.abs(s.mean(axis=0)) <= 5 * np.sqrt(np.diag(cov) / NUM_DRAWS))
    if name != "diag":  # the diagonal approximation keeps most of the prior variance
        # the observed points' variance is below lam (a noisy observation's posterior), unlike
        # the prior's k(x, x) = |x|^2 (~3 here): the check has power against the prior draw
        assert np.all(np.diag(cov)[:2] < LAM)


@pytest.fixture(scope="module")
def suggestion():
    """``neural_bo(thompson="pathwise")`` at width 32 on a 2-D box after 6 observations: the state
    and the suggestions of one key with pure candidate search (``acq_method="none"``) and with the
    default refinement, ``nu = 3``."""
    d, width, lam, nu = 2, 32, 0.1, 3.0
    bounds = np.array([[-1.0, 0.0], [2.0, 4.0]])
    rng = np.random.default_rng(11)
    x = bounds[0] + (bounds[1] - bounds[0]) * rng.uniform(size=(6, d))
    y = np.sin(2 * x[:, 0]) + 0.3 * x[:, 1] ** 2
    out = {}
    for method in ("none", "pgd"):
        algo = neural_bo(network=dict(width=width), lam=lam, nu=nu, thompson="pathwise",
                         search=dict(method=method, num_candidates=128, num_best=0,
                                     num_perturbations=0),
                         input_map="cube", training=dict(num_steps=50))

        @jax.jit
        def one(key, algo=algo):
            state, _ = algo.update(algo.init(jax.random.PRNGKey(1), bounds, 8), x, y)
            return state, algo.suggest(key, state)

        out[method] = one(jax.random.PRNGKey(5))
    return dict(d=d, width=width, lam=lam, nu=nu, bounds=bounds, out=out)


def test_pathwise_suggestion_is_the_minimiser_of_its_draw(suggestion):
    """The suggestion minimises ``f~(c) = h(c) + nu g(c) . v`` over the candidates
    (``acq_method="none"``), and refinement only lowers ``f~`` below that minimum (``"pgd"``).
    ``f~`` is recomputed in numpy from the explicit features ``g`` at ``theta_0`` and the network at
    ``state.params``; ``v`` and the candidates come from the keys ``suggest`` uses.

    Mutations this catches (each checked by hand): the argmax of the draw instead of its argmin
    (``acq = +f~``), both with and without refinement; ``nu`` ignored (``nu_t = 1``); the draw's
    directional term taken at ``theta_t`` instead of ``theta_0`` (static features)."""
    s = suggestion
    from ntkbo import qmc

    d, lam, nu, bounds = s["d"], s["lam"], s["nu"], s["bounds"]
    _, apply_fn, _ = mlp(1, s["width"], W_std=paper_W_std(d, 1))
    feats = grad_features(apply_fn)
    k_cand, k_noise = jax.random.split(jax.random.PRNGKey(5))
    cand = np.asarray(qmc.sobol(k_cand, 128, np.stack([np.zeros(d), np.ones(d)])))
    (k_v,) = jax.random.split(jax.random.fold_in(k_noise, 1), 1)
    to_unit = lambda x: (np.asarray(x) - bounds[0]) / (bounds[1] - bounds[0])  # noqa: E731

    def draw(state, zc):
        v = pathwise_direction(k_v, apply_fn, state.params0, state.u,
                               embed(to_unit(state.data.x), "cube"),
                               np.arange(8) < 6, lam, uncertainty="dual")
        v_flat = jax.flatten_util.ravel_pytree(v)[0]
        g = np.asarray(feats(embed(zc, "cube"), state.params0))
        h = np.asarray(apply_fn(state.params, embed(zc, "cube")))[:, 0]
        return h + nu * g @ np.asarray(v_flat)

    state, (x, info) = s["out"]["none"]
    f = draw(state, cand)
    i = int(np.argmin(f))
    assert np.sort(f)[1] - f[i] > 1e-9  # an isolated minimum: rounding cannot swap the choice
    np.testing.assert_allclose(np.asarray(x)[0], bounds[0] + (bounds[1] - bounds[0]) * cand[i],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(info.acq_value, [-f[i]], rtol=1e-9)
    # the draw's term nu g . v is observable: it moves the choice away from the mean's argmin
    assert i != int(np.argmin(np.asarray(apply_fn(state.params, embed(cand, "cube")))[:, 0]))

    state, (x, info) = s["out"]["pgd"]
    f_x = draw(state, to_unit(x))[0]
    assert f_x <= f[i] + 1e-12  # refinement never returns a point worse than the best candidate
    assert f_x < f[i] - 1e-6  # and here it improves on it (a 2-D smooth-almost-everywhere draw)
    np.testing.assert_allclose(info.acq_value, [-f_x], rtol=1e-9)
