"""The algorithm protocol shared by every optimiser in ntkbo.

Modelled on optax's ``GradientTransformation`` and blackjax's ``SamplingAlgorithm``: an algorithm is
a NamedTuple of three pure functions. Randomness enters only through ``key`` arguments (key first);
the state is an immutable pytree of fixed-shape arrays, so each function is ``jax.jit``-able once per
buffer capacity and ``jax.vmap``-able over keys. Diagnostics are returned separately as ``info``.

Sign convention: every ntkbo algorithm *minimises* the objective. Each algorithm's docstring says how
its paper's convention (usually maximisation) maps onto this.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax

Array = jax.Array
PRNGKey = jax.Array
State = Any
Info = Any


class InitFn(Protocol):
    def __call__(self, key: PRNGKey, bounds: Array, capacity: int) -> State:
        """Returns the initial state for a box ``bounds`` of shape ``(2, d)`` (lower row, upper row)
        holding at most ``capacity`` observations."""


class SuggestFn(Protocol):
    def __call__(self, key: PRNGKey, state: State) -> tuple[Array, Info]:
        """Returns ``(x, info)``: ``x`` of shape ``(q, d)`` inside the bounds, the points to evaluate
        next, and per-call diagnostics (acquisition value, optimiser status, ...)."""


class UpdateFn(Protocol):
    def __call__(self, state: State, x: Array, y: Array) -> State:
        """Appends observations ``x`` ``(q, d)``, ``y`` ``(q,)`` and refits the surrogate."""


class Algorithm(NamedTuple):
    """``init(key, bounds, capacity) -> state``; ``suggest(key, state) -> (x, info)``;
    ``update(state, x, y) -> state``."""

    init: InitFn
    suggest: SuggestFn
    update: UpdateFn
