"""The empirical NTK of ntkbo's MLP from per-layer factors, without the ``(n, p)`` gradient features.

For a Dense layer ``l`` with input ``a_l`` ``(fan_in_l,)``, output ``u_l = s_l a_l W_l + t_l b_l``
(``ntkbo.nets.Dense``: ``s_l = W_std_l / sqrt(fan_in_l)``, ``t_l = b_std_l`` in the ``"ntk"``
parameterisation, ``s_l = t_l = 1`` in ``"standard"``) and backpropagated output gradient
``delta_l = d f / d u_l`` ``(out_l,)``, the parameter gradients are outer products::

    d f / d W_l = s_l a_l delta_l^T,        d f / d b_l = t_l delta_l,

so their inner products between two inputs factor (the "structured derivatives" of Novak et al.
2022, "Fast finite width neural tangent kernel", section 4, specialised to Dense layers)::

    Theta(x, x') = g(x) . g(x') = sum_l (s_l^2 a_l . a_l' + t_l^2) (delta_l . delta_l')      (1)

(``t_l = 0`` for a layer without bias). For ``n1 x n2`` pairs this costs
``n1 n2 sum_l (fan_in_l + out_l)`` instead of the ``n1 n2 p`` of ``g(x1) @ g(x2).T``,
``p = sum_l (fan_in_l + 1) out_l``, and the factors of ``n`` points take
``n sum_l (fan_in_l + out_l)`` numbers instead of ``n p``: for NeuralBO's width-500 network on a
10-D box (11 inputs after the sphere map) ``1012`` per point against ``p = 6000``.

``mlp_factors(module, params, x)`` returns, per Dense layer, ``A_l = s_l a_l`` ``(n, fan_in_l)``
and ``Delta_l`` ``(n, out_l)`` (one forward pass and one backward pass through the batch: the
``delta_l`` are the gradients of ``sum_i f(x_i)`` with respect to zero offsets added to each
``u_l``, exact because the examples do not interact). ``gram(f1, f2)`` is (1) for every pair and
``diagonal(f)`` its diagonal ``sum_l (|A_l|^2 + t_l^2) |Delta_l|^2``. Both equal
``grad_features(apply_fn)`` inner products to rounding (``tests/test_kernels_structured.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp

from ntkbo.kernels.architecture import mlp_spec

Array = jax.Array


class LayerFactors(NamedTuple):
    """One Dense layer's factors of (1) for ``n`` points.

    Attributes:
      a: ``(n, fan_in)`` the layer's inputs times ``s_l``.
      delta: ``(n, out)`` ``d f / d u_l``.
      t2: ``()`` ``t_l^2`` (0 without a bias).
    """

    a: Array
    delta: Array
    t2: Array


def _spec(module):
    return mlp_spec(module.depth, module.width, module.activation, module.W_std, module.b_std,
                    module.parameterization)


def mlp_factors(module, params: Any, x: Array) -> tuple[LayerFactors, ...]:
    """Per-layer factors of (1) of the network ``module`` (an ``ntkbo.nets.MLP``, e.g.
    ``ntkbo.kernels.mlp(...)[1].module``) at ``params`` for the points ``x`` ``(n, d)``.

    Returns:
      ``depth + 1`` ``LayerFactors``, input layer first; the forward pass is the module's own
      (``tests/test_kernels_structured.py`` checks its output against ``module.apply``).
    """
    spec = _spec(module)
    weights = params["params"]
    dtype = jax.tree_util.tree_leaves(weights)[0].dtype
    x = jnp.asarray(x, dtype)
    ntk = spec.parameterization == "ntk"

    def forward(offsets):
        h, inputs = x, []
        for layer in range(spec.num_dense):
            w = weights[f"Dense_{layer}"]
            s = spec.W_std[layer] / h.shape[-1] ** 0.5 if ntk else 1.0
            inputs.append(s * h)
            u = (s * h) @ w["kernel"] + offsets[layer]
            if spec.b_std[layer] is not None:
                u = u + (spec.b_std[layer] if ntk else 1.0) * w["bias"]
            h = spec.activation(u) if layer < spec.depth else u
        return jnp.sum(h), inputs

    offsets = [jnp.zeros((x.shape[0], 1 if layer == spec.depth else spec.width), dtype)
               for layer in range(spec.num_dense)]
    deltas, inputs = jax.grad(forward, has_aux=True)(offsets)
    t2 = [0.0 if b is None else (b * b if ntk else 1.0) for b in spec.b_std]
    return tuple(LayerFactors(a, dl, jnp.asarray(t, dtype))
                 for a, dl, t in zip(inputs, deltas, t2))


def gram(f1: tuple[LayerFactors, ...], f2: tuple[LayerFactors, ...]) -> Array:
    """``(n1, n2)`` empirical NTK (1) between the points of ``f1`` and of ``f2``."""
    # a sum of arrays, one per layer (``sum``'s start 0 is typed apart)
    return cast(Array, sum((l1.a @ l2.a.T + l1.t2) * (l1.delta @ l2.delta.T)
                           for l1, l2 in zip(f1, f2)))


def diagonal(f: tuple[LayerFactors, ...]) -> Array:
    """``(n,)`` ``Theta(x_i, x_i) = |g(x_i)|^2`` from the factors."""
    return cast(Array, sum((jnp.sum(lf.a * lf.a, -1) + lf.t2) * jnp.sum(lf.delta * lf.delta, -1)
                           for lf in f))


def factor_width(module, d_in: int) -> int:
    """Numbers per point in the factors, ``sum_l (fan_in_l + out_l)`` (for chunk sizes)."""
    spec = _spec(module)
    fans = [d_in] + [spec.width] * spec.depth
    outs = [spec.width] * spec.depth + [1]
    return sum(fans) + sum(outs)
