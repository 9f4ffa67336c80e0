"""Fixed-capacity observation buffers.

Observations live in arrays of a fixed ``capacity`` with a ``count`` of valid rows, so that every
function of the state is compiled once per capacity and can be ``jax.vmap``-ed over seeds. Rows at
index ``>= count`` are padding: every consumer (``ntkbo.gp`` first of all) masks them so that the
amount of padding cannot change any result.

Capacity is grown outside ``jit`` in powers of two (``grow``, ``next_capacity``), so the cost of a step
follows the number of observations, not the largest capacity a run will need.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Data(NamedTuple):
    """Observations ``x[:count]`` ``(capacity, d)`` and ``y[:count]`` ``(capacity,)``.

    ``count`` is an int32 scalar array. Padding rows hold zeros.
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


def mask(data: Data) -> Array:
    """Boolean ``(capacity,)``: True on the ``count`` valid rows."""
    return jnp.arange(data.capacity) < data.count


def append(data: Data, x: Array, y: Array) -> Data:
    """Writes ``x`` ``(q, d)`` and ``y`` ``(q,)`` after the valid rows.

    Inside ``jit`` a full buffer cannot raise; if ``count + q > capacity`` the buffer is returned
    unchanged, so nothing already observed is overwritten. The drivers check the capacity (and grow
    it) before calling this, and raise a clear error in the ask/tell loop.
    """
    x = jnp.asarray(x, data.x.dtype).reshape(-1, data.dim)
    y = jnp.asarray(y, data.y.dtype).reshape(-1)
    q = x.shape[0]
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
    """The valid rows as numpy arrays (outside jit; unbatched buffers)."""
    n = int(data.count)
    return np.asarray(data.x[:n]), np.asarray(data.y[:n])
