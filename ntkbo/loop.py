"""Drivers: ``minimize`` and ``maximize`` run a whole optimisation as jitted ``lax.scan`` segments.

A run of ``budget`` evaluations is: ``n_init`` points of a quasi-random initial design (drawn from the
run's key independently of the algorithm, so every algorithm given the same key starts from the same
points), then rounds of ``suggest -> evaluate -> update`` with ``q`` points per round.

The state's buffers have a fixed capacity. To keep the cost of a step proportional to the number of
observations rather than to the budget, the run is split into *segments*: while the buffer holds at
most ``c`` points the state has capacity ``c`` (a power of two), and it is grown to ``2c`` between
segments (``ntkbo.data.grow``). Each segment is one ``lax.scan``, compiled once per capacity. The whole
run is a traceable function of the key, so ``jax.vmap(lambda k: ntkbo.minimize(algo, problem, B, k))``
runs many seeds at once.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ntkbo import data as D
from ntkbo import qmc
from ntkbo.base import Algorithm

Array = jax.Array

#: Default smallest capacity of a state's buffers (a power of two).
MIN_CAPACITY = 16
#: The largest budget a driver accepts (the buffers of a kernel model are O(capacity^2) in memory).
MAX_BUDGET = 1 << 16


class Result(NamedTuple):
    """The outcome of ``minimize`` (leading axes added by ``vmap``).

    Attributes:
      x: ``(budget, d)`` evaluated points, in order (initial design first).
      y: ``(budget,)`` observations (with noise, if the problem has any).
      f: ``(budget,)`` noise-free objective values at ``x`` (for regret curves).
      best_x: ``(d,)`` the point with the best observation.
      best_y: the best observation.
      best_f: the noise-free value at ``best_x``.
      state: the algorithm's final state.
      info: per-round diagnostics of ``suggest``, stacked over the ``(budget - n_init) / q`` rounds.
    """

    x: Array
    y: Array
    f: Array
    best_x: Array
    best_y: Array
    best_f: Array
    state: Any
    info: Any


class Segment(NamedTuple):
    """``rounds`` rounds run at buffer ``capacity``."""

    capacity: int
    rounds: int


def plan(budget: int, n_init: int, q: int = 1, min_capacity: int = MIN_CAPACITY) -> list[Segment]:
    """The capacity schedule of a run: the rounds at each power-of-two capacity.

    Round ``r`` starts with ``n_init + r q`` observations and needs room for ``q`` more.
    """
    rounds = (budget - n_init) // q
    segments: list[Segment] = []
    for r in range(rounds):
        cap = D.next_capacity(n_init + (r + 1) * q, min_capacity)
        if segments and segments[-1].capacity == cap:
            segments[-1] = Segment(cap, segments[-1].rounds + 1)
        else:
            segments.append(Segment(cap, 1))
    return segments


def validate(problem, budget: int, n_init: int, q: int) -> None:
    """Argument checks, made once outside ``jit``; raise ``ValueError`` naming the argument."""
    for name, v in (("budget", budget), ("n_init", n_init), ("q", q)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(f"{name} must be a Python int, got {type(v).__name__} {v!r}")
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"budget must be in [1, {MAX_BUDGET}], got {budget}")
    if not 1 <= n_init <= budget:
        raise ValueError(f"n_init must be in [1, budget={budget}], got {n_init}")
    if q < 1:
        raise ValueError(f"q must be >= 1, got {q}")
    if (budget - n_init) % q:
        raise ValueError(
            f"budget - n_init = {budget - n_init} must be a multiple of q = {q} "
            "(every round evaluates q points)")
    bounds = getattr(problem, "bounds", None)
    if bounds is None or getattr(problem, "fn", None) is None:
        raise ValueError("problem must have fn and bounds (see ntkbo.benchmarks.Problem)")
    if bounds.ndim != 2 or bounds.shape[0] != 2:
        raise ValueError(f"problem.bounds must have shape (2, d), got {bounds.shape}")
    try:  # concrete bounds only: under an outer jit the bounds may be tracers
        concrete = np.asarray(bounds)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        concrete = None
    if concrete is not None and not np.all(concrete[0] < concrete[1]):
        raise ValueError("problem.bounds: every lower bound must be below its upper bound")


def batch_size(algo: Algorithm, problem) -> int:
    """``q``, the number of points ``algo.suggest`` returns, read from its traced output shape."""
    key = jax.random.PRNGKey(0)
    state = jax.eval_shape(lambda k: algo.init(k, problem.bounds, MIN_CAPACITY), key)
    x, _ = jax.eval_shape(algo.suggest, key, state)
    if len(x.shape) != 2 or x.shape[1] != problem.bounds.shape[-1]:
        raise ValueError(
            f"algo.suggest must return x of shape (q, d={problem.bounds.shape[-1]}), got {x.shape}")
    return int(x.shape[0])


def default_n_init(problem, budget: int) -> int:
    """``min(budget, d + 1)``, at least 2: enough points to fit a first surrogate."""
    return min(budget, max(2, problem.bounds.shape[-1] + 1))


def _evaluate(problem, key, x):
    """``(y, f)``: noisy observation and noise-free value, each ``(q,)``."""
    f = jax.vmap(problem.fn)(x)
    noise = jnp.asarray(problem.noise_std, f.dtype) * jax.random.normal(key, f.shape, f.dtype)
    return f + noise, f


def grow_state(state, capacity: int):
    """Grows every ``ntkbo.data.Data`` buffer in ``state`` to ``capacity`` (nothing is lost)."""
    is_data = lambda node: isinstance(node, D.Data)  # noqa: E731
    return jax.tree_util.tree_map(
        lambda node: D.grow(node, capacity) if is_data(node) else node, state, is_leaf=is_data)


def initial_design(key, bounds, n: int):
    """``n`` scrambled quasi-random points in the box (the same for every algorithm)."""
    return qmc.sobol(key, n, bounds)


def _init(algo: Algorithm, problem, key, n_init: int, capacity: int):
    k_design, k_noise, k_algo, k_loop = jax.random.split(key, 4)
    x0 = initial_design(k_design, problem.bounds, n_init)
    y0, f0 = _evaluate(problem, k_noise, x0)
    state = algo.init(k_algo, problem.bounds, capacity)
    state = algo.update(state, x0, y0)
    return state, k_loop, (x0, y0, f0)


def _scan_rounds(algo: Algorithm, problem, state, key, rounds: int):
    """``rounds`` rounds of suggest, evaluate, update; returns the new carry and stacked outputs."""

    def body(carry, _):
        state, key = carry
        key, k_suggest, k_noise = jax.random.split(key, 3)
        x, info = algo.suggest(k_suggest, state)
        y, f = _evaluate(problem, k_noise, x)
        return (algo.update(state, x, y), key), (x, y, f, info)

    return jax.lax.scan(body, (state, key), None, length=rounds)


def _best(x, y, f):
    i = jnp.argmin(y)
    return x[i], y[i], f[i]


@functools.partial(jax.jit, static_argnames=("algo", "budget", "n_init", "q", "min_capacity"))
def _minimize(algo, problem, key, budget, n_init, q, min_capacity):
    segments = plan(budget, n_init, q, min_capacity)
    first = segments[0].capacity if segments else D.next_capacity(n_init, min_capacity)
    state, key, (x0, y0, f0) = _init(algo, problem, key, n_init, first)
    xs, ys, fs, infos = [x0], [y0], [f0], []
    for seg in segments:
        state = grow_state(state, seg.capacity)
        (state, key), (x, y, f, info) = _scan_rounds(algo, problem, state, key, seg.rounds)
        xs.append(x.reshape(-1, x0.shape[-1]))
        ys.append(y.reshape(-1))
        fs.append(f.reshape(-1))
        infos.append(info)
    x, y, f = jnp.concatenate(xs), jnp.concatenate(ys), jnp.concatenate(fs)
    info = jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *infos) if infos else None
    return Result(x, y, f, *_best(x, y, f), state, info)


def minimize(algo: Algorithm, problem, budget: int, key, *, n_init: int | None = None,
             min_capacity: int = MIN_CAPACITY) -> Result:
    """Minimises ``problem.fn`` over ``problem.bounds`` with ``budget`` evaluations.

    Args:
      algo: an ``ntkbo.Algorithm``.
      problem: an ``ntkbo.benchmarks.Problem`` (or anything with a traceable ``fn`` of one point
        ``(d,) -> ()``, ``bounds`` ``(2, d)`` and ``noise_std``).
      budget: total number of evaluations, initial design included.
      key: a ``jax.random`` key; the same key gives a bit-identical run.
      n_init: size of the quasi-random initial design (default ``min(budget, max(2, d + 1))``).
      min_capacity: the smallest buffer capacity (capacities are powers of two).

    Returns:
      A ``Result``. The call is traceable: ``jax.vmap`` it over keys to run many seeds at once.
      Each round evaluates the ``q`` points ``algo.suggest`` returns; ``budget - n_init`` must be a
      multiple of ``q``.
    """
    n_init = default_n_init(problem, budget) if n_init is None else n_init
    validate(problem, budget, n_init, 1)
    q = batch_size(algo, problem)
    validate(problem, budget, n_init, q)
    return _minimize(algo, problem, key, budget, n_init, q, min_capacity)


class _Negate(NamedTuple):
    """``-fn``; a NamedTuple so equal wrappers hash equal and jit caches hit across calls."""

    fn: Any

    def __call__(self, x):
        return -self.fn(x)


def _negated(problem):
    neg = _Negate(problem.fn)
    return problem.replace(fn=neg) if hasattr(problem, "replace") else problem._replace(fn=neg)


def maximize(algo: Algorithm, problem, budget: int, key, **kwargs) -> Result:
    """Maximises ``problem.fn``: ``minimize`` on ``-fn``; ``y``, ``f`` and ``best_*`` are reported in
    the original sign (``best_y`` is the largest observation)."""
    r = minimize(algo, _negated(problem), budget, key, **kwargs)
    return r._replace(y=-r.y, f=-r.f, best_y=-r.best_y, best_f=-r.best_f)


def best_so_far(values: Array) -> Array:
    """Running minimum along the last axis (the curve plotted against evaluations)."""
    return jax.lax.cummin(values, axis=values.ndim - 1)


# ---------------------------------------------------------------------------------------------
# Chunked runs over many seeds, for progress reporting (the command line uses this).


class Progress(NamedTuple):
    """Yielded by ``minimize_chunks`` after each chunk: evaluations done and the results so far."""

    done: int
    x: np.ndarray
    y: np.ndarray
    f: np.ndarray


@functools.partial(jax.jit, static_argnames=("algo", "n_init", "capacity"))
def _init_many(algo, problem, keys, n_init, capacity):
    return jax.vmap(lambda k: _init(algo, problem, k, n_init, capacity))(keys)


def _masked_rounds(algo: Algorithm, problem, state, key, rounds: int, active):
    """``rounds`` rounds of which only the first ``active`` (traced) take effect: the carry of an
    inactive round is left unchanged, so one compiled chunk serves every chunk length."""

    def body(carry, i):
        state, key = carry
        key2, k_suggest, k_noise = jax.random.split(key, 3)
        x, info = algo.suggest(k_suggest, state)
        y, f = _evaluate(problem, k_noise, x)
        new = (algo.update(state, x, y), key2)
        carry = jax.tree_util.tree_map(lambda a, b: jnp.where(i < active, a, b), new, carry)
        return carry, (x, y, f, info)

    return jax.lax.scan(body, (state, key), jnp.arange(rounds))


@functools.partial(jax.jit, static_argnames=("algo", "rounds", "capacity"))
def _chunk_many(algo, problem, states, keys, rounds, capacity, active):
    states = grow_state(states, capacity)
    return jax.vmap(lambda s, k: _masked_rounds(algo, problem, s, k, rounds, active))(states, keys)


def minimize_chunks(algo: Algorithm, problem, budget: int, keys, *, n_init: int | None = None,
                    chunk: int = 10, min_capacity: int = MIN_CAPACITY) -> Iterator[Progress]:
    """Runs ``minimize`` for every key in ``keys`` ``(s, ...)`` (vmapped), yielding ``Progress``
    every ``chunk`` rounds. The evaluated points are those of ``minimize`` with the same keys, up to
    the rounding of vmapped arithmetic.
    """
    n_init = default_n_init(problem, budget) if n_init is None else n_init
    validate(problem, budget, n_init, 1)
    q = batch_size(algo, problem)
    validate(problem, budget, n_init, q)
    segments = plan(budget, n_init, q, min_capacity)
    first = segments[0].capacity if segments else D.next_capacity(n_init, min_capacity)
    states, loop_keys, (x, y, f) = _init_many(algo, problem, keys, n_init, first)
    xs, ys, fs = [np.asarray(x)], [np.asarray(y)], [np.asarray(f)]
    done = n_init
    yield Progress(done, *(np.concatenate(a, axis=1) for a in (xs, ys, fs)))
    for seg in segments:
        left = seg.rounds
        while left:
            n = min(chunk, left)
            # Always a chunk of ``min(chunk, seg.rounds)`` rounds with the first ``n`` active: one
            # compilation per capacity, whatever the chunk lengths.
            (states, loop_keys), (x, y, f, _) = _chunk_many(
                algo, problem, states, loop_keys, min(chunk, seg.rounds), seg.capacity, n)
            s = x.shape[0]
            xs.append(np.asarray(x[:, :n]).reshape(s, n * q, -1))
            ys.append(np.asarray(y[:, :n]).reshape(s, -1))
            fs.append(np.asarray(f[:, :n]).reshape(s, -1))
            done += n * q
            left -= n
            yield Progress(done, *(np.concatenate(a, axis=1) for a in (xs, ys, fs)))
