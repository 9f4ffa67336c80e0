"""The algorithm protocol shared by every optimiser in ntkbo.

Modelled on optax's ``GradientTransformation`` and blackjax's ``SamplingAlgorithm``: an algorithm is
a NamedTuple of three pure functions. Randomness enters only through ``key`` arguments (key first);
the state is an immutable pytree of fixed-shape arrays, so each function is ``jax.jit``-able once per
buffer capacity and ``jax.vmap``-able over keys. Diagnostics are returned separately as ``info``.

Sign convention: every ntkbo algorithm *minimises* the objective. Each algorithm's docstring says how
its paper's convention (usually maximisation) maps onto this.

Black-box constraints ``c_k(x) <= 0``, ``k = 1..K`` (feasible iff every ``c_k(x) <= 0``; see
``ntkbo.benchmarks.Problem.constraints``). An algorithm that models them says so with
``n_constraints = K > 0`` (the fourth field of ``Algorithm``, default 0), and its ``update`` then takes
``y`` of shape ``(q, 1 + K)``: column 0 the objective observations, columns ``1..K`` the observed
constraint values, in the problem's order. Such an algorithm keeps its observations in
``ntkbo.data.Data`` buffers, the objective's first (in the state's pytree order) and then one per
constraint (same ``x``), so the drivers can grow them and ``ntkbo.ask_tell`` can read them back.
An algorithm with ``n_constraints = 0`` gets ``y`` of shape ``(q,)``: on a constrained problem it
sees only the objective (the drivers still record the constraint values in the ``Result``).
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
        """Appends observations ``x`` ``(q, d)``, ``y`` ``(q,)`` (``(q, 1 + K)`` for an algorithm
        with ``n_constraints = K > 0``: objective, then constraints) and refits the surrogate."""


class Algorithm(NamedTuple):
    """``init(key, bounds, capacity) -> state``; ``suggest(key, state) -> (x, info)``;
    ``update(state, x, y) -> state``; ``n_constraints``: the number ``K`` of black-box constraints
    whose observed values ``update`` expects in ``y[:, 1:]`` (0: ``y`` is the objective only)."""

    init: InitFn
    suggest: SuggestFn
    update: UpdateFn
    n_constraints: int = 0
