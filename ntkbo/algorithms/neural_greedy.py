r"""Neural Greedy with SimpleSMB / PosteriorSMB (Biswajit Paria, Barnabas Poczos, Pradeep Ravikumar,
Jeff Schneider and Arun Sai Suggala, "Be Greedy -- a Simple Algorithm for Blackbox Optimization
using Neural Networks").

Algorithm 1, in ntkbo's conventions (the paper *minimises*, like ntkbo: no sign change)::

    t <= T_e:  x_t ~ Uniform(box)                                   (random exploration)
    t >  T_e:  f~_t = SURRMODELBUILDER(D_{t-1}),  x_t = argmin_x f~_t(x)       (greedy phase)

with a **freshly initialised** network every round (fresh keys from ``suggest``'s key; warm
starting removes all exploration: the conditional variance collapses to 0, as the paper's
discussion of Prop. 1 says). The two model builders (Algorithms 2, 3)::

    SimpleSMB                                    PosteriorSMB (He et al. 2020's correction)
    y'_i = y_i + nu eps_i, eps_i ~ N(0, sigma^2)       the same
    theta_0 ~ NTK-INIT(gamma)                          theta_0, theta~_0 ~ NTK-INIT(gamma), the
                                                       readout (kernel and bias) of theta~_0 zeroed
                                                       delta(x) = <grad f(x; theta_0), theta~_0>
    min_th sum_i (y'_i - nu f(x_i; th))^2              min_th sum_i (y'_i - nu [f(x_i; th)
           + sigma^2 nu^2 |th - theta_0|^2                    + delta(x_i)])^2 + sigma^2 nu^2 |..|^2
    return nu f(.; theta_t)                            return nu [f(.; theta_t) + delta(.)]

This is exactly STO-BNTS's member (``ntkbo.algorithms.sto_bnts``) with ``beta = nu``,
``lam = nu^2 sigma^2`` and target perturbation on; SimpleSMB is the same with ``theta~_0 = 0``
(no ``delta``). Both share STO-BNTS's member draws and training (``ntkbo.nets``: ``draw_params``,
``jvp_term``, ``train_member``, ...) and input map (``observations.embed_inputs``).

At infinite width PosteriorSMB's network is a draw from the NTK-GP posterior (Prop. 2), GP-Thompson
sampling with the NTK; SimpleSMB's has the same mean but a covariance that is no GP posterior's
(Prop. 1). :func:`simple_smb` and :func:`posterior_smb` give the formulas.

**Defaults and the paper.** ``preset="paper"`` (:data:`PRESETS`) is App. F.2's setting (width
5000, 1000 Adam steps at ``1e-3`` per round, ``gamma = 1``, ``sigma = 0``, 10 starts of 500
descent steps), minutes per round on a CPU. The defaults are CPU-sized and chosen on tuning keys
(docs/decisions.md, 2026-11-24): ``width=256``, ``gamma=1.5``, ``sigma=0.1``, 5 Levenberg-Marquardt
steps (``train_smb``), 100 descent steps per start. Where ntkbo must differ (``smb_network``):
``"erf"`` instead of tanh (no closed-form tanh kernel), every bias ``N(0, 1)`` (App. A, where F.2
zeroes the readout bias); where the paper says nothing: inputs on the unit sphere, standardised
outputs. Theorem 3 instead uses ``sigma^2 = 1 + 2/T`` and a growing ``nu_t`` (PosteriorSMB);
pass them explicitly.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from ntkbo.validation import check_bounds
from ntkbo import data as D
from ntkbo import optimize
from ntkbo.algorithms.observations import (best_points, embed_inputs, from_unit, kernel_mean,
                                          unit_view)
from ntkbo.base import Algorithm, NoInfo
from ntkbo.kernels import as_kernel, mlp, mlp_spec
from ntkbo.nets import (check_optimizer, draw_params, is_transformation, jvp_term, member_fn,
                        prior_variances, target_noise, train_member, zero_last_layer)
from ntkbo.nets import train as _nbo_train
from ntkbo.parts import Layout, PartOption, composed
from ntkbo.validation import (check_acquisition_options, check_choice, check_int,
                              check_positive)

Array = jax.Array
Params = Any

SMBS = ("simple", "posterior")
OPTIMIZERS = ("adam", "levenberg_marquardt", "gd")
INPUT_MAPS = ("cube", "sphere")

#: Named settings: ``ntkbo.algorithms.neural_greedy(preset=NAME, **options)`` (and ``simple_smb``,
#: ``posterior_smb``: one preset for the three names, so it never sets ``smb``) starts from these,
#: the ``options`` given override them (``ntkbo.algorithms``, "Presets").
#:
#: * ``"paper"``: the paper's experiments (App. F.2 and Section 3): one
#:   hidden layer of width 5000; ``gamma = 1`` (the value of its baselines; its own runs tuned
#:   ``gamma`` in ``[0.5, 5]`` per function and do not report the choice, Figs. 4-5); ``nu = 1``,
#:   ``sigma = 0`` (no target noise, no regulariser, F.2); Adam at ``1e-3`` (F.2; the number of
#:   steps is not given: ``training.num_steps=None``, Adam's 1000 in ntkbo); the surrogate minimised from 10
#:   uniform random starts,
#:   500 gradient steps each, the best kept, no observed points as starts (F.2); ``T_e = 10``
#:   (Section 2: "typically <= 10").
#:
#: Not expressible, so ntkbo's choice stays (see ``smb_network``): tanh (``"erf"``, no
#: closed-form tanh kernel); F.2's final bias initialised at 0 (every bias is ``N(0, 1)``); plain
#: gradient descent with a fixed step 0.01 on the surrogate (``"pgd"``, the box handling is not
#: stated); F.2's ``T_e = 5 d`` clipped to ``[0.025 T, 0.075 T]``, which needs the budget ``T``
#: (pass ``num_explore=paper_num_explore(d, T)``); the inputs and output scaling, which the paper
#: does not state (unit sphere, standardised outputs).
PRESETS = {
    "paper": dict(network=dict(width=5000, depth=1), gamma=1.0, sigma=0.0, nu=1.0,
                  training=dict(optimizer="adam", num_steps=None, learning_rate=1e-3),
                  num_explore=10,
                  search=dict(num_candidates=10, num_restarts=10, num_steps=500,
                              sampler="uniform", num_best=0, avoid_observed=False)),
}

#: Where ``neural_greedy``'s plain options sit among its parts (``ntkbo.parts``). The network's
#: weight and bias scales are both ``gamma``, a top-level option.
LAYOUT = Layout({
    "network": dict(width="width", depth="depth", activation="activation"),
    "training": dict(optimizer="optimizer", num_steps="num_steps", learning_rate="learning_rate"),
    "search": dict(num_candidates="num_candidates", num_restarts="num_restarts",
                   num_steps="num_acq_steps", method="acq_method", sampler="sampler",
                   num_best="num_best", avoid_observed="avoid_observed"),
})

__all__ = [
    "GreedySuggestInfo", "GreedyState", "LAYOUT", "PRESETS", "neural_greedy", "paper_num_explore",
    "posterior_smb", "simple_smb", "smb_network", "train_smb",
]


class GreedySuggestInfo(NamedTuple):
    """The ``info`` of the Neural Greedy family's ``suggest`` (``neural_greedy``, ``simple_smb``,
    ``posterior_smb``; standardised units, minimisation: the acquisition is ``-f~``, the negated
    trained network).

    Attributes:
      acq_value: ``(q,)`` the maximised acquisition ``-f~_j`` at each chosen point (0 while
        exploring).
      train_loss: ``(q, 2)`` each network's training loss at the start and of the returned
        parameters (``train_smb``; 0 while exploring).
      train_ok: ``(q,)`` bool, the training loss is finite and no worse than at the start, and
        ``acq_value`` is finite (True while exploring).
      explore: ``()`` bool, the points are uniform random draws (fewer than ``num_explore``
        observations).
      duplicates_replaced: ``()`` int32, minimisers that were observed points and were replaced
        (``ntkbo.optimize``).
    """

    acq_value: Array
    train_loss: Array
    train_ok: Array
    explore: Array
    duplicates_replaced: Array


class GreedyState(NamedTuple):
    """``data``: raw observations; ``bounds``: ``(2, d)``."""

    data: D.Data
    bounds: Array


# ---------------------------------------------------------------------------------------------
# Building blocks.


def paper_num_explore(d: int, budget: int) -> int:
    """App. F.2's ``T_e = 5 d`` clipped to ``[0.025 T, 0.075 T]`` (rounded; at least 1)."""
    lo, hi = 0.025 * budget, 0.075 * budget
    return max(1, int(round(min(max(5 * d, lo), hi))))


def smb_network(d_in: int, width: int = 5000, depth: int = 1, activation="erf", gamma=1.0):
    """``(apply_fn, prior_var, kernel_fn)`` of App. A's network on inputs of dimension ``d_in``:
    ``ntkbo.kernels.mlp(depth, width, activation, W_std=gamma, b_std=gamma)`` in NTK
    parameterisation (every parameter ``N(0, 1)``: ``prior_var`` is a pytree of ones shaped like
    the parameters). ``kernel_fn(x1, x2, get=("nngp", "ntk"))`` gives ``K`` and ``Theta`` of
    Props. 1-2 (before the ``nu^2`` factor).

    App. A's network: ``depth`` hidden layers in NTK parameterisation, every parameter ``N(0, 1)``,
    ``sigma_W = sigma_b = gamma`` (``ntkbo.kernels.mlp(depth, width, activation, W_std=gamma,
    b_std=gamma)``, readout bias included so that ``Cov(delta) = Theta - K`` exactly, Prop. 2).
    Deviations, with reasons:

    * **activation** ``"erf"`` instead of the paper's tanh: ntkbo has no closed-form tanh kernel and
      the exact kernel must be available for the GP correspondence (erf is the closed-form tanh-like
      activation, as neural-tangents' ``stax.Erf``). Any activation of ``ntkbo.kernels.ACTIVATIONS``
      can be passed.
    * App. F.2 initialises the final bias at 0 (standard-parameterisation wording). That makes
      ``f + delta ~ GP(0, Theta - sigma_b^2)`` rather than ``GP(0, Theta)``, so ntkbo follows App. A
      (all parameters ``N(0, 1)``); :func:`train_smb` accepts any network (``apply_fn``,
      ``prior_var``), e.g. one built with ``ntkbo.kernels.mlp`` without a readout bias.
    * Inputs (the paper does not say): the box is mapped onto the unit sphere in ``d + 1``
      dimensions (``input_map="sphere"``, default: ``ntkbo.algorithms.observations.embed_inputs``,
      the centre of the box at the pole) or to the unit cube ``z`` itself (``"cube"``). On
      Hartmann-6 the cube did no better than random search (docs/decisions.md, 2026-11-22).
      Outputs are standardised (mean 0, std 1) before training (the paper does not say; it
      fixes the scale on which ``sigma`` and ``nu`` act; the argmin is unchanged).
    """
    init_fn, apply_fn, kernel_fn = mlp(depth, width, activation, W_std=gamma, b_std=gamma)
    shapes = jax.eval_shape(lambda k: init_fn(k, (-1, d_in))[1], jax.random.PRNGKey(0))
    spec = mlp_spec(depth, width, activation, gamma, gamma)
    return apply_fn, prior_variances(shapes, spec), kernel_fn


def train_smb(key, apply_fn, prior_var: Params, depth: int, x: Array, y: Array, mask=None, *,
              posterior: bool, sigma=0.0, nu=1.0, optimizer="levenberg_marquardt",
              num_steps: int | None = None, learning_rate=None, jitter=None):
    """Algorithm 2 (``posterior=False``) or 3 (``True``), lines 1-5: draw, perturb, train.

    ``key`` gives ``(theta_0, theta~_0)`` (one :func:`ntkbo.nets.draw_params` call;
    SimpleSMB draws ``theta~_0`` too and discards it, so both builders share ``theta_0`` and the
    target noise for the same key) and ``eps``.

    Training (``optimizer``): ``"adam"`` (the paper's experiments: Adam, fixed learning rate
    ``1e-3``; the number of steps is not given: ``num_steps=1000`` here) on
    ``1/2 sum_i r_i^2 + 1/2 sigma^2 nu^2 |th - theta_0|^2`` (half of the loss above, the same
    minimiser; ``ntkbo.algorithms.neural_bo.train``); ``"levenberg_marquardt"`` (STO-BNTS's monotone
    Levenberg-Marquardt, default 10 steps: its first Gauss-Newton step is the trained *linearised*
    network, i.e. the infinite-width limit the propositions describe); ``"gd"`` (Algorithms 2-3's
    gradient descent, STO-BNTS's stable default step); or an ``optax.GradientTransformation``,
    trained as Adam is (its own step size, default 1000 steps). ``sigma = 0`` (the paper's experiments) means
    no regulariser and no target noise; the Levenberg-Marquardt solves then use a ``1e-10`` relative
    jitter (``ntkbo.gp.default_jitter``).

    Args:
      apply_fn, prior_var, depth: the network (:func:`smb_network`; ``prior_var`` all ones).
      x: ``(n, d_in)`` network inputs; y: ``(n,)`` targets; mask: ``(n,)`` valid rows (default all).
      posterior: add He et al.'s ``delta`` (PosteriorSMB).
      sigma, nu: the paper's ``sigma`` (``sigma^2`` the noise variance; ``>= 0``) and ``nu``.
      optimizer, num_steps, learning_rate: training, above (``None``: 10 Levenberg-Marquardt, 1000
        Adam, 10,000 GD steps; Adam ``1e-3``; GD STO-BNTS's stable step).
      jitter: relative Cholesky jitter of the Levenberg-Marquardt / GD-step solves.

    Returns:
      ``(theta, theta0, theta0p, (loss_start, loss, ok))``: the trained parameters, ``theta_0``,
      ``theta~_0`` (readout zeroed; all zeros for SimpleSMB), the loss
      ``sum r^2 + sigma^2 nu^2 |theta - theta_0|^2`` at ``theta_0`` and ``theta``, and ``ok``
      (finite, not worse than the start). The trained function is
      ``nu [f(.; theta) + <grad f(.; theta0), theta0p>]`` (:func:`simple_smb` returns it).
    """
    check_optimizer("optimizer", optimizer, OPTIMIZERS)
    x = jnp.asarray(x)
    y = jnp.asarray(y, x.dtype)
    mask = jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)
    nu = jnp.asarray(nu, x.dtype)
    lam = nu**2 * jnp.asarray(sigma, x.dtype) ** 2
    k_par, k_eps = jax.random.split(key)
    theta0, theta0p = draw_params(k_par, prior_var, 2)
    if posterior:
        theta0p = zero_last_layer(theta0p, depth)
    else:
        theta0p = jax.tree_util.tree_map(jnp.zeros_like, theta0p)
    y = jnp.where(mask, y, 0.0) + target_noise(k_eps, mask, lam)  # y' = y + nu eps
    if optimizer == "adam" or is_transformation(optimizer):
        offset = jvp_term(apply_fn, theta0, theta0p, x)  # delta(x_i): not trained

        def net(th, xx):
            return (nu * (apply_fn(th, xx)[:, 0] + offset))[:, None]

        steps = 1000 if num_steps is None else num_steps
        lr = 1e-3 if learning_rate is None else learning_rate
        # neural_bo.train minimises half of the loss (same minimiser).
        theta, l0, l1, ok = _nbo_train(net, theta0, theta0, x, y, mask, lam, lr, steps,
                                       optimizer=optimizer)
        l0, l1 = 2.0 * l0, 2.0 * l1
        ok = ok & jnp.isfinite(l1)
    else:
        steps = (10 if optimizer == "levenberg_marquardt" else 10_000) if num_steps is None \
            else num_steps
        theta, l0, l1, _, ok = train_member(
            apply_fn, theta0, theta0p, x, y, mask, lam, prior_var, nu, optimizer=optimizer,
            num_steps=steps, learning_rate=learning_rate, jitter=jitter)
    return theta, theta0, theta0p, (l0, l1, ok)


def _smb(posterior, key, apply_fn, prior_var, depth, x, y, mask=None, **kwargs):
    theta, theta0, theta0p, info = train_smb(key, apply_fn, prior_var, depth, x, y, mask,
                                             posterior=posterior, **kwargs)
    nu = kwargs.get("nu", 1.0)

    def fn(xs: Array) -> Array:
        return member_fn(apply_fn, theta, theta0, theta0p, xs, nu)

    return fn, info


def simple_smb(key, apply_fn, prior_var, depth, x, y, mask=None, **kwargs
               ) -> tuple[Callable[[Array], Array], tuple]:
    """SimpleSMB (Algorithm 2): ``(f~, info)`` with ``f~(xs (n, d_in)) -> (n,)`` the returned
    ``nu f(.; theta_t)`` and ``info = (loss_start, loss, ok)``; arguments as :func:`train_smb`.
    Over keys, at large width, ``f~`` has Prop. 1's mean and covariance.

    What the trained network is (infinite width, training to convergence in the lazy regime;
    ``K`` the NNGP kernel, ``Theta`` the NTK of the network, ``A = Theta_XX + sigma^2 I``):

    * PosteriorSMB (Prop. 2): a draw from the NTK-GP posterior, mean ``Theta_xX A^-1 Y``, covariance
      ``nu^2 (Theta_xx' - Theta_xX A^-1 Theta_Xx')``: GP-Thompson sampling with the NTK.
    * SimpleSMB (Prop. 1): the same mean, covariance ``nu^2 [K_xx' - (Theta_xX A^-1 K_Xx' + h.c.)
      + Theta_xX A^-1 (K_XX + sigma^2 I) A^-1 Theta_Xx']``: not a posterior of any GP.

    Both are checked numerically in ``tests/test_neural_greedy.py`` (slow tests).
    """
    return _smb(False, key, apply_fn, prior_var, depth, x, y, mask, **kwargs)


def posterior_smb(key, apply_fn, prior_var, depth, x, y, mask=None, **kwargs
                  ) -> tuple[Callable[[Array], Array], tuple]:
    """PosteriorSMB (Algorithm 3): ``(f~, info)`` with ``f~(xs (n, d_in)) -> (n,)`` the returned
    ``nu [f(.; theta_t) + delta(.)]``; arguments as :func:`train_smb`. Over keys, at large width,
    ``f~`` is a draw from the NTK-GP posterior (Prop. 2).

    See :func:`simple_smb` for both propositions.
    """
    return _smb(True, key, apply_fn, prior_var, depth, x, y, mask, **kwargs)


# ---------------------------------------------------------------------------------------------
# The algorithm.


def _neural_greedy(
    *,
    smb: str = "simple",
    width: int = 256,
    depth: int = 1,
    gamma: float = 1.5,
    sigma: float = 0.1,
    nu: float = 1.0,
    activation="erf",
    optimizer="levenberg_marquardt",
    num_steps: int | None = 5,
    learning_rate: float | None = None,
    num_explore: int = 10,
    q: int = 1,
    input_map: str = "sphere",
    num_candidates: int = 10,
    num_restarts: int = 10,
    num_acq_steps: int = 100,
    acq_method: str = "pgd",
    sampler: str = "uniform",
    num_best: int = 0,
    jitter: float | None = None,
    avoid_observed: bool | str = optimize.AVOID_OBSERVED,
) -> Algorithm:
    """``neural_greedy`` with its flat options (``LAYOUT`` places them in the parts)."""
    check_choice("smb", smb, SMBS)
    check_int("width", width, 1)
    check_int("depth", depth, 1)
    check_positive("gamma", gamma)
    check_positive("sigma", sigma, allow_zero=True)
    check_positive("nu", nu)
    check_optimizer("optimizer", optimizer, OPTIMIZERS)
    if num_steps is not None:
        check_int("num_steps", num_steps, 1)
    if learning_rate is not None:
        check_positive("learning_rate", learning_rate)
    check_int("num_explore", num_explore, 0)
    check_int("q", q, 1)
    check_choice("input_map", input_map, INPUT_MAPS)
    check_acquisition_options(num_candidates, num_restarts, num_acq_steps, acq_method,
                              optimize.METHODS)
    check_choice("sampler", sampler, optimize.SAMPLERS)
    check_int("num_best", num_best, 0)
    optimize.check_avoid_observed(avoid_observed)
    if jitter is not None:
        check_positive("jitter", jitter, allow_zero=True)
    mlp_spec(depth, width, activation, gamma, gamma)  # validates the activation
    posterior = smb == "posterior"

    @functools.lru_cache(maxsize=None)
    def network(d_in):  # caches shapes only: arrays made under a trace must not be cached
        init_fn, apply_fn, _ = mlp(depth, width, activation, W_std=gamma, b_std=gamma)
        shapes = jax.eval_shape(lambda k: init_fn(k, (-1, d_in))[1], jax.random.PRNGKey(0))
        return apply_fn, shapes

    def embed(z):
        return embed_inputs(z, input_map)

    def init(key, bounds, capacity):
        bounds = check_bounds(bounds)
        return GreedyState(D.empty(capacity, bounds.shape[-1], bounds.dtype), bounds)

    def update(state, x, y):
        return state._replace(data=D.append(state.data, x, y)), NoInfo()

    def suggest(key, state):
        data = state.data
        d = state.bounds.shape[-1]
        dtype = state.bounds.dtype
        apply_fn, shapes = network(d + 1 if input_map == "sphere" else d)
        prior_var = prior_variances(shapes, mlp_spec(depth, width, activation, gamma, gamma))
        mask, z, ys, unit = unit_view(data, state.bounds)
        starts = best_points(z, ys, mask, num_best) if num_best else None
        k_rand, k_net, k_opt = jax.random.split(key, 3)

        def one(k_member, k_acq):
            fn, (l0, l1, ok) = _smb(posterior, k_member, apply_fn, prior_var, depth, embed(z),
                                    ys, mask, sigma=sigma, nu=nu, optimizer=optimizer,
                                    num_steps=num_steps, learning_rate=learning_rate,
                                    jitter=jitter)
            zq, value, opt_info = optimize.maximize_acquisition(
                k_acq, lambda zc: -fn(embed(zc)), unit, num_candidates=num_candidates,
                num_restarts=num_restarts, x_best=starts, num_steps=num_acq_steps,
                method=acq_method, sampler=sampler,
                observed=optimize.guarded(avoid_observed, z, mask))
            return zq, value, l0, l1, ok & jnp.isfinite(value), opt_info.replaced

        def greedy(_):
            return jax.vmap(one)(jax.random.split(k_net, q), jax.random.split(k_opt, q))

        def explore(_):
            zero = jnp.zeros((q,), dtype)
            return (jax.random.uniform(k_rand, (q, d), dtype), zero, zero, zero,
                    jnp.ones((q,), bool), jnp.zeros((q,), bool))

        exploring = data.count < num_explore
        zs, values, l0, l1, ok, replaced = jax.lax.cond(exploring, explore, greedy, None)
        info = GreedySuggestInfo(acq_value=values, train_loss=jnp.stack([l0, l1], axis=-1),
                                 train_ok=ok, explore=exploring,
                                 duplicates_replaced=jnp.sum(replaced).astype(jnp.int32))
        return from_unit(zs, state.bounds), info

    ntk = as_kernel(mlp(depth, width, activation, W_std=gamma, b_std=gamma)[2], "ntk")

    def posterior_mean(state, x):
        """The members' mean ``Theta_xX (Theta_XX + sigma^2 I)^-1 Y`` (Props. 1-2, the same for
        SimpleSMB and PosteriorSMB) in ``y``'s units (``observations.kernel_mean``;
        ``Algorithm.posterior_mean``)."""
        return kernel_mean(ntk, state.data, state.bounds, sigma**2, x, embed, jitter)

    return Algorithm(init, suggest, update, posterior_mean=posterior_mean)


@composed(_neural_greedy, LAYOUT)
def neural_greedy(
    *,
    smb: str = "simple",
    network: PartOption = None,
    gamma: float = 1.5,
    sigma: float = 0.1,
    nu: float = 1.0,
    training: PartOption = None,
    num_explore: int = 10,
    q: int = 1,
    input_map: str = "sphere",
    search: PartOption = None,
    jitter: float | None = None,
) -> Algorithm:
    """Neural Greedy (Algorithm 1) with SimpleSMB or PosteriorSMB (the module docstring has the
    algorithm).

    The query (App. F.2): the network's minimiser over the box by random restarts and gradient
    descent: ``ntkbo.optimize.maximize_acquisition`` on ``-f~`` in the unit cube, with
    ``search.num_candidates=10`` uniform starts all refined (``search.num_restarts=10``) for
    ``search.num_steps=500`` steps. The paper uses plain GD with a fixed step 0.01; ntkbo's
    ``"pgd"`` (projected, normalised, step-adapted gradient ascent) is used by default because a
    fixed step is scale dependent and the paper does not say how the box constraint is enforced.
    ``search.num_best > 0`` adds the best observed points and their perturbations as starts (not
    in the paper).

    Exploration ``T_e`` (``num_explore``): uniform random points while fewer than ``num_explore``
    observations exist, counting ``ntkbo.minimize``'s initial design. Section 2: ``T_e`` "typically
    <= 10" (the default 10); App. F.2's rule ``5 d`` clipped to ``[0.025 T, 0.075 T]`` is
    :func:`paper_num_explore`.

    Batches (``q > 1``, not defined by the paper): ``q`` independently initialised networks (and
    target noises) trained on the same data, each giving its own minimiser (``jax.vmap``). For
    PosteriorSMB these are ``q`` independent NTK-GP posterior draws, i.e. parallel Thompson sampling
    (Kandasamy et al. 2018); in the exploration phase, ``q`` independent uniform points. The points
    are distinct with probability one.

    Building blocks (pure; for ``theory_checks`` and ``vmap`` over hyper-parameters):
    :func:`smb_network`, :func:`train_smb`, :func:`simple_smb`, :func:`posterior_smb`,
    :func:`paper_num_explore`.

    Args:
      smb: ``"simple"`` (Algorithm 2) or ``"posterior"`` (Algorithm 3).
      network: the network (``ntkbo.parts.Network``, ``smb_network``): ``width`` (default 256;
        paper 5000), ``depth`` hidden layers (1, the paper's) and ``activation`` (``"erf"``; the
        paper's tanh has no closed-form kernel); its scales are ``gamma``.
      training: the network's training (``ntkbo.parts.Training``, ``train_smb``): ``optimizer``
        (``"levenberg_marquardt"``; paper ``"adam"``; or ``"gd"``, or an
        ``optax.GradientTransformation``), ``num_steps`` (5; ``None``:
        the optimiser's default count, the paper's, which does not give it) and
        ``learning_rate`` (``None``: the optimiser's default; paper ``1e-3``).
      search: the minimisation of the network (``ntkbo.parts.Search``,
        ``ntkbo.optimize.maximize_acquisition``): ``num_candidates`` starts (10, the paper's)
        drawn by ``sampler`` (``"uniform"``, the paper's), ``num_restarts`` of them refined (10,
        the paper's) by ``method`` (``"pgd"``; the paper's plain GD, above) for ``num_steps``
        (100; paper 500), and ``num_best`` best observed points added as starts with
        perturbations (0, the paper's).
      gamma: ``sigma_W = sigma_b = gamma`` (default 1.5, chosen on the dev suite,
        docs/decisions.md; paper: tuned in ``[0.5, 5]``).
      sigma: ``sigma`` (``sigma^2`` the noise variance of the builders, on standardised outputs;
        default 0.1, paper experiments 0, Theorem 3 ``sqrt(1 + 2/T)``); ``>= 0``.
      nu: the output / exploration scale ``nu`` (paper: 1).
      num_explore: ``T_e``, observations (initial design included) before the greedy phase.
      q: points per suggest (independent networks; Batches, above).
      input_map: ``"sphere"`` (default) or ``"cube"`` (``smb_network``).
      jitter: relative Cholesky jitter (Levenberg-Marquardt and GD step size).

    Returns:
      An ``ntkbo.Algorithm``; ``suggest`` returns ``(x (q, d), info)``, ``info`` a
      :class:`GreedySuggestInfo`: ``acq_value`` ``(q,)`` (``-f~`` at ``x``, standardised units; 0
      while exploring), ``train_loss`` ``(q, 2)``, ``train_ok`` ``(q,)``, ``explore`` ``()``
      (bool: random points) and ``duplicates_replaced``; ``update`` only appends the
      observations (``NoInfo``).

    Raises:
      ValueError: an invalid argument, naming it.
    """
    return _neural_greedy(**LAYOUT.flatten(locals(), "neural_greedy"))
