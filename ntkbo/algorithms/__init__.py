"""Optimisers: each factory returns an ``ntkbo.Algorithm(init, suggest, update)``.

``get(name, **options)`` builds one by name (the command line uses it); ``names()`` lists them. Names
with an acquisition suffix (``gp_ucb``, ``ntk_gp_ts``, ...) fix the ``acquisition`` argument.
"""

from __future__ import annotations

import functools

from ntkbo.algorithms.go_ucb import go_ucb
from ntkbo.algorithms.gp_bo import ACQUISITIONS, gp, ntk_gp
from ntkbo.algorithms.neural_bo import neural_bo
from ntkbo.algorithms.random_search import random_search
from ntkbo.algorithms.sto_bnts import sto_bnts, sto_bnts_linear
from ntkbo.base import Algorithm

_FACTORIES = {
    "neural_bo": neural_bo,
    "random_search": random_search,
    "go_ucb": go_ucb,
    "go_ucb_joint": functools.partial(go_ucb, optimistic="joint"),
    "gp": gp,
    "ntk_gp": ntk_gp,
    "sto_bnts": sto_bnts,
    "sto_bnts_linear": sto_bnts_linear,
}
for _acq in ACQUISITIONS:
    _FACTORIES[f"gp_{_acq}"] = functools.partial(gp, acquisition=_acq)
    _FACTORIES[f"ntk_gp_{_acq}"] = functools.partial(ntk_gp, acquisition=_acq)


def names() -> list[str]:
    """The names ``get`` accepts."""
    return sorted(_FACTORIES)


def get(name: str, **options) -> Algorithm:
    """The algorithm ``name`` built with ``options`` (its factory's keyword arguments)."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(names())}")
    return _FACTORIES[name](**options)


__all__ = [
    "get", "go_ucb", "gp", "names", "neural_bo", "ntk_gp", "random_search", "sto_bnts",
    "sto_bnts_linear",
]
