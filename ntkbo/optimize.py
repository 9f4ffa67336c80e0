"""Acquisition maximisation inside ``jit``: quasi-random candidates, then multi-start ascent.

:func:`maximize_acquisition` maximises a batched acquisition ``acq_fn(x: (n, d)) -> (n,)`` over the
box ``bounds`` (``(2, d)``: lower row, upper row) in four stages:

1. Candidates: ``num_candidates`` quasi-random points (scrambled Sobol by default) plus, if
   ``x_best`` (``(k, d)``, e.g. the best observed points) is given, those points and
   ``num_perturbations`` Gaussian perturbations of them (std ``perturb_scale`` times the box width,
   clipped to the box). Rows of ``x_best`` with non-finite entries (padding of fixed-capacity
   buffers) are ignored: they and their perturbations are replaced by uniform random points.
2. Evaluation of all candidates in one call (or in chunks of ``chunk_size``); non-finite
   acquisition values are treated as ``-inf``.
3. Refinement of the ``num_restarts`` best candidates, ``jax.vmap``-ed over starts, for
   ``num_steps`` steps in the unit box ``u = (x - lower) / (upper - lower)`` by ``method``
   (``"pgd"``, the default: monotone projected normalised gradient ascent; ``"adam"``;
   ``"lbfgs"``; ``"none"``: no refinement, pure candidate search as NeuralBO's official code; see
   :func:`maximize_acquisition`'s ``method``). Each start keeps its best iterate, so refinement
   never returns a lower value than its start.
4. The result is the best of the refined starts and the candidates: refinement never lowers the
   acquisition value below the best candidate.
5. The duplicate guard, only if ``observed`` points are given (the evaluated inputs): a result
   within ``min_distance`` of one of them (Chebyshev distance in units of the box's width,
   default ``MIN_DISTANCE``) is replaced by the best refined start or candidate that is not
   (``OptimizeInfo.replaced``; :data:`DISTINCT_POOL` says among which): an evaluation of a
   deterministic objective at a point already observed teaches the model nothing. Without
   ``observed``, the acquisition's own maximiser, as in every paper; the algorithms pass their
   observations when ``search.avoid_observed`` is on (:data:`AVOID_OBSERVED`, :func:`guarded`).

Gradient refinement needs ``acq_fn`` to be differentiable and *row-wise*: row ``i`` of the output
depends only on row ``i`` of the input (true of EI, LogEI, PI, UCB and the posterior mean of any
pointwise surrogate). Thompson draws made over the batch are not row-wise (an independent draw per
row, or a joint sample over the rows): use ``method="none"`` for them, as NeuralBO's paper draws
do (Algorithm 1, line 4: an independent ``N(h(x), nu^2 sigma^2(x))`` per candidate). A draw that
is a fixed function of ``x`` (a pathwise draw, NeuralBO's ``thompson="pathwise"``) is row-wise and
can be refined. :func:`maximize_over_candidates` runs stages 2-4 on candidates the caller made.

Everything is pure and ``jax.jit``-able; ``num_*``, ``method``, ``sampler`` and ``chunk_size`` are
static Python values (close over them, e.g. ``jax.jit(lambda k: maximize_acquisition(k, acq, b))``),
and the function can be ``jax.vmap``-ed over ``key``; the same key gives the same result. Argument
errors are raised at trace time; failures inside ``jit`` are reported in :class:`OptimizeInfo`.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.special import ndtri

from ntkbo import qmc

__all__ = [
    "OptimizeInfo",
    "maximize_acquisition",
    "maximize_acquisition_batch",
    "maximize_over_candidates",
    "near_observed",
    "best_distinct",
    "argmax_distinct",
    "AVOID_OBSERVED",
    "METHODS",
    "MIN_DISTANCE",
    "avoid_observed_for",
    "check_avoid_observed",
    "guarded",
    "SAMPLERS",
]

Array = jax.Array
AcqFn = Callable[[Array], Array]

METHODS = ("adam", "pgd", "lbfgs", "none")
SAMPLERS = ("sobol", "kronecker", "uniform")
#: Two points closer than this fraction of the box's width in every coordinate are one point.
MIN_DISTANCE = 1e-4
#: The default of every algorithm's ``search.avoid_observed`` (stage 5): ``"auto"``, the guard
#: on for a noise-free problem and off for a noisy one (:func:`avoid_observed_for`; a repeat of a
#: noisy evaluation is an observation like any other). A factory does not know the problem, so
#: it treats ``"auto"`` as noise-free (on); the drivers resolve it against the problem first
#: (``ntkbo.algorithms.problem_options``, ``ntkbo.algorithms.resolve_guard``). The evidence for
#: the guard on a deterministic objective is in docs/decisions.md (2026-11-27, 2026-11-29).
AVOID_OBSERVED = "auto"
#: Candidates beyond the refined starts searched for a distinct replacement (stage 5): the
#: ``num_restarts + DISTINCT_POOL`` best and ``DISTINCT_POOL`` candidates spread over the set
#: (every ``n // DISTINCT_POOL``-th: when the best candidates all crowd one observed corner, the
#: spread ones are still distinct). A distinct point is taken even if its value is not finite;
#: only if all of them are duplicates does the result stay.
DISTINCT_POOL = 64


class OptimizeInfo(NamedTuple):
    """Diagnostics of :func:`maximize_acquisition` (leading batch axes under ``vmap``).

    Attributes:
        num_finite: ``()`` int, number of candidates with a finite acquisition value.
        success: ``()`` bool, ``num_finite > 0`` (otherwise the returned value is ``-inf`` and the
            point is the first candidate).
        value_before: ``()`` best candidate value (before refinement).
        value_after: ``()`` returned value, ``>= value_before``.
        improved: ``()`` bool, refinement strictly increased the value.
        start_values: ``(num_restarts,)`` values of the starts (best candidates, descending).
        refined_values: ``(num_restarts,)`` values after refinement, ``>= start_values``.
        replaced: ``()`` bool, the best point was within ``min_distance`` of an observed point
            and a distinct one was returned instead (stage 5; always ``False`` without
            ``observed``).
    """

    num_finite: Array
    success: Array
    value_before: Array
    value_after: Array
    improved: Array
    start_values: Array
    refined_values: Array
    replaced: Array


def near_observed(points: Array, observed: Array, bounds, min_distance: float = MIN_DISTANCE
                  ) -> Array:
    """``(n,)`` bool: which of ``points`` ``(n, d)`` lie within ``min_distance`` times the box's
    width of a row of ``observed`` ``(m, d)`` in every coordinate (rows of ``observed`` with a
    non-finite entry, e.g. buffer padding, are ignored). ``O(n m d)`` time, ``O(n m)`` memory."""
    lo, hi = bounds[0], bounds[1]
    width = jnp.where(hi > lo, hi - lo, jnp.ones_like(hi))
    u, v = (points - lo) / width, (observed - lo) / width
    valid = jnp.all(jnp.isfinite(observed), axis=-1)

    def close_in(j, close):
        uj = jax.lax.dynamic_index_in_dim(u, j, axis=1, keepdims=False)
        vj = jax.lax.dynamic_index_in_dim(v, j, axis=1, keepdims=False)
        return close & (jnp.abs(uj[:, None] - vj[None, :]) <= min_distance)

    close = jax.lax.fori_loop(0, u.shape[-1], close_in,
                              jnp.broadcast_to(valid[None, :], (u.shape[0], v.shape[0])))
    return jnp.any(close, axis=-1)


def best_distinct(points: Array, values: Array, observed: Array, bounds,
                  min_distance: float = MIN_DISTANCE) -> tuple[Array, Array]:
    """``(i, replaced)``: the index of the highest of ``values`` ``(n,)`` among ``points``
    ``(n, d)`` not ``near_observed`` (``argmax_distinct``), and whether that differs from the plain
    ``argmax`` because the best point was near an observed one. If every point is near an
    observed one, ``argmax`` stands (``replaced`` is then ``False``)."""
    return argmax_distinct(values, near_observed(points, observed, bounds, min_distance))


def argmax_distinct(values: Array, duplicate: Array) -> tuple[Array, Array]:
    """``(i, replaced)``: ``argmax(values)`` ``(n,)``, unless that entry is a ``duplicate``
    ``(n,)`` and another entry is not: then the highest entry that is not (entries whose value is
    not finite rank below every finite one, above every duplicate), with ``replaced`` true."""
    best = jnp.argmax(values)
    lowest = jnp.finfo(jnp.result_type(values, float)).min
    rank = jnp.where(duplicate, -jnp.inf, jnp.where(jnp.isfinite(values), values, lowest))
    alt = jnp.argmax(rank)
    replaced = duplicate[best] & ~duplicate[alt]
    return jnp.where(replaced, alt, best), replaced


def check_avoid_observed(avoid_observed) -> None:
    """``ValueError`` unless an algorithm's ``search.avoid_observed`` is a bool or ``"auto"``."""
    if not (isinstance(avoid_observed, (bool, np.bool_)) or avoid_observed == "auto"):
        raise ValueError(f"avoid_observed must be True, False or 'auto', got {avoid_observed!r}")


def avoid_observed_for(avoid_observed, noisy: bool) -> bool:
    """Whether the duplicate guard runs under ``search.avoid_observed`` on a problem whose
    observations are ``noisy`` (``ntkbo.objective.is_noisy``): ``"auto"`` is on exactly when
    they are not (a repeat of a deterministic evaluation teaches nothing; a repeat of a noisy
    one is a new observation); ``True`` and ``False`` hold whatever the noise. The one rule of
    every driver (``ntkbo.minimize``, the study runner, ``ntkbo run``, ``ntkbo.algorithms.
    for_problem``); an algorithm that does not know its problem takes ``noisy=False``."""
    check_avoid_observed(avoid_observed)
    return (not noisy) if avoid_observed == "auto" else bool(avoid_observed)


def guarded(avoid_observed, x: Array, mask: Array) -> Array | None:
    """The ``observed`` argument of the search under an algorithm's ``search.avoid_observed``:
    the valid rows of ``x`` ``(n, d)`` (``mask`` ``(n,)``; the others NaN, which the guard
    ignores) when it is on, ``None`` (no guard) when it is off; ``"auto"`` as for a noise-free
    problem (:func:`avoid_observed_for`: the drivers have replaced it for a noisy one)."""
    on = avoid_observed_for(avoid_observed, noisy=False)
    return jnp.where(mask[:, None], x, jnp.nan) if on else None


def _finite_or_neg_inf(v: Array) -> Array:
    return jnp.where(jnp.isfinite(v), v, -jnp.inf)


def _evaluate(acq_fn: AcqFn, x: Array, chunk_size: int | None) -> Array:
    """``acq_fn`` on ``x`` ``(n, d)``, in chunks of ``chunk_size`` rows via ``lax.map`` if given."""
    n, d = x.shape
    if chunk_size is None or chunk_size >= n:
        values = acq_fn(x)
    else:
        num_chunks = -(-n // chunk_size)
        pad = num_chunks * chunk_size - n
        xp = jnp.concatenate([x, jnp.broadcast_to(x[:1], (pad, d))])
        values = jax.lax.map(acq_fn, xp.reshape(num_chunks, chunk_size, d)).reshape(-1)[:n]
    if values.shape != (n,):
        raise ValueError(f"acq_fn must map (n, d) to (n,); got {x.shape} -> {values.shape}")
    return _finite_or_neg_inf(values)


def _normal_from_words(words: Array, dtype) -> Array:
    """Standard normals by inversion of uniform words: ``ndtri((w + 1/2) / 2**b)``, ``b`` the
    mantissa bits the dtype can hold (24 in float32, 32 in float64), so ``|z| < 5.4``/``6.2``."""
    bits = min(32, jnp.finfo(dtype).nmant + 1)
    u = ((words >> (32 - bits)).astype(dtype) + 0.5) * jnp.asarray(2.0**-bits, dtype)
    return ndtri(u)


def _candidates(key, bounds, num_candidates, sampler, x_best, num_perturbations, perturb_scale):
    """Quasi-random points plus the given points and their perturbations, all in the box.

    All randomness comes from one ``jax.random.bits`` call (compilation cost grows with the
    number of calls), split into the sampler's words, perturbation noise and uniform fill-ins.
    """
    d = bounds.shape[1]
    if sampler == "sobol" and d > qmc.SOBOL_MAX_DIM:
        sampler = "kronecker"
    n_qmc = qmc.NUM_WORDS[sampler](num_candidates, d)
    k = 0 if x_best is None else x_best.shape[0]
    n_noise, n_fill = num_perturbations * d, (k + num_perturbations) * d
    words = jax.random.bits(key, (n_qmc + n_noise + n_fill,), dtype=jnp.uint32)
    cand = qmc.to_box(qmc.FROM_WORDS[sampler](words[:n_qmc], num_candidates, d), bounds)
    if x_best is None:
        return cand
    lo, hi = bounds[0], bounds[1]
    valid = jnp.all(jnp.isfinite(x_best), axis=-1)  # (k,)
    centres = jnp.where(valid[:, None], x_best, lo)
    idx = jnp.arange(num_perturbations) % k
    noise = _normal_from_words(words[n_qmc : n_qmc + n_noise], bounds.dtype)
    perturbed = centres[idx] + perturb_scale * (hi - lo) * noise.reshape(num_perturbations, d)
    local = jnp.concatenate([centres, perturbed])
    local_valid = jnp.concatenate([valid, valid[idx]])
    fill = qmc.to_box(words[n_qmc + n_noise :].reshape(k + num_perturbations, d), bounds)
    local = jnp.where(local_valid[:, None], jnp.clip(local, lo, hi), fill)
    return jnp.concatenate([cand, local])


def _refine(acq_fn, bounds, starts, start_values, method, num_steps, step_size):
    """Per-start ascent in the unit box: ``(x (r, d), values (r,))``, values ``>=`` the starts'."""
    lo, hi = bounds[0], bounds[1]
    width = hi - lo
    width = jnp.where(width > 0, width, jnp.ones_like(width))
    to_box = lambda u: jnp.clip(lo + jnp.clip(u, 0.0, 1.0) * width, lo, hi)  # noqa: E731

    def value(u):
        return _finite_or_neg_inf(acq_fn(to_box(u)[None, :])[0])

    def value_and_grad(u):
        v, g = jax.value_and_grad(lambda w: acq_fn(to_box(w)[None, :])[0])(u)
        return _finite_or_neg_inf(v), jnp.where(jnp.isfinite(g), g, 0.0)

    def keep_best(u, v, best_u, best_v):
        better = v > best_v
        return jnp.where(better, u, best_u), jnp.where(better, v, best_v)

    if method == "adam":
        schedule = optax.cosine_decay_schedule(step_size, max(num_steps, 1), alpha=1e-3)
        opt = optax.adam(schedule)

        def run(u0, v0):
            def step(carry, _):
                u, state, best_u, best_v = carry
                v, g = value_and_grad(u)
                best_u, best_v = keep_best(u, v, best_u, best_v)
                updates, state = opt.update(-g, state, u)
                # optax types its result as any pytree; on an array it is an array
                u = jnp.clip(cast(jax.Array, optax.apply_updates(u, updates)), 0.0, 1.0)
                return (u, state, best_u, best_v), None

            init = (u0, opt.init(u0), u0, v0)
            (u, _, best_u, best_v), _ = jax.lax.scan(step, init, None, length=num_steps)
            return keep_best(u, value(u), best_u, best_v)

    elif method == "pgd":

        def run(u0, v0):
            # Iteration 0 only evaluates the gradient at the start (its value is the candidate
            # search's, v0): one traced gradient of the acquisition serves the whole ascent.
            def step(carry, i):
                u, v, g, eta = carry
                first = i == 0
                blocked = ((u <= 0.0) & (g < 0)) | ((u >= 1.0) & (g > 0))
                g = jnp.where(blocked, 0.0, g)
                direction = g / jnp.maximum(jnp.max(jnp.abs(g)), jnp.finfo(g.dtype).tiny)
                u_new = jnp.where(first, u, jnp.clip(u + eta * direction, 0.0, 1.0))
                v_new, g_new = value_and_grad(u_new)
                ok = (v_new > v) & ~first
                u, v = (jnp.where(ok, a, b) for a, b in ((u_new, u), (v_new, v)))
                g = jnp.where(ok | first, g_new, g)
                eta = jnp.where(first, eta, jnp.minimum(jnp.where(ok, 1.5 * eta, 0.5 * eta), 1.0))
                return (u, v, g, eta), None

            eta0 = jnp.asarray(step_size, u0.dtype)
            (u, v, _, _), _ = jax.lax.scan(step, (u0, v0, jnp.zeros_like(u0), eta0),
                                           jnp.arange(num_steps + 1))
            return u, v

    elif method == "lbfgs":
        opt = optax.lbfgs()

        def neg(u):
            v = acq_fn(to_box(u)[None, :])[0]
            return jnp.where(jnp.isfinite(v), -v, jnp.inf)

        neg_value_and_grad = optax.value_and_grad_from_state(neg)

        def run(u0, v0):
            def step(carry, _):
                u, state, best_u, best_v = carry
                # optax types the value and gradient as pytrees; at an array u they are arrays
                f, g = cast(tuple[jax.Array, jax.Array], neg_value_and_grad(u, state=state))
                g = jnp.where(jnp.isfinite(g), g, 0.0)
                best_u, best_v = keep_best(u, _finite_or_neg_inf(-f), best_u, best_v)
                updates, state = opt.update(g, state, u, value=f, grad=g, value_fn=neg)
                return (optax.apply_updates(u, updates), state, best_u, best_v), None

            init = (u0, opt.init(u0), u0, v0)
            (u, _, best_u, best_v), _ = jax.lax.scan(step, init, None, length=num_steps)
            return keep_best(u, value(u), best_u, best_v)

    else:  # "none"
        return starts, start_values

    u0 = jnp.clip((starts - lo) / width, 0.0, 1.0)
    u, v = jax.vmap(run)(u0, start_values)
    return to_box(u), v


def _validate(bounds, x_best, num_candidates, num_restarts, num_perturbations, num_steps,
              method, sampler, chunk_size):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    ints = (("num_candidates", num_candidates, 1), ("num_restarts", num_restarts, 1),
            ("num_perturbations", num_perturbations, 0), ("num_steps", num_steps, 0))
    for name, val, low in ints:
        if not isinstance(val, (int, np.integer)) or val < low:
            raise ValueError(f"{name} must be a Python int >= {low} (static), got {val!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1):
        raise ValueError(f"chunk_size must be None or a positive int, got {chunk_size!r}")
    if bounds.ndim != 2 or bounds.shape[0] != 2:
        raise ValueError(f"bounds must have shape (2, d), got {bounds.shape}")
    if x_best is not None and (x_best.ndim != 2 or x_best.shape[1] != bounds.shape[1]):
        raise ValueError(f"x_best must have shape (k, {bounds.shape[1]}), got {x_best.shape}")
    try:  # check values when they are concrete (outside jit)
        b = np.asarray(bounds)
    except jax.errors.TracerArrayConversionError:
        return
    if not np.all(np.isfinite(b)) or np.any(b[0] > b[1]):
        raise ValueError("bounds must be finite with bounds[0] <= bounds[1]")


def maximize_acquisition(
    key: Array,
    acq_fn: AcqFn,
    bounds,
    *,
    num_candidates: int = 2048,
    num_restarts: int = 8,
    x_best=None,
    num_perturbations: int | None = None,
    perturb_scale: float = 0.05,
    num_steps: int = 50,
    step_size: float = 0.02,
    method: str = "pgd",
    sampler: str = "sobol",
    chunk_size: int | None = None,
    observed=None,
    min_distance: float = MIN_DISTANCE,
) -> tuple[Array, Array, OptimizeInfo]:
    """Maximises a batched acquisition function over a box (see the module docstring).

    Args:
        key: PRNG key (candidates and perturbations).
        acq_fn: ``(n, d) -> (n,)``, the acquisition to *maximise*; row-wise and differentiable for
            the gradient methods.
        bounds: ``(2, d)`` box, lower row then upper row.
        num_candidates: quasi-random candidates (static; a power of two balances Sobol points).
        num_restarts: best candidates refined (static, ``<=`` the number of candidates).
        x_best: optional ``(k, d)`` points to include and perturb (rows with NaN are ignored).
        num_perturbations: perturbations of ``x_best`` (static), cycling over its rows; default
            ``max(k, num_candidates // 4)``; ignored without ``x_best``.
        perturb_scale: perturbation std as a fraction of the box width, per dimension.
        num_steps: refinement steps per start (static; L-BFGS steps include a line search).
        step_size: initial step as a fraction of the box width (``"adam"``, ``"pgd"``).
        method: the refinement of stage 3 (static), in ``u = (x - lower) / (upper - lower)``:

            - ``"pgd"`` (default): projected normalised gradient ascent,
              ``u <- clip(u + eta g / max|g|)`` with ``g`` the gradient with the components
              blocked by an active bound zeroed and ``eta`` starting at ``step_size``; a step is
              taken only if it increases the value (then ``eta *= 1.5``, else ``eta /= 2``).
              Monotone, invariant to the scale of the acquisition (EI values of 1e-30 are
              refined like UCB values of 1e3) and the cheapest to compile.
            - ``"adam"``: optax Adam on ``-acq`` with a cosine-decayed learning rate from
              ``step_size`` (a fraction of the box width per step) to ``step_size / 1000``;
              iterates projected on the box. It needs more steps than the others for the same
              accuracy (~200 on a Rastrigin basin).
            - ``"lbfgs"``: ``optax.lbfgs`` (zoom line search) on ``u -> -acq(clip(u))``; the clip
              makes the objective flat outside the box and the returned point is projected. The
              most accurate on smooth acquisitions and the most expensive to compile.
            - ``"none"``: no refinement (pure candidate search, as NeuralBO's official code).
        sampler: ``"sobol"`` (Kronecker when ``d > qmc.SOBOL_MAX_DIM``), ``"kronecker"`` or
            ``"uniform"`` (static).
        chunk_size: evaluate candidates in chunks of this many rows (static; bounds memory).
            Each chunk is a separate ``acq_fn`` call, so an ``acq_fn`` drawing random numbers from
            a fixed key repeats its draws across chunks: chunk inside such an ``acq_fn`` instead.
        observed: optional ``(m, d)`` evaluated points (rows with NaN are ignored): a result
            within ``min_distance`` of one is replaced by the best distinct point (stage 5).
        min_distance: the fraction of the box's width below which two points are one (static).

    Returns:
        ``(x, value, info)``: ``x`` ``(d,)`` in the box, ``value`` ``()`` its acquisition value
        (``-inf`` if no candidate was finite), ``info`` an :class:`OptimizeInfo`.
    """
    bounds = jnp.asarray(bounds)
    if not jnp.issubdtype(bounds.dtype, jnp.floating):
        bounds = bounds.astype(jnp.result_type(float))
    if x_best is not None:
        x_best = jnp.asarray(x_best, bounds.dtype)
        if x_best.ndim == 2 and x_best.shape[0] == 0:
            x_best = None
    if x_best is None:
        num_perturbations = 0
    elif num_perturbations is None:
        num_perturbations = max(x_best.shape[0], num_candidates // 4)
    _validate(bounds, x_best, num_candidates, num_restarts, num_perturbations, num_steps,
              method, sampler, chunk_size)
    total = num_candidates + (0 if x_best is None else x_best.shape[0] + num_perturbations)
    if num_restarts > total:
        raise ValueError(f"num_restarts={num_restarts} exceeds the {total} candidates")

    cand = _candidates(key, bounds, num_candidates, sampler, x_best, num_perturbations,
                       perturb_scale)
    return _maximize_over(acq_fn, bounds, cand, num_restarts, num_steps, step_size, method,
                          chunk_size, observed, min_distance)


def maximize_over_candidates(
    acq_fn: AcqFn,
    bounds,
    candidates: Array,
    *,
    num_restarts: int = 8,
    num_steps: int = 50,
    step_size: float = 0.02,
    method: str = "pgd",
    chunk_size: int | None = None,
    observed=None,
    min_distance: float = MIN_DISTANCE,
) -> tuple[Array, Array, OptimizeInfo]:
    """Stages 2-5 of :func:`maximize_acquisition` on candidates the caller made (e.g. NeuralBO's
    set ``D_t``, shared by several acquisitions): evaluate ``acq_fn`` on ``candidates`` ``(n, d)``
    (in the box ``bounds``), refine the ``num_restarts`` best and return the best point.

    Args and returns as :func:`maximize_acquisition` (``num_restarts <= n``).
    """
    bounds = jnp.asarray(bounds)
    candidates = jnp.asarray(candidates, bounds.dtype)
    _validate(bounds, None, 1, num_restarts, 0, num_steps, method, "sobol", chunk_size)
    if candidates.ndim != 2 or candidates.shape[1] != bounds.shape[1]:
        raise ValueError(f"candidates must have shape (n, {bounds.shape[1]}), "
                         f"got {candidates.shape}")
    if num_restarts > candidates.shape[0]:
        raise ValueError(f"num_restarts={num_restarts} exceeds the {candidates.shape[0]} candidates")
    return _maximize_over(acq_fn, bounds, candidates, num_restarts, num_steps, step_size, method,
                          chunk_size, observed, min_distance)


def _maximize_over(acq_fn, bounds, cand, num_restarts, num_steps, step_size, method, chunk_size,
                   observed=None, min_distance=MIN_DISTANCE):
    values = _evaluate(acq_fn, cand, chunk_size)
    start_values, idx = jax.lax.top_k(values, num_restarts)
    x_ref, v_ref = _refine(acq_fn, bounds, cand[idx], start_values, method, num_steps, step_size)

    best = jnp.argmax(v_ref)
    use_refined = v_ref[best] > start_values[0]
    x = jnp.where(use_refined, x_ref[best], cand[idx[0]])
    value = jnp.where(use_refined, v_ref[best], start_values[0])
    replaced = jnp.zeros((), bool)
    if not isinstance(min_distance, (int, float)) or not min_distance >= 0:
        raise ValueError(f"min_distance must be a number >= 0, got {min_distance!r}")
    if observed is not None:
        if jnp.ndim(observed) != 2 or jnp.shape(observed)[1] != bounds.shape[1]:
            raise ValueError(f"observed must have shape (m, {bounds.shape[1]}), "
                             f"got {jnp.shape(observed)}")
        # Stage 5: the result and its alternatives, best first (the refined starts, then the best
        # candidates); the first that is not an observed point.
        observed = jnp.asarray(observed, bounds.dtype)
        n = cand.shape[0]
        pool_values, pool_idx = jax.lax.top_k(values, min(n, num_restarts + DISTINCT_POOL))
        spread = jnp.arange(0, n, max(1, n // DISTINCT_POOL))[:DISTINCT_POOL]
        points = jnp.concatenate([x[None], x_ref, cand[pool_idx], cand[spread]])
        scores = jnp.concatenate([value[None], v_ref, pool_values, values[spread]])
        i, replaced = best_distinct(points, scores, observed, bounds, min_distance)
        x, value = points[i], scores[i]
    num_finite = jnp.sum(jnp.isfinite(values))
    info = OptimizeInfo(
        num_finite=num_finite,
        success=num_finite > 0,
        value_before=start_values[0],
        value_after=value,
        improved=use_refined,
        start_values=start_values,
        refined_values=v_ref,
        replaced=replaced,
    )
    return x, value, info


def maximize_acquisition_batch(
    key: Array,
    acq_fn: Callable[[Array, Array], Array],
    bounds,
    q: int,
    **kwargs,
) -> tuple[Array, Array, OptimizeInfo]:
    """``q`` points from ``q`` independent acquisition draws, ``jax.vmap``-ed over keys.

    ``acq_fn(key, x: (n, d)) -> (n,)`` is a random acquisition, e.g. a Thompson draw; draw ``i``
    uses its own key and is maximised by :func:`maximize_acquisition` (``kwargs`` are passed on).
    This is parallel Thompson sampling (Kandasamy et al. 2018): the points are distinct with
    probability one for continuous draws, but two draws may share a maximiser, for example the same
    perturbed best point when ``method="none"``; callers needing distinct points should check.

    Returns:
        ``(x (q, d), values (q,), info)`` with ``info`` fields batched over ``q``.
    """
    if not isinstance(q, (int, np.integer)) or q < 1:
        raise ValueError(f"q must be a positive Python int (static), got {q!r}")

    def one(k):
        k_acq, k_opt = jax.random.split(k)
        return maximize_acquisition(k_opt, lambda x: acq_fn(k_acq, x), bounds, **kwargs)

    return jax.vmap(one)(jax.random.split(key, q))
