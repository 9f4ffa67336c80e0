"""Ask/tell: optimise objectives that live outside JAX (a simulator, a training job, a lab).

The study is an immutable value, threaded by the caller::

    study = ntkbo.ask_tell.start(algo, bounds, key, n_init=5)
    for _ in range(50):
        x, study = ntkbo.ask_tell.ask(algo, study)        # (q, d) numpy array
        y = my_simulator(x)                                # (q,) anything array-like
        study = ntkbo.ask_tell.tell(algo, study, x, y)     # validates, grows capacity, refits
        ntkbo.ask_tell.save("study.msgpack", study)        # resume later with ``load``

Every input is validated here, outside ``jit``: points must have shape ``(q, d)``, be finite and
lie in the bounds, and there must be one observation per point.

**Failed evaluations** (Optuna's failed trials): a NaN or infinite observation (or constraint
value) is accepted and recorded as failed: ``observations`` returns it, ``failed`` marks it, and
no model is fit to it and no best point is chosen among failures (``ntkbo.data``). An evaluation
that crashed can be told as ``y = nan``.

**Precision**: the study keeps the exact record of what was told, in float64 (``observations``,
``constraint_observations``; ``save`` writes it), while the algorithm's buffers hold the values in
the state's dtype (float32 unless ``jax_enable_x64`` is on). Validation happens in that dtype: a
finite value that overflows it (``1e39`` in float32) is refused with an error instead of becoming
``inf``; a point that is inside the box once rounded to the dtype is accepted (and clipped to the
box); observations that the dtype cannot tell apart (``1e8 + 0.4`` and ``1e8 + 3`` in float32) stay
distinct in the record, though the model sees them rounded (enable ``jax_enable_x64`` to model them
apart).

Black-box constraints ``c_k(x) <= 0`` (feasible iff every ``c_k(x) <= 0``): an algorithm with
``algo.n_constraints = K > 0`` (e.g. ``neural_cbo``) needs the constraint values at every point,
``tell(algo, study, x, y, c)`` with ``c`` of shape ``(q, K)``; ``constraint_observations``
reads them back. An algorithm with ``n_constraints = 0`` does not model constraints and refuses
``c`` (rather than silently dropping it). A rejected ``tell`` raises and leaves the study
as it was, so nothing already observed is lost. The buffers grow by doubling when full.

The first ``n_init`` points asked are a scrambled Sobol design drawn from the study's key, exactly the
initial design of ``ntkbo.minimize`` with the same key; after that ``ask`` calls ``algo.suggest``.
Saving and loading with ``flax.serialization`` keeps the key, so a resumed study asks exactly the
points an uninterrupted one would.

**Save files** (format 3) record the algorithm's ``name`` and resolved ``config`` (``ntkbo.base``),
the bounds, the dtype and the versions, device and git revision that wrote them. ``load`` refuses
a different algorithm, a different option or different bounds with a ``ValueError`` naming each
field that differs and both values (``gp_ucb`` and ``gp(acquisition="ucb")`` are the same
algorithm). A file of an earlier format (1 or 2, no algorithm record) still loads, with a
``UserWarning`` saying that its algorithm and options could not be checked; saving it again
writes format 3.
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

from ntkbo import data as D
from ntkbo.base import Algorithm
from ntkbo.loop import MIN_CAPACITY, grow_state, initial_design
from ntkbo.validation import check_bounds, check_int

#: The save format: 2 adds the float64 record and the bounds; 3 the algorithm's name and resolved
#: config, the dtype and the provenance. Files of formats 1 and 2 still load (with a warning).
FORMAT_VERSION = 3


class Study(NamedTuple):
    """An ask/tell study: the algorithm state plus the driver's bookkeeping (all arrays).

    Attributes:
      state: the algorithm's state.
      key: the key the next ``ask`` splits.
      design: ``(n_init, d)`` the initial design, asked first.
      asked: how many design points have been asked (int32 scalar).
      told_x: ``(n, d)`` float64 numpy, every point told, as told (module docstring, "Precision").
      told_y: ``(n, 1 + K)`` float64 numpy, the observations (then the ``K`` constraint values)
        told, NaN or inf for a failed evaluation.
      algorithm: ``{"name", "config", "reproducible"}``, the record of the algorithm the study was
        started with (``record``; ``None`` for a study built by hand); ``save`` writes it.
    """

    state: Any
    key: jax.Array
    design: jax.Array
    asked: jax.Array
    told_x: Any
    told_y: Any
    algorithm: Any = None


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
    from ntkbo.experiments.runner import git_revision, versions

    return {"versions": versions(), "device_kind": jax.devices()[0].device_kind,
            "git_revision": git_revision()}


@functools.lru_cache(maxsize=64)
def _jitted(algo: Algorithm):
    return jax.jit(algo.suggest), jax.jit(algo.update)


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


def start(algo: Algorithm, bounds, key, *, n_init: int = 5, capacity: int = MIN_CAPACITY
          ) -> Study:
    """A new study on the box ``bounds`` ``(2, d)``; ``n_init`` Sobol points are asked first."""
    bounds = check_bounds(bounds)
    check_int("n_init", n_init, 0)
    check_int("capacity", capacity, 1)
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)  # raw uint32 keys serialise with msgpack
    k_design, _, k_algo, k_loop = jax.random.split(key, 4)  # the same split as ntkbo.minimize
    design = initial_design(k_design, bounds, n_init) if n_init else jnp.zeros((0, bounds.shape[1]))
    state = algo.init(k_algo, bounds, D.next_capacity(max(capacity, n_init), MIN_CAPACITY))
    k = int(getattr(algo, "n_constraints", 0))
    return Study(state, k_loop, design, jnp.zeros((), jnp.int32),
                 np.zeros((0, bounds.shape[1])), np.zeros((0, 1 + k)), record(algo))


def observations(study: Study) -> tuple[np.ndarray, np.ndarray]:
    """The told points and observations ``(n, d)``, ``(n,)``, float64 numpy arrays exactly as told;
    a failed evaluation's observation is NaN or inf (``failed``)."""
    return np.array(study.told_x), np.array(study.told_y[:, 0])


def failed(study: Study) -> np.ndarray:
    """``(n,)`` bool: the told evaluations that failed (a NaN or infinite observation or
    constraint value). ``failed(study).sum()`` counts them."""
    return ~np.all(np.isfinite(study.told_y), axis=1)


def best(study: Study) -> tuple[np.ndarray, float] | None:
    """``(x, y)`` of the smallest observation among the evaluations that did not fail and whose
    constraint values (if any) are all ``<= 0``; ``None`` if there is none."""
    ok = ~failed(study) & np.all(study.told_y[:, 1:] <= 0, axis=1)
    if not ok.any():
        return None
    i = np.flatnonzero(ok)[np.argmin(study.told_y[ok, 0])]
    return np.array(study.told_x[i]), float(study.told_y[i, 0])


def constraint_observations(algo: Algorithm, study: Study) -> np.ndarray:
    """The told constraint values ``(n, K)`` of a constrained algorithm (float64, as told)."""
    k = int(getattr(algo, "n_constraints", 0))
    if study.told_y.shape[1] != 1 + k:
        raise ValueError(f"the study holds {study.told_y.shape[1] - 1} constraint values per "
                         f"point; n_constraints={k}")
    return np.array(study.told_y[:, 1:])


def ask(algo: Algorithm, study: Study) -> tuple[np.ndarray, Study]:
    """The next points ``(q, d)`` to evaluate and the study with its key advanced."""
    asked = int(study.asked)
    if asked < study.design.shape[0]:
        x = study.design[asked:asked + 1]
        return np.asarray(x), study._replace(asked=study.asked + 1)
    suggest, _ = _jitted(algo)
    key, k_suggest, _ = jax.random.split(study.key, 3)
    x, _ = suggest(k_suggest, study.state)
    return np.asarray(x), study._replace(key=key)


def _fits_dtype(name: str, v: np.ndarray, dtype) -> None:
    """Finite values of ``v`` must stay finite in ``dtype`` (no silent overflow to inf)."""
    with np.errstate(over="ignore"):
        lost = np.isfinite(v) & ~np.isfinite(v.astype(dtype))
    if np.any(lost):
        where = np.argwhere(lost).tolist()
        raise ValueError(
            f"{name} at {where} ({v[lost].tolist()}) overflows the state's dtype {np.dtype(dtype)} "
            f"(largest finite value {float(np.finfo(dtype).max):.4g}): rescale the objective or "
            "enable jax_enable_x64; nothing was recorded")


def tell(algo: Algorithm, study: Study, x, y, c=None) -> Study:
    """Adds observations ``y`` ``(q,)`` at ``x`` ``(q, d)`` and, for an algorithm with
    ``n_constraints = K > 0``, the constraint values ``c`` ``(q, K)``; raises ``ValueError`` on bad
    input and then leaves ``study`` unchanged. NaN or infinite ``y`` (or ``c``) values are failed
    evaluations (module docstring)."""
    buf = _buffer(study.state)
    d = buf.dim
    dtype = np.dtype(buf.x.dtype)
    try:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"x and y must be numeric arrays: {err}") from None
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
        c = np.asarray(c, dtype=np.float64)
        if c.ndim == 1 and x.shape[0] == 1:
            c = c[None, :]
        if c.shape != (x.shape[0], k):
            raise ValueError(f"c must have shape ({x.shape[0]}, {k}) to match x and "
                             f"n_constraints={k}, got {c.shape}; nothing was recorded")
        _fits_dtype("c", c, dtype)
    _fits_dtype("y", y, dtype)
    told = y[:, None] if not k else np.concatenate([y[:, None], c], axis=1)
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
    state = study.state
    need = int(buf.count) + x.shape[0]
    if need > buf.capacity:
        state = grow_state(state, D.next_capacity(need, MIN_CAPACITY))
    _, update = _jitted(algo)
    with np.errstate(over="ignore"):
        ys = told.astype(dtype)
    state = update(state, jnp.asarray(xs), jnp.asarray(ys if k else ys[:, 0]))
    return study._replace(state=state, told_x=np.concatenate([study.told_x, x]),
                          told_y=np.concatenate([study.told_y, told]))


def save(path: str | os.PathLike, study: Study) -> None:
    """Writes the study (state, key, design, the float64 record, the bounds, the algorithm's name
    and config, the dtype and provenance) with ``flax.serialization`` msgpack; atomic rename."""
    core = study._replace(told_x=None, told_y=None, algorithm=None)
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
    }
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(serialization.msgpack_serialize(payload))
    os.replace(tmp, path)


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
    lost, the next suggestions may differ. A file of format 1 or 2 (no algorithm record) loads
    with a ``UserWarning`` (module docstring)."""
    bounds = check_bounds(bounds)
    with open(path, "rb") as fh:
        payload = serialization.msgpack_restore(fh.read())
    fmt = payload.get("format")
    if fmt not in (1, 2, FORMAT_VERSION):
        raise ValueError(f"{path}: not an ntkbo study file of a known format (format {fmt!r}; "
                         f"this ntkbo reads 1 to {FORMAT_VERSION})")
    differ = []
    if fmt == FORMAT_VERSION:
        saved = json.loads(payload["algorithm"]) or {}
        from ntkbo.algorithms import record_differences

        differ += record_differences(saved.get("name"), saved.get("config"), algo)
    else:
        warnings.warn(
            f"{path}: a study file of format {fmt} records no algorithm: its name and options "
            f"cannot be checked against {getattr(algo, 'name', None)!r} (save it again to write "
            f"format {FORMAT_VERSION})", UserWarning, stacklevel=2)
    saved_bounds = np.asarray(payload["bounds"], np.float64) if "bounds" in payload else None
    given = np.asarray(bounds, np.float64)
    dtype = np.dtype(bounds.dtype)
    if saved_bounds is not None and (saved_bounds.shape != given.shape or not np.array_equal(
            saved_bounds.astype(dtype), given.astype(dtype))):
        differ.append(f"bounds {given.tolist()} differ from the saved study's bounds "
                      f"{saved_bounds.tolist()}")
    if "dtype" in payload and payload["dtype"] != str(dtype):
        differ.append(f"dtype: saved {payload['dtype']}, now {dtype} (jax_enable_x64 is "
                      f"{'on' if jax.config.jax_enable_x64 else 'off'})")
    if differ:
        raise ValueError(f"{path}: the saved study does not match: " + "; ".join(differ))
    template = start(algo, bounds, jax.random.PRNGKey(0), n_init=int(payload["n_init"]),
                     capacity=int(payload["capacity"]))
    core = template._replace(told_x=None, told_y=None, algorithm=None)
    saved = dict(payload["study"])
    saved.update(told_x=None, told_y=None, algorithm=None)  # kept apart in the payload
    mismatch = _state_mismatch(core, saved)
    if mismatch is not None:
        if "told_x" not in payload:
            raise ValueError(f"{path}: saved state does not match this algorithm and bounds "
                             f"({mismatch})")
        # The file is of this algorithm but its state layout is another ntkbo version's (e.g. a
        # kernel model's state before it kept its Cholesky factor): nothing observed is lost,
        # the model is rebuilt from the float64 record.
        warnings.warn(
            f"{path}: the saved state does not fit this ntkbo's state of "
            f"{getattr(algo, 'name', None)!r} ({mismatch}; saved by another version): the model "
            f"is rebuilt by telling the saved record again ({len(payload['told_x'])} values); "
            "its next suggestions may differ from the saved run's", UserWarning, stacklevel=2)
        return _replay(algo, bounds, payload, template)
    restored = serialization.from_state_dict(core, saved)
    study = jax.tree_util.tree_map(lambda t, v: jnp.asarray(v, dtype=jnp.asarray(t).dtype),
                                   core, restored)
    if saved_bounds is None:  # format 1: the state's own bounds
        saved_bounds = np.asarray(_state_bounds(study.state), np.float64)
        if saved_bounds.shape != given.shape or not np.array_equal(saved_bounds.astype(dtype),
                                                                   given.astype(dtype)):
            raise ValueError(f"{path}: bounds {given.tolist()} differ from the saved study's "
                             f"bounds {saved_bounds.tolist()}")
    if "told_x" in payload:
        told_x = np.asarray(payload["told_x"], np.float64).reshape(-1, given.shape[1])
        k = int(getattr(algo, "n_constraints", 0))
        told_y = np.asarray(payload["told_y"], np.float64).reshape(told_x.shape[0], 1 + k)
    else:  # format 1: the record is the buffers' (in the state's dtype)
        n = int(_buffer(study.state).count)
        told_x = np.asarray(_buffer(study.state).x[:n], np.float64)
        told_y = np.asarray(_buffer(study.state).y[:n], np.float64)[:, None]
        if getattr(algo, "n_constraints", 0):
            bufs = _buffers(study.state)[1:1 + algo.n_constraints]
            told_y = np.concatenate([told_y] + [np.asarray(b.y[:n], np.float64)[:, None]
                                                for b in bufs], axis=1)
    return study._replace(told_x=told_x, told_y=told_y, algorithm=record(algo))
