r"""GO-UCB (Chong Liu and Yu-Xiang Wang, "Global Optimization with Parametric Function
Approximation", ICML 2023): uniform exploration, a regression oracle, then optimism over a
confidence ellipsoid of the parameters of a *parametric* surrogate.

The algorithm (Algorithm 1), in the paper's maximisation convention, for a surrogate ``f_x(w)``
differentiable in its flat parameter vector ``w`` (``p`` entries, the paper's ``d_w``)::

    Phase I   (n = T1 rounds)  x_j ~ U(X), observe y_j
              w0 = Oracle(x_1, y_1, ..., x_n, y_n) = argmin_w sum_j (f_{x_j}(w) - y_j)^2   (eq. 2)
    Phase II  (t = 1, 2, ...)  g_i = grad_w f_{x_i}(w_i)          (gradient at the round's estimate)
              Sigma_t = lam I + sum_{i<t} g_i g_i^T                                        (eq. 3)
              z_i     = g_i^T w_i + y_i - f_{x_i}(w_i)             (linearised pseudo-target)
              w_t     = Sigma_t^-1 (lam w0 + sum_{i<t} g_i z_i)                           (eq. 5)
                      = argmin_w lam/2 |w - w0|^2
                                 + 1/2 sum_i (g_i^T (w - w_i) + f_i - y_i)^2      (eq. 4)
              Ball_t  = {w : |w - w_t|^2_{Sigma_t} <= beta_t}                              (eq. 6)
              x_t     = argmax_x max_{w in Ball_t} f_x(w)                                  (Step 5)

i.e. ridge regression of the pseudo-targets ``z_i`` on the gradient features ``g_i`` with prior mean
``w0``. Per round, ``Sigma_t``, ``w_t`` and ``Ball_t`` come from the stored sums (``Sigma_t`` and
``b_t = lam w0 + sum g_i z_i``, constant memory in ``t``), ``x_t`` is chosen, ``y_t`` observed, then
``g_t`` and ``z_t`` are added. The network is trained once, by the oracle (eq. 2).

**Sign convention.** ntkbo minimises ``f``; the paper maximises. The surrogate models
``u = -(y - m) / s``, the negated observations standardised by the Phase-I mean and standard
deviation (frozen at the oracle), so the formulas hold verbatim for ``u`` (GO-UCB run on ``-f``):
the upper confidence bound on ``u`` is a lower confidence bound on ``y`` (``go_ucb`` has details).

**Defaults and the paper.** ``preset="paper"`` is the paper's experimental setting (Section 6 and
App. D.1; :data:`PRESETS`). The defaults depart from it in four places: Step 5 is the closed-form
maximum of the linearised model over the ball (``optimistic="linearized"``; the paper's joint
ascent is ``"joint"``; ``optimistic_points``), ``beta_t = c (1 + t / T)``, the shape of eq. (7),
instead of ``p^3 F^4 t / T`` (``beta_schedule``), and the oracle is Adam on standardised targets,
not SGD at ``1e-11`` (``fit_oracle``), and Phase II re-runs the oracle after every observation
(``refit_every=1``, ``oracle_refit``; the paper fits it once, and with one fit Phase II stalls on
the Phase-I surrogate), chosen on tuning keys.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple, Union, cast

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from ntkbo import linalg
from ntkbo.validation import check_bounds
from ntkbo.validation import check_choice as _check_choice
from ntkbo.validation import check_int as _check_int
from ntkbo.validation import check_positive as _check_positive
from ntkbo import data as D
from ntkbo import optimize, qmc
from ntkbo.algorithms.observations import best_points, from_unit, standardize, to_unit
from ntkbo.base import Algorithm
from ntkbo.nets import check_optimizer, is_transformation, make_optimizer
from ntkbo.parts import Layout, PartOption, composed

Array = jax.Array
Params = Any

OPTIMISTIC = ("linearized", "joint")
ORACLE_OPTIMIZERS = ("adam", "sgd")
LAM_RULES = ("paper",)
BETA_RULES = ("theory", "paper")

#: Named settings: ``ntkbo.algorithms.go_ucb(preset=NAME, **options)`` (and ``go_ucb_joint``)
#: starts from these, the ``options`` given override them (``ntkbo.algorithms``, "Presets").
#:
#: * ``"paper"``: the paper's experiments (Section 6 and App. D.1): the
#:   network ``linear2(sigmoid(linear1(x)))`` of width 25 on the synthetic functions' input box
#:   ``[-5, 5]^d`` (``input_scale=5``); Phase I of ``n = ceil(sqrt(T))`` uniform points
#:   (``n_explore=None``); the regression oracle by SGD, 2000 iterations at learning rate
#:   ``1e-11``; ``lam = sqrt(T) ln^2 T`` and ``beta_t = p^3 F^4 t / T`` (``"paper"``; the natural
#:   log is an assumption, the paper does not say); Step 5 by joint gradient
#:   ascent over ``x`` and ``w``, 2000 iterations at ``1e-4``; one oracle fit, no refits.
#:
#: Not in the preset: ``horizon`` (``T``: 25 or 64 in the paper, the budget minus Phase I in
#: general; pass it); ``F``, the output bound, which the paper never gives a number for (1 stays,
#: in standardised units); the oracle's restarts (the paper states none: 4 stay); the ``i = 0``
#: reading of eqs. 3-5 (``sigma_phase1``: the paper's sums start at an ``i = 0`` that no Phase-II
#: point has; reading (a), ``Sigma_1 = lam I``, stays).
#: Not expressible: the raw outputs (ntkbo standardises them on the Phase-I data, so ``lam`` and
#: ``beta_t`` act on another scale) and the paper's unstated handling of the box and the
#: ball in Step 5 (here: clipping and exact projection). There is no authors' code.
PRESETS = {
    "paper": dict(network=dict(width=25, input_scale=5.0), n_explore=None, lam="paper",
                  beta="paper", optimistic="joint",
                  search=dict(joint_steps=2000, joint_learning_rate=1e-4, avoid_observed=False),
                  training=dict(optimizer="sgd", learning_rate=1e-11, num_steps=2000,
                                refit_every=0)),
}

#: Where ``go_ucb``'s plain options sit among its parts (``ntkbo.parts``); ``network`` also takes
#: an ``(init_fn, apply_fn)`` pair, the plain option ``network``.
LAYOUT = Layout({
    "network": dict(width="width", input_scale="input_scale"),
    "training": dict(optimizer="oracle_optimizer", learning_rate="oracle_learning_rate",
                     num_steps="oracle_steps", num_restarts="oracle_restarts",
                     refit_every="refit_every", refit_steps="refit_steps"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="num_steps", joint_steps="joint_steps",
                   joint_learning_rate="joint_learning_rate", avoid_observed="avoid_observed"),
}, custom={"network": "network"})

__all__ = [
    "GOUCBState",
    "GOUCBSuggestInfo",
    "GOUCBUpdateInfo",
    "OptimisticInfo",
    "PRESETS",
    "go_ucb",
    "sigmoid_network",
    "n_explore_paper",
    "lam_paper",
    "beta_paper",
    "beta_theory",
    "ridge_update",
    "ridge_estimate",
    "ellipsoid_norm",
    "linearized_ucb",
    "ellipsoid_maximizer",
    "project_to_ellipsoid",
    "fit_oracle",
    "flat_network",
    "values_and_gradients",
    "beta_schedule",
    "oracle_start",
    "phase2_observe",
    "oracle_refit",
    "joint_ascent",
    "optimistic_points",
]


class GOUCBState(NamedTuple):
    """The state of ``go_ucb`` (a pytree of arrays; the only capacity-sized arrays are in ``data``).

    Attributes:
      data: raw observations (``ntkbo.data.Data``).
      bounds: ``(2, d)`` box.
      w_init: ``(oracle_restarts, p)`` the oracle's starting parameters, drawn in ``init``.
      w0: ``(p,)`` the oracle's estimate ``w0`` (``w_init[0]`` until the oracle runs).
      w_hat: ``(p,)`` the current estimate ``w_t`` (the centre of ``Ball_t``).
      sigma: ``(p, p)`` ``Sigma_t``.
      b: ``(p,)`` ``lam w0 + sum_i g_i z_i``, so that ``w_t = Sigma_t^-1 b``.
      y_mean, y_std: ``()`` the frozen Phase-I standardisation: the model fits
        ``u = -(y - y_mean) / y_std``.
      fitted: ``()`` bool, the oracle has run (Phase II).
      t: ``()`` int32, the number of Phase-II observations.

    The oracle's fit is reported by the ``update`` that ran it (:class:`GOUCBUpdateInfo`).
    """

    data: D.Data
    bounds: Array
    w_init: Array
    w0: Array
    w_hat: Array
    sigma: Array
    b: Array
    y_mean: Array
    y_std: Array
    fitted: Array
    t: Array


class OptimisticInfo(NamedTuple):
    """The per-point diagnostics of ``optimistic_points`` (the first five fields of
    :class:`GOUCBSuggestInfo`, which documents them): ``acq_value``, ``mean``, ``bonus``,
    ``ball_max`` ``(q,)`` and ``duplicates_replaced`` ``()``."""

    acq_value: Array
    mean: Array
    bonus: Array
    ball_max: Array
    duplicates_replaced: Array


class GOUCBSuggestInfo(NamedTuple):
    """The ``info`` of GO-UCB's ``suggest`` (the model's units: it fits ``u = -(y - y_mean) /
    y_std``, so the acquisition, an optimistic value of ``u``, is maximised; NaN per point in
    Phase I, where the points are uniform draws).

    Attributes:
      acq_value: ``(q,)`` the optimistic value of ``u`` at each chosen point: ``linearized_ucb``,
        or ``f_x(w)`` at the joint ascent's ``w``.
      mean: ``(q,)`` the network's value ``f_x(w_t)`` there.
      bonus: ``(q,)`` the exploration bonus ``sqrt(beta_t) |g|_{Sigma_t^-1}`` there (``>= 0``),
        with the batch's earlier points believed into ``Sigma_t``.
      ball_max: ``(q,)`` the largest ``|w - w_t|^2_{Sigma_t} / beta_t`` over the ascent's
        iterates: 1 at the linearised maximiser, at most 1 for the joint ascent.
      duplicates_replaced: ``()`` int32, maximisers that were observed points and were replaced
        (``ntkbo.optimize``).
      phase: ``()`` int32, 1 (exploration) or 2 (optimism).
      t: ``()`` int32, the Phase-II index of the first point.
      beta: ``()`` the confidence radius ``beta_t`` (NaN in Phase I).
      lam: ``()`` the ridge regulariser ``lam``.
    """

    acq_value: Array
    mean: Array
    bonus: Array
    ball_max: Array
    duplicates_replaced: Array
    phase: Array
    t: Array
    beta: Array
    lam: Array


class GOUCBUpdateInfo(NamedTuple):
    """The ``info`` of GO-UCB's ``update``.

    Attributes:
      oracle_ran: ``()`` bool, this update ran the regression oracle (eq. 2): the end of Phase I
        (``oracle_start``) or a Phase-II refit (``oracle_refit``).
      oracle_loss: ``()`` the oracle's final mean squared error on the fitted observations
        (standardised units, ``u = -(y - y_mean) / y_std``); NaN where it did not run.
    """

    oracle_ran: Array
    oracle_loss: Array


# ---------------------------------------------------------------------------------------------
# Building blocks (pure functions of arrays; jit/vmap them over hyper-parameters as well as keys).


def sigmoid_network(width: int = 25, input_scale: float | None = None):
    """The experiments' surrogate ``linear2(sigmoid(linear1(x)))`` (Section 6, App. D.1).

    ``f(x) = sum_k W2_k sigmoid(x . W1_k + b1_k) + b2`` with the exact logistic sigmoid, PyTorch's
    default ``nn.Linear`` initialisation (weights and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``)
    and ``p = (d + 2) width + 1`` parameters.

    ``input_scale=a`` (default ``None``: the input as given) makes the network see
    ``a (2 x - 1)`` instead of ``x``: ``go_ucb`` passes unit-cube inputs, so ``a = 5`` gives the
    paper's input box ``[-5, 5]^d``, on which the default-initialised sigmoids are far from linear
    (on ``[0, 1]^d`` the initial network is nearly linear in ``x``). The parameters are unchanged.

    Default: the experiments' network ``linear2(sigmoid(linear1(x)))`` with the exact
    logistic sigmoid, one hidden layer of ``width`` (25) units and PyTorch ``nn.Linear``'s default
    initialisation (weights and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``),
    ``p = (d + 2) width + 1`` (``sigmoid_network``). Any other network is accepted as
    ``network=(init_fn, apply_fn)`` with neural-tangents' conventions
    (``init_fn(key, (n, d)) -> (out_shape, params)``,
    ``apply_fn(params, x (n, d)) -> (n, 1)``), e.g. ``ntkbo.kernels.mlp(1, 25, "sigmoid_like",
    parameterization="standard")[:2]``.

    Returns:
      ``(init_fn, apply_fn)`` with neural-tangents' conventions: ``init_fn(key, (n, d)) ->
      ((n, 1), params)``, ``apply_fn(params, x (n, d)) -> (n, 1)``; ``params`` is
      ``{"hidden": {"kernel": (d, width), "bias": (width,)}, "readout": {"kernel": (width, 1),
      "bias": (1,)}}``.
    """
    _check_int("width", width, 1)
    if input_scale is not None:
        input_scale = _check_positive("input_scale", input_scale)

    def init_fn(key, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 2:
            raise ValueError(f"input_shape: expected (n, d), got {input_shape}")
        d = int(input_shape[1])
        dtype = jnp.result_type(float)
        # One draw for all parameters (each random-number call site costs compile time).
        e = jax.random.uniform(key, ((d + 2) * width + 1,), dtype, -1.0, 1.0)
        s_in, s_out = 1.0 / math.sqrt(d), 1.0 / math.sqrt(width)
        params = {
            "hidden": {"kernel": s_in * e[: d * width].reshape(d, width),
                       "bias": s_in * e[d * width : (d + 1) * width]},
            "readout": {"kernel": s_out * e[(d + 1) * width : (d + 2) * width].reshape(width, 1),
                        "bias": s_out * e[(d + 2) * width :]},
        }
        return input_shape[:-1] + (1,), params

    def apply_fn(params, x):
        if input_scale is not None:
            x = input_scale * (2.0 * x - 1.0)
        h = jax.nn.sigmoid(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
        return h @ params["readout"]["kernel"] + params["readout"]["bias"]

    return init_fn, apply_fn


def n_explore_paper(horizon: int) -> int:
    """Phase-I length ``ceil(sqrt(T))`` (Theorem 4.1's ``n = sqrt T``; the experiments' 5 for
    ``T = 25`` and 8 for ``T = 64``)."""
    return max(1, math.ceil(math.sqrt(horizon)))


def lam_paper(horizon: int) -> float:
    """The experiments' regularisation ``sqrt(T) ln^2 T`` (Section 6; log base assumed
    natural, the paper does not say): 51.8 for ``T = 25``, 138.4 for ``T = 64``."""
    return math.sqrt(horizon) * math.log(horizon) ** 2


def beta_paper(t, horizon, p, F=1.0):
    """The experiments' radius ``beta_t = p^3 F^4 t / T`` (Section 6; the paper gives ``F`` no
    value)."""
    return jnp.asarray(p, jnp.result_type(float)) ** 3 * F**4 * t / horizon


def beta_theory(t, horizon, p, scale=1.0):
    """The shape of eq. (7), ``beta_t = scale (1 + t / T)``: a constant plus a term linear in
    ``t / T``, increasing in ``t``, with the unknown constants lumped into ``scale``."""
    del p
    return scale * (1.0 + jnp.asarray(t, jnp.result_type(float)) / horizon)


def ridge_update(sigma: Array, b: Array, w_hat: Array, g: Array, f: Array, u: Array, mask=None):
    """Adds observations to the sums of eqs. (3) and (5).

    ``Sigma += sum_i g_i g_i^T``, ``b += sum_i g_i z_i`` with ``z_i = g_i . w_hat + u_i - f_i``.

    Args:
      sigma: ``(p, p)``; b: ``(p,)``.
      w_hat: ``(p,)`` the estimate the gradients were taken at (``w_i``).
      g: ``(n, p)`` gradients ``grad_w f_{x_i}(w_hat)``; f: ``(n,)`` ``f_{x_i}(w_hat)``;
      u: ``(n,)`` targets (standardised, paper sign).
      mask: optional ``(n,)`` bool, rows to add.

    Returns:
      ``(sigma, b)``.
    """
    if mask is not None:
        g = jnp.where(mask[:, None], g, 0.0)
    z = g @ w_hat + u - f
    return sigma + g.T @ g, b + g.T @ z


def ridge_estimate(sigma: Array, b: Array) -> tuple[Array, Array]:
    """``(w, L)``: ``w = Sigma^-1 b`` (eq. 5) by Cholesky, ``L`` the lower factor of ``Sigma``."""
    chol = linalg.cholesky(sigma)
    y = linalg.solve_triangular(chol, b, lower=True)
    return linalg.solve_triangular(chol, y, lower=True, trans="T"), chol


def ellipsoid_norm(v: Array, chol: Array) -> Array:
    """``|v|_{Sigma^-1} = |L^-1 v|`` for ``Sigma = L L^T``; ``v`` ``(..., p)`` -> ``(...)``."""
    s = linalg.solve_triangular(chol, jnp.reshape(v, (-1, v.shape[-1])).T, lower=True)
    sq = jnp.sum(s * s, axis=0).reshape(v.shape[:-1])
    return jnp.sqrt(jnp.maximum(sq, jnp.finfo(sq.dtype).tiny))


def linearized_ucb(f: Array, g: Array, chol: Array, beta) -> Array:
    """``f + sqrt(beta) |g|_{Sigma^-1}``: the maximum over ``{w : |w - w_hat|^2_Sigma <= beta}`` of
    the linearisation ``f + g^T (w - w_hat)`` (Cauchy-Schwarz in the ``Sigma`` inner product).

    Args: ``f`` ``(...)``, ``g`` ``(..., p)``, ``chol`` the lower Cholesky factor of ``Sigma``.
    """
    return f + jnp.sqrt(beta) * ellipsoid_norm(g, chol)


def ellipsoid_maximizer(w_hat: Array, chol: Array, beta, g: Array) -> Array:
    """``w_hat + sqrt(beta) Sigma^-1 g / |g|_{Sigma^-1}``: the point of the ellipsoid where the
    linearisation along ``g`` ``(p,)`` is largest (on its boundary)."""
    s = linalg.solve_triangular(chol, g, lower=True)
    direction = linalg.solve_triangular(chol, s, lower=True, trans="T")
    norm = jnp.sqrt(jnp.maximum(jnp.sum(s * s), jnp.finfo(s.dtype).tiny))
    return w_hat + jnp.sqrt(beta) * direction / norm


def project_to_ellipsoid(v: Array, center: Array, evals: Array, evecs: Array, beta,
                         num_newton: int = 30) -> Array:
    """The Euclidean projection of ``v`` on ``{w : (w - c)^T Sigma (w - c) <= beta}``.

    With ``Sigma = Q diag(evals) Q^T`` (``jnp.linalg.eigh``) and ``a = Q^T (v - c)``, the projection
    of an outside point is ``c + Q diag(1 / (1 + mu evals)) a`` with ``mu > 0`` the root of
    ``phi(mu) = sum_i evals_i a_i^2 / (1 + mu evals_i)^2 = beta`` (the KKT conditions). ``phi`` is
    the squared norm of ``(diag(1/evals) + mu I)^-1 h``, ``h = evals^{-1/2} a``: the secular
    equation of the trust-region subproblem, so Newton's method on ``phi^{-1/2} - beta^{-1/2}``
    (concave, increasing) from ``mu = 0`` increases monotonically to the root (Moré and Sorensen
    1983). After ``num_newton`` steps the point is scaled radially onto the ellipsoid if rounding
    left it outside, so the result is feasible up to rounding.

    Args:
      v, center: ``(p,)``; evals ``(p,)`` positive, evecs ``(p, p)``; beta: ``()`` radius squared.

    Returns:
      ``(p,)`` the projection (``v`` itself when it is inside).
    """
    a = evecs.T @ (v - center)
    phi0 = jnp.sum(evals * a * a)
    inv_root_beta = 1.0 / jnp.sqrt(beta)
    tiny = jnp.finfo(a.dtype).tiny

    def newton(_, mu):
        den = 1.0 + mu * evals
        phi = jnp.sum(evals * a * a / den**2)
        dphi = -2.0 * jnp.sum(evals**2 * a * a / den**3)
        phi = jnp.maximum(phi, tiny)
        psi = jax.lax.rsqrt(phi) - inv_root_beta
        dpsi = -0.5 * phi ** (-1.5) * dphi
        step = jnp.where(dpsi > 0, psi / jnp.maximum(dpsi, tiny), 0.0)
        return jnp.maximum(mu - step, 0.0)

    outside = phi0 > beta
    mu = jax.lax.fori_loop(0, num_newton, newton, jnp.zeros((), a.dtype))
    y = jnp.where(outside, a / (1.0 + mu * evals), a)
    ratio = jnp.sum(evals * y * y) / beta
    y = jnp.where(ratio > 1.0, y * jax.lax.rsqrt(jnp.maximum(ratio, tiny)), y)
    return center + evecs @ y


def fit_oracle(apply_w: Callable[[Array, Array], Array], w_init: Array, z: Array, u: Array,
               mask: Array, *, num_steps: int, learning_rate, optimizer="adam"):
    """The regression oracle (eq. 2): nonlinear least squares from each row of ``w_init``.

    Minimises the mean of ``(f_{z_i}(w) - u_i)^2`` over the valid rows by ``num_steps`` full-batch
    steps of Adam or SGD (or of ``optimizer`` itself, an ``optax.GradientTransformation``), from
    every starting point (``vmap``), and returns the start with the
    lowest final loss.

    ``oracle_restarts`` random initialisations (drawn in ``init``), each trained by ``oracle_steps``
    full-batch steps of Adam (or SGD) at ``oracle_learning_rate`` on the mean squared error of the
    standardised Phase-I data; the restart with the lowest final loss is ``w0``. The paper's SGD at
    learning rate ``1e-11`` (2000 iterations) is a near no-op on its unstandardised targets (App.
    D.1); ``oracle_optimizer="sgd", oracle_learning_rate=1e-11, oracle_steps=2000`` reproduces it.
    The parameter box ``W subset [0, 1]^p`` of the analysis is not enforced (nor is it in the
    paper).

    Args:
      apply_w: ``(w (p,), z (n, d)) -> (n,)`` the network as a function of its flat parameters.
      w_init: ``(R, p)`` starting points.
      z: ``(C, d)`` inputs; u: ``(C,)`` targets; mask: ``(C,)`` valid rows.

    Returns:
      ``(w0 (p,), loss ())``; non-finite runs are never chosen (loss ``inf`` if all failed).
    """
    n = jnp.maximum(jnp.sum(mask), 1).astype(u.dtype)

    def loss(w):
        r = jnp.where(mask, apply_w(w, z) - u, 0.0)
        return jnp.sum(r * r) / n

    opt = make_optimizer(optimizer, learning_rate)
    vg = jax.value_and_grad(loss)

    def run(w):
        def step(carry, _):
            w, s = carry
            _, grad = vg(w)
            upd, s = opt.update(grad, s, w)
            # optax types its result as any pytree; on an array it is an array
            return (cast(Array, optax.apply_updates(w, upd)), s), None

        (w, _), _ = jax.lax.scan(step, (w, opt.init(w)), None, length=num_steps)
        val = loss(w)
        return w, jnp.where(jnp.isfinite(val), val, jnp.inf)

    ws, losses = jax.vmap(run)(w_init)
    i = jnp.argmin(losses)
    return ws[i], losses[i]


def flat_network(init_fn, apply_fn, d: int):
    """``(draw, apply_w)`` for a network ``(init_fn, apply_fn)`` on inputs of dimension ``d``, as a
    function of its flat parameter vector ``w`` (the paper's ``w``, ``p`` entries):
    ``draw(keys (R, 2)) -> (R, p)`` initial parameters (jitted: ``init`` is often called outside
    jit); ``apply_w(w, z (n, d)) -> (n,)`` the first output."""
    _, params = jax.eval_shape(lambda k: init_fn(k, (-1, d)), jax.random.PRNGKey(0))
    template = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), params)
    unravel = ravel_pytree(template)[1]
    draw = jax.jit(jax.vmap(lambda k: ravel_pytree(init_fn(k, (-1, d))[1])[0]))

    def apply_w(w, z):
        out = apply_fn(unravel(w), z)
        return out.reshape(out.shape[0], -1)[:, 0]

    return draw, apply_w


def values_and_gradients(apply_w, w: Array, z: Array) -> tuple[Array, Array]:
    """``f_z(w)`` ``(n,)`` and ``g = grad_w f_z(w)`` ``(n, p)`` for ``z`` ``(n, d)``: the features
    of the linearisation (eqs. 3-5)."""
    return jax.vmap(jax.value_and_grad(lambda w_, zi: apply_w(w_, zi[None])[0]),
                    in_axes=(None, 0))(w, z)


def beta_schedule(beta, horizon: int, F: float, beta_scale: float) -> Callable[[Array, int], Array]:
    """``beta_t`` as a function ``(t, p) -> ()`` for ``go_ucb``'s ``beta`` option: ``"paper"``
    (``beta_paper``), ``"theory"`` (``beta_theory``), a number (constant) or a callable
    ``(t, T, p)``.

    Schedules (Theorem 4.1 and the experiments, Section 6 and App. D.1). ``T = horizon`` is the
    paper's Phase-II horizon.

    * ``n_explore`` (Phase-I length ``T1``): default ``ceil(sqrt(T))`` (Theorem 4.1: ``n = sqrt T``;
      the experiments' ``(T, n) = (25, 5), (64, 8)``). The driver's initial design (scrambled Sobol,
      each point marginally uniform on the box) counts towards it: Phase I lasts while fewer than
      ``T1`` observations are stored, suggesting i.i.d. uniform points, and the oracle is fitted on
      *all* observations at the first update that reaches ``T1`` (more than ``T1`` if the initial
      design or a batch overshoots).
    * ``lam``: ``"paper"`` is the experiments' ``sqrt(T) ln^2 T`` (natural log; the paper does not
      say), or a positive number.
    * ``beta``: ``"paper"`` is the experiments' ``beta_t = p^3 F^4 t / T`` (``F`` the output bound,
      in standardised units; huge: the bonus dominates); ``"theory"`` (default) is the shape of eq.
      (7), ``beta_t = c (1 + t / T)``, a constant plus a term linear in ``t / T`` with the unknown
      ``mu``, ``sigma`` and logs lumped into ``c = beta_scale``; a number is a constant radius; a
      callable ``beta(t, T, p) -> ()`` is any schedule. ``t`` is the 1-based Phase-II index of the
      point being chosen (Phase-II observations so far plus one); ``beta_t`` should increase in
      ``t``, as the regret proof assumes. Past ``T`` the run continues with the same formulas.
    * ``sigma_phase1`` (the ``i = 0`` index in eqs. 3-5, which no Phase-II point has): ``False``
      (default, reading (a)): ``Sigma_1 = lam I`` and ``w_1 = w0``; ``True`` (reading (b)): the
      Phase-I points, linearised at ``w0``, are the first terms of the sums.

    Scale: ``lam`` has the units of ``|g|^2``. The paper's ``sqrt(T) ln^2 T`` (52 to 138) was set
    for raw outputs on ``[-5, 5]^20``, where ``|g|^2`` is in the hundreds; with the inputs in the
    unit cube and standardised outputs ``|g|^2`` is of order 1, so each Phase-II observation moves
    ``w_t`` by about ``|g|^2 / lam`` of its residual and the estimate stays near ``w0`` (Remark 4.3
    taken to the extreme).
    """
    def beta_t(t, p):
        t = jnp.asarray(t, jnp.result_type(float))
        if callable(beta):
            return jnp.asarray(beta(t, horizon, p), t.dtype)
        if beta == "paper":
            return beta_paper(t, horizon, p, F)
        if beta == "theory":
            return beta_theory(t, horizon, p, beta_scale)
        return jnp.asarray(float(beta), t.dtype)

    return beta_t


def oracle_start(state: GOUCBState, apply_w, lam, *, sigma_phase1: bool, num_steps: int,
                 learning_rate, optimizer) -> tuple[GOUCBState, Array]:
    """The end of Phase I: the Phase-I standardisation frozen, the regression oracle (eq. 2,
    ``fit_oracle`` from ``state.w_init``) on every valid observation of ``state.data``, and
    ``Sigma_1 = lam I``, ``b_1 = lam w0`` (reading (a) of the ``i = 0`` term of eqs. 3-5; with
    ``sigma_phase1`` the Phase-I points linearised at ``w0`` are added, reading (b));
    ``w_1 = Sigma_1^-1 b_1``. Returns ``(state, loss)``, ``loss`` ``()`` the oracle's final mean
    squared error (``fit_oracle``)."""
    data = state.data
    dtype = state.bounds.dtype
    m = D.mask(data)
    _, y_mean, y_std = standardize(data.y, m)
    u = jnp.where(m, -(data.y - y_mean) / y_std, 0.0)
    z = to_unit(data.x, state.bounds)
    w0, loss = fit_oracle(apply_w, state.w_init, z, u, m, num_steps=num_steps,
                          learning_rate=learning_rate, optimizer=optimizer)
    sigma = lam * jnp.eye(w0.shape[0], dtype=dtype)
    b = lam * w0
    if sigma_phase1:
        f, g = values_and_gradients(apply_w, w0, z)
        sigma, b = ridge_update(sigma, b, w0, g, f, u, m)
    w_hat, _ = ridge_estimate(sigma, b)
    return state._replace(w0=w0, w_hat=w_hat, sigma=sigma, b=b, y_mean=y_mean, y_std=y_std,
                          fitted=jnp.ones((), bool)), loss


def phase2_observe(state: GOUCBState, x: Array, y: Array, apply_w) -> GOUCBState:
    """A Phase-II observation (eqs. 3 and 5): ``g_i = grad f_{x_i}(w_t)`` and ``z_i`` of the new
    points at the estimate ``w_t`` they were chosen with added to ``Sigma`` and ``b`` (eqs. 3, 5;
    a failed evaluation adds nothing), ``w_{t+1} = Sigma^-1 b`` and ``t`` advanced by ``q``."""
    ok = jnp.isfinite(y)
    u = jnp.where(ok, -(y - state.y_mean) / state.y_std, 0.0)
    f, g = values_and_gradients(apply_w, state.w_hat, to_unit(x, state.bounds))
    sigma, b = ridge_update(state.sigma, state.b, state.w_hat, g, f, u, ok)
    w_hat, _ = ridge_estimate(sigma, b)
    return state._replace(w_hat=w_hat, sigma=sigma, b=b, t=state.t + x.shape[0])


def oracle_refit(state: GOUCBState, apply_w, lam, *, num_steps: int, learning_rate,
                 optimizer) -> tuple[GOUCBState, Array]:
    """Not in the paper (details below): the oracle on every valid observation,
    warm-started from ``w_t``, in the frozen Phase-I units; then ``Sigma``, ``b`` restart around the
    new ``w0`` with every point linearised there.

    ``refit_every=k``, ``refit_steps`` (**not in the paper**; the default ``k = 1``). The paper fits the
    network once, on the ``T1`` Phase-I points; afterwards ``w_t`` moves only by the linearised
    ridge update, shrunk towards that ``w0`` (measured: Phase II keeps re-querying edges and corners
    of the box and does not improve on the Phase-I best; docs/decisions.md, 2026-11-22). With
    ``k >= 1``, after every update that completes a multiple of ``k`` Phase-II observations, the
    oracle is re-run on **all** observations (one start, ``w_t``, warm-started: ``refit_steps``
    steps, ``oracle_steps`` if ``None``, same optimiser and learning rate; in the frozen Phase-I
    standardisation), its result becomes the new ``w0``, and ``Sigma``, ``b`` restart around it with
    every observation linearised at the new ``w0`` (the ``sigma_phase1`` reading applied to all
    points): ``Sigma = lam I + sum_i g_i g_i^T``, ``b = lam w0 + sum_i g_i z_i``,
    ``g_i = grad f_{x_i}(w0)``, ``z_i = g_i^T w0 + u_i - f_{x_i}(w0)``, ``w_t = Sigma^-1 b``.
    Between refits everything is Algorithm 1 unchanged: same ridge update, ellipsoid and optimistic
    step, i.e. a restart of Phase II from a better oracle estimate (the regret analysis, which needs
    one fixed ``w0``, does not cover it). ``k = 1`` is close to NeuralUCB with a ridge prior at the
    refitted weights. A refit is chosen by ``lax.cond`` inside the Phase-II branch of ``update``
    (under ``vmap`` it is computed every round and selected) and costs ``refit_steps`` full-batch
    optimiser steps on all stored observations.

    Returns ``(state, loss)``, ``loss`` ``()`` the oracle's final mean squared error.
    """
    data = state.data
    dtype = state.bounds.dtype
    m = D.mask(data)
    u = jnp.where(m, -(data.y - state.y_mean) / state.y_std, 0.0)
    z = to_unit(data.x, state.bounds)
    w0, loss = fit_oracle(apply_w, state.w_hat[None], z, u, m, num_steps=num_steps,
                          learning_rate=learning_rate, optimizer=optimizer)
    f, g = values_and_gradients(apply_w, w0, z)
    sigma, b = ridge_update(lam * jnp.eye(w0.shape[0], dtype=dtype), lam * w0, w0, g, f, u, m)
    w_hat, _ = ridge_estimate(sigma, b)
    return state._replace(w0=w0, w_hat=w_hat, sigma=sigma, b=b), loss


def joint_ascent(key: Array, apply_w, w_hat: Array, sigma: Array, chol: Array, beta_t,
                 starts: Array, unit: Array, *, num_candidates: int, num_restarts: int,
                 joint_steps: int, joint_learning_rate, observed: Array | None = None
                 ) -> tuple[Array, Array, Array, Array]:
    """The paper's Step 5: projected gradient ascent on ``f_z(w)`` jointly over ``(z, w)``, ``z`` in
    the unit cube and ``w`` in ``Ball_t`` (eq. 6, ``project_to_ellipsoid``).

    The starts: ``num_candidates`` Sobol points (Kronecker beyond 256 dimensions) and the best
    observed points ``starts`` ``(k, d)`` (NaN rows: none), each paired with the ellipsoid's
    maximiser of its linearisation (``ellipsoid_maximizer``); the ``num_restarts`` of highest
    ``f_z(w)`` are refined by ``joint_steps`` steps of size ``joint_learning_rate``.

    ``observed`` ``(m, d)`` (NaN rows: none): the evaluated points; if the best iterate is one of
    them (``ntkbo.optimize.near_observed``) the best refined start or start that is not is taken.

    Returns:
      ``(z (d,), value (), ball_max (), replaced ())``: the best iterate over every run, ``f_z(w)``
      there, the largest ``|w - w_t|^2_Sigma / beta_t`` over the iterates (at most 1 up to
      rounding), and whether an observed point was replaced.
    """
    dtype = w_hat.dtype
    sampler = qmc.sobol if unit.shape[-1] <= qmc.SOBOL_MAX_DIM else qmc.kronecker
    cand = sampler(key, num_candidates, unit)
    valid = jnp.all(jnp.isfinite(starts), axis=-1)
    cand = jnp.concatenate([cand, jnp.where(valid[:, None], starts, cand[: starts.shape[0]])])
    evals, evecs = linalg.eigh(sigma)
    evals = jnp.maximum(evals, jnp.finfo(dtype).tiny)

    def warm(z):
        g = jax.grad(lambda w: apply_w(w, z[None])[0])(w_hat)
        w = ellipsoid_maximizer(w_hat, chol, beta_t, g)
        return w, apply_w(w, z[None])[0]

    ws, score = jax.vmap(warm)(cand)
    score = jnp.where(jnp.isfinite(score), score, -jnp.inf)
    v0, idx = jax.lax.top_k(score, num_restarts)
    value_and_grads = jax.value_and_grad(lambda z, w: apply_w(w, z[None])[0], argnums=(0, 1))

    def ratio(w):
        r = (w - w_hat) @ sigma @ (w - w_hat)
        return r / jnp.maximum(beta_t, jnp.finfo(dtype).tiny)

    def run(z0, w0, val0):
        w0 = project_to_ellipsoid(w0, w_hat, evals, evecs, beta_t)

        def step(carry, _):
            z, w, best_z, best_w, best_v, worst = carry
            v, (gz, gw) = value_and_grads(z, w)
            better = jnp.isfinite(v) & (v > best_v)
            best_z = jnp.where(better, z, best_z)
            best_w = jnp.where(better, w, best_w)
            best_v = jnp.where(better, v, best_v)
            gz = jnp.where(jnp.isfinite(gz), gz, 0.0)
            gw = jnp.where(jnp.isfinite(gw), gw, 0.0)
            z = jnp.clip(z + joint_learning_rate * gz, 0.0, 1.0)
            w = project_to_ellipsoid(w + joint_learning_rate * gw, w_hat, evals, evecs, beta_t)
            return (z, w, best_z, best_w, best_v, jnp.maximum(worst, ratio(w))), None

        init = (z0, w0, z0, w0, jnp.asarray(-jnp.inf, dtype), ratio(w0))
        (z, w, best_z, best_w, best_v, worst), _ = jax.lax.scan(step, init, None,
                                                                length=joint_steps)
        v = apply_w(w, z[None])[0]
        better = jnp.isfinite(v) & (v > best_v)
        return (jnp.where(better, z, best_z), jnp.where(better, w, best_w),
                jnp.where(better, v, best_v), worst)

    zr, _, vr, worst = jax.vmap(run)(cand[idx], ws[idx], v0)
    if observed is None:
        i = jnp.argmax(vr)
        return zr[i], vr[i], jnp.max(worst), jnp.zeros((), bool)
    # No observed point again (ntkbo.optimize, stage 5): the best refined start that is not one,
    # else the best candidate that is not one.
    points = jnp.concatenate([zr, cand[idx]])
    i, replaced = optimize.best_distinct(points, jnp.concatenate([vr, v0]), observed, unit)
    return points[i], jnp.concatenate([vr, v0])[i], jnp.max(worst), replaced


def optimistic_points(key: Array, state: GOUCBState, apply_w, beta_t, *, q: int,
                      optimistic: str, num_best: int, num_candidates: int, num_restarts: int,
                      num_steps: int, joint_steps: int, joint_learning_rate,
                      avoid_observed: bool | str = optimize.AVOID_OBSERVED):
    """Step 5 for ``q`` points: ``x = argmax_x max_{w in Ball_t} f_x(w)``, by the linearised bonus
    (``linearized_ucb`` maximised by ``ntkbo.optimize.maximize_acquisition``) or the joint ascent
    (``joint_ascent``); between the points of a batch ``Sigma`` grows along the chosen point's
    ``g`` with ``w_t`` unchanged (below, Batches).

    The optimistic step (``optimistic=``):

    * ``"linearized"`` (default): the inner maximum over the ellipsoid of the first-order Taylor
      expansion of ``f_x`` at ``w_t``, which is closed form by Cauchy-Schwarz::

          max_{w in Ball_t} f_x(w_t) + g^T (w - w_t) = f_x(w_t) + sqrt(beta_t) |g|_{Sigma_t^-1},
          g = grad_w f_x(w_t),  attained at  w = w_t + sqrt(beta_t) Sigma_t^-1 g / |g|_{Sigma_t^-1},

      maximised over ``x`` by ``ntkbo.optimize.maximize_acquisition`` (quasi-random candidates and
      the best observed points, then multi-start projected ascent; the ``x``-gradient of the bonus
      is a mixed second derivative, which ``jax.grad`` gives). It is the default because (i) it is
      exact for the linearised model the algorithm's own estimate ``w_t`` comes from (eq. 4), (ii)
      it is an upper bound on the exact inner maximum up to an ``x``-independent term
      ``C_h beta_t / (2 lam)`` (``|w - w_t|^2 <= beta_t / lam`` on the ball and
      ``|grad^2 f| <= C_h``), so the regret argument of Lemma 5.4 goes through with the same form,
      (iii) it needs no inner solver, whose settings the paper leaves unspecified (App. D.1 names
      only the step size and count), and (iv) the paper's ascent (2000 steps of size ``1e-4`` from
      ``w_t``) moves ``w`` by at most 0.2 times the gradient's size, far short of the boundary of
      the ball its ``beta_t`` gives, so it optimises over much less than ``Ball_t``, whereas the
      closed form reaches the boundary exactly. It is the NeuralUCB-style width of the model.
    * ``"joint"``: the paper's Step 5 (Appendix D.1), gradient ascent jointly over ``x`` and ``w``
      with ``joint_steps`` (2000) plain steps of size ``joint_learning_rate`` (``1e-4``) on
      ``f_x(w)``; ``x`` (unit cube) is clipped to the box and ``w`` is projected on ``Ball_t`` after
      every step by the exact Euclidean projection (``project_to_ellipsoid``), so no iterate leaves
      the ball. The paper states no projection, box handling or initialisation. Here the
      ``num_restarts`` starts are the best of ``num_candidates`` Sobol points and the best observed
      points, scored by ``f_x`` at the linearised maximiser ``w*(x)`` above (a point of the ball),
      and each start begins at ``(x, w*(x))``, so the ascent refines the linearised answer; each
      start keeps its best feasible iterate, and the best start wins.

    Batches (``q > 1``, GP-BUCB, Desautels et al. 2014): the ``q`` points of a round share ``w_t``
    and ``beta_t``; after each point ``x_j`` of the batch, ``Sigma`` is updated with its gradient
    ``g(x_j; w_t)`` as if it had been observed. That is the kriging-believer rule of
    ``ntkbo.algorithms.gp``: a fantasy observation equal to the linearised prediction has
    pseudo-target ``z = g^T w_t``, which leaves the ridge estimate at ``w_t`` and shrinks the
    ellipsoid along ``g``, so the next point is pushed elsewhere. In ``update`` all ``q`` gradients
    are then taken at ``w_t``, as they should be (eq. 3: ``g_i`` at the round's estimate).

    Returns:
      ``(x (q, d), info)``: the points in the box and an :class:`OptimisticInfo`: per point
      ``acq_value``, ``mean`` (``f_x(w_t)``), ``bonus`` (``sqrt(beta_t) |g|_{Sigma^-1}``) and
      ``ball_max``, ``(q,)`` each, and ``duplicates_replaced`` ``()``.
    """
    d = state.bounds.shape[-1]
    dtype = state.bounds.dtype
    unit = jnp.stack([jnp.zeros(d, dtype), jnp.ones(d, dtype)])
    w_hat = state.w_hat
    z_obs = to_unit(state.data.x, state.bounds)
    starts = best_points(z_obs, state.data.y, D.mask(state.data), num_best)
    observed = optimize.guarded(avoid_observed, z_obs, D.mask(state.data))
    sigma = state.sigma

    def point_terms(z, chol):
        """``(f_z(w_t), g, bonus)`` for one point ``z`` ``(d,)``."""
        f, g = jax.value_and_grad(lambda w: apply_w(w, z[None])[0])(w_hat)
        return f, g, jnp.sqrt(beta_t) * ellipsoid_norm(g, chol)

    zs, vals, means, bonuses, balls, replaced = [], [], [], [], [], []
    for j in range(q):
        sub = key if j == 0 else jax.random.fold_in(key, j)
        chol = linalg.cholesky(sigma)

        def lin_acq(zb, chol=chol):
            f, _, bonus = jax.vmap(lambda zi: point_terms(zi, chol))(zb)
            return f + bonus

        if optimistic == "linearized":
            z, val, opt_info = optimize.maximize_acquisition(
                sub, lin_acq, unit, num_candidates=num_candidates,
                num_restarts=num_restarts, x_best=starts, num_steps=num_steps,
                observed=observed)
            ball, rep = jnp.ones((), dtype), opt_info.replaced
        else:
            z, val, ball, rep = joint_ascent(
                sub, apply_w, w_hat, sigma, chol, beta_t, starts, unit,
                num_candidates=num_candidates, num_restarts=num_restarts,
                joint_steps=joint_steps, joint_learning_rate=joint_learning_rate,
                observed=observed)
        f, g, bonus = point_terms(z, chol)
        zs.append(z)
        vals.append(val)
        means.append(f)
        bonuses.append(bonus)
        balls.append(ball)
        replaced.append(rep)
        if observed is not None:  # the batch's own points: none twice
            observed = jnp.concatenate([observed, z[None]])
        if j + 1 < q:  # believer: Sigma grows along g, w_t is unchanged (optimistic_points)
            sigma = sigma + jnp.outer(g, g)
    info = OptimisticInfo(acq_value=jnp.stack(vals), mean=jnp.stack(means),
                          bonus=jnp.stack(bonuses), ball_max=jnp.stack(balls),
                          duplicates_replaced=jnp.sum(jnp.stack(replaced)).astype(jnp.int32))
    return from_unit(jnp.stack(zs), state.bounds), info


# ---------------------------------------------------------------------------------------------
# The algorithm.


def _go_ucb(
    horizon: int = 100,
    *,
    n_explore: int | None = None,
    lam: Union[float, str] = "paper",
    beta: Union[float, str, Callable[[Array, int, int], Array]] = "theory",
    beta_scale: float = 1.0,
    F: float = 1.0,
    optimistic: str = "linearized",
    width: int = 25,
    input_scale: float | None = None,
    network=None,
    sigma_phase1: bool = False,
    oracle_steps: int = 2000,
    oracle_learning_rate: float | None = 1e-2,
    oracle_optimizer="adam",
    oracle_restarts: int = 4,
    q: int = 1,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    num_steps: int = 30,
    joint_steps: int = 2000,
    joint_learning_rate: float = 1e-4,
    refit_every: int = 1,
    refit_steps: int | None = None,
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``go_ucb`` with its flat options (``LAYOUT`` places them in the parts)."""
    _check_int("horizon", horizon, 1)
    if n_explore is None:
        n_explore = n_explore_paper(horizon)
    _check_int("n_explore", n_explore, 1)
    if isinstance(lam, str):
        _check_choice("lam", lam, LAM_RULES)
        if horizon < 2:
            raise ValueError(f"horizon must be >= 2 for lam='paper' (ln 1 = 0), got {horizon}")
        lam_value = lam_paper(horizon)
    else:
        lam_value = _check_positive("lam", lam)
    if isinstance(beta, str):
        _check_choice("beta", beta, BETA_RULES)
    elif not callable(beta):
        _check_positive("beta", beta, allow_zero=True)
    beta_scale = _check_positive("beta_scale", beta_scale, allow_zero=True)
    F = _check_positive("F", F)
    _check_choice("optimistic", optimistic, OPTIMISTIC)
    check_optimizer("oracle_optimizer", oracle_optimizer, ORACLE_OPTIMIZERS)
    for name, value, low in (("width", width, 1), ("oracle_steps", oracle_steps, 0),
                             ("oracle_restarts", oracle_restarts, 1), ("q", q, 1),
                             ("num_candidates", num_candidates, 1),
                             ("num_restarts", num_restarts, 1), ("num_steps", num_steps, 0),
                             ("joint_steps", joint_steps, 0)):
        _check_int(name, value, low)
    if num_restarts > num_candidates:
        raise ValueError(f"num_restarts must be <= num_candidates = {num_candidates}, "
                         f"got {num_restarts}")
    _check_int("refit_every", refit_every, 0)
    if refit_steps is None:
        refit_steps = oracle_steps
    _check_int("refit_steps", refit_steps, 0)
    if not is_transformation(oracle_optimizer):  # a transformation carries its own step
        oracle_learning_rate = _check_positive("oracle_learning_rate", oracle_learning_rate)
    joint_learning_rate = _check_positive("joint_learning_rate", joint_learning_rate)
    optimize.check_avoid_observed(avoid_observed)
    if not isinstance(sigma_phase1, bool):
        raise ValueError(f"sigma_phase1 must be a bool, got {sigma_phase1!r}")
    if network is None:
        init_fn, apply_fn = sigmoid_network(width, input_scale)
    else:
        if input_scale is not None:
            raise ValueError("input_scale: applies to the default network only; got a network "
                             "too (pass sigmoid_network(width, input_scale) as network instead)")
        if (not isinstance(network, (tuple, list)) or len(network) < 2
                or not callable(network[0]) or not callable(network[1])):
            raise ValueError("network must be None or a tuple (init_fn, apply_fn[, ...]) of "
                             f"callables, got {network!r}")
        init_fn, apply_fn = network[0], network[1]
    num_best = 4
    beta_fn = beta_schedule(beta, horizon, F, beta_scale)
    model = functools.lru_cache(maxsize=None)(lambda d: flat_network(init_fn, apply_fn, d))
    oracle: dict[str, Any]  # options of several types, passed as **oracle
    oracle = dict(learning_rate=oracle_learning_rate, optimizer=oracle_optimizer)
    step_opts: dict[str, Any]  # options of several types, passed as **step_opts
    step_opts = dict(q=q, optimistic=optimistic, num_best=num_best, num_candidates=num_candidates,
                     num_restarts=num_restarts, num_steps=num_steps, joint_steps=joint_steps,
                     joint_learning_rate=joint_learning_rate, avoid_observed=avoid_observed)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        if bounds.ndim != 2 or bounds.shape[0] != 2:
            raise ValueError(f"bounds must have shape (2, d), got {bounds.shape}")
        d = bounds.shape[-1]
        dtype = bounds.dtype
        draw, _ = model(d)
        w_init = draw(jax.random.split(key, oracle_restarts)).astype(dtype)
        p = w_init.shape[-1]
        lam_ = jnp.asarray(lam_value, dtype)
        return GOUCBState(
            data=D.empty(capacity, d, dtype), bounds=bounds, w_init=w_init, w0=w_init[0],
            w_hat=w_init[0], sigma=lam_ * jnp.eye(p, dtype=dtype), b=lam_ * w_init[0],
            y_mean=jnp.zeros((), dtype), y_std=jnp.ones((), dtype), fitted=jnp.zeros((), bool),
            t=jnp.zeros((), jnp.int32))

    def update(state, x, y):
        d = state.bounds.shape[-1]
        _, apply_w = model(d)
        dtype = state.bounds.dtype
        x = jnp.asarray(x, dtype).reshape(-1, d)
        y = jnp.asarray(y, dtype).reshape(-1)
        data = D.append(state.data, x, y)
        appended = data.count > state.data.count
        lam_ = jnp.asarray(lam_value, dtype)
        no_fit = (jnp.zeros((), bool), jnp.full((), jnp.nan, dtype))

        def unchanged(s):
            return s, no_fit

        def start_phase2(s):
            s, loss = oracle_start(s, apply_w, lam_, sigma_phase1=sigma_phase1,
                                   num_steps=oracle_steps, **oracle)
            return s, (jnp.ones((), bool), loss)

        def phase2(s):
            new = phase2_observe(s, x, y, apply_w)
            if refit_every == 0:  # the paper: no retraining in Phase II
                return new, no_fit
            due = new.t // refit_every > s.t // refit_every  # a multiple of k was reached

            def refit(s_):
                s_, loss = oracle_refit(s_, apply_w, lam_, num_steps=refit_steps, **oracle)
                return s_, (jnp.ones((), bool), loss)

            return jax.lax.cond(due, refit, unchanged, new)

        branch = jnp.where(~appended, 0,
                           jnp.where(state.fitted, 2, jnp.where(data.count >= n_explore, 1, 0)))
        state, (ran, loss) = jax.lax.switch(branch, [unchanged, start_phase2, phase2],
                                            state._replace(data=data))
        return state, GOUCBUpdateInfo(oracle_ran=ran, oracle_loss=loss)

    def suggest(key, state):
        d = state.bounds.shape[-1]
        dtype = state.bounds.dtype
        # The branches are exclusive, so they may share the key.

        def phase1(_):
            x = qmc.uniform(key, q, state.bounds)
            nan = jnp.full((q,), jnp.nan, dtype)
            info = OptimisticInfo(acq_value=nan, mean=nan, bonus=nan, ball_max=nan,
                                  duplicates_replaced=jnp.zeros((), jnp.int32))
            return x, info, jnp.full((), jnp.nan, dtype)

        def phase2(_):
            _, apply_w = model(d)
            beta_t = beta_fn(state.t + 1, state.w_hat.shape[0])
            x, info = optimistic_points(key, state, apply_w, beta_t, **step_opts)
            return x, info, beta_t

        x, info, beta_t = jax.lax.cond(state.fitted, phase2, phase1, None)
        info = GOUCBSuggestInfo(*info, phase=jnp.where(state.fitted, 2, 1).astype(jnp.int32),
                                t=state.t + 1, beta=beta_t, lam=jnp.asarray(lam_value, dtype))
        return x.reshape(q, d), info

    def posterior_mean(state, x):
        """The estimate's prediction of ``f`` in ``y``'s units, ``y_mean - y_std f_x(w_t)`` (the
        network models ``u = -(y - y_mean) / y_std``, :class:`GOUCBState`); NaN in Phase I,
        before the oracle has fitted a model (``Algorithm.posterior_mean``)."""
        _, apply_w = model(state.bounds.shape[-1])
        z = to_unit(jnp.asarray(x, state.bounds.dtype), state.bounds)
        mu = state.y_mean - state.y_std * apply_w(state.w_hat, z)
        return jnp.where(state.fitted, mu, jnp.nan)

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


@composed(_go_ucb, LAYOUT)
def go_ucb(
    horizon: int = 100,
    *,
    n_explore: int | None = None,
    lam: Union[float, str] = "paper",
    beta: Union[float, str, Callable[[Array, int, int], Array]] = "theory",
    beta_scale: float = 1.0,
    F: float = 1.0,
    optimistic: str = "linearized",
    network: Any = None,
    sigma_phase1: bool = False,
    training: PartOption = None,
    q: int = 1,
    search: PartOption = None,
) -> Algorithm:
    """GO-UCB (see the module docstring for the formulas, conventions and defaults).

    Sign convention and scaling. ntkbo minimises ``f``; the paper maximises. The surrogate models
    ``u = -(y - m) / s``, the *negated* observations standardised by the mean ``m`` and standard
    deviation ``s`` of the Phase-I observations, so every formula above holds verbatim with ``y``
    replaced by ``u`` (GO-UCB run on ``-f``): the upper confidence bound on ``u`` is a lower
    confidence bound ``m - s UCB_u(x)`` on ``y``, and its maximiser is the point suggested. ``m``
    and ``s`` are computed once, when the oracle runs, and then frozen: ``w0`` is fitted in those
    units, and ``b_t`` stores pseudo-targets in them, so re-standardising in Phase II would change
    the meaning of ``w0`` (the centre of the ridge penalty) and of every stored ``z_i``. Inputs are
    mapped to the unit cube ``[0, 1]^d`` (``z = (x - lower) / (upper - lower)``) before the network
    sees them.

    Output. The paper's output ``x ~ U{x_1..x_T}`` is for its simple-regret statement; the drivers
    report the best observation, as for every ntkbo algorithm.

    Inside jit. The phase is a traced value: ``suggest`` selects the phase with ``lax.cond`` and
    ``update`` selects "still Phase I", "run the oracle" and "Phase-II update" with ``lax.switch``,
    so ``suggest`` and ``update`` compile once per capacity and run under ``vmap`` (where both
    branches are evaluated and the right one selected).


    Args:
      horizon: ``T``, the Phase-II horizon the schedules are tuned for (Phase-II rounds; set it to
        about ``budget - n_explore``). The run may go past it.
      n_explore: Phase-I length ``T1`` (observations, the initial design included); ``None`` for
        ``ceil(sqrt(horizon))``.
      lam: ``lambda`` of eqs. (3)-(5): ``"paper"`` (``sqrt(T) ln^2 T``) or a positive number.
      beta: ``beta_t``: ``"theory"`` (``beta_scale (1 + t / T)``), ``"paper"``
        (``p^3 F^4 t / T``), a non-negative number, or a callable ``(t, T, p) -> ()``.
      beta_scale: the constant of ``"theory"``.
      F: the output bound of ``"paper"`` (standardised units).
      optimistic: ``"linearized"`` (closed-form bonus, default) or ``"joint"`` (the paper's joint
        gradient ascent over ``x`` and ``w`` with projection on the ball).
      network: the surrogate ``f_x(w)``: an ``(init_fn, apply_fn)`` pair (a longer tuple such as
        ``ntkbo.kernels.mlp(...)``'s triple is cut to its first two entries), or
        ``ntkbo.parts.Network`` for the default ``sigmoid_network(width, input_scale)``:
        ``width`` (default and paper 25) and ``input_scale``, ``5.0`` shows it the paper's input
        box ``[-5, 5]^d``, ``None`` (default) the unit cube. ``input_scale`` is a plain number,
        so that an experiment spec (TOML) can set it; a pair takes none.
      training: the regression oracle (``ntkbo.parts.Training``, ``fit_oracle``): ``optimizer``
        ``"adam"`` (default) or ``"sgd"`` (paper), full-batch, or an
        ``optax.GradientTransformation``; ``learning_rate`` of a named one (``1e-2``; paper
        ``1e-11``); ``num_steps`` (2000, paper too); ``num_restarts`` random initialisations, the
        best kept (4; the paper states none); ``refit_every``, **not in the paper**
        (``oracle_refit``): ``k >= 1`` re-runs the oracle on all observations every ``k``
        Phase-II observations and restarts ``Sigma``, ``b`` around the new ``w0`` (default 1:
        after every observation), ``0`` the paper's single fit; ``refit_steps``, optimiser steps
        of a refit, warm-started from ``w_t`` (``None``: ``num_steps``).
      search: the optimistic step (``ntkbo.parts.Search``): ``num_candidates`` Sobol candidates
        (1024; Kronecker beyond 256 dimensions), plus the 4 best observed points (and, for
        ``"linearized"``, ``num_candidates // 4`` perturbations of them, as
        ``maximize_acquisition`` adds); ``num_restarts`` starts refined by ascent, the best
        candidates (4); ``num_steps``, ``"linearized"``: projected ascent steps per start (30;
        ``ntkbo.optimize.maximize_acquisition``'s ``"pgd"``); ``joint_steps`` and
        ``joint_learning_rate``, ``"joint"``: plain gradient-ascent steps on ``(x, w)`` and their
        size (default and paper: 2000, ``1e-4``), ``x`` in unit-cube coordinates.
      sigma_phase1: include the Phase-I points, linearised at ``w0``, in ``Sigma`` and ``b``
        (reading (b) of the ``i = 0`` term of eqs. 3-5); default reading (a), ``Sigma_1 = lam I``.
      q: points per round (batch rule: ``optimistic_points``).

    Returns:
      An ``ntkbo.Algorithm``. ``suggest`` returns ``(x (q, d), info)`` with ``info`` a NamedTuple of
      arrays of fixed structure: ``phase`` ``()`` int32 (1 or 2), ``t`` ``()`` int32 (Phase-II index
      of the first point), ``beta`` ``()``, ``lam`` ``()``, and per point ``(q,)``: ``acq_value``
      (the optimistic value of ``u``: ``linearized_ucb``, or ``f_x(w)`` at the joint ascent's
      ``w``), ``mean`` (``f_x(w_t)``), ``bonus`` (``sqrt(beta_t) |g|_{Sigma_t^-1}``) and
      ``ball_max`` (the largest ``|w - w_t|^2_{Sigma_t} / beta_t`` over the ascent's iterates: 1 at
      the linearised maximiser, at most 1 for the joint ascent); in Phase I these are NaN
      (:class:`GOUCBSuggestInfo`). ``update`` returns ``(state, GOUCBUpdateInfo)``: whether it ran
      the oracle and the oracle's final loss.

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _go_ucb(**LAYOUT.flatten(locals(), "go_ucb"))
