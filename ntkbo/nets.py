"""The networks layer: the flax.linen MLP that ``ntkbo.kernels`` gives the infinite-width limit of,
and its training, which the neural algorithms share.

``MLP`` and ``Dense`` are defined in ``ntkbo.kernels.network``, next to the kernels they match
(``ntkbo.kernels.mlp``'s ``init_fn`` and ``apply_fn`` are this network), so that the kernels
package never imports a module above it; this module is their public name.

``train`` is NeuralBO's TrainNN (Algorithm 2): full-batch gradient descent, Adam or any
``optax.GradientTransformation`` on the regularised squared loss, used by NeuralBO, Neural-CBO,
NeuralUCB/TS, Neural-Linear, PINN-BO and the Neural Greedy family. ``paper_W_std`` gives
NeuralBO's experimental network in ntkbo's NTK parameterisation.

The sample-then-optimise members (Dai et al. 2022) are drawn and trained here too, shared by
STO-BNTS, STO-BNTS-Linear and the Neural Greedy family's posterior draws: :func:`draw_params`,
:func:`prior_variances`, :func:`zero_last_layer`, the member functions (:func:`member_fn`,
:func:`linearized_member_fn`, :func:`linear_member_fn`), the loss :func:`sto_loss`, its
closed-form minimiser :func:`linear_solve` and the trainer :func:`train_member`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Union, cast

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from ntkbo import linalg
from ntkbo.kernels.empirical import grad_features
from ntkbo.kernels.network import MLP, Dense, _default_float  # noqa: F401  (re-exported)
from ntkbo.parts import is_transformation

__all__ = ["Dense", "LM_DAMPING", "MEMBER_OPTIMIZERS", "MLP", "TrainInfo", "check_optimizer",
           "draw_params", "gd_learning_rate", "is_transformation", "jvp_term", "linear_member_fn",
           "linear_solve", "linearized_member_fn", "make_optimizer", "member_fn", "paper_W_std",
           "prior_variances", "sto_loss", "target_noise", "train", "train_member", "trained_member_fn",
           "zero_last_layer"]


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
#: A named optimiser or an optax one.
Optimizer = Union[str, optax.GradientTransformation]


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


def check_optimizer(name: str, optimizer, choices, transformations: bool = True) -> None:
    """``optimizer`` must be one of the names ``choices`` or, with ``transformations``, an
    ``optax.GradientTransformation``; ``ValueError`` naming ``name`` otherwise."""
    if transformations and is_transformation(optimizer):
        return
    if not isinstance(optimizer, str) or optimizer not in choices:
        extra = " or an optax.GradientTransformation" if transformations else ""
        raise ValueError(f"{name} must be one of {tuple(choices)}{extra}, got {optimizer!r}")


def make_optimizer(optimizer: Optimizer, learning_rate) -> optax.GradientTransformation:
    """TrainNN's optax optimiser: ``"gd"`` or ``"sgd"`` (``optax.sgd``, no momentum: its state is
    empty) or ``"adam"`` (``optax.adam``) with step ``learning_rate`` (a number or a traced
    scalar; the state's structure does not depend on it), or ``optimizer`` itself when it is an
    ``optax.GradientTransformation`` (``learning_rate`` is then not used)."""
    if is_transformation(optimizer):
        return optimizer
    return optax.adam(learning_rate) if optimizer == "adam" else optax.sgd(learning_rate)


def train(apply_fn, params_start: Params, center: Params, z: Array, y: Array, mask: Array, lam,
          learning_rate, num_steps: int, *, optimizer: Optimizer = "gd", reduction: str = "sum",
          opt_state=None, return_opt_state: bool = False) -> tuple[Any, ...]:
    """TrainNN (Algorithm 2): ``num_steps`` full-batch steps on
    ``1/2 s sum_valid (h(z_i) - y_i)^2 + 1/2 lam |theta - center|^2`` from ``params_start``
    (``s = 1`` for ``reduction="sum"``, ``1/n`` for ``"mean"``), by gradient descent with step
    ``learning_rate``, by Adam, or by an ``optax.GradientTransformation`` given as ``optimizer``
    (:func:`make_optimizer`); the optimiser's state starts from ``opt_state`` when given (a state
    of ``make_optimizer(optimizer, .)``; the last training's, to continue it) and from its
    ``init`` otherwise.

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


# ---------------------------------------------------------------------------------------------
# Sample-then-optimise members (Dai, Shu, Low and Jaillet, "Sample-Then-Optimize Batch Neural
# Thompson Sampling", NeurIPS 2022): a network drawn from its initialiser and trained on the
# regularised loss (1) of the paper,
#
#     L(th) = sum_j (y~_j - f~(z_j; th))^2 + beta^2 sigma^2 (th - theta_0)^T P (th - theta_0)   (1)
#
# with ``P`` the parameters' prior precision (:func:`prior_variances`). Used by STO-BNTS and
# STO-BNTS-Linear (``ntkbo.algorithms.sto_bnts``, whose docstring has the algorithm) and by the
# Neural Greedy family's posterior draws (``ntkbo.algorithms.neural_greedy``).

ApplyFn = Callable[[Params, Array], Array]

#: How :func:`train_member` trains a member.
MEMBER_OPTIMIZERS = ("linearized", "levenberg_marquardt", "gd")
#: Levenberg-Marquardt damping values tried at every step, relative to the mean diagonal of the
#: Gram matrix (0 is the Gauss-Newton step); the one with the lowest loss wins.
LM_DAMPING = (0.0, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


def _layer_and_leaf(path) -> tuple[str, str]:
    names = [str(getattr(p, "key", getattr(p, "name", p))) for p in path]
    return names[-2], names[-1]


def zero_last_layer(params: Params, depth: int) -> Params:
    """``params`` with every leaf of the readout layer ``Dense_{depth}`` set to 0 (by structure, not
    by leaf position)."""
    readout = f"Dense_{depth}"
    return jax.tree_util.tree_map_with_path(
        lambda path, v: jnp.zeros_like(v) if _layer_and_leaf(path)[0] == readout else v, params)


def prior_variances(params: Params, spec) -> Params:
    """The prior variance of every parameter of ``ntkbo.nets.MLP`` (a pytree like ``params``).

    ``"ntk"`` parameterisation: 1 (every parameter ``~ N(0, 1)``; ``P`` is the identity, as in
    the paper). ``"standard"``: ``W_std_l^2 / fan_in_l`` for the kernel of layer ``l``,
    ``b_std_l^2`` for its bias. The regulariser of (1) is weighted by the inverse,
    ``P = diag(fan_in / W_std^2, 1 / b_std^2)`` (the authors' code, He et al. 2020's weighting);
    the NTK of the standard network with this regulariser is that of the NTK parameterisation with
    the same ``W_std, b_std`` (``theta = sqrt(prior_var) u`` maps one network onto the other).
    """

    def var(path, v):
        layer, leaf = _layer_and_leaf(path)
        if spec.parameterization == "ntk":
            value = 1.0
        elif leaf == "kernel":
            value = spec.W_std[int(layer.split("_")[-1])] ** 2 / v.shape[0]
        else:
            value = spec.b_std[int(layer.split("_")[-1])] ** 2
        return jnp.full(v.shape, value, v.dtype)

    return jax.tree_util.tree_map_with_path(var, params)


def _scalar(apply_fn: ApplyFn, params: Params, z: Array) -> Array:
    return apply_fn(params, z).reshape(z.shape[0])


def jvp_term(apply_fn: ApplyFn, theta0: Params, theta0p: Params, z: Array) -> Array:
    """``<grad f(z; theta_0), theta_0'>`` ``(n,)``: the untrainable term of Algorithm 1, line 6."""
    return jax.jvp(lambda p: _scalar(apply_fn, p, z), (theta0,), (theta0p,))[1]


def member_fn(apply_fn: ApplyFn, theta: Params, theta0: Params, theta0p: Params, z: Array,
              beta: float | Array = 1.0) -> Array:
    """STO-BNTS's ``f~(z; theta) = beta [f(z; theta) + <grad f(z; theta_0), theta_0'>]`` ``(n,)``
    (``theta_0'`` with its readout already zeroed, :func:`zero_last_layer`).

    Why the trained member is a posterior sample in the limit (Appendix A): as
    ``width -> inf``, ``f(.; theta_0) ~ GP(0, K)`` (the NNGP) and the JVP term, with the readout
    of ``theta_0'`` zeroed, ``~ GP(0, Theta - K)``, so the prior draw ``f~(.; theta_0)`` is
    ``GP(0, beta^2 Theta)`` with the analytic NTK ``Theta`` (``ntkbo.kernels.mlp(...)[2]``), and
    training is linear (the lazy regime): the minimiser of (1) is the ``f*`` of the module
    docstring with ``k = beta^2 Theta``. At finite width it is not (:func:`train_member`)."""
    return beta * (_scalar(apply_fn, theta, z) + jvp_term(apply_fn, theta0, theta0p, z))


def linearized_member_fn(apply_fn: ApplyFn, theta: Params, theta0: Params, theta0p: Params,
                         z: Array, beta: float | Array = 1.0) -> Array:
    """STO-BNTS's ``f~`` linearised at ``theta_0`` ``(n,)`` (``optimizer="linearized"``)::

        f~_lin(z; theta) = f~(z; theta_0) + <grad f~(z; theta_0), theta - theta_0>
                         = beta [f(z; theta_0) + <grad f(z; theta_0), theta_0' + theta - theta_0>]

    one JVP at ``theta_0`` (the tangent ``theta_0' + theta - theta_0``), the cost of
    :func:`member_fn`. Equal to :func:`member_fn` at ``theta = theta_0`` and, as the width grows,
    everywhere along training (the lazy regime, :func:`member_fn`).

    ``f`` is linear in its readout, so ``f(z; theta_0)`` is the readout block of
    ``<grad f(z; theta_0), theta_0>``: this is STO-BNTS-Linear's member (:func:`linear_member_fn`)
    with features ``grad f(.; theta_0)`` and an anchor whose hidden layers are ``theta_0'``'s and
    whose readout is ``theta_0``'s (the readout anchor tied), not Algorithm 1's network. Trained
    in closed form (:func:`train_member`), its function is the module docstring's ``f*`` with
    ``k`` the empirical NTK at ``theta_0``: exact for that kernel, at any width."""
    tangent = jax.tree_util.tree_map(lambda a, t, t0: a + t - t0, theta0p, theta, theta0)
    f0, df = jax.jvp(lambda p: _scalar(apply_fn, p, z), (theta0,), (tangent,))
    return beta * (f0 + df)


def trained_member_fn(optimizer: Optimizer) -> Callable:
    """The function of a member trained by ``optimizer`` (:func:`train_member`), with
    :func:`member_fn`'s signature: :func:`linearized_member_fn` for ``"linearized"`` (its parameters
    are the linearised network's), :func:`member_fn` (the network) otherwise."""
    return linearized_member_fn if optimizer == "linearized" else member_fn


def linear_member_fn(apply_fn: ApplyFn, theta: Params, theta0p: Params, z: Array,
                     beta: float | Array = 1.0) -> Array:
    """STO-BNTS-Linear's ``f~(z; theta) = beta <grad f(z; theta_0'), theta>`` ``(n,)``: a JVP, not
    ``nt.linearize`` (no ``f(z; theta_0')`` offset). Its kernel is ``beta^2 Theta~``, the
    empirical NTK ``grad f(.; theta_0') P^-1 grad f(.; theta_0')^T`` at ``theta_0'``, for which
    the trained member is the module docstring's ``f*`` exactly, at any width."""
    return beta * jvp_term(apply_fn, theta0p, theta, z)


def _sqnorm_weighted(a: Params, b: Params, prec: Params) -> Array:
    leaves = zip(*(jax.tree_util.tree_leaves(t) for t in (a, b, prec)))
    # a sum of arrays (``sum``'s start 0 is typed apart)
    return cast(Array, sum(jnp.sum(w * (x - y) ** 2) for x, y, w in leaves))


def _precision(var: Params) -> Params:
    return jax.tree_util.tree_map(lambda v: jnp.where(v > 0, 1.0 / jnp.where(v > 0, v, 1.0), 0.0),
                                  var)


def sto_loss(pred: Callable[[Params], Array], theta: Params, theta0: Params, y: Array, mask: Array,
             lam, prior_var: Params, reduction: str = "sum") -> Array:
    """Loss (1): ``sum_j (y_j - f~_j)^2 + lam (theta - theta_0)^T P (theta - theta_0)``.

    ``pred(theta) -> (capacity,)`` is the member's ``f~`` on the training inputs, ``mask`` the valid
    rows, ``lam = beta^2 sigma^2``, ``P = 1 / prior_var``. ``reduction="mean"`` is the authors'
    code's ``1/2 mean_j (y_j - f~_j)^2 + 1/2 (lam / N) |theta - theta_0|_P^2`` (same minimiser).
    """
    r = jnp.where(mask, y - pred(theta), 0.0)
    reg = _sqnorm_weighted(theta, theta0, _precision(prior_var))
    loss = jnp.sum(r * r) + lam * reg
    if reduction == "mean":
        return 0.5 * loss / jnp.maximum(jnp.sum(mask), 1).astype(loss.dtype)
    return loss


def _gram(jac: Array, pvar: Array, mask: Array, jitter=None):
    """``(J P^-1, K, jit)``: the weighted features, the masked Gram matrix ``K = J P^-1 J^T`` (zero
    outside the valid block) and the smallest diagonal added to it (relative ``jitter`` times the
    mean valid diagonal; ``None``: ``ntkbo.gp.default_jitter``). The diagonal added is
    ``max(lam, jit)``: the jitter changes nothing unless ``lam`` is below it."""
    jw = jac * pvar
    gram = jnp.where(mask[:, None] & mask[None, :], jw @ jac.T, 0.0)
    scale = jnp.sum(jnp.where(mask, jnp.diag(gram), 0.0)) / jnp.maximum(jnp.sum(mask), 1)
    rel = linalg.default_jitter(gram.dtype) if jitter is None else jitter
    return jw, gram, rel * scale


def _dual_solve(jw: Array, gram: Array, b: Array, mask: Array, diag) -> Array:
    """``P^-1 J^T (K + diag I)^-1 b`` ``(p,)`` on the valid rows; the padding block is the identity
    and ``b`` is zeroed there, so padding cannot change the result."""
    a_mat = gram + jnp.diag(jnp.where(mask, diag, 1.0))
    a = linalg.cho_solve(linalg.cholesky(a_mat), jnp.where(mask, b, 0.0))
    return jw.T @ a


def linear_solve(apply_fn: ApplyFn, theta0: Params, theta0p: Params, z: Array, y: Array,
                 mask: Array, lam, prior_var: Params, beta: float | Array = 1.0, jitter=None,
                 return_info: bool = False):
    """The trained STO-BNTS-Linear parameters in closed form (Appendix A)::

        theta* = theta_0 + P^-1 J^T (J P^-1 J^T + lam I)^-1 (y - J theta_0)
        J      = beta grad f(z; theta_0')

    the unique minimiser of (1) for ``f~(z; theta) = <J(z), theta>``; one ``N x N`` Cholesky
    solve.

    Args:
      apply_fn: the network ``(params, z (n, d)) -> (n, 1)``.
      theta0, theta0p: ``theta_0`` (start and anchor) and ``theta_0'`` (the features).
      z: ``(capacity, d)`` training inputs; y: ``(capacity,)`` (perturbed) targets; mask: the
        valid rows.
      lam: ``beta^2 sigma^2``; prior_var: :func:`prior_variances`; beta: output scale.
      jitter: relative Cholesky jitter: the diagonal is ``max(lam, jitter * mean diag K)``
        (``None``: ``ntkbo.linalg.default_jitter``; any ``lam > 1e-10 mean diag K`` stays exact in
        float64).
      return_info: also return ``(loss_start, loss, grad_norm)`` of (1) at ``theta_0`` and
        ``theta*`` (from ``J``: ``grad = -2 J^T r + 2 lam P (theta - theta_0)``).

    Returns:
      ``theta*`` (a pytree like ``theta0``), or ``(theta*, (loss_start, loss, grad_norm))``.
    """
    flat0, unravel = ravel_pytree(theta0)
    pvar = ravel_pytree(prior_var)[0]
    jac = jnp.where(mask[:, None], beta * grad_features(apply_fn)(z, theta0p), 0.0)
    jw, gram, jit = _gram(jac, pvar, mask, jitter)
    r0 = jnp.where(mask, y - jac @ flat0, 0.0)
    delta = _dual_solve(jw, gram, r0, mask, jnp.maximum(lam, jit))
    theta = unravel(flat0 + delta)
    if not return_info:
        return theta
    prec = jnp.where(pvar > 0, 1.0 / jnp.where(pvar > 0, pvar, 1.0), 0.0)
    r = r0 - jnp.where(mask, jac @ delta, 0.0)
    loss = jnp.sum(r * r) + lam * jnp.sum(prec * delta * delta)
    grad = -2.0 * jac.T @ r + 2.0 * lam * prec * delta
    return theta, (jnp.sum(r0 * r0), loss, jnp.sqrt(jnp.sum(grad * grad)))


def train_member(apply_fn: ApplyFn, theta0: Params, theta0p: Params, z: Array, y: Array,
                 mask: Array, lam, prior_var: Params, beta: float | Array = 1.0, *,
                 optimizer: Optimizer = "levenberg_marquardt", num_steps: int = 10,
                 learning_rate=None, reduction: str = "sum", jitter=None, tol=None):
    """Trains STO-BNTS's ``f~`` (:func:`member_fn`) from ``theta_0`` on loss (1).

    The paper trains the network "by gradient descent till convergence" (Algorithm 1, line 6);
    only the point it converges to matters. Plain GD needs about ``kappa log(1/tol)`` steps,
    ``kappa = (lambda_max + lam) / (lambda_min + lam)`` of the Gram matrix, so the default is
    Levenberg-Marquardt. At this width the trained network does not reach the sample of its
    linearisation at ``theta_0`` however long it is trained: the gap is its finite-width
    nonlinearity, what Algorithm 1 adds over Algorithm 2 (the paper credits it for STO-BNTS
    beating STO-BNTS-Linear, Section 5.2, Figs. 2a and 2c); the measurements are in
    docs/decisions.md (2026-11-24).

    * ``"levenberg_marquardt"``, in the dual (``N x N``) form. At ``theta_k`` with Jacobian ``J``
      (``N x p``) of ``f~``, residual ``r = y~ - f~(X; theta_k)`` and ``e = theta_k - theta_0``,
      the minimiser of (1) for the network linearised at ``theta_k``, plus a damping
      ``mu |theta - theta_k|_P^2``, is (``c = mu / (lam + mu)``)::

          theta_0 + c e + P^-1 J^T (J P^-1 J^T + (lam + mu) I)^-1 (r + (1 - c) J e)

      Each step tries ``mu = 0`` (the Gauss-Newton step) and ``mu`` = ``1e-3 .. 10`` times the
      mean diagonal of ``J P^-1 J^T`` (:data:`LM_DAMPING`) and keeps the trial with the lowest
      loss (1), if lower than the current one: monotone; the ``mu = 0`` trial of the first step
      has the ``"linearized"`` parameters (but the member is the network at them). ``num_steps``
      steps, each ``O(N p)`` memory and ``O(N^2 p + N^3)`` time, or, with ``tol`` (``None``:
      exactly ``num_steps`` steps), until a step lowers (1) by less than ``tol`` times its new
      value (a step that finds no lower loss included), at most ``num_steps``: the paper's "till
      convergence" is ``num_steps=300, tol=1e-4``. For ReLU networks of moderate width (1) is far
      from quadratic and no number of steps gives an exact stationary point. Loss (1) is not
      convex in the network's parameters, so the point reached is a local minimiser that need not
      be the one gradient descent from ``theta_0`` would converge to; on smooth networks it is
      the one L-BFGS from ``theta_0`` finds (tested).
    * ``"gd"``: the paper's full-batch gradient descent, ``num_steps`` steps of size
      ``learning_rate`` (``None``: ``1 / (c (lam max P + tr K))``, ``K = J J^T`` at ``theta_0``,
      ``c = 2`` for the sum loss (1) and ``1/N`` for ``reduction="mean"``: at most
      ``1 / lambda_max`` of the linearised loss's Hessian, a factor two inside the stability
      bound). ``reduction`` scales the GD loss only: ``"sum"`` is (1), ``"mean"`` the authors'
      code's ``1/2 mean_j (y_j - f~_j)^2 + 1/2 (lam / N) |th - theta_0|_P^2`` (the same
      minimiser); the authors' code runs ``learning_rate=1e-3, num_steps=10_000,
      reduction="mean"``.
    * an ``optax.GradientTransformation``: ``num_steps`` of its steps on ``reduction``'s loss,
      the lowest-loss iterate kept, as for ``"gd"`` (``learning_rate`` is not used: the
      transformation carries its step).
    * ``"linearized"``: *not* Algorithm 1's training; the closed-form minimiser of (1) for ``f~``
      linearised at ``theta_0``, ``f~(z; theta_0) + <grad f~(z; theta_0), theta - theta_0>`` (one
      ``N x N`` Cholesky solve on ``J = grad f~(X; theta_0)``, as :func:`linear_solve`);
      ``num_steps`` is ignored. Evaluate those parameters with :func:`linearized_member_fn` (with
      :func:`member_fn` they are one Gauss-Newton step of the network, not a posterior sample).

    Returns:
      ``(theta, loss_start, loss, grad_norm, ok)``: the trained parameters, loss (1) (sum form) at
      ``theta_0`` and at ``theta``, the norm of its gradient at ``theta``, and ``ok``: finite and no
      worse than the start (Levenberg-Marquardt is monotone; GD returns its lowest-loss iterate and
      ``ok`` is False when the last iterate diverged, i.e. ``learning_rate`` is too large). With
      ``"linearized"`` loss and gradient are those of the linearised model's (1) (the gradient
      vanishes up to rounding).
    """
    flat0, unravel = ravel_pytree(theta0)
    pvar = ravel_pytree(prior_var)[0]
    offset = jvp_term(apply_fn, theta0, theta0p, z)  # constant in theta: computed once
    pred = lambda th: beta * (_scalar(apply_fn, th, z) + offset)  # noqa: E731
    loss1 = lambda th: sto_loss(pred, th, theta0, y, mask, lam, prior_var, "sum")  # noqa: E731
    feats = grad_features(apply_fn)
    l_start = loss1(theta0)

    if optimizer == "linearized":
        # The minimiser of (1) for f~(z; theta_0) + J (theta - theta_0), J = grad f~(z; theta_0):
        # theta* = theta_0 + P^-1 J^T (J P^-1 J^T + lam I)^-1 (y - f~(z; theta_0)), one N x N
        # Cholesky solve; its function (linearized_member_fn) is the posterior sample of the
        # module docstring, f* = g + k(., X) A^-1 (y - g(X)), k the empirical NTK at theta_0.
        jac = jnp.where(mask[:, None], beta * feats(z, theta0), 0.0)
        jw, gram, jit = _gram(jac, pvar, mask, jitter)
        r0 = jnp.where(mask, y - pred(theta0), 0.0)
        delta = _dual_solve(jw, gram, r0, mask, jnp.maximum(lam, jit))
        prec = jnp.where(pvar > 0, 1.0 / jnp.where(pvar > 0, pvar, 1.0), 0.0)
        r = r0 - jnp.where(mask, jac @ delta, 0.0)
        l_end = jnp.sum(r * r) + lam * jnp.sum(prec * delta * delta)
        grad = -2.0 * jac.T @ r + 2.0 * lam * prec * delta
        ok = jnp.isfinite(l_end) & (l_end <= l_start)
        return unravel(flat0 + delta), l_start, l_end, jnp.sqrt(jnp.sum(grad * grad)), ok

    if optimizer == "levenberg_marquardt":
        grid = jnp.asarray(LM_DAMPING, flat0.dtype)

        def step(carry, _):
            flat, l_cur = carry
            theta = unravel(flat)
            jac = jnp.where(mask[:, None], beta * feats(z, theta), 0.0)
            e = flat - flat0
            jw, gram, jit = _gram(jac, pvar, mask, jitter)
            scale = jnp.sum(jnp.where(mask, jnp.diag(gram), 0.0)) / jnp.maximum(jnp.sum(mask), 1)
            r = y - pred(theta)
            je = jac @ e

            def trial(mu):
                # The Levenberg-Marquardt step with damping mu (docstring); mu = 0 is the
                # Gauss-Newton step, the minimiser of (1) for the network linearised at theta.
                c = mu / (lam + mu)
                return flat0 + c * e + _dual_solve(jw, gram, r + (1.0 - c) * je, mask,
                                                   jnp.maximum(lam + mu, jit))

            trials = jax.vmap(trial)(grid * scale)
            losses = jax.vmap(lambda f: loss1(unravel(f)))(trials)
            losses = jnp.where(jnp.isfinite(losses), losses, jnp.inf)
            i = jnp.argmin(losses)
            better = losses[i] < l_cur
            return (jnp.where(better, trials[i], flat), jnp.where(better, losses[i], l_cur)), None

        if tol is None:
            (flat, _), _ = jax.lax.scan(step, (flat0, l_start), None, length=num_steps)
        else:
            def keep_going(carry):
                k, _, l_cur, decrease = carry
                return (k < num_steps) & (decrease > tol * l_cur)

            def lm_step(carry):
                k, flat, l_cur, _ = carry
                (flat, l_new), _ = step((flat, l_cur), None)
                return k + 1, flat, l_new, l_cur - l_new

            init = (jnp.asarray(0), flat0, l_start, jnp.asarray(jnp.inf, l_start.dtype))
            _, flat, _, _ = jax.lax.while_loop(keep_going, lm_step, init)
    elif is_transformation(optimizer):
        # An optax optimiser on the flat parameters, ``reduction``'s loss, ``num_steps`` steps;
        # the lowest-loss iterate is kept, as for "gd".
        loss_tx = lambda f: sto_loss(pred, unravel(f), theta0, y, mask, lam,  # noqa: E731
                                     prior_var, reduction)
        value_and_grad = jax.value_and_grad(loss_tx)

        def tx_step(carry, _):
            flat, s, best, best_loss = carry
            value, g = value_and_grad(flat)
            better = value < best_loss  # False for NaN
            best = jnp.where(better, flat, best)
            best_loss = jnp.where(better, value, best_loss)
            u, s = optimizer.update(g, s, flat)
            return (cast(Array, optax.apply_updates(flat, u)), s, best, best_loss), None

        init = (flat0, optimizer.init(flat0), flat0, loss_tx(flat0))
        (last, _, flat, best_loss), _ = jax.lax.scan(tx_step, init, None, length=num_steps)
        last_loss = loss_tx(last)
        last_ok = jnp.isfinite(last_loss) & (last_loss <= init[3])
        flat = jnp.where(last_loss <= best_loss, last, flat)
    elif optimizer == "gd":
        loss_gd = lambda f: sto_loss(pred, unravel(f), theta0, y, mask, lam,  # noqa: E731
                                     prior_var, reduction)
        if learning_rate is None:
            jac0 = jnp.where(mask[:, None], beta * feats(z, theta0), 0.0)
            prec_max = jnp.max(jnp.where(pvar > 0, 1.0 / jnp.where(pvar > 0, pvar, 1.0), 0.0))
            curv = lam * prec_max + jnp.sum(jac0 * jac0)
            c = 2.0 if reduction == "sum" else 1.0 / jnp.maximum(jnp.sum(mask), 1)
            lr = 1.0 / (c * curv)
        else:
            lr = jnp.asarray(learning_rate, flat0.dtype)
        value_and_grad = jax.value_and_grad(loss_gd)

        def gd_step(carry, _):
            # Keeps the lowest-loss iterate, so a divergent learning rate cannot return a worse
            # network than theta_0 (flagged by ``ok``).
            flat, best, best_loss = carry
            value, g = value_and_grad(flat)
            better = value < best_loss  # False for NaN
            best = jnp.where(better, flat, best)
            best_loss = jnp.where(better, value, best_loss)
            return (flat - lr * g, best, best_loss), None

        init = (flat0, flat0, loss_gd(flat0))
        (last, flat, best_loss), _ = jax.lax.scan(gd_step, init, None, length=num_steps)
        last_loss = loss_gd(last)
        last_ok = jnp.isfinite(last_loss) & (last_loss <= init[2])
        flat = jnp.where(last_loss <= best_loss, last, flat)
    else:
        raise ValueError(f"optimizer must be one of {MEMBER_OPTIMIZERS}, got {optimizer!r}")

    theta = unravel(flat)
    l_end, g = jax.value_and_grad(loss1)(theta)
    grad_norm = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
    ok = jnp.isfinite(l_end) & (l_end <= l_start)
    if is_transformation(optimizer) or optimizer == "gd":
        ok = ok & last_ok
    return theta, l_start, l_end, grad_norm, ok


def target_noise(key, mask: Array, lam) -> Array:
    """``(capacity,)`` perturbations ``eps_j ~ N(0, lam)`` on the valid rows, 0 on padding; row
    ``j`` is drawn from ``fold_in(key, j)``, so the draws do not depend on the capacity.

    ``perturb_targets``: ``y~_j = y_j + eps_j``, ``lam = beta^2 sigma^2``, drawn afresh for every
    member, makes the minimiser of (1) for a linear model an exact posterior sample for that
    model's kernel (Appendix A; for the trained network in the infinite-width limit only). Without
    it (the paper, and the authors' code) the sample's covariance falls short of the posterior's
    by ``lam k(z, X) A^-2 k(X, z')``, ``A = K_XX + lam I``: under-dispersed near the data; the
    shortfall vanishes only as ``k(z, X) -> 0``, far from it."""
    rows = jnp.arange(mask.shape[0])
    dtype = jnp.result_type(float)
    eps = jax.vmap(lambda j: jax.random.normal(jax.random.fold_in(key, j), (), dtype))(rows)
    return jnp.where(mask, jnp.sqrt(lam) * eps, 0.0)


def draw_params(key, prior_var: Params, num: int | None = None):
    """Parameters ``~ init``: every entry ``sqrt(prior_var) N(0, 1)``, the distribution of
    ``ntkbo.nets.MLP``'s initialiser (``init_fn``), from a single normal draw (each random-number
    call site costs compile time). ``num``: a list of ``num`` independent draws."""
    flat_var, unravel = ravel_pytree(prior_var)
    shape = (1 if num is None else num, flat_var.shape[0])
    eps = jax.random.normal(key, shape, flat_var.dtype) * jnp.sqrt(flat_var)
    draws = [unravel(e) for e in eps]
    return draws[0] if num is None else draws
