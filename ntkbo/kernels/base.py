"""The kernel convention ntkbo uses everywhere: ``k(x1, x2) -> (n1, n2)``.

Model code (``ntkbo.gp``, the algorithms) takes a plain two-argument kernel ``k(x1, x2)`` with
``x1 (n1, d)``, ``x2 (n2, d)`` returning the ``(n1, n2)`` Gram matrix. :func:`as_kernel` turns a
neural-tangents-style ``kernel_fn(x1, x2, get)``, from ntkbo (``ntkbo.kernels.mlp``) or from
``neural_tangents.stax`` (any architecture it supports), into that form; both return an array when
``get`` is a string.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

import jax

Array = jax.Array
Kernel = Callable[[Array, Array], Array]


class KernelFn(Protocol):
    """A neural-tangents-style analytic kernel function."""

    def __call__(self, x1: Array, x2: Optional[Array] = None, get: Any = ("nngp", "ntk")) -> Any:
        """``(n1, n2)`` array for a string ``get``, a namedtuple of arrays for a tuple ``get``."""


def as_kernel(kernel_fn: KernelFn, get: str = "ntk") -> Callable[..., Array]:
    """``k(x1, x2=None) -> (n1, n2)``: the ``get`` kernel of an ntkbo or neural-tangents ``kernel_fn``.

    Args:
      kernel_fn: ``kernel_fn(x1, x2, get)``, e.g. ``ntkbo.kernels.mlp(...)[2]`` or the third element
        of a ``neural_tangents.stax.serial(...)`` triple.
      get: ``"ntk"`` (the kernel of gradient-descent-trained wide networks and of NeuralBO's
        uncertainty, NeuralBO's Algorithm 1, line 3) or ``"nngp"`` (the Bayesian-network prior).

    Returns:
      ``k(x1, x2=None)`` with ``x1 (n1, d)``, ``x2 (n2, d)`` (``None``: ``x2 = x1``) returning an
      ``(n1, n2)`` array; pure, so it can be ``jit``-ed and ``vmap``-ed.

    Raises:
      ValueError: ``get`` is not ``"ntk"`` or ``"nngp"``, or ``kernel_fn`` is not callable.
    """
    if get not in ("ntk", "nngp"):
        raise ValueError(f"get: expected 'ntk' or 'nngp', got {get!r}.")
    if not callable(kernel_fn):
        raise ValueError(f"kernel_fn: expected a callable kernel_fn(x1, x2, get), got {kernel_fn!r}.")

    def kernel(x1: Array, x2: Optional[Array] = None) -> Array:
        return kernel_fn(x1, x2, get)

    name = getattr(kernel_fn, "__name__", kernel_fn)
    kernel.__doc__ = f"The {get!r} kernel of {name}: (n1, d), (n2, d) -> (n1, n2)."
    return kernel
