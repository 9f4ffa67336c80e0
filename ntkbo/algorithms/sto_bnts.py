r"""STO-BNTS and STO-BNTS-Linear (Dai, Shu, Low and Jaillet, "Sample-Then-Optimize Batch Neural
Thompson Sampling", NeurIPS 2022, arXiv:2210.06850): batch neural Thompson sampling by
*sample-then-optimise*.

Each of the ``q = B`` points of a round comes from its own, independently initialised network,
trained on the same data ``D = {(z_j, y_j)}``, ``j = 1..N`` (inputs ``z`` ``(N, d)`` mapped from
the box to the unit cube, outputs ``y`` ``(N,)`` standardised), Algorithms 1 and 2, Section 3::

    STO-BNTS (Algorithm 1)                          STO-BNTS-Linear (Algorithm 2)
    theta_0, theta_0' ~ init,  last layer of         theta_0', theta_0 ~ init   (independent)
      theta_0' set to 0                              f~(z; th) = beta <grad f(z; theta_0'), th>
    f~(z; th) = beta [f(z; th)
                 + <grad f(z; theta_0), theta_0'>]   (the JVP term is a constant: not trained)
    theta* = argmin_th L(th),  trained from theta_0 (the paper: gradient descent to convergence)
    L(th)  = sum_j (y~_j - f~(z_j; th))^2 + beta^2 sigma^2 (th - theta_0)^T P (th - theta_0)   (1)
    x      = argmin_z f~(z; theta*) over the box (the paper: argmax; sign convention below)

``P`` is the parameters' prior precision (:func:`prior_variances`), ``y~_j = y_j`` (loss (1)) or
``y_j + eps_j`` with ``perturb_targets`` (:func:`target_noise`). For a linear model the minimiser
of (1) is ``f* = g + k(., X) (K_XX + lam I)^-1 (y~ - g(X))``, ``g = f~(.; theta_0)`` the prior
draw, ``k`` the model's kernel, ``lam = beta^2 sigma^2`` (Appendix A): its mean is the NTK-GP
posterior mean (eq. 2), its covariance ``beta^2`` times the posterior covariance (eq. 3) with
perturbed targets. STO-BNTS-Linear solves (1) in closed form (:func:`linear_solve`); STO-BNTS
trains the network (:func:`train_member`). The ``q`` members, training and query (the minimiser
over the box) included, are one ``jax.vmap``; ``suggest`` returns ``x`` ``(q, d)``.

**Sign convention.** The paper maximises ``f``; ntkbo minimises. The network models the
standardised observations of the objective itself and the query is the *minimiser* of the
sample, i.e. the maximiser of the acquisition ``-f~``: the paper's algorithm run on ``-f`` (the
zero-mean prior is symmetric). ``info.acq_value`` is ``-f~`` at the query, standardised.

**Defaults and the paper.** The defaults follow Algorithm 1 as Sections 2-3 state it
(``preset="section2"``: ``depth=2``, ReLU, NTK parameterisation without biases, ``beta_t = 1``,
fresh networks every round, the network trained on (1)), inputs on the unit sphere and
``sigma = 0.1`` where it is open, but 10 Levenberg-Marquardt steps at width 128 (:func:`train_member`)
and a cheaper query search. The paper's experiments ran He et al.'s code with its defaults
(Appendix F): ``preset="appendix_f"``. ``preset="linearized"`` is STO-BNTS-Linear's member with
the readout anchor tied, not Algorithm 1. The posterior-sample property is exact only in the
infinite-width limit for the trained network, and for the empirical NTK for the linear members.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo.validation import check_bounds
from ntkbo.validation import check_choice as _check_choice
from ntkbo.validation import check_int as _check_int
from ntkbo.validation import check_positive as _check_positive
from ntkbo.validation import check_acquisition_options
from ntkbo import data as D
from ntkbo import optimize
from ntkbo.algorithms.observations import (best_points, embed_inputs, from_unit, kernel_mean,
                                          unit_view)
from ntkbo.base import Algorithm, NoInfo
from ntkbo.kernels import as_kernel, mlp, mlp_spec
from ntkbo.parts import Layout, PartOption, composed
# The members' numerics live in the networks layer; their names stay importable from here.
from ntkbo.nets import (LM_DAMPING, MEMBER_OPTIMIZERS, Params, check_optimizer, draw_params,
                        is_transformation, jvp_term, linear_member_fn, linear_solve,
                        linearized_member_fn, member_fn, prior_variances, sto_loss, target_noise,
                        train_member, trained_member_fn, zero_last_layer)

Array = jax.Array

__all__ = [
    "ACQ_METHODS", "BetaSpec", "INPUT_MAPS", "LM_DAMPING", "LOSS_REDUCTIONS", "NUM_BEST",
    "DESIGN_SAMPLER_BY_NAME", "N_INIT_BY_NAME", "OPTIMIZERS", "PRESETS_BY_NAME", "StoBntsState",
    "StoBntsSuggestInfo",
    "default_num_steps",
    "member_keys", "sample_linear_member", "sample_member", "sto_bnts", "sto_bnts_linear",
    "theorem1_beta",
    # defined in ntkbo.nets and ntkbo.algorithms.observations
    "draw_params", "embed_inputs", "jvp_term", "linear_member_fn", "linear_solve",
    "linearized_member_fn", "member_fn", "prior_variances", "sto_loss", "target_noise",
    "train_member", "trained_member_fn", "zero_last_layer",
]

OPTIMIZERS = MEMBER_OPTIMIZERS
INPUT_MAPS = ("cube", "sphere")
LOSS_REDUCTIONS = ("sum", "mean")
ACQ_METHODS = optimize.METHODS
#: Number of best observed points the acquisition optimiser starts from (and perturbs).
NUM_BEST = 4


#: Named settings (``ntkbo.algorithms.sto_bnts(preset=NAME, **options)``; ``ntkbo.algorithms``,
#: "Presets"), per registry name, each named for what it follows:
#:
#: * ``"appendix_f"``: what the paper's experiments ran (Appendix F: the surrogate trained with He
#:   et al.'s implementation "and all their default parameter settings", only the architecture
#:   varied), i.e. the defaults of ``bayesian_ntk/config.py`` as the authors' repository ships
#:   them (github.com/daizhongxiang/sto-bnts at f0a1759; ``sto_bnts.py`` passes
#:   ``parameterization='standard'``): standard parameterisation, ``W_std = 1.5``,
#:   ``b_std = 0.05`` on every layer, ``noise_scale = 0.1`` (``sigma``), full-batch
#:   ``optimizers.sgd(1e-3)`` for ``training_steps = 1000`` on ``1/2 mean (f - y)^2 + 1/2
#:   (sigma^2 / N) |theta - theta_0|_P^2`` (``loss_reduction="mean"``, loss (1) scaled), on the
#:   architecture of Sections 5.2-5.3 (``L = 2`` hidden layers of ``m = 256``, ReLU), inputs in
#:   ``[0, 1]^d`` (``"cube"``, Appendix E's domain); ``beta_t = 1``, fresh networks every round
#:   (Algorithm 1; He et al.'s defaults say nothing of the key), 10,000 random points refined by
#:   L-BFGS from 100 starts (Appendix F; here scrambled Sobol points plus the best observed points
#:   and perturbations of them, the 100 best refined); 5 initial points (Appendix F.2, the only
#:   count the paper gives; :data:`N_INIT_BY_NAME`). He et al.'s own repository
#:   (github.com/bobby-he/bayesian-ntk) has 50,000 steps; 1000 is the copy the authors ran. Not
#:   expressible: their raw, unstandardised targets (ntkbo standardises; ``sigma`` is then
#:   relative to the data's spread). STO-BNTS-Linear: the same network and query, its training
#:   the closed-form minimiser of (1) (what GD converges to; 1000 steps of ``1e-3`` need not get
#:   there: not expressible).
#: * ``"section2"``: Algorithm 1 as Sections 2-3 write it: ``init`` draws every parameter from
#:   ``N(0, 1)`` (NTK parameterisation, Arora et al.'s network without biases, ``W_std="paper"``),
#:   trained on (1) "till convergence" (Algorithm 1 line 6) by Levenberg-Marquardt until a step
#:   gains less than 1e-4 of the loss, at most 300 steps, where the paper uses gradient descent:
#:   (1) is not convex in the network's parameters, so the local minimiser reached need not be
#:   the one gradient descent from ``theta_0`` converges to (:func:`train_member`); with the
#:   architecture, ``beta_t``, query and initial design of ``"appendix_f"``. The input map and
#:   ``sigma`` are open in Section 2: the defaults' (the sphere, 0.1). STO-BNTS-Linear: the same
#:   network and query.
#: * ``"authors"`` (STO-BNTS; the Lunar-Lander code, github.com/daizhongxiang/sto-bnts,
#:   ``lunar_sto_bnts.py``: ``width 256, depth 2, noise_scale 0.1``): as ``"appendix_f"`` but
#:   10,000 GD steps (its ``configs``) and the same ``q`` networks every round
#:   (``PRNGKey(10)`` re-created inside its loop: ``fixed_key=True``), 20 initial points
#:   (``inits/init_itr_*_init_20.p``). Not expressible, as above: its raw targets.
#: * ``"linearized"`` (STO-BNTS): the defaults before 2026-11-27 (what the committed defaults table's
#:   ``sto_bnts`` row ran; no source claimed): ``optimizer="linearized"``, the closed-form
#:   minimiser of (1) for the network linearised at ``theta_0``, i.e. STO-BNTS-Linear's member
#:   with the readout anchor tied, not Algorithm 1's trained network.
#:
#: Every source-named preset runs without the duplicate guard (``search.avoid_observed``), as the
#: paper. The defaults differ from ``"section2"`` in the width (128 against 256; chosen on the
#: tuning keys, ``benchmarks/results/tuning-sto_bnts-train``), the training (10
#: Levenberg-Marquardt steps of the network on (1), where ``"section2"`` runs them until a step
#: gains less than 1e-4 of the loss; :func:`train_member`) and the cheaper query search.
_PAPER_QUERY = dict(search=dict(num_candidates=10_000, num_restarts=100, method="lbfgs",
                                avoid_observed=False))
_PAPER_ARCH = dict(width=256, depth=2, activation="relu")
_SECTION2_NET = dict(network=dict(**_PAPER_ARCH, W_std="paper", b_std=None,
                                  parameterization="ntk"),
                     beta=1.0, perturb_targets=False, fixed_key=False)
# He et al.'s network and noise as the authors' copy of ``bayesian_ntk/config.py`` has them.
_HE_NET = dict(network=dict(**_PAPER_ARCH, parameterization="standard", W_std=1.5, b_std=0.05),
               sigma=0.1, beta=1.0, perturb_targets=False, input_map="cube")
PRESETS_BY_NAME = {
    "sto_bnts": {
        "appendix_f": dict(**_HE_NET, training=dict(optimizer="gd", learning_rate=1e-3,
                                                    num_steps=1000, loss_reduction="mean",
                                                    tol=None),
                           fixed_key=False, **_PAPER_QUERY),
        "section2": dict(**_SECTION2_NET,
                         training=dict(optimizer="levenberg_marquardt", num_steps=300, tol=1e-4),
                         **_PAPER_QUERY),
        "authors": dict(**_HE_NET, training=dict(optimizer="gd", learning_rate=1e-3,
                                                 num_steps=10_000, loss_reduction="mean",
                                                 tol=None),
                        fixed_key=True, **_PAPER_QUERY),
        "linearized": dict(training=dict(optimizer="linearized"), network=dict(width=256)),
    },
    "sto_bnts_linear": {"appendix_f": dict(**_HE_NET, fixed_key=False, **_PAPER_QUERY),
                        "section2": dict(**_SECTION2_NET, **_PAPER_QUERY)},
}
#: The initial design of each source-named preset (``ntkbo.algorithms.design``): Appendix F.2's
#: 5 random points (the RF task; the paper states no other count), the Lunar-Lander code's 20.
N_INIT_BY_NAME = {
    "sto_bnts": {"appendix_f": 5, "section2": 5, "authors": 20},
    "sto_bnts_linear": {"appendix_f": 5, "section2": 5},
}
#: Their sampler (``ntkbo.algorithms.design_sampler``): uniform random points, Appendix F's
#: "initial inputs which are selected by random search" and the Lunar-Lander code's random
#: points; the drivers' default is scrambled Sobol.
DESIGN_SAMPLER_BY_NAME = {name: dict.fromkeys(presets, "uniform")
                          for name, presets in N_INIT_BY_NAME.items()}

_NETWORK = dict(width="width", depth="depth", activation="activation", W_std="W_std",
                b_std="b_std", parameterization="parameterization")
_SEARCH = dict(num_candidates="num_candidates", num_restarts="num_restarts",
               num_steps="num_acq_steps", method="acq_method", avoid_observed="avoid_observed")
#: Where ``sto_bnts``'s plain options sit among its parts (``ntkbo.parts``).
LAYOUT = Layout({
    "network": _NETWORK,
    "training": dict(optimizer="optimizer", num_steps="num_steps", learning_rate="learning_rate",
                     loss_reduction="loss_reduction", tol="tol"),
    "search": _SEARCH,
})
#: Where ``sto_bnts_linear``'s plain options sit among its parts: no training (a closed form).
LAYOUT_LINEAR = Layout({"network": _NETWORK, "search": _SEARCH})


class StoBntsSuggestInfo(NamedTuple):
    """The ``info`` of STO-BNTS's and STO-BNTS-Linear's ``suggest`` (standardised units,
    minimisation: the acquisition is ``-f~``, the negated trained member).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``-f~_j`` at each member's query.
      train_loss: ``(q, 2)`` loss (1) of each member at ``theta_0`` and after training.
      train_grad_norm: ``(q,)`` the norm of the gradient of (1) after training (STO-BNTS-Linear's
        closed form: zero up to rounding).
      train_ok: ``(q,)`` bool, the loss is finite and no worse than at the start, GD's last
        iterate did not diverge, and ``acq_value`` is finite.
      beta: ``()`` the output scale ``beta_t`` of this round.
      duplicates_replaced: ``()`` int32, queries that were observed points and were replaced
        (``ntkbo.optimize``).
    """

    acq_value: Array
    train_loss: Array
    train_grad_norm: Array
    train_ok: Array
    beta: Array
    duplicates_replaced: Array


class StoBntsState(NamedTuple):
    """The state of ``sto_bnts`` and ``sto_bnts_linear``.

    Attributes:
      data: raw observations (``ntkbo.data.Data``).
      bounds: ``(2, d)`` box.
      seed: with ``fixed_key=True``, ``()`` int32, the run's fixed network seed drawn in ``init``
        (:func:`member_keys`); ``()`` (nothing) otherwise.
    """

    data: D.Data
    bounds: Array
    seed: Union[Array, tuple]


# ---------------------------------------------------------------------------------------------
# Building blocks.


def theorem1_beta(t, domain_size, delta):
    """Theorem 1's ``beta_t = 2 log(pi^2 t^2 |X| / (3 delta))`` (Section 4.1).

    ``t`` is the iteration (round) index from 1 and ``|X|`` the size of the finite domain (for the
    unit cube discretised on a grid of spacing ``1/sqrt(T)``, ``|X| = T^(d/2)``, Appendix E). It
    multiplies the *standard deviation* of the sample and is conservative; the
    experiments use 1. ``sto_bnts``' ``beta`` receives the number of observations ``N``, not
    ``t``: with ``n_0`` initial points and ``q = B`` points a round, ``t = (N - n_0) / B + 1``,
    e.g. ``beta=lambda n: theorem1_beta((n - n0) // q + 1, size, delta)``.
    """
    t = jnp.asarray(t, jnp.result_type(float))
    return 2.0 * jnp.log(jnp.pi**2 * t**2 * domain_size / (3.0 * delta))


def sample_linear_member(key, apply_fn, theta0p: Params, z: Array, y: Array, mask: Array, lam,
                         prior_var: Params, beta: float | Array = 1.0,
                         perturb_targets: bool = False, jitter=None, theta0: Params | None = None):
    """One STO-BNTS-Linear draw with the features ``theta_0'`` given (Algorithm 2, lines 5-6).

    ``key`` gives ``theta_0 ~ init`` (unless ``theta0`` is given) and, with ``perturb_targets``, the
    target noise. Over keys, ``linear_member_fn(apply_fn, theta, theta0p, ., beta)`` is distributed
    as the GP posterior with kernel ``beta^2 Theta~(theta_0')`` and noise ``lam``, exactly with
    ``perturb_targets`` (:func:`linear_member_fn`, :func:`target_noise`).

    Returns:
      ``(theta, (loss_start, loss, grad_norm))``.
    """
    k0, k_eps = jax.random.split(key)
    if theta0 is None:
        theta0 = draw_params(k0, prior_var)
    if perturb_targets:
        y = y + target_noise(k_eps, mask, lam)
    return linear_solve(apply_fn, theta0, theta0p, z, y, mask, lam, prior_var, beta, jitter,
                        return_info=True)


def sample_member(key, apply_fn, depth: int, z: Array, y: Array, mask: Array, lam,
                  prior_var: Params, beta: float | Array = 1.0, perturb_targets: bool = False,
                  **train_kwargs):
    """One STO-BNTS draw (Algorithm 1, lines 4-7): ``theta_0``, ``theta_0'`` (readout zeroed) and
    the target noise from ``key``; trained by :func:`train_member` (``train_kwargs``).

    Returns:
      ``(theta, theta0, theta0p, (loss_start, loss, grad_norm, ok))``; the sample is
      ``trained_member_fn(optimizer)(apply_fn, theta, theta0, theta0p, ., beta)``
      (:func:`member_fn` unless ``optimizer="linearized"``).
    """
    k_par, k_eps = jax.random.split(key)
    theta0, theta0p = draw_params(k_par, prior_var, 2)
    theta0p = zero_last_layer(theta0p, depth)
    if perturb_targets:
        y = y + target_noise(k_eps, mask, lam)
    theta, l0, l1, gn, ok = train_member(apply_fn, theta0, theta0p, z, y, mask, lam, prior_var,
                                         beta, **train_kwargs)
    return theta, theta0, theta0p, (l0, l1, gn, ok)


# ---------------------------------------------------------------------------------------------
# The algorithms.


def _check_bool(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")


def member_keys(key, seed, q: int, fixed_key: bool = False):
    """``(network keys (q,), optimiser keys (q,))`` for one round: both from ``key`` (fresh networks
    every round), or, with ``fixed_key`` (the authors' code), the network keys from the run's
    ``seed`` alone (the same ``q`` networks every round).

    ``suggest``'s key is split into the network key and the optimiser key; the network key into
    ``q`` member keys, each giving ``(theta_0, theta_0')`` (one normal draw, :func:`draw_params`)
    and the target noise. The driver passes a fresh key every round, so every round draws ``q``
    new networks; the same key gives bit-identical suggestions. The authors' code re-creates
    ``PRNGKey(10)`` inside its loop; here the fixed seed is drawn once per run, in ``init``."""
    k_net, k_opt = jax.random.split(key)
    if fixed_key:
        k_net = jax.random.fold_in(jax.random.PRNGKey(0), seed)
    return jax.random.split(k_net, q), jax.random.split(k_opt, q)


def default_num_steps(optimizer) -> int:
    """``num_steps=None``'s value: 10,000 GD steps (the authors' code), 1,000 steps of an
    ``optax.GradientTransformation``, else 10 (Levenberg-Marquardt, chosen with the width 128 on
    the tuning keys, docs/decisions.md, 2026-11-27; ignored by ``"linearized"``)."""
    if is_transformation(optimizer):
        return 1000
    return 10_000 if optimizer == "gd" else 10


def _make(linear: bool, *, input_map, width, depth, q, sigma, beta, perturb_targets, activation,
          W_std, b_std, parameterization, optimizer, num_steps, learning_rate, loss_reduction,
          fixed_key, num_candidates, num_restarts, num_acq_steps, acq_method, jitter,
          avoid_observed, tol=None) -> Algorithm:
    _check_int("q", q, 1)
    _check_choice("input_map", input_map, INPUT_MAPS)
    _check_positive("sigma", sigma)
    if callable(beta):
        beta_fn = beta
    else:
        _check_positive("beta", beta)
        beta_value = float(beta)
        beta_fn = lambda n: jnp.asarray(beta_value, jnp.result_type(float))  # noqa: E731
    _check_bool("perturb_targets", perturb_targets)
    _check_bool("fixed_key", fixed_key)
    check_optimizer("optimizer", optimizer, OPTIMIZERS)
    _check_choice("loss_reduction", loss_reduction, LOSS_REDUCTIONS)
    if num_steps is None:
        num_steps = default_num_steps(optimizer)
    _check_int("num_steps", num_steps, 0 if optimizer == "gd" or is_transformation(optimizer) else 1)
    if tol is not None:  # used by Levenberg-Marquardt only (like num_steps, unused otherwise)
        _check_positive("tol", tol)
    if learning_rate is not None:
        _check_positive("learning_rate", learning_rate)
    check_acquisition_options(num_candidates, num_restarts, num_acq_steps, acq_method,
                              ACQ_METHODS)
    optimize.check_avoid_observed(avoid_observed)
    if jitter is not None and not (isinstance(jitter, (int, float)) and jitter >= 0):
        raise ValueError(f"jitter must be None or a number >= 0, got {jitter!r}")
    if isinstance(W_std, str):
        if W_std != "paper":
            raise ValueError(f"W_std must be 'paper' or scales (ntkbo.kernels.mlp), got {W_std!r}")
        _check_int("depth", depth, 1)
        W_std = (1.0,) + (2.0**0.5,) * depth
    spec = mlp_spec(depth, width, activation, W_std, b_std, parameterization)
    if any(w == 0 for w in spec.W_std):
        raise ValueError(f"W_std entries must be > 0, got {W_std!r}")
    if any(b is not None and b == 0 for b in spec.b_std):
        raise ValueError(f"b_std entries must be > 0 or None, got {b_std!r}")
    init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=spec.W_std, b_std=spec.b_std,
                               parameterization=spec.parameterization)

    @functools.lru_cache(maxsize=None)
    def param_shapes(d):
        return jax.eval_shape(lambda k: init_fn(k, (-1, d))[1], jax.random.PRNGKey(0))

    def embed(z):
        return embed_inputs(z, input_map)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        seed = (jax.random.randint(key, (), 0, np.iinfo(np.int32).max, dtype=jnp.int32)
                if fixed_key else ())
        return StoBntsState(D.empty(capacity, bounds.shape[-1], bounds.dtype), bounds, seed)

    def update(state, x, y):
        return state._replace(data=D.append(state.data, x, y)), NoInfo()

    def suggest(key, state):
        data = state.data
        d = state.bounds.shape[-1]
        dtype = state.bounds.dtype
        mask, z, ys, unit = unit_view(data, state.bounds)
        beta_t = jnp.asarray(beta_fn(data.count), dtype)
        lam = beta_t**2 * jnp.asarray(sigma, dtype) ** 2
        starts = best_points(z, ys, mask, NUM_BEST)
        d_in = d + 1 if input_map == "sphere" else d
        prior_var = prior_variances(param_shapes(d_in), spec)
        x = embed(z)

        def one(k_member, k_acq):
            if linear:
                k_par, k_rest = jax.random.split(k_member)
                theta0, theta0p = draw_params(k_par, prior_var, 2)
                theta, (l0, l1, gn) = sample_linear_member(
                    k_rest, apply_fn, theta0p, x, ys, mask, lam, prior_var, beta_t,
                    perturb_targets, jitter, theta0=theta0)
                train_ok = jnp.isfinite(l1) & (l1 <= l0)
                sample = lambda zc: linear_member_fn(  # noqa: E731
                    apply_fn, theta, theta0p, embed(zc), beta_t)
            else:
                theta, theta0, theta0p, (l0, l1, gn, train_ok) = sample_member(
                    k_member, apply_fn, depth, x, ys, mask, lam, prior_var, beta_t,
                    perturb_targets, optimizer=optimizer, num_steps=num_steps,
                    learning_rate=learning_rate, reduction=loss_reduction, jitter=jitter, tol=tol)
                fn = trained_member_fn(optimizer)
                sample = lambda zc: fn(  # noqa: E731
                    apply_fn, theta, theta0, theta0p, embed(zc), beta_t)
            zq, value, opt_info = optimize.maximize_acquisition(
                k_acq, lambda zc: -sample(zc), unit, num_candidates=num_candidates,
                num_restarts=num_restarts, x_best=starts, num_steps=num_acq_steps,
                method=acq_method, observed=optimize.guarded(avoid_observed, z, mask))
            ok = train_ok & jnp.isfinite(value)
            return zq, value, l0, l1, gn, ok, opt_info.replaced

        zs, values, l0, l1, gn, ok, replaced = jax.vmap(one)(
            *member_keys(key, state.seed, q, fixed_key))
        info = StoBntsSuggestInfo(acq_value=values, train_loss=jnp.stack([l0, l1], axis=-1),
                                  train_grad_norm=gn, train_ok=ok, beta=beta_t,
                                  duplicates_replaced=jnp.sum(replaced).astype(jnp.int32))
        return from_unit(zs, state.bounds), info

    # The members' kernel: the NTK of the network in NTK parameterisation with the same scales
    # (``ntkbo.nets.prior_variances`` maps the standard parameterisation onto it).
    ntk = as_kernel(mlp(depth, width, activation, W_std=spec.W_std, b_std=spec.b_std)[2], "ntk")

    def posterior_mean(state, x):
        """The NTK-GP posterior mean (eq. 2) the members sample around, ``Theta_xX (Theta_XX +
        sigma^2 I)^-1 y`` (``beta`` cancels from kernel and noise), in ``y``'s units: the
        infinite-width mean of the trained members, the expected mean of the linear ones
        (``observations.kernel_mean``; ``Algorithm.posterior_mean``)."""
        return kernel_mean(ntk, state.data, state.bounds, sigma**2, x, embed, jitter)

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


BetaSpec = Union[float, Callable[[Array], Array]]


def _sto_bnts(
    *,
    width: int = 128,
    depth: int = 2,
    q: int = 1,
    sigma: float = 0.1,
    beta: BetaSpec = 1.0,
    perturb_targets: bool = False,
    activation="relu",
    W_std="paper",
    b_std=None,
    parameterization: str = "ntk",
    optimizer="levenberg_marquardt",
    num_steps: int | None = None,
    learning_rate: float | None = None,
    loss_reduction: str = "sum",
    tol: float | None = None,
    fixed_key: bool = False,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    jitter: float | None = None,
    input_map: str = "sphere",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``sto_bnts`` with its flat options (``LAYOUT`` places them in the parts)."""
    return _make(False, input_map=input_map, width=width, depth=depth, q=q, sigma=sigma,
                 beta=beta,
                 perturb_targets=perturb_targets, activation=activation, W_std=W_std, b_std=b_std,
                 parameterization=parameterization, optimizer=optimizer, num_steps=num_steps,
                 learning_rate=learning_rate, loss_reduction=loss_reduction, fixed_key=fixed_key,
                 num_candidates=num_candidates, num_restarts=num_restarts,
                 num_acq_steps=num_acq_steps, acq_method=acq_method, jitter=jitter, tol=tol,
                 avoid_observed=avoid_observed)


def _sto_bnts_linear(
    *,
    width: int = 256,
    depth: int = 2,
    q: int = 1,
    sigma: float = 0.1,
    beta: BetaSpec = 1.0,
    perturb_targets: bool = False,
    activation="relu",
    W_std="paper",
    b_std=None,
    parameterization: str = "ntk",
    fixed_key: bool = False,
    num_candidates: int = 1024,
    num_restarts: int = 4,
    num_acq_steps: int = 30,
    acq_method: str = "pgd",
    jitter: float | None = None,
    input_map: str = "sphere",
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``sto_bnts_linear`` with its flat options (``LAYOUT_LINEAR`` places them in the parts)."""
    return _make(True, input_map=input_map, width=width, depth=depth, q=q, sigma=sigma,
                 beta=beta,
                 perturb_targets=perturb_targets, activation=activation, W_std=W_std, b_std=b_std,
                 parameterization=parameterization, optimizer="levenberg_marquardt", num_steps=None,
                 learning_rate=None, loss_reduction="sum", fixed_key=fixed_key,
                 num_candidates=num_candidates, num_restarts=num_restarts,
                 num_acq_steps=num_acq_steps, acq_method=acq_method, jitter=jitter,
                 avoid_observed=avoid_observed)


@composed(_sto_bnts, LAYOUT)
def sto_bnts(
    *,
    network: PartOption = None,
    q: int = 1,
    sigma: float = 0.1,
    beta: BetaSpec = 1.0,
    perturb_targets: bool = False,
    training: PartOption = None,
    fixed_key: bool = False,
    search: PartOption = None,
    jitter: float | None = None,
    input_map: str = "sphere",
) -> Algorithm:
    """STO-BNTS (Algorithm 1; the formulas and the sign convention in the module docstring).

    Outputs are standardised over the valid observations (mean 0, std 1) before training, so
    ``sigma`` is relative to the spread of the data (the authors' code fixes ``sigma = 0.1`` on
    raw returns); the sample's argmin is unchanged by this affine map. Each member's trained
    function is a deterministic, differentiable function of ``z``, so its minimiser over the box
    is found by ``ntkbo.optimize.maximize_acquisition`` on ``-f~``: quasi-random candidates plus
    perturbations of the 4 best observed points, then projected gradient refinement of the best
    ``num_restarts`` (the paper: 10,000 random points and L-BFGS-B from 100 starts, Appendix F;
    ``preset="appendix_f"``). Two members may return the same point; as in the paper, nothing
    prevents it; a member's point may repeat an observed one unless ``search.avoid_observed``
    (``"auto"`` by default: on for a noise-free problem, off for a noisy one; off in every
    source-named preset) replaces it (``ntkbo.optimize``).

    The defaults' training is the nonlinear network on (1) by 10 Levenberg-Marquardt steps at
    width 128, short of convergence (:func:`train_member`). Presets (:data:`PRESETS_BY_NAME`):
    ``preset="appendix_f"`` is what the paper's experiments ran (He et al.'s defaults:
    ``parameterization="standard", W_std=1.5, b_std=0.05, input_map="cube"``, ``optimizer="gd",
    learning_rate=1e-3, num_steps=1000, loss_reduction="mean"``, width 256, 5 initial points);
    ``preset="section2"`` Algorithm 1 as Sections 2-3 state it (NTK parameterisation without
    biases, width 256, ``optimizer="levenberg_marquardt", num_steps=300, tol=1e-4`` for "till
    convergence": a local minimiser of the non-convex (1), not necessarily GD's);
    ``preset="authors"`` the Lunar-Lander code (as ``"appendix_f"`` with ``num_steps=10_000``,
    ``fixed_key=True``, contrary to the paper's independent draws, 20 initial points);
    ``preset="linearized"`` the defaults before 2026-11-27 (``optimizer="linearized"``, width
    256).

    Args:
      network: each member's network (``ntkbo.parts.Network``, ``ntkbo.kernels.mlp``): ``width``
        ``m`` (default 128, chosen on the tuning keys with the training; paper: 256), ``depth``
        hidden layers (2, the paper's ``L = 2``), ``activation`` (ReLU), ``W_std`` (``"paper"``:
        Arora et al.'s ``(1, sqrt2, ..., sqrt2)`` on ``embed_inputs``'s output; or scales),
        ``b_std`` (``None``: no biases, paper), ``parameterization`` (``"ntk"``, paper, or
        ``"standard"``). Appendix F and the authors' code: ``W_std=1.5, b_std=0.05,
        parameterization="standard"`` with ``input_map="cube"``.
      training: how each network is trained on loss (1) (``ntkbo.parts.Training``,
        :func:`train_member`): ``optimizer`` ``"levenberg_marquardt"`` (default: the network
        itself, towards a local minimiser of (1); ``preset="section2"`` stands in for the paper's
        training "till convergence" with ``num_steps=300, tol=1e-4``), ``"gd"`` (the paper's
        gradient descent; the authors' code, ``preset="authors"``) or ``"linearized"`` (not
        Algorithm 1: the closed-form minimiser of (1) for the network linearised at
        ``theta_0``, i.e. STO-BNTS-Linear's member with the readout anchor tied; the default
        before 2026-11-27, ``preset="linearized"``), or an ``optax.GradientTransformation``
        (its own step size, on ``loss_reduction``'s loss); ``num_steps`` (``None``: 10
        Levenberg-Marquardt, 10,000 GD or 1,000 optax steps; unused by ``"linearized"``);
        ``learning_rate``,
        GD's step (``None``: the stable default of :func:`train_member`; authors' code ``1e-3``
        with ``loss_reduction="mean"``); ``loss_reduction`` ``"sum"`` (loss (1)) or ``"mean"``
        (authors' code), which changes GD's scale only; ``tol``, Levenberg-Marquardt only
        (unused otherwise): stop after the first step that lowers (1) by less than ``tol``
        times its value (at most ``num_steps``; ``None``: exactly ``num_steps`` steps;
        ``preset="section2"``: ``1e-4``).
      search: each member's minimiser over the box (``ntkbo.parts.Search``,
        ``ntkbo.optimize.maximize_acquisition``): ``num_candidates`` (1024; paper 10,000),
        ``num_restarts`` refined (4; paper 100), ``num_steps`` of refinement (30) by
        ``method`` (``"pgd"``; paper ``"lbfgs"``), ``avoid_observed`` (the duplicate guard,
        ``ntkbo.optimize``: ``"auto"``, on for a noise-free problem, off for a noisy one;
        ``False`` in every source-named preset, as the paper).
      q: the batch size ``B``: independently drawn networks per round.
      sigma: noise standard deviation ``sigma`` of loss (1), on standardised outputs; the
        regulariser's weight is ``lam = beta^2 sigma^2`` (authors' code: 0.1, on raw outputs).
      beta: ``beta_t``: a number (paper experiments: 1) or a function of the number of observations
        ``N`` (int array, the initial design included) returning a scalar; Theorem 1's
        ``beta_t`` is a function of the round ``t``, not of ``N``: build it on
        :func:`theorem1_beta` with ``t = (N - n_init) / q + 1``.
      perturb_targets: train member ``i`` on ``y + eps_i``, ``eps_i ~ N(0, lam I)``: exact posterior
        samples for the linearised network's kernel with ``optimizer="linearized"``, for the
        trained network only in the infinite-width limit (Appendix A). Off in the paper and the
        authors' code.
      fixed_key: reuse the same ``q`` networks every round (authors' code), not the paper's fresh
        ones.
      jitter: relative Cholesky jitter of the ``N x N`` solves, used only where ``lam`` is below it
        (``None``: ``ntkbo.gp.default_jitter``).
      input_map: ``"sphere"`` (default) or ``"cube"``: where the unit cube goes in the paper's
        input domain (:func:`embed_inputs`).

    Returns:
      An ``ntkbo.Algorithm``. ``suggest(key, state)`` trains ``q`` fresh networks (``vmap``) and
      returns ``(x (q, d), info)``, ``info`` a :class:`StoBntsSuggestInfo`: ``acq_value``
      ``(q,)`` (``-f~`` at ``x``, standardised units), ``train_loss`` ``(q, 2)`` (loss (1) at
      ``theta_0`` and after training), ``train_grad_norm`` ``(q,)`` (its gradient norm after
      training), ``train_ok`` ``(q,)`` (bool: the loss is finite and no worse than at the start,
      GD's last iterate did not diverge, and ``acq_value`` is finite), ``beta`` ``()`` and
      ``duplicates_replaced``. ``update`` only appends the observations (``NoInfo``).

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _sto_bnts(**LAYOUT.flatten(locals(), "sto_bnts"))


@composed(_sto_bnts_linear, LAYOUT_LINEAR)
def sto_bnts_linear(
    *,
    network: PartOption = None,
    q: int = 1,
    sigma: float = 0.1,
    beta: BetaSpec = 1.0,
    perturb_targets: bool = False,
    fixed_key: bool = False,
    search: PartOption = None,
    jitter: float | None = None,
    input_map: str = "sphere",
) -> Algorithm:
    """STO-BNTS-Linear (Algorithm 2): the linear model ``beta <grad f(z; theta_0'), theta>`` trained
    from ``theta_0`` on loss (1), solved in closed form (:func:`linear_solve`); an exact posterior
    sample under the empirical NTK at ``theta_0'`` with ``perturb_targets`` (:func:`target_noise`).

    Args: as :func:`sto_bnts` without ``training``; ``network.width`` defaults to 256 (the
    paper's). Presets: ``"appendix_f"`` (the experiments' network, Appendix F; the closed form
    stands for He et al.'s 1000 GD steps) and ``"section2"`` (:data:`PRESETS_BY_NAME`). ``info`` is the same
    :class:`StoBntsSuggestInfo`; ``train_loss``/``train_grad_norm`` check the closed form (the
    gradient vanishes to rounding).
    """
    return _sto_bnts_linear(**LAYOUT_LINEAR.flatten(locals(), "sto_bnts_linear"))
