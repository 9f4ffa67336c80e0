"""Random search: i.i.d. uniform points in the box (the baseline of every paper)."""

from __future__ import annotations

from typing import NamedTuple

import jax

from ntkbo.validation import check_bounds, check_int
from ntkbo import data as D
from ntkbo import qmc
from ntkbo.base import Algorithm, NoInfo


class RandomSearchState(NamedTuple):
    data: D.Data
    bounds: jax.Array


def random_search(q: int = 1) -> Algorithm:
    """Uniform random search, ``q`` i.i.d. points per round.

    The observations are kept in the state (so results and resumption work as for every algorithm),
    but never used. ``suggest`` and ``update`` report nothing (``NoInfo``).

    Args:
      q: points per round, each drawn uniformly from the box independently of the others.
    """
    check_int("q", q, 1)

    def init(key, bounds, capacity):
        del key
        bounds = check_bounds(bounds)
        return RandomSearchState(D.empty(capacity, bounds.shape[-1], bounds.dtype), bounds)

    def suggest(key, state):
        x = qmc.uniform(key, q, state.bounds)
        return x, NoInfo()

    def update(state, x, y):
        return state._replace(data=D.append(state.data, x, y)), NoInfo()

    return Algorithm(init, suggest, update)
