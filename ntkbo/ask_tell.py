"""Ask/tell: optimise objectives that live outside JAX (a simulator, a training job, a lab).

The study is an immutable value, threaded by the caller::

    study = ntkbo.ask_tell.start(algo, bounds, key)     # d + 1 Sobol points asked first
    for _ in range(50):
        x, study = ntkbo.ask_tell.ask(algo, study)        # (q, d) numpy array
        y = my_simulator(x)                                # (q,) anything array-like
        study = ntkbo.ask_tell.tell(algo, study, x, y)     # validates, grows capacity, refits
        ntkbo.ask_tell.save("study.msgpack", study)        # resume later with ``load``

**Parallel workers** (trials, as in Optuna and Ax): every point asked is a *trial* with an integer
id (0, 1, 2, ... in the order asked), *pending* until it is told, failed or abandoned::

    t1, x1, study = ntkbo.ask_tell.ask_trial(algo, study)    # worker 1 gets x1 (d,)
    t2, x2, study = ntkbo.ask_tell.ask_trial(algo, study)    # worker 2: conditioned on x1 pending
    study = ntkbo.ask_tell.tell(algo, study, t2, y2)         # in any order
    study = ntkbo.ask_tell.fail(algo, study, t1)             # or tell(..., t1, nan); or abandon

An ``ask`` while trials are pending conditions on them (*constant liar*, Ginsbourger et al. 2010):
each pending point gets a fantasy observation, the ``lie``, on a copy of the state, and no row
asked lies within ``ntkbo.optimize.MIN_DISTANCE`` of a pending point (``ask`` has the details).

**Validation** happens here, outside ``jit``: points ``(q, d)``, finite and in the bounds, one
observation per point; a rejected ``tell`` raises ``ValueError`` naming the argument and leaves
the study as it was. The study keeps the exact record of what was told in float64, while the
algorithm's buffers (grown by doubling) hold the state's dtype (``tell`` says what that implies).

**Failed evaluations** (Optuna's failed trials): a NaN or infinite observation (or constraint
value) is recorded as failed (``failed`` marks it) and no model fits it; ``fail`` tells a trial as
failed, ``abandon`` drops a trial that was never evaluated.

Black-box constraints ``c_k(x) <= 0``: an algorithm with ``algo.n_constraints = K > 0`` (e.g.
``neural_cbo``) needs ``tell(algo, study, x, y, c)``, ``c`` ``(q, K)``; with ``K = 0``, no ``c``.

The first ``n_init`` points asked are the initial design of ``ntkbo.minimize`` with the same
key (``start``); then ``ask`` calls ``algo.suggest`` (a duplicate guard at ``"auto"``: on).
``save`` (format 4: the algorithm and its options, the bounds, the trials, the ``Space``) keeps
the key, so a resumed study asks the points an uninterrupted one would; ``load`` refuses a file
of another algorithm, option or box.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from ntkbo import cache, compiling, lapack_threads
from ntkbo import data as D
from ntkbo import files
from ntkbo.base import Algorithm
from ntkbo.loop import MIN_CAPACITY, design_size, grow_state, initial_design
from ntkbo.optimize import MIN_DISTANCE
from ntkbo.provenance import git_revision, versions
from ntkbo.search_space import Space
from ntkbo.validation import check_bounds, check_fits_dtype, check_int, real_array

#: The save format: 4 records the state, the float64 record, the bounds, the algorithm's name and
#: resolved config (each part whole, ``ntkbo.parts``), the dtype and the provenance (and,
#: optionally, the trials and the space). ``load`` refuses the earlier formats naming what changed:
#: 1 and 2 recorded no algorithm (and 1 no float64 record nor bounds), 3 recorded the options by
#: their flat names, before they were grouped into parts. 5 is 4's record inside a checked envelope:
#: the file is the msgpack map ``{"format": 5, "checksum": "sha256:<hex>", "payload": <bytes>}``,
#: ``payload`` the msgpack of the record (whose own ``format`` is 5 too) and ``checksum`` its
#: SHA-256 (``ntkbo.files.sha256``), verified by ``load``. Format 4 files (no checksum) load with a
#: warning.
FORMAT_VERSION = 5
#: The one earlier format ``load`` reads: the same record, without a checksum.
UNCHECKED_FORMAT = 4
#: The record's fields ``load`` needs (``trials`` and ``space`` are optional).
_REQUIRED = {"algorithm": str, "dtype": str, "capacity": int, "n_init": int, "bounds": np.ndarray,
             "told_x": np.ndarray, "told_y": np.ndarray, "study": dict}

#: A trial's status, by its code in ``Trials.status``.
STATUSES = ("pending", "complete", "failed", "abandoned")
PENDING, COMPLETE, FAILED, ABANDONED = range(4)
#: The lies ``ask`` can give pending points (``ask`` describes them).
LIES = ("mean", "best", "worst")


class Trials(NamedTuple):
    """The study's trial table (host numpy arrays; trial ``i`` is row ``i``).

    Attributes:
      x: ``(T, d)`` float64, the point of each trial: as asked, or as told for a trial created
        by telling a point that was not asked.
      status: ``(T,)`` int8, an index into ``STATUSES``.
      row: ``(T,)`` int64, the trial's row in ``observations`` (complete and failed trials;
        ``-1`` for pending and abandoned ones).
    """

    x: np.ndarray
    status: np.ndarray
    row: np.ndarray


class Trial(NamedTuple):
    """One trial as ``trials`` and ``pending`` list it.

    Attributes:
      id: the trial id (``tell``, ``fail``, ``abandon`` take it).
      status: ``"pending"``, ``"complete"``, ``"failed"`` or ``"abandoned"``.
      x: ``(d,)`` float64, the point asked (``Trials.x``).
      y: the observation told (NaN or inf for a failed trial), ``None`` if none was.
    """

    id: int
    status: str
    x: np.ndarray
    y: float | None


class Study(NamedTuple):
    """An ask/tell study: the algorithm state plus the driver's bookkeeping (all arrays).

    Attributes:
      state: the algorithm's state.
      key: the key the next ``ask`` splits.
      design: ``(n_init, d)`` the initial design, asked first.
      asked: how many design points have been asked (int32 scalar).
      told_x: ``(n, d)`` float64 numpy, every point told, as told (``tell``, on precision).
      told_y: ``(n, 1 + K)`` float64 numpy, the observations (then the ``K`` constraint values)
        told, NaN or inf for a failed evaluation.
      algorithm: ``{"name", "config", "reproducible"}``, the record of the algorithm the study was
        started with (``record``; ``None`` for a study built by hand); ``save`` writes it.
      trials: the ``Trials`` table (``None``: every told row is a complete or failed trial and
        none is pending, as for a study built by hand).
      space: the ``ntkbo.space.Space`` the study was started on (``ntkbo.space.start``), or
        ``None``; ``save`` writes it.
      suggest_info: the ``info`` of the last ``algo.suggest`` an ``ask`` ran (the algorithm's
        suggest-info NamedTuple; ``None`` before the first, and while the initial design is
        asked). Not saved.
      update_info: the ``info`` of the last ``algo.update`` a ``tell`` ran (e.g. NeuralBO's
        training losses; ``None`` before the first ``tell``). Not saved.
    """

    state: Any
    key: jax.Array
    design: jax.Array
    asked: jax.Array
    told_x: Any
    told_y: Any
    algorithm: Any = None
    trials: Any = None
    space: Any = None
    suggest_info: Any = None
    update_info: Any = None


def record(algo: Algorithm) -> dict:
    """``{"name", "config", "reproducible"}``: what a save file records of ``algo`` (its
    ``Config.to_json()``; ``None`` fields for an algorithm without a record)."""
    config = getattr(algo, "config", None)
    return {"name": getattr(algo, "name", None),
            "config": None if config is None else config.to_json(),
            "reproducible": None if config is None else bool(config.reproducible)}


@functools.lru_cache(maxsize=1)
def _provenance() -> dict:
    """Versions, device kind and git revision (computed once per process)."""
    return {"versions": versions(), "device_kind": jax.devices()[0].device_kind,
            "git_revision": git_revision()}


#: The jitted ``suggest``/``update`` pairs this process keeps, by algorithm (``ntkbo.cache.Kept``:
#: the least recently used pair beyond ``KEEP_PROGRAMS`` is released, its executables freed).
_PAIRS = cache.Kept(release=lambda pair: [call.jitted.clear_cache() for call in pair])


def _jitted(algo: Algorithm):
    """``algo.suggest`` and ``algo.update`` jitted, compiled with the persistent cache
    (``ntkbo.cache``) and a notice while a long first call compiles (``ntkbo.compiling``), run
    with ``ntkbo.lapack_threads.during_calls``; the same pair for the same algorithm while it
    is kept (``_PAIRS``)."""
    name = algo.name or "algorithm"

    def announced(fn, what):
        jitted = jax.jit(fn)

        def call(*args):
            with cache.scope(), lapack_threads.during_calls(), compiling.notice(
                    f"{name}.{what}"):
                return jax.block_until_ready(jitted(*args))

        call.jitted = jitted  # type: ignore[attr-defined]  # what _PAIRS releases
        return call

    return _PAIRS.get(algo, lambda: (announced(algo.suggest, "suggest"),
                                     announced(algo.update, "update")))


def _buffers(state) -> list[D.Data]:
    found = [n for n in jax.tree_util.tree_leaves(state, is_leaf=lambda n: isinstance(n, D.Data))
             if isinstance(n, D.Data)]
    if not found:
        raise ValueError("the algorithm's state holds no ntkbo.data.Data buffer")
    return found


def _buffer(state) -> D.Data:
    return _buffers(state)[0]


def _state_bounds(state) -> np.ndarray:
    """The box ``(2, d)`` an algorithm's state was initialised with."""
    for node in (state, getattr(state, "objective", None)):
        if node is not None and hasattr(node, "bounds"):
            return np.asarray(node.bounds)
    raise ValueError("the algorithm's state has no bounds field")


def start(algo: Algorithm, bounds, key, *, n_init: int | None = None,
          capacity: int = MIN_CAPACITY) -> Study:
    """A new study on the box ``bounds`` ``(2, d)``; ``n_init`` points of the initial design are
    asked first, as ``ntkbo.minimize`` draws them (default ``algo.n_init``, its preset's design,
    else ``ntkbo.loop.design_size(d)`` = ``max(2, d + 1)``; sampler ``algo.design_sampler``,
    else scrambled Sobol). The study does not know the objective's noise, so an algorithm's
    duplicate guard left at ``"auto"`` runs as for a noise-free objective (on); for a noisy
    objective build it with ``search={"avoid_observed": False}``."""
    bounds = check_bounds(bounds)
    if n_init is None:
        n_init = getattr(algo, "n_init", None)
        n_init = design_size(bounds.shape[1]) if n_init is None else n_init
    check_int("n_init", n_init, 0)
    check_int("capacity", capacity, 1)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)  # raw uint32 keys serialise with msgpack
    k_design, _, k_algo, k_loop = jax.random.split(key, 4)  # the same split as ntkbo.minimize
    design = (initial_design(k_design, bounds, n_init, getattr(algo, "design_sampler", None))
              if n_init else jnp.zeros((0, bounds.shape[1])))
    state = algo.init(k_algo, bounds, D.next_capacity(max(capacity, n_init), MIN_CAPACITY))
    k = int(getattr(algo, "n_constraints", 0))
    d = bounds.shape[1]
    return Study(state, k_loop, design, jnp.zeros((), jnp.int32),
                 np.zeros((0, d)), np.zeros((0, 1 + k)), record(algo), _empty_trials(d))


def _empty_trials(d: int) -> Trials:
    return Trials(np.zeros((0, d)), np.zeros((0,), np.int8), np.zeros((0,), np.int64))


def _table(study: Study) -> Trials:
    """The study's ``Trials`` (for ``trials=None``: one complete or failed trial per told row)."""
    if study.trials is not None:
        return study.trials
    n = np.shape(study.told_x)[0]
    bad = ~np.all(np.isfinite(study.told_y), axis=1)
    return Trials(np.array(study.told_x, np.float64).reshape(n, -1),
                  np.where(bad, FAILED, COMPLETE).astype(np.int8), np.arange(n, dtype=np.int64))


def observations(study: Study) -> tuple[np.ndarray, np.ndarray]:
    """The told points and observations ``(n, d)``, ``(n,)``, float64 numpy arrays exactly as told;
    a failed evaluation's observation is NaN or inf (``failed``)."""
    return np.array(study.told_x), np.array(study.told_y[:, 0])


def failed(study: Study) -> np.ndarray:
    """``(n,)`` bool: the told evaluations that failed (a NaN or infinite observation or
    constraint value). ``failed(study).sum()`` counts them."""
    return ~np.all(np.isfinite(study.told_y), axis=1)


def trials(study: Study) -> list[Trial]:
    """Every trial of the study, by id (``Trial``: id, status, point, observation)."""
    t = _table(study)
    return [Trial(i, STATUSES[int(s)], np.array(t.x[i]),
                  None if r < 0 else float(study.told_y[r, 0]))
            for i, (s, r) in enumerate(zip(t.status, t.row))]


def pending(study: Study) -> list[Trial]:
    """The pending trials (asked, not yet told, failed or abandoned), by id."""
    return [t for t in trials(study) if t.status == "pending"]


def best(study: Study) -> tuple[np.ndarray, float] | None:
    """``(x, y)`` of the smallest observation among the evaluations that did not fail and whose
    constraint values (if any) are all ``<= 0``; ``None`` if there is none."""
    i = _best_row(study)
    if i is None:
        return None
    return np.array(study.told_x[i]), float(study.told_y[i, 0])


def _best_row(study: Study) -> int | None:
    ok = ~failed(study) & np.all(study.told_y[:, 1:] <= 0, axis=1)
    if not ok.any():
        return None
    return int(np.flatnonzero(ok)[np.argmin(study.told_y[ok, 0])])


class Recommendation(NamedTuple):
    """What ``recommend`` returns (points ``(d,)`` float64 as told, values in ``y``'s units).

    Attributes:
      trial, x, y: the trial, point and value of the best observation (``best``).
      model_trial, model_x, model_mean: among the successful observed points, the one whose
        posterior mean is smallest, and that mean (``None`` for a model without one).
    """

    trial: int
    x: np.ndarray
    y: float
    model_trial: int | None
    model_x: np.ndarray | None
    model_mean: float | None


def _kernel_model(algo: Algorithm, state):
    """The ``ntkbo.algorithms.gp_bo`` kernel model ``algo.suggest`` closes over, if ``algo`` is
    an unconstrained kernel model (``gp``, ``ntk_gp``: a state with ``params``, ``factor``,
    ``data`` and ``bounds``); otherwise ``None``."""
    from ntkbo.algorithms.gp_bo import _Model

    if getattr(algo, "n_constraints", 0) or not all(
            hasattr(state, f) for f in ("params", "factor", "data", "bounds")):
        return None
    fn = algo.suggest
    for _ in range(2):  # suggest, or the raw suggest it closes over (``gp_bo.build_suggest``)
        cells: dict[str, Any]  # the closure's cells by name
        cells = dict(zip(getattr(getattr(fn, "__code__", None), "co_freevars", ()),
                         getattr(fn, "__closure__", None) or ()))
        try:
            model = cells["model"].cell_contents
        except (KeyError, ValueError):
            try:
                fn = cells["raw_suggest"].cell_contents
            except (KeyError, ValueError):
                return None
            continue
        return model if isinstance(model, _Model) else None
    return None


def recommend(algo: Algorithm, study: Study) -> Recommendation | None:
    """The point to report at the end of a study; ``None`` before any successful evaluation.

    Always the best observation (``best``: the smallest successful, feasible value). On a noisy
    problem that is biased low (the luckiest draw wins), so for the GP and NTK-GP kernel models
    of ``ntkbo.algorithms`` (``gp``, ``ntk_gp``, any acquisition but ``"cei"``) it also gives the
    observed point whose posterior mean ``mu(x_i) = m + k(x_i, X) (K + lam I)^-1 (y - m)`` is
    smallest (``m`` the model's prior mean, ``gp_bo.fitted_mean``), and that mean, mapped back
    to ``y``'s units (``ntkbo.gp.condition`` on the state's factor, ``ntkbo.gp.mean`` with the
    model's kernel under the state's hyper-parameters). Every other algorithm (network models,
    random search, constrained ones) has no posterior mean here:
    ``model_trial``, ``model_x`` and ``model_mean`` are ``None``."""
    i = _best_row(study)
    if i is None:
        return None
    row_trial = np.full(study.told_x.shape[0], -1, np.int64)
    t = _table(study)
    row_trial[t.row[t.row >= 0]] = np.flatnonzero(t.row >= 0)
    out = Recommendation(int(row_trial[i]), np.array(study.told_x[i]),
                         float(study.told_y[i, 0]), None, None, None)
    state = study.state
    model = _kernel_model(algo, state)
    if model is None or int(state.data.count) != study.told_x.shape[0]:
        return out
    from ntkbo import gp as G
    from ntkbo.algorithms.gp_bo import fitted_mean
    from ntkbo.algorithms.observations import standardized_data

    data, mean, std = standardized_data(state.data, state.bounds)
    post = G.condition(state.factor, data, prior_mean=fitted_mean(model, state.factor, data))
    mu = G.mean(lambda a, b: model.kernel(state.params, a, b), post, data.x)
    mu = np.asarray(mean + std * mu, np.float64)[:study.told_x.shape[0]]
    ok = np.asarray(D.mask(data))[:study.told_x.shape[0]] & ~failed(study)
    j = int(np.flatnonzero(ok)[np.argmin(mu[ok])])
    return out._replace(model_trial=int(row_trial[j]), model_x=np.array(study.told_x[j]),
                        model_mean=float(mu[j]))


def constraint_observations(algo: Algorithm, study: Study) -> np.ndarray:
    """The told constraint values ``(n, K)`` of a constrained algorithm (float64, as told)."""
    k = int(getattr(algo, "n_constraints", 0))
    if study.told_y.shape[1] != 1 + k:
        raise ValueError(f"the study holds {study.told_y.shape[1] - 1} constraint values per "
                         f"point; n_constraints={k}")
    return np.array(study.told_y[:, 1:])


def _unit(points: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``points`` ``(..., d)`` in the unit box of ``bounds`` (``ntkbo.optimize.near_observed``'s
    scaling: a zero-width coordinate keeps width 1)."""
    lo, hi = bounds[0].astype(np.float64), bounds[1].astype(np.float64)
    return (np.asarray(points, np.float64) - lo) / np.where(hi > lo, hi - lo, 1.0)


def _chebyshev(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(n, m)`` Chebyshev distances between the rows of ``a`` ``(n, d)`` and ``b`` ``(m, d)``."""
    return np.max(np.abs(a[:, None, :] - b[None, :, :]), axis=-1, initial=0.0)


def _lies(study: Study, lie: str) -> np.ndarray:
    """``(1 + K,)`` the fantasy observation of a pending point (``ask``): the objective's
    mean, smallest or largest successful value, the constraints' means (0 with none)."""
    if lie not in LIES:
        raise ValueError(f"lie must be one of {LIES}, got {lie!r}")
    told = np.asarray(study.told_y, np.float64)
    out = np.zeros(told.shape[1])
    ok = np.all(np.isfinite(told), axis=1)
    if ok.any():
        out[:] = told[ok].mean(axis=0)
        if lie != "mean":
            out[0] = told[ok, 0].min() if lie == "best" else told[ok, 0].max()
    return out


def _conditioned(algo: Algorithm, study: Study, points: np.ndarray, lie: str):
    """A copy of the study's state told ``points`` ``(P, d)`` with the lie, one at a time."""
    state = study.state
    if not points.shape[0]:
        return state
    buf = _buffer(state)
    dtype = np.dtype(buf.x.dtype)
    need = int(buf.count) + points.shape[0]
    if need > buf.capacity:
        state = grow_state(state, D.next_capacity(need, MIN_CAPACITY))
    bounds = _state_bounds(state).astype(dtype)
    xs = np.clip(points.astype(dtype), bounds[0], bounds[1])
    told = _lies(study, lie).astype(dtype)
    k = int(getattr(algo, "n_constraints", 0))
    y = jnp.asarray(told[None, :] if k else told[:1])
    _, update = _jitted(algo)
    for row in xs:
        state, _ = update(state, jnp.asarray(row[None, :]), y)
    return state


def _away_from(key, x: np.ndarray, avoid: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``x`` ``(q, d)`` with each row within ``MIN_DISTANCE`` (unit box, Chebyshev) of a row of
    ``avoid`` replaced by a uniform random point of the box that is not (``ask``)."""
    if not avoid.shape[0]:
        return x
    close = np.any(_chebyshev(_unit(x, bounds), _unit(avoid, bounds)) <= MIN_DISTANCE, axis=1)
    if not close.any():
        return x
    warnings.warn(
        f"the algorithm suggested {int(close.sum())} point(s) within {MIN_DISTANCE} of the box's "
        "width of a pending trial's point: replaced by uniform random points of the box",
        UserWarning, stacklevel=3)
    x = np.array(x)
    lo, hi = bounds[0].astype(np.float64), bounds[1].astype(np.float64)
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key) if jnp.issubdtype(
        key.dtype, jax.dtypes.prng_key) else key, np.uint32))
    for i in np.flatnonzero(close):
        while True:
            z = (lo + rng.uniform(size=lo.shape) * (hi - lo)).astype(x.dtype)
            if not np.any(_chebyshev(_unit(z[None], bounds), _unit(avoid, bounds))
                          <= MIN_DISTANCE):
                break
        x[i] = z
    return x


def _suggest(algo: Algorithm, study: Study, lie: str) -> tuple[np.ndarray, Study]:
    """The next rows ``(q, d)`` (a design point, or ``algo.suggest`` on the state conditioned on
    the pending trials) and the study with its key or design counter advanced."""
    if lie not in LIES:
        raise ValueError(f"lie must be one of {LIES}, got {lie!r}")
    asked = int(study.asked)
    if asked < study.design.shape[0]:
        x = study.design[asked:asked + 1]
        return np.asarray(x), study._replace(asked=study.asked + 1)
    suggest, _ = _jitted(algo)
    key, k_suggest, k_spare = jax.random.split(study.key, 3)
    t = _table(study)
    pend = t.x[t.status == PENDING]
    x, info = suggest(k_suggest, _conditioned(algo, study, pend, lie))
    x = _away_from(k_spare, np.asarray(x), pend, _state_bounds(study.state))
    return x, study._replace(key=key, suggest_info=info)


def _add_pending(study: Study, x: np.ndarray) -> tuple[np.ndarray, Study]:
    """Registers the rows of ``x`` ``(q, d)`` as pending trials: their ids ``(q,)``, the study."""
    t = _table(study)
    ids = np.arange(t.x.shape[0], t.x.shape[0] + x.shape[0])
    t = Trials(np.concatenate([t.x, np.asarray(x, np.float64)]),
               np.concatenate([t.status, np.full(x.shape[0], PENDING, np.int8)]),
               np.concatenate([t.row, np.full(x.shape[0], -1, np.int64)]))
    return ids, study._replace(trials=t)


def ask(algo: Algorithm, study: Study, *, lie: str = "mean") -> tuple[np.ndarray, Study]:
    """The next points ``(q, d)`` to evaluate and the study with its key advanced; each row is a
    new pending trial (ids: the last ``q`` of ``pending(study)``). While trials are pending the
    suggestion is conditioned on them with the ``lie``.

    An ``ask`` while trials are pending conditions on them (*constant liar*, Ginsbourger et al.
    2010): each pending point is added to a copy of the algorithm's state with a fantasy
    observation, the lie (``lie="mean"``, the default: the mean of the successful observations;
    ``"best"``: the smallest; ``"worst"``: the largest; constraint values, if any, always lie at
    their mean; 0 while nothing succeeded), by ``algo.update`` one point at a time, and
    ``algo.suggest`` runs on that copy. The study's own state never sees a lie. What that amounts to
    depends on the model:

    - GP and NTK-GP models (``gp``, ``ntk_gp``): the pending point becomes a training point, so the
      posterior variance there collapses to the noise level and the acquisition drops around it;
      the posterior mean is pulled to the lie. With the posterior mean as the lie this would be
      exactly the *kriging believer* rule of ``gp(q > 1)``; the mean of the observations is a
      constant lie instead (CL-mean), mildly pessimistic near a predicted minimum, which pushes the
      next point further away. ``gp`` with ``fit=True`` also refits its hyper-parameters on the copy
      when its refit schedule says so (the kriging believer keeps them fixed).
    - Network models (``neural_bo``, ``neural_ucb``, ...): the copy's update retrains the network on
      the lies too (once per pending point), and the uncertainty terms built from the observed
      points (gradient features, the NTK Gram matrix) shrink at the pending points.
    - ``random_search`` ignores its state: pending points change nothing.

    The model-based algorithms of ``ntkbo.algorithms`` never suggest an observed point (within
    ``ntkbo.optimize.MIN_DISTANCE`` of the box's width, ``ntkbo.optimize.near_observed``), so they
    avoid the pending ones on the copy. ``ask`` guarantees it for any algorithm: a suggested row
    within that distance of a pending point is replaced by a uniform random point of the box that is
    not, with a ``UserWarning``. The conditioning costs one ``algo.update`` per pending point per
    ask (compiled once: the same ``(1, d)`` update as ``tell``'s of one point). ``tell`` may take a
    trial id (its point is the one asked) or, as before, points: a point told by value closes the
    pending trial asked within ``MIN_DISTANCE`` of the box's width of it (the nearest, the lowest id
    on ties), and a point asked nowhere is recorded as a new, already told trial. A trial asked and
    never told stays pending, and conditions every later ask, until it is told, failed or abandoned.
    """
    x, study = _suggest(algo, study, lie)
    _, study = _add_pending(study, x)
    return x, study


def ask_trial(algo: Algorithm, study: Study, *, lie: str = "mean"
              ) -> tuple[int, np.ndarray, Study]:
    """``(trial_id, x, study)``: one new pending trial, its point ``x`` ``(d,)`` and the study.
    Conditioned on the pending trials as ``ask``; an algorithm that suggests ``q > 1`` points at
    once gives its first (the next ``ask_trial`` conditions on it instead)."""
    x, study = _suggest(algo, study, lie)
    ids, study = _add_pending(study, x[:1])
    return int(ids[0]), x[0], study


def _check_trial(study: Study, trial, action: str) -> int:
    """The id ``trial`` as an int, if it names a pending trial; otherwise ``ValueError``."""
    t = _table(study)
    tid = int(trial.id if isinstance(trial, Trial) else trial)
    if not 0 <= tid < t.x.shape[0]:
        raise ValueError(f"trial {tid!r}: no such trial in this study (ids 0 to "
                         f"{t.x.shape[0] - 1}); nothing was recorded")
    status = int(t.status[tid])
    if status != PENDING:
        what = "was abandoned" if status == ABANDONED else f"was already told ({STATUSES[status]})"
        raise ValueError(f"trial {tid}: cannot {action} it, it {what}; nothing was recorded")
    return tid


def _is_trial_id(trial) -> bool:
    return isinstance(trial, Trial) or (isinstance(trial, (int, np.integer))
                                        and not isinstance(trial, (bool, np.bool_)))


def _check_points_or_id(trial) -> None:
    """``tell``'s ``trial`` that is not a trial id must be points (an array ``(q, d)`` or
    ``(d,)``): ``ValueError`` for a single value (``6.0``, ``True``, ``"6"``), which is neither."""
    if np.ndim(trial) == 0:  # a float, a bool, a string, a 0-d array: not an id, not points
        raise ValueError(f"trial must be a trial id (an int from ask_trial) or a Trial, or points "
                         f"x of shape (q, d); got {type(trial).__name__} {trial!r}; nothing was "
                         "recorded")


#: Finite values must stay finite in the state's dtype (the rule of every path that tells).
_fits_dtype = check_fits_dtype


def tell(algo: Algorithm, study: Study, trial, y, c=None) -> Study:
    """Tells observations; raises ``ValueError`` naming the argument on bad input and then leaves
    ``study`` unchanged. NaN or infinite ``y`` (or ``c``) values are failed evaluations.

    ``trial`` is either a trial id (an ``int`` from ``ask_trial``, or a ``Trial``): then ``y`` is
    its one observation and ``c`` its ``(K,)`` constraint values, at the point asked; or points
    ``x`` ``(q, d)`` (or ``(d,)``) with ``y`` ``(q,)`` and ``c`` ``(q, K)``: each row closes the
    pending trial asked at it (``ask`` says which) or is a new told trial.
    ``c`` is required exactly when ``algo.n_constraints = K > 0``.

    **Precision**: the study keeps the exact record of what was told, in float64 (``observations``,
    ``constraint_observations``; ``save`` writes it), while the algorithm's buffers hold the values
    in the state's dtype (float32 unless ``jax_enable_x64`` is on). Validation happens in that
    dtype: a finite value that overflows it (``1e39`` in float32) is refused with an error instead
    of becoming ``inf``; a point that is inside the box once rounded to the dtype is accepted (and
    clipped to the box); observations that the dtype cannot tell apart (``1e8 + 0.4`` and
    ``1e8 + 3`` in float32) stay distinct in the record, though the model sees them rounded (enable
    ``jax_enable_x64`` to model them apart).
    """
    if not _is_trial_id(trial):
        _check_points_or_id(trial)
        return _tell(algo, study, trial, y, c, None)
    tid = _check_trial(study, trial, "tell")
    y = np.asarray(real_array("y", y), dtype=np.float64)
    if y.size != 1:
        raise ValueError(f"y must be one value for trial {tid}, got shape {y.shape}; nothing "
                         "was recorded")
    if c is not None:
        k = int(getattr(algo, "n_constraints", 0))
        c = np.asarray(real_array("c", c), dtype=np.float64)
        if k and c.size != k:
            raise ValueError(f"c must hold the {k} constraint values of trial {tid} (shape "
                             f"({k},)), got shape {c.shape}; nothing was recorded")
        c = c.reshape(1, -1)
    return _tell(algo, study, _table(study).x[tid][None], y.reshape(1), c, [tid])


def fail(algo: Algorithm, study: Study, trial) -> Study:
    """Records the pending ``trial`` as failed: ``tell`` of a NaN observation (and NaN
    constraint values), so it is in ``observations``, marked by ``failed``, and no model fits it."""
    tid = _check_trial(study, trial, "fail")
    k = int(getattr(algo, "n_constraints", 0))
    return tell(algo, study, tid, np.nan, np.full(k, np.nan) if k else None)


def abandon(study: Study, trial) -> Study:
    """Withdraws the pending ``trial`` (never evaluated): it leaves ``pending`` and no longer
    conditions ``ask``; nothing is recorded in ``observations``. It cannot be told afterwards."""
    tid = _check_trial(study, trial, "abandon")
    t = _table(study)
    status = t.status.copy()
    status[tid] = ABANDONED
    return study._replace(trials=t._replace(status=status))


def _match_pending(study: Study, x: np.ndarray) -> list[int | None]:
    """For each row of ``x`` ``(q, d)``, the pending trial it closes (``ask``: the nearest within
    ``MIN_DISTANCE``, lowest id on ties, each trial once) or None."""
    t = _table(study)
    ids = np.flatnonzero(t.status == PENDING)
    out: list[int | None] = []
    if not ids.size:
        return [None] * x.shape[0]
    bounds = _state_bounds(study.state)
    dist = _chebyshev(_unit(x, bounds), _unit(t.x[ids], bounds))
    free = np.ones(ids.size, bool)
    for row in dist:
        cand = np.flatnonzero(free & (row <= MIN_DISTANCE))
        if not cand.size:
            out.append(None)
            continue
        j = cand[np.argmin(row[cand])]  # argmin takes the first (lowest id) on ties
        free[j] = False
        out.append(int(ids[j]))
    return out


def _tell(algo: Algorithm, study: Study, x, y, c, ids: list[int | None] | None) -> Study:
    """``tell`` of points ``x`` ``(q, d)``: validates, updates the state and the record; ``ids``
    gives each row's pending trial (``None`` entries: a new trial; ``None``: ``_match_pending``)."""
    buf = _buffer(study.state)
    d = buf.dim
    dtype = np.dtype(buf.x.dtype)
    x = np.asarray(real_array("x", x), dtype=np.float64)
    y = np.asarray(real_array("y", y), dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    y = y.reshape(-1) if y.ndim <= 1 else y
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"x must have shape (q, {d}), got {x.shape}")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x, got {y.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or inf")
    k = int(getattr(algo, "n_constraints", 0))
    if k == 0 and c is not None:
        raise ValueError("c was given but the algorithm does not model constraints "
                         "(n_constraints=0); use a constrained algorithm such as neural_cbo")
    if k:
        if c is None:
            raise ValueError(f"c (the {k} constraint values at each point, shape ({x.shape[0]}, "
                             f"{k})) is required: the algorithm has n_constraints={k}")
        c = np.asarray(real_array("c", c), dtype=np.float64)
        if c.ndim == 1 and x.shape[0] == 1:
            c = c[None, :]
        if c.shape != (x.shape[0], k):
            raise ValueError(f"c must have shape ({x.shape[0]}, {k}) to match x and "
                             f"n_constraints={k}, got {c.shape}; nothing was recorded")
        _fits_dtype("c", c, dtype)
    _fits_dtype("y", y, dtype)
    told = y[:, None] if c is None else np.concatenate([y[:, None], c], axis=1)
    # The bounds test in the state's dtype: a point that rounds into the box is inside.
    bounds = _state_bounds(study.state).astype(dtype)
    with np.errstate(over="ignore"):
        xs = x.astype(dtype)
    lo, hi = bounds[0].astype(np.float64), bounds[1].astype(np.float64)
    tol = 1e-9 * (hi - lo)
    outside = np.any((xs < lo - tol) | (xs > hi + tol), axis=1)
    if np.any(outside):
        raise ValueError(
            f"x rows {np.flatnonzero(outside).tolist()} lie outside the bounds "
            f"{bounds.tolist()}; nothing was recorded")
    xs = np.clip(xs, bounds[0], bounds[1])
    if ids is None:
        ids = _match_pending(study, x)
    state = study.state
    need = int(buf.count) + x.shape[0]
    if need > buf.capacity:
        state = grow_state(state, D.next_capacity(need, MIN_CAPACITY))
    _, update = _jitted(algo)
    with np.errstate(over="ignore"):
        ys = told.astype(dtype)
    state, info = update(state, jnp.asarray(xs), jnp.asarray(ys if k else ys[:, 0]))
    n = study.told_x.shape[0]
    return study._replace(state=state, update_info=info, told_x=np.concatenate([study.told_x, x]),
                          told_y=np.concatenate([study.told_y, told]),
                          trials=_record_told(_table(study), x, told, ids, n))


def _record_told(t: Trials, x: np.ndarray, told: np.ndarray, ids: list[int | None],
                 n: int) -> Trials:
    """The table after told rows ``n, n + 1, ...`` (points ``x``, values ``told``) closed the
    trials ``ids`` (``None``: a new trial at the point told)."""
    done = np.where(np.all(np.isfinite(told), axis=1), COMPLETE, FAILED).astype(np.int8)
    tx, status, row = t.x.copy(), t.status.copy(), t.row.copy()
    new = [i for i, tid in enumerate(ids) if tid is None]
    for i, tid in enumerate(ids):
        if tid is not None:
            status[tid], row[tid] = done[i], n + i
    return Trials(np.concatenate([tx, x[new]]), np.concatenate([status, done[new]]),
                  np.concatenate([row, n + np.asarray(new, np.int64)]))


def save(path: str | os.PathLike, study: Study) -> None:
    """Writes the study (state, key, design, the float64 record, the trials, pending ones
    included, the bounds, the algorithm's name and config, the dtype, provenance and the study's
    ``Space``) with ``flax.serialization`` msgpack, with its SHA-256 checksum (``FORMAT_VERSION``),
    atomically (``ntkbo.files.atomic_write``: a save killed at any point leaves the previous file
    whole; concurrent saves to one path each write a whole file, the last one stays). A space
    whose categorical choices JSON cannot hold (``ntkbo.space.Space.to_json``) is not written,
    with a ``UserWarning``: pass it to ``ntkbo.space.load``."""
    core = study._replace(told_x=None, told_y=None, algorithm=None, trials=None, space=None,
                          suggest_info=None, update_info=None)
    table = _table(study)
    payload = {
        "format": FORMAT_VERSION,
        # JSON text: the config's values are nested lists and dicts of any JSON type
        "algorithm": json.dumps(study.algorithm),
        "dtype": str(np.dtype(_buffer(study.state).x.dtype)),
        "provenance": json.dumps(_provenance()),
        "capacity": _buffer(study.state).capacity,
        "n_init": int(study.design.shape[0]),
        "bounds": np.asarray(_state_bounds(study.state), np.float64),
        "told_x": np.asarray(study.told_x, np.float64),
        "told_y": np.asarray(study.told_y, np.float64),
        "study": serialization.to_state_dict(jax.tree_util.tree_map(np.asarray, core)),
        "trials": {"x": np.asarray(table.x, np.float64),
                   "status": np.asarray(table.status, np.int8),
                   "row": np.asarray(table.row, np.int64)},
    }
    if study.space is not None:
        try:
            payload["space"] = json.dumps(study.space.to_json())
        except ValueError as err:
            warnings.warn(f"{os.fspath(path)}: the study's space is not saved ({err}); pass it to "
                          "ntkbo.space.load", UserWarning, stacklevel=2)
    _write_payload(path, payload)


def _write_payload(path, payload: dict) -> None:
    """Writes the record ``payload`` to ``path`` in its checked envelope (``FORMAT_VERSION``),
    atomically."""
    body = serialization.msgpack_serialize(payload)
    envelope = {"format": FORMAT_VERSION, "checksum": files.sha256(body), "payload": body}
    files.atomic_write(path, serialization.msgpack_serialize(envelope))


def _state_mismatch(core: Study, saved: dict) -> str | None:
    """Why the saved study dict does not fit ``core``'s structure and shapes (``None`` if it does)."""
    try:
        restored = serialization.from_state_dict(core, saved)
    except (ValueError, KeyError, TypeError) as err:
        return f"{type(err).__name__}: {str(err)[:200]}"
    for a, b in zip(jax.tree_util.tree_leaves(core), jax.tree_util.tree_leaves(restored)):
        if np.shape(a) != np.shape(b):
            return f"array of shape {np.shape(b)} where {np.shape(a)} was expected"
    return None


def _replay(algo: Algorithm, bounds, payload: dict, template: Study) -> Study:
    """A study of ``algo`` with the saved key, design and asked count, told the saved float64
    record in one batch (``load`` of a state saved by another version)."""
    saved = payload["study"]
    study = template._replace(key=jnp.asarray(saved["key"], template.key.dtype),
                              design=jnp.asarray(saved["design"], template.design.dtype),
                              asked=jnp.asarray(saved["asked"], jnp.int32))
    d = bounds.shape[1]
    x = np.asarray(payload["told_x"], np.float64).reshape(-1, d)
    if not x.shape[0]:
        return study
    k = int(getattr(algo, "n_constraints", 0))
    y = np.asarray(payload["told_y"], np.float64).reshape(x.shape[0], 1 + k)
    return tell(algo, study, x, y[:, 0], y[:, 1:] if k else None)


def load(path: str | os.PathLike, algo: Algorithm, bounds) -> Study:
    """Reads a study saved by ``save`` for the same algorithm and bounds. ``ValueError`` naming
    every field that differs (both values): the algorithm's name or an option of its config
    (``ntkbo.algorithms.record_differences``), the bounds (compared in the state's dtype), the
    dtype, or a saved state that does not fit ``algo`` and no record to rebuild it from. A state
    of this algorithm whose layout changed between ntkbo versions (the file's record matches)
    is rebuilt by telling the float64 record again, with a ``UserWarning``: nothing observed is
    lost, the next suggestions may differ. A file of format 1, 2 (no algorithm record) or 3 (the
    options by their flat names) is refused with a ``ValueError`` saying so.

    The file's checksum is verified first: a truncated, damaged or altered file (a checksum that
    does not match, a record that cannot be decoded or lacks a field) is refused with a
    ``ValueError`` naming the file; nothing is loaded. A format-4 file (saved before files
    carried a checksum) loads with a ``UserWarning`` saying it could not be checked.

    **Save files** (format 4) record the algorithm's ``name`` and resolved ``config``
    (``ntkbo.base``), the bounds, the dtype and the versions, device and git revision that wrote
    them, the trials (pending ones included: a loaded study tells them by id) and the study's
    ``ntkbo.space.Space``, if it has one. ``load`` refuses a different algorithm, a different option
    or different bounds with a ``ValueError`` naming each field that differs and both values
    (``gp_ucb`` and ``gp(acquisition="ucb")`` are the same algorithm).

    A study started on a search space (``ntkbo.space.start``) is resumed with
    ``ntkbo.space.load(path, algo)``, which restores the space; passing the ``Space`` (or no
    bounds, ``None``) here is refused with a ``ValueError`` that says so. Its unit box
    (``space.bounds``) is accepted, and the saved space comes back with the study.
    """
    if isinstance(bounds, Space) or bounds is None:
        spaced = _saved_space(path, _read_payload(path)) is not None
        given = "a Space" if isinstance(bounds, Space) else "None"
        raise ValueError(
            f"bounds: expected the (2, d) box the study was started on, got {given}"
            + (f"; {path} is a study on a search space: resume it with "
               "ntkbo.space.load(path, algo), which restores its space" if spaced or
               isinstance(bounds, Space) else ""))
    bounds = check_bounds(bounds)
    payload = _read_payload(path)
    fmt = payload.get("format")
    if fmt in (1, 2):
        raise ValueError(
            f"{path}: a study file of format {fmt}, which records no algorithm (its name and "
            f"options cannot be checked against {getattr(algo, 'name', None)!r})"
            + (" nor the float64 record and the bounds" if fmt == 1 else "")
            + f"; this ntkbo reads formats {UNCHECKED_FORMAT} and {FORMAT_VERSION} only. An ntkbo "
            f"from before 2026-11-27 loads it and saves it in a later format")
    if fmt == 3:
        raise ValueError(
            f"{path}: a study file of format 3, which records the algorithm's options by their "
            f"flat names (width, num_steps, ...), before they were grouped into parts "
            f"(network.width, training.num_steps, ...; ntkbo.parts); this ntkbo reads formats "
            f"{UNCHECKED_FORMAT} and {FORMAT_VERSION} only. An ntkbo from before 2026-11-28 "
            "loads it")
    if fmt not in (UNCHECKED_FORMAT, FORMAT_VERSION):
        raise ValueError(f"{path}: not an ntkbo study file of a known format (format {fmt!r}; "
                         f"this ntkbo reads formats {UNCHECKED_FORMAT} and {FORMAT_VERSION})")
    _check_record(path, payload)
    saved = json.loads(payload["algorithm"]) or {}
    from ntkbo.algorithms import record_differences

    differ = record_differences(saved.get("name"), saved.get("config"), algo)
    saved_bounds = np.asarray(payload["bounds"], np.float64)
    given = np.asarray(bounds, np.float64)
    dtype = np.dtype(bounds.dtype)
    if saved_bounds.shape != given.shape or not np.array_equal(saved_bounds.astype(dtype),
                                                               given.astype(dtype)):
        differ.append(f"bounds {given.tolist()} differ from the saved study's bounds "
                      f"{saved_bounds.tolist()}")
    if payload["dtype"] != str(dtype):
        differ.append(f"dtype: saved {payload['dtype']}, now {dtype} (jax_enable_x64 is "
                      f"{'on' if jax.config.read('jax_enable_x64') else 'off'})")
    if differ:
        raise ValueError(f"{path}: the saved study does not match: " + "; ".join(differ))
    template = start(algo, bounds, jax.random.PRNGKey(0), n_init=int(payload["n_init"]),
                     capacity=int(payload["capacity"]))
    core = template._replace(told_x=None, told_y=None, algorithm=None, trials=None, space=None,
                             suggest_info=None, update_info=None)
    saved = dict(payload["study"])
    # kept apart in the payload (trials and space: absent from files written before them)
    saved.update(told_x=None, told_y=None, algorithm=None, trials=None, space=None,
                 suggest_info=None, update_info=None)
    mismatch = _state_mismatch(core, saved)
    if mismatch is not None:
        # The file is of this algorithm but its state layout is another ntkbo version's (e.g. a
        # kernel model's state before it kept its Cholesky factor): nothing observed is lost,
        # the model is rebuilt from the float64 record.
        warnings.warn(
            f"{path}: the saved state does not fit this ntkbo's state of "
            f"{getattr(algo, 'name', None)!r} ({mismatch}; saved by another version): the model "
            f"is rebuilt by telling the saved record again ({len(payload['told_x'])} values); "
            "its next suggestions may differ from the saved run's", UserWarning, stacklevel=2)
        study = _replay(algo, bounds, payload, template)
        return study._replace(trials=_saved_trials(path, payload, study),
                              space=_saved_space(path, payload))
    restored = serialization.from_state_dict(core, saved)
    study = jax.tree_util.tree_map(lambda t, v: jnp.asarray(v, dtype=jnp.asarray(t).dtype),
                                   core, restored)
    told_x = np.asarray(payload["told_x"], np.float64).reshape(-1, given.shape[1])
    k = int(getattr(algo, "n_constraints", 0))
    told_y = np.asarray(payload["told_y"], np.float64).reshape(told_x.shape[0], 1 + k)
    study = study._replace(told_x=told_x, told_y=told_y, algorithm=record(algo), trials=None)
    return study._replace(trials=_saved_trials(path, payload, study),
                          space=_saved_space(path, payload))


def _damaged(path, why: str) -> ValueError:
    return ValueError(f"{path}: the study file is damaged ({why}), so it is not loaded. Restore "
                      "it from a copy: ntkbo.ask_tell.save replaces a file only with a whole new "
                      "one, so a save that was interrupted left the previous file as it was")


def _unpack(path, data: bytes, what: str):
    try:
        return serialization.msgpack_restore(data)
    except Exception as err:  # noqa: BLE001 - msgpack raises many types for bad bytes
        raise _damaged(path, f"{what}cannot be decoded: {type(err).__name__}: {err}") from None


def _read_payload(path) -> dict:
    """The record of the study file ``path``: its checksum verified (``FORMAT_VERSION``), or a
    format-4 file's record with a ``UserWarning`` that it could not be checked; ``ValueError``
    naming the file if it holds something else, cannot be decoded or its checksum does not
    match."""
    with open(path, "rb") as fh:
        top = _unpack(path, fh.read(), "")
    if not isinstance(top, dict):
        raise ValueError(f"{path}: not an ntkbo study file (it holds a {type(top).__name__}, "
                         "not a dict)")
    if "payload" not in top and "checksum" not in top:  # no envelope: an earlier format
        if top.get("format") == UNCHECKED_FORMAT:
            warnings.warn(f"{path}: a study file of format {UNCHECKED_FORMAT}, saved before study "
                          "files carried a checksum: it is loaded without a check for damage. "
                          "Save it again (ntkbo.ask_tell.save) to add one", UserWarning,
                          stacklevel=3)
        return top
    fmt, body, checksum = top.get("format"), top.get("payload"), top.get("checksum")
    if not isinstance(body, bytes) or not isinstance(checksum, str):
        raise _damaged(path, "its payload or checksum is missing or of the wrong type")
    actual = files.sha256(body)
    if actual != checksum:
        raise _damaged(path, f"the checksum of its contents is {actual[:19]}..., the file "
                             f"records {checksum[:19]}...")
    payload = _unpack(path, body, "its payload ")
    if (not isinstance(payload, dict) or payload.get("format") != fmt
            or set(top) != {"format", "checksum", "payload"}):
        raise _damaged(path, f"its envelope (format {fmt!r}, fields {sorted(map(str, top))}) "
                             "does not match its payload")
    if fmt != FORMAT_VERSION:
        return {"format": fmt}  # a later ntkbo's file: ``load`` names its format
    return payload


def _check_record(path, payload: dict) -> None:
    """``ValueError`` naming the file if its record lacks a field ``load`` needs or holds one of
    another type (a damaged file, or one not written by ``save``)."""
    bad = [k for k, t in _REQUIRED.items() if not isinstance(payload.get(k), t)
           or (t is int and isinstance(payload.get(k), bool))]
    if bad:
        raise _damaged(path, "its record lacks or mistypes " + ", ".join(bad))
    for k in ("algorithm", "provenance", "space"):
        if k in payload:
            try:
                json.loads(payload[k])
            except (TypeError, ValueError) as err:
                raise _damaged(path, f"its {k} field is not JSON text ({err})") from None


def _saved_trials(path, payload: dict, study: Study) -> Trials:
    """The trial table of the file (one trial per told row if it has none), checked against the
    study's record."""
    if "trials" not in payload:
        return _table(study._replace(trials=None))
    d = study.told_x.shape[1]
    saved = payload["trials"]
    t = Trials(np.asarray(saved["x"], np.float64).reshape(-1, d),
               np.asarray(saved["status"], np.int8).reshape(-1),
               np.asarray(saved["row"], np.int64).reshape(-1))
    n = study.told_x.shape[0]
    rows = np.sort(t.row[t.row >= 0])
    told = np.isin(t.status, (COMPLETE, FAILED))
    if (t.status.shape != t.row.shape or t.status.shape[0] != t.x.shape[0]
            or not np.array_equal(rows, np.arange(n)) or not np.array_equal(told, t.row >= 0)
            or np.any((t.status < 0) | (t.status >= len(STATUSES)))):
        raise ValueError(f"{path}: the saved trials do not match the saved record of {n} told "
                         "points (a damaged file?)")
    return t


def _saved_space(path, payload: dict):
    """The file's ``ntkbo.space.Space``, or ``None`` if it records none."""
    if "space" not in payload:
        return None
    try:
        return Space.from_json(json.loads(payload["space"]))
    except (ValueError, TypeError, KeyError) as err:
        raise ValueError(f"{path}: the saved space cannot be read ({err})") from None
