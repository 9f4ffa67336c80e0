r"""PINN-BO (Dat Phan-Trong, Hung Tran-The and Sunil Gupta, ECML-PKDD 2024; Phan-Trong's thesis,
"DNN-based Black-box Optimization", Deakin University, 2024, chapter 5): black-box optimisation of
an ``f`` known to obey a PDE ``N[f] = g`` with a cheap ``g``.

Two models, one data set ``D_t = {(x_i, y_i)}`` plus PDE data ``R = {(z_j, u_j)}``, ``u_j = g(z_j)``:

**``pinn_bo``: the network (Algorithm 4).** A fully-connected network ``h(x; theta)`` is trained on
the loss of Eq. (5.1)::

    L(theta) = sum_i w_u [y_i - nu h(x_i)]^2 + sum_j w_r |u_j - nu N[h](z_j)|^2 + lam |theta - theta_0|^2

and the query is greedy, ``x_t = argmin_x h(x; theta_{t-1})`` (Algorithm 4 lines 5-6), a Thompson
draw in the infinite-width limit (Lemma 5.3.4). ``N[h]`` is the network's derivative in its input.

**``pinn_ntk_gp``: the infinite-width counterpart (Definition 5.3.1, Lemma 5.3.4).** A GP whose
kernel is the analytic NTK ``k`` of that network, the limit of its empirical NTK as the width grows
(smooth activation: ``"erf"`` by default, ``"gelu"``,
``"sin"``...) conditioned jointly on ``y_i = f(x_i) + eps`` (variance ``lam1``) and
``u_j = N[f](z_j) + eta`` (variance ``lam2``), with the blocks::

    K_uu(x, x') = k(x, x'),   K_ur(x, z) = N_z k(x, z),   K_rr(z, z') = N_z N_z' k(z, z')

with the posterior of Lemma 5.3.4 (``joint_fit``, ``joint_predict``) and a Thompson, LCB or greedy
acquisition.

**Sign convention.** PINN-BO is stated as a minimisation (Algorithm 4 line 6: argmin), as in ntkbo;
the surrogates model ``f`` itself and the query is their (or their draw's) minimiser.

**Defaults and the thesis.** The thesis grid-searches the network per function and trains by (S)GD;
the defaults are a CPU-sized ``erf`` network (tanh has no closed-form NTK), Adam, 64 residual points
and ``nu = 1``; :data:`PRESETS_BY_NAME` has the thesis's (``"paper"``) and the released code's
(``"authors"``) settings, and ``pinn_bo`` lists every departure with its reason.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional, Union

import flax.struct
import jax
import jax.numpy as jnp

from ntkbo import linalg, optimize
from ntkbo.validation import check_bounds
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo.algorithms.observations import best_points, standardize
from ntkbo.base import Algorithm, NoInfo
from ntkbo.kernels import as_kernel, mlp, mlp_spec
from ntkbo.nets import TrainInfo, check_optimizer, is_transformation, train
from ntkbo.optimize import maximize_acquisition
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.pde import Pde
from ntkbo.validation import check_choice, check_int, check_positive

Array = jax.Array
Params = Any

LOSSES = ("sum", "mean")
OPTIMIZERS = ("gd", "adam")
REG_CENTERS = ("init", "zero")
GP_ACQUISITIONS = ("ts", "lcb", "mean")
METHODS = ("pgd", "adam", "lbfgs", "none")

#: Named settings, per factory (``ntkbo.algorithms.presets``): ``ntkbo.algorithms.pinn_bo(pde,
#: preset=NAME, **options)`` and ``pinn_ntk_gp(pde, preset=NAME, ...)`` start from these, the
#: ``options`` given override them.
#:
#: * ``pinn_bo``, ``"paper"``: the thesis (chapter 5): the network of section 5.2,
#:   ``h(x) = (1/sqrt(m)) W_L psi(W_{L-1} psi(... psi(W_1 x)))`` with weights ``N(0, 1)`` and no
#:   biases, read in NTK parameterisation (``W_std = 1``, ``b_std = None``: every layer divided
#:   by the square root of its fan-in; the printed formula divides only the readout, which with
#:   one hidden layer is ``W_std = (sqrt(d), 1)`` here, ``d`` known only with the problem), Eq.
#:   (5.1)'s sum loss with the data and PDE terms weighted 1 and no regulariser, (S)GD (``"gd"``)
#:   for 100 epochs (full-batch steps here; section 5.4.1) from ``theta_0``. Width, depth and
#:   learning rate were grid-searched per function (section 5.4.1: width ``{100, 200, 500}``,
#:   depth ``{2, 3, 4}``, learning rate ``{0.001 .. 0.1}``) without reporting the choices: the
#:   preset takes the smallest width and depth (the cheapest) and ``1e-2``. The grid's depth is
#:   section 5.2's ``L``, the number of weight matrices, so ``L = 2`` is one hidden layer
#:   (``depth=1``, as the ``"authors"`` preset maps 4 ``Linear`` layers to ``depth=3``); reading
#:   it as hidden layers is ``depth=2``, one argument away.
#: * ``pinn_bo``, ``"authors"``: the released code (github.com/phantrdat/pinn-bo,
#:   ``pinn_neuralbo.py`` at 9fcc59da): Adam, ``MSE_data + MSE_residual``
#:   (``loss_reduction="mean"``, residual ``weight = 1``), ``nu = 1``, warm starts, weight decay
#:   toward 0 (``reg_center="zero"``), 40,000 uniform residual points, the argmin of 50,000 uniform
#:   candidates (its Adam refinement received no gradient: ``"none"``; ntkbo's candidates are
#:   scrambled Sobol points plus the best observed points and perturbations of them, which no
#:   option removes), biases on; the network and training of three of its seven problem configs
#:   (Rastrigin-20, Michalewicz-30, Cosine Mixture-50): 4 ``Linear`` layers (3 hidden) of 50,
#:   learning rate ``0.01``, 200 epochs; 50 initial points (:data:`N_INIT_BY_NAME`). Not
#:   expressible: its raw outputs (the configs do not normalise them; ``pinn_bo`` standardises
#:   the observations and the PDE's right-hand side with them, so ``lam`` and the learning rate
#:   act on another scale).
#: * ``pinn_ntk_gp``, ``"paper"``: the GP of Definition 5.3.1 / Lemma 5.3.4 on that network's NTK
#:   (no biases, ``W_std = 1``, the grid's smallest ``L = 2``: one hidden layer, ``depth=1``) with
#:   Algorithm 4's ``nu_t`` (``"thesis"``, ``gamma_t`` replaced by ``I(f; Y_t)``: the maximal
#:   information gain is unknown for a black box) and the Thompson draw the greedy network stands
#:   for (Lemma 5.3.4).
#:
#: Every preset here runs without the duplicate guard (``search.avoid_observed=False``).
#: Not expressible, so ntkbo's choice stays: tanh (``"erf"``, no closed-form tanh kernel; the
#: thesis also names ReLU, whose second derivative vanishes); the thesis's ExponentialLR(0.95) and
#: its retraining every 10 iterations (the code: every 1 or 10); Algorithm 4's ``nu_t`` in
#: ``pinn_bo`` (a number or a function of ``t`` only; 1 stays) and its constants ``B``, ``R1``,
#: ``R2``, ``delta``, ``lam1``, ``lam2``, for which the thesis gives no numbers; the thesis's
#: ``N_r`` (not stated: 64 and 32 stay); the code's weight decay, whose value varies per problem
#: (0 to 0.1) and acts on PyTorch's Xavier-initialised standard parameters, so it has no single
#: ``lam`` here (pass one); its per-problem widths, depths, steps and candidate counts (512 for
#: DropWave, 5,000 residual points for the heat problems); its tanh and Xavier initialisation.
PRESETS_BY_NAME = {
    "pinn_bo": {
        "paper": dict(network=dict(width=100, depth=1, W_std=1.0, b_std=None),
                      residuals=dict(weight=1.0), lam=0.0,
                      training=dict(loss_reduction="sum", optimizer="gd", learning_rate=1e-2,
                                    num_steps=100, warm_start=False),
                      search=dict(avoid_observed=False)),
        "authors": dict(network=dict(width=50, depth=3), residuals=dict(num_points=40_000,
                                                                        weight=1.0),
                        nu=1.0,
                        training=dict(loss_reduction="mean", reg_center="zero", optimizer="adam",
                                      learning_rate=1e-2, num_steps=200, warm_start=True),
                        search=dict(num_candidates=50_000, method="none", avoid_observed=False)),
    },
    "pinn_ntk_gp": {
        "paper": dict(network=dict(depth=1, W_std=1.0, b_std=None), acquisition="ts",
                      nu="thesis", search=dict(avoid_observed=False)),
    },
}

#: The initial design of each preset (``ntkbo.algorithms.design``): 50 points, section 5.4.1
#: ("trained on 50 initial points") and the released configs of the synthetic problems
#: (``n_init`` 50; the heat problems' 10 are not in a preset).
N_INIT_BY_NAME = {"pinn_bo": {"paper": 50, "authors": 50}, "pinn_ntk_gp": {"paper": 50}}

#: Where ``pinn_bo``'s plain options sit among its parts (``ntkbo.parts``).
LAYOUT = Layout({
    "network": dict(width="width", depth="depth", activation="activation", W_std="W_std",
                    b_std="b_std"),
    "residuals": dict(num_points="num_residuals", noise_std="rhs_noise_std", weight="pde_weight"),
    "training": dict(loss_reduction="loss", reg_center="reg_center", optimizer="optimizer",
                     learning_rate="learning_rate", num_steps="num_steps",
                     warm_start="warm_start"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="acq_steps", method="method", avoid_observed="avoid_observed"),
})
#: ``pinn_ntk_gp``'s: the network whose NTK is the kernel, no training.
NTK_GP_LAYOUT = Layout({
    "network": dict(depth="depth", activation="activation", W_std="W_std", b_std="b_std"),
    "residuals": dict(num_points="num_residuals", noise_std="rhs_noise_std"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="acq_steps", method="method", jitter="jitter",
                   avoid_observed="avoid_observed"),
})

__all__ = [
    "N_INIT_BY_NAME",
    "PRESETS_BY_NAME",
    "PinnBOState",
    "PinnBOSuggestInfo",
    "PinnGPState",
    "PinnGPSuggestInfo",
    "JointFactor",
    "joint_factor_init",
    "joint_factor_append",
    "joint_condition",
    "check_pde",
    "interaction_information",
    "joint_fit",
    "joint_predict",
    "pinn_bo",
    "pinn_kernels",
    "pinn_ntk_gp",
    "pde_outputs",
    "residual_data",
    "to_cube",
]


# ---------------------------------------------------------------------------------------------
# Building blocks.


def to_cube(x: Array, bounds: Array) -> Array:
    """``c(x) = 2 (x - lower) / (upper - lower) - 1``: the box onto ``[-1, 1]^d``."""
    return 2.0 * (x - bounds[0]) / (bounds[1] - bounds[0]) - 1.0


def check_pde(pde) -> Pde:
    """``pde`` must be an ``ntkbo.pde.Pde`` (e.g. ``problem.pde``)."""
    if not isinstance(pde, Pde):
        raise ValueError(
            "pde must be an ntkbo.pde.Pde (e.g. ntkbo.benchmarks.get("
            f"'dropwave_pde').pde), got {type(pde).__name__} {pde!r}")
    return pde


def num_equations(pde: Pde, d: int, dtype) -> int:
    """``r``: the number of equations ``N[f](x)`` has per point (1 for a scalar operator)."""
    shape = jax.eval_shape(pde.operator(lambda x: jnp.sum(x)), jax.ShapeDtypeStruct((d,), dtype))
    return int(math.prod(shape.shape))


def residual_data(key: Array, pde: Pde, bounds: Array, num: int, noise_std: float = 0.0):
    """PDE data ``(z (N_r, d), u (N_r * r,))``: ``z`` uniform in the box, ``u = g(z) + eta``,
    ``eta ~ N(0, noise_std^2)`` (Algorithm 4 line 2); ``u`` is flattened point-major."""
    k_z, k_u = jax.random.split(key)
    d = bounds.shape[-1]
    z = bounds[0] + (bounds[1] - bounds[0]) * jax.random.uniform(k_z, (num, d), bounds.dtype)
    u = jax.vmap(lambda zj: jnp.reshape(pde.rhs(zj), (-1,)))(z).reshape(-1).astype(bounds.dtype)
    if noise_std:
        u = u + noise_std * jax.random.normal(k_u, u.shape, u.dtype)
    return z, u


def pde_outputs(pde: Pde, f: Callable[[Array], Array], z: Array) -> Array:
    """``N[f](z_j)`` for the rows of ``z`` ``(N_r, d)``, flattened point-major ``(N_r * r,)``."""
    op = pde.operator(f)
    return jax.vmap(lambda zj: jnp.reshape(op(zj), (-1,)))(z).reshape(-1)


def pinn_kernels(kernel: Callable[[Array, Array], Array], pde: Pde):
    """The blocks of ``K_NTK-PINN`` (Definition 5.3.1) from a kernel by autodiff in its inputs.

    Args:
      kernel: ``k(x1 (n1, d), x2 (n2, d)) -> (n1, n2)`` (``ntkbo.kernels.as_kernel``), smooth enough
        for the operator's order in each argument.
      pde: a linear operator ``N`` (``Pde``).

    Returns:
      ``(k, k_ur, k_rr)`` on single points: ``k(a, b) -> ()``; ``k_ur(a, z) -> (r,)``, ``N`` applied
      to ``b -> k(a, b)`` at ``z`` (the covariance of ``f(a)`` and ``N[f](z)``); ``k_rr(z1, z2) ->
      (r, r)``, ``N`` applied to both arguments (the covariance of ``N[f](z1)`` and ``N[f](z2)``).
    """

    def k(a, b):
        return kernel(a[None, :], b[None, :])[0, 0]

    def k_ur(a, z):
        return jnp.reshape(pde.operator(lambda b: k(a, b))(z), (-1,))

    def k_rr(z1, z2):
        inner = lambda a: k_ur(a, z2)  # noqa: E731  a -> (r,): cov(f(a), N[f](z2))
        r = jax.eval_shape(inner, z1).shape[0]

        def row(j):  # N applied to a -> cov(f(a), N[f](z2)_j), at z1: column j
            return jnp.reshape(pde.operator(lambda a: inner(a)[j])(z1), (-1,))

        return jax.vmap(row)(jnp.arange(r)).T

    return k, k_ur, k_rr


class JointPosterior(NamedTuple):
    """The GP posterior given ``U`` (PDE data) and ``Y`` (observations): a pytree of arrays.

    Attributes:
      chol: ``(R + C, R + C)`` lower Cholesky factor of the masked ``Khat`` plus jitter, residual rows
        first (``R = N_r r``), then the ``C`` buffer rows (padding rows: identity).
      alpha: ``(R + C,)`` ``Khat^-1 [U; Y]`` (zero on padding).
      mask: ``(R + C,)`` valid rows.
      logdet_r: ``()`` ``log det(I + K_rr / lam2)`` (for the information quantities).
      logdet_joint: ``()`` ``log det(I + Lambda^-1/2 K Lambda^-1/2)`` over the valid rows.
    """

    chol: Array
    alpha: Array
    mask: Array
    logdet_r: Array
    logdet_joint: Array


def _residual_gram(k_rr, z):
    """``K_rr`` ``(R, R)``, ``R = N_r r``: the PDE data's covariances, point-major."""
    krr = jax.vmap(lambda a: jax.vmap(lambda b: k_rr(a, b))(z))(z)  # (N_r, N_r, r, r)
    n_r, _, r, _ = krr.shape
    return krr.transpose(0, 2, 1, 3).reshape(n_r * r, n_r * r)


def _cross_rows(k, k_ur, z, x, xs):
    """``[K_ur(xs, z), K_uu(xs, x)]`` ``(n, R + C)``: the covariances of ``f(xs)`` with the PDE
    data and with the observations at ``x``."""
    kur = jax.vmap(lambda a: jax.vmap(lambda b: k_ur(a, b))(z).reshape(-1))(xs)
    kuu = jax.vmap(lambda a: jax.vmap(lambda b: k(a, b))(x))(xs)
    return jnp.concatenate([kur, kuu], axis=1)


def _joint_gram(k, k_ur, k_rr, z, x):
    """``[[K_rr, K_ru], [K_ur, K_uu]]`` ``(R + C, R + C)``, residual rows first."""
    cross = _cross_rows(k, k_ur, z, x, x)  # (C, R + C)
    n_res = cross.shape[1] - x.shape[0]
    return jnp.block([[_residual_gram(k_rr, z), cross[:, :n_res].T], [cross]])


def _relative_jitter(kd: Array, m: Array, jitter) -> Array:
    """``joint_fit``'s jitter: ``jitter`` (``None``: ``gp.default_jitter``) times the mean of
    ``|diag|`` over the valid rows ``m`` (1 when that is 0)."""
    jit = G.default_jitter(kd.dtype) if jitter is None else jitter
    scale = jnp.sum(jnp.where(m, jnp.abs(kd), 0.0)) / jnp.maximum(jnp.sum(m), 1)
    return jit * jnp.where(scale > 0, scale, 1.0)


@flax.struct.dataclass  # a pytree (n_res static) that flax.serialization saves (ask_tell.save)
class JointFactor:
    """The lower Cholesky factor ``chol`` ``(R + C, R + C)`` of ``joint_fit``'s masked ``Khat``
    (residual rows first), carried in ``pinn_ntk_gp``'s state and extended by
    ``joint_factor_append``, with ``diag_r`` ``(R,)`` the diagonal of ``K_rr`` (for the jitter of
    new rows, without differentiating the kernel four times again). ``n_res = R`` is static; the
    buffer rows grow with the capacity (``ntkbo.data.grow_tree``)."""

    chol: Array
    diag_r: Array
    n_res: int = flax.struct.field(pytree_node=False)


def _grow_joint_factor(f: JointFactor, capacity: int) -> JointFactor:
    chol = G.grow_factor(G.Factor(f.chol), f.n_res + capacity).chol
    return JointFactor(chol, f.diag_r, f.n_res)


D.register_growable(JointFactor, _grow_joint_factor)


def joint_factor_init(k_rr, z: Array, lam2, capacity: int, jitter=None) -> JointFactor:
    """The ``JointFactor`` of the PDE data alone (an empty buffer): the factor of ``K_rr + (lam2 +
    j) I`` (``j`` the relative jitter of ``joint_fit`` over these ``R`` rows) and identity rows
    for the ``capacity`` buffer rows. ``O(R^3)``, once."""
    krr = _residual_gram(k_rr, z)
    n_res = krr.shape[0]
    m = jnp.ones((n_res,), bool)
    noise = lam2 + _relative_jitter(jnp.diagonal(krr), m, jitter)
    chol_r = linalg.cholesky(krr + noise * jnp.eye(n_res, dtype=krr.dtype))
    chol = jnp.eye(n_res + capacity, dtype=krr.dtype).at[:n_res, :n_res].set(chol_r)
    return JointFactor(chol, jnp.diagonal(krr), n_res)


def joint_factor_append(k, k_ur, f: JointFactor, z: Array, data: D.Data, start, q: int, lam1,
                        jitter=None) -> JointFactor:
    """``f`` extended by the ``q`` (static) buffer rows written at ``start`` (``gp.cholesky_append``
    at row ``R + start``, ``O((R + C)^2 q)`` instead of ``joint_fit``'s ``O((R + C)^3)``).

    ``data`` is the buffer after the append; new rows that are failed (non-finite ``y``) or past
    ``count`` are identity rows, and a batch the buffer did not take (``count != start + q``)
    leaves ``f`` as it is. The new rows' jitter is ``joint_fit``'s for the valid rows after the
    append; the rows before keep the jitter they were factored with (the diagonal of the
    cube-mapped NTK is not constant), so the factor equals ``joint_fit``'s to a relative
    ``jitter`` (``1e-10`` in float64, ``1e-6`` in float32). The Schur complement's diagonal is
    floored at the noise, its exact-arithmetic lower bound.
    """
    n_res, d = f.n_res, data.x.shape[-1]
    m = D.mask(data)
    start = jnp.asarray(start, jnp.int32)
    x_new = jax.lax.dynamic_slice(data.x, (start, jnp.zeros((), jnp.int32)), (q, d))
    m_new = jax.lax.dynamic_slice(m, (start,), (q,))
    m_joint = jnp.concatenate([jnp.ones((n_res,), bool), m])
    b = _cross_rows(k, k_ur, z, data.x, x_new)  # (q, R + C)
    b = jnp.where(m_new[:, None] & m_joint[None, :], b, 0.0)
    diag = jnp.concatenate([f.diag_r, jax.vmap(lambda a: k(a, a))(data.x)])
    noise = lam1 + _relative_jitter(diag, m_joint, jitter)
    own = jax.vmap(lambda a: jax.vmap(lambda c: k(a, c))(x_new))(x_new)
    c = jnp.where(m_new[:, None] & m_new[None, :], own, 0.0) + jnp.diag(
        jnp.where(m_new, noise, 1.0))
    chol = G.cholesky_append(f.chol, n_res + start, b, c, floor=jnp.where(m_new, noise, 1.0))
    return JointFactor(jnp.where(data.count == start + q, chol, f.chol), f.diag_r, n_res)


def joint_condition(f: JointFactor, u: Array, y: Array, mask: Array, lam1,
                    lam2) -> "JointPosterior":
    """The ``JointPosterior`` of PDE data ``u`` ``(R,)`` and observations ``y`` ``(C,)`` (valid rows
    ``mask``) from their ``JointFactor``: two triangular solves, ``O((R + C)^2)``."""
    n_res = u.shape[0]
    m = jnp.concatenate([jnp.ones((n_res,), bool), mask])
    noise = jnp.concatenate([jnp.full((n_res,), lam2, f.chol.dtype),
                             jnp.full(mask.shape, lam1, f.chol.dtype)])
    target = jnp.where(m, jnp.concatenate([u, y]), 0.0)
    alpha = G.cholesky_solve(f.chol, target)
    # information quantities: log det(I + Lambda^-1/2 K Lambda^-1/2) = log det(K + Lambda) - log det
    # Lambda over the valid rows (Lemma 5.3.6 in kernel form, App. C.2); padding rows
    # of the factor are identity (log 1 = 0)
    logdet_joint = 2.0 * jnp.sum(jnp.log(jnp.diagonal(f.chol))) - jnp.sum(
        jnp.where(m, jnp.log(noise), 0.0))
    chol_r = f.chol[:n_res, :n_res]  # leading block of the factor = factor of K_rr + lam2 I (+jitter)
    logdet_r = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol_r))) - n_res * jnp.log(lam2)
    return JointPosterior(f.chol, alpha, m, logdet_r, logdet_joint)


def joint_fit(k, k_ur, k_rr, z: Array, u: Array, x: Array, y: Array, mask: Array, lam1, lam2,
              jitter=None) -> JointPosterior:
    """Conditions the GP on PDE data ``(z (N_r, d), u (R,))`` and observations ``(x (C, d), y (C,))``
    of which the rows ``mask`` are valid, with noise variances ``lam2`` and ``lam1`` (Lemma 5.3.4).

    The masked Gram matrix is ``[[Khat_valid, 0], [0, I]]`` (as in ``ntkbo.gp``), with a relative
    jitter ``gp.default_jitter`` times the mean valid diagonal added for the Cholesky factorisation.
    """
    n_res = u.shape[0]
    gram = _joint_gram(k, k_ur, k_rr, z, x)
    m = jnp.concatenate([jnp.ones((n_res,), bool), mask])
    both = m[:, None] & m[None, :]
    gram = jnp.where(both, gram, 0.0)
    noise = jnp.concatenate([jnp.full((n_res,), lam2, gram.dtype),
                             jnp.full(mask.shape, lam1, gram.dtype)])
    diag = jnp.where(m, noise + _relative_jitter(jnp.diagonal(gram), m, jitter), 1.0)
    chol = linalg.cholesky(gram + jnp.diag(diag))
    return joint_condition(JointFactor(chol, jnp.diagonal(gram)[:n_res], n_res), u, y, mask,
                           lam1, lam2)


def joint_predict(k, k_ur, post: JointPosterior, z: Array, x: Array, xs: Array):
    """Posterior mean and variance ``(n,)`` of ``f`` at ``xs`` ``(n, d)`` (Lemma 5.3.4)."""
    cross = jnp.where(post.mask[None, :], _cross_rows(k, k_ur, z, x, xs), 0.0)
    mu = cross @ post.alpha
    v = G.solve_lower(post.chol, cross.T)
    prior = jax.vmap(lambda a: k(a, a))(xs)
    return mu, jnp.maximum(prior - jnp.sum(v * v, axis=0), 0.0)


def interaction_information(k_uu: Array, k_ur: Array, k_rr: Array, lam1, lam2) -> Array:
    """``I(f; Y_t; U_r) = I(f; Y_t) - I(f; Y_t | U_r)`` (Definition 5.3.5), by the kernel form of
    Lemma 5.3.6 (App. C.2)::

        I = 1/2 [log det(I + K_uu / lam1) + log det(I + K_rr / lam2)
                 - log det(I + Lambda^-1/2 K_NTK-PINN Lambda^-1/2)],  Lambda = diag(lam1 I, lam2 I)

    Args:
      k_uu: ``(t, t)``; k_ur: ``(t, R)``; k_rr: ``(R, R)`` blocks of ``K_NTK-PINN``.
      lam1, lam2: noise variances of ``Y`` and ``U``.
    """
    t, n_r = k_ur.shape
    s1, s2 = 1.0 / jnp.sqrt(lam1), 1.0 / jnp.sqrt(lam2)
    joint = jnp.block([[k_uu * s1 * s1, k_ur * s1 * s2], [k_ur.T * s1 * s2, k_rr * s2 * s2]])

    def logdet(a):
        return linalg.logdet_spd(jnp.eye(a.shape[0], dtype=a.dtype) + a)

    return 0.5 * (logdet(k_uu / lam1) + logdet(k_rr / lam2) - logdet(joint))


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")


def _nu_fn(nu):
    if callable(nu):
        return nu
    value = check_positive("nu", nu)
    return lambda t: jnp.asarray(value, jnp.result_type(float))


def _check_common(pde, width, depth, activation, W_std, b_std, num_residuals, rhs_noise_std,
                  num_candidates, num_restarts, num_steps_acq, method):
    pde = check_pde(pde)
    mlp_spec(depth, width, activation, W_std, b_std)  # validates the network arguments
    check_int("num_residuals", num_residuals, 1)
    check_positive("rhs_noise_std", rhs_noise_std, allow_zero=True)
    check_int("num_candidates", num_candidates, 1)
    check_int("num_restarts", num_restarts, 1)
    check_int("acq_steps", num_steps_acq, 0)
    check_choice("method", method, METHODS)
    if num_restarts > num_candidates:
        raise ValueError(f"num_restarts={num_restarts} must be <= num_candidates={num_candidates}")
    return pde


# ---------------------------------------------------------------------------------------------
# PINN-BO: the network.



class PinnBOSuggestInfo(NamedTuple):
    """The ``info`` of PINN-BO's ``suggest`` (one point per round; minimisation: the point is the
    trained network's minimiser, Algorithm 4 line 6).

    Attributes:
      mean: ``(1,)`` the network's prediction ``h`` at the point (standardised units).
      duplicates_replaced: ``()`` int32, 1 when the minimiser was an observed point and was
        replaced (``ntkbo.optimize``).
    """

    mean: Array
    duplicates_replaced: Array


class PinnGPSuggestInfo(NamedTuple):
    """The ``info`` of the PINN NTK-GP's ``suggest`` (``pinn_ntk_gp``; one point per round,
    standardised units).

    Attributes:
      mean: ``(1,)`` the joint posterior mean of ``f`` at the point, given the observations and
        the PDE residuals.
      std: ``(1,)`` ``nu_t`` times the joint posterior standard deviation there.
      nu: ``()`` the exploration scale ``nu_t`` of this round.
      interaction_gain: ``()`` the information gain ``I(f; Y_t | U_r)`` of the observations given
        the residual points (nats).
      duplicates_replaced: ``()`` int32, 1 when the maximiser was an observed point and was
        replaced (``ntkbo.optimize``).
    """

    mean: Array
    std: Array
    nu: Array
    interaction_gain: Array
    duplicates_replaced: Array

class PinnBOState(NamedTuple):
    """The state of ``pinn_bo`` (a pytree of arrays).

    Attributes:
      data: observations (``ntkbo.data.Data``).
      bounds: ``(2, d)`` box.
      z: ``(N_r, d)`` residual (collocation) points; u: ``(N_r r,)`` their PDE data ``g(z) + eta``.
      params0: ``theta_0`` (drawn once in ``init``); params: ``theta_t`` (the training's losses
        are ``update``'s ``info``, ``ntkbo.nets.TrainInfo``).
    """

    data: D.Data
    bounds: Array
    z: Array
    u: Array
    params0: Params
    params: Params


def _pinn_bo(
    pde: Pde,
    *,
    width: int = 64,
    depth: int = 2,
    activation="erf",
    W_std=1.0,
    b_std=0.1,
    num_residuals: int = 64,
    rhs_noise_std: float = 0.0,
    loss: str = "mean",
    pde_weight: float = 1.0,
    nu: Union[float, Callable[[Array], Array]] = 1.0,
    lam: float = 0.0,
    reg_center: str = "init",
    optimizer="adam",
    learning_rate: float | None = 1e-2,
    num_steps: int = 200,
    warm_start: bool = False,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    acq_steps: int = 20,
    method: str = "pgd",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``pinn_bo`` with its flat options (``LAYOUT`` places them in the parts)."""
    optimize.check_avoid_observed(avoid_observed)
    pde = _check_common(pde, width, depth, activation, W_std, b_std, num_residuals, rhs_noise_std,
                        num_candidates, num_restarts, acq_steps, method)
    check_choice("loss", loss, LOSSES)
    check_optimizer("optimizer", optimizer, OPTIMIZERS)
    check_choice("reg_center", reg_center, REG_CENTERS)
    check_positive("pde_weight", pde_weight, allow_zero=True)
    check_positive("lam", lam, allow_zero=True)
    if not is_transformation(optimizer):  # a transformation carries its own step
        check_positive("learning_rate", learning_rate)
    check_int("num_steps", num_steps, 0)
    _check_bool("warm_start", warm_start)
    nu_fn = _nu_fn(nu)

    init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=W_std, b_std=b_std)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        d = bounds.shape[-1]
        k_net, k_res = jax.random.split(key)
        _, params0 = init_fn(k_net, (-1, d))
        z, u = residual_data(k_res, pde, bounds, num_residuals, rhs_noise_std)
        return PinnBOState(D.empty(capacity, d, bounds.dtype), bounds, z, u, params0, params0)

    def update(state, x, y):
        d = state.bounds.shape[-1]
        x = jnp.asarray(x, state.bounds.dtype).reshape(-1, d)
        y = jnp.asarray(y, state.bounds.dtype).reshape(-1)
        data = D.append(state.data, x, y)
        m = D.mask(data)
        ys, y_mean, y_std = standardize(data.y, m)
        nu_t = jnp.asarray(nu_fn(data.count), ys.dtype)
        n_res = state.u.shape[0]
        # residual targets in standardised units: N[f_s] = (u - N[m]) / s
        n_const = pde_outputs(pde, lambda xx: y_mean + 0.0 * jnp.sum(xx), state.z)
        u_s = (state.u - n_const) / y_std
        if loss == "sum":
            w_r, w_u = jnp.asarray(pde_weight, ys.dtype), jnp.ones((), ys.dtype)
        else:
            w_r = jnp.asarray(pde_weight / n_res, ys.dtype)
            w_u = 1.0 / jnp.maximum(jnp.sum(m), 1).astype(ys.dtype)
        sr, su = jnp.sqrt(w_r), jnp.sqrt(w_u)
        bounds = state.bounds
        n_z = state.z.shape[0]

        def outputs(params, xx):
            """Stacked outputs ``[sqrt(w_r) nu N[h](z); sqrt(w_u) nu h(x)]`` ``(R + C, 1)`` of the
            network for the stacked inputs ``xx = [z; x]``, so that ``neural_bo.train``'s loss
            ``1/2 sum (out - target)^2`` is Eq. (5.1) (halved)."""
            h = lambda p: apply_fn(params, to_cube(p, bounds)[None, :])[0, 0]  # noqa: E731
            res = pde_outputs(pde, lambda p: nu_t * h(p), xx[:n_z])
            dat = nu_t * apply_fn(params, to_cube(xx[n_z:], bounds))[:, 0]
            return jnp.concatenate([sr * res, su * dat])[:, None]

        xx = jnp.concatenate([state.z, data.x])
        target = jnp.concatenate([sr * u_s, su * ys])
        mask = jnp.concatenate([jnp.ones((n_res,), bool), m])
        start = state.params if warm_start else state.params0
        center = (state.params0 if reg_center == "init"
                  else jax.tree_util.tree_map(jnp.zeros_like, state.params0))
        params, l0, l1, ok = train(outputs, start, center, xx, target, mask, lam, learning_rate,
                                   num_steps, optimizer=optimizer, reduction="sum")
        return state._replace(data=data, params=params), TrainInfo(jnp.stack([l0, l1]), ok)

    def suggest(key, state):
        bounds = state.bounds

        def acq(xs):  # maximise -h (Algorithm 4 line 6: argmin of the trained network)
            return -apply_fn(state.params, to_cube(xs, bounds))[:, 0]

        x, value, opt_info = maximize_acquisition(
            key, acq, bounds, num_candidates=num_candidates, num_restarts=num_restarts,
            x_best=best_points(state.data.x, state.data.y, D.mask(state.data), num_restarts),
            num_steps=acq_steps, method=method,
            observed=optimize.guarded(avoid_observed, state.data.x, D.mask(state.data)))
        info = PinnBOSuggestInfo(mean=-value[None],
                                 duplicates_replaced=opt_info.replaced.astype(jnp.int32))
        return x[None, :], info

    def posterior_mean(state, x):
        """The trained network's fit of the observations, ``mean + std nu_t h(x; theta_t)`` in
        ``y``'s units (``update`` fits ``nu_t h`` to the standardised ``y``;
        ``Algorithm.posterior_mean``)."""
        x = jnp.asarray(x, state.bounds.dtype)
        ys, y_mean, y_std = standardize(state.data.y, D.mask(state.data))
        nu_t = jnp.asarray(nu_fn(state.data.count), ys.dtype)
        return y_mean + y_std * nu_t * apply_fn(state.params, to_cube(x, state.bounds))[:, 0]

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


# ---------------------------------------------------------------------------------------------
# The infinite-width (analytic-kernel) counterpart.


class PinnGPState(NamedTuple):
    """The state of ``pinn_ntk_gp``: observations, box, PDE data and the ``JointFactor`` of their
    joint Gram matrix (extended by each ``update``; ``suggest`` only solves with it for the
    re-standardised targets, ``joint_condition``)."""

    data: D.Data
    bounds: Array
    z: Array
    u: Array
    factor: JointFactor


def _pinn_ntk_gp(
    pde: Pde,
    *,
    depth: int = 2,
    activation="erf",
    W_std=1.0,
    b_std=0.1,
    lam1: float = 1e-2,
    lam2: float = 1e-4,
    num_residuals: int = 32,
    rhs_noise_std: float = 0.0,
    acquisition: str = "ts",
    nu: Union[float, str, Callable[[Array], Array]] = 1.0,
    B: float = 1.0,
    R1: float = 0.1,
    R2: float = 0.01,
    delta: float = 0.1,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    acq_steps: int = 20,
    method: Optional[str] = None,
    jitter: Optional[float] = None,
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``pinn_ntk_gp`` with its flat options (``NTK_GP_LAYOUT`` places them in the parts)."""
    optimize.check_avoid_observed(avoid_observed)
    method = method or ("none" if acquisition == "ts" else "pgd")
    pde = _check_common(pde, 1, depth, activation, W_std, b_std, num_residuals, rhs_noise_std,
                        num_candidates, num_restarts, acq_steps, method)
    check_choice("acquisition", acquisition, GP_ACQUISITIONS)
    if acquisition == "ts" and method != "none":
        raise ValueError("method must be 'none' for acquisition='ts' (independent draws per point "
                         "are not differentiable)")
    check_positive("lam1", lam1)
    check_positive("lam2", lam2)
    for name, v in (("B", B), ("R1", R1), ("R2", R2)):
        check_positive(name, v, allow_zero=True)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    thesis_nu = isinstance(nu, str)
    if thesis_nu:
        check_choice("nu", nu, ("thesis",))
        r_tilde = math.sqrt((R1 / lam1) ** 2 + (R2 / lam2) ** 2)
    else:
        nu_fn = _nu_fn(nu)

    kernel = as_kernel(mlp(depth, 1, activation, W_std=W_std, b_std=b_std)[2], "ntk")

    def kernels(bounds):
        cube_kernel = lambda a, b: kernel(to_cube(a, bounds), to_cube(b, bounds))  # noqa: E731
        return pinn_kernels(cube_kernel, pde)

    # compiled even when init is called eagerly (ask_tell): the K_rr blocks differentiate the
    # kernel four times, and op-by-op that takes a minute
    init_factor = jax.jit(lambda bounds, z, capacity: joint_factor_init(
        kernels(bounds)[2], z, lam2, capacity, jitter), static_argnums=2)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        z, u = residual_data(key, pde, bounds, num_residuals, rhs_noise_std)
        factor = init_factor(bounds, z, capacity)
        return PinnGPState(D.empty(capacity, bounds.shape[-1], bounds.dtype), bounds, z, u, factor)

    def append_factor(bounds, factor, z, data, start, q):
        k, k_ur, _ = kernels(bounds)
        return joint_factor_append(k, k_ur, factor, z, data, start, q, lam1, jitter)

    append_factor = jax.jit(append_factor, static_argnums=5)  # as init_factor: eager callers

    def update(state, x, y):
        d = state.bounds.shape[-1]
        x = jnp.reshape(jnp.asarray(x, state.bounds.dtype), (-1, d))
        data = D.append(state.data, x, jnp.reshape(y, (-1,)))
        factor = append_factor(state.bounds, state.factor, state.z, data, state.data.count,
                               x.shape[0])
        return state._replace(data=data, factor=factor), NoInfo()

    def suggest(key, state):
        bounds, data = state.bounds, state.data
        k_acq, k_ts = jax.random.split(key)
        k, k_ur, _ = kernels(bounds)
        m = D.mask(data)
        ys, y_mean, y_std = standardize(data.y, m)
        n_const = pde_outputs(pde, lambda xx: y_mean + 0.0 * jnp.sum(xx), state.z)
        u_s = (state.u - n_const) / y_std
        post = joint_condition(state.factor, u_s, ys, m, lam1, lam2)
        gain = 0.5 * (post.logdet_joint - post.logdet_r)  # I(f; Y_t | U_r)
        if thesis_nu:
            nu_t = B + r_tilde * jnp.sqrt(2.0 * jnp.maximum(gain, 0.0) + math.log(1.0 / delta))
        else:
            nu_t = jnp.asarray(nu_fn(data.count), ys.dtype)

        def moments(xs):
            mu, var = joint_predict(k, k_ur, post, state.z, data.x, xs)
            return mu, nu_t * jnp.sqrt(var)

        def acq(xs):
            mu, s = moments(xs)
            if acquisition == "ts":
                return -(mu + s * jax.random.normal(k_ts, mu.shape, mu.dtype))
            if acquisition == "lcb":
                return -(mu - s)
            return -mu

        x, _, opt_info = maximize_acquisition(
            k_acq, acq, bounds, num_candidates=num_candidates, num_restarts=num_restarts,
            x_best=best_points(data.x, data.y, D.mask(data), num_restarts), num_steps=acq_steps,
            method=method, observed=optimize.guarded(avoid_observed, data.x, D.mask(data)))
        mu, s = moments(x[None, :])
        info = PinnGPSuggestInfo(mean=mu, std=s, nu=nu_t, interaction_gain=gain,
                                 duplicates_replaced=opt_info.replaced.astype(jnp.int32))
        return x[None, :], info

    def posterior_mean(state, x):
        """The GP's posterior mean of ``f`` given the PDE data and the observations (Lemma
        5.3.4, ``joint_predict``), ``mean + std mu(x)`` in ``y``'s units
        (``Algorithm.posterior_mean``)."""
        k, k_ur, _ = kernels(state.bounds)
        m = D.mask(state.data)
        ys, y_mean, y_std = standardize(state.data.y, m)
        n_const = pde_outputs(pde, lambda xx: y_mean + 0.0 * jnp.sum(xx), state.z)
        post = joint_condition(state.factor, (state.u - n_const) / y_std, ys, m, lam1, lam2)
        mu, _ = joint_predict(k, k_ur, post, state.z, state.data.x,
                              jnp.asarray(x, state.bounds.dtype))
        return y_mean + y_std * mu

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


@composed(_pinn_bo, LAYOUT)
def pinn_bo(
    pde: Pde,
    *,
    network: PartOption = None,
    residuals: PartOption = None,
    training: PartOption = None,
    nu: Union[float, Callable[[Array], Array]] = 1.0,
    lam: float = 0.0,
    search: PartOption = None,
) -> Algorithm:
    """PINN-BO: the network model of the module docstring (Algorithm 4).

    The loss is Eq. (5.1) of the module docstring (``ntkbo`` halves the whole loss, as
    ``neural_bo.train`` does). ``N[h]`` is computed by automatic differentiation of the network in
    its input (``Problem.pde.operator``), with the chain rule through the map of the box to the
    network's input cube (the authors' code skipped it). ``training.loss_reduction="sum"`` (Eq.
    5.1: ``w_u = w_r = 1``) or ``"mean"`` (the code: ``MSE_data + MSE_residual``, ``w_u = 1 / t``,
    ``w_r = weight / (N_r r)`` for ``r`` equations per point, ``weight`` the residuals' weight);
    with ``"sum"``, ``w_r = weight``. ``residuals.weight=0`` removes the PDE data (the network then
    fits the data only). The query is greedy (Algorithm 4 lines 5-6):
    ``x_t = argmin_x h(x; theta_{t-1})``, found by ``ntkbo.optimize`` (Sobol candidates, the best
    observed points and their perturbations, then projected gradient descent, since ``h`` is
    smooth; the code's Adam refinement received no gradient). The thesis justifies the greedy rule
    as Thompson sampling: in the infinite-width limit, a network trained from its random
    ``theta_0`` on the ``nu``-scaled loss is a draw from ``GP(mu_t, nu^2 sigma_t^2)`` (Lemma
    5.3.4); at a finite width it is only approximately one. ``theta_0`` is drawn once in ``init``
    (Algorithm 4 line 1) and training restarts from it every round unless
    ``training.warm_start=True`` (the code).

    Units. Inputs: the box is mapped to ``[-1, 1]^d``
    (``c(x) = 2 (x - lower) / (upper - lower) - 1``), the network sees ``c(x)`` and operators are
    applied to ``x -> h(c(x))`` in the original coordinates. Outputs: observations are standardised,
    ``f = m + s f_s`` (``m``, ``s`` the mean and std of the valid ``y``), and since ``N`` is linear
    the PDE data become ``N[f_s] = (u - N[m]) / s`` (``N[m]`` is ``N`` applied to the constant
    ``m``: non-zero for the operators containing ``f`` itself).

    Defaults and deviations:

    * Network: ``depth=2`` hidden layers of ``width=64``, activation ``"erf"``, biases
      ``b_std=0.1`` (the ``network`` part). The thesis grid-searches width in ``{100, 200, 500}`` and depth in
      ``{2, 3, 4}`` per function on 50 initial points (its depth ``L`` counts the weight matrices: 1
      to 3 hidden layers); the code uses tanh (e.g. 4 ``Linear`` layers of 50, 3 hidden). ``tanh``
      has no closed-form NTK, so ntkbo uses ``erf`` (the same sigmoid shape) for both models; pass
      ``network={"activation": "gelu"}`` etc.
    * Training (the ``training`` part): Adam (the code; the thesis says (S)GD with ExponentialLR
      0.95), ``learning_rate=1e-2``, ``num_steps=200`` per update, every update (the code's setting
      for DropWave, heat and the beam; the thesis says every 10 iterations), from ``theta_0``
      (``warm_start=False``), ``lam=0`` (the thesis has no regulariser; the code uses weight decay,
      ``reg_center="zero"`` with ``lam > 0``).
    * ``nu``: a constant (``1``, the code: ``exploration_coeff = 1``) or a function of ``t``. The
      thesis's ``nu_t = B + R~ sqrt(2 gamma_t - 2 I(f; Y_t; U_r) + log 1/delta)`` needs the RKHS
      norm bound ``B``, the sub-Gaussian constants and the maximal information gain ``gamma_t``,
      none of which is known for a black box; ``pinn_ntk_gp(nu="thesis", B=, R1=, R2=, delta=)``
      evaluates it with ``gamma_t`` replaced by the information gain of the observed points
      ``I(f; Y_t)`` (the first bound of Lemma 5.3.8), i.e.
      ``nu_t = B + R~ sqrt(2 I(f; Y_t | U_r) + log 1/delta)``.
    * PDE data: ``residuals.num_points`` (``N_r``) uniform points of the box drawn in ``init`` (the
      code draws 40,000 uniform points; 64 here by default, for cost), with ``u_j = g(z_j)`` exact
      (``g`` is cheap; ``residuals.noise_std`` adds the thesis's ``eta``).
    * Presets (:data:`PRESETS_BY_NAME`): ``pinn_bo(pde, preset="paper")`` (the thesis) and
      ``preset="authors"`` (the released code), ``pinn_ntk_gp(pde, preset="paper")``.

    The measurements on Cosine Mixture, Styblinski-Tang, DropWave and heat are in
    docs/decisions.md (2026-11-22).

    Args:
      pde: the equation ``N[f] = g`` (``problem.pde``); required, since ``init`` only sees the box.
      network: the network ``h`` (``ntkbo.parts.Network``, NTK parameterisation,
        ``ntkbo.kernels.mlp``): ``width`` ``m`` (64; paper 100), ``depth`` hidden layers (2; paper
        1), ``activation`` (``"erf"``; a smooth one of ``ntkbo.kernels.ACTIVATIONS``: ReLU's
        second derivative is zero almost everywhere, so second-order operators need smooth
        ones), ``W_std`` (1.0), ``b_std`` (0.1; paper ``None``, no biases).
      residuals: the PDE data (``ntkbo.parts.Residuals``): ``num_points`` ``N_r`` (64), drawn
        uniformly in the box in ``init``; ``noise_std`` (0.0: exact ``g``), the std of the noise
        ``eta`` on ``u_j = g(z_j) + eta``; ``weight`` ``alpha_r`` (1.0, as the code), the weight
        of the residual term.
      nu: ``nu_t``: a positive number (code: 1) or a function of the observation count.
      lam: penalty ``lam |theta - center|^2 / 2`` (default and thesis: none, 0).
      training: the training of each update (``ntkbo.parts.Training``): ``loss_reduction``
        (``"mean"``, the code: mean data error + ``weight`` times the mean residual error; paper
        ``"sum"``, Eq. 5.1), ``reg_center`` (``"init"``, ``theta_0``; or ``"zero"``, weight decay,
        as the code's Adam), ``optimizer`` (``"adam"``, the code; paper ``"gd"``, (S)GD without
        the scheduler; or an ``optax.GradientTransformation``), ``learning_rate`` of a named one
        (1e-2; the code: 1e-3 to 2e-2 per problem),
        ``num_steps`` per update (200; paper 100 epochs; the code: 100 to 500, full batch here),
        ``warm_start`` (``False``: from ``theta_0``; ``True``: from ``theta_{t-1}``, the code).
      search: ``ntkbo.optimize.maximize_acquisition`` of ``-h`` (``ntkbo.parts.Search``):
        ``num_candidates`` (1024), ``num_restarts`` (4), ``num_steps`` (20), ``method``
        (``"pgd"``; ``"none"``: the code's pure candidate search).

    Returns:
      ``Algorithm``; ``suggest`` returns ``(x (1, d), info)`` with ``info`` a
      :class:`PinnBOSuggestInfo` (``mean``: ``h`` at ``x``, standardised units, ``(1,)``;
      ``duplicates_replaced``); ``update`` returns ``(state,
      ntkbo.nets.TrainInfo)`` (``train_loss`` ``(2,)``, ``train_ok`` ``()``).

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _pinn_bo(**LAYOUT.flatten(locals(), "pinn_bo"))


@composed(_pinn_ntk_gp, NTK_GP_LAYOUT)
def pinn_ntk_gp(
    pde: Pde,
    *,
    network: PartOption = None,
    lam1: float = 1e-2,
    lam2: float = 1e-4,
    residuals: PartOption = None,
    acquisition: str = "ts",
    nu: Union[float, str, Callable[[Array], Array]] = 1.0,
    B: float = 1.0,
    R1: float = 0.1,
    R2: float = 0.01,
    delta: float = 0.1,
    search: PartOption = None,
) -> Algorithm:
    """The infinite-width PINN-BO: a GP on the analytic NTK of ``pinn_bo``'s network (the limit of
    its empirical NTK as the width grows), conditioned on ``f`` observations and PDE data
    (Definition 5.3.1 and Lemma 5.3.4).

    The blocks of the module docstring are obtained by automatic differentiation of ``k`` in its
    inputs (``pinn_kernels``; ``N`` must be
    linear, as the theory assumes). The posterior (Lemma 5.3.4 in kernel form)::

        mu(x)      = [K_ur(x, Z)  K_uu(x, X)] Khat^-1 [U; Y]
        sigma^2(x) = k(x, x) - [K_ur(x, Z)  K_uu(x, X)] Khat^-1 [.]^T,
        Khat       = [[K_rr + lam2 I, K_ru], [K_ur, K_uu + lam1 I]]

    and the acquisition is ``"ts"`` (Thompson: the minimiser of a draw ``mu + nu sigma eps``,
    independent per candidate as in NeuralBO), ``"lcb"`` (``mu - nu sigma``) or ``"mean"`` (greedy).
    The interaction information ``I(f; Y_t; U_r)`` of Lemma 5.3.6 is ``interaction_information``.

    Args:
      pde: the linear equation ``N[f] = g`` (``problem.pde``).
      network: the network whose NTK is the kernel (``ntkbo.parts.Network``; smooth activation):
        ``depth`` (2; paper 1), ``activation`` (``"erf"``), ``W_std`` (1.0), ``b_std`` (0.1;
        paper ``None``).
      lam1, lam2: noise variances of the (standardised) observations and of the PDE data.
      residuals: the PDE data (``ntkbo.parts.Residuals``): ``num_points`` ``N_r`` (32; the joint
        Gram matrix is ``(N_r r + C)`` square), ``noise_std`` (0.0), the std of the noise on
        ``g``.
      acquisition: ``"ts"`` (independent per-candidate draws, no refinement), ``"lcb"`` or ``"mean"``.
      nu: exploration scale: a number, a function of ``t``, or ``"thesis"``: ``B + R~ sqrt(2 I(f;
        Y_t | U_r) + log(1 / delta))`` with ``R~ = sqrt((R1/lam1)^2 + (R2/lam2)^2)`` (Algorithm 4
        line 4 with ``gamma_t`` replaced by ``I(f; Y_t)``, ``pinn_bo``).
      B, R1, R2, delta: the constants of ``nu="thesis"``.
      search: the acquisition optimiser (``ntkbo.optimize``, ``ntkbo.parts.Search``):
        ``num_candidates`` (1024), ``num_restarts`` (4), ``num_steps`` (20), ``method`` (the
        refinement; ``None``: ``"none"`` for ``"ts"``, ``"pgd"`` otherwise), ``jitter``
        (relative Cholesky jitter; ``None``: ``ntkbo.gp.default_jitter``).

    Returns:
      ``Algorithm``; ``suggest``'s ``info`` is a :class:`PinnGPSuggestInfo`: ``mean``, ``std``
      ``(1,)`` at the query (standardised units, ``std`` includes ``nu``), ``nu`` and
      ``interaction_gain`` ``= I(f; Y_t | U_r)``; ``update``'s is ``NoInfo``.
    """
    return _pinn_ntk_gp(**NTK_GP_LAYOUT.flatten(locals(), "pinn_ntk_gp"))
