"""Finite-width (empirical) NTK and the gradient-feature map of a scalar-output network.

For a network ``f(x; theta)`` with scalar output (``apply_fn(params, x) -> (n, 1)`` or ``(n,)``)::

    g(x; theta)        = d f(x; theta) / d theta                  (p,)  gradient features
    Theta(x1, x2)      = sum_theta df(x1)/dtheta df(x2)/dtheta    = g(x1) . g(x2)

(Jacot et al. 2018, eq. (2); Lee et al. 2019, eq. (2)). NeuralBO (Phan-Trong et al. 2023,
Algorithm 1) and NeuralUCB/NeuralTS use ``g(x; theta_0) / sqrt(m)``; dividing by ``m`` is left to
them.

``grad_features(apply_fn)(x, params)`` returns ``G (n, p)`` with rows ``g(x_i)`` flattened exactly as
``jax.flatten_util.ravel_pytree(params)`` flattens ``params``: leaves in ``jax.tree_util.tree_leaves``
order (dict keys sorted, e.g. ``params/Dense_0/bias, params/Dense_0/kernel, params/Dense_1/...``),
each leaf in row-major (C) order. So ``G[i] @ ravel_pytree(delta)[0]`` is the directional derivative
of ``f(x_i)`` along a parameter perturbation ``delta``.

``empirical_ntk(apply_fn, implementation)(x1, x2, params) -> (n1, n2)`` has two exact forms:

* ``"jacobian"`` (default): per-example gradients of both batches, contracted leaf by leaf,
  ``sum_leaf J1_leaf J2_leaf^T``. Time ``O((n1 + n2) C_grad + n1 n2 p)``, memory ``O((n1 + n2) p)``.
* ``"ntvp"`` (NTK-vector products; Novak et al. 2022, "Fast finite width neural tangent kernel"):
  column ``j`` is the forward-mode derivative of ``f(x1)`` along ``g(x2_j)``,
  ``Theta[:, j] = jvp(f(x1; .), theta, g(x2_j))``. It never stores a Jacobian: memory
  ``O(batch_size p + n1 width)``, so it is the form for many points or many parameters; columns
  are evaluated ``batch_size`` at a time (``None``: all at once with ``vmap``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

Array = jax.Array
Params = Any
ApplyFn = Callable[[Params, Array], Array]

IMPLEMENTATIONS: tuple[str, ...] = ("jacobian", "ntvp")


def _scalar_output(apply_fn: ApplyFn) -> Callable[[Params, Array], Array]:
    """``f(params, x (n, d)) -> (n,)`` from an ``apply_fn`` returning ``(n, 1)`` or ``(n,)``."""

    def f(params, x):
        out = apply_fn(params, x)
        if out.ndim == 2 and out.shape[1] == 1:
            return out[:, 0]
        if out.ndim == 1:
            return out
        raise ValueError(
            f"apply_fn: the empirical NTK here is for scalar-output networks, but apply_fn returned "
            f"shape {out.shape} for inputs of shape {x.shape}; expected (n, 1) or (n,)."
        )

    return f


def _check_x(x, name: str) -> Array:
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name}: expected shape (n, d), got {x.shape}.")
    return x


def _per_example_grads(f, params: Params, x: Array) -> Params:
    """Pytree like ``params`` with a leading ``(n,)`` axis: ``d f(x_i) / d params``."""
    grad_one = jax.grad(lambda p, xi: f(p, xi[None])[0])
    return jax.vmap(grad_one, in_axes=(None, 0))(params, x)


def grad_features(apply_fn: ApplyFn) -> Callable[[Array, Params], Array]:
    """The gradient-feature map ``g(x, params) -> G (n, p)``, ``G[i] = d f(x_i) / d theta``.

    Args:
      apply_fn: ``apply_fn(params, x (n, d)) -> (n, 1)`` (or ``(n,)``), e.g. ``ntkbo.nets.MLP.apply``.

    Returns:
      ``g(x, params)`` with ``x (n, d)``, compiled once per shapes; rows flattened in
      ``ravel_pytree(params)`` order (module docstring). ``g(x1) @ g(x2).T`` equals
      ``empirical_ntk(apply_fn)(x1, x2, params)``.
    """
    f = _scalar_output(apply_fn)

    @jax.jit
    def features(x, params):
        grads = _per_example_grads(f, params, x)
        return jax.vmap(lambda tree: ravel_pytree(tree)[0])(grads)

    def g(x: Array, params: Params) -> Array:
        return features(_check_x(x, "x"), params)

    return g


def empirical_ntk(
    apply_fn: ApplyFn,
    implementation: str = "jacobian",
    batch_size: Optional[int] = None,
) -> Callable[..., Array]:
    """The finite-width NTK ``Theta(x1, x2) = g(x1) . g(x2)`` of a scalar-output network.

    Args:
      apply_fn: ``apply_fn(params, x (n, d)) -> (n, 1)`` (or ``(n,)``).
      implementation: ``"jacobian"`` or ``"ntvp"`` (costs in the module docstring); both are exact.
      batch_size: ``"ntvp"`` only: columns computed per step (``None``: all at once).

    Returns:
      ``fn(x1, x2, params) -> (n1, n2)`` with ``x1 (n1, d)``, ``x2 (n2, d)`` (``None``: ``x2 = x1``),
      compiled once per input shapes; usable under ``jit`` and ``vmap`` (over params or inputs).

    Raises:
      ValueError: unknown ``implementation`` or invalid ``batch_size``.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"implementation: expected one of {', '.join(IMPLEMENTATIONS)}, got {implementation!r}."
        )
    bad_batch = isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    if batch_size is not None and bad_batch:
        raise ValueError(f"batch_size: expected None or an int >= 1, got {batch_size!r}.")
    f = _scalar_output(apply_fn)

    def jacobian_form(x1, x2, params):
        j1 = _per_example_grads(f, params, x1)
        j2 = j1 if x2 is None else _per_example_grads(f, params, x2)
        n1 = x1.shape[0]
        n2 = n1 if x2 is None else x2.shape[0]
        blocks = jax.tree_util.tree_map(
            lambda a, b: jnp.dot(a.reshape(n1, -1), b.reshape(n2, -1).T), j1, j2
        )
        return sum(jax.tree_util.tree_leaves(blocks))

    def ntvp_form(x1, x2, params):
        x2 = x1 if x2 is None else x2
        grad_one = jax.grad(lambda p, xi: f(p, xi[None])[0])

        def column(x2_j):
            tangent = grad_one(params, x2_j)
            return jax.jvp(lambda p: f(p, x1), (params,), (tangent,))[1]

        if batch_size is None:
            cols = jax.vmap(column)(x2)
        else:
            cols = jax.lax.map(column, x2, batch_size=batch_size)
        return cols.T

    form = jax.jit(jacobian_form if implementation == "jacobian" else ntvp_form)

    def fn(x1: Array, x2: Optional[Array], params: Params) -> Array:
        x1 = _check_x(x1, "x1")
        if x2 is not None:
            x2 = _check_x(x2, "x2")
            if x2.shape[1] != x1.shape[1]:
                raise ValueError(
                    f"x2: feature dimension {x2.shape[1]} does not match x1's {x1.shape[1]}."
                )
        return form(x1, x2, params)

    return fn
