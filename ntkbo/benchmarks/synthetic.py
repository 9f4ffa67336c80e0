"""Synthetic test functions as pure JAX, in the minimisation convention.

Every function maps one point ``x`` of shape ``(d,)`` to a scalar and works under ``jax.jit``,
``jax.vmap`` and ``jax.grad`` (square roots use a safe form whose gradient at 0 is 0, not NaN).
Use ``jax.vmap(fn)`` for batches. The dtype of the result follows ``x``.

Each docstring gives the formula, the standard domain, the known optimum and the reference. The
standard reference is S. Surjanovic and D. Bingham, *Virtual Library of Simulation Experiments:
Test Functions and Datasets*, https://www.sfu.ca/~ssurjano/optimization.html ("SFU" below).
High-precision optima are from DIRECTGOLib (L. Stripinis and R. Paulavicius, *DIRECTGOLib:
DIRECT Global Optimization test problems Library*, github.com/blockchain-group/DIRECTGOLib,
``Box/Classical/*.m``), which cross-checks SFU, Hedar (2005), Gavana's benchmark suite and
Jamil & Yang (2013), *A literature survey of benchmark functions for global optimization
problems*, IJMMNO 4(2):150-194. Where the seed papers use a different domain or form, the
docstring says so; ``ntkbo.benchmarks.get`` takes a ``bounds=`` override for the domains.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

# ----------------------------------------------------------------------------------------------
# helpers


def as_float(x: Array) -> Array:
    """``x`` as a jax array of a float dtype (an integer or bool array cast to the default
    float)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def safe_sqrt(s: Array) -> Array:
    """``sqrt(s)``, ``s >= 0``, with gradient 0 (not NaN) at ``s = 0``: the double-where trick."""
    positive = s > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, s, 1.0)), 0.0)


def _index(x: Array) -> Array:
    """``(1, 2, ..., d)`` in the dtype of ``x``."""
    return jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype)


# ----------------------------------------------------------------------------------------------
# any dimension


def ackley(x: Array) -> Array:
    r"""Ackley function.

    ``f(x) = -a exp(-b sqrt(mean_i x_i^2)) - exp(mean_i cos(c x_i)) + a + e``, with ``a = 20``,
    ``b = 0.2``, ``c = 2 pi``.

    Domain ``[-32.768, 32.768]^d`` (SFU; NeuralBO's synthetic experiments, Section 7.1).
    Neural-CBO's constrained Ackley uses ``[-5, 3]^5`` (the authors' code). Global minimum
    ``f(0) = 0``; ``f >= 0`` on all of ``R^d``. Reference: SFU, "Ackley Function".
    """
    x = as_float(x)
    a, b, c = 20.0, 0.2, 2.0 * math.pi
    r = safe_sqrt(jnp.mean(x**2))
    return -a * jnp.exp(-b * r) - jnp.exp(jnp.mean(jnp.cos(c * x))) + a + math.e


def levy(x: Array) -> Array:
    r"""Levy function.

    With ``w_i = 1 + (x_i - 1) / 4``:
    ``f(x) = sin^2(pi w_1) + sum_{i=1}^{d-1} (w_i - 1)^2 [1 + 10 sin^2(pi w_i + 1)]
    + (w_d - 1)^2 [1 + sin^2(2 pi w_d)]``.

    Domain ``[-10, 10]^d`` (SFU; NeuralBO, Section 7.1). Global minimum
    ``f(1, ..., 1) = 0``; ``f >= 0`` on ``R^d``. Reference: SFU, "Levy Function".
    """
    x = as_float(x)
    w = 1.0 + (x - 1.0) / 4.0
    head = jnp.sin(math.pi * w[0]) ** 2
    body = jnp.sum((w[:-1] - 1.0) ** 2 * (1.0 + 10.0 * jnp.sin(math.pi * w[:-1] + 1.0) ** 2))
    tail = (w[-1] - 1.0) ** 2 * (1.0 + jnp.sin(2.0 * math.pi * w[-1]) ** 2)
    return head + body + tail


def michalewicz_terms(x: Array, m: int = 10) -> Array:
    """The per-coordinate terms ``-sin(x_i) sin^{2m}(i x_i^2 / pi)`` of ``michalewicz``."""
    x = as_float(x)
    return -jnp.sin(x) * jnp.sin(_index(x) * x**2 / math.pi) ** (2 * m)


def michalewicz(x: Array, m: int = 10) -> Array:
    r"""Michalewicz function (steepness ``m = 10``).

    ``f(x) = -sum_{i=1}^d sin(x_i) sin^{2m}(i x_i^2 / pi)``.

    Domain ``[0, pi]^d`` (SFU; NeuralBO d = 10..100; PINN-BO d = 30, thesis Section 5.4.1).
    The function is separable, so its global minimum is the sum of ``d`` one-dimensional minima;
    ``ntkbo.benchmarks.get`` computes it that way for any ``d`` (``optima.separable_minimum``).
    Published values: ``-1.8013`` (d=2, at ``(2.20, 1.57)``), ``-4.687658`` (d=5), ``-9.66015``
    (d=10) (SFU); BoTorch gives ``-1.80130341`` at ``(2.20290552, 1.57079633)`` for d=2.
    Reference: SFU, "Michalewicz Function".
    """
    return jnp.sum(michalewicz_terms(x, m))


def rastrigin(x: Array) -> Array:
    r"""Rastrigin function.

    ``f(x) = 10 d + sum_i [x_i^2 - 10 cos(2 pi x_i)]``.

    Domain ``[-5.12, 5.12]^d`` (SFU; PINN-BO d = 20). GO-UCB uses ``[-5, 5]^20`` and maximises
    ``-f`` (GO-UCB, Section 6). Global minimum ``f(0) = 0``; ``f >= 0`` on ``R^d``.
    Reference: SFU, "Rastrigin Function".
    """
    x = as_float(x)
    return 10.0 * x.shape[-1] + jnp.sum(x**2 - 10.0 * jnp.cos(2.0 * math.pi * x))


def styblinski_tang_terms(x: Array) -> Array:
    """The per-coordinate terms ``(x_i^4 - 16 x_i^2 + 5 x_i) / 2`` of ``styblinski_tang``."""
    x = as_float(x)
    return 0.5 * (x**4 - 16.0 * x**2 + 5.0 * x)


def styblinski_tang(x: Array) -> Array:
    r"""Styblinski-Tang function.

    ``f(x) = (1/2) sum_i (x_i^4 - 16 x_i^2 + 5 x_i)``.

    Domain ``[-5, 5]^d`` (SFU; PINN-BO d = 10; GO-UCB d = 20, maximising ``-f``). Separable; the
    minimum is at ``x_i = -2.903534`` (the root of ``4t^3 - 32t + 5`` in ``[-5, 0]``) with
    ``f* = -39.166166 d`` (BoTorch's digits; SFU prints ``-39.16599 d``, which its own minimiser
    does not reproduce: ``f(-2.903534) / d = -39.166166``). ``get`` computes it numerically.
    Reference: SFU, "Styblinski-Tang Function".
    """
    return jnp.sum(styblinski_tang_terms(x))


def rosenbrock(x: Array) -> Array:
    r"""Rosenbrock function (``d >= 2``).

    ``f(x) = sum_{i=1}^{d-1} [100 (x_{i+1} - x_i^2)^2 + (x_i - 1)^2]``.

    Domain ``[-5, 10]^d`` (SFU; ``[-2.048, 2.048]^d`` is also common). Global minimum
    ``f(1, ..., 1) = 0``; ``f >= 0`` on ``R^d``. Reference: SFU, "Rosenbrock Function".
    """
    x = as_float(x)
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (x[:-1] - 1.0) ** 2)


def griewank(x: Array) -> Array:
    r"""Griewank function.

    ``f(x) = sum_i x_i^2 / 4000 - prod_i cos(x_i / sqrt(i)) + 1``.

    Domain ``[-600, 600]^d`` (SFU). Global minimum ``f(0) = 0``; ``f >= 0`` on ``R^d``.
    Reference: SFU, "Griewank Function".
    """
    x = as_float(x)
    return jnp.sum(x**2) / 4000.0 - jnp.prod(jnp.cos(x / jnp.sqrt(_index(x)))) + 1.0


def sphere(x: Array) -> Array:
    r"""Sphere function ``f(x) = sum_i x_i^2``.

    Domain ``[-5.12, 5.12]^d`` (SFU). Global minimum ``f(0) = 0``. Reference: SFU, "Sphere
    Function".
    """
    x = as_float(x)
    return jnp.sum(x**2)


def sum_of_squares(x: Array) -> Array:
    r"""Sum-of-squares (axis-parallel hyper-ellipsoid) function ``f(x) = sum_i i x_i^2``.

    Domain ``[-10, 10]^d`` (SFU). Global minimum ``f(0) = 0``. Reference: SFU, "Sum Squares
    Function".
    """
    x = as_float(x)
    return jnp.sum(_index(x) * x**2)


def dixon_price(x: Array) -> Array:
    r"""Dixon-Price function.

    ``f(x) = (x_1 - 1)^2 + sum_{i=2}^d i (2 x_i^2 - x_{i-1})^2``.

    Domain ``[-10, 10]^d`` (SFU). Global minimum 0 at ``x_i = 2^{-(2^i - 2) / 2^i}``; for
    ``d >= 2`` the sign of ``x_d`` is free, so there are two minimisers. ``f >= 0`` on ``R^d``.
    Reference: SFU, "Dixon-Price Function".
    """
    x = as_float(x)
    i = _index(x)
    return (x[0] - 1.0) ** 2 + jnp.sum(i[1:] * (2.0 * x[1:] ** 2 - x[:-1]) ** 2)


def cosine_mixture(x: Array) -> Array:
    r"""Cosine Mixture function, standard minimisation form.

    ``f(x) = sum_i x_i^2 - 0.1 sum_i cos(5 pi x_i)``.

    Domain ``[-1, 1]^d``. Global minimum ``f(0) = -0.1 d``; ``f >= -0.1 d`` on ``R^d``.
    References: Breiman & Cutler (1993) (as a maximisation of ``-f``; BoTorch ``Cosine8``:
    maximum 0.8 for d=8); Ali, Khompatraporn & Zabinsky (2005); Jamil & Yang (2013);
    DIRECTGOLib ``CosineMixture.m``.

    PINN-BO (thesis Section 5.4.1, ``phantrdat/pinn-bo`` ``objectives.py``) minimises the
    function with the *opposite* sign of the cosine term; that is ``cosine_mixture_pinnbo``.
    """
    x = as_float(x)
    return jnp.sum(x**2) - 0.1 * jnp.sum(jnp.cos(5.0 * math.pi * x))


def cosine_mixture_pinnbo_terms(x: Array) -> Array:
    """The per-coordinate terms ``x_i^2 + 0.1 cos(5 pi x_i)`` of ``cosine_mixture_pinnbo``."""
    x = as_float(x)
    return x**2 + 0.1 * jnp.cos(5.0 * math.pi * x)


def cosine_mixture_pinnbo(x: Array) -> Array:
    r"""Cosine Mixture as PINN-BO defines and minimises it.

    ``f(x) = 0.1 sum_i cos(5 pi x_i) + sum_i x_i^2`` on ``[-1, 1]^d`` (d = 50 in the thesis,
    thesis Section 5.4.1; the code ``objectives.Cosine_Mixture`` minimises exactly this). Its PDE
    is ``df/dx_i = 2 x_i - 0.5 pi sin(5 pi x_i)``.

    Unlike the standard form (``cosine_mixture``), ``x = 0`` is a local *maximum* of each term
    here. The function is separable; each term has two minimisers ``+-t*`` (``t* ~ 0.1849``,
    ``f* ~ -0.1260 d``), so there are ``2^d`` global minimisers; ``get`` computes ``f*``
    numerically and lists one.
    """
    return jnp.sum(cosine_mixture_pinnbo_terms(x))


def schwefel_terms(x: Array) -> Array:
    """The per-coordinate terms ``418.9829 - x_i sin(sqrt|x_i|)`` of ``schwefel``."""
    x = as_float(x)
    return 418.9829 - x * jnp.sin(safe_sqrt(jnp.abs(x)))


def schwefel(x: Array) -> Array:
    r"""Schwefel function.

    ``f(x) = 418.9829 d - sum_i x_i sin(sqrt|x_i|)``.

    Domain ``[-500, 500]^d`` (SFU).
    SFU gives ``f* = 0`` at ``x_i = 420.9687``; with the rounded constant 418.9829 the true
    minimum is ``1.27e-5 d`` (the one-dimensional maximum of ``t sin(sqrt t)`` is
    ``418.98288727...``), and ``get`` reports that computed value. Reference: SFU, "Schwefel
    Function".
    """
    return jnp.sum(schwefel_terms(x))


def goucb_f1(x: Array) -> Array:
    r"""GO-UCB's realisable network ``f_1`` (GO-UCB, Section 6), negated for minimisation.

    GO-UCB maximises ``f_1(x) = sum_{k=1}^{25} sigmoid(1^T x + 1) + 1 = 25 sigmoid(1^T x + 1) + 1``
    (a one-hidden-layer sigmoid network with every weight and bias equal to 1) on
    ``[-5, 5]^20``. Here ``f(x) = -f_1(x)``; it decreases in every coordinate, so the minimum on a
    box is at its upper corner: ``f(5, ..., 5) = -(25 sigmoid(5 d + 1) + 1)``, i.e. ``-26`` to
    double precision for d = 20.
    """
    x = as_float(x)
    return -(25.0 * jax.nn.sigmoid(jnp.sum(x) + 1.0) + 1.0)


# ----------------------------------------------------------------------------------------------
# fixed dimension


def branin(x: Array) -> Array:
    r"""Branin (Branin-Hoo) function, d = 2.

    ``f(x) = a (x_2 - b x_1^2 + c x_1 - r)^2 + s (1 - t) cos(x_1) + s`` with ``a = 1``,
    ``b = 5.1 / (4 pi^2)``, ``c = 5 / pi``, ``r = 6``, ``s = 10``, ``t = 1 / (8 pi)``.

    Domain ``[-5, 10] x [0, 15]`` (SFU; Neural-CBO, thesis Section 4.3). Global minimum
    ``s t = 5 / (4 pi) = 0.397887...`` (SFU: 0.397887) at ``(-pi, 12.275)``, ``(pi, 2.275)`` and
    ``(3 pi, 2.475)`` (SFU: 9.42478): there the square vanishes and ``cos(x_1) = -1``, and
    ``f >= s t`` on all of ``R^2``. Reference: SFU, "Branin Function".
    """
    x = as_float(x)
    b, c, r, s, t = 5.1 / (4.0 * math.pi**2), 5.0 / math.pi, 6.0, 10.0, 1.0 / (8.0 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1.0 - t) * jnp.cos(x[0]) + s


_HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_HARTMANN3_A = np.array(
    [[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]]
)
_HARTMANN3_P = np.array(
    [
        [0.36890, 0.11700, 0.26730],
        [0.46990, 0.43870, 0.74700],
        [0.10910, 0.87320, 0.55470],
        [0.03815, 0.57430, 0.88280],
    ]
)
_HARTMANN6_A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
_HARTMANN6_P = 1e-4 * np.array(
    [
        [1312.0, 1696.0, 5569.0, 124.0, 8283.0, 5886.0],
        [2329.0, 4135.0, 8307.0, 3736.0, 1004.0, 9991.0],
        [2348.0, 1451.0, 3522.0, 2883.0, 3047.0, 6650.0],
        [4047.0, 8828.0, 8732.0, 5743.0, 1091.0, 381.0],
    ]
)


def _hartmann(x: Array, a: np.ndarray, p: np.ndarray) -> Array:
    x = as_float(x)
    aj, pj = jnp.asarray(a, x.dtype), jnp.asarray(p, x.dtype)
    alpha = jnp.asarray(_HARTMANN_ALPHA, x.dtype)
    return -jnp.sum(alpha * jnp.exp(-jnp.sum(aj * (x - pj) ** 2, axis=-1)))


def hartmann3(x: Array) -> Array:
    r"""Hartmann 3-D function.

    ``f(x) = -sum_{i=1}^4 alpha_i exp(-sum_{j=1}^3 A_ij (x_j - P_ij)^2)``, ``alpha = (1, 1.2, 3,
    3.2)``, ``A`` and ``P`` as in Dixon & Szego (1978), with ``P_41 = 0.03815``.

    Domain ``[0, 1]^3``. Global minimum ``-3.86278214782076`` at ``(0.114614, 0.555649,
    0.852547)`` (SFU minimiser; value from DIRECTGOLib ``Hartman3.m``; SFU prints -3.86278).
    Note: SFU's and BoTorch's ``P`` matrix has ``P_41 = 0.0381``; with it the minimum moves to
    ``-3.8627797873`` at ``(0.114589, 0.555649, 0.852547)``, which disagrees with SFU's own
    minimiser. We use the original ``0.03815``, which reproduces the published minimiser.
    """
    return _hartmann(x, _HARTMANN3_A, _HARTMANN3_P)


def hartmann6(x: Array) -> Array:
    r"""Hartmann 6-D function.

    ``f(x) = -sum_{i=1}^4 alpha_i exp(-sum_{j=1}^6 A_ij (x_j - P_ij)^2)``, ``alpha = (1, 1.2, 3,
    3.2)``, ``A``, ``P`` as in SFU (``P = 1e-4 [[1312, 1696, 5569, 124, 8283, 5886], ...]``).

    Domain ``[0, 1]^6`` (SFU; Neural-CBO, thesis Section 4.3; the Be Greedy paper).
    Global minimum ``-3.32236801141551`` at ``(0.20168951105, 0.15001069194, 0.47687397419,
    0.27533243047, 0.31165161660, 0.65730053409)`` (DIRECTGOLib ``Hartman6.m``; SFU rounds
    these to -3.32237 at (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)).
    """
    return _hartmann(x, _HARTMANN6_A, _HARTMANN6_P)


# Shekel's ten wells a_i (rows) and widths c_i, as in Dixon & Szego (1978). SFU and BoTorch list
# a_7 = (5, 3, 5, 3); the original (and DIRECTGOLib, Hedar) has a_7 = (5, 5, 3, 3). They agree on
# f(4, 4, 4, 4) but not on the exact minimum for m = 7, 10 (e.g. -10.536443 vs -10.536410).
_SHEKEL_A = np.array(
    [
        [4.0, 4.0, 4.0, 4.0],
        [1.0, 1.0, 1.0, 1.0],
        [8.0, 8.0, 8.0, 8.0],
        [6.0, 6.0, 6.0, 6.0],
        [3.0, 7.0, 3.0, 7.0],
        [2.0, 9.0, 2.0, 9.0],
        [5.0, 5.0, 3.0, 3.0],
        [8.0, 1.0, 8.0, 1.0],
        [6.0, 2.0, 6.0, 2.0],
        [7.0, 3.6, 7.0, 3.6],
    ]
)
_SHEKEL_C = np.array([0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5])


def shekel(x: Array, m: int = 10) -> Array:
    r"""Shekel function with ``m`` wells, d = 4.

    ``f(x) = -sum_{i=1}^m (sum_{j=1}^4 (x_j - a_ij)^2 + c_i)^{-1}``, with the wells ``a_i`` and
    widths ``c_i`` of Dixon & Szego (1978) (``_SHEKEL_A``, ``_SHEKEL_C``).

    Domain ``[0, 10]^4``. Global minima (DIRECTGOLib ``Shekel5/7/10.m``; SFU rounds them to
    -10.1532, -10.4029, -10.5364 at (4, 4, 4, 4)):

    - m = 5: ``-10.1531996790582`` at ``(4.000037153, 4.000133277, 4.000037153, 4.000133277)``;
    - m = 7: ``-10.4029405668187`` at ``(4.000572916, 4.000689366, 3.999489709, 3.999606159)``;
    - m = 10: ``-10.5364098166920`` at ``(4.000746532, 4.000592934, 3.999663399, 3.999509800)``.

    SFU and BoTorch transpose the seventh well to ``(5, 3, 5, 3)``; that changes the exact minima
    for m = 7, 10 in the fifth decimal (BoTorch: -10.536443 for m = 10).
    """
    x = as_float(x)
    a = jnp.asarray(_SHEKEL_A[:m], x.dtype)
    c = jnp.asarray(_SHEKEL_C[:m], x.dtype)
    return -jnp.sum(1.0 / (jnp.sum((x - a) ** 2, axis=-1) + c))


def shekel5(x: Array) -> Array:
    """Shekel function with ``m = 5`` wells (Dixon & Szego's S5); see ``shekel``."""
    return shekel(x, 5)


def shekel7(x: Array) -> Array:
    """Shekel function with ``m = 7`` wells (Dixon & Szego's S7); see ``shekel``."""
    return shekel(x, 7)


def shekel10(x: Array) -> Array:
    """Shekel function with ``m = 10`` wells (Dixon & Szego's S10); see ``shekel``."""
    return shekel(x, 10)


def dropwave(x: Array) -> Array:
    r"""Drop-Wave function, d = 2.

    ``f(x) = -(1 + cos(12 ||x||)) / (0.5 ||x||^2 + 2)``.

    Domain ``[-5.12, 5.12]^2`` (SFU; PINN-BO, thesis Section 5.4.1). Global minimum
    ``f(0) = -1``; ``f >= -1`` on ``R^2``. Reference: SFU, "Drop-Wave Function".
    """
    x = as_float(x)
    r2 = jnp.sum(x**2)
    return -(1.0 + jnp.cos(12.0 * safe_sqrt(r2))) / (0.5 * r2 + 2.0)


def simionescu(x: Array) -> Array:
    r"""Simionescu objective, d = 2, *without* its constraint: ``f(x) = 0.1 x_1 x_2``.

    Domain ``[-1.25, 1.25]^2`` (Simionescu & Beale (2002); Neural-CBO, thesis Section 4.3).
    Unconstrained, the minimum on the box is ``-0.15625`` at the corners ``(1.25, -1.25)`` and
    ``(-1.25, 1.25)``. The benchmark is constrained by
    ``x_1^2 + x_2^2 <= (r_T + r_S cos(n arctan(x_1 / x_2)))^2`` with ``r_T = 1``, ``r_S = 0.2``,
    ``n = 8``, which gives ``f* = -0.072`` at ``+-(0.84852813, -0.84852813)``; the constraint is
    not part of this ``Problem`` yet.
    """
    x = as_float(x)
    return 0.1 * x[0] * x[1]


def six_hump_camel(x: Array) -> Array:
    r"""Six-Hump Camel function, d = 2.

    ``f(x) = (4 - 2.1 x_1^2 + x_1^4 / 3) x_1^2 + x_1 x_2 + (-4 + 4 x_2^2) x_2^2``.

    Domain ``[-3, 3] x [-2, 2]`` (SFU). Global minimum ``-1.03162845348988`` at
    ``+-(0.0898420137, -0.7126564020)`` (DIRECTGOLib ``Camel6.m``; SFU: -1.0316 at
    +-(0.0898, -0.7126)). Reference: SFU, "Six-Hump Camel Function".
    """
    x = as_float(x)
    x1, x2 = x[0], x[1]
    return (4.0 - 2.1 * x1**2 + x1**4 / 3.0) * x1**2 + x1 * x2 + (-4.0 + 4.0 * x2**2) * x2**2


def eggholder(x: Array) -> Array:
    r"""Eggholder function, d = 2.

    ``f(x) = -(x_2 + 47) sin(sqrt|x_2 + x_1/2 + 47|) - x_1 sin(sqrt|x_1 - (x_2 + 47)|)``.

    Domain ``[-512, 512]^2`` (SFU). Global minimum ``-959.640662720851`` at
    ``(512, 404.231805138682)``, on the boundary ``x_1 = 512`` (DIRECTGOLib ``Eggholder.m``; SFU:
    -959.6407 at (512, 404.2319)). Reference: SFU, "Eggholder Function".
    """
    x = as_float(x)
    x1, x2 = x[0], x[1]
    return -(x2 + 47.0) * jnp.sin(safe_sqrt(jnp.abs(x2 + x1 / 2.0 + 47.0))) - x1 * jnp.sin(
        safe_sqrt(jnp.abs(x1 - (x2 + 47.0)))
    )


def goldstein_price(x: Array) -> Array:
    r"""Goldstein-Price function, d = 2.

    ``f(x) = [1 + (x_1 + x_2 + 1)^2 (19 - 14 x_1 + 3 x_1^2 - 14 x_2 + 6 x_1 x_2 + 3 x_2^2)]
    [30 + (2 x_1 - 3 x_2)^2 (18 - 32 x_1 + 12 x_1^2 + 48 x_2 - 36 x_1 x_2 + 27 x_2^2)]``.

    Domain ``[-2, 2]^2`` (SFU). Global minimum ``f(0, -1) = 3``. Reference: SFU,
    "Goldstein-Price Function".
    """
    x = as_float(x)
    x1, x2 = x[0], x[1]
    fact1 = 1.0 + (x1 + x2 + 1.0) ** 2 * (
        19.0 - 14.0 * x1 + 3.0 * x1**2 - 14.0 * x2 + 6.0 * x1 * x2 + 3.0 * x2**2
    )
    fact2 = 30.0 + (2.0 * x1 - 3.0 * x2) ** 2 * (
        18.0 - 32.0 * x1 + 12.0 * x1**2 + 48.0 * x2 - 36.0 * x1 * x2 + 27.0 * x2**2
    )
    return fact1 * fact2


def beam_deflection(x: Array) -> Array:
    r"""PINN-BO's non-uniform Euler-Bernoulli beam displacement, d = 1 (thesis Section 5.4.3.2).

    ``w(x) = sin(20 x) e^{2x} + sin(4 pi e^{2x}) + 0.4 x^3 + 0.2 x^2 + 6`` on ``[0, 1]``,
    minimised. This is the closed-form manufactured solution the code (``objectives.
    BeamDeflection``) uses as the black box; it solves ``(EI(x) w'')'' = e^x`` with
    ``EI = e^x / w''``. The minimum (about ``0.057604`` at ``x ~ 0.88370``) is
    computed numerically by ``get``. The PDE operator is not part of this ``Problem`` yet.
    """
    x = as_float(x)
    t = x[0]
    e2 = jnp.exp(2.0 * t)
    return jnp.sin(20.0 * t) * e2 + jnp.sin(4.0 * math.pi * e2) + 0.4 * t**3 + 0.2 * t**2 + 6.0


def beam_deflection_terms(x: Array) -> Array:
    """``beam_deflection`` as a one-term separable function (for ``optima.separable_minimum``)."""
    return beam_deflection(x)[None]
