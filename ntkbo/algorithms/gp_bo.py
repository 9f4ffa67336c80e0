"""Bayesian optimisation with an exact GP: the standard GP baseline and the infinite-width NTK-GP.

Both are one *kernel model*: inputs mapped to the unit cube, outputs standardised
(``observations.standardized_data``), an exact posterior from ``ntkbo.gp``, an acquisition
maximised by ``ntkbo.optimize``; they differ in the kernel and the fitted hyper-parameters:

* ``gp``: a stationary kernel (RBF by default) with ARD or shared lengthscales ``ell``; ``ell``,
  signal and noise fitted by maximum a posteriori, the log marginal likelihood (Rasmussen and
  Williams 2006, eq. 2.30) plus the dimension-scaled log priors of Hvarfner, Hellsten and Nardi
  (2024, "Vanilla Bayesian optimization performs great in high dimensions"), as BoTorch's
  ``SingleTaskGP`` (>= 0.12), each prior a density of the hyper-parameter's value::

      ell_i ~ LogNormal(sqrt(2) + log(d) / 2, sqrt(3)),   ell_i >= 0.025,
      noise ~ LogNormal(-4, 1),                           noise >= 1e-4 (standardised units),
      signal ~ LogNormal(0, 1).

  The prior mean is 0, or a fitted constant (``fit={"mean": "constant"}``, BoTorch's
  ``ConstantMean``, profiled out in closed form: ``ntkbo.gp.profiled_log_marginal_likelihood``).

* ``ntk_gp``: the exact infinite-width NTK of an MLP (``ntkbo.kernels.mlp``) or any
  neural-tangents ``kernel_fn``, on inputs mapped to the sphere or ``[-1, 1]^d``; the signal scale
  and the noise ``lam`` are fixed by default (as in the papers), optionally fitted by the same MAP.

**Refit schedule** (``refit_due``): the hyper-parameters are refitted (``fit_hyperparameters``)
after every update while the number of observations ``n <= refit_until`` (default 100), then only
when ``n`` crosses a point of the grid ``ceil(refit_until * refit_ratio^k)``, ``k = 1, 2, ...``
(default ratio 1.1: a refit per 10% more data). Between refits the Cholesky factor of the state
(``KernelBOState``) is extended by the new rows, ``O(n^2 q)`` instead of ``O(n^3)``.

**Sign convention**: ntkbo minimises ``f``; the acquisitions of ``ntkbo.acquisition`` are maximised:
EI of the improvement below the best observation (maximised through its logarithm by default,
LogEI of Ament et al. 2023: the same maximiser, with gradients where EI underflows to 0), UCB as
the negated lower confidence bound ``-(mu - sqrt(beta) sigma)``, TS as the negated sample.

**Batches** (``q > 1``): ``q`` joint posterior draws over one candidate set for Thompson
sampling (Kandasamy et al. 2018), each taking its best candidate not yet taken; otherwise the
*kriging believer* (Ginsbourger et al. 2010): each point is conditioned on at its posterior mean.

Presets: ``get("gp_ei", preset="paper")`` (and ``gp_ucb``, ``gp_ts``, ``gp_pi``) is the papers'
GP baseline (:data:`PRESETS_BY_NAME`: squared-exponential ARD kernel, refitted every round, EI).
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ntkbo.validation import check_bounds, check_choice, check_int, check_number
from ntkbo import acquisition as acq
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo import optimize, qmc
from ntkbo.algorithms.constrained_ei import constrained_kernel_bo
# to_unit, from_unit, to_sphere, standardize live in observations; gp_bo.<name> still works.
from ntkbo.algorithms.observations import (best_points, from_unit, standardize,  # noqa: F401
                                          standardized_data, to_sphere, to_unit, unit_box)
from ntkbo.base import Algorithm, NoInfo, StagedUpdate
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.kernels.stationary import STATIONARY

Array = jax.Array

ACQUISITIONS = ("ucb", "ei", "logei", "pi", "ts", "mean", "cei")
FIT_METHODS = ("lbfgs", "adam")
#: Lower bounds of BoTorch's defaults (``gpytorch_modules.py``): lengthscale, noise variance.
MIN_LENGTHSCALE = 0.025
MIN_NOISE = 1e-4
#: The largest ``n`` the refit grid covers (``ntkbo.loop.MAX_BUDGET``); beyond it, no refits.
_GRID_MAX = 1 << 16

#: Named settings of the papers' GP baselines, per registry name (``ntkbo.algorithms.get("gp_ei",
#: preset="paper", **options)``; the options given override them; ``ntkbo.algorithms.presets``).
#: Keyed by the names of the baselines the papers ran (GP-EI, GP-UCB, GP-TS, GP-PI), one setting
#: for all: they never set ``acquisition``, which the names fix; ``gp`` itself, whose acquisition
#: is open, and ``ntk_gp`` (no paper runs it as a baseline) have none.
#:
#: * ``"paper"``: the squared-exponential kernel of NeuralBO's, STO-BNTS's and the Neural Greedy
#:   paper's baselines (NeuralBO, Section 7; STO-BNTS, Section 5; Be Greedy, App. F.1; the
#:   thesis's Neural-BO chapter, Section 3.5), ARD (``"rbf"``), its hyper-parameters fitted to the
#:   data after every observation (Be Greedy, App. F.1: "refit from the data"; ``refit_ratio=1``),
#:   EI itself (GPyOpt, BoTorch's and GPflow's EI of the time; LogEI is of 2023).
#:
#: Not in the preset: the thesis's PINN-BO chapter (Section 5.4.1) used a Matern kernel
#: (``get("gp_ei", kernel="matern52", ard=True)``); GO-UCB's baselines used library defaults it
#: does not state (Liu and Wang 2023, Section 6); UCB's ``beta``, which no paper states (STO-BNTS's
#: code: ``mean + 1.0
#: std``, i.e. ``beta=1``). Not expressible: the libraries' fits (GPflow's plain maximum likelihood,
#: the GPyTorch priors of BoTorch before 0.12, GPy's refits every 20 iterations with 10 restarts in
#: STO-BNTS's code), for which ntkbo's MAP with dimension-scaled priors and L-BFGS stands; their
#: acquisition optimisers, which the papers do not describe.
_PAPER_GP = dict(kernel="rbf", fit=dict(enabled=True, refit_ratio=1.0, ard=True),
                 search=dict(log_ei=False, avoid_observed=False))
PRESETS_BY_NAME = {name: {"paper": _PAPER_GP} for name in ("gp_ei", "gp_ucb", "gp_ts", "gp_pi")}


class KernelBOState(NamedTuple):
    """``data``: raw observations; ``bounds`` ``(2, d)``; ``params``: unconstrained hyper-parameters;
    ``factor``: the Cholesky factor of the valid observations' Gram matrix in the unit cube under
    ``params`` (``ntkbo.gp.Factor``).

    ``update`` extends ``factor`` by the new rows (``ntkbo.gp.factor_append``, ``O(n^2 q)``) and
    refactors it (``O(n^3)``) only when a refit changed the hyper-parameters; ``suggest``
    re-standardises the outputs and solves for them (``ntkbo.gp.condition``, ``O(n^2)``). Outputs do
    not enter the factor. ``ntk_gp`` with its default fixed hyper-parameters never refactors.
    Inside ``jax.vmap`` a refit round is a select, so a vmapped ``gp`` pays for both branches."""

    data: D.Data
    bounds: Array
    params: Any
    factor: G.Factor


def _lognormal_logpdf(x, loc, scale):
    """Log density of ``LogNormal(loc, scale^2)`` at the values ``x > 0``, summed:
    ``log N(log x; loc, scale^2) - log x``. This is how GPyTorch's ``LogNormalPrior.log_prob``
    enters BoTorch's MAP objective (the prior evaluated at the hyper-parameter's value), so the
    prior alone is maximised at its mode ``exp(loc - scale^2)`` (BoTorch's initial values), not
    at its median ``exp(loc)``: for ``gp``'s lengthscale prior in d = 20 that is 0.92, not 18."""
    log_x = jnp.log(x)
    z = (log_x - loc) / scale
    return jnp.sum(-0.5 * z**2 - log_x - jnp.log(scale) - 0.5 * math.log(2.0 * math.pi))


def _log_space_normal_logpdf(log_x, loc, scale):
    """Log density of ``log x`` under ``N(loc, scale^2)``, up to a constant: a prior centred (in
    log space) on ``exp(loc)``, maximised there (``ntk_gp``'s weak priors on fixed values)."""
    return -0.5 * jnp.sum(((log_x - loc) / scale) ** 2)


class _Model(NamedTuple):
    """What distinguishes one kernel model from another (all pure functions)."""

    kernel: Callable[[Any, Array, Array], Array]  # (params, z1, z2) -> (n1, n2)
    noise: Callable[[Any], Array]  # params -> lam
    init_params: Callable[[int, Any], Any]  # (d, dtype) -> params
    log_prior: Callable[[Any, int], Array]  # (params, d) -> scalar
    fitted: Callable[[Any], Any]  # params -> mask pytree of which leaves are fitted (bool)
    # (d, dtype) -> params with a leading axis of starts: the fit's starts besides the warm one
    restarts: Optional[Callable[[int, Any], Any]] = None
    # (model, params, data, num_steps, jitter, restarts) -> (params, loss): a fit other than
    # fit_hyperparameters (gp's ard="auto": select_by_bic); None: fit_hyperparameters
    fit: Optional[Callable] = None
    # the prior mean of the standardised outputs: "zero", or "constant", fitted with the other
    # hyper-parameters by profiling it out of the likelihood (ntkbo.gp.gls_mean)
    mean: str = "zero"


MEANS = ("zero", "constant")


def _log_likelihood(model: _Model, params, data: D.Data, jitter=None) -> Array:
    """``log p(y | X, theta)`` of the model's prior mean: mean 0
    (``ntkbo.gp.log_marginal_likelihood``) or, for ``model.mean == "constant"``, the constant
    mean profiled out (``ntkbo.gp.profiled_log_marginal_likelihood``)."""
    kernel = lambda a, b: model.kernel(params, a, b)  # noqa: E731
    if model.mean == "constant":
        return G.profiled_log_marginal_likelihood(kernel, data, model.noise(params), jitter=jitter)
    return G.log_marginal_likelihood(kernel, data, model.noise(params), jitter=jitter)


def fitted_mean(model: _Model, factor: G.Factor, data: D.Data) -> Array | float:
    """The model's prior mean of the standardised ``data`` whose ``Factor`` is ``factor``:
    ``0.0`` for ``model.mean == "zero"``; for ``"constant"`` the generalised least squares mean
    ``m* = 1^T A^-1 y / 1^T A^-1 1`` of the valid rows (``ntkbo.gp.gls_mean``), the maximiser of
    the likelihood that the fit maximised with it profiled out."""
    return G.gls_mean(factor, data) if model.mean == "constant" else 0.0


def posterior_mean(model: _Model, state: KernelBOState, x: Array) -> Array:
    """The posterior mean ``(n,)`` of the objective at ``x`` ``(n, d)`` (the box's points) in
    ``y``'s units: ``mean + std * mu(z)``, ``z`` the points in the unit cube and
    ``mu(z) = m + k(z, Z) (K + lam I)^-1 (y_s - m)`` (Rasmussen and Williams eq. 2.25 with the
    prior mean ``m`` of :func:`fitted_mean`) on the standardised observations ``y_s = (y -
    mean) / std`` (``standardized_data``), under the state's hyper-parameters and factor
    (``ntkbo.gp.condition``, ``ntkbo.gp.mean``). ``Algorithm.posterior_mean`` of ``gp`` and
    ``ntk_gp``."""
    data, mean, std = standardized_data(state.data, state.bounds)
    post = G.condition(state.factor, data, prior_mean=fitted_mean(model, state.factor, data))
    mu = G.mean(lambda a, b: model.kernel(state.params, a, b), post, to_unit(x, state.bounds))
    return mean + std * mu


def neg_log_posterior(model: _Model, params, data: D.Data, jitter=None) -> Array:
    """``-(log p(y | X, theta) + log p(theta))`` (R&W eq. 2.30 plus the model's log prior) of the
    standardised unit-cube ``data``; ``+inf`` where it is not finite (a failed factorisation).
    With ``model.mean == "constant"`` the likelihood is maximised over the constant mean in
    closed form (``_log_likelihood``; no prior on the mean)."""
    lml = _log_likelihood(model, params, data, jitter)
    v = -(lml + model.log_prior(params, data.dim))
    return jnp.where(jnp.isfinite(v), v, jnp.inf)


def _masked(params, anchor, mask_tree):
    """``params`` on the fitted leaves, ``anchor`` on the others."""
    return jax.tree_util.tree_map(lambda new, old, f: new if f else old, params, anchor, mask_tree)


#: ``fit_hyperparameters``'s stopping rule: a start stops once an L-BFGS iteration lowers the
#: negative log posterior by at most ``FIT_FTOL * max(|value|, 1)`` (or raises it: the line search
#: found no decrease) or the gradient's largest entry is at most ``FIT_GTOL``; chosen on tuning keys
#: (docs/decisions.md, 2026-11-27).
FIT_FTOL = 1e-6
FIT_GTOL = 1e-4
#: ``fit_hyperparameters``'s backtracking line search (``optax.scale_by_backtracking_linesearch``):
#: at most 7 backtracking steps, each shrinking the step by 0.6 (down to 0.028 of L-BFGS's step,
#: as 15 by 0.8 did, in half the evaluations when the search fails, as it does at a converged
#: float32 iterate); chosen on tuning keys (docs/decisions.md, 2026-11-27).
FIT_LINESEARCH: dict[str, Any] = dict(max_backtracking_steps=7, decrease_factor=0.6)


def fit_hyperparameters(model: _Model, params, data: D.Data, *, num_steps: int, jitter=None,
                        restarts: bool | Array = True) -> tuple[Any, Array]:
    """MAP hyper-parameters by L-BFGS from several starts, each stopped when it has converged.

    ``optax.lbfgs`` (backtracking line search) on the negative log posterior of the unconstrained
    (log) hyper-parameters (``neg_log_posterior``), at most ``num_steps`` iterations from each
    start, fewer once an iteration lowers the objective by at most ``FIT_FTOL`` relative (or not at
    all: the line search failed) or the gradient's largest entry is at most ``FIT_GTOL``. The
    starts run one after another (``jax.lax.map``), each paying only for its own iterations: the
    previous round's values (the warm start; the prior medians at the first fit), which usually
    converge in a few iterations, and, with ``restarts``, the model's restarts (for ``gp`` the
    prior modes, BoTorch's initial values). ``kernel_bo`` passes ``restarts`` while
    ``n <= refit_until`` and the warm start alone past it. ``fit_adam`` is the former fit.

    Each iteration evaluates the objective and its gradient once per line-search trial (the values
    the line search stored are reused, never recomputed).

    Args:
      model: the kernel model; params: the current (warm-start) unconstrained hyper-parameters;
      data: standardised observations in the unit cube (``observations.standardized_data``);
      num_steps: the most L-BFGS iterations per start (static).
      restarts: also start from ``model.restarts``: a Python bool, or a traced bool ``()``, for
        which the restarts are skipped at run time (one compiled fit serves both choices).

    Returns:
      ``(params, loss)``: the iterate of the lowest ``neg_log_posterior`` over every start and
      iteration (the warm start itself included, so a fit never makes the objective worse), and
      that loss. Leaves that ``model.fitted`` marks ``False`` keep their values.
    """
    starts = jax.tree_util.tree_map(lambda a: a[None], params)
    active = None
    if restarts is not False and model.restarts is not None:
        extra = _restart_starts(model, params, data)
        starts = jax.tree_util.tree_map(lambda w, e: jnp.concatenate([w, e]), starts, extra)
        if restarts is not True:
            n_extra = jax.tree_util.tree_leaves(extra)[0].shape[0]
            active = jnp.concatenate([jnp.ones((1,), bool),
                                      jnp.broadcast_to(jnp.asarray(restarts, bool), (n_extra,))])
    return _lbfgs_from(model, params, starts, data, num_steps, jitter, active)


def _restart_starts(model: _Model, params, data: D.Data):
    """``model.restarts`` (a leading axis of starts), ``params``' values on the leaves that
    ``model.fitted`` marks ``False``."""
    if model.restarts is None:
        raise ValueError("the model has no restarts")
    extra = model.restarts(data.dim, data.y.dtype)
    return jax.tree_util.tree_map(lambda w, e, f: e if f else jnp.broadcast_to(w, e.shape),
                                  params, extra, model.fitted(params))


def _fit_loss(model: _Model, anchor, mask_tree, data: D.Data, jitter):
    """The objective of a fit: ``neg_log_posterior`` with the leaves that ``mask_tree`` marks
    ``False`` at ``anchor``'s values, in the default float dtype: optax's line search transposes
    the objective with the cotangent ``1.0``, which under ``jax_enable_x64`` is float64 and is
    refused against a float32 value (float32 data with x64 on); a no-op when the dtypes agree."""

    def loss(p):
        value = neg_log_posterior(model, _masked(p, anchor, mask_tree), data, jitter)
        return value.astype(jnp.result_type(float))

    return loss


def _lbfgs(loss, p0, mask_tree, num_steps: int) -> tuple[Any, Array]:
    """L-BFGS on ``loss`` from ``p0`` with ``fit_hyperparameters``'s stopping rule: the best
    iterate and its loss. The gradient is zero on the leaves ``mask_tree`` marks ``False`` and
    where it is not finite (a failed factorisation)."""

    def clean(g):
        g = jax.tree_util.tree_map(lambda gi, f: gi if f else jnp.zeros_like(gi), g, mask_tree)
        return jax.tree_util.tree_map(lambda gi: jnp.where(jnp.isfinite(gi), gi, 0.0), g)

    def max_abs(g):
        return jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in jax.tree_util.tree_leaves(g)]))

    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
        store_grad=True, **FIT_LINESEARCH))
    v0, g0 = jax.value_and_grad(loss)(p0)
    g0 = clean(g0)

    def cond(c):
        return (c[6] < num_steps) & ~c[7]

    def body(c):
        p, state, v, g, best_p, best_v, it, _ = c
        updates, state = opt.update(g, state, p, value=v, grad=g, value_fn=loss)
        p = optax.apply_updates(p, updates)
        # The line search evaluated the objective and its gradient at the new point.
        v_new = jnp.asarray(optax.tree.get(state, "value"), v.dtype)
        g = clean(optax.tree.get(state, "grad"))
        better = v_new < best_v
        best_p = jax.tree_util.tree_map(lambda a, b: jnp.where(better, a, b), p, best_p)
        best_v = jnp.where(better, v_new, best_v)
        progress = (v - v_new) > FIT_FTOL * jnp.maximum(jnp.abs(v_new), 1.0)
        done = ~progress | ~jnp.isfinite(v_new) | (max_abs(g) <= FIT_GTOL)
        return p, state, v_new, g, best_p, best_v, it + 1, done

    start = (p0, opt.init(p0), v0, g0, p0, v0, jnp.zeros((), jnp.int32),
             ~jnp.isfinite(v0) | (max_abs(g0) <= FIT_GTOL))
    out = jax.lax.while_loop(cond, body, start)
    return out[4], out[5]


def _lbfgs_or_skip(loss, p0, mask_tree, num_steps: int, active) -> tuple[Any, Array]:
    """``_lbfgs`` if ``active`` (a traced bool), else ``(p0, +inf)`` at no cost (a select that
    runs both under ``jax.vmap``)."""
    if active is None:
        return _lbfgs(loss, p0, mask_tree, num_steps)
    skipped = lambda p: (p, jnp.full((), jnp.inf, jnp.result_type(float)))  # noqa: E731
    return jax.lax.cond(active, lambda p: _lbfgs(loss, p, mask_tree, num_steps), skipped, p0)


def _lbfgs_from(model: _Model, anchor, starts, data: D.Data, num_steps: int, jitter,
                active=None) -> tuple[Any, Array]:
    """``fit_hyperparameters``'s L-BFGS from each of ``starts`` (a leading axis), one after
    another; the best iterate over all of them and its loss (the first on ties). ``active``:
    ``None``, or a traced bool per start (a skipped start's loss is ``+inf``). Leaves that
    ``model.fitted`` marks ``False`` keep ``anchor``'s values."""
    mask_tree = model.fitted(anchor)
    loss = _fit_loss(model, anchor, mask_tree, data, jitter)
    if active is None:
        ps, vs = jax.lax.map(lambda p0: _lbfgs(loss, p0, mask_tree, num_steps), starts)
    else:
        ps, vs = jax.lax.map(lambda a: _lbfgs_or_skip(loss, a[0], mask_tree, num_steps, a[1]),
                             (starts, active))
    i = jnp.argmin(vs)
    best = jax.tree_util.tree_map(lambda a: a[i], ps)
    return _masked(best, anchor, mask_tree), vs[i]


def num_hyperparameters(model: _Model, params) -> int:
    """How many hyper-parameters the fit moves (the leaves ``model.fitted`` marks, counted by
    size, plus one for a fitted constant mean, ``model.mean == "constant"``): the ``k`` of a
    Bayesian information criterion."""
    sizes = jax.tree_util.tree_map(lambda a, f: a.size if f else 0, params, model.fitted(params))
    return int(sum(jax.tree_util.tree_leaves(sizes))) + int(model.mean == "constant")


def bic(model: _Model, params, data: D.Data, jitter=None, k=None) -> Array:
    """Schwarz's criterion ``-2 log p(y | X, theta) + k log n`` of ``data`` (standardised, unit
    cube) at ``params``: the likelihood without the priors (at the fitted constant mean for
    ``model.mean == "constant"``, ``_log_likelihood``), ``k`` hyper-parameters (default
    ``num_hyperparameters``, which counts that mean), ``n`` the valid observations. Lower is
    better; ``+inf`` where the likelihood is not finite."""
    lml = _log_likelihood(model, params, data, jitter)
    n = jnp.sum(D.mask(data)).astype(lml.dtype)
    k = num_hyperparameters(model, params) if k is None else k
    v = -2.0 * lml + k * jnp.log(jnp.maximum(n, 1.0))
    return jnp.where(jnp.isfinite(v), v, jnp.inf)


#: ``select_by_bic``'s ARD restarts are skipped when the warm-started ARD fit's criterion exceeds
#: the shared fit's by at least this margin (``bic`` units) and at most the extra parameters'
#: penalty ``(d - 1) log n``; chosen on tuning keys (docs/decisions.md, 2026-11-27).
BIC_RESTART_MARGIN = 0.0


def select_by_bic(shared: _Model):
    """A ``_Model.fit`` for ARD models that also fits ``shared``, the same model with one
    lengthscale for all dimensions (``log_ell`` of shape ``(1,)``), and keeps whichever has the
    lower ``bic`` (ties: the shared one, the simpler model). Each criterion is evaluated at that
    model's MAP fit (the priors included), not at its maximum-likelihood estimate as Schwarz's
    derivation assumes: the likelihood term is the MAP fit's, at most the maximum's, so a model
    whose prior pulls harder is penalised a little more. The result always has the ARD shape
    ``(d,)``: a shared lengthscale is stored repeated, which is the same kernel, so the factor,
    the acquisition and the next warm start need no other code.

    The fits run one after another: the ARD model from the warm start; the shared model from the
    ARD fit's mean ``log_ell`` and, with ``restarts``, from its restart (the better of the two is
    kept). With ``restarts``, the ARD model is then fitted from its own restart too (the better of
    its two fits is kept) unless its criterion exceeds the shared fit's by at least
    ``BIC_RESTART_MARGIN`` and at most the extra parameters' penalty ``(d - 1) log n``: the shared
    model is kept and the warm ARD fit is at least as likely as the model it contains, so its warm
    start did not end in a worse optimum. A restart there could still find an ARD optimum good
    enough to be kept, and skipping it gives that up (a heuristic for speed, measured on tuning
    keys); it always runs where ARD is kept (its fit is the one used) or where the warm ARD fit is
    less likely than the shared one (a worse local optimum).

    The four fits are the iterations of one ``jax.lax.scan`` over one L-BFGS program, so the fit
    is compiled once, not four times: the shared model's parameters are held in the ARD shape,
    its kernel and prior read ``log_ell[:1]`` (the other entries get a zero gradient and do not
    move), and a fit that does not run (a restart not asked for or skipped) is a ``jax.lax.cond``,
    under ``jax.vmap`` a select that runs it. ``restarts`` may be a traced bool."""

    def fit(model, params, data, *, num_steps, jitter=None, restarts=True):
        d = data.dim
        mask_tree = model.fitted(params)
        k_one = num_hyperparameters(shared, {**params, "log_ell": params["log_ell"][:1]})
        k_ard = num_hyperparameters(model, params)
        one_view = lambda p: {**p, "log_ell": p["log_ell"][:1]}  # noqa: E731
        as_ard = lambda p: {**p, "log_ell": jnp.broadcast_to(p["log_ell"][:1], (d,))}  # noqa: E731

        def either(is_shared):
            """The ARD model, or (``is_shared``) the shared one on ARD-shaped parameters."""
            return model._replace(
                kernel=lambda p, a, b: jnp.where(is_shared, shared.kernel(one_view(p), a, b),
                                                 model.kernel(p, a, b)),
                log_prior=lambda p, dim: jnp.where(is_shared, shared.log_prior(one_view(p), dim),
                                                   model.log_prior(p, dim)))

        has_restarts = (model.restarts is not None and shared.restarts is not None
                        and restarts is not False)
        if model.restarts is not None and shared.restarts is not None:
            ard_mode = jax.tree_util.tree_map(lambda a: a[0], model.restarts(d, data.y.dtype))
            one_mode = shared.restarts(d, data.y.dtype)
            one_mode = as_ard(jax.tree_util.tree_map(lambda a: a[0], one_mode))
        n_valid = jnp.maximum(jnp.sum(D.mask(data)), 1.0)
        penalty = (k_ard - k_one) * jnp.log(n_valid)
        inf = jnp.full((), jnp.inf, jnp.result_type(float))

        def keep_fixed(p, source):  # the leaves the fit does not move, at ``source``'s values
            return jax.tree_util.tree_map(lambda a, b, f: a if f else b, p, source, mask_tree)

        def slot(carry, i):
            (p_ard, v_ard, c_ard), (p_one, v_one, c_one) = carry
            is_shared = (i == 1) | (i == 2)
            warm_one = {**p_ard, "log_ell": jnp.broadcast_to(
                jnp.mean(p_ard["log_ell"], keepdims=True), (d,))}
            start, active = params, jnp.ones((), bool)
            pick = lambda c, a, b: jax.tree_util.tree_map(  # noqa: E731
                lambda x, y: jnp.where(c, x, y), a, b)
            start = pick(i == 1, warm_one, start)
            if has_restarts:
                gap = c_ard - c_one
                settled = (gap >= BIC_RESTART_MARGIN) & (gap <= penalty)
                start = pick(i == 2, keep_fixed(one_mode, warm_one), start)
                start = pick(i == 3, keep_fixed(ard_mode, p_ard), start)
                active = jnp.where(i == 2, jnp.asarray(restarts, bool), active)
                active = jnp.where(i == 3, jnp.asarray(restarts, bool) & ~settled, active)
            m = either(is_shared)
            p, v = _lbfgs_or_skip(_fit_loss(m, params, mask_tree, data, jitter), start,
                                  mask_tree, num_steps, active if has_restarts else None)
            p = _masked(p, params, mask_tree)
            p = pick(is_shared, as_ard(p), p)
            crit = jnp.where(active, bic(model, p, data, jitter, jnp.where(is_shared, k_one,
                                                                           k_ard)), inf)
            # slots 0 and 1 set the ARD and shared fits; 2 and 3 replace them if strictly better
            new_one = (i == 1) | ((i == 2) & (v < v_one))
            new_ard = (i == 0) | ((i == 3) & (v < v_ard))
            ard = (pick(new_ard, p, p_ard), jnp.where(new_ard, v, v_ard),
                   jnp.where(new_ard, crit, c_ard))
            one = (pick(new_one, p, p_one), jnp.where(new_one, v, v_one),
                   jnp.where(new_one, crit, c_one))
            return (ard, one), None

        empty = (params, inf, inf)
        slots = jnp.arange(4 if has_restarts else 2)
        ((p_ard, v_ard, c_ard), (p_one, v_one, c_one)), _ = jax.lax.scan(
            slot, (empty, empty), slots)
        use_shared = c_one <= c_ard
        pick = lambda a, b: jnp.where(use_shared, a, b)  # noqa: E731
        return (jax.tree_util.tree_map(pick, p_one, p_ard), pick(v_one, v_ard))

    return fit


def fit_adam(model: _Model, params, data: D.Data, *, num_steps: int, learning_rate: float,
             jitter=None):
    """The former fit: ``num_steps`` optax Adam steps on ``neg_log_posterior`` from ``params``
    (kept if the result is not finite)."""
    mask_tree = model.fitted(params)
    anchor = params

    def loss(p):
        return neg_log_posterior(model, _masked(p, anchor, mask_tree), data, jitter)

    opt = optax.adam(learning_rate)

    def step(carry, _):
        p, s = carry
        g = jax.grad(loss)(p)
        g = jax.tree_util.tree_map(lambda gi, f: gi if f else jnp.zeros_like(gi), g, mask_tree)
        g = jax.tree_util.tree_map(lambda gi: jnp.where(jnp.isfinite(gi), gi, 0.0), g)
        u, s = opt.update(g, s, p)
        return (optax.apply_updates(p, u), s), None

    (p, _), _ = jax.lax.scan(step, (params, opt.init(params)), None, length=num_steps)
    ok = jnp.isfinite(loss(p))
    return jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), p, params)


def refit_grid(refit_until: int, refit_ratio: float) -> np.ndarray:
    """The sizes past ``refit_until`` at which a refit is due: ``ceil(refit_until * ratio^k)``,
    ``k >= 1``, distinct, up to ``2^16`` (a static int array; empty for ``ratio == 1``)."""
    if refit_ratio == 1.0:
        return np.zeros((0,), np.int64)
    k_max = math.ceil(math.log(_GRID_MAX / refit_until) / math.log(refit_ratio)) + 1
    grid = np.ceil(refit_until * refit_ratio ** np.arange(1, max(k_max, 1) + 1) - 1e-9)
    return np.unique(grid.astype(np.int64))


def refit_due(n_old, n_new, refit_until: int, refit_ratio: float) -> Array:
    """Whether an update from ``n_old`` to ``n_new`` observations refits (module docstring):
    always if ``refit_ratio == 1`` or ``n_new <= refit_until``; else iff some grid size ``g`` of
    ``refit_grid`` has ``n_old < g <= n_new``. ``n_old``, ``n_new`` may be traced ints.

    Inside ``jax.vmap`` (many seeds) the choice becomes a select, so a vmapped run pays for the fit
    every round; a single run does not. When the buffer holds at most ``refit_until`` rows
    (``capacity <= refit_until``, e.g. every run of budget 60 or 100 at the default) every update
    refits with the restarts, which is known when tracing: the update then traces that fit alone,
    not the switch over the three choices."""
    if refit_ratio == 1.0:
        return jnp.ones((), bool)
    grid = jnp.asarray(refit_grid(refit_until, refit_ratio), jnp.int32)
    crossed = jnp.any((n_old < grid) & (grid <= n_new))
    return (n_new <= refit_until) | crossed


def _acquisition_fn(name, post, kernel, best, beta, xi, log_ei):
    def fn(z):
        mu, var = G.predict(kernel, post, z)
        sigma = jnp.sqrt(var)
        if name == "ucb":
            return acq.upper_confidence_bound(mu, sigma, beta)
        if name == "logei" or (name == "ei" and log_ei):
            return acq.log_expected_improvement(mu, sigma, best, xi)
        if name == "ei":
            return acq.expected_improvement(mu, sigma, best, xi)
        if name == "pi":
            return acq.probability_of_improvement(mu, sigma, best, xi)
        return acq.posterior_mean(mu)

    return fn


class GPSuggestInfo(NamedTuple):
    """The ``info`` of a kernel model's ``suggest`` (``gp``, ``ntk_gp``) for every acquisition but
    Thompson sampling (standardised units; the acquisition is maximised, module docstring).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition at each point (EI itself, not its log, for
        ``"ei"`` with ``log_ei``; ``-(mu - sqrt(beta) sigma)`` for UCB).
      acq_fallback: ``()`` int32, 1 when no evaluation had succeeded, so EI and PI took the prior
        mean as the incumbent.
      duplicates_replaced: ``()`` int32, maximisers that were observed points and were replaced
        (``ntkbo.optimize``).
    """

    acq_value: Array
    acq_fallback: Array
    duplicates_replaced: Array


class GPThompsonInfo(NamedTuple):
    """The ``info`` of a kernel model's ``suggest`` with ``acquisition="ts"``.

    Attributes:
      acq_value: ``(q,)`` each joint draw's ``-f~`` at its chosen candidate.
      ts_retries: ``()`` int32, the times the draws' Cholesky needed a larger jitter
        (``ntkbo.acquisition.joint_normal_draws``).
      duplicates_replaced: ``()`` int32, draws whose best candidate was an observed or already
        taken point.
    """

    acq_value: Array
    ts_retries: Array
    duplicates_replaced: Array


def build_suggest(model: _Model, *, acquisition: str, q: int, num_candidates: int,
                  num_restarts: int, num_steps: int, num_ts_candidates: int, jitter,
                  log_ei: bool = True, posterior_inverse: bool | None = None,
                  avoid_observed: bool | str = optimize.AVOID_OBSERVED):
    """A kernel model's raw ``suggest(key, state, beta, xi) -> (x (q, d), info)`` (blackjax's
    ``build_kernel`` pattern): the acquisition's hyper-parameters ``beta`` (UCB,
    ``-(mu - sqrt(beta) sigma)``, Srinivas et al. 2010) and ``xi`` (the EI/PI margin) are arguments,
    numbers or traced arrays ``()``, so ``jax.vmap`` over them works; ``info`` is
    ``GPThompsonInfo`` for ``acquisition="ts"``, else ``GPSuggestInfo``. ``kernel_bo`` (``gp``,
    ``ntk_gp``) validates the options and closes over ``beta`` and ``xi``; nothing is validated
    here. ``model``: the kernel model (e.g. ``stationary_model(...)``); ``state``: a
    ``KernelBOState`` of the algorithm built on the same model (its ``init`` and ``update``).
    ``posterior_inverse``: as ``kernel_bo``'s. With a fitted constant mean (``model.mean ==
    "constant"``) the valid outputs are shifted by it (``fitted_mean``, once per call) before
    anything else, so the posterior (prior mean 0 on ``y - m*``), the incumbent, the Thompson
    draws and the kriging believer's fantasies are all in those units. ``avoid_observed``: the
    duplicate guard (``ntkbo.optimize``, stage 5; a Thompson draw's pick then skips observed
    candidates), off: each draw's arg-max over the candidates."""

    def suggest(key, state, beta, xi):
        data, _, _ = standardized_data(state.data, state.bounds)
        m = D.mask(data)
        if model.mean == "constant":
            data = data._replace(y=jnp.where(m, data.y - fitted_mean(model, state.factor, data),
                                             data.y))
        unit = unit_box(data.dim, data.x.dtype)
        kernel = lambda a, b: model.kernel(state.params, a, b)  # noqa: E731
        lam = model.noise(state.params)
        post = G.condition(state.factor, data)
        if (jax.default_backend() != "cpu" if posterior_inverse is None else posterior_inverse):
            post = G.with_inverse(post)
        starts = best_points(data.x, data.y, m, 4)
        if acquisition == "ts":
            k_cand, k_pert, k_draw = jax.random.split(key, 3)
            sobol = qmc.sobol(k_cand, num_ts_candidates, unit)
            # Local candidates: 16 Gaussian perturbations (2% of the box) of each of the best points.
            centres = jnp.where(jnp.isnan(starts), sobol[: starts.shape[0]], starts)
            local = jnp.repeat(centres, 16, axis=0)
            local = jnp.clip(local + 0.02 * jax.random.normal(k_pert, local.shape, local.dtype),
                             0.0, 1.0)
            cand = jnp.concatenate([sobol, local])
            observed = optimize.guarded(avoid_observed, data.x, m)
            mu, cov = G.predict(kernel, post, cand, full_cov=True)
            # (q, n); over ~1000 candidates in float32 the first Cholesky may fail: the jitter
            # grows (counted in info.ts_retries) rather than every draw being NaN.
            draws, retries = acq.joint_normal_draws(k_draw, mu, cov, num_samples=q)
            values = acq.posterior_mean(draws)  # maximise -f (a non-finite draw: -inf)
            # Draw j takes its best candidate not taken by draws < j, so a batch never repeats a point,
            # and, with the guard, never an observed point while another candidate has a finite
            # draw.
            taken = jnp.zeros(cand.shape[0], bool)
            dup = (jnp.zeros(cand.shape[0], bool) if observed is None
                   else optimize.near_observed(cand, observed, unit))
            picks, replaced = [], []
            for j in range(q):
                v = jnp.where(taken, -jnp.inf, values[j])
                i, r = optimize.argmax_distinct(v, dup)
                taken = taken.at[i].set(True)
                picks.append(i)
                replaced.append(r)
            i = jnp.stack(picks)
            info = GPThompsonInfo(values[jnp.arange(q), i], retries,
                                  jnp.sum(jnp.stack(replaced)).astype(jnp.int32))
            return from_unit(cand[i], state.bounds), info
        # No successful evaluation yet (all failed): EI and PI have no incumbent. Take the prior
        # mean (0 in standardised units) as the incumbent, so the acquisition stays finite and
        # prefers uncertain points, and count the round in info.acq_fallback.
        no_incumbent = ~jnp.any(m)
        best = jnp.where(no_incumbent, 0.0, jnp.min(jnp.where(m, data.y, jnp.inf)))
        zs, vals, replaced = [], [], []
        for j in range(q):
            key, sub = jax.random.split(key)
            fn = _acquisition_fn(acquisition, post, kernel, best, beta, xi, log_ei)
            # The points observed and those taken for this batch (kriging believer): none again.
            observed = optimize.guarded(avoid_observed, data.x, D.mask(data))
            z, val, opt_info = optimize.maximize_acquisition(
                sub, fn, unit, num_candidates=num_candidates, num_restarts=num_restarts,
                x_best=starts, num_steps=num_steps, observed=observed)
            zs.append(z)
            replaced.append(opt_info.replaced)
            vals.append(jnp.exp(val) if acquisition == "ei" and log_ei else val)
            if j + 1 < q:  # kriging believer: condition on the posterior mean at z
                fantasy = G.mean(kernel, post, z[None])
                n = data.count
                data = D.append(data, z[None], fantasy)
                post = G.append(kernel, post, data, n, 1, lam, jitter=jitter)
        return from_unit(jnp.stack(zs), state.bounds), GPSuggestInfo(
            jnp.stack(vals), no_incumbent.astype(jnp.int32),
            jnp.sum(jnp.stack(replaced)).astype(jnp.int32))

    return suggest


def kernel_bo(model: _Model, *, acquisition: str, beta: float, xi: float, q: int, fit: bool,
              num_fit_steps: int, fit_learning_rate: float, num_candidates: int,
              num_restarts: int, num_steps: int, num_ts_candidates: int, jitter,
              n_constraints: int = 0, fit_method: str = "lbfgs", refit_until: int = 100,
              refit_ratio: float = 1.1, log_ei: bool = True,
              posterior_inverse: bool | None = None,
              avoid_observed: bool | str = optimize.AVOID_OBSERVED) -> Algorithm:
    """The shared kernel-model algorithm (see the module docstring). The acquisition maximiser
    (``ntkbo.optimize``) starts from scrambled Sobol candidates plus the best observed points and
    their perturbations, then refines the best ``num_restarts`` by projected gradient ascent.

    ``posterior_inverse``: each ``suggest`` computes the factor's inverse once
    (``ntkbo.gp.with_inverse``, a triangular solve with the identity) and the posterior variances
    of the screening and of every ascent step are matrix products with it; ``False``: a
    triangular solve against the factor per evaluation (and its transposed solve per gradient).
    The same variances up to rounding. ``None``: the inverse on an accelerator, where the solves
    dominate a step, and the solve on CPU, where the inverse costs more than it saves
    (``jax.default_backend()`` when ``suggest`` is traced)."""
    check_choice("acquisition", acquisition, ACQUISITIONS)
    check_choice("fit_method", fit_method, FIT_METHODS)
    check_int("q", q, 1)
    check_number("beta", beta, low=0.0)
    check_number("xi", xi, low=0.0)
    check_int("num_fit_steps", num_fit_steps, 0)
    check_number("fit_learning_rate", fit_learning_rate, low=0.0, allow_low=False)
    check_int("refit_until", refit_until, 1)
    check_number("refit_ratio", refit_ratio, low=1.0)
    check_int("num_candidates", num_candidates, 1)
    check_int("num_restarts", num_restarts, 1)
    check_int("num_steps", num_steps, 0)
    check_int("num_ts_candidates", num_ts_candidates, 1)
    check_int("n_constraints", n_constraints, 0)
    optimize.check_avoid_observed(avoid_observed)
    if not isinstance(log_ei, bool):
        raise ValueError(f"log_ei must be True or False, got {log_ei!r}")
    if jitter is not None:
        check_number("jitter", jitter, low=0.0)
    if posterior_inverse is not None and not isinstance(posterior_inverse, bool):
        raise ValueError(
            f"posterior_inverse must be True, False or None (by backend), got {posterior_inverse!r}")
    refit_ratio = float(refit_ratio)
    if acquisition == "cei":
        base = kernel_bo(model, acquisition="ei", beta=beta, xi=xi, q=1, fit=fit,
                         num_fit_steps=num_fit_steps, fit_learning_rate=fit_learning_rate,
                         num_candidates=num_candidates, num_restarts=num_restarts,
                         num_steps=num_steps, num_ts_candidates=num_ts_candidates, jitter=jitter,
                         fit_method=fit_method, refit_until=refit_until,
                         refit_ratio=refit_ratio, log_ei=log_ei,
                         posterior_inverse=posterior_inverse, avoid_observed=avoid_observed)
        return constrained_kernel_bo(model, base, n_constraints, q=q, xi=xi, jitter=jitter,
                                     num_candidates=num_candidates, num_restarts=num_restarts,
                                     num_steps=num_steps, avoid_observed=avoid_observed)
    if n_constraints:
        raise ValueError(f"n_constraints={n_constraints} needs acquisition='cei' (constrained EI), "
                         f"got {acquisition!r}")

    def init(key, bounds, capacity):
        del key
        bounds = check_bounds(bounds)
        d = bounds.shape[-1]
        return KernelBOState(D.empty(capacity, d, bounds.dtype), bounds,
                             model.init_params(d, bounds.dtype),
                             G.empty_factor(capacity, bounds.dtype))

    raw_suggest = build_suggest(model, acquisition=acquisition, q=q,
                                num_candidates=num_candidates, num_restarts=num_restarts,
                                num_steps=num_steps, num_ts_candidates=num_ts_candidates,
                                jitter=jitter, log_ei=log_ei, posterior_inverse=posterior_inverse,
                                avoid_observed=avoid_observed)

    def suggest(key, state):
        return raw_suggest(key, state, beta, xi)

    def append(state, x, y):
        """The rows written, and what ``refit`` needs of them: whether the hyper-parameters are
        refitted (``due``) and, where that is decided at run time, the factor extended by the
        rows (used if they are not)."""
        n_old = state.data.count
        state = state._replace(data=D.append(state.data, x, y))
        q_new = math.prod(jnp.shape(x)) // state.data.dim  # D.append's rows
        # A buffer that holds at most refit_until rows refits at every update (n <= capacity
        # <= refit_until), known when tracing: then ``due`` is the Python ``True`` and the update
        # runs the restarted fit and the refactorisation alone. Under jax.vmap the traced choice
        # becomes a select that also pays for the branches never taken (the warm-start-only fit,
        # the factor's extension). The computation is the same (a state after two updates is
        # bit-identical, jitted and vmapped); the program is smaller.
        if state.data.capacity <= refit_until:
            return state, ()
        due = refit_due(n_old, state.data.count, refit_until, refit_ratio)
        extended = jax.lax.cond(due, lambda: state.factor,
                                lambda: _extend(state, _unit_data(state), n_old, q_new))
        return state, (due, extended)

    def refit(state, pending):
        """The hyper-parameters refitted if due, and the factor made anew under them (or the
        extension ``append`` made)."""
        data = _unit_data(state)
        if not pending:  # due at every update (append's comment)
            params = _refit(state.params, data, True, state.data.count)
            return state._replace(params=params, factor=_refactor(params, data)), NoInfo()
        due, extended = pending
        params = _refit(state.params, data, due, state.data.count)
        factor = jax.lax.cond(due, lambda: _refactor(params, data), lambda: extended)
        return state._replace(params=params, factor=factor), NoInfo()

    def update(state, x, y):
        """The rows appended and the factor extended by them, with fixed hyper-parameters."""
        n_old = state.data.count
        state = state._replace(data=D.append(state.data, x, y))
        q_new = math.prod(jnp.shape(x)) // state.data.dim  # D.append's rows
        return state._replace(factor=_extend(state, _unit_data(state), n_old, q_new)), NoInfo()

    def _unit_data(state):
        return standardized_data(state.data, state.bounds)[0]

    def _refit(params, data, due, n):
        if fit_method == "adam":
            adam = lambda p: fit_adam(model, p, data, num_steps=num_fit_steps,  # noqa: E731
                                      learning_rate=fit_learning_rate, jitter=jitter)
            return adam(params) if due is True else jax.lax.cond(due, adam, lambda p: p, params)
        # Past refit_until the warm start alone (the restarts matter while the data are few).
        fit_fn = fit_hyperparameters if model.fit is None else model.fit
        if due is True:  # n <= refit_until: the restarted fit (update's comment)
            return fit_fn(model, params, data, num_steps=num_fit_steps, jitter=jitter,
                          restarts=True)[0]
        # One fit program for both choices: the restarts are a traced switch of the fit.
        refit = lambda p: fit_fn(model, p, data, num_steps=num_fit_steps,  # noqa: E731
                                 jitter=jitter, restarts=n <= refit_until)[0]
        return jax.lax.cond(due, refit, lambda p: p, params)

    def _kernel(p):
        return lambda a, b: model.kernel(p, a, b)

    def _extend(state, data, n_old, q_new):
        """The new rows appended to the factor under the state's hyper-parameters
        (``O(n^2 q)``)."""
        new = G.factor_append(_kernel(state.params), state.factor, data, n_old, q_new,
                              model.noise(state.params), jitter=jitter)
        # A batch that did not fit the buffer was not written (ntkbo.data.append): nor are its
        # rows.
        return G.Factor(jnp.where(data.count == n_old + q_new, new.chol, state.factor.chol))

    def _refactor(params, data):
        """The factor made anew under refitted hyper-parameters (``O(n^3)``)."""
        return G.factor(_kernel(params), data, model.noise(params), jitter=jitter)

    # With a fit, the update is staged (ntkbo.base.StagedUpdate): the drivers trace the fit once
    # for the initial design and the rounds (ntkbo.loop).
    return Algorithm(init, suggest, StagedUpdate(append, refit) if fit else update,
                     posterior_mean=lambda state, x: posterior_mean(model, state, x))


#: ``ntk_gp``'s defaults of its acquisition search (most in its ``search``): ``num_candidates``
#: Sobol points, the best ``num_restarts`` refined by ``num_steps`` ascent steps, Thompson
#: sampling's candidates, the Cholesky jitter, the number of constraint models and whether the
#: posterior variance uses the factor's inverse (``kernel_bo``; ``None``: by backend, as accurate
#: as the solve in float32 on ``ntk_gp``'s NTK grams).
OPTIMIZER_DEFAULTS: dict[str, Any] = dict(
    num_candidates=1024, num_restarts=4, num_steps=30, num_ts_candidates=1024, jitter=None,
    n_constraints=0, posterior_inverse=None)

#: ``gp``'s: a 2.5 times wider and 3.3 times longer acquisition search, chosen on the dev suite's
#: tuning keys (docs/decisions.md, 2026-11-24). ``ntk_gp`` keeps ``OPTIMIZER_DEFAULTS``.
#: ``posterior_inverse=False``: the inverse's float32 accuracy was checked on ``ntk_gp``'s NTK
#: grams only, not on ``gp``'s far worse conditioned ones (RBF, fitted noise down to ``MIN_NOISE``).
GP_OPTIMIZER_DEFAULTS: dict[str, Any] = {**OPTIMIZER_DEFAULTS, "num_restarts": 10,
                                         "num_steps": 100, "posterior_inverse": False}


def stationary_model(kernel: str = "matern52", *, shared: bool = False,
                     signal: float | None = None) -> _Model:
    """``gp``'s kernel model (module docstring): the stationary ``kernel`` on the unit cube with
    ARD lengthscales, or one ``shared`` by all dimensions (``log_ell`` ``(1,)``), a signal variance
    (fitted if ``signal`` is None, else fixed) and noise, under the dimension-scaled priors."""
    base = STATIONARY[kernel]
    log_signal0 = 0.0 if signal is None else math.log(signal)
    sqrt3 = math.sqrt(3.0)
    log_min_ell = math.log(MIN_LENGTHSCALE)

    def ell_loc(d):
        return math.sqrt(2.0) + 0.5 * math.log(d)

    ell = lambda p: jnp.exp(jnp.maximum(p["log_ell"], log_min_ell))  # noqa: E731
    noise = lambda p: jnp.exp(p["log_noise"]) + MIN_NOISE  # noqa: E731

    def params_at(d, dt, ell0, noise0, signal0):
        """Unconstrained parameters with ``exp``-scale values ``ell0``, ``noise0``."""
        return {"log_ell": jnp.full((1 if shared else d,), ell0, dt),
                "log_signal": jnp.full((), signal0, dt), "log_noise": jnp.full((), noise0, dt)}

    def mode(d, dt):  # LogNormal(mu, s) has its mode at exp(mu - s^2): BoTorch's initial values
        return params_at(d, dt, ell_loc(d) - 3.0, -4.0 - 1.0,
                         -1.0 if signal is None else log_signal0)

    def median(d, dt):
        return params_at(d, dt, ell_loc(d), -4.0, log_signal0)

    return _Model(
        kernel=lambda p, a, b: base(a, b, ell(p), jnp.exp(p["log_signal"])),
        noise=noise,
        init_params=median,
        # The priors' densities at the values the kernel and the likelihood use (floors
        # included), as BoTorch's MAP evaluates them (``_lognormal_logpdf``).
        log_prior=lambda p, d: (_lognormal_logpdf(ell(p), ell_loc(d), sqrt3)
                                + _lognormal_logpdf(jnp.exp(p["log_signal"]), 0.0, 1.0)
                                + _lognormal_logpdf(noise(p), -4.0, 1.0)),
        fitted=lambda p: {"log_ell": True, "log_signal": signal is None, "log_noise": True},
        restarts=lambda d, dt: jax.tree_util.tree_map(lambda a: a[None], mode(d, dt)),
    )


_GPD = GP_OPTIMIZER_DEFAULTS


def _gp(*, kernel: str = "rbf", acquisition: str = "ei", beta: float = 4.0, xi: float = 0.0,
        q: int = 1, fit: bool = True, fit_method: str = "lbfgs", num_fit_steps: int = 20,
        fit_learning_rate: float = 0.1, refit_until: int = 100, refit_ratio: float = 1.1,
        log_ei: bool = True, signal: float | None = None, ard: bool | str = "auto",
        fit_mean: str = "zero", num_candidates: int = _GPD["num_candidates"],
        num_restarts: int = _GPD["num_restarts"],
        num_steps: int = _GPD["num_steps"], num_ts_candidates: int = _GPD["num_ts_candidates"],
        jitter: float | None = _GPD["jitter"], n_constraints: int = _GPD["n_constraints"],
        posterior_inverse: bool | None = _GPD["posterior_inverse"],
        avoid_observed: bool | str = optimize.AVOID_OBSERVED) -> Algorithm:
    """``gp`` with its flat options (``LAYOUT`` places them in the parts)."""
    if kernel not in STATIONARY:
        raise ValueError(f"kernel must be one of {tuple(STATIONARY)}, got {kernel!r}")
    if signal is not None:
        check_number("signal", signal, low=0.0, allow_low=False)
    if not (isinstance(ard, bool) or ard == "auto"):
        raise ValueError(f"ard must be True, False or 'auto', got {ard!r}")
    if ard == "auto" and fit_method != "lbfgs":
        raise ValueError(f"ard='auto' selects between two L-BFGS fits; it needs "
                         f"fit_method='lbfgs', got {fit_method!r}")
    check_choice("fit_mean", fit_mean, MEANS)
    model = stationary_model(kernel, shared=ard is False, signal=signal)._replace(mean=fit_mean)
    if ard == "auto":
        model = model._replace(fit=select_by_bic(stationary_model(
            kernel, shared=True, signal=signal)._replace(mean=fit_mean)))
    return kernel_bo(model, acquisition=acquisition, beta=beta, xi=xi, q=q, fit=fit,
                     num_fit_steps=num_fit_steps, fit_learning_rate=fit_learning_rate,
                     fit_method=fit_method, refit_until=refit_until, refit_ratio=refit_ratio,
                     log_ei=log_ei, num_candidates=num_candidates, num_restarts=num_restarts,
                     num_steps=num_steps, num_ts_candidates=num_ts_candidates, jitter=jitter,
                     n_constraints=n_constraints, posterior_inverse=posterior_inverse,
                     avoid_observed=avoid_observed)


NTK_INPUT_MAPS = ("centered", "sphere")


_NTKD = OPTIMIZER_DEFAULTS


def _ntk_gp(*, kernel_fn=None, acquisition: str = "ucb", depth: int = 2, activation="relu",
            W_std: float = 2.0**0.5, b_std: float | None = 0.1, lam: float = 1e-2,
            signal: float = 1.0, beta: float = 4.0, xi: float = 0.0, q: int = 1,
            fit: bool = False, fit_method: str = "lbfgs", num_fit_steps: int = 20,
            fit_learning_rate: float = 0.1, refit_until: int = 100, refit_ratio: float = 1.1,
            log_ei: bool = True, input_map: str = "sphere",
            num_candidates: int = _NTKD["num_candidates"],
            num_restarts: int = _NTKD["num_restarts"], num_steps: int = _NTKD["num_steps"],
            num_ts_candidates: int = _NTKD["num_ts_candidates"],
            jitter: float | None = _NTKD["jitter"], n_constraints: int = _NTKD["n_constraints"],
            posterior_inverse: bool | None = _NTKD["posterior_inverse"],
            avoid_observed: bool | str = optimize.AVOID_OBSERVED) -> Algorithm:
    """``ntk_gp`` with its flat options (``NTK_LAYOUT`` places them in the parts)."""
    from ntkbo.kernels import as_kernel, mlp

    if kernel_fn is None:
        kernel_fn = mlp(depth, 1, activation, W_std=W_std, b_std=b_std)[2]
    theta = as_kernel(kernel_fn, "ntk")
    if input_map not in NTK_INPUT_MAPS:
        raise ValueError(f"input_map must be one of {NTK_INPUT_MAPS}, got {input_map!r}")
    embed = to_sphere if input_map == "sphere" else (lambda z: 2.0 * z - 1.0)
    check_number("lam", lam, low=0.0, allow_low=False)
    check_number("signal", signal, low=0.0, allow_low=False)

    model = _Model(
        kernel=lambda p, a, b: jnp.exp(p["log_signal"]) * theta(embed(a), embed(b)),
        noise=lambda p: jnp.exp(p["log_noise"]),
        init_params=lambda d, dt: {"log_signal": jnp.full((), jnp.log(signal), dt),
                                   "log_noise": jnp.full((), jnp.log(lam), dt)},
        log_prior=lambda p, d: (_log_space_normal_logpdf(p["log_signal"], jnp.log(signal), 1.0)
                                + _log_space_normal_logpdf(p["log_noise"], jnp.log(lam), 2.0)),
        fitted=lambda p: {"log_signal": True, "log_noise": True},
    )
    return kernel_bo(model, acquisition=acquisition, beta=beta, xi=xi, q=q, fit=fit,
                     num_fit_steps=num_fit_steps, fit_learning_rate=fit_learning_rate,
                     fit_method=fit_method, refit_until=refit_until, refit_ratio=refit_ratio,
                     log_ei=log_ei, num_candidates=num_candidates, num_restarts=num_restarts,
                     num_steps=num_steps, num_ts_candidates=num_ts_candidates, jitter=jitter,
                     n_constraints=n_constraints, posterior_inverse=posterior_inverse,
                     avoid_observed=avoid_observed)


#: Where ``gp``'s and ``ntk_gp``'s plain options sit among their parts (``ntkbo.parts``):
#: the hyper-parameter fit and the acquisition search; ``ntk_gp``'s network is the MLP whose NTK
#: is the kernel, or a ``kernel_fn`` given as ``network=``.
_FIT = dict(enabled="fit", method="fit_method", num_steps="num_fit_steps",
            learning_rate="fit_learning_rate", refit_until="refit_until",
            refit_ratio="refit_ratio")
_SEARCH = dict(num_candidates="num_candidates", num_restarts="num_restarts",
               num_steps="num_steps", num_ts_candidates="num_ts_candidates", log_ei="log_ei",
               posterior_inverse="posterior_inverse", jitter="jitter",
               avoid_observed="avoid_observed")
LAYOUT = Layout({"fit": {**_FIT, "ard": "ard", "mean": "fit_mean"}, "search": _SEARCH})
NTK_LAYOUT = Layout({"network": dict(depth="depth", activation="activation", W_std="W_std",
                                     b_std="b_std"),
                     "fit": _FIT, "search": _SEARCH}, custom={"network": "kernel_fn"})


@composed(_gp, LAYOUT)
def gp(
    *,
    kernel: str = "rbf",
    acquisition: str = "ei",
    beta: float = 4.0,
    xi: float = 0.0,
    q: int = 1,
    fit: PartOption = None,
    search: PartOption = None,
    signal: float | None = None,
    n_constraints: int = _GPD["n_constraints"],
) -> Algorithm:
    """The standard GP baseline of the papers, at BoTorch's level: by default an RBF kernel whose
    lengthscales are ARD or shared, chosen by BIC at each fit (``kernel="rbf",
    fit={"ard": "auto"}``).

    Hyper-parameters by MAP with the dimension-scaled priors of Hvarfner et al. 2024, L-BFGS from
    the warm start and the prior modes, refitted on a schedule; EI maximised through LogEI (module
    docstring). The defaults depart from the papers' GP baselines (a squared-exponential ARD kernel
    refitted every round, EI itself): ``preset="paper"`` of ``gp_ei`` and its siblings restores
    those (:data:`PRESETS_BY_NAME`). The defaults were chosen on the development suite
    (docs/decisions.md, 2026-11-25).

    Args:
      kernel: ``"rbf"`` (default), ``"matern52"``, ``"matern32"`` or ``"matern12"`` (Rasmussen
        and Williams eqs. 4.9, 4.17, 4.14; ``ntkbo.kernels.stationary``).
      acquisition: ``"ei"``, ``"logei"``, ``"ucb"``, ``"pi"``, ``"ts"``, ``"mean"`` or ``"cei"``
        (constrained EI with ``n_constraints`` independent constraint GPs, ``constrained_ei``).
      beta: UCB exploration, the acquisition is ``-(mu - sqrt(beta) sigma)`` (Srinivas et al. 2010).
      xi: EI/PI margin.
      q: points per round (see the module docstring for the batch rule).
      fit: the hyper-parameter fit (``ntkbo.parts.Fit``): ``enabled`` (``True``, paper: fit
        lengthscales, signal and noise by MAP; ``False``: keep the prior modes); ``method``
        (``"lbfgs"``: at most ``num_steps`` iterations per start, fewer once converged,
        ``fit_hyperparameters``; or ``"adam"``, the former fit: ``num_steps`` Adam steps of
        ``learning_rate`` from the warm start); ``num_steps`` (20); ``learning_rate`` (0.1);
        ``refit_until`` (100) and ``refit_ratio`` (1.1; paper 1: a refit after every update),
        the refit schedule of the module docstring; ``ard`` (``"auto"``; paper ``True``).
        ``ard=True``: one lengthscale per input dimension (BoTorch's and the papers');
        ``False``: one lengthscale shared by all dimensions (isotropic), under the same
        dimension-scaled prior (its ``log(d) / 2`` shift keeps ``r^2 = |z - z'|^2 / ell^2`` of
        order one either way); ``"auto"`` (L-BFGS fits only): at every fit both, keeping
        the one with the lower Bayesian information criterion ``-2 log p(y | X, theta) + k log n``
        (``select_by_bic``; ``k = d + 2`` against 3 hyper-parameters), so the shared lengthscale is
        used while the data cannot support ``d`` of them. Two models per refit: ARD from the
        warm start, the shared lengthscale from ARD's mean and the prior modes, and ARD from
        the prior modes too unless its warm fit already settled the choice. ``mean``
        (``"zero"``: prior mean 0 of the standardised outputs; ``"constant"``: a constant mean
        fitted with the others, BoTorch's ``ConstantMean``, profiled out of the likelihood in
        closed form, ``ntkbo.gp.profiled_log_marginal_likelihood``, and counted in BIC's ``k``).
      search: the acquisition search (``ntkbo.parts.Search``, ``kernel_bo``): ``num_candidates``
        Sobol points (1024), the best ``num_restarts`` (10) refined by ``num_steps`` (100)
        ascent steps (both tuned on the dev suite), ``num_ts_candidates`` (1024) points of a
        Thompson draw, ``log_ei`` (``True``: maximise ``"ei"`` through its logarithm, LogEI;
        paper ``False``: EI itself), ``posterior_inverse`` (``False``: the triangular solves),
        ``jitter`` (``None``: ``ntkbo.gp.default_jitter``, relative Cholesky jitter). The
        defaults are ``GP_OPTIMIZER_DEFAULTS`` and ``log_ei``'s.
      signal: ``None`` fits the signal variance (prior ``LogNormal(0, 1)``); a number fixes it
        (standardised units). ``signal=1.0`` with ``kernel="rbf"`` is BoTorch's ``SingleTaskGP``
        since 0.12 exactly: an RBF kernel without an outputscale (``gpytorch_modules.py``,
        "a dimension-agnostic RBF kernel without outputscale").
      n_constraints: ``K``, the constraint models of ``acquisition="cei"`` (default 0).

    Returns:
      The ``ntkbo.Algorithm``.
    """
    return _gp(**LAYOUT.flatten(locals(), "gp"))


@composed(_ntk_gp, NTK_LAYOUT)
def ntk_gp(
    *,
    network: Any = None,
    acquisition: str = "ucb",
    lam: float = 1e-2,
    signal: float = 1.0,
    beta: float = 4.0,
    xi: float = 0.0,
    q: int = 1,
    fit: PartOption = None,
    search: PartOption = None,
    input_map: str = "sphere",
    n_constraints: int = _NTKD["n_constraints"],
) -> Algorithm:
    """GP-BO with an exact infinite-width NTK kernel (NTK-GP-UCB/EI/TS of the papers' baselines).

    The kernel is ``signal * Theta(e(z), e(z'))`` on inputs ``z`` mapped to the unit cube, with
    ``Theta`` the ``"ntk"`` kernel of ``kernel_fn`` (an ntkbo or neural-tangents ``kernel_fn``; by
    default ``ntkbo.kernels.mlp(depth, width=1, activation, W_std, b_std)``, ``width`` being
    irrelevant to the ``"ntk"``-parameterised limit), and noise variance ``lam`` on standardised
    outputs. ``fit={"enabled": True}`` fits ``signal`` and ``lam`` by maximum a posteriori
    (L-BFGS from the warm start, on ``gp``'s refit schedule) with weak log-normal priors centred
    on the given values. The posterior is NeuralBO's uncertainty in the infinite-width limit
    (Phan-Trong et al. 2023, Algorithm 1, line 3, with the exact NTK in place of the empirical
    one).

    The input map ``e`` (``input_map``): ``"sphere"`` (default) is ``to_sphere``, the unit sphere of
    ``R^(d+1)`` with the box centre at the pole, the input domain of the NTK theory; there the NTK
    is a dot-product (zonal) kernel, the same prior variance everywhere. ``"centered"`` is
    ``2 z - 1``, the cube ``[-1, 1]^d``: a ReLU NTK's prior variance then grows with the distance
    from the centre (``Theta(x, x) ~ |x|^2``), so the model extrapolates linearly toward the
    corners (on Branin it did worse than random search; docs/decisions.md, 2026-11-22).

    Args:
      network: the MLP whose NTK is the kernel (``ntkbo.parts.Network``): ``depth`` hidden
        layers (2), ``activation`` (``"relu"``, any ``activation=`` of ``ntkbo.kernels``),
        ``W_std`` (``sqrt(2)``, He scaling, ``"ntk"`` parameterisation), ``b_std`` (0.1;
        ``None``: no biases); or, in its place, an ntkbo or neural-tangents
        ``kernel_fn(x1, x2, get)`` whose ``"ntk"`` kernel is used. Default: the MLP,
        ``ntkbo.kernels.mlp(depth, 1, activation, W_std, b_std)``.
      acquisition: ``"ucb"`` (default), ``"ei"``, ``"logei"``, ``"pi"``, ``"ts"``, ``"mean"`` or
        ``"cei"``, as for ``gp``.
      lam: noise variance of the GP on standardised outputs (the regulariser ``lambda`` of the
        papers).
      signal: the kernel's scale factor (standardised units).
      beta: UCB exploration, the acquisition is ``-(mu - sqrt(beta) sigma)`` (Srinivas et al. 2010).
      xi: EI/PI margin.
      q: points per round (see the module docstring for the batch rule).
      fit: the hyper-parameter fit (``ntkbo.parts.Fit``): ``enabled`` (``False``, as in the
        papers: ``signal`` and ``lam`` fixed; ``True``: both fitted by MAP under log-normal
        priors centred on the given values); ``method`` (``"lbfgs"``: at most ``num_steps``
        iterations per start, fewer once converged, ``fit_hyperparameters``; or ``"adam"``:
        ``num_steps`` Adam steps of ``learning_rate``); ``num_steps`` (20); ``learning_rate``
        (0.1, Adam only); ``refit_until`` (100) and ``refit_ratio`` (1.1), the refit schedule of
        the module docstring (``refit_ratio=1`` refits after every update).
      search: the acquisition search (``ntkbo.parts.Search``, ``kernel_bo``): ``num_candidates``
        Sobol points (1024), the best ``num_restarts`` (4) refined by ``num_steps`` (30) ascent
        steps, ``num_ts_candidates`` (1024) points of a Thompson draw, ``log_ei`` (``True``:
        maximise ``"ei"`` through its logarithm, LogEI; ``False``: EI itself),
        ``posterior_inverse`` (``None``: one inverse of the factor per suggest, then matrix
        products, on an accelerator; the triangular solves on CPU), ``jitter`` (``None``:
        ``ntkbo.gp.default_jitter``). The defaults are ``OPTIMIZER_DEFAULTS`` and ``log_ei``'s.
      input_map: ``"sphere"`` (default) or ``"centered"``, the map ``e`` above.
      n_constraints: ``K``, the constraint models of ``acquisition="cei"`` (default 0).

    Returns:
      The ``ntkbo.Algorithm``.
    """
    return _ntk_gp(**NTK_LAYOUT.flatten(locals(), "ntk_gp"))
