"""Ask/tell: optimise objectives that live outside JAX (a simulator, a training job, a lab).

The study is an immutable value, threaded by the caller::

    study = ntkbo.ask_tell.start(algo, bounds, key, n_init=5)
    for _ in range(50):
        x, study = ntkbo.ask_tell.ask(algo, study)        # (q, d) numpy array
        y = my_simulator(x)                                # (q,) anything array-like
        study = ntkbo.ask_tell.tell(algo, study, x, y)     # validates, grows capacity, refits
        ntkbo.ask_tell.save("study.msgpack", study)        # resume later with ``load``

Every input is validated here, outside ``jit``: points must have shape ``(q, d)`` and lie in the
bounds, observations must be finite and one per point.

Black-box constraints ``c_k(x) <= 0`` (feasible iff every ``c_k(x) <= 0``): an algorithm with
``algo.n_constraints = K > 0`` (e.g. ``neural_cbo``) needs the constraint values at every point,
``tell(algo, study, x, y, c)`` with ``c`` of shape ``(q, K)``, finite; ``constraint_observations``
reads them back. An algorithm with ``n_constraints = 0`` does not model constraints and refuses
``c`` (rather than silently dropping it). A rejected ``tell`` raises and leaves the study
as it was, so nothing already observed is lost. The buffers grow by doubling when full.

The first ``n_init`` points asked are a scrambled Sobol design drawn from the study's key, exactly the
initial design of ``ntkbo.minimize`` with the same key; after that ``ask`` calls ``algo.suggest``.
Saving and loading with ``flax.serialization`` keeps the key, so a resumed study asks exactly the
points an uninterrupted one would.
"""

from __future__ import annotations

import functools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from ntkbo import data as D
from ntkbo.base import Algorithm
from ntkbo.loop import MIN_CAPACITY, grow_state, initial_design

FORMAT_VERSION = 1


class Study(NamedTuple):
    """An ask/tell study: the algorithm state plus the driver's bookkeeping (all arrays).

    Attributes:
      state: the algorithm's state.
      key: the key the next ``ask`` splits.
      design: ``(n_init, d)`` the initial design, asked first.
      asked: how many design points have been asked (int32 scalar).
    """

    state: Any
    key: jax.Array
    design: jax.Array
    asked: jax.Array


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


def _check_bounds(bounds) -> jax.Array:
    b = np.asarray(bounds, dtype=float)
    if b.ndim != 2 or b.shape[0] != 2 or not np.all(np.isfinite(b)) or not np.all(b[0] < b[1]):
        raise ValueError(f"bounds must be a finite array (2, d) with lower < upper, got {b!r}")
    return jnp.asarray(b, jnp.result_type(float))


def start(algo: Algorithm, bounds, key, *, n_init: int = 5, capacity: int = MIN_CAPACITY
          ) -> Study:
    """A new study on the box ``bounds`` ``(2, d)``; ``n_init`` Sobol points are asked first."""
    bounds = _check_bounds(bounds)
    if n_init < 0:
        raise ValueError(f"n_init must be >= 0, got {n_init}")
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)  # raw uint32 keys serialise with msgpack
    k_design, _, k_algo, k_loop = jax.random.split(key, 4)  # the same split as ntkbo.minimize
    design = initial_design(k_design, bounds, n_init) if n_init else jnp.zeros((0, bounds.shape[1]))
    state = algo.init(k_algo, bounds, D.next_capacity(max(capacity, n_init), MIN_CAPACITY))
    return Study(state, k_loop, design, jnp.zeros((), jnp.int32))


def observations(study: Study) -> tuple[np.ndarray, np.ndarray]:
    """The told points and observations ``(n, d)``, ``(n,)`` as numpy arrays."""
    return D.valid(_buffer(study.state))


def constraint_observations(algo: Algorithm, study: Study) -> np.ndarray:
    """The told constraint values ``(n, K)`` of a constrained algorithm (``ntkbo.base``: the
    buffers after the objective's hold one constraint each)."""
    k = int(getattr(algo, "n_constraints", 0))
    bufs = _buffers(study.state)
    if len(bufs) < 1 + k:
        raise ValueError(f"the algorithm's state holds {len(bufs)} data buffers; "
                         f"n_constraints={k} needs {1 + k}")
    n = int(bufs[0].count)
    return np.stack([np.asarray(b.y[:n]) for b in bufs[1:1 + k]], axis=-1).reshape(n, k)


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


def tell(algo: Algorithm, study: Study, x, y, c=None) -> Study:
    """Adds observations ``y`` ``(q,)`` at ``x`` ``(q, d)`` and, for an algorithm with
    ``n_constraints = K > 0``, the constraint values ``c`` ``(q, K)``; raises ``ValueError`` on bad
    input and then leaves ``study`` unchanged."""
    buf = _buffer(study.state)
    d = buf.dim
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    y = y.reshape(-1) if y.ndim <= 1 else y
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"x must have shape (q, {d}), got {x.shape}")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x, got {y.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or inf")
    if not np.all(np.isfinite(y)):
        bad = np.flatnonzero(~np.isfinite(y)).tolist()
        raise ValueError(f"y contains NaN or inf at positions {bad}; nothing was recorded")
    k = int(getattr(algo, "n_constraints", 0))
    if k == 0 and c is not None:
        raise ValueError("c was given but the algorithm does not model constraints "
                         "(n_constraints=0); use a constrained algorithm such as neural_cbo")
    if k:
        if c is None:
            raise ValueError(f"c (the {k} constraint values at each point, shape ({x.shape[0]}, "
                             f"{k})) is required: the algorithm has n_constraints={k}")
        c = np.asarray(c, dtype=float)
        if c.ndim == 1 and x.shape[0] == 1:
            c = c[None, :]
        if c.shape != (x.shape[0], k):
            raise ValueError(f"c must have shape ({x.shape[0]}, {k}) to match x and "
                             f"n_constraints={k}, got {c.shape}; nothing was recorded")
        if not np.all(np.isfinite(c)):
            bad = np.argwhere(~np.isfinite(c)).tolist()
            raise ValueError(f"c contains NaN or inf at (row, constraint) {bad}; "
                             "nothing was recorded")
        y = np.concatenate([y[:, None], c], axis=1)
    bounds = np.asarray(study.state.bounds)
    span = bounds[1] - bounds[0]
    tol = 1e-9 * span
    outside = np.any((x < bounds[0] - tol) | (x > bounds[1] + tol), axis=1)
    if np.any(outside):
        raise ValueError(
            f"x rows {np.flatnonzero(outside).tolist()} lie outside the bounds "
            f"{bounds.tolist()}; nothing was recorded")
    x = np.clip(x, bounds[0], bounds[1])
    state = study.state
    need = int(buf.count) + x.shape[0]
    if need > buf.capacity:
        state = grow_state(state, D.next_capacity(need, MIN_CAPACITY))
    _, update = _jitted(algo)
    state = update(state, jnp.asarray(x, buf.x.dtype), jnp.asarray(y, buf.y.dtype))
    return study._replace(state=state)


def save(path: str | os.PathLike, study: Study) -> None:
    """Writes the study (state, key, design) with ``flax.serialization`` msgpack; atomic rename."""
    payload = {
        "format": FORMAT_VERSION,
        "capacity": _buffer(study.state).capacity,
        "n_init": int(study.design.shape[0]),
        "study": serialization.to_state_dict(jax.tree_util.tree_map(np.asarray, study)),
    }
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(serialization.msgpack_serialize(payload))
    os.replace(tmp, path)


def load(path: str | os.PathLike, algo: Algorithm, bounds) -> Study:
    """Reads a study saved by ``save`` for the same algorithm and bounds."""
    with open(path, "rb") as fh:
        payload = serialization.msgpack_restore(fh.read())
    if payload.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: not an ntkbo study file (format {payload.get('format')!r})")
    template = start(algo, bounds, jax.random.PRNGKey(0), n_init=int(payload["n_init"]),
                     capacity=int(payload["capacity"]))
    restored = serialization.from_state_dict(template, payload["study"])
    tmpl_leaves = jax.tree_util.tree_leaves(template)
    new_leaves = jax.tree_util.tree_leaves(restored)
    for a, b in zip(tmpl_leaves, new_leaves):
        if np.shape(a) != np.shape(b):
            raise ValueError(
                f"{path}: saved state does not match this algorithm and bounds "
                f"(array of shape {np.shape(b)} where {np.shape(a)} was expected)")
    return jax.tree_util.tree_map(lambda t, v: jnp.asarray(v, dtype=jnp.asarray(t).dtype),
                                  template, restored)
