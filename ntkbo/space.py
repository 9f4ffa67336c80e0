"""Search spaces for ask/tell: named parameters mapped to the unit box and back.

A training job's hyper-parameters are not a box of reals: a learning rate lives on a log scale, a
layer count is an integer, an activation is a category. ``Space`` maps such parameters to the unit
box ``[0, 1]^D`` that every ntkbo algorithm optimises over, and back::

    space = ntkbo.space.Space([
        ntkbo.space.Float("learning_rate", 1e-5, 1e-1, log=True),
        ntkbo.space.Int("layers", 1, 8),
        ntkbo.space.Categorical("activation", ("relu", "tanh", "gelu")),
    ])
    study = ntkbo.space.start(algo, space, key, n_init=5)
    for _ in range(30):
        params, study = ntkbo.space.ask(algo, study, space)      # list of q dicts
        scores = [train_and_validate(**p) for p in params]
        study = ntkbo.space.tell(algo, study, space, params, scores, maximize=True)
    best_params, best_score = ntkbo.space.best(study, space, maximize=True)

Encodings (``D`` = ``Space.dim``):

- ``Float(low, high)``: one coordinate, ``u = (v - low) / (high - low)``; with ``log=True``,
  ``u = (log v - log low) / (log high - log low)`` (``low > 0``).
- ``Int(low, high)``: one coordinate; the interval ``[low - 1/2, high + 1/2]`` is mapped to
  ``[0, 1]`` and decoded by rounding, so every integer owns an equal share of the coordinate; with
  ``log=True`` the same on ``[log(low - 1/2), log(high + 1/2)]`` (``low >= 1``), so each integer's
  share shrinks like ``1/v``.
- ``Categorical(choices)``: ``k`` coordinates, one per choice, decoded by the largest (the first on
  ties): a one-hot encoding, so no order is imposed on the choices.

``tell`` tells the model the *canonical* encoding of the decoded parameters (``to_unit(from_unit(u))``:
the integer's centre, the one-hot corner), so the surrogate learns where the objective was really
evaluated, as BoTorch does for rounded parameters. ``maximize=True`` negates the scores (ntkbo
minimises) and ``best`` reports them in the user's sign. A NaN score is a failed evaluation
(``ntkbo.ask_tell``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from ntkbo import ask_tell


class Float(NamedTuple):
    """A real parameter in ``[low, high]`` (log-scaled with ``log=True``)."""

    name: str
    low: float
    high: float
    log: bool = False


class Int(NamedTuple):
    """An integer parameter in ``{low, ..., high}`` (log-scaled with ``log=True``)."""

    name: str
    low: int
    high: int
    log: bool = False


class Categorical(NamedTuple):
    """A parameter taking one of ``choices`` (any hashable values, compared with ``==``)."""

    name: str
    choices: tuple


Param = Float | Int | Categorical


def _check_param(p: Param) -> None:
    if not isinstance(p, (Float, Int, Categorical)):
        raise ValueError(f"every parameter must be a Float, Int or Categorical, got {p!r}")
    if not isinstance(p.name, str) or not p.name:
        raise ValueError(f"a parameter name must be a non-empty string, got {p.name!r}")
    if isinstance(p, Categorical):
        choices = tuple(p.choices)
        if not choices:
            raise ValueError(f"parameter {p.name!r}: choices must not be empty")
        if any(choices.index(c) != i for i, c in enumerate(choices)):
            raise ValueError(f"parameter {p.name!r}: choices must be distinct, got {choices!r}")
        return
    kind = "Int" if isinstance(p, Int) else "Float"
    if isinstance(p, Int) and not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                      for v in (p.low, p.high)):
        raise ValueError(f"parameter {p.name!r}: Int bounds must be integers, got "
                         f"low={p.low!r}, high={p.high!r}")
    if not (math.isfinite(p.low) and math.isfinite(p.high) and p.low < p.high):
        raise ValueError(f"parameter {p.name!r}: {kind} needs finite low < high, got "
                         f"low={p.low!r}, high={p.high!r}")
    if p.log and not (p.low >= 1 if isinstance(p, Int) else p.low > 0):
        floor = "low >= 1" if isinstance(p, Int) else "low > 0"
        raise ValueError(f"parameter {p.name!r}: log=True needs {floor}, got low={p.low!r}")


def _int_edges(p: Int) -> tuple[float, float]:
    """The encoded interval's ends (on the log scale for ``log=True``)."""
    lo, hi = p.low - 0.5, p.high + 0.5
    return (math.log(lo), math.log(hi)) if p.log else (lo, hi)


class Space:
    """An ordered set of named parameters and its unit-box encoding (module docstring).

    Attributes:
      params: the parameters, in order.
      dim: ``D``, the number of unit-box coordinates (1 per Float/Int, ``k`` per Categorical).
      bounds: ``(2, D)`` array: zeros, ones (pass it to ``ntkbo.ask_tell.start``).
    """

    def __init__(self, params: Sequence[Param]):
        params = tuple(params)
        if not params:
            raise ValueError("params must list at least one parameter")
        for p in params:
            _check_param(p)
        names = [p.name for p in params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"parameter names must be unique; repeated: {', '.join(dup)}")
        self.params = tuple(p._replace(choices=tuple(p.choices)) if isinstance(p, Categorical)
                            else p for p in params)
        widths = [len(p.choices) if isinstance(p, Categorical) else 1 for p in self.params]
        self._slices = np.cumsum([0] + widths)
        self.dim = int(self._slices[-1])
        self.bounds = np.stack([np.zeros(self.dim), np.ones(self.dim)])

    def __repr__(self) -> str:
        return f"Space({list(self.params)!r})"

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def from_unit(self, u) -> dict[str, Any]:
        """Decodes one point ``u`` ``(D,)`` of the unit box (values outside are clipped)."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        if u.shape != (self.dim,):
            raise ValueError(f"u must have shape ({self.dim},), got {u.shape}")
        out = {}
        for p, a, b in zip(self.params, self._slices[:-1], self._slices[1:]):
            if isinstance(p, Categorical):
                out[p.name] = p.choices[int(np.argmax(u[a:b]))]
            elif isinstance(p, Int):
                lo, hi = _int_edges(p)
                v = lo + u[a] * (hi - lo)
                v = math.exp(v) if p.log else v
                out[p.name] = int(min(max(math.floor(v + 0.5), p.low), p.high))
            else:
                if p.log:
                    v = math.exp(math.log(p.low) + u[a] * (math.log(p.high) - math.log(p.low)))
                else:
                    v = p.low + u[a] * (p.high - p.low)
                out[p.name] = float(min(max(v, p.low), p.high))
        return out

    def to_unit(self, values: dict[str, Any]) -> np.ndarray:
        """Encodes one parameter dict as ``(D,)`` in the unit box (the canonical point: the centre
        of an integer's share, the one-hot corner of a category). Raises ``ValueError`` naming the
        parameter that is missing, unknown or out of range."""
        if not isinstance(values, dict):
            raise ValueError(f"values must be a dict of parameter values, got {type(values).__name__}")
        unknown = sorted(set(values) - set(self.names))
        missing = [n for n in self.names if n not in values]
        if unknown or missing:
            raise ValueError(f"values: unknown parameters {unknown}, missing parameters {missing}")
        u = np.zeros(self.dim)
        for p, a, b in zip(self.params, self._slices[:-1], self._slices[1:]):
            v = values[p.name]
            if isinstance(p, Categorical):
                hits = [i for i, c in enumerate(p.choices) if c == v]
                if not hits:
                    raise ValueError(f"parameter {p.name!r}: {v!r} is not one of {p.choices!r}")
                u[a + hits[0]] = 1.0
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"parameter {p.name!r}: expected a number, got {v!r}")
            if not (math.isfinite(v) and p.low <= v <= p.high):
                raise ValueError(f"parameter {p.name!r}: {v!r} is outside [{p.low}, {p.high}]")
            if isinstance(p, Int):
                if v != int(v):
                    raise ValueError(f"parameter {p.name!r}: expected an integer, got {v!r}")
                lo, hi = _int_edges(p)
                if p.log:  # the centre (on the log scale) of the integer's share
                    t = 0.5 * (math.log(v - 0.5) + math.log(v + 0.5))
                else:
                    t = float(v)
                u[a] = (t - lo) / (hi - lo)
            elif p.log:
                u[a] = (math.log(v) - math.log(p.low)) / (math.log(p.high) - math.log(p.low))
            else:
                u[a] = (v - p.low) / (p.high - p.low)
        return np.clip(u, 0.0, 1.0)


def start(algo, space: Space, key, **kwargs) -> ask_tell.Study:
    """``ntkbo.ask_tell.start`` on the space's unit box (``kwargs``: ``n_init``, ``capacity``)."""
    return ask_tell.start(algo, space.bounds, key, **kwargs)


def ask(algo, study: ask_tell.Study, space: Space) -> tuple[list[dict[str, Any]], ask_tell.Study]:
    """The next ``q`` parameter dicts to evaluate, and the new study."""
    x, study = ask_tell.ask(algo, study)
    return [space.from_unit(row) for row in np.asarray(x)], study


def tell(algo, study: ask_tell.Study, space: Space, params: Sequence[dict[str, Any]], scores,
         *, maximize: bool = False, constraints=None) -> ask_tell.Study:
    """Tells the scores of ``params`` (a list of ``q`` dicts, as ``ask`` returned them or any
    others in the space); ``maximize=True`` for scores to maximise. NaN or inf scores are failed
    evaluations. ``constraints``: ``(q, K)`` values ``c_k <= 0`` for a constrained algorithm."""
    params = list(params)
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.shape[0] != len(params):
        raise ValueError(f"scores must have one value per parameter dict: got {scores.shape[0]} "
                         f"scores for {len(params)} dicts")
    x = np.stack([space.to_unit(p) for p in params])
    y = -scores if maximize else scores
    if constraints is None:
        return ask_tell.tell(algo, study, x, y)
    return ask_tell.tell(algo, study, x, y, constraints)


def best(study: ask_tell.Study, space: Space, *, maximize: bool = False):
    """``(params, score)`` of the best told evaluation in the user's sign, or ``None`` when no
    evaluation succeeded (``ntkbo.ask_tell.best``)."""
    found = ask_tell.best(study)
    if found is None:
        return None
    x, y = found
    return space.from_unit(x), (-y if maximize else y)
