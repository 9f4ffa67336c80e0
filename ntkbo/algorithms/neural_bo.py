r"""NeuralBO (Phan-Trong, Tran-The and Gupta, "NeuralBO: A black-box optimization algorithm using
deep neural networks", Neurocomputing 559, 126776, 2023): Thompson sampling with a neural network
mean and the empirical-NTK uncertainty at initialisation.

The algorithm (Algorithm 1 with TrainNN, Algorithm 2), in ntkbo's parameterisation, where the
paper's factors of ``m`` are absorbed (``paper_W_std``)::

    theta_0 ~ init                                   once, in ``init``; kept in the state
    g(x)     = d h(x; theta) / d theta  at theta_0   static gradient features ("static")
    U_t      = lam I + sum_{i <= t} g(x_i) g(x_i)^T                        (p x p)
    sigma_t^2(x) = lam g(x)^T U_{t-1}^{-1} g(x)                            (Alg. 1 line 3)
                 = k(x, x) - k_X(x)^T (K + lam I)^{-1} k_X(x),   k(x, x') = g(x) . g(x')
    f~_t(x)  ~ N(h(x; theta_{t-1}), nu_t^2 sigma_t^2(x)), independently per point   (line 4)
    x_t      = argmin_x f~_t(x) over the candidate set                     (line 5, negated)
    theta_t  = TrainNN: J full-batch GD steps from theta_0 on                (Alg. 2)
               L(theta) = 1/2 sum_i (h(x_i; theta) - y_i)^2 + 1/2 lam ||theta - theta_0||^2

**Sign convention.** The paper maximises ``f``; ntkbo minimises it. ``h`` models the standardised
observations of ``f``, ``f~`` is a draw of ``f``, and the point returned is its minimiser, the
maximiser of the acquisition ``-f~ = -(h + nu sigma eps)`` (``thompson_select``): the paper's
algorithm run on ``-f`` (the Gaussian draw is symmetric).

**Options.** ``uncertainty``: ``"dual"`` (default; the GP posterior variance with the empirical NTK
as kernel and noise ``lam``), ``"primal"`` (the paper's ``p x p`` matrix ``U``) or ``"diag"`` (the
authors' code's ``diag(U)``); ``posterior`` gives the forms. ``features``: ``g`` at ``theta_0``
(``"static"``, the paper) or at ``theta_t`` (``"dynamic"``, NeuralTS and the authors' code).
``thompson``: ``"independent"`` (the paper's per-point draw over a candidate set,
``thompson_select``) or ``"pathwise"`` (one joint draw with the same marginals, refined over the
box, ``pathwise_direction``). ``q > 1``: ``q`` independent draws, one point each.

**Defaults and the paper.** ``PRESETS["paper"]`` is Algorithms 1-2 with Section 7's network; the
defaults keep that network (``depth=1`` hidden layer, the paper's ``L = 2``; ``width=500``; ReLU;
no biases; ``lam=0.01``) and depart from the paper where it says nothing (unit-sphere inputs and
standardised outputs, ``embed``) and in two choices, each measured (docs/decisions.md, 2026-11-24
and 2026-11-27): TrainNN starts from ``theta_{t-1}`` (``warm_start=True``; Algorithm 2 starts from
``theta_0``; ``train_nn``), and ``nu="by_dimension"`` is 1.0 when ``d <= 6``, else 0.3
(``nu_by_dimension``), where the paper picks ``nu`` per problem from ``{0.1, 1, 10}``.
``PRESETS["authors"]`` is the authors' code (github.com/phantrdat/neuralbo). Weights are Section
7's ``N(0, 1/m)``, not Section 4's ``N(0, 2/m)`` with a zero last layer (``PRESETS``).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple, Union

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from ntkbo import linalg
from ntkbo.validation import check_bounds
from ntkbo.validation import check_choice as _check_choice
from ntkbo.validation import check_int as _check_int
from ntkbo.validation import check_positive as _check_positive
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo import optimize, qmc
from ntkbo.algorithms.observations import (  # noqa: F401  (embed, input_dim re-exported)
    embed, from_unit, input_dim, standardize, to_sphere, to_unit, unit_box)
from ntkbo.base import Algorithm
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.kernels import grad_features, mlp, mlp_spec
from ntkbo.kernels import structured as S
# The shared numerics live in their layers (the other neural algorithms use them too); they stay
# importable from here. TrainNN (Algorithm 2) and the paper's scales: the networks layer.
from ntkbo.feature_gp import (  # noqa: F401  (re-exported)
    DiagU, cholesky_update, dual_factor, empirical_gram, extend_dual_factor, gram_factor,
    gram_variance, variance_diag, variance_dual, variance_primal)
from ntkbo.nets import (  # noqa: F401  (re-exported)
    _loss_fn, _sqnorm_diff, check_optimizer, gd_learning_rate, make_optimizer, paper_W_std, train)

Array = jax.Array
Params = Any

FEATURES = ("static", "dynamic")
OPTIMIZERS = ("gd", "adam")
REG_CENTERS = ("init", "zero")
LOSS_REDUCTIONS = ("sum", "mean")
UNCERTAINTIES = ("dual", "primal", "diag")
NU_SCHEDULES = ("repo", "by_dimension")
#: ``nu="by_dimension"``: ``NU_LOW_DIM`` when ``d <= NU_DIM_LIMIT``, else ``NU_HIGH_DIM``.
NU_LOW_DIM, NU_HIGH_DIM, NU_DIM_LIMIT = 1.0, 0.3, 6
SAMPLERS = ("sobol", "kronecker")
INPUT_MAPS = ("sphere", "cube", "centered")
THOMPSON = ("independent", "pathwise")

#: Named settings: ``ntkbo.algorithms.neural_bo(preset=NAME, **options)`` starts from these, the
#: ``options`` given override them (``ntkbo.algorithms``, "Presets").
#:
#: * ``"paper"``: Algorithms 1 and 2 of Phan-Trong et al. (2023) with the network and constants
#:   of their Section 7: the two-layer ``sqrt(m) W_2 relu(W_1 x)`` (one hidden layer, no biases,
#:   weights ``N(0, 1/m)``: ``W_std="paper"``) of width ``m = 500``, ``lam = 0.01``, ``nu = 1``
#:   (from the grid ``{0.1, 1, 10}``, whose per-problem choices are not reported), static
#:   features ``g(x; theta_0)`` (Alg. 1 line 3), and TrainNN as Algorithm 2 writes it: full-batch
#:   gradient descent on the sum loss with the penalty ``1/2 m lam |theta - theta_0|^2``, from
#:   ``theta_0`` every round. How it departs from Section 7: the paper trains by SGD (batch 50,
#:   50 epochs, learning rate 1e-3), which ntkbo's full-batch TrainNN cannot express; the number
#:   of steps ``J = 200`` and the step ``1 / (lam + tr K)`` are ntkbo's (Algorithm 2 leaves both
#:   open; Theorem 1's are impractical). The initialisation is Section 7's ``N(0, 1/m)``, not
#:   Section 4's ``N(0, 2/m)`` with a zero last layer: a zero readout makes ``h(x; theta_0) = 0``
#:   but also zeroes the gradient features of every other layer at ``theta_0``, so the
#:   uncertainty would see the last layer alone. Where the paper is silent (inputs, output
#:   scaling, candidates), ntkbo's defaults stay (unit-sphere inputs, standardised outputs); the
#:   initial design is 5 points (:data:`N_INIT`) and the duplicate guard is off, as the paper.
#: * ``"authors"``: the authors' code (github.com/phantrdat/neuralbo, ``baselines/neuralbo.py``)
#:   with the demo configuration ``config/Ackley/DIM_2/NeuralBO_ackley2.json`` of its first
#:   commit (d32f12a): ``L = 2`` ``Linear`` layers (one hidden) of ``W = 200`` with biases,
#:   inputs mapped to ``[-1, 1]^d``, raw outputs, ``weight_decay = 0.005`` (also their ``lam``),
#:   ``exploration_coeff = 3`` (``nu``), dynamic features, the full ``U`` (primal), 100 full-batch
#:   ``torch.optim.Adam(lr=0.001, weight_decay=0.005)`` steps on ``nn.MSELoss()`` per round from
#:   the current weights with the optimiser kept across rounds, and the argmin of 50,000 Sobol
#:   candidates (nothing else). Their later commit of the same day (f6637cb) has ``lr = 0.002``
#:   and ``exploration_coeff = 2``: ``learning_rate=2e-3 * math.sqrt(200), nu=2.0``.
#:   Their network is ``sqrt(m) (W_2 relu(W_1 x + b_1) + b_2)``, hidden weights ``N(0, 1/m)``.
#:   Every parameter of it is ``theta^ / sqrt(m)`` of ntkbo's network with ``W_std="paper"`` and
#:   ``b_std=1`` (the same function, by the homogeneity of ReLU), so ``d/dtheta^ = d/dtheta /
#:   sqrt(m)``: their features ``g / sqrt(m)`` are ntkbo's ``g`` exactly; their loss ``mean (h -
#:   y)^2 + wd/2 |theta|^2`` (Adam's ``weight_decay`` adds ``wd theta`` to the gradient) is
#:   ``2 (1/2 mean (h - y)^2 + 1/2 (wd / (2 m)) |theta^|^2)``, ntkbo's mean loss with
#:   ``train_penalty = wd / (2 m)``; Adam's steps do not change when the gradient is multiplied by
#:   a constant, so their step ``1e-3`` on ``theta`` is ``1e-3 sqrt(m)`` on ``theta^``. With
#:   Adam's ``eps`` set to 0 both ways the two trainings agree to rounding
#:   (``tests/test_presets.py``). Where it differs from their code, not expressible in ntkbo's
#:   network (every parameter drawn ``N(0, 1)`` in its units): PyTorch's default initialisation
#:   of the hidden biases, ``U(+-1/sqrt(d))`` (std ``sqrt(m / (3 d))`` in ntkbo's units, against
#:   1 here), and of the readout weights and bias, ``U(+-1/sqrt(m))`` (std ``1/sqrt(3)``, against
#:   1); and Adam's ``eps = 1e-8``, which meets gradients ``2 sqrt(m)`` times smaller than theirs
#:   (it matters only where a gradient is near 0). ``learning_rate`` and ``train_penalty`` are
#:   for width 200: a ``width`` given with this preset rescales neither. 5 initial Sobol points
#:   (their ``n_init``), no duplicate guard.
PRESETS = {
    "paper": dict(network=dict(width=500, depth=1, activation="relu", W_std="paper", b_std=None),
                  lam=0.01, nu=1.0, features="static", uncertainty="dual",
                  training=dict(optimizer="gd", learning_rate=None, num_steps=200,
                                warm_start=False, keep_optimizer_state=False, reg_center="init",
                                penalty=None, loss_reduction="sum"),
                  thompson="independent", search=dict(avoid_observed=False)),
    "authors": dict(network=dict(width=200, depth=1, activation="relu", W_std="paper", b_std=1.0),
                    lam=0.005, nu=3.0, input_map="centered", features="dynamic",
                    uncertainty="primal",
                    training=dict(optimizer="adam", learning_rate=1e-3 * math.sqrt(200),
                                  num_steps=100, warm_start=True, keep_optimizer_state=True,
                                  reg_center="zero", penalty=0.005 / (2 * 200),
                                  loss_reduction="mean"),
                    standardize_y=False,
                    search=dict(num_candidates=50_000, num_best=0, num_perturbations=0,
                                sampler="sobol", avoid_observed=False),
                    thompson="independent"),
}

#: The initial design of each preset (``ntkbo.algorithms.design``): the authors' code's
#: ``n_init=5`` Sobol points (``baselines/neuralbo.py``), for ``"paper"`` too: Section 7 gives a
#: count only for robot pushing (15 points) and none for the synthetic functions.
N_INIT = {"paper": 5, "authors": 5}
#: Their sampler (``ntkbo.algorithms.design_sampler``): the authors' code's scrambled Sobol points
#: (the drivers' default too); the paper names none (Section 7: "All the methods start with the
#: same set of initial points").
DESIGN_SAMPLER = {"authors": "sobol"}

#: Where ``neural_bo``'s and ``build``'s plain options sit among their parts (``ntkbo.parts``).
LAYOUT = Layout({
    "network": dict(width="width", depth="depth", activation="activation", W_std="W_std",
                    b_std="b_std"),
    "training": dict(optimizer="optimizer", learning_rate="learning_rate", num_steps="num_steps",
                     warm_start="warm_start", keep_optimizer_state="keep_optimizer_state",
                     reg_center="reg_center", penalty="train_penalty",
                     loss_reduction="loss_reduction"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="num_acq_steps", method="acq_method", num_best="num_best",
                   num_perturbations="num_perturbations", perturb_scale="perturb_scale",
                   sampler="sampler", chunk_size="chunk_size",
                   avoid_observed="avoid_observed"),
})

#: Default number of entries (rows x parameters, or rows x (factor width + capacity) in the dual
#: form) evaluated per candidate chunk on CPUs and unmeasured platforms (16 MB in float32).
CHUNK_ENTRIES = 1 << 22
#: The same on GPUs (32 MB in float32): the smallest power of two that takes the default
#: candidates at n = 2000 in one chunk, which there steps faster than two chunks (docs/speed.md).
GPU_CHUNK_ENTRIES = 1 << 23


def chunk_entries(platform: str | None = None) -> int:
    """Entries per candidate chunk on ``platform`` (``jax.default_backend()`` when ``None``, the
    platform a traced program runs on by default): ``GPU_CHUNK_ENTRIES`` on ``"gpu"``, else
    ``CHUNK_ENTRIES``. On CPUs one chunk is not faster than several of ``CHUNK_ENTRIES``."""
    platform = jax.default_backend() if platform is None else platform
    return GPU_CHUNK_ENTRIES if platform == "gpu" else CHUNK_ENTRIES


__all__ = [
    "NeuralBOState",
    "PrimalU",
    "DiagU",
    "NoU",
    "UForm",
    "wrap_u",
    "unwrap_u",
    "NeuralBOSuggestInfo",
    "NeuralBOUpdateInfo",
    "NeuralBOFns",
    "neural_bo",
    "build",
    "nu_repo",
    "cholesky_update",
    "dual_factor",
    "gram_factor",
    "variance_dual",
    "gram_variance",
    "empirical_gram",
    "variance_primal",
    "variance_diag",
    "gd_learning_rate",
    "train",
    "make_optimizer",
    "paper_W_std",
    "input_dim",
    "embed",
    "network",
    "init_u",
    "update_u",
    "targets",
    "fit_r2",
    "train_nn",
    "num_candidate_rows",
    "candidates",
    "map_chunks",
    "chunk_entries",
    "extend_dual_factor",
    "posterior",
    "thompson_select",
    "pathwise_direction",
    "pathwise_draw",
    "nu_schedule",
    "PRESETS",
    "N_INIT",
    "DESIGN_SAMPLER",
]


class PrimalU(NamedTuple):
    """``NeuralBOState.u`` for ``uncertainty="primal"``: ``chol`` ``(p, p)``, the upper Cholesky
    factor ``R`` of ``U = R^T R``."""

    chol: Array


class NoU(NamedTuple):
    """``NeuralBOState.u`` for ``uncertainty="dual"`` with dynamic features: nothing is kept (the
    Gram matrix is rebuilt from the buffer at each suggest)."""


#: ``NeuralBOState.u``: one type per form of ``U``, each field of one shape.
UForm = Union[PrimalU, DiagU, G.Factor, NoU]


def wrap_u(u, uncertainty: str, features: str = "static") -> UForm:
    """The state's ``u`` (:data:`UForm`) from the form ``init_u``/``update_u`` work on: ``R``
    ``(p, p)`` as :class:`PrimalU`, ``diag U`` ``(p,)`` as :class:`DiagU`, the dual form's
    ``ntkbo.gp.Factor`` as it is (static features) or :class:`NoU` (dynamic features)."""
    if uncertainty == "primal":
        return PrimalU(u)
    if uncertainty == "diag":
        return DiagU(u)
    return u if features == "static" else NoU()


def unwrap_u(u: UForm, dtype) -> Any:
    """The inverse of :func:`wrap_u`: the array or ``ntkbo.gp.Factor`` that ``update_u``,
    ``posterior`` and ``pathwise_direction`` take (``(0,)`` for :class:`NoU`)."""
    if isinstance(u, PrimalU):
        return u.chol
    if isinstance(u, DiagU):
        return u.diag
    if isinstance(u, NoU):
        return jnp.zeros((0,), dtype)
    return u


class NeuralBOState(NamedTuple):
    """The state of ``neural_bo`` (a pytree of arrays; the capacity-sized arrays are ``data`` and,
    for the dual form with static features, the factor ``u``).

    Attributes:
      data: raw observations (``ntkbo.data.Data``).
      bounds: ``(2, d)`` box.
      params0: ``theta_0``, the flax variables drawn in ``init`` (fixed for the run).
      params: ``theta_t``, the trained network.
      u: ``U`` in the form ``uncertainty`` keeps, a type per form (:data:`UForm`):
        ``"primal"``: :class:`PrimalU` (``chol`` ``(p, p)``, the upper Cholesky factor ``R`` of
        ``U = R^T R``); ``"diag"``: :class:`DiagU` (``diag`` ``(p,)``, the diagonal of ``U``);
        ``"dual"`` with static features: the ``ntkbo.gp.Factor`` ``(C, C)`` of the buffer's
        empirical-NTK Gram matrix (it grows with the buffer); ``"dual"`` with dynamic features:
        :class:`NoU` (nothing).
      opt_state: with ``keep_optimizer_state``, the optimiser's (optax) state after the last
        training (its initial state before the first), which the next one continues from (the
        authors' code keeps its ``torch.optim.Adam`` across rounds); ``()`` (nothing) otherwise.
    """

    data: D.Data
    bounds: Array
    params0: Params
    params: Params
    u: UForm
    opt_state: Any = ()


class NeuralBOSuggestInfo(NamedTuple):
    """The ``info`` of NeuralBO's ``suggest`` (standardised units, minimisation: the acquisition
    is ``-f~``, the negated Thompson draw of Alg. 1 line 4).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``-f~_j`` at each chosen point.
      mean: ``(q,)`` the network mean ``h`` there.
      std: ``(q,)`` ``nu_t sigma`` there.
      nu: ``()`` the exploration scale ``nu_t`` used.
      duplicates_replaced: ``()`` int32, draws whose minimiser was an observed point and that
        took their best other candidate (``ntkbo.optimize.argmax_distinct``).
    """

    acq_value: Array
    mean: Array
    std: Array
    nu: Array
    duplicates_replaced: Array


class NeuralBOUpdateInfo(NamedTuple):
    """The ``info`` of NeuralBO's ``update`` (TrainNN, Alg. 1 line 6 and Alg. 2).

    Attributes:
      train_loss: ``(2,)`` the training loss at the start and of the returned parameters.
      train_ok: ``()`` bool, the last iterate was finite and no worse than the start (``train``).
      train_r2: ``()`` the trained network's coefficient of determination on the training
        targets (``fit_r2``): how well TrainNN fits the data, which the paper's analysis assumes.
    """

    train_loss: Array
    train_ok: Array
    train_r2: Array


class NeuralBOFns(NamedTuple):
    """NeuralBO's raw functions (``build``), the hyper-parameters ``nu`` and ``lam`` as arguments
    (arrays or numbers, traceable: ``jax.vmap`` over them works):
    ``init(key, bounds, capacity, lam) -> state``; ``suggest(key, state, nu, lam) -> (x,
    NeuralBOSuggestInfo)`` with ``nu`` the exploration scale ``nu_t`` ``()`` of this round;
    ``update(state, x, y, lam) -> (state, NeuralBOUpdateInfo)``."""

    init: Callable
    suggest: Callable
    update: Callable


# ---------------------------------------------------------------------------------------------
# Building blocks (pure functions of arrays: jit/vmap them over hyper-parameters as well as keys).


def nu_repo(t: Array) -> Array:
    """The authors' increasing exploration schedule (an older build of their code, in the
    compiled files of ``phantrdat/neuralbo``, when ``nu == 0``):
    ``nu_t = sqrt(t / log(t + 1) * log(1 + t * t / log(t + 1)))``, ``~ sqrt(2 t)`` up to logs, with
    ``t`` the number of observations clamped to ``>= 1``."""
    t = jnp.maximum(jnp.asarray(t, jnp.result_type(float)), 1.0)
    a = t / jnp.log1p(t)
    return jnp.sqrt(a * jnp.log1p(t * a))


# ---------------------------------------------------------------------------------------------
# One round of Algorithm 1, as functions of arrays (the factory below only wires them together).


def network(d: int, depth: int, width: int, activation, W_std, b_std, input_map: str):
    """``(init_fn, apply_fn, feats)`` of the network ``h(x; theta)`` for a ``d``-dimensional box:
    ``ntkbo.kernels.mlp`` on ``input_dim(d, input_map)`` inputs, with ``W_std="paper"`` resolved
    to ``paper_W_std``, and ``feats(z (n, d_in), theta) -> g (n, p)`` its
    gradient features ``g(x; theta) = d h(x; theta) / d theta``."""
    d_in = input_dim(d, input_map)
    ws = paper_W_std(d_in, depth) if isinstance(W_std, str) else W_std
    init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=ws, b_std=b_std)
    return init_fn, apply_fn, grad_features(apply_fn)


def init_u(uncertainty: str, p: int, lam, dtype) -> Array:
    """``U_0 = lam I`` (Alg. 1 line 1) in the form ``uncertainty`` keeps: ``"primal"``, its upper
    Cholesky factor ``sqrt(lam) I`` ``(p, p)``; ``"diag"``, its diagonal ``(p,)``; ``"dual"``,
    nothing (``(0,)``: the Gram matrix is rebuilt from the buffer at each suggest)."""
    if uncertainty == "primal":
        return jnp.sqrt(jnp.asarray(lam, dtype)) * jnp.eye(p, dtype=dtype)
    if uncertainty == "diag":
        return jnp.full((p,), lam, dtype)
    return jnp.zeros((0,), dtype)


def update_u(u: Array, feats, theta_feat: Params, z: Array, ok: Array, uncertainty: str) -> Array:
    """``U_t = U_{t-1} + sum_i g(x_i) g(x_i)^T`` over the new points (Alg. 1 line 7; the paper's
    ``/ m`` is absorbed, ``paper_W_std``), ``g = feats(z, theta_feat)``.

    Args:
      u: the state's ``U_{t-1}`` as ``init_u`` describes it.
      feats: ``feats(z, theta) -> (q, p)`` (``network``'s third function).
      theta_feat: the parameters the features are taken at (``theta_0`` for static features).
      z: ``(q, d_in)`` the new points as the network sees them (``embed``-ded).
      ok: ``(q, 1)`` bool, rows to add (a failed evaluation or a row the buffer dropped adds
        nothing: its ``g`` is replaced by 0).
      uncertainty: ``"primal"`` (rank-``q`` ``cholesky_update`` of ``R``, ``O(q p^2)``),
        ``"diag"`` (``diag U + sum_i g_i^2``) or ``"dual"`` (``u`` returned as is).

    Returns:
      ``U_t`` in the same form and shape as ``u``.
    """
    if uncertainty == "dual":
        return u
    g = jnp.where(ok, feats(z, theta_feat), 0.0)
    if uncertainty == "primal":
        return cholesky_update(u, g)
    return u + jnp.sum(g * g, axis=0)


def targets(data: D.Data, standardize_y: bool) -> tuple[Array, Array]:
    """The training targets ``(C,)`` (the valid observations, standardised over themselves when
    ``standardize_y``; 0 elsewhere) and the valid-row mask ``(C,)`` of the buffer ``data``."""
    m = D.mask(data)
    if standardize_y:
        return standardize(data.y, m)[0], m
    return jnp.where(m, data.y, 0.0), m


def fit_r2(apply_fn, params: Params, z: Array, y: Array, mask: Array) -> Array:
    """``R^2 = 1 - sum (h(x_i) - y_i)^2 / sum (y_i - ybar)^2`` over the valid rows ``mask`` of the
    targets ``y`` ``(C,)`` (standardised, as TrainNN sees them), ``h = apply_fn(params, .)`` at the
    network's inputs ``z`` ``(C, d_in)``; NaN with fewer than two valid rows or constant targets."""
    mask_f = mask.astype(y.dtype)
    n = jnp.sum(mask_f)
    ybar = jnp.sum(mask_f * y) / jnp.maximum(n, 1.0)
    ss_res = jnp.sum(mask_f * (apply_fn(params, z)[:, 0] - y) ** 2)
    ss_tot = jnp.sum(mask_f * (y - ybar) ** 2)
    return jnp.where((n >= 2) & (ss_tot > 0), 1.0 - ss_res / jnp.where(ss_tot > 0, ss_tot, 1.0),
                     jnp.nan)


def train_nn(apply_fn, feats, params0: Params, params: Params, z: Array, y: Array, mask: Array,
             lam, *, learning_rate, num_steps: int, optimizer: str, warm_start: bool,
             reg_center: str, reduction: str, penalty=None, opt_state=None):
    """TrainNN (Alg. 2) with the options of ``neural_bo``: ``train`` from ``theta_0`` (or from
    ``theta_{t-1}`` = ``params`` when ``warm_start``), penalised by ``1/2 penalty |theta - c|^2``
    (``penalty=None``: ``lam``, the paper's) toward ``c = theta_0`` (``reg_center="init"``) or
    toward 0 (``"zero"``: weight decay), continuing the optimiser's ``opt_state`` when given.

    The learning rate: ``learning_rate`` when given; otherwise for GD
    ``gd_learning_rate(feats(z, start), mask, penalty, reduction)`` ``= 1 / (penalty + s tr K)``
    at the starting parameters, for Adam ``1e-2``.

    Full-batch gradient descent for ``num_steps = J`` steps (default 200) on the paper's objective,
    by default from the last round's ``theta_{t-1}`` (``warm_start=True``; Algorithm 2 starts from
    ``theta_0`` every round, ``warm_start=False``, ``PRESETS["paper"]``). The objective is the same
    (the penalty stays centred at ``theta_0``); only the starting point differs, and the previous
    minimiser is close to the new one, so the ``J`` steps of every round add up where GD is slow.
    docs/decisions.md (2026-11-24) has the measurements. The default learning rate is
    ``eta = 1 / (lam + s tr K)`` with ``tr K = sum_i |g(x_i; theta_start)|^2`` the trace of the
    empirical NTK Gram matrix on the data and ``s = 1`` (sum loss) or ``1/n`` (mean loss). The loss
    of the linearised network has Hessian ``s G^T G + lam I``, whose largest eigenvalue is at most
    ``lam + s tr K``, so ``eta`` is within the GD stability bound ``2 / lambda_max`` with a
    factor-two margin for the nonlinearity; it is the spirit of the theory's
    ``eta = (m lam + m L T)^-1`` (``L T`` bounds ``tr K`` when ``k(x, x) <= L``). Directions of the
    Gram matrix with small eigenvalues converge slowly (rate ``1 - eta (lam + e)`` per step), so
    ``J = 200`` fits the dominant directions and stops early in the others, as the theory's finite
    ``J`` does; ``optimizer="adam"`` (the authors' code; default learning rate ``1e-2`` on ``W^``,
    i.e. ``1e-2 / sqrt(m)`` on ``W``) fits faster. TrainNN returns the iterate with the lowest loss
    (the last one when the loss decreases monotonically, as it does for GD at the default rate), so
    a too-large ``learning_rate`` cannot make the network worse than its start; ``train_ok`` is
    False when the last iterate was worse.

    Args:
      z: ``(C, d_in)`` the buffer's inputs as the network sees them; ``y`` ``(C,)`` the targets
        and ``mask`` ``(C,)`` the valid rows (``targets``).

    Returns:
      ``train``'s ``(params, loss_start, loss, ok, opt_state)``.
    """
    start = params if warm_start else params0
    center = params0 if reg_center == "init" else jax.tree_util.tree_map(jnp.zeros_like, params0)
    penalty = lam if penalty is None else penalty
    if optimizer == "gd":
        lr = (gd_learning_rate(feats(z, start), mask, penalty, reduction)
              if learning_rate is None else learning_rate)
    else:
        lr = 1e-2 if learning_rate is None else float(learning_rate)
    return train(apply_fn, start, center, z, y, mask, penalty, lr, num_steps,
                 optimizer=optimizer, reduction=reduction, opt_state=opt_state,
                 return_opt_state=True)


def num_candidate_rows(num_candidates: int, num_best: int, num_perturbations: int,
                       capacity: int) -> int:
    """``n``, the rows ``candidates`` returns for a buffer of ``capacity`` rows (static)."""
    return num_candidates + (min(num_best, capacity) + num_perturbations if num_best else 0)


def candidates(key: Array, z: Array, y: Array, mask: Array, noise: Array, *, num_candidates: int,
               num_best: int, num_perturbations: int, perturb_scale: float,
               sampler: str) -> Array:
    """The discretisation ``D_t`` of the unit cube for one suggest (``thompson_select``):
    ``num_candidates`` quasi-random points (``sampler``: scrambled Sobol up to
    ``qmc.SOBOL_MAX_DIM`` dimensions, else Kronecker), then the ``k = min(num_best, C)`` valid rows
    of ``z`` with the smallest ``y`` (a missing one, when fewer rows are valid,
    replaced by a quasi-random point), then ``num_perturbations`` Gaussian perturbations of those,
    ``centre + perturb_scale * noise``, clipped to the cube (the centres taken in turn).

    Args:
      key: for the quasi-random points.
      z: ``(C, d)`` buffer points in the unit cube; ``y`` ``(C,)`` their targets; ``mask`` ``(C,)``.
      noise: ``(num_perturbations * d,)`` standard normal numbers.

    Returns:
      ``(n, d)`` with ``n = num_candidate_rows(num_candidates, num_best, num_perturbations, C)``.
    """
    d = z.shape[-1]
    dtype = z.dtype
    unit = unit_box(d, dtype)
    use_sobol = sampler == "sobol" and d <= qmc.SOBOL_MAX_DIM
    cand = (qmc.sobol if use_sobol else qmc.kronecker)(key, num_candidates, unit)
    if not num_best:
        return cand
    k = min(num_best, z.shape[0])  # the buffer may hold fewer rows than num_best
    _, idx = jax.lax.top_k(-jnp.where(mask, y, jnp.inf), k)
    # Missing best points (fewer observations than num_best) are replaced by candidates.
    centres = jnp.where(mask[idx][:, None], z[idx], cand[:k])
    local = centres[jnp.arange(num_perturbations) % k] + perturb_scale * noise.reshape(-1, d)
    return jnp.concatenate([cand, centres, jnp.clip(local, 0.0, 1.0)])


def map_chunks(fn: Callable[[Array], tuple[Array, ...]], x: Array, chunk: int):
    """``fn(x)`` for ``x`` ``(n, d)`` and ``fn`` mapping rows to per-row outputs ``(rows,)``,
    evaluated ``chunk`` rows at a time (``jax.lax.map`` over balanced chunks, the last padded with
    copies of row 0 and the padding cut off) when ``chunk < n``; returns ``fn``'s tuple, ``(n,)``
    each."""
    n, d = x.shape
    if chunk >= n:
        return fn(x)
    num = -(-n // chunk)
    chunk = -(-n // num)  # balanced chunks: less padding
    padded = jnp.concatenate([x, jnp.broadcast_to(x[:1], (num * chunk - n, d))])
    out = jax.lax.map(fn, padded.reshape(num, chunk, d))
    return tuple(o.reshape(-1)[:n] for o in out)


def posterior(apply_fn, feats, params: Params, theta_feat: Params, u: Array, z: Array,
              mask: Array, zc: Array, lam, *, uncertainty: str, input_map: str, jitter=None,
              chunk_size: int | None = None) -> tuple[Array, Array]:
    """The network mean ``h(x; theta_{t-1})`` and the variance ``sigma_t^2(x) = lam g^T U_{t-1}^-1
    g`` (Alg. 1 line 3, ``g = g(x; theta_feat)``) at candidates ``zc`` ``(n, d)`` of the unit cube.

    The three forms of ``uncertainty``, all ``lam g^T U^-1 g`` or its approximation:

    * ``"dual"`` (default): the GP posterior variance with the empirical NTK (at the feature
      parameters) as kernel and noise variance ``lam`` (the dual form of Alg. 1 line 3: with ``G``
      the ``(n, p)`` features,
      ``lam g^T (lam I + G^T G)^-1 g = k(x, x) - k_X(x)^T (K + lam I)^-1 k_X(x)``), on the masked
      buffer with the masking and jitter of ``ntkbo.gp`` (``dual_factor``, ``variance_dual``). With
      static features the state keeps the Cholesky factor of the buffer's Gram matrix (an
      ``ntkbo.gp.Factor`` in ``u``) and ``update`` extends it by the new rows
      (``extend_dual_factor``, ``O(C w + C^2)`` per observation); with dynamic features the Gram
      matrix changes with ``theta_t`` and is factored anew at each suggest, ``O(C^2 w + C^3)``. The
      empirical NTK is never formed from the ``(n, p)`` gradient features: for the MLP it factors by
      layer (``ntkbo.kernels.structured``, eq. (1) there), ``w = sum_l (fan_in_l + out_l)`` numbers
      per point instead of ``p`` (1012 against 6000 at width 500 on a 10-D box). A suggest costs
      ``O(N C (w + C))`` for buffer capacity ``C`` and ``N`` candidates; it follows the number of
      observations because the driver grows the capacity in powers of two. Exact (equal to the
      feature form to rounding).
    * ``"primal"``: the paper's ``p x p`` matrix. The state keeps the upper Cholesky factor ``R`` of
      ``U = R^T R`` (``p x p``, independent of the capacity), updated by rank-one Cholesky updates,
      ``O(p^2)`` per observation (``cholesky_update``); ``sigma^2 = lam |R^-T g|^2`` by a triangular
      solve, ``O(N p^2)`` per suggest, independent of ``t`` (the paper's constant memory, its Figure
      6). Never an inverse.
    * ``"diag"``: the authors' code's approximation ``U ~ diag(U) = lam + sum_i g(x_i)^2``, so
      ``sigma^2 = lam sum_j g_j^2 / (lam + sum_i g_ij^2)``; ``O(p)`` state, ``O(N p)`` per suggest.

    With static features (the default) the three exact/approximate forms use the same
    ``g(.; theta_0)`` and ``"dual"`` equals ``"primal"`` to rounding. With ``features="dynamic"``
    (NeuralTS, and the authors' code) the features are taken at the current ``theta_t``: ``"dual"``
    recomputes the whole Gram matrix at ``theta_t`` every suggest, while ``"primal"`` and ``"diag"``
    accumulate ``g(x_t; theta_{t-1})`` at the time ``x_t`` is observed, before retraining, as the
    authors' code updates its ``U^-1`` (so their ``U`` mixes features of different ``theta``).

    ``uncertainty`` picks the form:
    ``gram_variance`` with the empirical NTK of the buffer rows (``z`` ``(C, d)``, ``mask``
    ``(C,)``) from the per-layer factors (``ntkbo.kernels.structured``; the Cholesky factor is
    ``u`` when it is a carried ``ntkbo.gp.Factor``, static features, else ``gram_factor``
    computed once, before the chunks), ``variance_primal`` with the factor ``u`` or
    ``variance_diag`` with ``diag U = u``, both on the gradient features ``feats``. The
    candidates go through the network ``chunk_size`` rows at a time (``None``:
    ``chunk_entries() // p`` rows of features, ``chunk_entries() // (w + C)`` in the dual form).

    Returns:
      ``(mu, var)``, ``(n,)`` each; ``var >= 0``.
    """
    module = apply_fn.module
    if uncertainty == "dual":
        f_data = S.mlp_factors(module, theta_feat, embed(z, input_map))
        chol = u.chol if isinstance(u, G.Factor) else gram_factor(S.gram(f_data, f_data), mask,
                                                                   lam, jitter)
        row = S.factor_width(module, input_dim(z.shape[-1], input_map)) + z.shape[0]
    else:
        row = sum(leaf.size for leaf in jax.tree_util.tree_leaves(theta_feat))  # p, static

    def moments(zc):
        zc = embed(zc, input_map)
        mu = apply_fn(params, zc)[:, 0]
        if uncertainty == "dual":
            f_c = S.mlp_factors(module, theta_feat, zc)
            return mu, gram_variance(S.diagonal(f_c), S.gram(f_c, f_data), mask, chol)
        g = feats(zc, theta_feat)
        var = variance_primal(g, u, lam) if uncertainty == "primal" else variance_diag(g, u, lam)
        return mu, var

    mu, var = map_chunks(moments, zc, chunk_size or max(1, chunk_entries() // max(row, 1)))
    return mu, var


def thompson_select(mu: Array, var: Array, nu_t: Array, eps: Array, duplicate=None):
    """Thompson sampling over a candidate set (Alg. 1 lines 4-5, for minimisation): the draws
    ``f~_j(c) = h(c) + nu_t sigma(c) eps_jc``, ``sigma = sqrt(max(var, 0))``, independent per
    point (the paper's Lemma 2), and each draw's minimiser, i.e. the argmax of the acquisition
    ``-f~_j`` (``ntkbo.acquisition.thompson_independent`` with pre-drawn ``eps``).

    Such a draw is not a smooth function of ``x`` and cannot be refined by gradients (the authors'
    refinement was a no-op: their Thompson values are a new leaf tensor, so no gradient reaches
    ``x``). Each suggest evaluates ``h`` and ``sigma`` on a fresh candidate set, ``num_candidates``
    scrambled Sobol points of the unit cube (Kronecker beyond 256 dimensions), the ``num_best`` best
    observed points and ``num_perturbations`` Gaussian perturbations of them (std ``perturb_scale``
    of the box width, clipped), then takes the argmax of the acquisition: the same as
    ``ntkbo.optimize.maximize_acquisition(..., method="none")``, but written out so that ``q`` draws
    share one evaluation of the features. Candidates are evaluated in chunks of ``chunk_size`` rows
    (the draws are made after, on the whole set, so chunking does not repeat random numbers).

    **Batches** (``q > 1``): ``q`` independent per-point Thompson draws over the same candidates,
    one point each (parallel Thompson sampling, Kandasamy et al. 2018), or ``q`` independent
    pathwise draws, each minimised and refined. Two draws can pick the same candidate (most likely a
    perturbed best point where ``sigma`` is small); nothing prevents it.

    Args:
      mu: ``(n,)`` the network mean at the candidates; ``var`` ``(n,)`` the variance ``sigma^2``.
      nu_t: ``()`` the exploration scale.
      eps: ``(q, n)`` standard normal numbers, one row per draw.
      duplicate: optional ``(n,)`` bool, the candidates that are observed points: a draw whose
        minimiser is one takes its best candidate that is not (``ntkbo.optimize.argmax_distinct``).

    Returns:
      ``(i, info)``: ``i`` ``(q,)`` the chosen candidates' indices and ``info`` a
      :class:`NeuralBOSuggestInfo`: ``acq_value`` ``(q,)`` (``-f~_j`` at its maximiser), ``mean``
      ``(q,)`` (``h`` there), ``std`` ``(q,)`` (``nu_t sigma`` there), ``nu`` ``()`` and
      ``duplicates_replaced`` ``()``.
    """
    sigma = jnp.sqrt(jnp.maximum(var, 0.0))
    values = -(mu + nu_t * sigma * eps)
    if duplicate is None:
        duplicate = jnp.zeros(values.shape[-1], bool)
    i, replaced = jax.vmap(lambda v: optimize.argmax_distinct(v, duplicate))(values)
    info = NeuralBOSuggestInfo(acq_value=values[jnp.arange(eps.shape[0]), i], mean=mu[i],
                               std=nu_t * sigma[i], nu=nu_t,
                               duplicates_replaced=jnp.sum(replaced).astype(jnp.int32))
    return i, info


def pathwise_direction(key: Array, apply_fn, theta_feat: Params, u, z: Array, mask: Array, lam,
                       *, uncertainty: str, jitter=None) -> Params:
    """A draw ``v ~ N(0, lam U^-1)`` in parameter space (a pytree like ``theta_feat``), so that
    ``s(x) = g(x) . v`` (``g = g(.; theta_feat)``) is one *joint* draw of the zero-mean process
    whose covariance is ``lam g(x)^T U^-1 g(x')``: at every ``x`` its variance is the paper's
    ``sigma_t^2(x)`` (Alg. 1 line 3), and ``h + nu s`` has the marginals of line 4.

    ``thompson="pathwise"`` (not in the paper, which draws each point independently). One draw is a
    whole function ``f~(x) = h(x; theta_{t-1}) + nu_t g(x) . v`` with ``v ~ N(0, lam U^-1)`` a
    random direction in parameter space: at every ``x``, ``g(x) . v`` is
    Gaussian with variance ``lam g^T U^-1 g = sigma_t^2(x)``, so each ``f~(x)`` has exactly the
    paper's line-4 law ``N(h, nu_t^2 sigma_t^2)``; only the correlation between points differs (the
    posterior's, not none). In the dual form ``v`` comes from Matheron's rule,
    ``v = w - G^T (K + lam I)^-1 (G w + sqrt(lam) e)`` (one forward- and one reverse-mode product on
    the buffer, ``O(C p + C^2)`` per draw), and ``g(x) . v`` is the network's directional derivative
    along ``v``, one forward-mode product per point, ``O(p)``: no ``C x C`` solve per candidate,
    where the independent draw's variance costs ``O(C (w + C))`` per candidate. Being a fixed,
    almost everywhere differentiable function of ``x``, the draw is minimised as an acquisition is:
    over the same candidate set, then the ``num_restarts`` best refined by ``num_acq_steps`` steps
    of ``acq_method`` (``ntkbo.optimize.maximize_over_candidates``), i.e.
    ``x_t = argmin_{x in D} f~_t(x)`` over the box rather than over the discretisation. The proof's
    steps about the draw, Lemma 2 (a Gaussian tail at each point and a union bound over ``D_t``) and
    Lemma 4 (anti-concentration at one point), read only each point's marginal, so they hold for
    dependent draws too; minimising over the box rather than ``D_t`` was not re-checked against the
    rest of the proof of Theorem 1 (Appendix A).

    * ``"dual"``: Matheron's rule on the empirical-NTK GP with noise ``lam``:
      ``v = w - G^T (K + lam I)^-1 (G w + sqrt(lam) e)``, ``w ~ N(0, I_p)``, ``e ~ N(0, I_C)`` on
      the valid rows; by Woodbury ``Cov v = I - G^T (K + lam I)^-1 G = lam (lam I + G^T G)^-1``.
      ``G w`` is one forward-mode product on the buffer and ``G^T a`` one reverse-mode product:
      the ``(C, p)`` features are never formed. The factor is ``u`` when it is a carried
      ``ntkbo.gp.Factor``, else ``gram_factor`` of the buffer's Gram matrix (its jitter, a relative
      ``1e-10`` in float64, is left out of ``e``'s variance).
    * ``"primal"``: ``v = sqrt(lam) R^-1 w`` for ``U = R^T R`` (``u = R``).
    * ``"diag"``: ``v = sqrt(lam) w / sqrt(diag U)`` (``u = diag U``).

    Args:
      key: PRNG key; apply_fn: ``network``'s MLP; theta_feat: the feature parameters.
      u: the state's ``u`` for ``uncertainty``.
      z: ``(C, d_in)`` the buffer's points as the network sees them (``embed``-ded); ``mask``
        ``(C,)`` the valid rows (only ``"dual"`` reads them).

    Returns:
      ``v``, the pytree of ``theta_feat``'s structure.
    """
    flat, unravel = ravel_pytree(theta_feat)
    k_w, k_e = jax.random.split(key)
    w = jax.random.normal(k_w, flat.shape, flat.dtype)
    if uncertainty == "primal":
        return unravel(jnp.sqrt(lam) * linalg.solve_triangular(u, w, lower=False))
    if uncertainty == "diag":
        return unravel(jnp.sqrt(lam) * w / jnp.sqrt(u))
    h_data = lambda theta: apply_fn(theta, z)[:, 0]  # noqa: E731
    gw = jax.jvp(h_data, (theta_feat,), (unravel(w),))[1]  # G w, (C,)
    if isinstance(u, G.Factor):
        chol = u.chol
    else:
        chol = gram_factor(empirical_gram(apply_fn, theta_feat, z, z), mask, lam, jitter)
    e = jax.random.normal(k_e, gw.shape, gw.dtype)
    b = jnp.where(mask, gw + jnp.sqrt(lam) * e, 0.0)
    a = jnp.where(mask, G.cholesky_solve(chol, b), 0.0)
    (gta,) = jax.vjp(h_data, theta_feat)[1](a)  # G^T a
    return unravel(w - ravel_pytree(gta)[0])


def pathwise_draw(apply_fn, params: Params, theta_feat: Params, v: Params, zc: Array,
                  nu_t: Array, input_map: str) -> Array:
    """The joint Thompson draw ``f~(x) = h(x; theta_{t-1}) + nu_t g(x; theta_feat) . v`` at
    candidates ``zc`` ``(n, d)`` of the unit cube (``v`` from ``pathwise_direction``): ``(n,)``.
    A fixed, almost everywhere differentiable function of ``x`` (``g . v`` is the network's
    directional derivative along ``v``, one forward-mode product), so its minimiser can be
    refined by gradients; for minimisation, maximise ``-f~``."""
    x = embed(zc, input_map)
    mu = apply_fn(params, x)[:, 0]
    s = jax.jvp(lambda theta: apply_fn(theta, x)[:, 0], (theta_feat,), (v,))[1]
    return mu + nu_t * s


def nu_by_dimension(d: int) -> float:
    """``NU_LOW_DIM`` (1.0) when the dimension ``d <= NU_DIM_LIMIT`` (6), else ``NU_HIGH_DIM``
    (0.3): the default ``nu``, a Python float (``d`` is static)."""
    return NU_LOW_DIM if d <= NU_DIM_LIMIT else NU_HIGH_DIM


def nu_schedule(nu: float | str | Callable[[Array], Array]) -> Callable[[Array, int], Array]:
    """``nu_t`` as a function of the observation count ``t`` and the dimension ``d``:
    ``nu_repo(t)`` for ``"repo"``, ``nu_by_dimension(d)`` for ``"by_dimension"``, ``nu(t)`` when
    ``nu`` is callable, else the constant ``float(nu) >= 0``. Raises ``ValueError`` naming
    ``nu``."""
    if isinstance(nu, str):
        _check_choice("nu", nu, NU_SCHEDULES)
        if nu == "repo":
            return lambda t, d: nu_repo(t)
        return lambda t, d: jnp.asarray(nu_by_dimension(d), jnp.result_type(float))
    if callable(nu):
        return lambda t, d: nu(t)
    _check_positive("nu", nu, allow_zero=True)
    nu_value = float(nu)
    return lambda t, d: jnp.asarray(nu_value, jnp.result_type(float))


# ---------------------------------------------------------------------------------------------
# The algorithm.


def _neural_bo(
    *,
    width: int = 500,
    depth: int = 1,
    lam: float = 0.01,
    nu: Union[float, str, Callable[[Array], Array]] = "by_dimension",
    activation="relu",
    W_std="paper",
    b_std=None,
    features: str = "static",
    uncertainty: str = "dual",
    optimizer="gd",
    learning_rate: float | None = None,
    num_steps: int = 200,
    warm_start: bool = True,
    keep_optimizer_state: bool = False,
    reg_center: str = "init",
    train_penalty: float | None = None,
    loss_reduction: str = "sum",
    standardize_y: bool = True,
    q: int = 1,
    thompson: str = "independent",
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    num_candidates: int = 2048,
    num_best: int = 4,
    num_perturbations: int = 512,
    perturb_scale: float = 0.02,
    sampler: str = "sobol",
    input_map: str = "sphere",
    chunk_size: int | None = None,
    jitter: float | None = None,
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``neural_bo`` with its flat options (``LAYOUT`` places them in the parts)."""
    _check_positive("lam", lam)
    nu_fn = nu_schedule(nu)
    raw = _build(width=width, depth=depth, activation=activation, W_std=W_std, b_std=b_std, features=features,
                uncertainty=uncertainty, optimizer=optimizer, learning_rate=learning_rate,
                num_steps=num_steps, warm_start=warm_start,
                keep_optimizer_state=keep_optimizer_state, reg_center=reg_center,
                train_penalty=train_penalty, loss_reduction=loss_reduction,
                standardize_y=standardize_y, q=q, thompson=thompson, num_restarts=num_restarts,
                num_acq_steps=num_acq_steps, acq_method=acq_method,
                num_candidates=num_candidates, num_best=num_best,
                num_perturbations=num_perturbations, perturb_scale=perturb_scale,
                sampler=sampler, input_map=input_map, chunk_size=chunk_size, jitter=jitter,
                avoid_observed=avoid_observed)

    def init(key, bounds, capacity):
        return raw.init(key, bounds, capacity, lam)

    def suggest(key, state):
        return raw.suggest(key, state, nu_fn(state.data.count, state.bounds.shape[-1]), lam)

    def update(state, x, y):
        return raw.update(state, x, y, lam)

    return Algorithm(init, suggest, update)


def _build(
    *,
    width: int = 500,
    depth: int = 1,
    activation="relu",
    W_std="paper",
    b_std=None,
    features: str = "static",
    uncertainty: str = "dual",
    optimizer="gd",
    learning_rate: float | None = None,
    num_steps: int = 200,
    warm_start: bool = True,
    keep_optimizer_state: bool = False,
    reg_center: str = "init",
    train_penalty: float | None = None,
    loss_reduction: str = "sum",
    standardize_y: bool = True,
    q: int = 1,
    thompson: str = "independent",
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    num_candidates: int = 2048,
    num_best: int = 4,
    num_perturbations: int = 512,
    perturb_scale: float = 0.02,
    sampler: str = "sobol",
    input_map: str = "sphere",
    chunk_size: int | None = None,
    jitter: float | None = None,
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> NeuralBOFns:
    """``build`` with its flat options (``LAYOUT`` places them in the parts)."""
    _check_choice("features", features, FEATURES)
    _check_choice("uncertainty", uncertainty, UNCERTAINTIES)
    check_optimizer("optimizer", optimizer, OPTIMIZERS)
    _check_choice("reg_center", reg_center, REG_CENTERS)
    _check_choice("loss_reduction", loss_reduction, LOSS_REDUCTIONS)
    _check_choice("sampler", sampler, SAMPLERS)
    _check_choice("input_map", input_map, INPUT_MAPS)
    _check_choice("thompson", thompson, THOMPSON)
    _check_choice("acq_method", acq_method, optimize.METHODS)
    if learning_rate is not None:
        _check_positive("learning_rate", learning_rate)
    for name, value, low in (("num_steps", num_steps, 0), ("q", q, 1),
                             ("num_candidates", num_candidates, 1), ("num_best", num_best, 0),
                             ("num_perturbations", num_perturbations, 0),
                             ("num_restarts", num_restarts, 1),
                             ("num_acq_steps", num_acq_steps, 0)):
        _check_int(name, value, low)
    if thompson == "pathwise" and num_restarts > num_candidates:
        raise ValueError(f"num_restarts={num_restarts} exceeds num_candidates={num_candidates}")
    if num_perturbations and not num_best:
        raise ValueError("num_perturbations must be 0 when num_best is 0 (nothing to perturb)")
    _check_positive("perturb_scale", perturb_scale, allow_zero=True)
    if chunk_size is not None:
        _check_int("chunk_size", chunk_size, 1)
    optimize.check_avoid_observed(avoid_observed)
    for name, value in (("warm_start", warm_start), ("standardize_y", standardize_y),
                        ("keep_optimizer_state", keep_optimizer_state)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be a bool, got {value!r}")
    if keep_optimizer_state and not warm_start:
        raise ValueError("keep_optimizer_state=True needs warm_start=True (the kept optimiser "
                         "state belongs to the last round's parameters)")
    if train_penalty is not None:
        _check_positive("train_penalty", train_penalty, allow_zero=True)
    if isinstance(W_std, str):
        if W_std != "paper":
            raise ValueError(f"W_std must be 'paper' or scales, got {W_std!r}")
        mlp_spec(depth, width, activation, 1.0, b_std)  # validates the other arguments
    else:
        mlp_spec(depth, width, activation, W_std, b_std)
    net = functools.lru_cache(maxsize=None)(
        lambda d: network(d, depth, width, activation, W_std, b_std, input_map))
    train_opts: dict[str, Any]  # options of several types, passed as **train_opts
    train_opts = dict(learning_rate=learning_rate, num_steps=num_steps, optimizer=optimizer,
                      warm_start=warm_start, reg_center=reg_center, reduction=loss_reduction,
                      penalty=train_penalty)
    cand_opts: dict[str, Any]  # options of several types, passed as **cand_opts
    cand_opts = dict(num_candidates=num_candidates, num_best=num_best,
                     num_perturbations=num_perturbations, perturb_scale=perturb_scale,
                     sampler=sampler)

    # The dual form with fixed features keeps its Gram matrix's factor (``posterior``).
    carry_factor = uncertainty == "dual" and features == "static"

    def init(key, bounds, capacity, lam):
        bounds = check_bounds(bounds)
        d = bounds.shape[-1]
        _, params0 = net(d)[0](key, (-1, input_dim(d, input_map)))
        if carry_factor:
            u = G.empty_factor(capacity, bounds.dtype)
        else:
            u = wrap_u(init_u(uncertainty, ravel_pytree(params0)[0].shape[0], lam, bounds.dtype),
                       uncertainty, features)
        opt_state = make_optimizer(optimizer, 1.0).init(params0) if keep_optimizer_state else ()
        return NeuralBOState(D.empty(capacity, d, bounds.dtype), bounds, params0, params0, u,
                             opt_state)

    def update(state, x, y, lam):
        d = state.bounds.shape[-1]
        _, apply_fn, feats = net(d)
        x = jnp.asarray(x, state.bounds.dtype).reshape(-1, d)
        y = jnp.asarray(y, state.bounds.dtype).reshape(-1)
        data = D.append(state.data, x, y)
        # a failed evaluation, or a batch the buffer did not take, adds nothing to U
        add = (data.count > state.data.count) & jnp.isfinite(y)[:, None]
        theta_feat = state.params0 if features == "static" else state.params
        z = embed(to_unit(data.x, state.bounds), input_map)
        if carry_factor:
            u = extend_dual_factor(state.u, apply_fn, theta_feat, z, data, state.data.count,
                                   x.shape[0], lam, jitter)
        else:
            u = wrap_u(update_u(unwrap_u(state.u, state.bounds.dtype), feats, theta_feat,
                                embed(to_unit(x, state.bounds), input_map), add, uncertainty),
                       uncertainty, features)
        ys, m = targets(data, standardize_y)
        params, l0, l1, ok, opt_state = train_nn(
            apply_fn, feats, state.params0, state.params, z, ys, m, lam,
            opt_state=state.opt_state if keep_optimizer_state else None, **train_opts)
        info = NeuralBOUpdateInfo(jnp.stack([l0, l1]), ok, fit_r2(apply_fn, params, z, ys, m))
        return state._replace(data=data, u=u, params=params,
                              opt_state=opt_state if keep_optimizer_state else state.opt_state
                              ), info

    def suggest(key, state, nu, lam):
        d = state.bounds.shape[-1]
        _, apply_fn, feats = net(d)
        k_cand, k_noise = jax.random.split(key)
        data = state.data
        z = to_unit(data.x, state.bounds)
        ys, m = targets(data, standardize_y)
        n = num_candidate_rows(num_candidates, num_best, num_perturbations, data.capacity)
        theta_feat = state.params0 if features == "static" else state.params
        post = functools.partial(posterior, apply_fn, feats, state.params, theta_feat,
                                 unwrap_u(state.u, state.bounds.dtype), z, m, lam=lam,
                                 uncertainty=uncertainty, input_map=input_map, jitter=jitter,
                                 chunk_size=chunk_size)
        nu_t = jnp.asarray(nu, state.bounds.dtype)
        if thompson == "pathwise":
            noise = jax.random.normal(k_noise, (num_perturbations * d,), state.bounds.dtype)
            cand = candidates(k_cand, z, ys, m, noise, **cand_opts)
            zs, values, replaced = pathwise_select(k_noise, apply_fn, state, theta_feat, z, m,
                                                   cand, nu_t, lam)
            mu, var = post(zc=zs)
            info = NeuralBOSuggestInfo(values, mu, nu_t * jnp.sqrt(jnp.maximum(var, 0.0)), nu_t,
                                       replaced)
        else:
            # One normal draw for the perturbations and the Thompson noise (each random-number
            # call site costs about a second of XLA compile time on CPU).
            noise = jax.random.normal(k_noise, (num_perturbations * d + q * n,),
                                      state.bounds.dtype)
            cand = candidates(k_cand, z, ys, m, noise[: num_perturbations * d], **cand_opts)
            mu, var = post(zc=cand)
            unit = unit_box(z.shape[-1], z.dtype)
            observed = optimize.guarded(avoid_observed, z, m)
            dup = None if observed is None else optimize.near_observed(cand, observed, unit)
            i, info = thompson_select(mu, var, nu_t, noise[num_perturbations * d:].reshape(q, n),
                                      dup)
            zs = cand[i]
        return from_unit(zs, state.bounds), info

    def pathwise_select(key, apply_fn, state, theta_feat, z, m, cand, nu_t, lam):
        """``q`` joint draws (``pathwise_direction``), each minimised over ``cand`` then refined
        (``ntkbo.optimize.maximize_over_candidates`` on ``-f~``; with ``avoid_observed`` never
        at an observed point):
        ``(zs (q, d), -f~ (q,), replaced ())``."""
        zb = embed(z, input_map)
        unit = unit_box(z.shape[-1], z.dtype)
        zs, values, replaced = [], [], []
        for k in jax.random.split(jax.random.fold_in(key, 1), q):
            v = pathwise_direction(k, apply_fn, theta_feat, unwrap_u(state.u, z.dtype), zb, m, lam,
                                   uncertainty=uncertainty, jitter=jitter)
            acq = lambda zc, v=v: -pathwise_draw(apply_fn, state.params, theta_feat, v,  # noqa: E731
                                                 zc, nu_t, input_map)
            zj, val, opt_info = optimize.maximize_over_candidates(
                acq, unit, cand, num_restarts=num_restarts, num_steps=num_acq_steps,
                method=acq_method, chunk_size=chunk_size,
                observed=optimize.guarded(avoid_observed, z, m))
            zs.append(zj)
            values.append(val)
            replaced.append(opt_info.replaced)
        return jnp.stack(zs), jnp.stack(values), jnp.sum(jnp.stack(replaced)).astype(jnp.int32)

    return NeuralBOFns(init, suggest, update)


@composed(_neural_bo, LAYOUT)
def neural_bo(
    *,
    network: PartOption = None,
    lam: float = 0.01,
    nu: Union[float, str, Callable[[Array], Array]] = "by_dimension",
    features: str = "static",
    uncertainty: str = "dual",
    training: PartOption = None,
    standardize_y: bool = True,
    q: int = 1,
    thompson: str = "independent",
    search: PartOption = None,
    input_map: str = "sphere",
    jitter: float | None = None,
) -> Algorithm:
    """NeuralBO (see the module docstring for the formulas, conventions and defaults).

    Each step of a round is a module function of arrays, which the tests call directly: ``init_u``
    and ``update_u`` (``U_0 = lam I`` and line 7), ``targets`` and ``train_nn`` (TrainNN, line 6,
    over ``train``), ``candidates`` (the set ``D_t``), ``posterior`` (``h`` and ``sigma^2``, line 3,
    over ``variance_dual`` / ``variance_primal`` / ``variance_diag``) and ``thompson_select`` (lines
    4-5); ``neural_bo`` validates its options and wires them into ``init``, ``update`` and
    ``suggest``.

    Args:
      network: the network (``ntkbo.parts.Network``): ``width`` ``m`` (default and paper 500),
        ``depth`` hidden layers (1, the paper's ``L = 2``), ``activation`` (ReLU), ``W_std``
        (``"paper"``: ``(sqrt(d_in), 1, ..., 1)`` for ``d_in`` network inputs, Section 7's
        network, every weight ``N(0, 1/m)`` and the output times ``sqrt(m)``, in ntkbo's NTK
        parameterisation, ``ntkbo.nets.paper_W_std``; or scales as in ``ntkbo.kernels.mlp``),
        ``b_std`` (``None``, the paper's: no biases).
      training: TrainNN (``ntkbo.parts.Training``, ``train_nn``): ``optimizer`` ``"gd"``
        (default, paper), ``"adam"`` or an ``optax.GradientTransformation``; ``learning_rate``
        of a named one (``None``: GD's ``1 / (lam + s tr K)``,
        Adam's ``1e-2``); ``num_steps`` ``J`` (200); ``warm_start`` (``True``: from
        ``theta_{t-1}``; the paper's is ``False``, from ``theta_0``); ``keep_optimizer_state``
        (``False``; Adam's moments across rounds, as the authors' code, needs ``warm_start``);
        ``reg_center`` (``"init"``, the paper's penalty toward ``theta_0``, or ``"zero"``);
        ``penalty`` (``None``: ``lam``, the paper's ``m lam / 2 |theta - theta_0|^2`` with its
        ``m`` absorbed; the authors' Adam ``weight_decay = wd`` with their ``nn.MSELoss()`` is
        ``wd / (2 width)`` with ``loss_reduction="mean"``, ``PRESETS["authors"]``);
        ``loss_reduction`` (``"sum"``, paper, or ``"mean"``).
      search: the candidate set ``D_t`` (``ntkbo.parts.Search``, ``candidates``):
        ``num_candidates`` Sobol points (2048), ``num_best`` best observed points (4) and
        ``num_perturbations`` Gaussian perturbations of them (512) of std ``perturb_scale``
        (0.02 of the box), ``sampler`` (``"sobol"``, scrambled, Kronecker beyond 256
        dimensions, or ``"kronecker"``), ``chunk_size`` (``None``: about ``2^22 / p`` rows per
        chunk); with ``thompson="pathwise"`` also ``num_restarts`` (4) best candidates refined
        by ``method`` (``"pgd"``) for ``num_steps`` (30); ``avoid_observed`` (``"auto"``: on
        for a noise-free problem, off for a noisy one; ``True``: a draw whose minimiser is an
        observed point takes its best other candidate, ``ntkbo.optimize``; ``False``, the
        paper's and both presets': each draw's arg-max).
      lam: ``lambda``: ``U_0 = lam I``, the variance prefactor, the training penalty (paper: 0.01).
      nu: exploration ``nu_t``: a number (paper grid ``{0.1, 1, 10}``), ``"by_dimension"`` (the
        default: 1.0 when ``d <= 6``, else 0.3, ``nu_by_dimension``), ``"repo"`` for the
        authors' increasing schedule ``nu_repo``, or a function of the observation count ``t``
        (int array).
      features: ``"static"`` (paper: ``g(x; theta_0)``) or ``"dynamic"`` (``g(x; theta_t)``).
      uncertainty: how ``sigma^2`` of Alg. 1 line 3 is computed (``posterior``): ``"dual"`` (the
        default: exact, through the ``n x n`` Gram matrix of the features, ``variance_dual``),
        ``"primal"`` (exact, through the ``p x p`` matrix ``U`` as the paper writes it:
        constant memory in ``n``, ``O(p^2)``) or ``"diag"`` (only ``U``'s diagonal kept, the
        cheap approximation of NeuralUCB's experiments: ``lam sum_j g_j^2 / U_jj``).
      standardize_y: standardise the observations before training.
      q: points per suggest (``q`` independent draws).
      thompson: ``"independent"`` (the paper's per-point draws over the candidates, Lemma 2) or
        ``"pathwise"`` (one joint draw with the same marginals, a function of ``x`` whose
        minimiser is refined by gradients; ``pathwise_direction``).
      input_map: what the network sees of a point, after the box is mapped to the unit cube:
        ``"sphere"`` (default: a unit-norm vector of ``d + 1`` inputs, ``to_sphere``), ``"cube"``
        (the unit-cube coordinates themselves) or ``"centered"`` (``[-1, 1]^d``, the authors'
        code); the map is ``ntkbo.algorithms.observations.embed``.
      jitter: relative Cholesky jitter of the dual form (``None``: ``ntkbo.gp.default_jitter``).

    Returns:
      An ``ntkbo.Algorithm``: ``suggest`` returns ``(x (q, d), NeuralBOSuggestInfo)``,
      ``update`` returns ``(state, NeuralBOUpdateInfo)`` (TrainNN's losses and fit). Its
      functions are ``build``'s raw ones with ``nu_t`` from the ``nu`` schedule and ``lam``
      fixed.

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _neural_bo(**LAYOUT.flatten(locals(), "neural_bo"))


@composed(_build, LAYOUT)
def build(
    *,
    network: PartOption = None,
    features: str = "static",
    uncertainty: str = "dual",
    training: PartOption = None,
    standardize_y: bool = True,
    q: int = 1,
    thompson: str = "independent",
    search: PartOption = None,
    input_map: str = "sphere",
    jitter: float | None = None,
) -> NeuralBOFns:
    """NeuralBO's raw ``init``, ``suggest`` and ``update`` (``NeuralBOFns``) for ``neural_bo``'s
    structural options (the same parts and options but ``nu`` and ``lam``, validated here), with
    the continuous hyper-parameters as arguments of the functions, blackjax's ``build_kernel``
    pattern: ``nu`` (the round's exploration scale ``nu_t`` of Alg. 1 line 4) and ``lam``
    (``U_0 = lam I``, the variance prefactor and the training penalty). ``neural_bo(nu=...,
    lam=..., **options)`` is ``build(**options)`` with ``nu_t`` from its schedule and ``lam``
    fixed, so a loop of these functions under ``jax.vmap`` over ``nu`` or ``lam`` runs each
    value's computation. The hyper-parameters are not validated (they may be traced): ``nu >= 0``
    and ``lam > 0``.

    Raises:
      ValueError: an invalid option, naming it.
    """
    return _build(**LAYOUT.flatten(locals(), "build"))
