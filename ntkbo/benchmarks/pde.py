r"""PINN-BO's physics benchmarks: objectives with a known PDE ``N[f] = g`` (thesis Section 5.4.1).

Every operator here is built by automatic differentiation of the function it is applied to
(``jax.grad``, ``jax.jvp``): ``OP(f)`` maps a scalar function ``f: (d,) -> ()`` to ``x -> N[f](x)``.
The right-hand sides ``g`` are written in closed form (where the thesis misprints an equation,
the form of the authors' code, checked symbolically; see the table), so that the tests
``N[f_true](x) - g(x) = 0`` compare two independent computations.
All operators are linear in ``f`` (the setting of PINN-BO's theory, thesis Section 5.3).

=================  =====================================  ==========================================
problem            operator ``N[f]``                      right-hand side ``g``
=================  =====================================  ==========================================
DropWave (2)       ``x_1 d_2 f - x_2 d_1 f``              ``0`` (rotational invariance)
Styblinski-Tang    ``sum_i d_i f``                        ``sum_i (2 x_i^3 - 16 x_i + 5/2)``
Rastrigin          ``1/2 x . grad f - f``                 ``10 sum_i [cos(2 pi x_i)
                                                          + pi x_i sin(2 pi x_i) - 1]``
                                                          (the thesis prints ``x . grad f - f``:
                                                          erratum, the 1/2 is the code's)
Michalewicz        ``sum_i h_i d_i f - f``,               ``0`` (the thesis prints ``2 x_i (2m-1)``
                   ``h_i = [cot x_i + (4 m i x_i / pi)    in ``h_i``: erratum; this is the code's
                   / tan(i x_i^2 / pi)]^-1``, m = 10      form, thesis Section 5.4.1)
Cosine Mixture     ``grad f`` (a system of ``d``          ``2 x - (pi / 2) sin(5 pi x)`` per
(PINN-BO sign)     equations, as the code enforces)      coordinate
Euler beam (1)     ``(EI(x) f''(x))''``,                  ``e^x`` (``q(x)`` of the code; the thesis
                   ``EI = e^x / rho(x)``                  gives neither ``q`` nor the BCs)
Heat (2)           ``d_11 f + d_22 f`` (Laplace)          ``0``
=================  =====================================  ==========================================

The Michalewicz ``h_i`` is ``t_i / d_i t_i`` for the term ``t_i`` of coordinate ``i``, so it is
singular where ``d_i t_i = 0``; the equation holds wherever it is defined (almost everywhere).
The beam's ``EI`` is singular where ``rho = w'' = 0`` (thesis Section 5.4.3.2).

Registered in ``ntkbo.benchmarks.registry`` as ``"dropwave_pde"``, ``"styblinski_tang_pde"``,
``"rastrigin_pde"``, ``"michalewicz_pde"``, ``"cosine_mixture_pde"`` (the same functions and boxes as
the names without ``_pde``, with ``Problem.pde`` attached; the thesis's dimensions are 2, 10, 20, 30
and 50), ``"euler_beam"`` and ``"heat_equation"`` (``case=1, 2, 3``; ``ntkbo.benchmarks.heat``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ntkbo.pde import Pde

Array = jax.Array

__all__ = [
    "COSINE_MIXTURE",
    "DROPWAVE",
    "EULER_BEAM",
    "LAPLACE",
    "MICHALEWICZ",
    "RASTRIGIN",
    "STYBLINSKI_TANG",
    "beam_rho",
    "divergence_free_rotation",
    "gradient",
    "laplacian",
    "michalewicz_h",
]


# ----------------------------------------------------------------------------------------------
# generic operators (autodiff only)


def gradient(f):
    """``x -> grad f(x)`` ``(d,)``."""
    return jax.grad(f)


def _directional(f, x, v):
    """``v . grad f(x)`` by one forward-mode product."""
    return jax.jvp(f, (x,), (v,))[1]


def laplacian(f):
    """``x -> sum_i d_ii f(x)``: the trace of the Hessian, one forward-over-reverse product per
    coordinate."""

    def op(x):
        g = jax.grad(f)
        eye = jnp.eye(x.shape[-1], dtype=x.dtype)
        return jnp.sum(jax.vmap(lambda e: _directional(g, x, e) @ e)(eye))

    return op


def divergence_free_rotation(f):
    """``x -> x_1 d_2 f - x_2 d_1 f`` (2-D): the derivative along the rotation field
    ``(-x_2, x_1)``; zero for every radial function."""

    def op(x):
        return _directional(f, x, jnp.stack([-x[1], x[0]]))

    return op


def sum_of_partials(f):
    """``x -> sum_i d_i f(x)``: the derivative along ``(1, ..., 1)``."""
    return lambda x: _directional(f, x, jnp.ones_like(x))


def euler_operator(f):
    """``x -> 1/2 x . grad f(x) - f(x)`` (Rastrigin's corrected operator)."""
    return lambda x: 0.5 * _directional(f, x, x) - f(x)


def michalewicz_h(x: Array, m: int = 10) -> Array:
    """``h_i = [cot x_i + (4 m i x_i / pi) / tan(i x_i^2 / pi)]^-1`` ``(d,)`` (the code's form)."""
    i = jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    return 1.0 / (1.0 / jnp.tan(x) + (4.0 * m * i * x / math.pi) / jnp.tan(i * x**2 / math.pi))


def michalewicz_operator(f):
    """``x -> sum_i h_i(x) d_i f(x) - f(x)``."""
    return lambda x: _directional(f, x, michalewicz_h(x)) - f(x)


def beam_rho(x: Array) -> Array:
    """``rho(x) = 2.4x - 64 pi^2 e^{4x} sin(4 pi e^{2x}) - 396 e^{2x} sin(20x) + 80 e^{2x} cos(20x)
    + 16 pi e^{2x} cos(4 pi e^{2x}) + 0.4`` for a scalar ``x`` (thesis section 5.4.3.2; it equals
    ``w''`` of the manufactured solution)."""
    e2 = jnp.exp(2.0 * x)
    return (2.4 * x - 64.0 * math.pi**2 * jnp.exp(4.0 * x) * jnp.sin(4.0 * math.pi * e2)
            - 396.0 * e2 * jnp.sin(20.0 * x) + 80.0 * e2 * jnp.cos(20.0 * x)
            + 16.0 * math.pi * e2 * jnp.cos(4.0 * math.pi * e2) + 0.4)


def beam_operator(f):
    """``x -> (EI(x) f''(x))''`` with ``EI = e^x / rho(x)``, ``x`` of shape ``(1,)``."""

    def second(g):
        return jax.grad(jax.grad(g))

    def moment(t):  # EI(t) f''(t), t scalar
        return jnp.exp(t) / beam_rho(t) * second(lambda s: f(jnp.reshape(s, (1,))))(t)

    return lambda x: second(moment)(x[0])


# ----------------------------------------------------------------------------------------------
# right-hand sides (closed forms, independent of the autodiff above)


def _zero(x: Array) -> Array:
    return jnp.zeros((), x.dtype)


def styblinski_tang_rhs(x: Array) -> Array:
    return jnp.sum(2.0 * x**3 - 16.0 * x + 2.5)


def rastrigin_rhs(x: Array) -> Array:
    t = 2.0 * math.pi * x
    return 10.0 * jnp.sum(jnp.cos(t) + math.pi * x * jnp.sin(t) - 1.0)


def cosine_mixture_rhs(x: Array) -> Array:
    return 2.0 * x - 0.5 * math.pi * jnp.sin(5.0 * math.pi * x)


def beam_rhs(x: Array) -> Array:
    return jnp.exp(x[0])


DROPWAVE = Pde(divergence_free_rotation, _zero, "x1 df/dx2 - x2 df/dx1 = 0")
STYBLINSKI_TANG = Pde(sum_of_partials, styblinski_tang_rhs,
                      "sum_i df/dx_i = sum_i (2 x_i^3 - 16 x_i + 5/2)")
RASTRIGIN = Pde(euler_operator, rastrigin_rhs,
                "x.grad f / 2 - f = 10 sum_i [cos 2 pi x_i + pi x_i sin 2 pi x_i - 1]")
MICHALEWICZ = Pde(michalewicz_operator, _zero, "h.grad f - f = 0")
COSINE_MIXTURE = Pde(gradient, cosine_mixture_rhs, "grad f = 2x - (pi/2) sin(5 pi x)")
EULER_BEAM = Pde(beam_operator, beam_rhs, "(EI w'')'' = e^x, EI = e^x / rho")
LAPLACE = Pde(laplacian, _zero, "laplacian T = 0")
