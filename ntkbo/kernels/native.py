"""Closed-form infinite-width NNGP and NTK of fully-connected networks (no neural-tangents needed).

The recursion (Neal 1996; Lee et al. 2018; Jacot et al. 2018; Lee et al. 2019, eqs. (4)-(5); the
conventions of neural-tangents' ``stax``, Novak et al. 2020). For inputs ``x1 (n1, d)``,
``x2 (n2, d)`` the state is the pre-activation covariance ``nngp (n1, n2)``, the NTK
``ntk (n1, n2)``, and the variances ``cov1 (n1,)``, ``cov2 (n2,)``:

Input::

    nngp = x1 x2^T / d,   cov1 = |x1|^2 / d,   cov2 = |x2|^2 / d,   ntk = 0

``Dense`` with weight scale ``W_std``, bias scale ``b_std`` (``None``: ``b_std = 0`` and no bias
gradient) and input width ``N``::

    "ntk":       nngp' = W_std^2 nngp + b_std^2       ntk' = nngp' + W_std^2 ntk
    "standard":  nngp' = W_std^2 nngp + b_std^2       ntk' = N nngp + W_std^2 ntk (+ 1 with a bias)

(cov1, cov2 transform like nngp). In "standard" parameterisation the gradient with respect to
``W ~ N(0, W_std^2/N)`` is not rescaled, so the NTK grows with the hidden width (Sohl-Dickstein et
al. 2020); ``N`` is ``d`` for the first layer and ``width`` after it.

Activation ``phi`` (see :mod:`ntkbo.kernels.activations` for every closed form)::

    nngp' = E[phi(u) phi(v)],   ntk' = ntk * E[phi'(u) phi'(v)],
    (u, v) ~ N(0, [[cov1_i, nngp_ij], [nngp_ij, cov2_j]])

and ``cov1' = E[phi(u)^2]`` computed with the same formula at ``(cov1, cov1, cov1)``, exactly as
neural-tangents does for dense inputs.

Everything is written with ``jax.numpy`` only, so ``kernel_fn`` is ``jit``-, ``vmap``- and
``grad``-able (derivatives are finite at ``x = x'``, where the ReLU kernel has a kink). Inputs are
cast to float64 when ``jax_enable_x64`` is on and to float32 otherwise.
"""

from __future__ import annotations

import collections
import functools
from typing import NamedTuple, Optional, Sequence, Union, overload

import jax
import jax.numpy as jnp

from ntkbo.kernels.activations import Activation
from ntkbo.kernels.architecture import MLPSpec

Array = jax.Array
Get = Union[str, Sequence[str]]

KERNEL_NAMES: tuple[str, ...] = ("nngp", "ntk")


class LayerKernel(NamedTuple):
    """Kernel state between layers.

    Attributes:
      nngp: ``(n1, n2)`` covariance of the layer outputs at ``x1`` and ``x2``.
      ntk: ``(n1, n2)`` NTK so far (a scalar ``0`` before the first Dense layer), or ``None`` when
        only the NNGP is requested.
      cov1: ``(n1,)`` output variances at ``x1``.
      cov2: ``(n2,)`` output variances at ``x2``, or ``None`` when ``x2`` is ``x1``.
    """

    nngp: Array
    ntk: Optional[Array]
    cov1: Array
    cov2: Optional[Array]


def float_dtype():
    """float64 when ``jax_enable_x64`` is on, else float32."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def check_inputs(x1, x2=None) -> tuple[Array, Optional[Array]]:
    """Casts ``x1 (n1, d)``, ``x2 (n2, d)`` to the default float dtype after checking their shapes.

    Raises:
      ValueError: if an input is not 2-D or the feature dimensions differ.
    """
    x1 = jnp.asarray(x1)
    if x1.ndim != 2:
        raise ValueError(f"x1: expected shape (n1, d), got {x1.shape}.")
    x1 = x1.astype(float_dtype())
    if x2 is None:
        return x1, None
    x2 = jnp.asarray(x2)
    if x2.ndim != 2:
        raise ValueError(f"x2: expected shape (n2, d), got {x2.shape}.")
    if x2.shape[1] != x1.shape[1]:
        raise ValueError(
            f"x2: feature dimension {x2.shape[1]} does not match x1's {x1.shape[1]} "
            f"(shapes {x1.shape} and {x2.shape})."
        )
    return x1, x2.astype(float_dtype())


def input_kernel(x1: Array, x2: Optional[Array] = None, compute_ntk: bool = True) -> LayerKernel:
    """The input layer: ``nngp = x1 x2^T / d``, ``cov = |x|^2 / d``, ``ntk = 0`` (scalar).

    Args:
      x1: ``(n1, d)`` inputs (already validated and cast, see :func:`check_inputs`).
      x2: ``(n2, d)`` inputs or ``None`` for ``x2 = x1``.
      compute_ntk: whether to track the NTK.
    """
    d = x1.shape[-1]
    other = x1 if x2 is None else x2
    nngp = jnp.tensordot(x1, other, (-1, -1)) / d
    cov1 = jnp.sum(x1**2, axis=-1) / d
    cov2 = None if x2 is None else jnp.sum(x2**2, axis=-1) / d
    ntk = jnp.zeros((), nngp.dtype) if compute_ntk else None
    return LayerKernel(nngp, ntk, cov1, cov2)


@overload
def _affine(q: Array, W_std: float, b_std: Optional[float]) -> Array: ...
@overload
def _affine(q: None, W_std: float, b_std: Optional[float]) -> None: ...
def _affine(q: Optional[Array], W_std: float, b_std: Optional[float]) -> Optional[Array]:
    if q is None:
        return None
    q = q * W_std**2
    if b_std is not None:
        q = q + b_std**2
    return q


def dense_kernel(
    k: LayerKernel,
    W_std: float,
    b_std: Optional[float],
    parameterization: str,
    input_width: int,
) -> LayerKernel:
    """A Dense layer (formulas in the module docstring).

    Args:
      k: incoming kernel state.
      W_std: weight scale.
      b_std: bias scale, ``None`` for no bias.
      parameterization: ``"ntk"`` or ``"standard"``.
      input_width: the layer's fan-in ``N`` (used by ``"standard"`` only).
    """
    nngp, ntk = k.nngp, k.ntk
    if parameterization == "ntk":
        nngp = _affine(nngp, W_std, b_std)
        if ntk is not None:
            ntk = nngp + W_std**2 * ntk
    elif parameterization == "standard":
        if ntk is not None:
            ntk = float(input_width) * nngp + W_std**2 * ntk
            if b_std is not None:
                ntk = ntk + 1.0
        nngp = _affine(nngp, W_std, b_std)
    else:
        raise ValueError(f"parameterization: expected 'ntk' or 'standard', got {parameterization!r}.")
    return LayerKernel(nngp, ntk, _affine(k.cov1, W_std, b_std), _affine(k.cov2, W_std, b_std))


def activation_kernel(k: LayerKernel, activation: Activation) -> LayerKernel:
    """An elementwise activation: the dual kernel applied entrywise (module docstring)."""
    cov2 = k.cov1 if k.cov2 is None else k.cov2
    nngp, ntk = activation.dual(k.nngp, k.cov1[:, None], cov2[None, :], k.ntk)
    cov1, _ = activation.dual(k.cov1, k.cov1, k.cov1)
    new_cov2 = None if k.cov2 is None else activation.dual(k.cov2, k.cov2, k.cov2)[0]
    return LayerKernel(nngp, ntk, cov1, new_cov2)


def mlp_layer_kernel(
    spec: MLPSpec, x1: Array, x2: Optional[Array] = None, compute_ntk: bool = True
) -> LayerKernel:
    """The full recursion for :class:`~ntkbo.kernels.architecture.MLPSpec` on validated inputs."""
    k = input_kernel(x1, x2, compute_ntk)
    fan_in = x1.shape[-1]
    for layer in range(spec.depth):
        k = dense_kernel(k, spec.W_std[layer], spec.b_std[layer], spec.parameterization, fan_in)
        k = activation_kernel(k, spec.activation)
        fan_in = spec.width
    return dense_kernel(k, spec.W_std[-1], spec.b_std[-1], spec.parameterization, fan_in)


def canonicalize_get(get: Get) -> tuple[bool, tuple[str, ...]]:
    """``(is_single, names)`` for ``get`` = ``"ntk"`` or a sequence such as ``("nngp", "ntk")``.

    Raises:
      ValueError: empty ``get`` or a name other than ``"nngp"``/``"ntk"``.
    """
    if isinstance(get, str):
        single, names = True, (get,)
    else:
        try:
            single, names = False, tuple(get)
        except TypeError:
            raise ValueError(f"get: expected 'nngp', 'ntk' or a tuple of them, got {get!r}.") from None
    if not names or any(not isinstance(n, str) or n not in KERNEL_NAMES for n in names):
        raise ValueError(f"get: expected 'nngp', 'ntk' or a tuple of them, got {get!r}.")
    return single, names


@functools.lru_cache(maxsize=None)
def _output_type(names: tuple[str, ...]):
    return collections.namedtuple("AnalyticKernel", names)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _compiled_kernels(spec: MLPSpec, x1: Array, x2: Optional[Array], compute_ntk: bool):
    """Compiled once per (spec, shapes, dtype, compute_ntk); inlined when called under ``jit``."""
    k = mlp_layer_kernel(spec, x1, x2, compute_ntk)
    return k.nngp, k.ntk


def _op_by_op_kernels(spec: MLPSpec, x1: Array, x2: Optional[Array], compute_ntk: bool):
    k = mlp_layer_kernel(spec, x1, x2, compute_ntk)
    return k.nngp, k.ntk


def kernel_fn_from_spec(spec: MLPSpec, jit: bool = True):
    """The analytic ``kernel_fn`` of the network described by ``spec``.

    Returns:
      ``kernel_fn(x1, x2=None, get=("nngp", "ntk"))`` with neural-tangents' conventions:
      ``x1 (n1, d)``, ``x2 (n2, d)`` (``None``: ``x2 = x1``); a string ``get`` returns that
      ``(n1, n2)`` array, a tuple returns a namedtuple ``AnalyticKernel`` of arrays in the order
      asked. The NNGP is the covariance of the network output over random initialisations, the NTK
      its infinite-width tangent kernel ``sum_theta df(x1)/dtheta df(x2)/dtheta``.

    Args:
      spec: the architecture (``ntkbo.kernels.mlp_spec``).
      jit: compile the recursion with ``jax.jit`` (once per input shapes and ``get``; default).
        ``False`` runs it op by op, as neural-tangents' ``kernel_fn`` does, which reproduces nt's
        rounding exactly; compiled, XLA's fusion changes rounding, visible only where an entry is
        a cancellation (e.g. the depth-1 ReLU NNGP at ``x = -x'``, exactly 0, computed to
        ``~sqrt(eps)`` of the kernel's scale). Either way ``kernel_fn`` can be used under
        ``jit``/``vmap``/``grad``.
    """

    compute = _compiled_kernels if jit else _op_by_op_kernels

    def kernel_fn(x1: Array, x2: Optional[Array] = None, get: Get = KERNEL_NAMES):
        single, names = canonicalize_get(get)
        x1, x2 = check_inputs(x1, x2)
        nngp, ntk = compute(spec, x1, x2, "ntk" in names)
        values = {"nngp": nngp, "ntk": ntk}
        if single:
            return values[names[0]]
        return _output_type(names)(*(values[n] for n in names))

    kernel_fn.spec = spec
    return kernel_fn
