"""``ntkbo.ask_tell.recommend``'s model answer through ``Algorithm.posterior_mean``: every
model-based algorithm gives one, the GP's is its closed-form posterior mean, NeuralBO's its
network, and an algorithm without a model (or without one yet) gives none.

Cost: one ``update`` compiled per algorithm (twelve points told in one batch), small networks.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbo
from ntkbo import algorithms as A
from ntkbo import ask_tell as AT

BRANIN = ntkbo.benchmarks.get("branin")
HEAT = ntkbo.benchmarks.get("heat_equation")
N = 12
SMALL = dict(network=dict(width=16), training=dict(num_steps=20))

#: Every model-based algorithm of the registry, with options that keep it small.
MODEL_BASED = {
    "gp": {}, "ntk_gp": {}, "gp_cei": dict(n_constraints=1), "ntk_gp_cei": dict(n_constraints=1),
    "neural_bo": SMALL, "neural_cbo": dict(SMALL, n_constraints=1),
    "pinn_bo": dict(SMALL, pde=HEAT.pde), "pinn_ntk_gp": dict(pde=HEAT.pde),
    "go_ucb": dict(network=dict(width=8), n_explore=4, training=dict(num_steps=20)),
    "sto_bnts": dict(network=dict(width=16), training=dict(num_steps=2)),
    "sto_bnts_linear": dict(network=dict(width=16)),
    "neural_greedy": dict(network=dict(width=16)), "posterior_smb": dict(network=dict(width=16)),
    "neural_ucb": SMALL, "neural_ts": SMALL,
    "neural_ucb_log": SMALL, "dngo": SMALL, "neural_lin_ts": SMALL,
}


def problem_for(name):
    return HEAT if A.uses_pde(name) else BRANIN


def told(name, options, n=N, seed=0):
    """``(algo, study)``: ``name`` built with ``options`` and told ``n`` random points of its
    problem in one batch (one constraint value each for a constrained algorithm, about half of
    them feasible)."""
    if name == "neural_ucb_log":
        algo = A.get("neural_ucb", **options, y_transform="log")
    else:
        algo = A.get(name, **options)
    problem = problem_for(name)
    lo, hi = (np.asarray(b, np.float64) for b in problem.bounds)
    rng = np.random.default_rng(seed)
    x = lo + rng.uniform(size=(n, lo.shape[0])) * (hi - lo)
    y = np.array([float(problem.fn(jnp.asarray(p))) for p in x])
    study = AT.start(algo, problem.bounds, jax.random.PRNGKey(seed), n_init=0)
    c = rng.normal(size=(n, 1)) if algo.n_constraints else None
    return algo, AT.tell(algo, study, x, y, c)


@pytest.mark.parametrize("name", sorted(MODEL_BASED))
def test_every_model_based_algorithm_recommends_its_models_minimiser(name):
    """``recommend`` gives a model answer, the observed point of smallest ``posterior_mean``
    among the successful, feasible ones, with that mean; ``posterior_mean`` evaluated here on
    the told points (float64, as told) must agree: the same points in the state's dtype, so
    1e-9 relative for float64 rounding of the unit-cube map. Catches (checked): a factory
    without ``posterior_mean`` (the model answer is None), ``recommend`` taking ``argmax``
    (the answer is not the minimum)."""
    algo, study = told(name, MODEL_BASED[name])
    assert algo.posterior_mean is not None
    rec = AT.recommend(algo, study)
    assert rec is not None and rec.model_x is not None and rec.model_mean is not None
    assert np.isfinite(rec.model_mean)
    x, y = AT.observations(study)
    mu = np.asarray(algo.posterior_mean(study.state, jnp.asarray(x)), np.float64)
    ok = np.isfinite(y)
    if algo.n_constraints:
        ok &= np.all(AT.constraint_observations(algo, study) <= 0, axis=1)
    j = np.flatnonzero(ok)[np.argmin(mu[ok])]
    np.testing.assert_array_equal(rec.model_x, x[j])
    np.testing.assert_allclose(rec.model_mean, mu[j], rtol=1e-9)
    assert rec.model_trial == j  # told in one batch: trial ids are the rows


@pytest.mark.parametrize("name", ["gp_cei", "neural_cbo"])
def test_a_constrained_model_answer_is_observed_feasible(name):
    """The objective's model does not see the constraints, so the point of its smallest mean
    may have been observed infeasible: told the same points and values again with that point
    alone infeasible, the model answer is the smallest mean among the others (the objective
    model, and so its means, is the same: 1e-9 relative for float64 rounding). Catches
    (checked): ``recommend`` ignoring the observed constraints (mutation: dropping
    ``np.all(study.told_y[:, 1:] <= 0, axis=1)`` from its rows: it answers the infeasible
    point)."""
    algo, study = told(name, MODEL_BASED[name])
    assert algo.posterior_mean is not None
    x, y = AT.observations(study)
    mu = np.asarray(algo.posterior_mean(study.state, jnp.asarray(x)), np.float64)
    worst = np.where(np.arange(N) == np.argmin(mu), 1.0, -1.0)[:, None]
    again = AT.tell(algo, AT.start(algo, BRANIN.bounds, jax.random.PRNGKey(0), n_init=0), x, y,
                    worst)
    rec = AT.recommend(algo, again)
    assert rec is not None and rec.model_mean is not None
    j = np.argsort(mu)[1]
    assert rec.model_trial == j
    np.testing.assert_allclose(rec.model_mean, mu[j], rtol=1e-9)


def test_gp_model_answer_is_the_closed_form_posterior_mean():
    """The GP's ``posterior_mean`` at the told points equals ``m + s k(Z, Z) (K + lam I)^-1
    (y - m)/s`` written out in numpy (Rasmussen and Williams eq. 2.25) with the fitted
    hyper-parameters read from the state (RBF with ARD lengthscales, signal, noise plus
    ``MIN_NOISE``), the observations standardised with the sample standard deviation (ddof 1),
    the inputs mapped to the unit cube. Tolerance: the library's Cholesky adds a relative jitter
    of 1e-10 (float64) to the diagonal, against a noise variance >= 1e-4: about 1e-6 relative
    at most. Catches (checked): the mean left standardised (mutation: ``return mu`` in
    ``gp_bo.posterior_mean``), the unit-cube map dropped (mutation: ``x`` instead of
    ``to_unit(x, ...)``)."""
    gp_bo = importlib.import_module("ntkbo.algorithms.gp_bo")
    algo, study = told("gp", dict(kernel="rbf"))
    x, y = AT.observations(study)
    p = jax.tree_util.tree_map(np.asarray, study.state.params)
    lo, hi = np.asarray(BRANIN.bounds, np.float64)
    z = (x - lo) / (hi - lo)
    ell = np.exp(np.maximum(p["log_ell"], np.log(gp_bo.MIN_LENGTHSCALE)))
    r2 = np.sum(((z[:, None, :] - z[None, :, :]) / ell) ** 2, axis=-1)
    k = np.exp(p["log_signal"]) * np.exp(-0.5 * r2)
    noise = np.exp(p["log_noise"]) + gp_bo.MIN_NOISE
    mean, std = y.mean(), y.std(ddof=1)
    ys = (y - mean) / std
    ref = mean + std * (k @ np.linalg.solve(k + noise * np.eye(N), ys))
    rec = AT.recommend(algo, study)
    assert rec is not None and algo.posterior_mean is not None
    mu = np.asarray(algo.posterior_mean(study.state, jnp.asarray(x)))
    np.testing.assert_allclose(mu, ref, rtol=1e-6, atol=1e-6 * std)
    assert rec.model_mean == pytest.approx(ref.min(), rel=1e-6)


def test_neural_bo_model_answer_is_its_network():
    """NeuralBO's ``posterior_mean`` is the trained network evaluated directly: ``mean + std
    h(z; theta_t)`` with the network's ``apply`` on the told points mapped to the unit sphere
    here (``u / |u|``, ``u = (2 z - 1, 1)``) and the standardisation computed in numpy (ddof 1).
    1e-10 relative: the same float64 forward pass, the maps rounded differently. Catches
    (checked): the initial parameters used (mutation: ``state.params0``), the mean left
    standardised (mutation: ``return h``)."""
    NB = importlib.import_module("ntkbo.algorithms.neural_bo")
    algo, study = told("neural_bo", SMALL)
    assert algo.posterior_mean is not None and algo.config is not None
    x, y = AT.observations(study)
    lo, hi = np.asarray(BRANIN.bounds, np.float64)
    u = np.concatenate([2 * (x - lo) / (hi - lo) - 1, np.ones((N, 1))], axis=1)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    net = algo.config["network"]
    apply_fn = NB.network(2, net["depth"], net["width"], net["activation"], net["W_std"],
                          net["b_std"], "sphere")[1]
    h = np.asarray(apply_fn(study.state.params, jnp.asarray(u)))[:, 0]
    ref = y.mean() + y.std(ddof=1) * h
    mu = np.asarray(algo.posterior_mean(study.state, jnp.asarray(x)))
    np.testing.assert_allclose(mu, ref, rtol=1e-10, atol=1e-12)
    # not vacuous: the trained network is not the initial one
    h0 = np.asarray(apply_fn(study.state.params0, jnp.asarray(u)))[:, 0]
    assert not np.allclose(h, h0)


def test_no_model_answer_without_a_model():
    """Random search has no model; GO-UCB has none in Phase I (fewer points than
    ``n_explore``: its ``posterior_mean`` is NaN): ``recommend`` gives the best observation and
    ``None`` for the model's pick; before any success, ``None``. Catches (checked): NaN means
    taken as a model answer (mutation: dropping ``np.isfinite(mu)`` from ``recommend``'s
    rows: ``model_mean`` is NaN)."""
    algo, study = told("random_search", {})
    assert algo.posterior_mean is None
    rec, best = AT.recommend(algo, study), AT.best(study)
    assert rec is not None and best is not None
    bx, by = best
    assert rec.y == by and rec.model_x is None and rec.model_mean is None
    np.testing.assert_array_equal(rec.x, bx)
    algo, study = told("go_ucb", MODEL_BASED["go_ucb"], n=3)
    rec, best = AT.recommend(algo, study), AT.best(study)
    assert rec is not None and best is not None
    assert rec.model_x is None and rec.model_mean is None and rec.y == best[1]
    assert AT.recommend(algo, study._replace(told_y=np.full((3, 1), np.nan))) is None
