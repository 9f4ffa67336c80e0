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

The study keeps its space (``study.space``; ``ntkbo.ask_tell.save`` writes it and ``load``
restores it), so ``space`` may be left out of ``ask``, ``ask_trial`` and ``best``. Parallel
workers use trial ids (``ntkbo.ask_tell``, "Parallel workers")::

    trial, params, study = ntkbo.space.ask_trial(algo, study)   # one dict, conditioned on pending
    study = ntkbo.space.tell(algo, study, trial, score, maximize=True)
    study = ntkbo.ask_tell.fail(algo, study, other_trial)        # or ntkbo.ask_tell.abandon

Encodings: ``Float`` and ``Int`` take one coordinate each (optionally on a log scale),
``Categorical`` one per choice (one-hot); the ``Space`` class gives the maps.

``tell`` tells the model the *canonical* encoding of the decoded parameters (``to_unit(from_unit(u))``:
the integer's centre, the one-hot corner), so the surrogate learns where the objective was really
evaluated, as BoTorch does for rounded parameters. ``maximize=True`` negates the scores (ntkbo
minimises) and ``best`` reports them in the user's sign. A NaN score is a failed evaluation
(``ntkbo.ask_tell``). Telling parameter dicts closes the pending trial whose asked point decodes
to the same parameters (the lowest id first); a dict asked nowhere is a new trial.
"""

from __future__ import annotations

import math
import os
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

    Encodings (``D`` = ``Space.dim``):

    - ``Float(low, high)``: one coordinate, ``u = (v - low) / (high - low)``; with ``log=True``,
      ``u = (log v - log low) / (log high - log low)`` (``low > 0``).
    - ``Int(low, high)``: one coordinate; the interval ``[low - 1/2, high + 1/2]`` is mapped to
      ``[0, 1]`` and decoded by rounding, so every integer owns an equal share of the coordinate;
      with ``log=True`` the same on ``[log(low - 1/2), log(high + 1/2)]`` (``low >= 1``), so each
      integer's share shrinks like ``1/v``.
    - ``Categorical(choices)``: ``k`` coordinates, one per choice, decoded by the largest (the first
      on ties): a one-hot encoding, so no order is imposed on the choices.

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

    def _key(self) -> tuple:
        return tuple((type(p).__name__, *p) for p in self.params)

    def __eq__(self, other) -> bool:
        """The same parameters, kinds and order (``Float("a", 0, 1)`` is not ``Int("a", 0, 1)``)."""
        if not isinstance(other, Space):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_json(self) -> list[dict]:
        """The parameters as JSON values, ``[{"type": "float" | "int" | "categorical", "name",
        ...}]`` (``from_json`` rebuilds the space). ``ValueError`` naming the parameter if a
        categorical choice is not a string, a finite number, a bool or ``None``."""
        out = []
        for p in self.params:
            if isinstance(p, Categorical):
                for c in p.choices:
                    if not (c is None or isinstance(c, (str, bool, int, np.integer))
                            or (isinstance(c, (float, np.floating)) and math.isfinite(c))):
                        raise ValueError(f"parameter {p.name!r}: choice {c!r} cannot be written "
                                         "as JSON (a string, finite number, bool or None)")
                out.append({"type": "categorical", "name": p.name,
                            "choices": [c.item() if isinstance(c, np.generic) else c
                                        for c in p.choices]})
            else:
                out.append({"type": "int" if isinstance(p, Int) else "float", "name": p.name,
                            "low": int(p.low) if isinstance(p, Int) else float(p.low),
                            "high": int(p.high) if isinstance(p, Int) else float(p.high),
                            "log": bool(p.log)})
        return out

    @classmethod
    def from_json(cls, params: Sequence[dict]) -> "Space":
        """The space ``to_json`` wrote (``ValueError`` for an unknown parameter type)."""
        made = []
        for p in params:
            kind = p.get("type")
            if kind == "categorical":
                made.append(Categorical(p["name"], tuple(p["choices"])))
            elif kind in ("int", "float"):
                made.append((Int if kind == "int" else Float)(p["name"], p["low"], p["high"],
                                                              bool(p["log"])))
            else:
                raise ValueError(f"unknown parameter type {kind!r} in {p!r}")
        return cls(made)

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
    """``ntkbo.ask_tell.start`` on the space's unit box (``kwargs``: ``n_init``, ``capacity``); the
    study keeps ``space``."""
    return ask_tell.start(algo, space.bounds, key, **kwargs)._replace(space=space)


def _space(study: ask_tell.Study, space: Space | None) -> Space:
    """``space``, or the study's own; ``ValueError`` if neither or if they differ."""
    own = getattr(study, "space", None)
    if space is None:
        if own is None:
            raise ValueError("space: the study keeps no Space (started with ntkbo.ask_tell.start?);"
                             " pass the space")
        return own
    if not isinstance(space, Space):
        raise ValueError(f"space must be an ntkbo.space.Space, got {type(space).__name__}")
    if own is not None and own != space:
        raise ValueError(f"space {space!r} differs from the study's space {own!r}")
    return space


def ask(algo, study: ask_tell.Study, space: Space | None = None, *, lie: str = "mean"
        ) -> tuple[list[dict[str, Any]], ask_tell.Study]:
    """The next ``q`` parameter dicts to evaluate, and the new study (each a pending trial,
    conditioned on the pending ones as ``ntkbo.ask_tell.ask``). ``space``: the study's if left
    out."""
    space = _space(study, space)
    x, study = ask_tell.ask(algo, study, lie=lie)
    return [space.from_unit(row) for row in np.asarray(x)], study


def ask_trial(algo, study: ask_tell.Study, space: Space | None = None, *, lie: str = "mean"
              ) -> tuple[int, dict[str, Any], ask_tell.Study]:
    """``(trial_id, params, study)``: one new pending trial (``ntkbo.ask_tell.ask_trial``) and its
    parameter dict. ``space``: the study's if left out."""
    space = _space(study, space)
    trial, x, study = ask_tell.ask_trial(algo, study, lie=lie)
    return trial, space.from_unit(x), study


def _canonical(space: Space, u: np.ndarray) -> np.ndarray:
    return space.to_unit(space.from_unit(u))


def tell(algo, study: ask_tell.Study, trial, *args, maximize: bool = False,
         constraints=None) -> ask_tell.Study:
    """Tells scores, in either form (``maximize=True`` for scores to maximise; NaN or inf scores
    are failed evaluations; ``constraints``: the values ``c_k <= 0`` of a constrained algorithm):

    - ``tell(algo, study, trial_id, score)``: the one score of the pending trial ``trial_id``
      (``ask_trial``), ``constraints`` ``(K,)``; the model is told the canonical encoding of its
      parameters;
    - ``tell(algo, study, space, params, scores)``: a list of ``q`` dicts (as ``ask`` returned
      them, or any others in the space) and their ``(q,)`` scores, ``constraints`` ``(q, K)``.
      Each dict closes the pending trial whose point decodes to it (the lowest id first) or is a
      new trial.

    Raises ``ValueError`` naming the argument and leaves the study as it was on bad input."""
    if ask_tell._is_trial_id(trial):
        if len(args) != 1:
            raise ValueError(f"tell(algo, study, trial_id, score): one score, got {len(args)} "
                             "arguments after the trial id")
        space = _space(study, None)
        tid = ask_tell._check_trial(study, trial, "tell")
        score = np.asarray(args[0], dtype=float)
        if score.size != 1:
            raise ValueError(f"score must be one value for trial {tid}, got shape {score.shape}; "
                             "nothing was recorded")
        y = -score.reshape(1) if maximize else score.reshape(1)
        x = _canonical(space, ask_tell._table(study).x[tid])[None]
        c = None if constraints is None else np.asarray(constraints, float).reshape(1, -1)
        return ask_tell._tell(algo, study, x, y, c, [tid])
    if len(args) != 2:
        raise ValueError(f"tell(algo, study, space, params, scores): got {1 + len(args)} "
                         "arguments after the study")
    space = _space(study, trial)
    params, scores = args
    params = list(params)
    scores = np.asarray(scores, dtype=float).reshape(-1)
    if scores.shape[0] != len(params):
        raise ValueError(f"scores must have one value per parameter dict: got {scores.shape[0]} "
                         f"scores for {len(params)} dicts")
    x = np.stack([space.to_unit(p) for p in params])
    y = -scores if maximize else scores
    table = ask_tell._table(study)
    open_ = np.flatnonzero(table.status == ask_tell.PENDING)
    canon = [_canonical(space, table.x[i]) for i in open_]
    ids: list[int | None] = []
    for row in x:
        hit = next((j for j, u in enumerate(canon)
                    if open_[j] not in ids and np.array_equal(u, row)), None)
        ids.append(None if hit is None else int(open_[hit]))
    return ask_tell._tell(algo, study, x, y, constraints, ids)


def best(study: ask_tell.Study, space: Space | None = None, *, maximize: bool = False):
    """``(params, score)`` of the best told evaluation in the user's sign, or ``None`` when no
    evaluation succeeded (``ntkbo.ask_tell.best``). ``space``: the study's if left out."""
    space = _space(study, space)
    found = ask_tell.best(study)
    if found is None:
        return None
    x, y = found
    return space.from_unit(x), (-y if maximize else y)


def load(path: str | os.PathLike, algo, space: Space | None = None) -> ask_tell.Study:
    """``ntkbo.ask_tell.load`` of a study started on a space: the saved space, or ``space``,
    which must then equal the saved one if the file has one (``ValueError`` naming both)."""
    from flax import serialization

    with open(path, "rb") as fh:
        payload = serialization.msgpack_restore(fh.read())
    saved = ask_tell._saved_space(path, payload)
    if space is None and saved is None:
        raise ValueError(f"{path}: the file records no space; pass space")
    if space is not None and saved is not None and space != saved:
        raise ValueError(f"{path}: space {space!r} differs from the saved space {saved!r}")
    space = space if space is not None else saved
    return ask_tell.load(path, algo, space.bounds)._replace(space=space)
