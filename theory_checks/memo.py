"""Caching a check's reference side per key and settings.

A check's reference side (networks drawn, ensembles trained, optimisation runs) is the expensive
part and no fault patches it (``theory_checks.faults``), so a check caches it and a fault run, or
a test running the same check twice, reuses it. The cache key is the key's data and the settings
without ``"fault"`` as canonical JSON (so a fault run hits the plain run's entry), plus the
function's other (hashable) arguments: e.g. ``faults.touches(stage)``, which keeps apart the runs a
fault does patch.
"""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np


def key_data(key) -> tuple:
    """The raw data of a ``jax.random`` key as a hashable tuple of ints."""
    return tuple(np.asarray(jax.random.key_data(key)).ravel().tolist())


def frozen(settings: dict) -> str:
    """``settings`` without ``"fault"`` as canonical JSON (sorted keys): hashable, and equal for a
    run with and without a fault."""
    return json.dumps({k: v for k, v in settings.items() if k != "fault"}, sort_keys=True)


def reference(maxsize: int):
    """Decorator: ``fn(key, settings, *args)`` cached per ``(key_data(key), frozen(settings),
    args)`` (``functools.lru_cache`` of ``maxsize`` entries). ``fn`` receives the key rebuilt from
    its data and the settings as JSON gives them back (tuples become lists), the same whether or
    not the entry was cached; ``cache_clear`` and ``cache_info`` are the cache's."""

    def wrap(fn):
        @functools.lru_cache(maxsize=maxsize)
        def cached(data: tuple, text: str, args: tuple):
            key = jax.random.wrap_key_data(jnp.asarray(data, jnp.uint32))
            return fn(key, json.loads(text), *args)

        @functools.wraps(fn)
        def call(key, settings: dict, *args):
            return cached(key_data(key), frozen(settings), args)

        call.cache_clear, call.cache_info = cached.cache_clear, cached.cache_info
        return call

    return wrap
