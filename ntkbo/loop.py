"""Drivers: ``minimize`` and ``maximize`` run a whole optimisation as jitted ``lax.scan`` segments.

A run of ``budget`` evaluations is: ``n_init`` points of a quasi-random initial design (drawn from the
run's key independently of the algorithm, so every algorithm given the same key starts from the same
points), then rounds of ``suggest -> evaluate -> update`` with ``q`` points per round.

The state's buffers have a fixed capacity. To keep the cost of a step proportional to the number of
observations rather than to the budget, the run is split into *segments*: while the buffer holds at
most ``c`` points the state has capacity ``c`` (a power of two), and it is grown to ``2c`` between
segments (``ntkbo.data.grow``). Each segment is one ``lax.scan``, and each is a compiled copy of the
whole step, which costs seconds to compile (more than the step costs to run at any capacity up to
``MIN_CAPACITY``): below ``MIN_CAPACITY`` observations one segment serves, of the capacity the budget
needs (``plan``). The whole run is a traceable function of the key, so
``jax.vmap(lambda k: ntkbo.minimize(algo, problem, B, k))`` runs many seeds at once.

Constrained problems (``problem.constraints``, ``K`` black-box constraints ``c_k(x) <= 0``): every
evaluation also observes the constraint values (noisy if ``problem.constraint_noise_std > 0``). An
algorithm with ``algo.n_constraints == K`` receives them as ``y`` of shape ``(q, 1 + K)`` (objective
first, see ``ntkbo.base``); one with ``n_constraints == 0`` receives the objective only. The
``Result`` records the constraint values, the feasibility of every point and the metric of
Neural-CBO (Phan-Trong's thesis, Section 4.2, Def. 4.2.1 and Fig. 4.1): the best positive regret
plus violation up to evaluation ``t``,

    min_{s <= t} ( [f(x_s) - f*]^+ + sum_k [c_k(x_s)]^+ ),

with noise-free ``f`` and ``c`` at the evaluated points, as the authors' plotting code computes it
(the thesis plots its ``log10``; the running minimum here starts at the first initial point).
"""

from __future__ import annotations

import functools
from typing import Any, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ntkbo import cache, compiling, lapack_threads, qmc
from ntkbo import data as D
from ntkbo.algorithms import resolve_guard
from ntkbo.base import Algorithm, StagedUpdate
from ntkbo.objective import Problem, violation
from ntkbo.validation import check_bounds, check_int, check_output, check_problem

Array = jax.Array

#: Default smallest capacity of a run's buffers (a power of two), unless the budget needs less: a
#: segment (``plan``) is one more compiled copy of the whole step, seconds of compilation on a CPU
#: and tens of seconds on a GPU, while a step at 128 observations' capacity costs milliseconds more
#: than at 16 (``benchmarks/compile.py``; docs/decisions.md).
MIN_CAPACITY = 128
#: The largest budget a driver accepts (the buffers of a kernel model are O(capacity^2) in memory).
MAX_BUDGET = 1 << 16


class Result(NamedTuple):
    """The outcome of ``minimize`` (leading axes added by ``vmap``).

    Attributes:
      x: ``(budget, d)`` evaluated points, in order (initial design first).
      y: ``(budget,)`` observations (with noise, if the problem has any).
      f: ``(budget,)`` noise-free objective values at ``x`` (for regret curves).
      best_x: ``(d,)`` the point with the best observation among the points whose *observed*
        constraint values are all ``<= 0`` (all points, for an unconstrained problem). If no point
        was observed feasible, the point with the smallest observed total violation
        ``sum_k [c_k]^+`` instead (and ``best_feasible`` is False).
      best_y: the observation at ``best_x``.
      best_f: the noise-free value at ``best_x``.
      state: the algorithm's final state.
      info: per-round diagnostics of ``suggest`` (the algorithm's suggest-info NamedTuple), each
        field stacked over the ``(budget - n_init) / q`` rounds (leading axis); ``None`` when
        there are no rounds.
      c: ``(budget, K)`` noise-free constraint values at ``x`` (``K = 0``: unconstrained).
      c_obs: ``(budget, K)`` observed constraint values (what the algorithm was told).
      feasible: ``(budget,)`` bool, ``x`` is feasible (noise-free ``c <= 0``).
      metric: ``(budget,)`` best positive regret plus violation so far (module docstring), ``NaN``
        if the problem's optimum is unknown; for an unconstrained problem the best simple regret.
      best_feasible: ``()`` bool, ``best_x`` was observed feasible.
      update_info: diagnostics of ``update`` (the algorithm's update-info NamedTuple, e.g.
        NeuralBO's training losses), each field stacked over ``1 + (budget - n_init) / q``
        updates: entry 0 the update with the initial design, entry ``r + 1`` the update with
        round ``r``'s observations (so round ``r``'s suggestion used the model of entry ``r``).
      failed: ``(budget,)`` bool, the evaluation failed: its observation (or an observed
        constraint value) is NaN or infinite. Failed evaluations stay in ``x``, ``y`` and the
        algorithm's buffers, but no model is fit to them and ``best_*`` never picks one
        (``ntkbo.data``); ``failed.sum()`` counts them.
    """

    x: Array
    y: Array
    f: Array
    best_x: Array
    best_y: Array
    best_f: Array
    state: Any
    info: Any
    c: Any = None
    c_obs: Any = None
    feasible: Any = None
    metric: Any = None
    best_feasible: Any = None
    failed: Any = None
    update_info: Any = None


class Segment(NamedTuple):
    """``rounds`` rounds run at buffer ``capacity``."""

    capacity: int
    rounds: int


def plan(budget: int, n_init: int, q: int = 1, min_capacity: int = MIN_CAPACITY) -> list[Segment]:
    """The capacity schedule of a run: the rounds at each power-of-two capacity.

    Round ``r`` starts with ``n_init + r q`` observations and needs room for ``q`` more; its
    capacity is the smallest power of two that holds them and is at least ``min_capacity``, or at
    least the capacity the whole ``budget`` needs if that is smaller (a run of 30 evaluations has
    one segment of capacity 32, one of 100 one of 128, one of 1000 four: 128, 256, 512, 1024).
    """
    rounds = (budget - n_init) // q
    floor = min(int(min_capacity), D.next_capacity(budget, 1))
    segments: list[Segment] = []
    for r in range(rounds):
        cap = D.next_capacity(n_init + (r + 1) * q, floor)
        if segments and segments[-1].capacity == cap:
            segments[-1] = Segment(cap, segments[-1].rounds + 1)
        else:
            segments.append(Segment(cap, 1))
    return segments


def _design_capacity(budget: int, n_init: int, min_capacity: int) -> int:
    """The capacity of a run without rounds (``budget == n_init``), on ``plan``'s rule."""
    return D.next_capacity(n_init, min(int(min_capacity), D.next_capacity(budget, 1)))


def validate(problem, budget: int, n_init: int, q: int) -> None:
    """Argument checks, made once outside ``jit``; raise ``ValueError`` naming the argument."""
    for name, v in (("budget", budget), ("n_init", n_init), ("q", q)):
        validate_int(name, v)
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
    check_problem(problem)
    bounds = problem.bounds
    # shape, finite, lower < upper (values only when concrete: under an outer jit they are tracers)
    check_bounds(bounds, "problem.bounds")
    check_traceable(problem)


def validate_int(name: str, v) -> None:
    """``v`` must be an int (a Python or numpy integer, not a bool): ``ValueError`` naming it."""
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise ValueError(f"{name} must be a Python int, got {type(v).__name__} {v!r}")


#: What JAX raises when a function reads a traced value as a concrete one (numpy, float(), if).
_NOT_TRACEABLE = (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
                  jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)


def check_traceable(problem) -> None:
    """Traces ``problem.fn`` on one abstract point (``jax.eval_shape``, nothing runs) and, if it
    converts its input to numpy or Python values, raises ``TypeError`` naming the way out:
    ``ntkbo.benchmarks.numpy_problem`` (a host callback) or ``ntkbo.ask_tell``."""
    bounds = problem.bounds
    dtype = bounds.dtype if jnp.issubdtype(bounds.dtype, jnp.floating) else jnp.result_type(float)
    point = jax.ShapeDtypeStruct(bounds.shape[-1:], dtype)
    try:
        out = jax.eval_shape(lambda x: problem.fn(x), point)
    except _NOT_TRACEABLE as err:
        name = getattr(problem, "name", "problem")
        raise TypeError(
            f"problem.fn of {name!r} is not a JAX function: it turned its traced input into a "
            f"numpy or Python value ({type(err).__name__}). ntkbo.minimize compiles the whole "
            "run, so fn must be traceable. For a numpy or simulator objective, wrap it: "
            "problem = ntkbo.benchmarks.numpy_problem(fn, bounds) (evaluated on the host by "
            "jax.pure_callback, under jit and vmap), or drive it yourself with ntkbo.ask_tell."
        ) from None
    for leaf in jax.tree_util.tree_leaves(out):
        check_output(f"problem.fn of {getattr(problem, 'name', 'problem')!r}", leaf)


def check_constraints(algo: Algorithm, problem) -> None:
    """An algorithm that models ``K > 0`` constraints needs a problem with exactly ``K``."""
    k_algo = int(getattr(algo, "n_constraints", 0))
    k_problem = n_constraints(problem)
    if k_algo and k_algo != k_problem:
        raise ValueError(
            f"algo.n_constraints = {k_algo} but the problem has {k_problem} constraints; build the "
            f"algorithm with n_constraints={k_problem}")


def n_constraints(problem) -> int:
    """``K`` of a problem (0 when it has no ``constraints``)."""
    return int(getattr(problem, "n_constraints", 0) or 0)


def batch_size(algo: Algorithm, problem) -> int:
    """``q``, the number of points ``algo.suggest`` returns, read from its traced output shape."""
    key = jax.random.PRNGKey(0)
    state = jax.eval_shape(lambda k: algo.init(k, problem.bounds, MIN_CAPACITY), key)
    x, _ = jax.eval_shape(algo.suggest, key, state)
    if len(x.shape) != 2 or x.shape[1] != problem.bounds.shape[-1]:
        raise ValueError(
            f"algo.suggest must return x of shape (q, d={problem.bounds.shape[-1]}), got {x.shape}")
    return int(x.shape[0])


def design_size(d: int) -> int:
    """The default initial design's size for ``d`` inputs: ``d + 1`` points, at least 2 (the
    fewest that determine a linear model). Chosen over ``2 d`` and ``max(5, d + 1)`` on the dev
    suite's problems with ``d <= 6`` at budgets 20-40: ``2 d`` ranked slightly better on average
    but within the tie margin fixed before the comparison, and ``d + 1`` lets the model act
    sooner (docs/decisions.md, 2026-11-27)."""
    return max(2, int(d) + 1)


def default_n_init(problem, budget: int, algo=None) -> int:
    """The initial design of a run of ``budget`` when the caller gives none: ``min(budget,
    algo.n_init)`` when ``algo`` carries its preset's (``ntkbo.base.Algorithm.n_init``), else
    ``min(budget, design_size(d))``. ``ValueError`` naming the argument for a ``problem`` that
    is not one or a ``budget`` that is not an int."""
    check_problem(problem)
    validate_int("budget", budget)
    n_init = getattr(algo, "n_init", None)
    return min(budget, design_size(problem.bounds.shape[-1]) if n_init is None else n_init)


def _evaluate(problem, key, x):
    """``(y, f, c_obs, c)``: noisy and noise-free objective ``(q,)``, noisy and noise-free
    constraint values ``(q, K)``. The objective's noise uses ``key`` exactly as for an unconstrained
    problem; the constraints' noise uses ``fold_in(key, 1)``."""
    f = jax.vmap(problem.fn)(x)
    if not jnp.issubdtype(f.dtype, jnp.floating):  # an integer objective (check_traceable)
        f = f.astype(x.dtype)
    noise = jnp.asarray(problem.noise_std, f.dtype) * jax.random.normal(key, f.shape, f.dtype)
    k = n_constraints(problem)
    if not k:
        c = jnp.zeros((x.shape[0], 0), f.dtype)
        return f + noise, f, c, c
    c = jax.vmap(problem.constraints)(x).astype(f.dtype)
    std = jnp.broadcast_to(
        jnp.asarray(getattr(problem, "constraint_noise_std", 0.0), f.dtype), (k,))
    c_obs = c + std * jax.random.normal(jax.random.fold_in(key, 1), c.shape, f.dtype)
    return f + noise, f, c_obs, c


def _told(algo: Algorithm, y, c_obs):
    """What ``algo.update`` is given: ``y`` ``(q,)``, or ``(q, 1 + K)`` for a constrained
    algorithm (``ntkbo.base``)."""
    if not getattr(algo, "n_constraints", 0):
        return y
    return jnp.concatenate([y[:, None], c_obs], axis=1)


def grow_state(state, capacity: int):
    """Grows every ``ntkbo.data.Data`` buffer in ``state`` to ``capacity``, with the arrays sized by
    it (a Cholesky factor, ``ntkbo.gp.Factor``; ``ntkbo.data.grow_tree``). Nothing is lost."""
    return D.grow_tree(state, capacity)


#: The initial design's samplers: ``"sobol"`` (scrambled Sobol, ``ntkbo.qmc.sobol``, the
#: default) and ``"uniform"`` (i.i.d. uniform points, ``ntkbo.qmc.uniform``: a paper's "random
#: points" or "random search").
DESIGN_SAMPLERS = ("sobol", "uniform")


def initial_design(key, bounds, n: int, sampler: str | None = None):
    """``n`` points in the box, the same for every algorithm with the same ``sampler``
    (:data:`DESIGN_SAMPLERS`; ``None``: ``"sobol"``, scrambled quasi-random points)."""
    sampler = "sobol" if sampler is None else sampler
    if sampler not in DESIGN_SAMPLERS:
        raise ValueError(f"design sampler must be one of {DESIGN_SAMPLERS}, got {sampler!r}")
    return (qmc.sobol if sampler == "sobol" else qmc.uniform)(key, n, bounds)


def _design(algo: Algorithm, problem, key, n_init: int, capacity: int):
    """The initial state (nothing observed), the rounds' key and the evaluated initial design."""
    k_design, k_noise, k_algo, k_loop = jax.random.split(key, 4)
    x0 = initial_design(k_design, problem.bounds, n_init, getattr(algo, "design_sampler", None))
    y0, f0, c_obs0, c0 = _evaluate(problem, k_noise, x0)
    state = algo.init(k_algo, problem.bounds, capacity)
    return state, k_loop, (x0, y0, f0, c_obs0, c0)


def _init(algo: Algorithm, problem, key, n_init: int, capacity: int):
    state, k_loop, design = _design(algo, problem, key, n_init, capacity)
    x0, y0, _, c_obs0, _ = design
    state, update_info = algo.update(state, x0, _told(algo, y0, c_obs0))
    return state, k_loop, design, update_info


def _scan_rounds(algo: Algorithm, problem, state, key, rounds: int):
    """``rounds`` rounds of suggest, evaluate, update; returns the new carry and stacked outputs."""

    def body(carry, _):
        state, key = carry
        key, k_suggest, k_noise = jax.random.split(key, 3)
        x, info = algo.suggest(k_suggest, state)
        y, f, c_obs, c = _evaluate(problem, k_noise, x)
        state, update_info = algo.update(state, x, _told(algo, y, c_obs))
        return (state, key), (x, y, f, c_obs, c, info, update_info)

    return jax.lax.scan(body, (state, key), None, length=rounds)


def _scan_design_and_rounds(algo: Algorithm, problem, state, key, design, rounds: int):
    """The initial design's update and then ``rounds`` rounds, as one scan of ``rounds + 1``
    steps, for an algorithm whose update is a ``StagedUpdate``: step 0 appends the design, step
    ``r + 1`` round ``r``'s suggestion (a ``lax.cond`` on the step, which stays a branch under
    ``jax.vmap``), and every step refits, so the refit is traced and compiled once rather than
    once for the design's rows and once for a round's (for ``gp`` the hyper-parameter fit, the
    larger part of the program). The same computations as ``_init`` then ``_scan_rounds``: the
    same results. Returns the carry, the design's update info and the rounds' stacked outputs
    (``_scan_rounds``'s)."""
    x0, y0, _, c_obs0, _ = design
    staged = algo.update
    assert isinstance(staged, StagedUpdate)
    append, refit = staged.append, staged.refit

    def round_(state, key):
        key, k_suggest, k_noise = jax.random.split(key, 3)
        x, info = algo.suggest(k_suggest, state)
        y, f, c_obs, c = _evaluate(problem, k_noise, x)
        return append(state, x, _told(algo, y, c_obs)), key, (x, y, f, c_obs, c, info)

    shapes = jax.eval_shape(round_, state, key)[2]

    def design_(state, key):
        return (append(state, x0, _told(algo, y0, c_obs0)), key,
                jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes))

    def body(carry, step):
        (state, pending), key, out = jax.lax.cond(step == 0, design_, round_, *carry)
        state, update_info = refit(state, pending)
        return (state, key), (*out, update_info)

    carry, (x, y, f, c_obs, c, info, update_info) = jax.lax.scan(body, (state, key),
                                                                 jnp.arange(rounds + 1))
    rest = jax.tree_util.tree_map(lambda a: a[1:], (x, y, f, c_obs, c, info, update_info))
    return carry, jax.tree_util.tree_map(lambda a: a[0], update_info), rest


def failed(y, c_obs):
    """``(n,)`` bool: the evaluations that failed, a NaN or infinite observation ``y`` ``(n,)`` or
    observed constraint value ``c_obs`` ``(n, K)`` (Optuna's failed trials; ``ntkbo.data``)."""
    return ~(jnp.isfinite(y) & jnp.all(jnp.isfinite(c_obs), axis=-1))


def _best(x, y, f, c_obs):
    """The best observation among the observed-feasible points, else the least violating point;
    returns ``(x, y, f, observed_feasible)`` at it (``argmin(y)`` when unconstrained). Failed
    evaluations (``failed``) are never chosen; if every evaluation failed, the first is returned
    (its ``y`` is then not finite)."""
    done = ~failed(y, c_obs)
    ok = jnp.all(c_obs <= 0, axis=-1) & done
    least = jnp.argmin(jnp.where(done, violation(c_obs), jnp.inf))
    i = jnp.where(jnp.any(ok), jnp.argmin(jnp.where(ok, y, jnp.inf)), least)
    return x[i], y[i], f[i], ok[i]


def regret_plus_violation(f, c, optimum):
    """Per evaluation ``[f - f*]^+ + sum_k [c_k]^+`` (``(..., n)`` from ``f`` ``(..., n)`` and ``c``
    ``(..., n, K)``); ``NaN`` if ``optimum`` is ``None``. Phan-Trong's thesis, Def. 4.2.1. A failed
    evaluation (non-finite ``f`` or ``c``) found nothing: ``+inf``, so the running minimum skips it."""
    f = jnp.asarray(f)
    if optimum is None:
        return jnp.full(f.shape, jnp.nan, f.dtype)
    value = jnp.maximum(f - jnp.asarray(optimum, f.dtype), 0.0) + violation(c)
    ok = jnp.isfinite(f) & jnp.all(jnp.isfinite(c), axis=-1)
    return jnp.where(ok, value, jnp.inf)


def best_regret_plus_violation(f, c, optimum):
    """Neural-CBO's metric: the running minimum over evaluations (last axis) of
    ``regret_plus_violation``; the thesis plots its ``log10`` (Fig. 4.1)."""
    return best_so_far(regret_plus_violation(f, c, optimum))


def _stack(parts):
    """The per-segment stacked infos joined along the rounds axis (``None`` when no rounds)."""
    return jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *parts) if parts else None


_STATIC = ("algo", "budget", "n_init", "q", "min_capacity")
#: The compiled runs this process keeps (``ntkbo.cache.Kept``), one jitted ``_minimize`` per
#: algorithm, problem structure (its ``fn`` and other static fields) and run shape.
_RUNS = cache.Kept()


def _program(algo, problem, budget, n_init, q, min_capacity):
    """The jitted ``_minimize`` for these static arguments, its own function object (a new
    ``functools.partial``) so that releasing it (``ntkbo.cache.Kept``) frees its programs only."""
    key = (algo, jax.tree_util.tree_structure(problem), budget, n_init, q, min_capacity)
    return _RUNS.get(key, lambda: jax.jit(functools.partial(_minimize), static_argnames=_STATIC))


def _minimize(algo, problem, key, budget, n_init, q, min_capacity):
    segments = plan(budget, n_init, q, min_capacity)
    first = segments[0].capacity if segments else _design_capacity(budget, n_init, min_capacity)
    # A staged update (ntkbo.base.StagedUpdate) refits in the first segment's scan, traced once
    # for the design and the rounds; any other update is called on the design here.
    staged = bool(segments) and isinstance(algo.update, StagedUpdate)
    if staged:
        state, key, design = _design(algo, problem, key, n_init, first)
    else:
        state, key, design, info0 = _init(algo, problem, key, n_init, first)
    x0, y0, f0, co0, c0 = design
    xs, ys, fs, cos, cs, infos, update_infos = [x0], [y0], [f0], [co0], [c0], [], []
    for i, seg in enumerate(segments):
        state = grow_state(state, seg.capacity)
        if staged and i == 0:
            (state, key), info0, outs = _scan_design_and_rounds(algo, problem, state, key, design,
                                                                seg.rounds)
        else:
            (state, key), outs = _scan_rounds(algo, problem, state, key, seg.rounds)
        if i == 0:
            update_infos.append(jax.tree_util.tree_map(lambda a: a[None], info0))
        x, y, f, co, c, info, update_info = outs
        xs.append(x.reshape(-1, x0.shape[-1]))
        ys.append(y.reshape(-1))
        fs.append(f.reshape(-1))
        cos.append(co.reshape(x.shape[0] * x.shape[1], c0.shape[-1]))  # K may be 0: no -1
        cs.append(c.reshape(x.shape[0] * x.shape[1], c0.shape[-1]))
        infos.append(info)
        update_infos.append(update_info)
    if not segments:
        update_infos.append(jax.tree_util.tree_map(lambda a: a[None], info0))
    x, y, f = jnp.concatenate(xs), jnp.concatenate(ys), jnp.concatenate(fs)
    c_obs, c = jnp.concatenate(cos), jnp.concatenate(cs)
    info, update_info = _stack(infos), _stack(update_infos)
    best_x, best_y, best_f, best_ok = _best(x, y, f, c_obs)
    return Result(x, y, f, best_x, best_y, best_f, state, info, c, c_obs,
                  jnp.all(c <= 0, axis=-1), best_regret_plus_violation(f, c, problem.optimum),
                  best_ok, failed(y, c_obs), update_info)


def minimize(algo: Algorithm, problem: Problem, budget: int, key, *, n_init: int | None = None,
             min_capacity: int = MIN_CAPACITY) -> Result:
    """Minimises ``problem.fn`` over ``problem.bounds`` with ``budget`` evaluations.

    Args:
      algo: an ``ntkbo.Algorithm``; a duplicate guard left at ``"auto"`` is resolved against
        ``problem`` (``ntkbo.algorithms.resolve_guard``: off where it is noisy, so a problem
        passed as an argument of ``jax.jit`` needs the guard set or the algorithm built by
        ``ntkbo.algorithms.for_problem``).
      problem: an ``ntkbo.benchmarks.Problem`` (or anything with a traceable ``fn`` of one point
        ``(d,) -> ()``, ``bounds`` ``(2, d)`` and ``noise_std``).
      budget: total number of evaluations, initial design included.
      key: a ``jax.random`` key; the same key gives a bit-identical run.
      n_init: size of the initial design (default ``default_n_init``: the ``algo.n_init`` of its
        preset, else ``min(budget, max(2, d + 1))``, ``design_size``), drawn by
        ``algo.design_sampler`` (its preset's; ``None``: scrambled Sobol, ``initial_design``).
      min_capacity: the smallest buffer capacity unless the budget needs less (capacities are
        powers of two; ``plan``).

    Returns:
      A ``Result``. The call is traceable: ``jax.vmap`` it over keys to run many seeds at once.
      Each round evaluates the ``q`` points ``algo.suggest`` returns; ``budget - n_init`` must be a
      multiple of ``q``.

    The run is one compiled program per algorithm, problem, budget and capacity plan, compiled
    at the first call and kept in JAX's persistent cache (``ntkbo.cache``: a later process reads
    it instead of compiling); a first call that compiles for more than a few seconds says so on
    standard error (``ntkbo.compiling``). It runs on one LAPACK thread unless the environment
    says otherwise (``ntkbo.lapack_threads.during_calls``) and returns once computed.
    """
    check_problem(problem)  # before anything reads it
    algo = resolve_guard(algo, problem)
    n_init = default_n_init(problem, budget, algo) if n_init is None else n_init
    validate(problem, budget, n_init, 1)
    check_int("min_capacity", min_capacity, 1)
    check_constraints(algo, problem)
    q = batch_size(algo, problem)
    validate(problem, budget, n_init, q)
    with cache.scope(), lapack_threads.during_calls(), compiling.notice(
            _describe(algo, problem, budget)):
        run = _program(algo, problem, budget, n_init, q, min_capacity)
        return _ready(run(algo, problem, key, budget=budget, n_init=n_init, q=q,
                          min_capacity=min_capacity))


def _ready(result):
    """``result`` once computed, so that the LAPACK thread count of
    ``lapack_threads.during_calls`` holds while the program runs: its arrays are waited for, and
    so are the batched values of an eager ``jax.vmap`` (a tracer's ``val``); under an outer
    ``jit`` nothing runs yet and nothing is waited for."""
    for a in jax.tree_util.tree_leaves(result):
        value = getattr(a, "val", None) if isinstance(a, Tracer) else a
        if isinstance(value, jax.Array) and not isinstance(value, Tracer):
            value.block_until_ready()
    return result


def _describe(algo: Algorithm, problem, budget: int) -> str:
    """``minimize(<algorithm>, <problem>, budget=<budget>)`` for the compile notice."""
    name = getattr(algo, "name", None) or "algorithm"
    return f"minimize({name}, {getattr(problem, 'name', 'problem')}, budget={budget})"


class _Negate(NamedTuple):
    """``-fn``; a NamedTuple so equal wrappers hash equal and jit caches hit across calls."""

    fn: Any

    def __call__(self, x):
        return -self.fn(x)


def _negated(problem):
    # ``optimum`` is the minimum of ``fn``, not the minimum of ``-fn``: dropped (metric is NaN).
    neg = _Negate(problem.fn)
    if hasattr(problem, "replace"):
        return problem.replace(fn=neg, optimum=None)
    return problem._replace(fn=neg, **({"optimum": None} if hasattr(problem, "optimum") else {}))


def maximize(algo: Algorithm, problem: Problem, budget: int, key, **kwargs) -> Result:
    """Maximises ``problem.fn``: ``minimize`` on ``-fn``; ``y``, ``f`` and ``best_*`` are reported in
    the original sign (``best_y`` is the largest observation among the observed-feasible points).
    The constraints keep their sign (``c_k <= 0`` feasible); ``metric`` is ``NaN`` (the problem's
    ``optimum`` is a minimum)."""
    check_problem(problem)
    check_traceable(problem)  # its output's dtype, before -fn reads it
    r = minimize(algo, _negated(problem), budget, key, **kwargs)
    return r._replace(y=-r.y, f=-r.f, best_y=-r.best_y, best_f=-r.best_f)


def best_so_far(values):
    """Running minimum along the last axis (the curve plotted against evaluations): entry ``i``
    is the smallest of the values ``0..i``, a NaN (a failed evaluation) skipped, so NaN only
    before the first value that is not (``numpy.fmin.accumulate``). A jax array (traced too)
    gives a jax array (``jax.lax.associative_scan`` of ``jnp.fmin``), anything else a numpy
    array. The one running minimum of the library: ``Result.metric``, the command line's
    summary, the study reports' curves and the COCO runtimes."""
    if isinstance(values, (jax.Array, Tracer)):
        if values.shape[-1] == 0:
            return values
        return jax.lax.associative_scan(jnp.fmin, values, axis=values.ndim - 1)
    return np.fmin.accumulate(np.asarray(values), axis=-1)


# ---------------------------------------------------------------------------------------------
# Chunked runs over many seeds, for progress reporting (the command line uses this).


class Progress(NamedTuple):
    """Yielded by ``minimize_chunks`` after each chunk: evaluations done and the results so far."""

    done: int
    x: np.ndarray
    y: np.ndarray
    f: np.ndarray
    c: np.ndarray  # (seeds, done, K) noise-free constraint values (K = 0: unconstrained)
    c_obs: np.ndarray  # (seeds, done, K) observed constraint values


@functools.partial(jax.jit, static_argnames=("algo", "n_init", "capacity"))
def _init_many(algo, problem, keys, n_init, capacity):
    return jax.vmap(lambda k: _init(algo, problem, k, n_init, capacity)[:3])(keys)


def _masked_rounds(algo: Algorithm, problem, state, key, rounds: int, active):
    """``rounds`` rounds of which only the first ``active`` (traced) take effect: the carry of an
    inactive round is left unchanged, so one compiled chunk serves every chunk length."""

    def body(carry, i):
        state, key = carry
        key2, k_suggest, k_noise = jax.random.split(key, 3)
        x, info = algo.suggest(k_suggest, state)
        y, f, c_obs, c = _evaluate(problem, k_noise, x)
        new = (algo.update(state, x, _told(algo, y, c_obs))[0], key2)
        carry = jax.tree_util.tree_map(lambda a, b: jnp.where(i < active, a, b), new, carry)
        return carry, (x, y, f, c_obs, c, info)

    return jax.lax.scan(body, (state, key), jnp.arange(rounds))


@functools.partial(jax.jit, static_argnames=("algo", "rounds", "capacity"))
def _chunk_many(algo, problem, states, keys, active, *, rounds, capacity):
    states = grow_state(states, capacity)
    return jax.vmap(lambda s, k: _masked_rounds(algo, problem, s, k, rounds, active))(states, keys)


def minimize_chunks(algo: Algorithm, problem: Problem, budget: int, keys, *,
                    n_init: int | None = None, chunk: int = 10, min_capacity: int = MIN_CAPACITY,
                    programs=None) -> Iterator[Progress]:
    """Runs ``minimize`` for every key in ``keys`` ``(s, ...)`` (vmapped), yielding ``Progress``
    every ``chunk`` rounds. The evaluated points are those of ``minimize`` with the same keys up to
    rounding, not bit for bit: a different program (vmapped, or the masked chunks here) is
    compiled differently (on CPU, fused multiply-adds are contracted in vectorised code and not in
    scalar code, and fusion and vectorisation choices change the order of operations), and
    Bayesian optimisation amplifies the last bits into different points (0.03-0.08 in ``y`` after
    ten evaluations of GP-EI on Branin, float32). The same ``keys`` (same shape), ``budget``,
    ``n_init``, ``chunk`` and ``min_capacity`` give a bit-identical run, so one key of a batch is
    reproduced by re-running its batch (``ntkbo run --seed-index``), or by running keys one at a
    time (a batch of one) in the first place.

    ``programs``: an ``ntkbo.programs.ProgramStore`` whose fingerprint describes ``algo`` and
    ``problem``; the initial design's and the chunks' programs are then exported to it once and
    loaded by later processes instead of traced (bit-identical results; ``ntkbo run`` passes one).
    """
    check_problem(problem)  # before anything reads it
    algo = resolve_guard(algo, problem)
    n_init = default_n_init(problem, budget, algo) if n_init is None else n_init
    validate(problem, budget, n_init, 1)
    check_int("min_capacity", min_capacity, 1)
    check_constraints(algo, problem)
    q = batch_size(algo, problem)
    validate(problem, budget, n_init, q)
    segments = plan(budget, n_init, q, min_capacity)
    first = segments[0].capacity if segments else _design_capacity(budget, n_init, min_capacity)
    # Every program goes through ``call``: straight to the jitted function, or through the store,
    # compiled with the persistent cache (``ntkbo.cache``) and run on the LAPACK threads of
    # ``lapack_threads.during_calls``.
    run = programs if programs is not None else (lambda _name, fn, *args: fn(*args))

    def call(*args):
        with cache.scope(), lapack_threads.during_calls():
            return _ready(run(*args))
    states, loop_keys, (x, y, f, co, c) = call(
        f"init n_init={n_init} capacity={first}",
        functools.partial(_init_many, algo, problem, n_init=n_init, capacity=first), keys)
    xs, ys, fs = [np.asarray(x)], [np.asarray(y)], [np.asarray(f)]
    cos, cs = [np.asarray(co)], [np.asarray(c)]
    done = n_init
    yield Progress(done, *(np.concatenate(a, axis=1) for a in (xs, ys, fs, cs, cos)))
    for seg in segments:
        left = seg.rounds
        while left:
            n = min(chunk, left)
            # Always a chunk of ``min(chunk, seg.rounds)`` rounds with the first ``n`` active: one
            # compilation per capacity, whatever the chunk lengths (``n`` is traced).
            rounds = min(chunk, seg.rounds)
            (states, loop_keys), (x, y, f, co, c, _) = call(
                f"chunk rounds={rounds} capacity={seg.capacity}",
                functools.partial(_chunk_many, algo, problem, rounds=rounds, capacity=seg.capacity),
                states, loop_keys, n)
            s = x.shape[0]
            xs.append(np.asarray(x[:, :n]).reshape(s, n * q, -1))
            ys.append(np.asarray(y[:, :n]).reshape(s, -1))
            fs.append(np.asarray(f[:, :n]).reshape(s, -1))
            cos.append(np.asarray(co[:, :n]).reshape(s, n * q, co.shape[-1]))  # K may be 0
            cs.append(np.asarray(c[:, :n]).reshape(s, n * q, c.shape[-1]))
            done += n * q
            left -= n
            yield Progress(done, *(np.concatenate(a, axis=1) for a in (xs, ys, fs, cs, cos)))
