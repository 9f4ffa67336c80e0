"""Fixed-capacity observation buffers.

Observations live in arrays of a fixed ``capacity`` with a ``count`` of valid rows, so that every
function of the state is compiled once per capacity and can be ``jax.vmap``-ed over seeds. Rows at
index ``>= count`` are padding: every consumer (``ntkbo.gp`` first of all) masks them so that the
amount of padding cannot change any result.

**Failed evaluations** (Optuna's failed trials): an observation ``y`` that is NaN or infinite is
*failed*. It is written like any other (it occupies its row, counts in ``count`` and stays in the
record: ``valid`` returns it), but :func:`mask` leaves it out, so no model fit, standardisation or
choice of the best point ever sees it. :func:`failed` marks those rows.

Capacity is grown outside ``jit`` in powers of two (``grow``, ``next_capacity``), so the cost of a step
follows the number of observations, not the largest capacity a run will need. A state may hold other
capacity-sized arrays (a Cholesky factor of the buffer's Gram matrix, ``ntkbo.gp.Factor``): their
type registers how it grows (``register_growable``), and ``grow_tree`` grows a whole state.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Data(NamedTuple):
    """Observations ``x[:count]`` ``(capacity, d)`` and ``y[:count]`` ``(capacity,)``.

    ``count`` is an int32 scalar array: the rows written, failed ones (non-finite ``y``) included.
    Padding rows hold zeros.
    """

    x: Array
    y: Array
    count: Array

    @property
    def capacity(self) -> int:
        return self.x.shape[-2]

    @property
    def dim(self) -> int:
        return self.x.shape[-1]


def empty(capacity: int, dim: int, dtype=None) -> Data:
    """An empty buffer of ``capacity`` rows in dimension ``dim``."""
    if int(capacity) < 1:
        raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
    if int(dim) < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    dtype = dtype or jnp.result_type(float)
    return Data(
        x=jnp.zeros((int(capacity), int(dim)), dtype),
        y=jnp.zeros((int(capacity),), dtype),
        count=jnp.zeros((), jnp.int32),
    )


def written(data: Data) -> Array:
    """Boolean ``(capacity,)``: True on the ``count`` rows written (failed ones included)."""
    return jnp.arange(data.capacity) < data.count


def mask(data: Data) -> Array:
    """Boolean ``(capacity,)``: True on the valid rows, the ``count`` rows written minus the failed
    ones (non-finite ``y``). Every model fits, standardises and picks its best points on these."""
    return written(data) & jnp.isfinite(data.y)


def failed(data: Data) -> Array:
    """Boolean ``(capacity,)``: True on the written rows whose ``y`` is NaN or infinite."""
    return written(data) & ~jnp.isfinite(data.y)


def append(data: Data, x: Array, y: Array) -> Data:
    """Writes ``x`` ``(q, d)`` and ``y`` ``(q,)`` after the ``count`` rows written.

    A non-finite ``y`` is written as it is: the row is *failed* (module docstring).

    Shapes are checked when traced: ``x`` must hold whole rows of ``d`` values, ``y`` one value per
    row, and ``q <= capacity``; otherwise ``ValueError``. Overflow (``count + q > capacity``) is
    checked where ``count`` is concrete, i.e. outside ``jit`` (an ``algo.update`` called eagerly):
    ``ValueError``. Inside ``jit`` it cannot raise: the buffer is returned unchanged (``count`` does
    not move, which the caller can test), so nothing already observed is overwritten. The drivers
    (``ntkbo.minimize``, ``ntkbo.ask_tell``) size or grow the buffers before calling this, outside
    ``jit``, so in their runs it never happens.
    """
    x = jnp.asarray(x, data.x.dtype)
    y = jnp.asarray(y, data.y.dtype)
    if x.size % data.dim or (x.ndim > 1 and x.shape[-1] != data.dim):
        raise ValueError(f"x must have shape (q, {data.dim}), got {x.shape}")
    x = x.reshape(-1, data.dim)
    q = x.shape[0]
    if y.size != q:
        raise ValueError(f"y must hold one value per point: {q} points in x, got y of shape "
                         f"{y.shape}")
    y = y.reshape(-1)
    if q > data.capacity:
        raise ValueError(f"x holds {q} points, more than the buffer's capacity {data.capacity}")
    try:
        count = int(data.count)  # concrete outside jit: a batch that does not fit raises
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError, TypeError):
        count = None
    if count is not None and count + q > data.capacity:
        raise ValueError(
            f"the buffer holds {count} of {data.capacity} observations: {q} more do not fit "
            "(grow it with ntkbo.data.grow, or let ntkbo.minimize / ntkbo.ask_tell size it)")
    fits = data.count + q <= data.capacity
    zero = jnp.zeros((), data.count.dtype)
    new_x = jax.lax.dynamic_update_slice(data.x, x, (data.count, zero))
    new_y = jax.lax.dynamic_update_slice(data.y, y, (data.count,))
    return Data(
        x=jnp.where(fits, new_x, data.x),
        y=jnp.where(fits, new_y, data.y),
        count=jnp.where(fits, data.count + q, data.count).astype(jnp.int32),
    )


def next_capacity(n: int, minimum: int = 16) -> int:
    """The smallest power of two ``>= max(n, minimum)``."""
    n = max(int(n), int(minimum), 1)
    return 1 << (n - 1).bit_length()


def grow(data: Data, capacity: int) -> Data:
    """Copies the buffer into one of larger ``capacity`` (outside jit). Nothing is lost."""
    if capacity < data.capacity:
        raise ValueError(
            f"capacity must not shrink the buffer: {capacity} < current capacity {data.capacity}"
        )
    pad = capacity - data.capacity
    return Data(
        x=jnp.pad(data.x, [(0, 0)] * (data.x.ndim - 2) + [(0, pad), (0, 0)]),
        y=jnp.pad(data.y, [(0, 0)] * (data.y.ndim - 1) + [(0, pad)]),
        count=data.count,
    )


def valid(data: Data) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` rows written, failed ones included (their ``y`` is NaN or inf), as numpy
    arrays (outside jit; unbatched buffers)."""
    n = int(data.count)
    return np.asarray(data.x[:n]), np.asarray(data.y[:n])


#: Types other than ``Data`` whose arrays follow the buffer's capacity: type -> ``grow(node, capacity)``.
_GROWABLE: dict[type, Callable] = {}


def register_growable(cls: type, grow_fn: Callable) -> None:
    """Declares that nodes of type ``cls`` in an algorithm's state are sized by the buffer's
    capacity and grow with ``grow_fn(node, capacity)`` (outside jit, nothing lost), so
    ``grow_tree`` (the drivers' ``ntkbo.loop.grow_state``) grows them with the ``Data``."""
    _GROWABLE[cls] = grow_fn


def grow_tree(tree, capacity: int):
    """Grows every ``Data`` buffer and every registered growable node (``register_growable``) in
    the pytree ``tree`` to ``capacity``; other leaves are returned as they are."""
    def growable(node):
        return isinstance(node, Data) or type(node) in _GROWABLE

    def grow_node(node):
        if isinstance(node, Data):
            return grow(node, capacity)
        if type(node) in _GROWABLE:
            return _GROWABLE[type(node)](node, capacity)
        return node

    return jax.tree_util.tree_map(grow_node, tree, is_leaf=growable)
