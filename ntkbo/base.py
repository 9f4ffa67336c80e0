"""The algorithm protocol shared by every optimiser in ntkbo.

Modelled on optax's ``GradientTransformation`` and blackjax's ``SamplingAlgorithm``: an algorithm is
a NamedTuple of three pure functions, ``suggest(key, state) -> (x, info)`` and ``update(state, x, y)
-> (state, info)`` (as a blackjax kernel returns ``(state, info)``). Randomness enters only through
``key`` arguments (key first); the state is an immutable pytree of fixed-shape arrays holding what
the next step needs and nothing else, so each function is ``jax.jit``-able once per buffer capacity
and ``jax.vmap``-able over keys. Diagnostics (training losses, acquisition values, ...) are the
``info`` of the call that computed them: a NamedTuple per algorithm and function with documented
fields of fixed shape and dtype (``NoInfo``, with no fields, where nothing is reported); the drivers
stack them (``ntkbo.loop.Result.info`` and ``update_info``).

Hyper-parameters as arguments (blackjax's ``build_kernel`` pattern): a factory validates its
options and closes over them; algorithms that expose ``build_*`` module functions (NeuralBO, the GP
family) take the continuous hyper-parameters (NeuralBO's ``nu``, ``lam``; GP-UCB's ``beta``) as
arguments of the raw ``suggest``/``update`` they return, so ``jax.vmap`` over those values works.

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

Records: an algorithm built by ``ntkbo.algorithms`` (``get(name, ...)`` or a factory such as
``ntkbo.algorithms.neural_bo(width=64)``) carries its registry ``name`` and its resolved
``config`` (every factory option, defaults included, as a :class:`Config`), so
``ntkbo.algorithms.get(algo.name, **algo.config)`` rebuilds it, and save files and
``results.json`` record what ran. An option that is not JSON-able (a callable, a network, a PDE)
is recorded by a stable description (its ``module.qualname``, never a memory address) and marks
the config ``reproducible = False``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, cast

import jax
import numpy as np

from ntkbo.parts import Part

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
        ...


class UpdateFn(Protocol):
    def __call__(self, state: State, x: Array, y: Array) -> tuple[State, Info]:
        """Appends observations ``x`` ``(q, d)``, ``y`` ``(q,)`` (``(q, 1 + K)`` for an algorithm
        with ``n_constraints = K > 0``: objective, then constraints), refits the surrogate and
        returns ``(state, info)``: the new state and the refit's diagnostics (``NoInfo()`` for
        an algorithm that reports none)."""
        ...


class MeanFn(Protocol):
    def __call__(self, state: State, x: Array) -> Array:
        """Returns ``(n,)``: the model's mean of the objective at the points ``x`` ``(n, d)`` of
        the box, given the observations ``state`` holds, in the observations' units and sign
        (the objective itself, which ntkbo minimises: a smaller mean is a better point)."""
        ...


class NoInfo(NamedTuple):
    """The ``info`` of a call that reports nothing: a NamedTuple with no fields (an empty pytree,
    so stacking it over rounds costs nothing)."""


class StagedUpdate:
    """An ``update`` made of two stages, ``update(state, x, y) = refit(*append(state, x, y))``:
    ``append(state, x, y) -> (state, pending)`` writes the rows (its work depends on their number
    ``q``), ``refit(state, pending) -> (state, info)`` fits the model to the buffer (``pending``:
    a pytree of fixed shape, whatever ``q``, that ``append`` hands on). It is an ``UpdateFn``
    like any other (``jax.jit`` takes it; equal stages compare and hash equal, so an
    ``Algorithm`` holding it stays a static argument); the drivers may also call the stages
    themselves, so that the refit, the costly part to compile (the GP's hyper-parameter fit), is
    traced once for the initial design's ``n_init`` rows and a round's ``q`` (``ntkbo.loop``). A
    wrapper that makes a new update function is an ordinary ``update`` again
    (``ntkbo.algorithms.checked_update`` re-stages itself)."""

    __slots__ = ("append", "refit", "__weakref__")

    def __init__(self, append, refit):
        self.append = append
        self.refit = refit

    def __call__(self, state, x, y):
        return self.refit(*self.append(state, x, y))

    def __eq__(self, other):
        if isinstance(other, StagedUpdate):
            return (self.append, self.refit) == (other.append, other.refit)
        return NotImplemented

    def __hash__(self):
        return hash((StagedUpdate, self.append, self.refit))

    def __repr__(self):
        return f"StagedUpdate({self.append!r}, {self.refit!r})"


def describe(value) -> tuple[Any, bool]:
    """``(json_value, exact)``: ``value`` as plain JSON (numbers, strings, lists, dicts; arrays as
    nested lists) and whether that JSON rebuilds it. A value JSON cannot hold is described stably
    instead (the same text in every process) and ``exact`` is False: a callable as
    ``"<callable module.qualname>"``, a ``functools.partial`` as ``{"partial": ..., "args": ...,
    "keywords": ...}``, a NamedTuple as ``{"type": ..., field: ...}``, anything else as its
    ``repr`` with memory addresses removed."""
    if value is None or isinstance(value, (bool, str)):
        return value, True
    if isinstance(value, (int, np.integer)):
        return int(value), True
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return (v, True) if math.isfinite(v) else (repr(v), False)
    if isinstance(value, Part):  # a part as the mapping of the fields it sets
        return describe(value.given())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = {k: describe(getattr(value, k)) for k in cast(Any, value)._fields}
        return {"type": f"{type(value).__module__}.{type(value).__qualname__}",
                **{k: v for k, (v, _) in fields.items()}}, False
    if isinstance(value, (list, tuple)):
        items = [describe(v) for v in value]
        return [v for v, _ in items], all(e for _, e in items)
    if isinstance(value, Mapping):
        items = {str(k): describe(v) for k, v in value.items()}
        return ({k: v for k, (v, _) in items.items()},
                all(isinstance(k, str) for k in value) and all(e for _, e in items.values()))
    if isinstance(value, functools.partial):
        return {"partial": describe(value.func)[0], "args": describe(value.args)[0],
                "keywords": describe(value.keywords)[0]}, False
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        try:
            return describe(np.asarray(value).tolist())
        except (TypeError, ValueError, jax.errors.TracerArrayConversionError,
                jax.errors.ConcretizationTypeError):
            pass  # a tracer: described by its repr below
    if callable(value) and hasattr(value, "__qualname__"):
        return f"<callable {getattr(value, '__module__', '?')}.{value.__qualname__}>", False
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value)), False


class Config(Mapping):
    """An algorithm's resolved options: an immutable mapping ``option -> value`` (the values as
    given, so ``get(name, **config)`` rebuilds the algorithm), hashable so that an ``Algorithm``
    stays a valid static argument of ``jax.jit``.

    ``to_json()`` is the recorded form (``describe`` of every value); equality and the hash compare
    that form. ``reproducible`` is False when some value is not exactly JSON-able (a callable, a
    network, a non-finite float): the record then describes it but cannot rebuild it, and
    ``non_reproducible`` names those options.
    """

    __slots__ = ("_values", "_json", "_exact", "_key")

    def __init__(self, options: Mapping[str, Any] | None = None):
        self._values = dict(options or {})
        described = {k: describe(v) for k, v in self._values.items()}
        self._json = {k: v for k, (v, _) in described.items()}
        self._exact = {k: e for k, (_, e) in described.items()}
        self._key = json.dumps(self._json, sort_keys=True, default=str)

    def __getitem__(self, k):
        return self._values[k]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        if isinstance(other, Config):
            return self._key == other._key
        return NotImplemented

    def __repr__(self):
        return f"Config({self._values!r})"

    @property
    def reproducible(self) -> bool:
        """Whether ``to_json()`` holds every option exactly (no callable or other description)."""
        return all(self._exact.values())

    @property
    def non_reproducible(self) -> list[str]:
        """The options recorded by a description rather than exactly."""
        return [k for k, e in self._exact.items() if not e]

    def to_json(self) -> dict:
        """``{option: JSON value}`` (``describe``), the form save files and results record."""
        return json.loads(json.dumps(self._json, default=str))  # a copy, in the factory's order


class Algorithm(NamedTuple):
    """``init(key, bounds, capacity) -> state``; ``suggest(key, state) -> (x, info)``;
    ``update(state, x, y) -> (state, info)``; ``n_constraints``: the number ``K`` of black-box constraints
    whose observed values ``update`` expects in ``y[:, 1:]`` (0: ``y`` is the objective only);
    ``name``: the ``ntkbo.algorithms`` registry name it was built as (``None`` for an algorithm
    assembled by hand); ``config``: its resolved options (a ``Config``; ``None`` likewise);
    ``n_init``: the initial design's size of the protocol its preset follows (the source's, e.g.
    ``neural_bo(preset="paper")``'s 5; ``ntkbo.algorithms.design``), which ``ntkbo.minimize``,
    the study runner and ``ntkbo.ask_tell`` use when the caller gives no ``n_init`` (``None``:
    their default, ``ntkbo.loop.design_size``); ``design_sampler``: that design's sampler where
    the source names one (``"uniform"``: its "random points"; ``ntkbo.algorithms.
    design_sampler``), read by the same drivers (``None``: scrambled Sobol,
    ``ntkbo.loop.initial_design``; ``algo._replace(design_sampler=...)`` sets another). Neither is
    an option of the algorithm: the same options built without the preset run the same
    algorithm with the default design. ``posterior_mean``: ``posterior_mean(state, x) -> (n,)``,
    the surrogate's mean of the objective at ``x`` ``(n, d)`` in ``y``'s units (:class:`MeanFn`;
    ``ntkbo.ask_tell.recommend`` minimises it over the observed points), given by every
    model-based algorithm of ``ntkbo.algorithms``; ``None`` for one without a model (random
    search) or assembled without it."""

    init: InitFn
    suggest: SuggestFn
    update: UpdateFn
    n_constraints: int = 0
    name: str | None = None
    config: Config | None = None
    n_init: int | None = None
    design_sampler: str | None = None
    posterior_mean: MeanFn | None = None
