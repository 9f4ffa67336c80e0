"""Activation functions and their infinite-width dual kernels, one registry shared by nets and kernels.

Every activation ``phi`` of a fully-connected network has, in the infinite-width limit, a *dual*
(Cho and Saul 2009; Daniely et al. 2016) acting on the 2x2 covariance of a pair of pre-activations
``(u, v) ~ N(0, [[q11, q12], [q12, q22]])``::

    T(q12, q11, q22)     = E[phi(u)  phi(v)]     new NNGP entry
    Tdot(q12, q11, q22)  = E[phi'(u) phi'(v)]    NTK multiplier: ntk' = ntk * Tdot

(Jacot et al. 2018, Theorem 1; Lee et al. 2019, eqs. (4)-(5)). This module holds the closed forms
of ``T`` and ``Tdot`` for the activations neural-tangents implements in closed form, agreeing
with ``neural_tangents.stax`` 0.6.5 to rounding (:class:`Activation` says how).

Anywhere ntkbo takes ``activation=``, give a name (``"relu"``), a ``(name, params)`` pair
(``("leaky_relu", {"alpha": 0.1})``) or an :class:`Activation` (``make_activation``). The names,
the activation ``phi`` that the finite network applies, and the parameters:

=================  =========================================  ===========================================
name               phi(x)                                     parameters (default)
=================  =========================================  ===========================================
``identity``       ``x``                                      --
``relu``           ``max(x, 0)``                              --
``leaky_relu``     ``alpha min(x, 0) + max(x, 0)``            ``alpha`` (required)
``ab_relu``        ``a min(x, 0) + b max(x, 0)``              ``a``, ``b`` (required)
``abs``            ``|x|``                                    --
``erf``            ``a erf(b x) + c``                         ``a=1, b=1, c=0``
``sigmoid_like``   ``0.5 erf(x / 2.4020563531719796) + 0.5``  --
``gelu``           ``x Phi(x)`` (exact, not the tanh approx)  --
``sin``            ``a sin(b x + c)``                         ``a=1, b=1, c=0``
``cos``            ``a cos(b x + c)``                         ``a=1, b=1, c=0``
``rbf``            ``sqrt(2) sin(sqrt(2 gamma) x + pi/4)``    ``gamma=1``
``exp``            ``a exp(b x)``                             ``a=1, b=1``
``gaussian``       ``a exp(b x**2)``                          ``a=1, b=-1``
=================  =========================================  ===========================================

References: Cho and Saul 2009 (arc-cosine kernels: relu, abs, leaky/ab-relu); Williams 1997
(erf); Tsuchida et al. 2021 (gelu, arXiv:2002.08517); Novak et al. 2020 / neural-tangents (sin,
rbf, exp, gaussian); Han et al. 2022 (arXiv:2209.04121).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Mapping, NamedTuple, Optional, Tuple, Union

import jax
import jax.numpy as jnp
from jax.scipy.special import erf as _erf

Array = jax.Array

# --------------------------------------------------------------------------------------------------
# Numerically safe primitives (finite derivatives where the kernel has a kink, e.g. at x = x').


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def safe_sqrt(x: Array, tol: float = 0.0) -> Array:
    """``sqrt(max(x, tol))`` whose derivative is ``0`` (not ``inf``/NaN) where ``x <= max(tol, 1e-30)``.

    Rounding makes ``q11 q22 - q12**2`` slightly negative at ``x = +-x'``; clipping it at zero is
    neural-tangents' convention (``elementwise._sqrt``).
    """
    return jnp.sqrt(jnp.maximum(x, tol))


@safe_sqrt.defjvp
def _safe_sqrt_jvp(tol, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    floor = max(tol, 1e-30)
    out = safe_sqrt(x, tol)
    slope_root = safe_sqrt(x, floor)
    return out, jnp.where(x > floor, x_dot / (2 * slope_root), jnp.zeros_like(x_dot))


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def safe_arctan2(y: Array, x: Array, fill_zero: Optional[float] = None) -> Array:
    """``arctan2(y, x)``, equal to ``fill_zero`` at ``y = x = 0`` when given; finite derivatives there."""
    angle = jnp.arctan2(y, x)
    if fill_zero is None:
        return angle
    return jnp.where((y == 0.0) & (x == 0.0), fill_zero, angle)


@safe_arctan2.defjvp
def _safe_arctan2_jvp(fill_zero, primals, tangents):
    (y, x), (y_dot, x_dot) = primals, tangents
    out = safe_arctan2(y, x, fill_zero)
    denom = jnp.maximum(x**2 + y**2, 1e-30)
    return out, y_dot * (x / denom) - x_dot * (y / denom)


# --------------------------------------------------------------------------------------------------
# Dual kernels. Each takes (q12, q11, q22, ntk) with q11 broadcastable against q12 along rows and q22
# along columns (or all three elementwise for the diagonal), and returns (T, ntk * Tdot); ntk may be
# None (NNGP only).

_KernelOut = Tuple[Array, Optional[Array]]


def _identity_kernel(q12, q11, q22, ntk) -> _KernelOut:
    """``T = q12``, ``Tdot = 1``."""
    return q12, ntk


def _ab_relu_kernel(q12, q11, q22, ntk, *, a, b) -> _KernelOut:
    """Arc-cosine kernel of ``a min(x,0) + b max(x,0)`` (Cho and Saul 2009, degree 1).

    With ``theta = arccos(q12 / sqrt(q11 q22))`` (computed as ``arctan2(sqrt(q11 q22 - q12^2), q12)``,
    ``pi/2`` for two zero inputs)::

        Tdot = (a^2 + b^2)/2 - (a - b)^2 theta / (2 pi)
        T    = (a - b)^2 sqrt(q11 q22 - q12^2) / (2 pi) + Tdot q12

    For ReLU (a=0, b=1): ``T = sqrt(q11 q22) (sin theta + (pi - theta) cos theta) / (2 pi)``,
    ``Tdot = (pi - theta) / (2 pi)``.
    """
    root = safe_sqrt(q11 * q22 - q12**2)
    theta = safe_arctan2(root, q12, jnp.pi / 2)
    factor = (a - b) ** 2 / (2 * jnp.pi)
    tdot = (a**2 + b**2) / 2 - factor * theta
    t = factor * root + tdot * q12
    return t, None if ntk is None else ntk * tdot


def _erf_kernel(q12, q11, q22, ntk, *, a, b, c) -> _KernelOut:
    """Williams (1997) kernel of ``a erf(b x) + c``.

    With ``q <- b^2 q``::

        T    = a^2 (2/pi) arcsin(2 q12 / sqrt((1 + 2 q11)(1 + 2 q22))) + c^2
        Tdot = a^2 b^2 (4/pi) / sqrt((1 + 2 q11)(1 + 2 q22) - 4 q12^2)

    (arcsin written as ``arctan2(2 q12, sqrt(prod - 4 q12^2))``.)
    """
    scale = b**2
    q12, q11, q22 = scale * q12, scale * q11, scale * q22
    ntk = None if ntk is None else scale * ntk
    prod = (1 + 2 * q11) * (1 + 2 * q22)
    factor = 2 / jnp.pi
    root = safe_sqrt(prod - 4 * q12**2)
    t = factor * jnp.arctan2(2 * q12, root)
    if ntk is not None:
        ntk = ntk * (2 * factor / root)
    out_scale, shift = a**2, c**2
    return out_scale * t + shift, None if ntk is None else out_scale * ntk


def _gelu_kernel(q12, q11, q22, ntk) -> _KernelOut:
    """Kernel of the exact GELU ``x Phi(x)`` (Tsuchida et al. 2021, arXiv:2002.08517).

    With ``P = q11 q22``, ``P1 = (1 + q11)(1 + q22)``, ``delta = sqrt(P1 - q12^2)``,
    ``alpha = arctan2(q12, delta)``::

        T    = q12/4 + (q12 alpha + (q12^2 + P delta^2) / (P1 delta)) / (2 pi)
        Tdot = 1/4 + alpha/(2 pi) + q12 (1/delta^2 + (1 - P)/P1 + 1) / (2 pi delta)
    """
    prod_plus_1 = (q11 + 1) * (q22 + 1)
    prod = q11 * q22
    delta_squared = prod_plus_1 - q12**2
    delta = safe_sqrt(delta_squared)
    angles = jnp.arctan2(q12, delta)
    t = (q12**2 + prod * delta_squared) / (prod_plus_1 * delta)
    t = t + q12 * angles
    t = t / (2 * jnp.pi)
    t = t + 0.25 * q12
    if ntk is not None:
        second = 0.25 + angles / (2 * jnp.pi)
        first = 1 / delta_squared + (1 - prod) / prod_plus_1 + 1
        first = first * (q12 / delta / (2.0 * jnp.pi))
        ntk = ntk * (first + second)
    return t, ntk


def _sin_kernel(q12, q11, q22, ntk, *, a, b, c) -> _KernelOut:
    """Kernel of ``a sin(b x + c)``::

        T    = a^2/2 (exp(-b^2 (q11 + q22)/2 + b^2 q12) - exp(-b^2 (q11 + q22)/2 - b^2 q12) cos 2c)
        Tdot = a^2 b^2/2 (exp(... + b^2 q12) + exp(... - b^2 q12) cos 2c)
    """
    total = q11 + q22
    half_a_square = a**2 / 2.0
    s1 = jnp.exp(b**2 * (-0.5 * total + q12))
    s2 = jnp.exp(b**2 * (-0.5 * total - q12)) * jnp.cos(2 * c)
    t = half_a_square * (s1 - s2)
    return t, None if ntk is None else ntk * (half_a_square * b**2 * (s1 + s2))


def _cos_kernel(q12, q11, q22, ntk, *, a, b, c) -> _KernelOut:
    """``a cos(b x + c) = a sin(b x + c + pi/2)``; see :func:`_sin_kernel`."""
    return _sin_kernel(q12, q11, q22, ntk, a=a, b=b, c=c + jnp.pi / 2)


def _rbf_kernel(q12, q11, q22, ntk, *, gamma) -> _KernelOut:
    """Dual of ``sqrt(2) sin(sqrt(2 gamma) x + pi/4)``: the squared-exponential kernel::

        T    = exp(-gamma (q11 + q22 - 2 q12))
        Tdot = 2 gamma T
    """
    t = jnp.exp(gamma * (-(q11 + q22) + 2 * q12))
    return t, None if ntk is None else ntk * (2 * gamma * t)


def _exp_kernel(q12, q11, q22, ntk, *, a, b) -> _KernelOut:
    """Kernel of ``a exp(b x)``: ``T = a^2 exp(b^2 ((q11 + q22)/2 + q12))``, ``Tdot = b^2 T``."""
    t = jnp.exp(b**2 * ((q11 + q22) / 2 + q12))
    if ntk is not None:
        ntk = ntk * (b**2 * t)
    out_scale = a**2
    return out_scale * t, None if ntk is None else out_scale * ntk


def _gaussian_kernel(q12, q11, q22, ntk, *, a, b) -> _KernelOut:
    """Kernel of ``a exp(b x^2)``: with ``D = sqrt((1 - 2b q11)(1 - 2b q22) - 4 b^2 q12^2)``,
    ``T = a^2 / D`` and ``Tdot = a^2 4 b^2 q12 / D^3``."""
    prod = (1 - 2 * b * q11) * (1 - 2 * b * q22)
    factor = 4 * b**2
    det = safe_sqrt(prod - factor * q12**2)
    if ntk is not None:
        ntk = ntk * (factor * q12 / det**3)
    t = 1 / det
    out_scale = a**2
    return out_scale * t, None if ntk is None else out_scale * ntk


# --------------------------------------------------------------------------------------------------
# Finite-network activation functions.


def _ab_relu_fn(x, *, a, b):
    return a * jnp.minimum(x, 0) + b * jnp.maximum(x, 0)


def _erf_fn(x, *, a, b, c):
    return a * _erf(b * x) + c


def _sin_fn(x, *, a, b, c):
    return a * jnp.sin(b * x + c)


def _cos_fn(x, *, a, b, c):
    return a * jnp.sin(b * x + (c + jnp.pi / 2))


def _rbf_fn(x, *, gamma):
    return math.sqrt(2) * jnp.sin(math.sqrt(2 * gamma) * x + jnp.pi / 4)


def _exp_fn(x, *, a, b):
    return a * jnp.exp(b * x)


def _gaussian_fn(x, *, a, b):
    return a * jnp.exp(b * x**2)


def _gelu_fn(x):
    return jax.nn.gelu(x, approximate=False)


# --------------------------------------------------------------------------------------------------
# The registry.

_REQUIRED = object()
_SIGMOID_LIKE_B = 1 / 2.4020563531719796


class _Entry(NamedTuple):
    fn: Callable[..., Array]
    kernel: Callable[..., _KernelOut]
    defaults: Mapping[str, Any]  # parameter name -> default (or _REQUIRED)
    fixed: Mapping[str, float] = {}  # parameters the name pins (not user-settable)


_REGISTRY: dict[str, _Entry] = {
    "identity": _Entry(lambda x: x, _identity_kernel, {}),
    "relu": _Entry(_ab_relu_fn, _ab_relu_kernel, {}, {"a": 0.0, "b": 1.0}),
    "leaky_relu": _Entry(
        lambda x, *, alpha: _ab_relu_fn(x, a=alpha, b=1.0),
        lambda q12, q11, q22, ntk, *, alpha: _ab_relu_kernel(q12, q11, q22, ntk, a=alpha, b=1.0),
        {"alpha": _REQUIRED},
    ),
    "ab_relu": _Entry(_ab_relu_fn, _ab_relu_kernel, {"a": _REQUIRED, "b": _REQUIRED}),
    "abs": _Entry(_ab_relu_fn, _ab_relu_kernel, {}, {"a": -1.0, "b": 1.0}),
    "erf": _Entry(_erf_fn, _erf_kernel, {"a": 1.0, "b": 1.0, "c": 0.0}),
    "sigmoid_like": _Entry(_erf_fn, _erf_kernel, {}, {"a": 0.5, "b": _SIGMOID_LIKE_B, "c": 0.5}),
    "gelu": _Entry(_gelu_fn, _gelu_kernel, {}),
    "sin": _Entry(_sin_fn, _sin_kernel, {"a": 1.0, "b": 1.0, "c": 0.0}),
    "cos": _Entry(_cos_fn, _cos_kernel, {"a": 1.0, "b": 1.0, "c": 0.0}),
    "rbf": _Entry(_rbf_fn, _rbf_kernel, {"gamma": 1.0}),
    "exp": _Entry(_exp_fn, _exp_kernel, {"a": 1.0, "b": 1.0}),
    "gaussian": _Entry(_gaussian_fn, _gaussian_kernel, {"a": 1.0, "b": -1.0}),
}

ACTIVATIONS: tuple[str, ...] = tuple(_REGISTRY)
"""Names accepted by ``activation=`` (see the module docstring for formulas and parameters)."""


@dataclasses.dataclass(frozen=True)
class Activation:
    """A validated, hashable activation: a registry ``name`` and its float ``params``.

    Build it with :func:`make_activation` or :func:`as_activation`. It is a static (non-pytree)
    value, so it can be a field of a flax module or a ``jit`` static argument.

    The duals ``T`` and ``Tdot`` are written as the same sequence of floating-point operations as
    neural-tangents 0.6.5 (``stax/elementwise.py``), so that ``ntkbo.kernels`` agrees with
    ``neural_tangents.stax`` to rounding, including its clipping of ``q11 q22 - q12**2`` at zero
    (``x = x'``, ``x = -x'``) and its ``pi/2`` fill for the angle of two zero vectors.

    Attributes:
      name: one of :data:`ACTIVATIONS`.
      params: sorted ``(name, value)`` pairs of the user-settable parameters (defaults filled in).
    """

    name: str
    params: tuple[tuple[str, float], ...] = ()

    @property
    def kwargs(self) -> dict[str, float]:
        """All parameters passed to the formulas: user parameters plus those the name pins."""
        entry = _REGISTRY[self.name]
        return {**dict(entry.fixed), **dict(self.params)}

    def __call__(self, x: Array) -> Array:
        """``phi(x)`` elementwise (any shape)."""
        return _REGISTRY[self.name].fn(x, **self.kwargs)

    def dual(self, q12: Array, q11: Array, q22: Array, ntk: Optional[Array] = None) -> _KernelOut:
        """``(E[phi(u) phi(v)], ntk * E[phi'(u) phi'(v)])`` for ``(u, v) ~ N(0, [[q11, q12], [q12, q22]])``.

        Args:
          q12: covariances, any shape.
          q11, q22: variances, broadcastable to ``q12`` (e.g. ``(n1, 1)`` and ``(1, n2)``).
          ntk: incoming NTK, broadcastable to ``q12``, or ``None`` to skip the NTK.

        Returns:
          ``(nngp, ntk)`` after the activation (``ntk`` is ``None`` if it was).
        """
        return _REGISTRY[self.name].kernel(q12, q11, q22, ntk, **self.kwargs)


ActivationSpec = Union[str, Tuple[str, Mapping[str, float]], Activation]


def make_activation(name: str, **params: float) -> Activation:
    """Validated :class:`Activation` ``name`` with ``params``, e.g. ``make_activation("erf", b=2.0)``.

    Raises:
      ValueError: unknown ``name`` (the message lists :data:`ACTIVATIONS`), unknown or missing
        parameter (the message lists the valid ones), or a non-finite parameter value.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(
            f"activation: unknown activation {name!r}; valid names are {', '.join(ACTIVATIONS)}."
        )
    defaults = _REGISTRY[name].defaults
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        valid = ", ".join(defaults) if defaults else "none"
        raise ValueError(
            f"activation: {name!r} got unknown parameter(s) {unknown}; its parameters are: {valid}."
        )
    values = {}
    for key, default in defaults.items():
        value = params.get(key, default)
        if value is _REQUIRED:
            raise ValueError(
                f"activation: {name!r} requires parameter {key!r}, e.g. (\"{name}\", {{\"{key}\": 0.1}})."
            )
        try:
            value = float(value)  # pyright: ignore[reportArgumentType]  (None: the TypeError below)
        except (TypeError, ValueError):
            raise ValueError(
                f"activation: parameter {key!r} of {name!r} must be a float, got {value!r}."
            ) from None
        if not math.isfinite(value):
            raise ValueError(f"activation: parameter {key!r} of {name!r} must be finite, got {value}.")
        values[key] = value
    return Activation(name, tuple(sorted(values.items())))


def as_activation(spec: ActivationSpec) -> Activation:
    """Normalise ``"relu"``, ``("leaky_relu", {"alpha": 0.1})`` or an :class:`Activation`.

    Raises:
      ValueError: as :func:`make_activation`, or if ``spec`` has none of the three forms.
    """
    if isinstance(spec, Activation):
        return make_activation(spec.name, **dict(spec.params))
    if isinstance(spec, str):
        return make_activation(spec)
    if isinstance(spec, (tuple, list)) and len(spec) == 2 and isinstance(spec[1], Mapping):
        return make_activation(spec[0], **dict(spec[1]))
    raise ValueError(
        "activation: expected a name such as 'relu', a (name, params) pair such as "
        f"('leaky_relu', {{'alpha': 0.1}}), or an Activation; got {spec!r}. "
        f"Valid names are {', '.join(ACTIVATIONS)}."
    )
