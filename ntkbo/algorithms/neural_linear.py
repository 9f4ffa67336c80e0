r"""Neural-linear Bayesian optimisation: DNGO (Jasper Snoek et al., "Scalable Bayesian Optimization
Using Deep Neural Networks", ICML 2015) and NeuralLinTS (Carlos Riquelme, George Tucker and Jasper
Snoek, "Deep Bayesian Bandits Showdown", ICLR 2018), baselines of NeuralBO (DNGO) and of the Neural
Greedy paper (NeuralLinTS).

Each update trains a network ``h(x) = phi(x) . w_L`` on the (standardised) data; ``phi(x)`` is its
last hidden layer as seen by the readout, i.e. the gradient of ``h`` with respect to the readout
parameters (:func:`last_layer_features`: ``W_std_L / sqrt(width)`` times the last hidden
activations, plus the constant ``b_std_L`` when the readout has a bias), so the network itself is
``phi . w_L`` exactly. Bayesian linear regression on these features (Bishop 2006, section 3.3)::

    prior  w ~ N(0, alpha^-1 I),   y_i = phi(x_i) . w + e_i,   e_i ~ N(0, beta^-1)
    A   = alpha I + beta Phi^T Phi                            (k x k, k = number of features)
    m_N = beta A^-1 Phi^T y
    f(x) | D ~ N(phi(x) . m_N, phi(x)^T A^-1 phi(x))           (the latent function, no noise)

``alpha`` and ``beta`` (the options ``prior_precision`` and ``noise_precision``) are fixed numbers
(NeuralLinTS: prior ``gamma I``, ``alpha = 1 / gamma``,
noise ``sigma^2 = 1 / beta``) or, with ``"evidence"`` (default, DNGO's marginal likelihood), set by
MacKay's fixed-point iterations (Bishop eqs. 3.91-3.95; :func:`blr_posterior`). The acquisition is
EI under the latent posterior (``"ei"``, DNGO) or one draw ``w~ ~ N(m_N, A^-1)`` minimised
(``"ts"``, NeuralLinTS); ntkbo minimises, and both are written for minimisation.

**Defaults and the papers.** DNGO integrates ``alpha, beta`` out by slice sampling and adds a
quadratic prior mean; ntkbo uses the type-II maximum-likelihood point estimate and a zero mean.
DNGO's tanh layers become ``"erf"`` (tanh has no closed form in ntkbo's kernel registry); inputs are
mapped to the unit cube and outputs standardised. Presets (:data:`PRESETS_BY_NAME`):
``get("dngo", preset="paper")`` (NeuralBO's baseline: pybnn's defaults), ``preset="authors"`` (the
NeuralBO repository's config) and ``get("neural_lin_ts", preset="paper")`` (the Neural Greedy
paper's baseline).

Building blocks: :func:`last_layer_features`, :func:`blr_posterior`, :func:`blr_evidence`,
:func:`blr_predict`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ntkbo import linalg
from ntkbo.validation import check_bounds
from ntkbo import acquisition as A
from ntkbo import data as D
from ntkbo import optimize
from ntkbo.algorithms.observations import (Y_TRANSFORMS, best_points, from_unit, output_units,
                                          to_unit, unit_view)
from ntkbo.base import Algorithm
from ntkbo.kernels import grad_features, mlp, mlp_spec
from ntkbo.nets import TrainInfo, train
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.validation import (check_acquisition_options, check_choice, check_int,
                              check_positive)

Array = jax.Array
Params = Any

ACQUISITIONS = ("ei", "ts")
#: The evidence iterations keep alpha in [1 / CLIP, CLIP] and beta in [1 / BETA_MAX, BETA_MAX]
#: (on standardised outputs: a noise std of at least 1% of the data's, since with more features
#: than observations the evidence can grow without bound as the fit interpolates).
CLIP = 1e6
BETA_MAX = 1e4
NUM_BEST = 4

#: Named settings of ``dngo`` and ``neural_lin_ts`` (``ntkbo.algorithms.get("dngo",
#: preset=NAME, **options)``; the options given override them; ``ntkbo.algorithms.presets``). They
#: never set ``acquisition``, which the two names fix; ``neural_linear`` itself has none.
#:
#: * ``dngo``, ``"paper"``: NeuralBO's DNGO baseline (NeuralBO, Section 7: AutoML ``pybnn``,
#:   "default settings"), i.e. the defaults of ``pybnn.dngo.DNGO`` (github.com/automl/pybnn,
#:   ``pybnn/dngo.py``): three tanh layers of 50 units, Adam at ``1e-2`` for 500 epochs, no weight
#:   decay, outputs standardised, ``alpha`` and ``beta`` from their marginal likelihood.
#: * ``dngo``, ``"authors"``: the NeuralBO repository's DNGO config (its Levy baseline
#:   configs): ``num_epochs 100``, ``lr 0.01``, ``hidden_size 10``, ``n_restart 20``. Its
#:   DNGO wrapper survives only as bytecode; ``hidden_size`` is read as the width of pybnn's three
#:   layers and ``n_restart`` as the refined acquisition starts (as for its other baselines).
#: * ``neural_lin_ts``, ``"paper"``: the Neural Greedy paper's NeuralLinTS baseline (Be Greedy, App.
#:   F.1-F.2): one hidden layer of width 500, weights ``N(0, gamma^2 / fan_in)`` and
#:   hidden biases ``N(0, gamma^2)`` with ``gamma = 1`` (``W_std = b_std = 1``), Adam at ``1e-3``;
#:   the prior ``gamma I`` and noise ``sigma^2`` fixed, ``alpha = 1 / gamma = 0.01`` and
#:   ``beta = 1 / sigma^2 = 100``: the middle of its grids ``gamma in {10, 100, 1000}``,
#:   ``sigma^2 in {0.001, 0.01, 0.1}``, searched per function without reporting the winner; the
#:   acquisition from 10 random starts, 500 gradient steps each.
#:
#: Not expressible, so ntkbo's choice stays: tanh (``"erf"``, no closed-form kernel); pybnn's
#: minibatches of 10 (an epoch is ``ceil(n / 10)`` Adam steps; here one full-batch step per epoch),
#: its PyTorch
#: initialisation (``U(+-1 / sqrt(fan_in))``, standard parameterisation) and its inputs scaled to
#: zero mean and unit variance (the unit cube here); DNGO's MCMC over ``alpha, beta`` (type-II
#: maximum likelihood here); the Greedy paper's final bias at 0, uniform random starts (Sobol here)
#: and fixed-step gradient descent (``"pgd"``), its number of training steps (not given: 500 stay)
#: and its weight decay (not stated: ``1e-4`` stays).
PRESETS_BY_NAME = {
    "dngo": {
        "paper": dict(network=dict(width=50, depth=3), prior_precision="evidence",
                      noise_precision="evidence",
                      training=dict(learning_rate=1e-2, num_steps=500, weight_decay=0.0),
                      y_transform="standardize", search=dict(avoid_observed=False)),
        "authors": dict(network=dict(width=10, depth=3), prior_precision="evidence",
                        noise_precision="evidence",
                        training=dict(learning_rate=1e-2, num_steps=100, weight_decay=0.0),
                        y_transform="standardize",
                        search=dict(num_restarts=20, avoid_observed=False)),
    },
    "neural_lin_ts": {
        "paper": dict(network=dict(width=500, depth=1, W_std=1.0, b_std=1.0),
                      prior_precision=0.01, noise_precision=100.0,
                      training=dict(learning_rate=1e-3),
                      search=dict(num_candidates=10, num_restarts=10, num_steps=500,
                                  method="pgd", avoid_observed=False)),
    },
}

#: Where ``neural_linear``'s plain options sit among its parts (``ntkbo.parts``).
LAYOUT = Layout({
    "network": dict(width="width", depth="depth", activation="activation", W_std="W_std",
                    b_std="b_std"),
    "training": dict(num_steps="num_steps", learning_rate="learning_rate",
                     weight_decay="weight_decay"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="num_acq_steps", method="acq_method",
                   avoid_observed="avoid_observed"),
}, renames={"prior_precision": "alpha", "noise_precision": "beta"})

__all__ = [
    "BLRPosterior", "LAYOUT", "NeuralLinearState", "NeuralLinearSuggestInfo",
    "NeuralLinearThompsonInfo", "PRESETS_BY_NAME", "blr_evidence", "blr_posterior",
    "blr_predict", "last_layer_features", "neural_linear",
]


class NeuralLinearSuggestInfo(NamedTuple):
    """The ``info`` of Neural-Linear's ``suggest`` with ``acquisition="ei"`` (DNGO; standardised
    units, minimisation: EI of an improvement below the incumbent).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition, ``log EI``, at each chosen point (after the
        believed points of the batch before it).
      mean: ``(q,)`` the latent posterior mean ``phi(x) . m_N`` there.
      std: ``(q,)`` the latent posterior standard deviation there (after the believed points).
      alpha: ``()`` the weights' prior precision of the Bayesian linear readout.
      beta: ``()`` the observation noise precision of the Bayesian linear readout.
      acq_fallback: ``()`` int32, 1 when no evaluation had succeeded, so EI took the prior mean
        (0) as the incumbent.
      duplicates_replaced: ``()`` int32, maximisers that were observed points and were replaced
        (``ntkbo.optimize``).
    """

    acq_value: Array
    mean: Array
    std: Array
    alpha: Array
    beta: Array
    acq_fallback: Array
    duplicates_replaced: Array


class NeuralLinearThompsonInfo(NamedTuple):
    """The ``info`` of Neural-Linear's ``suggest`` with ``acquisition="ts"`` (standardised units,
    minimisation: the acquisition is ``-phi(x) . w~``, ``w~`` a draw of the readout's posterior).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``-phi(x) . w~_j`` at each chosen point.
      mean: ``(q,)`` the latent posterior mean ``phi(x) . m_N`` there.
      std: ``(q,)`` the latent posterior standard deviation there.
      alpha: ``()`` the weights' prior precision of the Bayesian linear readout.
      beta: ``()`` the observation noise precision of the Bayesian linear readout.
      duplicates_replaced: ``()`` int32, draws whose best candidate was an observed point and
        that took their best other candidate.
    """

    acq_value: Array
    mean: Array
    std: Array
    alpha: Array
    beta: Array
    duplicates_replaced: Array


class BLRPosterior(NamedTuple):
    """``mean`` ``(k,)`` = ``m_N``; ``chol`` ``(k, k)`` lower Cholesky factor of ``A``;
    ``alpha``, ``beta`` ``()``."""

    mean: Array
    chol: Array
    alpha: Array
    beta: Array


class NeuralLinearState(NamedTuple):
    """``data``, ``bounds``; ``params0`` the initialisation, ``params`` the trained network;
    ``blr`` the posterior on the trained network's features. The training's losses are
    ``update``'s ``info`` (``ntkbo.nets.TrainInfo``)."""

    data: D.Data
    bounds: Array
    params0: Params
    params: Params
    blr: BLRPosterior


def last_layer_features(apply_fn, params: Params, depth: int, x: Array) -> Array:
    """``phi(x)`` ``(n, k)``: the gradient of ``h(x)`` with respect to the readout layer
    ``Dense_{depth}`` (its parameters in ``ravel_pytree`` order: the bias, if any, then the
    kernel), so that ``h(x) = phi(x) . w_L`` exactly."""
    readout = f"Dense_{depth}"

    def with_readout(ro, xs):
        p = {**params, "params": {**params["params"], readout: ro}}
        return apply_fn(p, xs)

    return grad_features(with_readout)(x, params["params"][readout])


def _posterior(phi, y, mask, alpha, beta) -> BLRPosterior:
    phi = jnp.where(mask[:, None], phi, 0.0)
    y = jnp.where(mask, y, 0.0)
    k = phi.shape[-1]
    a = alpha * jnp.eye(k, dtype=phi.dtype) + beta * phi.T @ phi
    chol = linalg.cholesky(a)
    mean = beta * linalg.cho_solve(chol, phi.T @ y)
    return BLRPosterior(mean, chol, jnp.asarray(alpha, phi.dtype), jnp.asarray(beta, phi.dtype))


def blr_posterior(phi: Array, y: Array, mask: Array, alpha="evidence", beta="evidence",
                  num_evidence_iters: int = 100) -> BLRPosterior:
    """The posterior of ``w`` (the module docstring's equations) on the valid rows of ``phi``
    ``(C, k)``, ``y`` ``(C,)``. ``alpha``/``beta``: numbers, or ``"evidence"`` (both, or the one given so) for
    MacKay's fixed point of the log evidence.

    ``alpha`` and ``beta`` are either fixed (``alpha``, ``beta`` numbers; NeuralLinTS: prior
    ``gamma I``, i.e. ``alpha = 1 / gamma``, and noise ``sigma^2 = 1 / beta``) or, with
    ``"evidence"`` (default, DNGO's choice of the marginal likelihood), set by maximising the log
    evidence ``log p(y | alpha, beta)`` with MacKay's fixed-point iterations (Bishop eqs. 3.91-3.95,
    ``num_evidence_iters`` of them)::

        gamma = sum_i l_i / (alpha + l_i),  l_i the eigenvalues of beta Phi^T Phi
        alpha = gamma / |m_N|^2,            1 / beta = |y - Phi m_N|^2 / (N - gamma)

    from ``alpha = 1``, ``beta = 100`` (noise std 0.1 of the data's), with ``alpha`` in
    ``[1e-6, 1e6]`` and ``beta`` in ``[1e-4, 1e4]`` (:func:`blr_posterior`, :func:`blr_evidence`).
    An iterate whose factorisation of ``A`` fails (single precision near the clips) is not taken:
    the iterations stop at the last ``(alpha, beta)`` with a finite posterior.
    DNGO itself integrates
    ``alpha, beta`` out by slice sampling under a horseshoe / log-normal prior and adds a quadratic
    prior mean; ntkbo uses the type-II maximum likelihood point estimate and a zero mean (on
    standardised outputs; the bias feature carries a constant).
    """
    phi = jnp.where(mask[:, None], phi, 0.0)
    y = jnp.where(mask, y, 0.0)
    dtype = phi.dtype
    fit_a, fit_b = isinstance(alpha, str), isinstance(beta, str)
    a0 = jnp.asarray(1.0 if fit_a else alpha, dtype)
    b0 = jnp.asarray(100.0 if fit_b else beta, dtype)
    if not (fit_a or fit_b):
        return _posterior(phi, y, mask, a0, b0)
    n = jnp.sum(mask).astype(dtype)
    eig = jnp.maximum(linalg.eigvalsh(phi.T @ phi), 0.0)
    tiny = float(jnp.finfo(dtype).tiny) if dtype == jnp.float32 else 1e-300

    def step(_, carry):
        a, b, a_ok, b_ok = carry
        post = _posterior(phi, y, mask, a, b)
        # A factorisation that failed (NaN: single precision at the clip) keeps the last
        # (alpha, beta) whose posterior was finite, and the iterations stay there.
        finite = jnp.all(jnp.isfinite(post.chol)) & jnp.all(jnp.isfinite(post.mean))
        a, b = jnp.where(finite, a, a_ok), jnp.where(finite, b, b_ok)
        lam = b * eig
        gamma = jnp.sum(lam / (a + lam))
        r = jnp.where(mask, y - phi @ post.mean, 0.0)
        # The floor is the dtype's smallest normal number: 1e-300 is 0 in float32, and then a
        # zero feature matrix (or all-equal targets) gave 0 / 0 = NaN, a NaN posterior and NaN
        # Thompson draws.
        a_new = gamma / jnp.maximum(jnp.sum(post.mean**2), tiny) if fit_a else a
        b_new = jnp.maximum(n - gamma, 1e-12) / jnp.maximum(jnp.sum(r * r), tiny) if fit_b \
            else b
        a_new = jnp.clip(a_new, 1.0 / CLIP, CLIP)
        b_new = jnp.clip(b_new, 1.0 / BETA_MAX, BETA_MAX)
        return (jnp.where(finite, a_new, a), jnp.where(finite, b_new, b), a, b)

    a, b, a_ok, b_ok = jax.lax.fori_loop(0, num_evidence_iters, step, (a0, b0, a0, b0))
    post = _posterior(phi, y, mask, a, b)
    finite = jnp.all(jnp.isfinite(post.chol)) & jnp.all(jnp.isfinite(post.mean))
    return jax.tree_util.tree_map(lambda u, v: jnp.where(finite, u, v), post,
                                  _posterior(phi, y, mask, a_ok, b_ok))


def blr_evidence(phi: Array, y: Array, mask: Array, alpha, beta) -> Array:
    """``log p(y | alpha, beta)`` (Bishop eq. 3.86) on the valid rows."""
    phi = jnp.where(mask[:, None], phi, 0.0)
    y = jnp.where(mask, y, 0.0)
    n = jnp.sum(mask).astype(phi.dtype)
    k = phi.shape[-1]
    post = _posterior(phi, y, mask, alpha, beta)
    r = y - phi @ post.mean
    e = 0.5 * beta * jnp.sum(r * r) + 0.5 * alpha * jnp.sum(post.mean**2)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diag(post.chol)))
    return (0.5 * k * jnp.log(alpha) + 0.5 * n * jnp.log(beta) - e - 0.5 * logdet
            - 0.5 * n * jnp.log(2.0 * jnp.pi))


def blr_predict(post: BLRPosterior, phi: Array) -> tuple[Array, Array]:
    """``(mean, var)`` ``(n,)`` of the latent ``phi . w`` at features ``phi`` ``(n, k)``."""
    v = linalg.solve_triangular(post.chol, phi.T, lower=True)
    return phi @ post.mean, jnp.sum(v * v, axis=0)


def _rank_one(chol: Array, v: Array) -> Array:
    """Cholesky factor of ``L L^T + v v^T`` (recomputed: ``k`` is small)."""
    return linalg.cholesky(chol @ chol.T + jnp.outer(v, v))


def _neural_linear(
    *,
    width: int = 50,
    depth: int = 3,
    acquisition: str = "ei",
    alpha="evidence",
    beta="evidence",
    num_evidence_iters: int = 100,
    activation="erf",
    W_std=1.0,
    b_std=1.0,
    num_steps: int = 500,
    learning_rate: float = 1e-2,
    weight_decay: float = 1e-4,
    q: int = 1,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    y_transform: str = "standardize",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``neural_linear`` with its flat options (``LAYOUT`` places them in the parts)."""
    check_int("width", width, 1)
    check_int("depth", depth, 1)
    check_choice("acquisition", acquisition, ACQUISITIONS)
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, str):
            check_choice(name, value, ("evidence",))
        else:
            check_positive(name, value)
    check_int("num_evidence_iters", num_evidence_iters, 1)
    check_int("num_steps", num_steps, 0)
    check_positive("learning_rate", learning_rate)
    check_positive("weight_decay", weight_decay, allow_zero=True)
    check_int("q", q, 1)
    check_choice("y_transform", y_transform, Y_TRANSFORMS)
    check_acquisition_options(num_candidates, num_restarts, num_acq_steps, acq_method,
                              optimize.METHODS)
    optimize.check_avoid_observed(avoid_observed)
    mlp_spec(depth, width, activation, W_std, b_std)  # validates the network arguments
    init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=W_std, b_std=b_std)

    def features(params, z):
        return last_layer_features(apply_fn, params, depth, z)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        d = bounds.shape[-1]
        dtype = bounds.dtype
        _, params0 = init_fn(key, (-1, d))
        k = features(params0, jnp.zeros((1, d), dtype)).shape[-1]
        blr = BLRPosterior(jnp.zeros((k,), dtype), jnp.eye(k, dtype=dtype),
                           jnp.ones((), dtype), jnp.ones((), dtype))
        return NeuralLinearState(D.empty(capacity, d, dtype), bounds, params0, params0, blr)

    def update(state, x, y):
        data = D.append(state.data, x, y)
        mask, z, ys, _ = unit_view(data, state.bounds, y_transform)
        zero = jax.tree_util.tree_map(jnp.zeros_like, state.params0)
        params, l0, l1, ok = train(apply_fn, state.params0, zero, z, ys, mask, weight_decay,
                                   learning_rate, num_steps, optimizer="adam")
        blr = blr_posterior(features(params, z), ys, mask, alpha, beta, num_evidence_iters)
        return (state._replace(data=data, params=params, blr=blr),
                TrainInfo(jnp.stack([l0, l1]), ok))

    def suggest(key, state):
        dtype = state.bounds.dtype
        mask, z, ys, unit = unit_view(state.data, state.bounds, y_transform)
        opt: dict[str, Any]  # options of several types, passed as **opt
        opt = dict(num_candidates=num_candidates, num_restarts=num_restarts,
                   x_best=best_points(z, ys, mask, NUM_BEST), num_steps=num_acq_steps,
                   method=acq_method, observed=optimize.guarded(avoid_observed, z, mask))
        post = state.blr

        def moments(p, zc):
            mu, var = blr_predict(p, features(state.params, zc))
            return mu, jnp.sqrt(jnp.maximum(var, 0.0))

        if acquisition == "ts":
            def draw(k, zc):  # -phi(x) . w~,  w~ = m_N + A^-T/2 eps ~ N(m_N, A^-1)
                eps = jax.random.normal(k, post.mean.shape, dtype)
                w = post.mean + linalg.solve_triangular(post.chol, eps, lower=True, trans="T")
                return -features(state.params, zc) @ w

            zq, values, opt_info = optimize.maximize_acquisition_batch(key, draw, unit, q, **opt)
            replaced = opt_info.replaced
            mu, sd = moments(post, zq)
        else:
            # No successful evaluation yet: the prior mean (0, standardised) is the incumbent, so
            # EI stays finite (counted in info.acq_fallback).
            no_incumbent = ~jnp.any(mask)
            best0 = jnp.where(no_incumbent, 0.0, jnp.min(jnp.where(mask, ys, jnp.inf)))

            def choose(carry, k):
                chol, best = carry
                p = post._replace(chol=chol)

                def log_ei(zc):
                    mu, sd = moments(p, zc)
                    return A.log_expected_improvement(mu, sd, best)

                zq, value, opt_info = optimize.maximize_acquisition(k, log_ei, unit, **opt)
                mu, sd = moments(p, zq[None])
                phi = features(state.params, zq[None])[0]
                # Kriging believer: y_j = mu_j leaves m_N unchanged; A += beta phi phi^T.
                chol = _rank_one(chol, jnp.sqrt(post.beta) * phi)
                return (chol, jnp.minimum(best, mu[0])), (zq, value, mu[0], sd[0],
                                                          opt_info.replaced)

            _, (zq, values, mu, sd, replaced) = jax.lax.scan(choose, (post.chol, best0),
                                                             jax.random.split(key, q))
        n_replaced = jnp.sum(replaced).astype(jnp.int32)
        if acquisition == "ei":
            info = NeuralLinearSuggestInfo(
                acq_value=values, mean=mu, std=sd, alpha=post.alpha, beta=post.beta,
                acq_fallback=no_incumbent.astype(jnp.int32), duplicates_replaced=n_replaced)
        else:
            info = NeuralLinearThompsonInfo(acq_value=values, mean=mu, std=sd, alpha=post.alpha,
                                            beta=post.beta, duplicates_replaced=n_replaced)
        return from_unit(zq, state.bounds), info

    def posterior_mean(state, x):  # phi(x) . m_N in y's units (Algorithm.posterior_mean)
        z = to_unit(jnp.asarray(x, state.bounds.dtype), state.bounds)
        mu, _ = blr_predict(state.blr, features(state.params, z))
        return output_units(mu, state.data, y_transform)

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


@composed(_neural_linear, LAYOUT)
def neural_linear(
    *,
    network: PartOption = None,
    acquisition: str = "ei",
    prior_precision="evidence",
    noise_precision="evidence",
    num_evidence_iters: int = 100,
    training: PartOption = None,
    q: int = 1,
    search: PartOption = None,
    y_transform: str = "standardize",
) -> Algorithm:
    """DNGO / NeuralLinTS (the model is the module docstring's).

    Acquisition (``acquisition=``; ntkbo minimises, and both rules are written for minimisation):

    * ``"ei"`` (DNGO): expected improvement below the best standardised observation under the latent
      posterior above, maximised through ``ntkbo.acquisition.log_expected_improvement`` (same
      argmax, no underflow far from the data).
    * ``"ts"`` (NeuralLinTS): one draw ``w~ ~ N(m_N, A^-1)`` and the minimiser of ``phi(x) . w~``, a
      smooth function of ``x``.

    Both are maximised by ``ntkbo.optimize.maximize_acquisition`` (Sobol candidates, the best
    observed points and their perturbations, projected-gradient refinement).

    Batches (``q > 1``; neither paper defines one): ``"ts"``: ``q`` independent draws of ``w~``
    (parallel Thompson sampling, Kandasamy et al. 2018). ``"ei"``: kriging believer (Ginsbourger et
    al. 2010): after each choice ``x_j``, the observation ``phi(x_j) . m_N`` is believed, which
    leaves ``m_N`` unchanged, adds ``beta phi(x_j) phi(x_j)^T`` to ``A`` and lowers the incumbent to
    ``min(best, phi(x_j) . m_N)``; the next point maximises EI under the updated posterior. The
    network and ``alpha, beta`` are kept.

    Network and training (DNGO: 3 hidden layers of 50 tanh units; tanh has no closed form in
    ntkbo's kernel registry, so ``"erf"``, its closed-form analogue, is the default): NTK
    parameterisation, ``W_std = 1``, ``b_std = 1``, retrained at every update from the same
    initialisation ``theta_0`` (drawn in ``init`` from its key) with full-batch Adam, learning rate
    ``1e-2``, ``num_steps = 500``, on
    ``1/2 sum (h - y)^2 + 1/2 weight_decay |theta|^2`` (``ntkbo.algorithms.neural_bo.train``).
    Inputs are mapped to the unit cube.

    Outputs are standardised, after an optional warp (``y_transform``, none by default:
    ``ntkbo.algorithms.observations.transform_outputs``). On Branin DNGO's EI needs the log warp
    (docs/decisions.md, 2026-11-22).

    Args:
      network: the network (``ntkbo.parts.Network``; ``ntkbo.kernels.mlp``, NTK
        parameterisation): ``width`` (default 50, DNGO's; NeuralLinTS's 500), ``depth`` hidden
        layers (3, DNGO's; NeuralLinTS's 1), ``activation`` (``"erf"``; DNGO's tanh), ``W_std``
        (1) and ``b_std`` (1).
      training: full-batch Adam from the initialisation (``ntkbo.parts.Training``):
        ``num_steps`` (500), ``learning_rate`` (``1e-2``; NeuralLinTS's ``1e-3``) and
        ``weight_decay`` (``1e-4``; DNGO's 0).
      search: the acquisition's maximisation (``ntkbo.parts.Search``,
        ``ntkbo.optimize.maximize_acquisition``): ``num_candidates`` (1024; NeuralLinTS's 10),
        ``num_restarts`` (4; NeuralLinTS's 10), ``num_steps`` of ascent per start (30;
        NeuralLinTS's 500) and ``method`` (``"pgd"``).
      acquisition: ``"ei"`` (DNGO) or ``"ts"`` (NeuralLinTS).
      prior_precision, noise_precision: the papers' ``alpha`` and ``beta`` (numbers ``> 0``) or
        ``"evidence"`` (named apart from the exploration weight ``beta`` of the other
        algorithms).
      num_evidence_iters: MacKay fixed-point iterations.
      q: points per suggest (the batch rule above).
      y_transform: the output warp before standardisation
        (``ntkbo.algorithms.observations.transform_outputs``): ``"standardize"`` (none, DNGO),
        ``"log"`` or ``"rank"``.

    Returns:
      An ``ntkbo.Algorithm``; ``suggest`` returns ``(x (q, d), info)``, ``info`` a
      :class:`NeuralLinearSuggestInfo` for EI, a :class:`NeuralLinearThompsonInfo` for TS:
      ``acq_value``, ``mean``, ``std`` ``(q,)`` (the latent posterior at ``x``, standardised units;
      for EI with ``q > 1``, after the believed points before it), ``alpha``, ``beta``;
      ``update`` returns ``(state, ntkbo.nets.TrainInfo)`` (``train_loss`` ``(2,)``,
      ``train_ok``).

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _neural_linear(**LAYOUT.flatten(locals(), "neural_linear"))
