r"""NeuralUCB (Dongruo Zhou, Lihong Li and Quanquan Gu, "Neural Contextual Bandits with UCB-based
Exploration", ICML 2020) and NeuralTS (Weitong Zhang, Dongruo Zhou, Lihong Li and Quanquan Gu,
"Neural Thompson Sampling", ICLR 2021) on a continuous box: the baselines of the STO-BNTS and
Neural Greedy papers (NeuralBO's paper discusses them).

Both fit a network ``h(x; theta_t)`` to the data and use the gradient features of the *current*
network, ``g(x) = grad_theta h(x; theta_{t-1})``, in ntkbo's conventions::

    U_t = lam I + sum_{i <= t} g_i g_i^T / m,   g_i = g(x_i; theta_{i-1}) at the time x_i is
                                                observed (Zhou et al.'s Algorithm 1, line 8)
    NeuralUCB:  x_t = argmin_x  h(x; theta_{t-1}) - nu sqrt(g(x)^T U_{t-1}^-1 g(x) / m)   (bonus)
    NeuralTS:   f~(x) ~ N(h(x; theta_{t-1}), nu^2 sigma^2(x)),  sigma^2 = lam g^T U^-1 g / m,
                x_t = argmin_x f~(x)   (independently per point, Zhang et al.'s Algorithm 1)
    TrainNN:    theta_t = J gradient-descent steps from theta_0 on
                1/2 sum_i (h(x_i; theta) - y_i)^2 + 1/2 m lam |theta - theta_0|^2

(``nu`` is Zhou et al.'s ``gamma_t`` and Zhang et al.'s ``nu``.) Note the two papers differ by a
factor ``sqrt(lam)``: NeuralUCB's bonus has no ``lam``, NeuralTS's variance has it.

**Sign convention.** The papers maximise a reward. ntkbo minimises ``f``: the network models the
standardised observations of ``f`` and the query minimises ``h - bonus`` (a lower confidence bound)
or the Thompson draw, i.e. the papers' algorithms run on the reward ``-f``.

**Defaults and the papers.** A ReLU network with one hidden layer of width 20 (Zhou et al.'s
two-layer ``sqrt(m) W_2 relu(W_1 x)``), He scales, no biases, ``lam = 0.01``, the exact ``U``
(``ucb_bonus``), ``J = 100`` GD steps from ``theta_0``, inputs on the unit sphere and standardised
outputs. ``nu="by_dimension"`` departs from the papers' settings (the Greedy paper's NeuralUCB
``0.1``, STO-BNTS's NeuralTS ``1``): ``nu = 0.1`` (inside the Greedy paper's grid
``{0.01, 0.1, 1}``) for both when ``d > 6``, and for ``d <= 6``, where 0.1 left the
search at the box's corner, 0.3 (NeuralUCB) and 1.0 (NeuralTS), chosen on tuning keys
(:func:`nu_by_dimension`). Zhou et al.'s symmetric initialisation (which
only makes ``h(.; theta_0) = 0``) is not implemented. The baselines of the two papers that ran
them on continuous black boxes are presets (:data:`PRESETS_BY_NAME`): ``neural_ucb(preset="paper")``
(the Greedy paper's), ``neural_ucb(preset="sto_bnts")``, ``neural_ts(preset="paper")`` (STO-BNTS's).

Building blocks: :func:`ucb_bonus` and :func:`ts_std` (the formulas above on given features);
training and the variance forms are ``ntkbo.algorithms.neural_bo``'s.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Union

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ntkbo.validation import check_bounds
from ntkbo import data as D
from ntkbo import optimize
from ntkbo.algorithms.observations import (Y_TRANSFORMS, best_points, embed_inputs, from_unit,
                                          output_units, to_unit, unit_view)
from ntkbo.base import Algorithm
from ntkbo.feature_gp import DiagU, dual_factor, variance_diag, variance_dual
from ntkbo.kernels import grad_features, mlp, mlp_spec
from ntkbo.nets import TrainInfo, gd_learning_rate, train
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.validation import (check_acquisition_options, check_choice, check_int,
                              check_positive)

Array = jax.Array
Params = Any

U_FORMS = ("full", "diag")
INPUT_MAPS = ("sphere", "cube")
STYLES = ("ucb", "ts")
NU_SCHEDULES = ("by_dimension",)
#: ``nu="by_dimension"``: ``NU_LOW_DIM[style]`` when ``d <= NU_DIM_LIMIT``, else ``NU_HIGH_DIM``.
NU_LOW_DIM = {"ucb": 0.3, "ts": 1.0}
NU_HIGH_DIM, NU_DIM_LIMIT = 0.1, 6
#: Best observed points the acquisition optimiser starts from (and perturbs).
NUM_BEST = 4

#: Named settings, per factory (the two factories share this module and their sources differ;
#: ``ntkbo.algorithms.presets``): ``ntkbo.algorithms.neural_ucb(preset=NAME, **options)`` and
#: ``neural_ts(preset=NAME, ...)`` start from these, the ``options`` given override them. The
#: presets are the settings of the papers that ran these algorithms as baselines on continuous
#: black boxes (their own papers work with finite arm sets).
#:
#: * ``neural_ucb``, ``"paper"``: the Neural Greedy paper's NeuralUCB baseline (Be Greedy, Section
#:   3 and App. F.1-F.2): two hidden layers of width 20 (Section 3: "a 2-hidden
#:   layer network of width 20"; F.2 says "2-layer ... as described in (Zhou et al., 2020)", which
#:   in Zhou et al.'s counting is one hidden layer: pass ``network={"depth": 1}`` for that reading), the exact
#:   ``U`` (the paper names the ``p x p`` inverse as the reason for the small network), weights
#:   ``N(0, gamma^2 / fan_in)`` and hidden biases ``N(0, gamma^2)`` with ``gamma = 1`` for the
#:   baselines (``W_std = b_std = 1``); App. A's activation, tanh, as ``"erf"`` (the closest
#:   ntkbo has: its networks take the activations with closed-form kernels, and the paper's own
#:   SMB presets make the same substitution); ``lam = 0.01``, ``nu = 0.1`` (the paper's ``gamma``): one
#:   point of its grids ``lam in {1e-2 .. 1e-5}``, ``nu in {0.01, 0.1, 1}``, which it searched per
#:   function without reporting the winner; the acquisition from 10 random starts, 500 gradient
#:   steps each (F.2).
#: * ``neural_ucb`` and ``neural_ts``, ``"sto_bnts"``, and ``neural_ts``, ``"paper"`` (the Neural
#:   Greedy paper did not run NeuralTS, so STO-BNTS's is the only published continuous setting):
#:   the STO-BNTS paper's baselines (Dai et al. 2022, Section 5 and App. F): the NeuralTS code's
#:   depth 2, width 256, ReLU, ``lam = 0.001``, ``nu = 1``, the diagonal ``U``; the acquisition
#:   from 10,000 random points, NeuralUCB's refined by L-BFGS from the best 100 (the paper's
#:   L-BFGS-B with 100 restarts; NeuralTS's independent per-point draw is not differentiable, so
#:   its best candidate is taken, as the paper's "reward sampled for each arm" on the points).
#:
#: Both run without the duplicate guard (``search.avoid_observed=False``), as the papers.
#: Not expressible, so ntkbo's choice stays: tanh (``"erf"``, above); training (Greedy paper: Adam
#: at ``1e-3``; the
#: STO-BNTS paper used the NeuralTS code's training, whose settings it does not state): ntkbo's
#: ``J = 100`` GD steps from ``theta_0``; F.2's final bias initialised at 0 (``b_std`` draws every
#: bias); uniform random
#: starts (Sobol here) and a fixed-step gradient descent (``"pgd"``); the ``NUM_BEST`` best
#: observed points always added as starts; the inputs and output scaling (unit sphere,
#: standardised outputs), which neither paper states.
_GREEDY_UCB = dict(network=dict(width=20, depth=2, activation="erf", W_std=1.0, b_std=1.0),
                   lam=0.01, nu=0.1, u="full",
                   search=dict(num_candidates=10, num_restarts=10, num_steps=500, method="pgd",
                               avoid_observed=False))
_STO_BNTS = dict(network=dict(width=256, depth=2, activation="relu"), lam=0.001, nu=1.0, u="diag",
                 search=dict(num_candidates=10_000, avoid_observed=False))
PRESETS_BY_NAME = {
    "neural_ucb": {"paper": _GREEDY_UCB,
                   "sto_bnts": dict(_STO_BNTS, search=dict(num_candidates=10_000, num_restarts=100,
                                                           method="lbfgs", avoid_observed=False))},
    "neural_ts": {"paper": _STO_BNTS, "sto_bnts": _STO_BNTS},
}

_NETWORK = dict(width="width", depth="depth", activation="activation", W_std="W_std",
                b_std="b_std")
_TRAINING = dict(num_steps="num_steps", learning_rate="learning_rate")
#: Where ``neural_ucb``'s plain options sit among its parts (``ntkbo.parts``).
LAYOUT = Layout({
    "network": _NETWORK,
    "training": _TRAINING,
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="num_acq_steps", method="acq_method",
                   avoid_observed="avoid_observed"),
})
#: Where ``neural_ts``'s plain options sit among its parts (no gradient refinement: its search
#: has no ``num_steps`` or ``method``).
TS_LAYOUT = Layout({
    "network": _NETWORK,
    "training": _TRAINING,
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   avoid_observed="avoid_observed"),
})

__all__ = ["DiagU", "FeaturesU", "LAYOUT", "NeuralTSSuggestInfo", "NeuralUCBState",
           "NeuralUCBSuggestInfo", "PRESETS_BY_NAME", "TS_LAYOUT", "UForm", "neural_ts",
           "neural_ucb", "nu_by_dimension", "ts_std", "ucb_bonus"]


class NeuralUCBSuggestInfo(NamedTuple):
    """The ``info`` of NeuralUCB's ``suggest`` (standardised units, minimisation: the acquisition
    is the negated lower confidence bound ``-(h - bonus)``).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``bonus - h`` at each chosen point.
      mean: ``(q,)`` the network mean ``h`` there.
      bonus: ``(q,)`` the exploration bonus ``nu sqrt(g^T U^-1 g)`` there, with the pending
        points of the batch before it in ``U`` (``>= 0``).
      nu: ``()`` the exploration scale ``nu``.
      duplicates_replaced: ``()`` int32, maximisers that were observed points and were replaced
        (``ntkbo.optimize``).
    """

    acq_value: Array
    mean: Array
    bonus: Array
    nu: Array
    duplicates_replaced: Array


class NeuralTSSuggestInfo(NamedTuple):
    """The ``info`` of NeuralTS's ``suggest`` (standardised units, minimisation: the acquisition
    is ``-f~``, the negated Thompson draw ``f~ ~ N(h, std^2)``).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``-f~_j`` at each chosen point.
      mean: ``(q,)`` the network mean ``h`` there.
      std: ``(q,)`` the draw's standard deviation ``nu sqrt(lam g^T U^-1 g)`` there.
      nu: ``()`` the exploration scale ``nu``.
      duplicates_replaced: ``()`` int32, draws whose best candidate was an observed point and
        that took their best other candidate.
    """

    acq_value: Array
    mean: Array
    std: Array
    nu: Array
    duplicates_replaced: Array


class FeaturesU(NamedTuple):
    """``NeuralUCBState.u`` for ``u="full"``: the exact ``U = lam I + G^T G``, kept as its features
    (never formed, :func:`ucb_bonus`).

    Attributes:
      g_obs: the features ``g_i = g(x_i; theta_{i-1})``, one row of ``g_obs.x`` ``(C, p)`` per
        row of the observations' buffer (``ntkbo.data.Data``); ``g_obs.y`` is 0, or NaN for a
        failed evaluation, whose features are zeros and not in ``U``.
    """

    g_obs: D.Data


#: ``NeuralUCBState.u``: one type per form of ``U``, each field of one shape.
UForm = Union[FeaturesU, DiagU]


class NeuralUCBState(NamedTuple):
    """The state of ``neural_ucb`` and ``neural_ts`` (a pytree of arrays).

    Attributes:
      data: raw observations (``ntkbo.data.Data``).
      bounds: ``(2, d)`` box.
      params0: ``theta_0``, drawn in ``init`` (TrainNN's start and centre).
      params: ``theta_t``, the trained network (TrainNN's losses are ``update``'s ``info``,
        ``ntkbo.nets.TrainInfo``).
      u: ``U`` in the form ``u`` keeps, a type per form (:data:`UForm`): ``"full"``:
        :class:`FeaturesU` (``g_obs``, the features ``(C, p)``); ``"diag"``:
        ``ntkbo.feature_gp.DiagU`` (``diag`` ``(p,)``, ``lam + sum_i g_i^2``).
    """

    data: D.Data
    bounds: Array
    params0: Params
    params: Params
    u: UForm


def _quad(g: Array, u: str, lam, g_obs: Array, mask: Array, chol, u_diag: Array) -> Array:
    """``g^T U^-1 g`` ``(n,)`` for features ``g`` ``(n, p)`` (``U`` without the papers' ``m``)."""
    if u == "full":
        return variance_dual(g, g_obs, mask, chol) / lam
    return variance_diag(g, u_diag, 1.0)


def _u_parts(u: UForm, dtype) -> tuple[Array, Array, Array]:
    """``(features, mask, diag)`` of a state's ``u`` for :func:`_quad` and the believer steps of a
    batch: the features ``(C, p)`` and their mask ``(C,)`` of :class:`FeaturesU`, the diagonal
    ``(p,)`` of :class:`DiagU`; the other form's parts are empty (``(0, 1)``, ``(0,)``, ``(0,)``)
    and unused."""
    if isinstance(u, FeaturesU):
        return u.g_obs.x, D.mask(u.g_obs), jnp.zeros((0,), dtype)
    return jnp.zeros((0, 1), dtype), jnp.zeros((0,), bool), u.diag


def ucb_bonus(g: Array, nu, lam, *, u: str = "full", g_obs=None, mask=None, u_diag=None,
              jitter=None) -> Array:
    """NeuralUCB's bonus ``nu sqrt(g^T U^-1 g)`` ``(n,)`` (the papers' ``/ m`` absorbed, module
    docstring), ``U = lam I + G^T G`` (``u="full"``: ``G = g_obs[mask]`` ``(C, p)``) or its diagonal
    ``u_diag`` ``(p,)`` (``"diag"``); ``g`` ``(n, p)``.

    The ``m`` factors: ntkbo's networks are in NTK parameterisation (every parameter ``N(0, 1)``,
    scaled by ``W_std / sqrt(fan_in)`` in the forward pass). Writing the papers' weights as
    ``W = W^ / sqrt(m)``, their gradients are ``g_W = sqrt(m) g`` with ``g`` the gradient w.r.t.
    ntkbo's parameters ``W^``, so ``g_W^T U_W^-1 g_W / m = g^T U^-1 g`` with
    ``U = lam I + sum g g^T``, and ``m lam |W - W_0|^2 = lam |W^ - W^_0|^2`` (the same absorption as
    ``ntkbo.algorithms.neural_bo.paper_W_std``). Everything below uses ``g`` and ``U`` without
    ``m``.

    ``U``, two ways (``u=``):

    * ``"full"`` (default): the exact ``U`` of the papers. It is never formed: the state keeps the
      features ``G = [g_1; ...; g_t]`` (``t x p``) and, by Woodbury,
      ``g^T U^-1 g = (g.g - k^T (K + lam I)^-1 k) / lam`` with ``K = G G^T``, ``k = G g``
      (``neural_bo.dual_factor`` and ``neural_bo.variance_dual``): ``O(t^2 p + t^3)`` per suggest
      and ``O(t p)`` memory, exact for any ``p``.
    * ``"diag"``: ``U ~ diag(U) = lam + sum_i g_i^2`` (the authors' code, and how the STO-BNTS paper
      ran both baselines; ``neural_bo.variance_diag``): ``O(p)`` state.
    """
    if u == "full":
        if g_obs is None or mask is None:
            raise ValueError("ucb_bonus: u='full' needs g_obs and mask (the observed features)")
        quad = variance_dual(g, g_obs, mask, dual_factor(g_obs, mask, lam, jitter)) / lam
    else:
        if u_diag is None:
            raise ValueError(f"ucb_bonus: u={u!r} needs u_diag (the diagonal of U)")
        quad = variance_diag(g, u_diag, 1.0)
    return nu * jnp.sqrt(jnp.maximum(quad, 0.0))


def ts_std(g: Array, nu, lam, **kwargs) -> Array:
    """NeuralTS's ``nu sigma = nu sqrt(lam g^T U^-1 g)`` ``(n,)``; arguments as
    :func:`ucb_bonus`."""
    return jnp.sqrt(lam) * ucb_bonus(g, nu, lam, **kwargs)


def nu_by_dimension(style: str, d: int) -> float:
    """The default exploration scale: ``NU_LOW_DIM[style]`` (NeuralUCB ``"ucb"`` 0.3, NeuralTS
    ``"ts"`` 1.0) when the dimension ``d <= NU_DIM_LIMIT`` (6), else ``NU_HIGH_DIM`` (0.1, for
    both: the Neural Greedy paper's NeuralUCB setting, one point of its grid ``{0.01, 0.1, 1}``;
    no paper ran NeuralTS at 0.1: STO-BNTS's NeuralTS baseline has ``nu = 1``); a Python float
    (``d`` is static)."""
    check_choice("style", style, STYLES)
    return NU_LOW_DIM[style] if d <= NU_DIM_LIMIT else NU_HIGH_DIM


def _make(style, *, width, depth, lam, nu, activation, W_std, b_std, u, num_steps, learning_rate,
          q, input_map, num_candidates, num_restarts, num_acq_steps, acq_method, jitter,
          y_transform, avoid_observed):
    check_int("width", width, 1)
    check_int("depth", depth, 1)
    check_positive("lam", lam)
    if isinstance(nu, str):
        check_choice("nu", nu, NU_SCHEDULES)
    else:
        check_positive("nu", nu, allow_zero=True)
    check_choice("u", u, U_FORMS)
    check_int("num_steps", num_steps, 0)
    if learning_rate is not None:
        check_positive("learning_rate", learning_rate)
    check_int("q", q, 1)
    check_choice("input_map", input_map, INPUT_MAPS)
    check_choice("y_transform", y_transform, Y_TRANSFORMS)
    check_acquisition_options(num_candidates, num_restarts, num_acq_steps, acq_method,
                              optimize.METHODS)
    optimize.check_avoid_observed(avoid_observed)
    if jitter is not None:
        check_positive("jitter", jitter, allow_zero=True)
    mlp_spec(depth, width, activation, W_std, b_std)  # validates the network arguments
    init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=W_std, b_std=b_std)
    feats = grad_features(apply_fn)

    def embed(z):
        return embed_inputs(z, input_map)

    def h_and_g(params, z):
        x = embed(z)
        return apply_fn(params, x)[:, 0], feats(x, params)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        d = bounds.shape[-1]
        dtype = bounds.dtype
        _, params0 = init_fn(key, (-1, d + 1 if input_map == "sphere" else d))
        p = ravel_pytree(params0)[0].shape[0]
        u0 = (FeaturesU(D.empty(capacity, p, dtype)) if u == "full"
              else DiagU(jnp.full((p,), lam, dtype)))
        return NeuralUCBState(D.empty(capacity, d, dtype), bounds, params0, params0, u0)

    def update(state, x, y):
        d = state.bounds.shape[-1]
        dtype = state.bounds.dtype
        x = jnp.asarray(x, dtype).reshape(-1, d)
        y = jnp.asarray(y, dtype).reshape(-1)
        data = D.append(state.data, x, y)
        fits = data.count > state.data.count  # a full buffer is left unchanged (ntkbo.data)
        # g(x_t; theta_{t-1}): the network before retraining (Algorithm 1, line 8).
        # A failed evaluation (non-finite y) adds nothing to U: its row of g_obs is failed too.
        ok = jnp.isfinite(y)
        g = jnp.where(fits & ok[:, None], h_and_g(state.params, to_unit(x, state.bounds))[1], 0.0)
        if isinstance(state.u, FeaturesU):
            u_new = FeaturesU(D.append(state.u.g_obs, g,
                                       jnp.where(ok, 0.0, jnp.nan).astype(dtype)))
        else:
            u_new = DiagU(state.u.diag + jnp.sum(g * g, axis=0))
        mask, z, ys, _ = unit_view(data, state.bounds, y_transform)
        xs = embed(z)
        lr = (gd_learning_rate(feats(xs, state.params0), mask, lam)
              if learning_rate is None else learning_rate)
        params, l0, l1, ok = train(apply_fn, state.params0, state.params0, xs, ys, mask, lam, lr,
                                   num_steps, optimizer="gd")
        return (state._replace(data=data, params=params, u=u_new),
                TrainInfo(jnp.stack([l0, l1]), ok))

    def suggest(key, state):
        dtype = state.bounds.dtype
        mask, z, ys, unit = unit_view(state.data, state.bounds, y_transform)
        starts = best_points(z, ys, mask, NUM_BEST)
        opt: dict[str, Any]  # options of several types, passed as **opt
        opt = dict(num_candidates=num_candidates, num_restarts=num_restarts, x_best=starts,
                   num_steps=num_acq_steps, method=acq_method,
                   observed=optimize.guarded(avoid_observed, z, mask))
        d = state.bounds.shape[-1]
        nu_t = jnp.asarray(nu_by_dimension(style, d) if isinstance(nu, str) else nu, dtype)

        g_x, g_mask, u_diag = _u_parts(state.u, dtype)
        if style == "ts":
            chol = dual_factor(g_x, g_mask, lam, jitter) if u == "full" else None

            def moments(zc):
                h, g = h_and_g(state.params, zc)
                quad = _quad(g, u, lam, g_x, g_mask, chol, u_diag)
                return h, nu_t * jnp.sqrt(jnp.maximum(lam * quad, 0.0))

            def draw(k, zc):  # -f~, f~ ~ N(h, nu^2 sigma^2) independently per row
                h, s = moments(zc)
                return -(h + s * jax.random.normal(k, h.shape, dtype))

            zq, values, opt_info = optimize.maximize_acquisition_batch(key, draw, unit, q, **opt)
            h, s = moments(zq)
            info = NeuralTSSuggestInfo(
                acq_value=values, mean=h, std=s, nu=nu_t,
                duplicates_replaced=jnp.sum(opt_info.replaced).astype(jnp.int32))
        else:
            cap = g_x.shape[0]
            g_ext = jnp.concatenate([g_x, jnp.zeros((q,) + g_x.shape[1:], dtype)])
            m_ext = jnp.concatenate([g_mask, jnp.zeros((q,), bool)])

            def choose(carry, k):
                g_ext, m_ext, u_diag, j = carry
                chol = dual_factor(g_ext, m_ext, lam, jitter) if u == "full" else None

                def parts(zc):
                    h, g = h_and_g(state.params, zc)
                    quad = _quad(g, u, lam, g_ext, m_ext, chol, u_diag)
                    return h, nu_t * jnp.sqrt(jnp.maximum(quad, 0.0)), g

                def lcb(zc):  # -(h - bonus), maximised
                    h, bonus, _ = parts(zc)
                    return bonus - h

                zq, value, opt_info = optimize.maximize_acquisition(k, lcb, unit, **opt)
                h, bonus, g = parts(zq[None])
                # Believer step (neural_ucb's docstring): x_j's feature joins U.
                if u == "full":
                    g_ext = g_ext.at[cap + j].set(g[0])
                    m_ext = m_ext.at[cap + j].set(True)
                else:
                    u_diag = u_diag + g[0] ** 2
                return (g_ext, m_ext, u_diag, j + 1), (zq, value, h[0], bonus[0],
                                                      opt_info.replaced)

            _, (zq, values, h, bonus, replaced) = jax.lax.scan(
                choose, (g_ext, m_ext, u_diag, 0), jax.random.split(key, q))
            info = NeuralUCBSuggestInfo(
                acq_value=values, mean=h, bonus=bonus, nu=nu_t,
                duplicates_replaced=jnp.sum(replaced).astype(jnp.int32))
        return from_unit(zq, state.bounds), info

    def posterior_mean(state, x):  # h(x; theta_t) in y's units (Algorithm.posterior_mean)
        z = to_unit(jnp.asarray(x, state.bounds.dtype), state.bounds)
        return output_units(apply_fn(state.params, embed(z))[:, 0], state.data, y_transform)

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


def _neural_ucb(
    *,
    width: int = 20,
    depth: int = 1,
    lam: float = 0.01,
    nu: float | str = "by_dimension",
    activation="relu",
    W_std=math.sqrt(2.0),
    b_std=None,
    u: str = "full",
    num_steps: int = 100,
    learning_rate: float | None = None,
    q: int = 1,
    input_map: str = "sphere",
    num_candidates: int = 1024,
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    jitter: float | None = None,
    y_transform: str = "standardize",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``neural_ucb`` with its flat options (``LAYOUT`` places them in the parts)."""
    return _make("ucb", width=width, depth=depth, lam=lam, nu=nu, activation=activation,
                 W_std=W_std, b_std=b_std, u=u, num_steps=num_steps,
                 learning_rate=learning_rate, q=q, input_map=input_map,
                 num_candidates=num_candidates, num_restarts=num_restarts,
                 num_acq_steps=num_acq_steps, acq_method=acq_method, jitter=jitter,
                 y_transform=y_transform, avoid_observed=avoid_observed)


def _neural_ts(
    *,
    width: int = 20,
    depth: int = 1,
    lam: float = 0.01,
    nu: float | str = "by_dimension",
    activation="relu",
    W_std=math.sqrt(2.0),
    b_std=None,
    u: str = "full",
    num_steps: int = 100,
    learning_rate: float | None = None,
    q: int = 1,
    input_map: str = "sphere",
    num_candidates: int = 2048,
    num_restarts: int = 1,
    jitter: float | None = None,
    y_transform: str = "standardize",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``neural_ts`` with its flat options (``TS_LAYOUT`` places them in the parts)."""
    return _make("ts", width=width, depth=depth, lam=lam, nu=nu, activation=activation,
                 W_std=W_std, b_std=b_std, u=u, num_steps=num_steps,
                 learning_rate=learning_rate, q=q, input_map=input_map,
                 num_candidates=num_candidates, num_restarts=num_restarts, num_acq_steps=0,
                 acq_method="none", jitter=jitter, y_transform=y_transform,
                 avoid_observed=avoid_observed)


@composed(_neural_ucb, LAYOUT)
def neural_ucb(
    *,
    network: PartOption = None,
    lam: float = 0.01,
    nu: float | str = "by_dimension",
    u: str = "full",
    training: PartOption = None,
    q: int = 1,
    input_map: str = "sphere",
    search: PartOption = None,
    jitter: float | None = None,
    y_transform: str = "standardize",
) -> Algorithm:
    """NeuralUCB (Zhou et al. 2020, Algorithm 1; formulas, conventions and defaults in the module
    docstring).

    Sign convention. The papers maximise a reward. ntkbo minimises ``f``: the network models the
    standardised observations of ``f`` and the query minimises ``h - bonus`` (a lower confidence
    bound) or the Thompson draw, i.e. the papers' algorithms run on the reward ``-f``.
    ``info.acq_value`` is the maximised ``-(h - bonus)`` or ``-f~`` in standardised units.

    Maximisation over the box (the papers have finite arm sets; the STO-BNTS paper ran both with its
    own continuous maximiser, App. F). The UCB is a smooth row-wise function of ``x``: it is
    minimised by ``ntkbo.optimize.maximize_acquisition`` (Sobol candidates, the best observed points
    and their perturbations, then projected gradient refinement, ``search.method="pgd"``). The
    Thompson draw is independent per point, hence not differentiable: candidate search only (no
    ``search.method``, as NeuralBO).

    Batches (``q > 1``; neither paper defines one). NeuralTS: ``q`` independent Thompson draws
    (parallel Thompson sampling, Kandasamy et al. 2018), each on its own candidates. NeuralUCB: the
    pending-point rule of GP-BUCB (Desautels et al. 2014), i.e. a kriging believer: after each of
    the ``q`` choices its feature ``g(x_j; theta_{t-1})`` is added to ``U`` (the update Algorithm 1
    would make once ``x_j`` is observed) while ``h`` is kept (the believed value is ``h(x_j)``,
    which would not move the fitted mean of the linearised model); the next point is chosen with the
    shrunk bonus. The bonus at a chosen point drops from ``b`` to ``b / sqrt(1 + b^2 / nu^2)``, so
    the same point is not chosen twice unless its bonus was zero.

    Inputs and outputs. Both papers assume unit-norm inputs (``|x| = 1``): the box is mapped onto
    the unit sphere (``input_map="sphere"``, ``ntkbo.algorithms.observations.embed_inputs``: the centre
    of the box at the pole) or used as the unit cube (``"cube"``). Outputs are standardised (mean 0,
    std 1) before training (the papers' rewards are in ``[0, 1]``), after an optional warp
    (``y_transform``, none by default; ``ntkbo.algorithms.observations.transform_outputs``). On
    Branin the log warp was needed (docs/decisions.md, 2026-11-22).

    Args:
      network: the network (``ntkbo.parts.Network``; ``ntkbo.kernels.mlp``, NTK
        parameterisation): ``width`` ``m`` (default 20; the Greedy paper's 20, STO-BNTS's 256),
        ``depth`` hidden layers (1, Zhou et al.'s two-layer network; both papers' baselines 2),
        ``activation`` (``"relu"``), ``W_std`` (He's ``sqrt(2)``; the Greedy paper's 1), ``b_std``
        (``None``: no biases; the Greedy paper's 1).
      training: TrainNN (``ntkbo.parts.Training``): ``num_steps`` ``J`` GD steps from
        ``theta_0`` (100) and ``learning_rate`` (``None``: ``neural_bo.gd_learning_rate``).
      search: the acquisition's maximisation (``ntkbo.parts.Search``,
        ``ntkbo.optimize.maximize_acquisition``): ``num_candidates`` (1024; the Greedy paper's
        10, STO-BNTS's 10,000), ``num_restarts`` (4; the Greedy paper's 10, STO-BNTS's 100),
        ``num_steps`` of ascent per start (30; the Greedy paper's 500) and ``method``
        (``"pgd"``; STO-BNTS's ``"lbfgs"``).
      lam: ``lambda``: ``U_0 = lam I`` and TrainNN's penalty toward ``theta_0``.
      nu: the exploration scale (Zhou et al.'s ``gamma_t``), a number ``>= 0`` or
        ``"by_dimension"`` (default: 0.3 when ``d <= 6``, else 0.1; NeuralTS: 1.0, else 0.1;
        :func:`nu_by_dimension`).
      u: ``"full"`` (exact ``U``, dual form) or ``"diag"`` (diagonal approximation).
      q: points per suggest (the batch rule above).
      input_map: ``"sphere"`` (unit-norm inputs, the papers' assumption) or ``"cube"``.
      jitter: relative Cholesky jitter of the dual form.
      y_transform: the output warp before standardisation
        (``ntkbo.algorithms.observations.transform_outputs``): ``"standardize"`` (none, the
        papers), ``"log"`` or ``"rank"``.

    Returns:
      An ``ntkbo.Algorithm``; ``suggest`` returns ``(x (q, d), info)``, ``info`` a
      :class:`NeuralUCBSuggestInfo` (``acq_value``, ``mean`` (``h``), ``bonus`` (``nu sqrt(g^T
      U^-1 g)`` with the pending points of the batch before it in ``U``) ``(q,)``, ``nu``,
      ``duplicates_replaced``); ``update`` returns ``(state,
      ntkbo.nets.TrainInfo)`` (``train_loss`` ``(2,)``, ``train_ok``).

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _neural_ucb(**LAYOUT.flatten(locals(), "neural_ucb"))


@composed(_neural_ts, TS_LAYOUT)
def neural_ts(
    *,
    network: PartOption = None,
    lam: float = 0.01,
    nu: float | str = "by_dimension",
    u: str = "full",
    training: PartOption = None,
    q: int = 1,
    input_map: str = "sphere",
    search: PartOption = None,
    jitter: float | None = None,
    y_transform: str = "standardize",
) -> Algorithm:
    """NeuralTS (Zhang et al. 2021, Algorithm 1): the Thompson draw ``N(h, nu^2 lam g^T U^-1 g)``
    independently per candidate, minimised by candidate search; ``q`` independent draws per batch.
    ``info`` is a :class:`NeuralTSSuggestInfo` (``acq_value``, ``mean``, ``std`` (``nu sigma``)
    ``(q,)``, ``nu``, ``duplicates_replaced``); ``update``'s is ``ntkbo.nets.TrainInfo``.

    Args:
      network: as :func:`neural_ucb`'s (``width`` 20, STO-BNTS's 256; ``depth`` 1, STO-BNTS's 2;
        ``activation`` ``"relu"``; ``W_std`` ``sqrt(2)``; ``b_std`` ``None``).
      training: as :func:`neural_ucb`'s (``num_steps`` 100, ``learning_rate`` ``None``).
      search: the candidate search (``ntkbo.parts.Search``; no gradient refinement, so no
        ``num_steps`` or ``method``): ``num_candidates`` (2048; STO-BNTS's 10,000) and
        ``num_restarts`` (1; it only picks the best candidate).
      lam, nu, u, q, input_map, jitter, y_transform: as :func:`neural_ucb`'s (``nu`` STO-BNTS's
        1.0, ``lam`` 0.001, ``u`` ``"diag"``).
    """
    return _neural_ts(**TS_LAYOUT.flatten(locals(), "neural_ts"))
