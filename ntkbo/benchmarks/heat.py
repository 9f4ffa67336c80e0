r"""Steady-state heat on ``[0, 2 pi]^2`` (PINN-BO, thesis Section 5.4.1): a JAX series solver.

``T`` solves Laplace's equation ``T_xx + T_yy = 0`` with Dirichlet data on the four sides (three
boundary-condition sets, ``BOUNDARY_CONDITIONS``, in the order of the authors' py-pde code). The
task is to find the hottest point; ntkbo minimises ``-T``.

**Solver** (closed form, harmonic term by term). With ``L = 2 pi``::

    T = W + B + sum_{sides s} sum_{n=1}^{N} c_{s,n} sin(n pi t_s / L) S_{s,n}

* ``W = sum_corners J_c theta_c / (pi / 2)``: the four side values disagree at the corners (every
  set has jumps there), so each corner gets the harmonic angle function ``theta_c`` (``atan2``
  about the corner, 0 on the horizontal side, ``pi / 2`` on the vertical one) times the jump
  ``J_c`` = vertical-side value minus horizontal-side value. ``W`` carries every jump, so the
  remaining data are continuous around the boundary.
* ``B = a + b x + c y + e x y`` (harmonic): the bilinear function equal to the remaining data at the
  four corners, so that the data left, ``rho_s = T_s - W - B`` on side ``s``, vanish at both ends.
* each ``rho_s`` is expanded in a sine series along its side (coefficients
  ``(2 / L) int rho_s(t) sin(n pi t / L) dt`` by the midpoint rule in ``u`` with ``QUAD_NODES``
  nodes after the substitution ``t = L (1 - cos u) / 2``, which tames the ``sqrt`` end-point
  singularities of the data: Fejer's first rule) and continued into the square by
  ``S_{s,n} = sinh(n pi a / L) / sinh(n pi)``, ``a`` the distance to the opposite side (evaluated as
  ``exp(-n pi (L - a) / L) (1 - e^{-2 n pi a/L}) / (1 - e^{-2 n pi})``, no overflow).

Every term is harmonic, so the Laplacian of the computed ``T`` (by autodiff) is zero to rounding
everywhere inside the square: the PDE holds to float64 precision (tested). The boundary data hold
to the series' truncation error. The data ``rho_s`` are continuous with zero end values, so the
coefficients decay at least like ``n^{-2}`` once the data's frequencies are resolved; set 1's
``T(2 pi, y) = y sin(3 cos y + 2 e^y sin y)`` oscillates with wavenumbers up to about 550 near
``y = 2 pi``, hence ``N = NUM_TERMS = 4096`` terms (wavenumbers up to 2048) and
``QUAD_NODES = 16384``: the boundary error farther than ``0.05`` from a corner is below ``1e-6``
of the temperature range for all three sets, and inside the square the solution agrees with an
independent finite-difference solve to its error (both tested). The thesis solved with py-pde on
a ``1000 x 1000`` grid and interpolated; the series is exact up to truncation and quadrature,
smooth (``N[T]`` and its gradient exist everywhere), and cheap under ``jit``/``vmap``.

The optimum: ``T`` is harmonic, so its maximum is on the boundary (maximum principle); ``get``
computes it by a dense search along the four sides of the computed ``T`` refined by a bounded scalar
minimisation (scipy).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

L = 2.0 * math.pi
NUM_TERMS = 4096
QUAD_NODES = 16384
_CHUNK = 256


class Sides(NamedTuple):
    """Dirichlet data as functions of the coordinate along the side (numpy/JAX array in, out).

    ``left(y) = T(0, y)``, ``right(y) = T(2 pi, y)``, ``bottom(x) = T(x, 0)``, ``top(x) = T(x, 2 pi)``.
    """

    left: Callable
    right: Callable
    bottom: Callable
    top: Callable


def _sqrt(x):
    return jnp.sqrt(jnp.maximum(x, 0.0))


BOUNDARY_CONDITIONS = {
    1: Sides(
        left=lambda y: 5 * jnp.sin(y) + _sqrt(1 + y),
        right=lambda y: y * jnp.sin(3 * jnp.cos(y) + 2 * jnp.exp(y) * jnp.sin(y)),
        bottom=lambda x: 10 * jnp.cos(x) + x * jnp.exp(_sqrt(x**2 + jnp.sin(x))),
        top=lambda x: 3 * _sqrt(jnp.exp(x * jnp.exp(-x))) * jnp.sin(x) + jnp.cos(3 * x) ** 2,
    ),
    2: Sides(
        left=lambda y: _sqrt(2 * y) * jnp.sin(y) + y**3 * jnp.cos(2 * y) + jnp.exp(jnp.cos(y)),
        right=lambda y: jnp.sin(y) * jnp.cos(2 * y) + y**3 * _sqrt(2 * y) + jnp.exp(jnp.sin(y)),
        bottom=lambda x: jnp.sin(x) * jnp.cos(2 * x) + x**2 * _sqrt(3 * x) + jnp.exp(jnp.sin(x)),
        top=lambda x: (jnp.exp(jnp.sin(x)) * _sqrt(3 * x) + x**2 * jnp.cos(x) * jnp.sin(x) ** 2
                       + jnp.exp(jnp.cos(x))),
    ),
    3: Sides(
        left=lambda y: (_sqrt(2 * y) + jnp.sin(y)) * (jnp.cos(2 * y) + y**3) + jnp.exp(jnp.cos(y)),
        right=lambda y: (jnp.sin(y) + jnp.cos(2 * y)) * (_sqrt(2 * y) + y**3) + jnp.exp(jnp.sin(y)),
        bottom=lambda x: (jnp.sin(x) + jnp.cos(2 * x)) * _sqrt(3 * x) + x**2 + jnp.exp(jnp.sin(x)),
        top=lambda x: ((jnp.exp(jnp.sin(x)) + _sqrt(3 * x)) * jnp.cos(x)
                       + (jnp.sin(x) ** 2 + x**2) * jnp.exp(jnp.cos(x))),
    ),
}
CASES = tuple(sorted(BOUNDARY_CONDITIONS))

# corners (x0, y0), the angle's orientation and the sides meeting there: (vertical, horizontal)
_CORNERS = ((0.0, 0.0), (L, 0.0), (0.0, L), (L, L))


def _corner_angles(x: Array, y: Array) -> Array:
    """``theta_c / (pi/2)`` for the four corners ``(4, ...)``: 0 on the horizontal side through the
    corner, 1 on the vertical one."""
    return jnp.stack([
        jnp.arctan2(y, x), jnp.arctan2(y, L - x), jnp.arctan2(L - y, x), jnp.arctan2(L - y, L - x),
    ]) / (math.pi / 2)


class HeatSolution(NamedTuple):
    """The series of the module docstring: a pytree of arrays.

    Attributes:
      jumps: ``(4,)`` corner jumps ``J_c`` (corners ``(0,0), (L,0), (0,L), (L,L)``).
      bilinear: ``(4,)`` ``(a, b, c, e)`` of ``B = a + b x + c y + e x y``.
      coef: ``(4, N)`` sine coefficients for the sides ``left, right, bottom, top``.
    """

    jumps: Array
    bilinear: Array
    coef: Array


def _corrections(sol: HeatSolution, x: Array, y: Array) -> Array:
    w = jnp.tensordot(sol.jumps, _corner_angles(x, y), axes=1)
    a, b, c, e = sol.bilinear
    return w + a + b * x + c * y + e * x * y


def solve(case: int, num_terms: int = NUM_TERMS, quad_nodes: int = QUAD_NODES) -> HeatSolution:
    """The series solution for boundary-condition set ``case`` (1, 2 or 3); float64 if enabled.

    Raises:
      ValueError: ``case`` not in ``CASES``.
    """
    if case not in BOUNDARY_CONDITIONS:
        raise ValueError(f"case must be one of {CASES}, got {case!r}")
    return _solve(int(case), int(num_terms), int(quad_nodes),
                  bool(jax.config.read("jax_enable_x64")))


@functools.lru_cache(maxsize=None)
def _solve(case, num_terms, quad_nodes, _x64):
    # compiled once (op-by-op dispatch of the quadrature takes ~10 s); evaluated eagerly and
    # returned as numpy arrays, so the solution is a constant even when first requested under a
    # trace (the objective solves on its first call, not when the registry is imported)
    with jax.ensure_compile_time_eval():
        sol = _solve_series(case, num_terms, quad_nodes)
    return jax.tree_util.tree_map(np.asarray, sol)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _solve_series(case, num_terms, quad_nodes):
    sides = BOUNDARY_CONDITIONS[case]
    dtype = jnp.result_type(float)
    f = lambda fn, t: fn(jnp.asarray(t, dtype))  # noqa: E731
    # corner jumps: vertical-side value minus horizontal-side value
    jumps = jnp.stack([
        f(sides.left, 0.0) - f(sides.bottom, 0.0),
        f(sides.right, 0.0) - f(sides.bottom, L),
        f(sides.left, L) - f(sides.top, 0.0),
        f(sides.right, L) - f(sides.top, L),
    ])
    # remaining corner values, read on the horizontal sides, where the own corner's angle is 0
    # (the other corners' angle functions are continuous there)
    def w_at(x, y):
        return jnp.tensordot(jumps, _corner_angles(jnp.asarray(x, dtype), jnp.asarray(y, dtype)),
                             axes=1)

    r00 = f(sides.bottom, 0.0) - w_at(0.0, 0.0)
    rl0 = f(sides.bottom, L) - w_at(L, 0.0)
    r0l = f(sides.top, 0.0) - w_at(0.0, L)
    rll = f(sides.top, L) - w_at(L, L)
    a = r00
    b = (rl0 - r00) / L
    c = (r0l - r00) / L
    e = (rll - rl0 - r0l + r00) / L**2
    sol0 = HeatSolution(jumps, jnp.stack([a, b, c, e]), jnp.zeros((4, num_terms), dtype))

    # midpoint rule in u (Fejer's first rule after the cosine substitution): O(Q) nodes and weights
    u = (jnp.arange(quad_nodes, dtype=dtype) + 0.5) * (math.pi / quad_nodes)
    wq = jnp.full_like(u, math.pi / quad_nodes)
    t = L * (1.0 - jnp.cos(u)) / 2.0
    dt = wq * L * jnp.sin(u) / 2.0
    zero, full = jnp.zeros_like(t), jnp.full_like(t, L)
    rho = jnp.stack([
        sides.left(t) - _corrections(sol0, zero, t),
        sides.right(t) - _corrections(sol0, full, t),
        sides.bottom(t) - _corrections(sol0, t, zero),
        sides.top(t) - _corrections(sol0, t, full),
    ])
    weighted = (2.0 / L) * rho * dt  # (4, Q)
    chunks = []
    for start in range(0, num_terms, _CHUNK):  # (chunk, Q) blocks of the sine basis
        n = jnp.arange(start + 1, min(start + _CHUNK, num_terms) + 1, dtype=dtype)
        chunks.append(weighted @ jnp.sin(jnp.outer(n, t) * (math.pi / L)).T)
    return sol0._replace(coef=jnp.concatenate(chunks, axis=1))


def _sinh_ratio(k: Array, a: Array) -> Array:
    """``sinh(k a) / sinh(k L)`` for ``0 <= a <= L``, ``k > 0``, without overflow."""
    return jnp.exp(k * (a - L)) * (-jnp.expm1(-2.0 * k * a)) / (-jnp.expm1(-2.0 * k * L))


def temperature(sol: HeatSolution, p: Array) -> Array:
    """``T(p)`` for one point ``p = (x, y)`` of the square; scalar."""
    x, y = p[0], p[1]
    num = sol.coef.shape[-1]
    k = jnp.arange(1, num + 1, dtype=p.dtype) * (math.pi / L)
    sx, sy = jnp.sin(k * x), jnp.sin(k * y)
    left = sol.coef[0] @ (sy * _sinh_ratio(k, L - x))
    right = sol.coef[1] @ (sy * _sinh_ratio(k, x))
    bottom = sol.coef[2] @ (sx * _sinh_ratio(k, L - y))
    top = sol.coef[3] @ (sx * _sinh_ratio(k, y))
    return _corrections(sol, x, y) + left + right + bottom + top


def objective(case: int) -> Callable[[Array], Array]:
    """``x (2,) -> -T(x)`` for boundary-condition set ``case`` (minimisation: the hottest point).

    The same function object for the same case, so problems built twice compile once.
    """
    if case not in BOUNDARY_CONDITIONS:
        raise ValueError(f"case must be one of {CASES}, got {case!r}")
    return _objective(int(case), bool(jax.config.read("jax_enable_x64")))


@functools.lru_cache(maxsize=None)
def _objective(case, _x64):
    def neg_temperature(x: Array) -> Array:
        sol = solve(case)  # numpy arrays, computed on the first call and cached
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        return -temperature(jax.tree_util.tree_map(lambda a: jnp.asarray(a, x.dtype), sol), x)

    neg_temperature.__name__ = f"heat_case{case}"
    neg_temperature.__doc__ = (f"Minus the steady-state temperature of boundary set {case} on "
                               "[0, 2 pi]^2 (ntkbo.benchmarks.heat).")
    return neg_temperature


def boundary_minimum(fn: Callable[[Array], Array], num: int = 4001) -> tuple[float, np.ndarray]:
    """``(min fn, argmin)`` over the boundary of ``[0, L]^2``: dense search on each side, refined by
    scipy's bounded scalar minimiser around the best grid point (the maximum principle puts the
    extremum of a harmonic function on the boundary)."""
    from scipy.optimize import OptimizeResult, minimize_scalar

    f1 = jax.jit(fn)
    fb = jax.jit(jax.vmap(fn))
    t = np.linspace(0.0, L, num)
    paths = [lambda s: np.stack([np.zeros_like(s), s], -1), lambda s: np.stack([np.full_like(s, L), s], -1),
             lambda s: np.stack([s, np.zeros_like(s)], -1), lambda s: np.stack([s, np.full_like(s, L)], -1)]
    best_val, best_x = np.inf, None
    h = t[1] - t[0]
    for path in paths:
        v = np.asarray(fb(jnp.asarray(path(t))))
        i = int(np.argmin(v))
        lo, hi = max(t[i] - h, 0.0), min(t[i] + h, L)
        res = minimize_scalar(lambda s: float(f1(jnp.asarray(path(np.array([s]))[0]))),
                              bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        res = cast(OptimizeResult, res)  # scipy types the result as object
        cand = [(float(v[i]), path(t[i:i + 1])[0]), (float(res.fun), path(np.array([res.x]))[0])]
        for val, xs in cand:
            if val < best_val:
                best_val, best_x = val, xs
    if best_x is None:
        raise ValueError("fn: no finite value below inf on the boundary of [0, L]^2")
    return best_val, best_x
