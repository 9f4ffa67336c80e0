"""The observations as every surrogate sees them: inputs in the unit cube, outputs standardised.

Every model in ``ntkbo.algorithms`` works on the box mapped to ``[0, 1]^d`` (:func:`to_unit`,
:func:`from_unit`) and on the observations standardised over the valid rows of the fixed-capacity
buffer (:func:`standardize`); the neural models feed the unit sphere (:func:`to_sphere`). The block
that opens their ``suggest``/``update`` is :func:`unit_view`; :func:`best_points` gives the best
observed points the acquisition optimiser starts from. :func:`standardized_data` is the buffer as the
exact-GP models see it (``ntkbo.algorithms.gp_bo``, ``ntkbo.algorithms.constrained_ei``).

**Output transforms** (:func:`transform_outputs`, ``y_transform=`` of the algorithms that take it):
before standardisation the observations may be warped by a strictly increasing map, so that the
model spends its capacity near the best values instead of on the largest ones (an *output warping*:
Vizier's GP bandit warps its outputs by default, BoTorch offers ``Log`` and ``Power`` outcome
transforms). None of the seed papers warps its outputs; it is an option, off by default.

* ``"standardize"`` (default): no warp.
* ``"log"``: ``log((y - y_min) / (y_max - y_min) + c)`` with ``c = LOG_OFFSET = 0.01`` and
  ``y_min``, ``y_max`` over the valid rows: the best value maps to ``log c``, the worst to
  ``log(1 + c)``; differences within the best 1% of the observed range are spread over several
  units. Invariant under ``y -> a y + b`` with ``a > 0``.
* ``"rank"``: ``Phi^-1((r + 1/2) / n)`` with ``r`` the rank of ``y`` among the ``n`` valid rows
  (0 for the smallest, ties share their mean rank): the normal scores of a Gaussian copula.
  Invariant under every strictly increasing map of ``y``.

Why: Branin's values range from 0.40 to about 300 on its box, and after standardisation the points
within 1 of its minimum differ by about 0.02 standard deviations, so a network fit by a few hundred
gradient steps cannot rank them; measured on ``tests/beats_random.py``'s protocol (README
"Status"), the log warp is what made NeuralUCB, NeuralTS and DNGO's EI beat random search on Branin.

Sign convention: ntkbo minimises ``f``, so the *best* points are those of the smallest observed
values.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri

from ntkbo import data as D
from ntkbo import gp as G

Array = jax.Array

__all__ = ["LOG_OFFSET", "UnitView", "Y_TRANSFORMS", "best_points", "embed", "from_unit",
           "input_dim", "kernel_mean", "output_units", "standardize",
           "standardized_data", "to_sphere", "to_unit", "transform_outputs", "unit_box",
           "unit_view"]

#: The output transforms of :func:`transform_outputs` (module docstring).
Y_TRANSFORMS = ("standardize", "log", "rank")
#: ``c`` of the ``"log"`` transform, as a fraction of the observed range.
LOG_OFFSET = 0.01


def to_unit(x: Array, bounds: Array) -> Array:
    """Points ``x`` ``(..., d)`` of the box ``bounds`` ``(2, d)`` mapped affinely onto
    ``[0, 1]^d``."""
    return (x - bounds[0]) / (bounds[1] - bounds[0])


def from_unit(z: Array, bounds: Array) -> Array:
    """Unit-cube points ``z`` ``(..., d)`` mapped back to the box ``bounds`` ``(2, d)``, clipped
    to it (the inverse of :func:`to_unit` up to rounding)."""
    return jnp.clip(bounds[0] + z * (bounds[1] - bounds[0]), bounds[0], bounds[1])


def to_sphere(z: Array) -> Array:
    """Unit-cube points ``z`` ``(n, d)`` onto the unit sphere of ``R^(d+1)``: ``u / |u|`` with
    ``u = (2 z - 1, 1)``, ``(n, d + 1)``. The box centre is the pole and no point maps to the
    origin, the input domain of the NTK theory (unit-norm inputs); used by the neural models, whose
    bias-free ReLU networks are positively homogeneous in their raw input."""
    u = jnp.concatenate([2.0 * z - 1.0, jnp.ones_like(z[..., :1])], axis=-1)
    return u / jnp.linalg.norm(u, axis=-1, keepdims=True)


def input_dim(d: int, input_map: str) -> int:
    """The network's input dimension for a ``d``-dimensional box under ``input_map``."""
    return d + 1 if input_map == "sphere" else d


def embed(z: Array, input_map: str) -> Array:
    """The network's input for unit-cube points ``z`` ``(n, d)``: ``to_sphere(z)`` ``(n, d + 1)``
    for ``"sphere"``, ``z`` itself for ``"cube"``, ``2 z - 1`` (the box mapped to ``[-1, 1]^d``,
    the authors' code's normalisation) for ``"centered"``.

    Inputs are mapped to the unit cube ``[0, 1]^d`` (``z = (x - lower) / (upper - lower)``) and
    then, by default (``input_map="sphere"``), onto the unit sphere of ``R^(d+1)``: the network sees
    ``u / |u|`` with ``u = (2 z - 1, 1)`` (``to_sphere``; the box centre is
    the pole), so ``d + 1`` inputs and ``W_std="paper"`` is ``(sqrt(d + 1), 1, ...)``. Why: the
    theory assumes unit-norm inputs (``|x| = 1``, or a shell ``a <= |x| <= b``, Sections 3.1 and 5),
    and a bias-free ReLU network is positively homogeneous, ``h(c z) = c h(z)``. On the raw cube
    (``input_map="cube"``) that makes the model ``|z| F(z / |z|)``: linear along every ray from the
    lower corner, where ``g(0) = 0``, ``h(0) = 0`` and ``sigma(0) = 0`` (the prior variance
    ``k(z, z) = |z|^2`` grows away from that corner), so wherever it predicts below the mean its
    minimum along the ray is on the far boundary of the box. On the sphere the prior variance is the
    same everywhere (``k(u, u) = 1``) and the kernel depends on the angle only. On Hartmann-6 the
    sphere beat the cube and random search (docs/decisions.md, 2026-11-22). Pass ``b_std`` (e.g.
    ``0.1``) to add biases, which also removes the homogeneity; the authors' code maps to
    ``[-1, 1]^d`` and uses biases. Outputs are standardised over the valid observations
    (``standardize_y=True``; mean 0, std 1) before training, so ``lam`` (the noise variance relative
    to the prior ``k(x, x) = 1``) and ``nu`` act on a fixed scale whatever the units of ``f``; the
    paper does not say, and the authors' code does not standardise (``standardize_y=False``).
    """
    if input_map == "sphere":
        return to_sphere(z)
    return 2.0 * z - 1.0 if input_map == "centered" else z


def embed_inputs(z: Array, input_map: str = "sphere") -> Array:
    """The network's input for unit-cube points ``z = (x - lower) / (upper - lower)`` ``(n, d)``.

    The paper's network (Arora et al. 2019's construction, Section 2) is ``f(x) = W_{L+1} sqrt(2/m)
    relu(... sqrt(2/m) relu(W_1 x))``, all ``W ~ N(0, 1)``, no biases, for ``x`` in the unit ball;
    its NTK is ``Theta(x, x) = (L + 1) |x|^2``. It is ntkbo's MLP (``ntkbo.kernels.mlp``, NTK
    parameterisation) with ``W_std = (1, sqrt2, ..., sqrt2)`` on ``sqrt(fan_in) x``
    (``W_std="paper"``). The paper's analysis needs the unit *sphere* (footnote 3, for
    ``gamma_T``), the main text the ball and Appendix E ``[0, 1]^d``, so the placement of the box
    is open:

    * ``"sphere"`` (default): ``sqrt(d + 1) u / |u|`` with ``u = (2 z - 1, 1)``, ``(n, d + 1)``:
      the unit sphere in ``d + 1`` dimensions (times ``sqrt(fan_in)``, which the first layer's
      ``W_std = 1`` divides out: the first layer's pre-activations are those of ``embed``'s
      ``"sphere"``, the same map); the centre of the box is the pole, the corners at angle
      ``atan(sqrt d)`` from it. The prior variance is ``L + 1`` everywhere.
    * ``"cube"``: ``z`` itself, ``(n, d)``, which the first layer sees as ``z / sqrt(d)``, a point
      of the unit ball (the authors' code: inputs in ``[0, 1]^d``). The bias-free network is then
      positively homogeneous, ``f(c x) = c f(x)``: every sample is linear along rays from the
      lower corner, where the prior variance ``(L + 1) |z|^2 / d`` vanishes and every sample
      equals the data mean; it was worse than random search on Branin (docs/decisions.md,
      2026-11-22).
    """
    if input_map == "cube":
        return z
    return jnp.sqrt(z.shape[-1] + 1.0) * to_sphere(z)


def standardize(y: Array, mask: Array) -> tuple[Array, Array, Array]:
    """``(y - mean) / std`` over the valid rows (std 1 with fewer than 2 rows); padding set to 0.

    Safe for every finite ``y`` of its dtype: when the largest ``|y|`` of the valid rows, ``a``, is
    so large that the squared deviations could overflow (``a > sqrt(max / C) / 2``, ``C`` the
    capacity) or so small that they could underflow (``a < sqrt(tiny) / eps``: ``1e-12`` in
    float32), the same formula is computed on ``y / a`` (exact: ``|y / a| <= 1``) and ``mean`` and
    ``std`` are scaled back (``std`` saturates at the dtype's largest finite value). Elsewhere, the
    usual path is taken, bit for bit the plain formula. Rows outside ``mask`` (padding, failed
    observations with a non-finite ``y``) never enter the sums.

    Args:
      y: ``(C,)`` observations; mask: ``(C,)`` bool, the valid rows.

    Returns:
      ``(ys (C,), mean (), std ())``: the standardised values (0 on rows outside ``mask``), and the
      mean and the (unbiased, ``n - 1``) standard deviation of the valid rows.
    """
    fin = jnp.finfo(jnp.result_type(y, float))
    n_valid = jnp.sum(mask)
    n = jnp.maximum(n_valid, 1)

    def moments(v):
        mean = jnp.sum(jnp.where(mask, v, 0.0)) / n
        var = jnp.sum(jnp.where(mask, (v - mean) ** 2, 0.0)) / jnp.maximum(n - 1, 1)
        spread = (n_valid > 1) & (var > 0)
        return mean, jnp.where(spread, jnp.sqrt(var), 1.0), spread

    mean, std, _ = moments(y)
    a = jnp.max(jnp.where(mask, jnp.abs(y), 0.0))
    low = float(np.sqrt(fin.tiny) / fin.eps)
    high = float(np.sqrt(float(fin.max) / y.shape[-1]) / 2)
    plain = (a == 0) | ((a >= low) & (a <= high))
    # Scale by 2^-e (a = m 2^e), in two exact steps that stay normal numbers: dividing by ``a``
    # itself is not safe, XLA may multiply by 1/a, which is subnormal (flushed to 0) for a > 1e38.
    e = jnp.frexp(jnp.where(plain, 1.0, a).astype(mean.dtype))[1]
    one = jnp.ones((), mean.dtype)
    s1, s2 = jnp.ldexp(one, -(e // 2)), jnp.ldexp(one, -(e - e // 2))
    r1, r2 = jnp.ldexp(one, e // 2), jnp.ldexp(one, e - e // 2)
    u = jnp.where(mask, y, 0.0) * s1 * s2  # |u| < 1
    mean_s, std_s, spread_s = moments(u)
    ys = jnp.where(plain, (y - mean) / std, (u - mean_s) / std_s)
    mean = jnp.where(plain, mean, mean_s * r1 * r2)
    std = jnp.where(plain | ~spread_s, std, jnp.minimum(std_s * r1 * r2, fin.max))
    return jnp.where(mask, ys, 0.0), mean, std


def standardized_data(data: D.Data, bounds: Array) -> tuple[D.Data, Array, Array]:
    """The buffer ``data`` (capacity ``C``, dimension ``d``) as an exact GP sees it.

    Returns ``(D.Data(to_unit(x), ys, count), mean, std)``: inputs in the unit cube ``(C, d)``;
    ``ys`` ``(C,)`` the :func:`standardize`-d observations, 0 on padding and NaN on failed rows, so
    that ``ntkbo.data.mask`` (hence ``ntkbo.gp.fit``) leaves the failed rows out; ``mean``, ``std``
    the scalars that map ``ys`` back, ``y = mean + std * ys``.
    """
    m = D.mask(data)
    ys, mean, std = standardize(data.y, m)
    ys = jnp.where(D.failed(data), jnp.nan, ys)
    return D.Data(to_unit(data.x, bounds), ys, data.count), mean, std


def transform_outputs(y: Array, mask: Array, method: str = "standardize") -> Array:
    """The observations warped by ``method`` (one of :data:`Y_TRANSFORMS`, module docstring).

    Args:
      y: ``(C,)`` observations; mask: ``(C,)`` bool, the valid rows; method: a Python string.

    Returns:
      ``(C,)`` the warped values on the valid rows (strictly increasing in ``y`` among them; equal
      values stay equal), 0 on padding rows. ``"standardize"`` returns ``y`` unchanged there.
    """
    if method == "standardize":
        return jnp.where(mask, y, 0.0)
    if method == "log":
        lo = jnp.min(jnp.where(mask, y, jnp.inf))
        hi = jnp.max(jnp.where(mask, y, -jnp.inf))
        span = jnp.where(hi > lo, hi - lo, 1.0)
        safe = jnp.where(mask, y, lo)  # padding rows would give the log of a negative number
        frac = (safe - lo) / span
        # A range wider than the dtype's largest value (hi - lo = inf): the same ratio in 16ths
        # (exact scalings; 1 / (span / 16) stays a normal number, unlike 1 / (span / 2)).
        half = (safe / 16 - lo / 16) / jnp.where(hi > lo, hi / 16 - lo / 16, 1.0)
        frac = jnp.where(jnp.isfinite(span), frac, half)
        return jnp.where(mask, jnp.log(frac + LOG_OFFSET), 0.0)
    if method == "rank":
        n = jnp.maximum(jnp.sum(mask), 1)
        both = mask[:, None] & mask[None, :]
        below = jnp.sum(both & (y[None, :] < y[:, None]), axis=1)
        ties = jnp.sum(both & (y[None, :] == y[:, None]), axis=1)
        rank = below + 0.5 * (ties - 1)  # 0-based mid-rank
        return jnp.where(mask, ndtri((rank + 0.5) / n), 0.0)
    raise ValueError(f"y_transform must be one of {Y_TRANSFORMS}, got {method!r}")


def output_units(mu: Array, data: D.Data, y_transform: str = "standardize") -> Array:
    """A model's mean ``mu`` ``(n,)`` on the scale it was trained on (the observations of the
    buffer ``data`` warped by ``y_transform``, then standardised: :func:`unit_view`'s ``ys``)
    mapped back to ``y``'s units: ``t = mean + std * mu`` with the :func:`standardize` moments of
    the warped valid rows, then the warp undone, ``"log"``: ``y = y_min + (y_max - y_min)
    (exp(t) - c)``. The ``"rank"`` warp has no inverse between the observed values: ``t``, the
    normal score, is returned (increasing in ``y``, so its minimiser is the model's)."""
    mask = D.mask(data)
    _, mean, std = standardize(transform_outputs(data.y, mask, y_transform), mask)
    t = mean + std * mu
    if y_transform != "log":
        return t
    lo = jnp.min(jnp.where(mask, data.y, jnp.inf))
    hi = jnp.max(jnp.where(mask, data.y, -jnp.inf))
    return lo + jnp.where(hi > lo, hi - lo, 1.0) * (jnp.exp(t) - LOG_OFFSET)


def kernel_mean(kernel, data: D.Data, bounds: Array, noise, x: Array, embed=lambda z: z,
                jitter=None) -> Array:
    """The posterior mean ``(n,)`` of a zero-mean GP with kernel ``kernel`` (on the embedded
    unit-cube inputs ``e = embed(to_unit(., bounds))``) and noise variance ``noise``, conditioned
    on the standardised valid observations ``ys`` of the buffer ``data``, at ``x`` ``(n, d)``, in
    ``y``'s units: ``mean + std k(e(x), E) (K + noise I)^-1 ys`` (Rasmussen and Williams eq.
    2.25; ``ntkbo.gp.fit`` with its masking and ``jitter``). The mean the members of STO-BNTS
    and Neural Greedy sample around, with the NTK as ``kernel``."""
    m = D.mask(data)
    ys, mean, std = standardize(data.y, m)
    rows = D.Data(embed(to_unit(data.x, bounds)), jnp.where(m, ys, jnp.nan), data.count)
    post = G.fit(kernel, rows, noise, jitter=jitter)
    return mean + std * G.mean(kernel, post, embed(to_unit(jnp.asarray(x, bounds.dtype), bounds)))


def best_points(z: Array, ys: Array, mask: Array, k: int) -> Array:
    """The ``k`` best (smallest ``ys``) valid rows of ``z``, best first, for the acquisition
    optimiser's starts.

    Args:
      z: ``(C, d)`` points; ys: ``(C,)`` their values (any monotone transform of the observations:
        raw or standardised); mask: ``(C,)`` bool, the valid rows; k: a Python int.

    Returns:
      ``(min(k, C), d)``: the rows of the ``k`` smallest valid values (ties: the lower index first);
      where fewer than ``k`` rows are valid, the remaining rows are NaN (``maximize_acquisition``
      ignores NaN starts).
    """
    k = min(k, z.shape[0])
    _, idx = jax.lax.top_k(-jnp.where(mask, ys, jnp.inf), k)
    return jnp.where(mask[idx][:, None], z[idx], jnp.nan)


def unit_box(d: int, dtype) -> Array:
    """The unit cube ``[0, 1]^d`` as a box ``(2, d)`` (rows: zeros, ones) of ``dtype``."""
    return jnp.stack([jnp.zeros(d, dtype), jnp.ones(d, dtype)])


class UnitView(NamedTuple):
    """The observations of a buffer of capacity ``C`` in dimension ``d``, as the models see them.

    Attributes:
      mask: ``(C,)`` bool, the valid rows (``ntkbo.data.mask``).
      z: ``(C, d)`` the inputs in the unit cube, 0 on padding rows.
      ys: ``(C,)`` the standardised (:func:`standardize`) observations, after the output
        transform (:func:`transform_outputs`), 0 on padding rows.
      unit: ``(2, d)`` the unit box (:func:`unit_box`) in the bounds' dtype.
    """

    mask: Array
    z: Array
    ys: Array
    unit: Array


def unit_view(data: D.Data, bounds: Array, y_transform: str = "standardize") -> UnitView:
    """:class:`UnitView` of the buffer ``data`` (inputs ``(C, d)``) in the box ``bounds``
    ``(2, d)``: ``mask``, ``z = where(mask, to_unit(x), 0)``,
    ``ys = standardize(transform_outputs(y, mask, y_transform), mask)[0]`` and the unit box of
    ``bounds.dtype``."""
    mask = D.mask(data)
    z = jnp.where(mask[:, None], to_unit(data.x, bounds), 0.0)
    ys = standardize(transform_outputs(data.y, mask, y_transform), mask)[0]
    return UnitView(mask, z, ys, unit_box(bounds.shape[-1], bounds.dtype))
