"""``gp``'s fitted constant mean (``fit.mean="constant"``): ``ntkbo.gp``'s profiled likelihood and
generalised least squares mean against float64 numpy written out here, its gradient against
finite differences, ``gp``'s posterior with the mean, the unchanged default and BIC's count.
The session runs in float64 (conftest), so the tolerances are float64's."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize as sopt

import ntkbo.algorithms as A
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.algorithms import gp_bo
from ntkbo.algorithms.observations import standardized_data
from ntkbo.kernels.stationary import STATIONARY

N, DIM, CAP = 10, 2, 16  # capacity 16 > 10 rows: padding that must not count
ELL, SIGNAL, LAM = np.array([0.3, 0.6]), 0.9, 0.01


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(N, DIM))
    y = np.sin(4.0 * x).sum(1) + 0.8  # a mean well away from 0
    data = D.append(D.empty(CAP, DIM, jnp.float64), jnp.asarray(x), jnp.asarray(y))
    return x, y, data


def _np_gram(x, ell, signal, lam):
    r2 = (((x[:, None, :] - x[None, :, :]) / ell) ** 2).sum(-1)
    return signal * np.exp(-0.5 * r2) + lam * np.eye(len(x))


def _np_lml(x, y, ell, signal, lam, m):
    """R&W eq. 2.30 at the constant mean ``m``, float64."""
    a = _np_gram(x, ell, signal, lam)
    r = y - m
    _, logdet = np.linalg.slogdet(a)
    return -0.5 * r @ np.linalg.solve(a, r) - 0.5 * logdet - 0.5 * len(y) * math.log(2 * math.pi)


def _np_gls(x, y, ell, signal, lam):
    a = _np_gram(x, ell, signal, lam)
    one = np.ones(len(y))
    return one @ np.linalg.solve(a, y) / (one @ np.linalg.solve(a, one))


def _kernel(ell, signal):
    return lambda a, b: STATIONARY["rbf"](a, b, jnp.asarray(ell), signal)


def test_profiled_likelihood_and_gls_mean(case):
    """``profiled_log_marginal_likelihood`` is the numpy likelihood at the mean that
    ``minimize_scalar`` finds, and ``gls_mean`` that mean (and the closed form). Tolerances: the
    1-D search stops at ``xtol`` 1e-10, so its mean is good to about 1e-8 and the likelihood,
    flat there, to about 1e-12; jitter 0 and float64 on both sides, so 1e-9 relative on the
    value and 1e-7 on the mean. Catches (checked by hand on a copy): the ones vector counting the
    6 padding rows (``m*`` off by 0.3 here), the mean left at 0 (the value off by 0.43 nats)."""
    x, y, data = case
    res = sopt.minimize_scalar(lambda m: -_np_lml(x, y, ELL, SIGNAL, LAM, m),
                               bracket=(-2.0, 2.0), tol=1e-10)
    want = -res.fun
    assert abs(res.x - _np_gls(x, y, ELL, SIGNAL, LAM)) <= 1e-7
    assert want - _np_lml(x, y, ELL, SIGNAL, LAM, 0.0) > 0.4  # the mean matters here
    k = _kernel(ELL, SIGNAL)
    got = float(G.profiled_log_marginal_likelihood(k, data, LAM, jitter=0.0))
    assert abs(got - want) <= 1e-9 * abs(want), (got, want)
    m_star = float(G.gls_mean(G.factor(k, data, LAM, jitter=0.0), data))
    assert abs(m_star - res.x) <= 1e-7, (m_star, res.x)
    # no valid row: mean 0, likelihood 0 (not 0/0)
    empty = D.empty(CAP, DIM, jnp.float64)
    assert float(G.gls_mean(G.factor(k, empty, LAM), empty)) == 0.0
    assert float(G.profiled_log_marginal_likelihood(k, empty, LAM)) == 0.0


def test_profiled_gradient(case):
    """The custom VJP's gradient in ``(log ell, log signal, log lam)`` equals central finite
    differences of the same float64 function (step 1e-6: error about 1e-8 here; tolerance 1e-6
    of the largest entry). Catches (checked by hand on a copy) a backward pass with
    ``alpha = A^-1 y`` (the residual without ``m*``), as the zero-mean likelihood's."""
    _, _, data = case

    def f(t):
        return G.profiled_log_marginal_likelihood(_kernel(jnp.exp(t[:DIM]), jnp.exp(t[DIM])),
                                                  data, jnp.exp(t[DIM + 1]), jitter=0.0)

    f = jax.jit(f)
    t = jnp.log(jnp.asarray([*ELL, SIGNAL, LAM]))
    grad = np.asarray(jax.grad(f)(t))
    fd = np.array([(float(f(t + e)) - float(f(t - e))) / 2e-6 for e in jnp.eye(len(t)) * 1e-6])
    assert np.max(np.abs(grad - fd)) <= 1e-6 * np.max(np.abs(fd)), (grad, fd)


@pytest.fixture(scope="module")
def fitted(case):
    """``gp(acquisition="mean", fit={"ard": True, "mean": "constant"})`` after one update on the
    case's points (the bounds the unit square), jitted once, and its suggestion."""
    x, y, _ = case
    algo = A.get("gp", acquisition="mean", fit={"ard": True, "mean": "constant", "num_steps": 10},
                 search={"num_candidates": 64, "num_restarts": 2, "num_steps": 5})
    bounds = jnp.asarray([[0.0] * DIM, [1.0] * DIM])
    state = algo.init(jax.random.PRNGKey(0), bounds, CAP)
    state, _ = jax.jit(algo.update)(state, jnp.asarray(x), jnp.asarray(y))
    z, info = jax.jit(algo.suggest)(jax.random.PRNGKey(1), state)
    return algo, state, z, info


def test_gp_posterior_mean_with_constant_mean(case, fitted):
    """``gp``'s posterior mean with ``fit.mean="constant"`` is ``m* + k*^T A^-1 (y - m*)`` in
    numpy (standardised outputs, the state's fitted hyper-parameters, ``m*`` the numpy GLS mean):
    at new points through ``posterior_mean`` (which ``ask_tell.recommend`` minimises; mapped
    back to standardised units), and at the suggestion of ``acquisition="mean"``, whose value is
    ``-(mu - m*)`` (the suggest conditions on ``y - m*``). Tolerance 1e-7: the factor's relative
    jitter (``default_jitter``, float64) is the only difference from the numpy formula (seen:
    2e-9).
    Catches (checked by hand on a copy): the suggest not shifting ``y`` (the value off by
    ``m* k*^T A^-1 1``, with ``m* = -1.04`` here), ``fitted_mean`` returning 0."""
    x, _, _ = case
    algo, state, z, info = fitted
    data, mean, std = standardized_data(state.data, state.bounds)
    ys = np.asarray(data.y)[:N]
    ell, signal, lam = gp_fit_values(state.params)
    m_star = _np_gls(x, ys, ell, signal, lam)
    a = _np_gram(x, ell, signal, lam)

    def np_mean(xs):
        r2 = (((xs[:, None, :] - x[None, :, :]) / ell) ** 2).sum(-1)
        return m_star + (signal * np.exp(-0.5 * r2)) @ np.linalg.solve(a, ys - m_star)

    xs = np.random.default_rng(1).uniform(size=(5, DIM))
    got = np.asarray(algo.posterior_mean(state, jnp.asarray(xs)))  # y's units; the unit box
    np.testing.assert_allclose((got - float(mean)) / float(std), np_mean(xs), atol=1e-7)
    # the suggestion's value: -(mu(z) - m*)
    np.testing.assert_allclose(-float(info.acq_value[0]) + m_star, np_mean(np.asarray(z)),
                               atol=1e-7)


def gp_fit_values(params):
    """``(ell (d,), signal, noise)`` of ``gp``'s unconstrained parameters (floors included)."""
    ell = np.exp(np.maximum(np.asarray(params["log_ell"]), math.log(gp_bo.MIN_LENGTHSCALE)))
    return (ell, math.exp(float(params["log_signal"])),
            math.exp(float(params["log_noise"])) + gp_bo.MIN_NOISE)


def test_default_is_the_zero_mean():
    """``fit.mean`` left out or ``"zero"`` resolves to the same options, the zero mean every
    cell stored before the option existed ran (every gp-based registry name, with its presets;
    their format-1 records read so, ``ntkbo.experiments.migrations``), and the default model has
    no mean (``fitted_mean`` is the Python 0.0, so ``suggest`` takes the former code path);
    ``"constant"`` is listed. Bad values and ``ntk_gp`` are refused naming ``fit.mean``. Catches
    (checked by hand on a copy): the default changed (mutation: ``fit_mean="constant"`` in
    ``gp_bo._gp``'s signature)."""
    from ntkbo.experiments.migrations import V1_ABSENT

    gp_names = [n for n in A.names() if A.base_name(n) == "gp"]
    assert "gp_ei" in gp_names
    for name in gp_names:
        for preset in [None, *A.presets(name)]:
            base = A.resolved_options(name, preset=preset)
            assert base["fit_mean"] == V1_ABSENT["gp"]["fit_mean"] == "zero"
            assert A.resolved_options(name, preset=preset, fit={"mean": "zero"}) == base
            assert A.resolved_options(name, preset=preset,
                                      fit={"mean": "constant"})["fit_mean"] == "constant"
    algo = A.get("gp_ei")
    state = algo.init(jax.random.PRNGKey(0), jnp.asarray([[0.0, 0.0], [1.0, 1.0]]), 8)
    assert algo.config["fit"]["mean"] == "zero"
    assert gp_bo.fitted_mean(gp_bo.stationary_model("rbf"), state.factor, state.data) == 0.0
    with pytest.raises(ValueError, match=r"fit\.mean must be one of"):
        A.get("gp_ei", fit={"mean": "linear"})
    with pytest.raises(ValueError, match=r"fit\.mean is not an option"):
        A.get("ntk_gp", fit={"mean": "constant"})


def test_bic_counts_the_mean(case):
    """With the constant mean ``bic`` is ``-2`` times the profiled likelihood plus one more
    parameter's ``log n`` than the zero-mean model's. Catches (checked by hand on a copy) ``k``
    not incremented for the mean, and ``bic`` reading the zero-mean likelihood."""
    _, _, data = case
    zero = gp_bo.stationary_model("rbf")
    const = zero._replace(mean="constant")
    params = {"log_ell": jnp.log(jnp.asarray(ELL)), "log_signal": jnp.log(SIGNAL),
              "log_noise": jnp.log(LAM - gp_bo.MIN_NOISE)}
    k0 = gp_bo.num_hyperparameters(zero, params)
    assert k0 == DIM + 2 and gp_bo.num_hyperparameters(const, params) == k0 + 1
    kernel = _kernel(ELL, SIGNAL)
    lml = float(G.profiled_log_marginal_likelihood(kernel, data, LAM))
    want = -2.0 * lml + (k0 + 1) * math.log(N)
    assert abs(float(gp_bo.bic(const, params, data)) - want) <= 1e-9 * abs(want)
