"""The networks layer: the flax.linen MLP that ``ntkbo.kernels`` gives the infinite-width limit of,
and its training, which the neural algorithms share.

``MLP`` and ``Dense`` are defined in ``ntkbo.kernels.network``, next to the kernels they match
(``ntkbo.kernels.mlp``'s ``init_fn`` and ``apply_fn`` are this network), so that the kernels
package never imports a module above it; this module is their public name.

``train`` is NeuralBO's TrainNN (Algorithm 2): full-batch gradient descent or Adam on the
regularised squared loss, used by NeuralBO, Neural-CBO, NeuralUCB/TS, Neural-Linear, PINN-BO and
the Neural Greedy family. ``paper_W_std`` gives NeuralBO's experimental network in ntkbo's NTK
parameterisation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import optax

from ntkbo.kernels.network import MLP, Dense, _default_float  # noqa: F401  (re-exported)

__all__ = ["Dense", "MLP", "TrainInfo", "gd_learning_rate", "make_optimizer", "paper_W_std",
           "train"]


class TrainInfo(NamedTuple):
    """The ``info`` of an ``update`` that retrains networks with ``train`` (NeuralUCB/TS,
    Neural-Linear, PINN-BO, Neural-CBO; leading axis ``(K + 1,)`` over Neural-CBO's networks).

    Attributes:
      train_loss: ``(..., 2)`` the training loss at the start and of the returned parameters.
      train_ok: ``(...)`` bool, the final iterate was finite and no worse than the start.
    """

    train_loss: jax.Array
    train_ok: jax.Array

Array = jax.Array
Params = Any


def _sqnorm_diff(a: Params, b: Params) -> Array:
    # a sum of arrays (``sum``'s start 0 is typed apart)
    return cast(Array, sum(jnp.sum((x - y) ** 2) for x, y in
                           zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b))))


def _loss_fn(apply_fn, center, z, y, mask, lam, reduction):
    n = jnp.maximum(jnp.sum(mask), 1).astype(y.dtype)
    scale = 1.0 if reduction == "sum" else 1.0 / n

    def loss(params):
        r = jnp.where(mask, apply_fn(params, z)[:, 0] - y, 0.0)
        return 0.5 * scale * jnp.sum(r * r) + 0.5 * lam * _sqnorm_diff(params, center)

    return loss


def gd_learning_rate(g_data: Array, mask: Array, lam, reduction: str = "sum") -> Array:
    """``1 / (lam + s tr K)``, ``tr K = sum_valid |g(x_i)|^2``, ``s = 1`` (sum) or ``1 / n`` (mean):
    below ``1 / lambda_max`` of the linearised loss's Hessian ``s G^T G + lam I``."""
    tr = jnp.sum(jnp.where(mask, jnp.sum(g_data * g_data, axis=-1), 0.0))
    if reduction == "mean":
        tr = tr / jnp.maximum(jnp.sum(mask), 1)
    return 1.0 / (lam + tr)


def make_optimizer(optimizer: str, learning_rate) -> optax.GradientTransformation:
    """TrainNN's optax optimiser: ``"gd"`` (``optax.sgd``, no momentum: its state is empty) or
    ``"adam"`` (``optax.adam``) with step ``learning_rate`` (a number or a traced scalar; the
    state's structure does not depend on it)."""
    return optax.sgd(learning_rate) if optimizer == "gd" else optax.adam(learning_rate)


def train(apply_fn, params_start: Params, center: Params, z: Array, y: Array, mask: Array, lam,
          learning_rate, num_steps: int, *, optimizer: str = "gd", reduction: str = "sum",
          opt_state=None, return_opt_state: bool = False) -> tuple[Any, ...]:
    """TrainNN (Algorithm 2): ``num_steps`` full-batch steps on
    ``1/2 s sum_valid (h(z_i) - y_i)^2 + 1/2 lam |theta - center|^2`` from ``params_start``
    (``s = 1`` for ``reduction="sum"``, ``1/n`` for ``"mean"``), by gradient descent with step
    ``learning_rate`` or by Adam, whose moments start from ``opt_state`` when given (a state of
    ``make_optimizer(optimizer, .)``; the last training's, to continue it) and from zero otherwise.

    Returns:
      ``(params, loss_start, loss, ok)``: the iterate with the lowest loss (the last one whenever
      the loss decreases monotonically, as GD at the default rate does; never worse than the start),
      the loss at the start and at ``params``, and ``ok``: the last iterate is finite and no worse
      than the start (False flags a divergent learning rate). With ``return_opt_state``, the
      optimiser's state after the last step is appended.
    """
    loss = _loss_fn(apply_fn, center, z, y, mask, lam, reduction)
    value_and_grad = jax.value_and_grad(loss)

    def select(c, a, b):
        return jax.tree_util.tree_map(lambda u, v: jnp.where(c, u, v), a, b)

    opt = make_optimizer(optimizer, learning_rate)

    def step(carry, _):
        p, s, best_p, best_l = carry
        val, grads = value_and_grad(p)
        better = val < best_l  # False for NaN
        best_p, best_l = select(better, p, best_p), jnp.where(better, val, best_l)
        u, s = opt.update(grads, s, p)
        return (optax.apply_updates(p, u), s, best_p, best_l), None

    l_start = loss(params_start)
    s0 = opt.init(params_start) if opt_state is None else opt_state
    init = (params_start, s0, params_start, l_start)
    (p, s, best_p, best_l), _ = jax.lax.scan(step, init, None, length=num_steps)
    l_end = loss(p)
    ok = jnp.isfinite(l_end) & (l_end <= l_start)
    last = l_end <= best_l
    out = (select(last, p, best_p), l_start, jnp.where(last, l_end, best_l), ok)
    return out + (s,) if return_opt_state else out


def paper_W_std(d: int, depth: int) -> tuple[float, ...]:
    """``(sqrt(d), 1, ..., 1)``: the NTK-parameterised scales of the paper's experimental network
    (all weights ``N(0, 1/m)``, output times ``sqrt(m)``); ``depth + 1`` values, readout last.

    The paper's factors of ``m`` disappear. The paper's network is
    ``h(x) = sqrt(m) W_L phi(... phi(W_1 x))`` with every entry of ``W_l`` drawn from ``N(0, 1/m)``
    in the experiments (section 7), no biases. ntkbo's flax MLP (``ntkbo.kernels.mlp``) is in NTK
    parameterisation, ``z = (W_std / sqrt(fan_in)) x @ W^``, ``W^ ~ N(0, 1)``. Write
    ``W^ = sqrt(m) W`` for every layer. Because ReLU is positively homogeneous, the two networks are
    the *same function* of ``W^`` when ``W_std = (sqrt(d), 1, ..., 1)`` (the product of the scale
    factors ``sqrt(d) / (sqrt(d) m^{(L-1)/2})`` equals the paper's ``sqrt(m) m^{-L/2}``; in
    neural-tangents, ``stax.serial(Dense(m, W_std=sqrt(d)), Relu(), Dense(1, W_std=1))``). This is
    ``W_std="paper"``, the default. Let ``g = d h / d W^`` be the gradient w.r.t. ntkbo's parameters
    and ``g_W = d h / d W`` the paper's. By the chain rule::

        g = (d h / d W) (d W / d W^) = g_W / sqrt(m),

    so every ``m`` of the paper is absorbed:

    * the paper's features ``g_W / sqrt(m)`` are the plain gradient ``g``;
    * ``U_t = lam I + sum g_W g_W^T / m = lam I + sum g g^T`` and
      ``sigma^2 = lam g_W^T U^-1 g_W / m = lam g^T U^-1 g``;
    * the penalty ``1/2 m lam ||W - W_0||^2 = 1/2 lam ||W^ - W^_0||^2``;
    * the empirical NTK ``k(x, x') = g(x) . g(x')`` (the paper's ``<g_W, g_W'>/m``) converges as
      ``m -> inf`` to ntkbo's analytic NTK
      ``ntkbo.kernels.mlp(depth, m, W_std=(sqrt(d), 1, ...))[2]``; for one hidden layer, with ``t``
      the angle between ``x`` and ``x'``,
      ``K(x, x') = (x . x') (pi - t) / (2 pi) + |x| |x'| (sin t + (pi - t) cos t) / (2 pi)``, and
      ``K(x, x) = |x|^2``;
    * a GD step ``eta`` on ``W`` is a step ``eta m`` on ``W^``: the theory's
      ``eta = (m lam + m L T)^-1`` is ``(lam + L T)^-1`` here.
    """
    return (math.sqrt(d),) + (1.0,) * depth
