"""Named search-space parameters and the ``Space`` that maps them to the unit box and back.

The types behind ``ntkbo.space`` (which re-exports them and adds the ask/tell wrappers): a bottom
module (numpy only), so that ``ntkbo.ask_tell`` can restore a saved study's ``Space`` without
importing the layer above it. The encodings are described in ``ntkbo.space``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

__all__ = ["Categorical", "Float", "Int", "Param", "Space"]


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
        for p, a, _b in zip(self.params, self._slices[:-1], self._slices[1:]):
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
