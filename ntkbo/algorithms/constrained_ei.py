r"""Constrained expected improvement (cEI; Gardner et al. 2014, Gelbart et al. 2014) on the kernel
models of ``ntkbo.algorithms.gp_bo``: the Neural-CBO thesis's cEI baseline (Phan-Trong's thesis,
Sections 2.4 and 4.3). Built by ``gp(acquisition="cei", n_constraints=K)`` and
``ntk_gp(acquisition="cei", n_constraints=K)``.

The objective and each of the ``K`` constraints get an *independent* GP of the same kind (kernel,
priors, hyper-parameters fitted separately on each function's standardised observations), each
being the state of the unconstrained ``kernel_bo`` algorithm, whose ``update`` is reused. With
``mu_k, s_k`` the posterior of ``c_k`` in original units (``mean_k + std_k * posterior`` of the
standardised values) and ``best`` the smallest observed objective among the points whose observed
constraints are all ``<= 0``, the acquisition, maximised through its logarithm, is

    cEI(x) = EI(x; best) * prod_k P[c_k(x) <= 0],   P[c_k(x) <= 0] = Phi(-mu_k(x) / s_k(x)),

(``ntkbo.acquisition.constrained_expected_improvement``). While no point has been observed feasible
EI is undefined (no incumbent), and the acquisition is the probability of
feasibility alone, as Gardner et al. prescribe. Sign convention: minimisation, ``c_k <= 0`` feasible.
``update`` takes ``y`` of shape ``(q, 1 + K)`` (``ntkbo.base``); one point per round (``q = 1``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ntkbo.validation import check_told
from ntkbo import acquisition as acq
from ntkbo import data as D
from ntkbo import gp as G
from ntkbo import optimize
from ntkbo.algorithms.observations import from_unit, standardized_data, unit_box
from ntkbo.base import Algorithm, NoInfo

Array = jax.Array

__all__ = ["ConstrainedEIInfo", "ConstrainedKernelBOState", "constrained_kernel_bo"]


class ConstrainedEIInfo(NamedTuple):
    """The ``info`` of constrained EI's ``suggest`` (``gp_cei``, ``ntk_gp_cei``; one point per
    round, minimisation, ``c_k <= 0`` feasible).

    Attributes:
      acq_value: ``(1,)`` the maximised acquisition at the point: ``log cEI`` when some point has
        been observed feasible, else the log probability of feasibility ``sum_k log P[c_k <= 0]``.
      any_feasible: ``()`` bool, some evaluated point was observed feasible (an incumbent exists).
      duplicates_replaced: ``()`` int32, 1 when the maximiser was an observed point and was
        replaced (``ntkbo.optimize``).
    """

    acq_value: Array
    any_feasible: Array
    duplicates_replaced: Array


class ConstrainedKernelBOState(NamedTuple):
    """``objective``: the objective's ``KernelBOState``; ``constraints``: ``K`` more, one per
    constraint (the same ``x``)."""

    objective: Any  # gp_bo.KernelBOState (gp_bo imports this module)
    constraints: tuple

    @property
    def bounds(self):
        """The box ``(2, d)`` (``ntkbo.ask_tell`` reads it)."""
        return self.objective.bounds


def constrained_kernel_bo(model, base: Algorithm, n_constraints: int, *, q: int, xi: float,
                          jitter, num_candidates: int, num_restarts: int, num_steps: int,
                          avoid_observed: bool | str = optimize.AVOID_OBSERVED) -> Algorithm:
    """cEI over ``K = n_constraints`` independent GPs of ``model``; ``base`` is the unconstrained
    EI algorithm of the same model, whose ``init``/``update`` hold and fit each function's GP."""
    if isinstance(n_constraints, bool) or not isinstance(n_constraints, int) or n_constraints < 0:
        raise ValueError(f"n_constraints must be an int >= 0, got {n_constraints!r}")
    if q != 1:
        raise ValueError(f"acquisition='cei' suggests one point per round: q must be 1, got {q}")
    K = n_constraints

    def init(key, bounds, capacity):
        keys = jax.random.split(key, K + 1)
        return ConstrainedKernelBOState(base.init(keys[0], bounds, capacity),
                                        tuple(base.init(k, bounds, capacity) for k in keys[1:]))

    def update(state, x, y):
        check_told(x, y, K)
        y = jnp.asarray(y).reshape(jnp.shape(x)[0], K + 1)
        return ConstrainedKernelBOState(
            base.update(state.objective, x, y[:, 0])[0],
            tuple(base.update(s, x, y[:, k + 1])[0] for k, s in enumerate(state.constraints))
        ), NoInfo()

    def _posterior(s):
        data, mean, std = standardized_data(s.data, s.bounds)  # failed rows: out of G.fit's mask
        kernel = lambda a, b: model.kernel(s.params, a, b)  # noqa: E731
        # a fitted constant mean (model.mean == "constant"): the posterior's prior mean, m*
        prior_mean = G.gls_mean(s.factor, data) if model.mean == "constant" else 0.0
        return kernel, G.condition(s.factor, data, prior_mean=prior_mean), mean, std, data

    def suggest(key, state):
        obj = state.objective
        kernel, post, _, _, data = _posterior(obj)
        m = D.mask(obj.data)
        parts = [_posterior(s) for s in state.constraints]
        c_obs = (jnp.stack([s.data.y for s in state.constraints], axis=-1) if K
                 else jnp.zeros((m.shape[0], 0), obj.data.y.dtype))
        feasible = m & jnp.all(c_obs <= 0, axis=-1)
        any_feasible = jnp.any(feasible)
        best = jnp.min(jnp.where(feasible, data.y, jnp.inf))
        best = jnp.where(any_feasible, best, 0.0)  # unused then (log EI is masked below)

        def log_acq(z):
            mu, var = G.predict(kernel, post, z)
            mu_c, sigma_c = [mu[:, None][:, :0]], [mu[:, None][:, :0]]  # (n, 0) when K = 0
            for kern_k, post_k, mean_k, std_k, _ in parts:
                mu_k, var_k = G.predict(kern_k, post_k, z)
                mu_c.append((mean_k + std_k * mu_k)[:, None])
                sigma_c.append((std_k * jnp.sqrt(var_k))[:, None])
            mu_c, sigma_c = jnp.concatenate(mu_c, axis=1), jnp.concatenate(sigma_c, axis=1)
            log_cei = acq.log_constrained_expected_improvement(mu, jnp.sqrt(var), best, mu_c,
                                                               sigma_c, xi)
            log_pof = jnp.sum(acq.log_probability_of_feasibility(mu_c, sigma_c), axis=-1)
            return jnp.where(any_feasible, log_cei, log_pof)

        d = data.dim
        unit = unit_box(d, data.x.dtype)
        k = min(4, data.capacity)
        idx = jnp.argsort(jnp.where(feasible, data.y, jnp.inf))[:k]
        starts = jnp.where(feasible[idx][:, None], data.x[idx], jnp.nan)
        z, val, opt_info = optimize.maximize_acquisition(
            key, log_acq, unit, num_candidates=num_candidates, num_restarts=num_restarts,
            x_best=starts, num_steps=num_steps,
            observed=optimize.guarded(avoid_observed, data.x, D.mask(data)))
        info = ConstrainedEIInfo(acq_value=val[None], any_feasible=any_feasible,
                                 duplicates_replaced=opt_info.replaced.astype(jnp.int32))
        return from_unit(z[None], obj.bounds), info

    objective_mean = base.posterior_mean
    if objective_mean is None:
        return Algorithm(init, suggest, update, K)

    def posterior_mean(state, x):  # the objective's GP (``Algorithm.posterior_mean``)
        return objective_mean(state.objective, x)

    return Algorithm(init, suggest, update, K, posterior_mean=posterior_mean)
