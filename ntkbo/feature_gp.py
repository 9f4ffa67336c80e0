"""The GP posterior under a feature kernel ``k(x, x') = g(x) . g(x')`` (the empirical NTK at
``theta_0``), in the forms NeuralBO's uncertainty ``sigma^2 = lam g^T U^-1 g`` takes: the dual
``t x t`` Cholesky factor of ``K + lam I`` and its rank-``q`` extension, the primal ``p x p``
factor of ``U = lam I + G^T G`` and its rank-one update, and the diagonal approximation of ``U``.

Shared by NeuralBO, Neural-CBO and NeuralUCB/TS; built on ``ntkbo.gp`` (jitter, triangular
solves, factor appends) and the per-layer factors of ``ntkbo.kernels.structured``.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ntkbo import data as D
from ntkbo import gp as G
from ntkbo import linalg
from ntkbo.kernels import structured as S

__all__ = ["DiagU", "cholesky_update", "dual_factor", "empirical_gram", "extend_dual_factor", "gram_factor",
           "gram_variance", "variance_diag", "variance_dual", "variance_primal"]

Array = jax.Array
Params = Any


class DiagU(NamedTuple):
    """The diagonal approximation of ``U = lam I + sum_i g_i g_i^T``, as a state keeps it
    (``NeuralBOState.u`` for ``uncertainty="diag"``, ``NeuralUCBState.u`` for ``u="diag"``):
    ``diag`` ``(p,)``, ``lam + sum_i g_i^2`` (:func:`variance_diag` takes it)."""

    diag: Array


def cholesky_update(r: Array, v: Array) -> Array:
    """Rank-one (or rank-``q``) update of an upper Cholesky factor: ``R'^T R' = R^T R + V^T V``.

    The standard ``O(p^2)`` rank-one algorithm (Golub and Van Loan, section 6.5.4) applied for each
    row of ``V`` in turn. Row ``k`` of ``R'`` depends only on row ``k`` of ``R`` and the running
    vectors, so it is one ``lax.scan`` over the rows of ``R`` with ``V`` as the carry and the new
    rows as outputs, whatever ``q`` (updating ``R`` in a loop carry would copy it at every step on
    CPU, ``O(p^3)``). Zero rows of ``V`` leave ``R`` unchanged.

    Args:
      r: ``(p, p)`` upper triangular with a positive diagonal.
      v: ``(p,)`` or ``(q, p)``.
    """
    p = r.shape[0]
    idx = jnp.arange(p)
    vs = jnp.reshape(v, (-1, p))

    def rotate(k, row, v):
        rkk, vk = row[k], v[k]
        rho = jnp.hypot(rkk, vk)
        c, s = rho / rkk, vk / rkk
        after = idx > k
        new = jnp.where(after, (row + s * v) / c, row)
        new = jnp.where(idx == k, rho, new)
        return new, jnp.where(after, c * v - s * new, v)

    def body(vs, row_k):
        row, k = row_k

        def one(j, carry):
            row, vs = carry
            row, vj = rotate(k, row, vs[j])
            return row, vs.at[j].set(vj)

        row, vs = jax.lax.fori_loop(0, vs.shape[0], one, (row, vs))
        return vs, row

    return jax.lax.scan(body, vs, (r, idx))[1]


def dual_factor(g_data: Array, mask: Array, lam, jitter=None) -> Array:
    """Lower Cholesky factor ``(C, C)`` of the masked ``[[K + (lam + j) I, 0], [0, I]]``,
    ``K = G G^T`` the empirical-NTK Gram matrix of the valid rows of ``g_data`` ``(C, p)``; ``j`` is
    ``ntkbo.gp``'s relative jitter (``1e-10`` times the mean of ``diag K`` in float64)."""
    return gram_factor(g_data @ g_data.T, mask, lam, jitter)


def gram_factor(k: Array, mask: Array, lam, jitter=None) -> Array:
    """``dual_factor`` from the Gram matrix ``k`` ``(C, C)`` itself (any way it was computed)."""
    both = mask[:, None] & mask[None, :]
    k = jnp.where(both, k, 0.0)
    kd = jnp.diagonal(k)
    jitter = G.default_jitter(k.dtype) if jitter is None else jitter
    scale = jnp.sum(kd) / jnp.maximum(jnp.sum(mask), 1)
    noise = lam + jitter * jnp.where(scale > 0, scale, 1.0)
    return linalg.cholesky(k + jnp.diag(jnp.where(mask, noise, 1.0)))


def variance_dual(g: Array, g_data: Array, mask: Array, chol: Array) -> Array:
    """``k(x, x) - k_X(x)^T (K + lam I)^-1 k_X(x)``, ``k(x, x') = g(x) . g(x')``: the GP posterior
    variance under the empirical NTK with noise ``lam`` (``ntkbo.gp.variance`` with that kernel).

    Args:
      g: ``(n, p)`` features of the points.
      g_data: ``(C, p)`` features of the buffer rows; rows where ``mask`` is False are ignored.
      mask: ``(C,)`` valid rows.
      chol: ``dual_factor(g_data, mask, lam)``.

    Returns:
      ``(n,)``, equal to ``lam g^T (lam I + G^T G)^-1 g`` (the primal form), clipped at 0.
    """
    return gram_variance(jnp.sum(g * g, axis=-1), g @ g_data.T, mask, chol)


def gram_variance(k_diag: Array, k_cross: Array, mask: Array, chol: Array) -> Array:
    """``variance_dual`` from the kernel values themselves: ``k(x, x)`` ``(n,)`` and the cross
    kernel ``k(x, X)`` ``(n, C)`` to the buffer rows (masked here)."""
    cross = jnp.where(mask[None, :], k_cross, 0.0)
    v = G.solve_lower(chol, cross.T)
    return jnp.maximum(k_diag - jnp.sum(v * v, axis=0), 0.0)


def empirical_gram(apply_fn, theta: Params, za: Array, zb: Array) -> Array:
    """``(na, nb)`` empirical NTK ``g(za) . g(zb)`` at ``theta`` of the MLP ``apply_fn`` (``network``'s;
    its ``.module``) by the per-layer factors of ``ntkbo.kernels.structured``, eq. (1) there."""
    return S.gram(S.mlp_factors(apply_fn.module, theta, za),
                  S.mlp_factors(apply_fn.module, theta, zb))


def extend_dual_factor(f: G.Factor, apply_fn, theta_feat: Params, z: Array, data: D.Data, start,
                       q: int, lam, jitter=None) -> G.Factor:
    """``dual_factor`` of the buffer by extending ``f``, its factor over the first ``start`` rows,
    by the ``q`` (static) rows written at ``start`` (``ntkbo.gp.factor_append`` with the kernel
    ``g(x) . g(x')`` at ``theta_feat``, ``empirical_gram``): ``O(C w + C^2 q)`` instead of
    ``O(C^2 w + C^3)``. Valid while the features are fixed (``features="static"``).

    Args:
      f: the factor of the rows before ``start`` (identity beyond).
      apply_fn: ``network``'s MLP; theta_feat: ``theta_0``.
      z: ``(C, d_in)`` the buffer's points as the network sees them (``embed``-ded).
      data: the buffer after the append (its ``y`` marks failed rows, its ``count`` the rows
        written); a batch the buffer did not take (``count != start + q``) leaves ``f`` as it is.

    Returns:
      The ``Factor`` of the first ``start + q`` rows; it equals ``dual_factor`` to rounding (the
      new rows' jitter is taken from the current mean of ``diag K``, which moves a little as rows
      are added: a relative ``1e-10`` in float64, ``1e-6`` in float32).
    """
    kernel = functools.partial(empirical_gram, apply_fn, theta_feat)
    new = G.factor_append(kernel, f, D.Data(z, data.y, data.count), start, q, lam, jitter=jitter)
    return G.Factor(jnp.where(data.count == start + q, new.chol, f.chol))


def variance_primal(g: Array, r: Array, lam) -> Array:
    """``lam g^T U^-1 g = lam |R^-T g|^2`` for ``U = R^T R``, ``R`` ``(p, p)`` upper triangular,
    ``g`` ``(n, p)``."""
    v = linalg.solve_triangular(r, g.T, lower=False, trans="T")
    return jnp.maximum(lam * jnp.sum(v * v, axis=0), 0.0)


def variance_diag(g: Array, u_diag: Array, lam) -> Array:
    """``lam sum_j g_j^2 / U_jj``, the diagonal approximation of ``U``; ``g`` ``(n, p)``."""
    return lam * jnp.sum(g * g / u_diag, axis=-1)
