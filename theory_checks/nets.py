"""Nested-width random networks shared by the checks that sweep the width.

The networks are drawn by the library's own ``init_fn`` (``ntkbo.kernels.mlp(...)[0]``), so a wrong
initialisation in the library is seen by every check that compares these networks with a kernel.
In ntkbo's NTK parameterisation every parameter entry is i.i.d. ``N(0, 1)`` whatever the width
(``ntkbo.nets``), so the first ``m`` hidden units of every layer of one width-``M`` draw are exactly
a width-``m`` draw. One random initialisation per seed then serves every width of a sweep, and the
widths are coupled (less seed noise in a fitted slope). The same idea as
``tests/test_empirical_ntk.py``, written for any depth.
"""

from __future__ import annotations

import jax

from ntkbo.kernels import mlp


def init(key, depth: int, width: int, d: int, activation, W_std, b_std):
    """One parameter draw of the width ``width`` network ``ntkbo.kernels.mlp(depth, width, ...)``
    on ``d`` inputs, NTK parameterisation: the library's ``init_fn(key, (-1, d))``."""
    init_fn = mlp(depth, width, activation, W_std=W_std, b_std=b_std)[0]
    return init_fn(key, (-1, d))[1]


def draw(key, depth: int, width: int, d: int, activation, W_std, b_std, num: int):
    """``num`` independent parameter draws (a leading ``(num,)`` axis on every leaf): :func:`init`
    vmapped over ``jax.random.split(key, num)``. The chunked checks map :func:`init` over the same
    keys a chunk at a time instead, which gives the same networks."""
    keys = jax.random.split(key, num)
    return jax.jit(jax.vmap(lambda k: init(k, depth, width, d, activation, W_std, b_std)))(keys)


def first_units(params, depth: int, m: int, batched: bool = True):
    """The width-``m`` network made of the first ``m`` units of every hidden layer of ``params``
    (a leading batch axis kept when ``batched``; ``batched=False``: one network)."""
    lead = (slice(None),) if batched else ()

    def cut(path, v):
        names = [str(getattr(p, "key", p)) for p in path]
        layer, leaf = int(names[-2].split("_")[-1]), names[-1]
        if leaf == "bias":
            return v[lead + (slice(None, m),)] if layer < depth else v
        rows = v.shape[-2] if layer == 0 else m
        cols = m if layer < depth else v.shape[-1]
        return v[lead + (slice(None, rows), slice(None, cols))]

    return jax.tree_util.tree_map_with_path(cut, params)
