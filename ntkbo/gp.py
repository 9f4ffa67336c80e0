"""Exact Gaussian-process posteriors shared by every kernel model in ntkbo.

A *kernel* here is any function ``k(x1, x2) -> (n1, n2)``; ``ntkbo.kernels.as_kernel`` turns an ntkbo
or neural-tangents ``kernel_fn`` into one. Observations come in a fixed-capacity ``ntkbo.data.Data``
buffer; rows past ``count`` are masked so the amount of padding cannot change any result: the padded
Gram matrix is block-diagonal ``[[K + lam I, 0], [0, I]]`` with zero targets on the padding, and every
cross-covariance column of a padding row is zero. Two posteriors:

* ``fit`` / ``mean`` / ``variance`` / ``covariance`` / ``sample`` / ``log_marginal_likelihood``: the
  Bayesian posterior of ``f ~ GP(m, k)`` from ``y = f(x) + eps``, ``eps ~ N(0, lam)`` (Rasmussen and
  Williams 2006, eqs. 2.25-2.26 and 2.30; Algorithm 2.1)::

      mean(x)    = m + k(x, X) (K + lam I)^-1 (y - m)
      cov(x, x') = k(x, x') - k(x, X) (K + lam I)^-1 k(X, x')

  A constant ``m`` fitted by maximum likelihood: ``gls_mean``, ``profiled_log_marginal_likelihood``.
  NeuralBO's uncertainty ``lam g^T U^-1 g / m`` (Phan-Trong et al. 2023, Algorithm 1, line 3) is,
  in dual form, this variance under the empirical NTK at theta_0; neural-tangents' ``get="ntkgp"``.

* ``gd_ensemble``: the distribution over random initialisations of infinitely wide networks trained
  by full-batch gradient descent on the MSE loss ``(1/2N) sum_i (f(x_i) - y_i)^2`` for time ``t``
  (learning rate folded into ``t``), Lee et al. 2019, eqs. (14)-(16); neural-tangents'
  ``predict.gradient_descent_mse_ensemble`` with ``get="ntk"`` (or ``"nngp"`` for training only the
  readout layer). With ``Theta_r = Theta + lam I = V diag(e) V^T`` and
  ``A(t) = V diag((1 - exp(-e t / N)) / e) V^T`` (``A(inf) = Theta_r^-1``)::

      mean(x)    = Theta(x, X) A(t) y
      cov(x, x') = K(x, x') + Theta(x, X) A K A Theta(X, x')
                   - Theta(x, X) A K(X, x') - K(x, X) A Theta(X, x')

  where ``K`` is the NNGP kernel and ``Theta`` the NTK.

Appending observations with the kernel and ``lam`` unchanged (``factor_append``, ``append``) extends
the Cholesky factor by the new rows (``cholesky_append``, ``O(capacity^2 q)``) instead of
refactoring (``O(capacity^3)``); the result equals ``fit`` on the longer buffer up to rounding. A
model keeps its ``Factor`` in its state, extends it in ``update`` and refactors only when its
hyper-parameters change; ``condition`` then solves for new targets in ``O(capacity^2)``.

Jit-able and vmap-able; Cholesky factors with jitter; ``with_inverse``: ``chol^-1`` by a solve.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from ntkbo import linalg
from ntkbo.linalg import default_jitter  # noqa: F401  (re-exported)
from ntkbo.data import Data, mask as data_mask, register_growable

Array = jax.Array
Kernel = Callable[[Array, Array], Array]


def exact_matmuls(fn):
    """``fn`` with every matrix product traced inside it (the kernel's included) at
    ``jax.default_matmul_precision("highest")``: full float32 products on GPUs, whose default
    for float32 is TF32 (10 mantissa bits), which loses a Gram matrix's small eigenvalues and so
    its Cholesky factor. No effect on CPU, where float32 products are already exact to rounding."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)
    return wrapped


def solve_lower(chol: Array, b: Array, *, trans: bool = False) -> Array:
    """``chol^-1 b`` (or ``chol^-T b`` with ``trans``) for a lower triangular ``chol`` ``(..., C, C)``
    and ``b`` ``(..., C, k)``: the same LAPACK solve as ``jax.scipy.linalg.solve_triangular``
    (equal to rounding; bit for bit in whole ``ntk_gp``, ``gp`` and ``neural_bo`` runs checked).

    It hands the solve ``chol^T`` as an upper factor. XLA:CPU calls LAPACK's ``trsm``, which reads
    column-major matrices; ntkbo's factors are row-major arrays, so a lower solve first copies the
    whole transposed factor, while ``chol^T`` in column-major order is the same bytes as ``chol``
    (a bitcast). At ``C = 2048`` with 4 right-hand sides the copy was 3/4 of the solve (11.6 ms
    against 2.8 ms; ``docs/speed.md``).
    """
    upper = jnp.swapaxes(chol, -1, -2)
    return linalg.solve_triangular(upper, b, lower=False, trans=0 if trans else 1)


def cholesky_solve(chol: Array, b: Array) -> Array:
    """``(chol chol^T)^-1 b``: ``linalg.cho_solve(chol, b)`` by two
    ``solve_lower`` (without the factor's transposed copies)."""
    if b.ndim == chol.ndim - 1:
        return cholesky_solve(chol, b[..., None])[..., 0]
    return solve_lower(chol, solve_lower(chol, b), trans=True)


@exact_matmuls
def kernel_diag(kernel: Kernel, x: Array) -> Array:
    """``k(x_i, x_i)`` for each row of ``x`` ``(n, d)`` without forming the ``n x n`` matrix."""
    return jax.vmap(lambda xi: kernel(xi[None, :], xi[None, :])[0, 0])(x)


def _masked_gram(kernel: Kernel, x: Array, m: Array, diag: Array) -> Array:
    """``[[K + diag, 0], [0, I]]`` for valid rows ``m``; ``diag`` is added to the valid diagonal."""
    k = kernel(x, x)
    both = m[:, None] & m[None, :]
    k = jnp.where(both, k, 0.0)
    return k + jnp.diag(jnp.where(m, diag, 1.0))


def _jitter_value(k_valid_diag: Array, m: Array, jitter) -> Array:
    jitter = default_jitter(k_valid_diag.dtype) if jitter is None else jitter
    n = jnp.maximum(jnp.sum(m), 1)
    scale = jnp.sum(jnp.where(m, jnp.abs(k_valid_diag), 0.0)) / n
    return jitter * jnp.where(scale > 0, scale, 1.0)


class Posterior(NamedTuple):
    """The fitted GP posterior: a pytree of arrays (the kernel is passed separately).

    Attributes:
      x: ``(capacity, d)`` training inputs (padding rows arbitrary).
      mask: ``(capacity,)`` valid rows.
      chol: ``(capacity, capacity)`` lower Cholesky factor of the masked ``K + (lam + jitter) I``.
      alpha: ``(capacity,)`` ``(K + lam I)^-1 (y - prior_mean)``, zero on padding.
      prior_mean: scalar constant prior mean ``m``.
      chol_inv: ``None``, or ``(capacity, capacity)`` ``chol^-1`` (``with_inverse``): then
        ``variance`` and ``covariance`` whiten ``k(X, x)`` by a matrix product instead of a
        triangular solve.
    """

    x: Array
    mask: Array
    chol: Array
    alpha: Array
    prior_mean: Array
    chol_inv: Array | None = None


class Factor(NamedTuple):
    """The Cholesky factor of a buffer's masked Gram matrix, kept in an algorithm's state so that
    new observations extend it (``factor_append``, ``O(C^2 q)``) instead of refactoring it
    (``factor``, ``O(C^3)``). It grows with the buffer (``ntkbo.data.register_growable``: the new
    rows and columns are identity, the factor of padding).

    Attributes:
      chol: ``(..., C, C)`` lower factor of ``[[K + (lam + jitter) I, 0], [0, I]]`` over the
        buffer's valid rows (``ntkbo.data.mask``), for the kernel and ``lam`` it was made with.
    """

    chol: Array


def empty_factor(capacity: int, dtype=None) -> Factor:
    """The factor of an empty buffer: the identity ``(capacity, capacity)``."""
    return Factor(jnp.eye(int(capacity), dtype=dtype or jnp.result_type(float)))


def grow_factor(f: Factor, capacity: int) -> Factor:
    """``f`` padded to ``capacity`` with identity rows and columns (leading batch axes kept)."""
    c = f.chol.shape[-1]
    if capacity < c:
        raise ValueError(f"capacity must not shrink the factor: {capacity} < current {c}")
    pad = [(0, 0)] * (f.chol.ndim - 2) + [(0, capacity - c)] * 2
    new_rows = jnp.arange(capacity) >= c
    return Factor(jnp.pad(f.chol, pad) + jnp.diag(new_rows.astype(f.chol.dtype)))


register_growable(Factor, grow_factor)


def _noise(kernel: Kernel, data: Data, m: Array, lam, jitter) -> Array:
    """``lam`` plus the relative jitter (``_jitter_value``) of ``data``'s valid rows ``m``."""
    kd = kernel_diag(kernel, data.x)
    return jnp.asarray(lam, data.y.dtype) + _jitter_value(kd, m, jitter)


@exact_matmuls
def factor(kernel: Kernel, data: Data, lam, *, jitter=None) -> Factor:
    """The ``Factor`` of ``data``'s valid rows under ``kernel`` and noise ``lam`` (``O(C^3)``).

    ``jitter`` as in ``fit``. A failed factorisation (the matrix not positive definite in the
    working precision) gives NaN, as ``jnp.linalg.cholesky`` reports it.
    """
    m = data_mask(data)
    gram = _masked_gram(kernel, data.x, m, _noise(kernel, data, m, lam, jitter))
    return Factor(linalg.cholesky(gram))


@exact_matmuls
def factor_append(kernel: Kernel, f: Factor, data: Data, start, q: int, lam, *,
                  jitter=None) -> Factor:
    """``factor(kernel, data, lam)`` by extending ``f``, the factor of ``data``'s first ``start``
    rows, by the ``q`` (static) rows ``start .. start + q - 1`` (``cholesky_append``,
    ``O(C^2 q)``).

    ``data`` is the buffer after ``ntkbo.data.append`` of a ``(q, d)`` batch; ``kernel`` and
    ``lam`` are the ones ``f`` was made with. New rows that are failed (non-finite ``y``) or past
    ``count`` are identity rows, as in ``factor``. The new rows' jitter is the one ``factor`` gives
    ``data``; it equals the old rows' when the kernel's diagonal is constant (stationary kernels,
    the NTK on the sphere), and then the result is ``factor``'s up to rounding; otherwise the old
    rows keep the jitter they were factored with (a relative ``1e-6`` in float32). The new
    block's Schur complement has its diagonal floored at ``lam`` plus jitter, its exact-arithmetic
    lower bound (the conditional variance is non-negative), so rounding cannot make it fail.
    """
    m = data_mask(data)
    noise = _noise(kernel, data, m, lam, jitter)
    d = data.x.shape[-1]
    start = jnp.asarray(start, jnp.int32)
    x_new = jax.lax.dynamic_slice(data.x, (start, jnp.zeros((), jnp.int32)), (q, d))
    m_new = jax.lax.dynamic_slice(m, (start,), (q,))
    b = jnp.where(m_new[:, None] & m[None, :], kernel(x_new, data.x), 0.0)
    both = m_new[:, None] & m_new[None, :]
    c = jnp.where(both, kernel(x_new, x_new), 0.0) + jnp.diag(jnp.where(m_new, noise, 1.0))
    floor = jnp.where(m_new, noise, 1.0)
    return Factor(cholesky_append(f.chol, start, b, c, floor=floor))


@exact_matmuls
def condition(f: Factor, data: Data, *, prior_mean: Array | float = 0.0) -> Posterior:
    """The ``Posterior`` of ``data`` given its ``Factor`` ``f``: only ``alpha = (K + lam I)^-1
    (y - m)`` is solved (``O(C^2)``), so new targets (re-standardised ``y``) cost no factorisation."""
    m = data_mask(data)
    r = jnp.where(m, data.y - prior_mean, 0.0)
    alpha = cholesky_solve(f.chol, r)
    return Posterior(data.x, m, f.chol, alpha, jnp.asarray(prior_mean, data.y.dtype))


@exact_matmuls
def fit(kernel: Kernel, data: Data, lam, *, prior_mean=0.0, jitter=None) -> Posterior:
    """Conditions ``GP(prior_mean, kernel)`` on ``data`` with Gaussian noise variance ``lam``.

    Args:
      kernel: ``k(x1, x2) -> (n1, n2)``.
      data: observations; only the first ``data.count`` rows are used.
      lam: noise variance (NeuralBO's lambda), scalar, ``>= 0``.
      prior_mean: constant prior mean.
      jitter: relative diagonal jitter (times the mean prior variance of the valid rows) added for
        numerical stability; ``None`` for ``default_jitter``.

    Returns:
      A ``Posterior``. Cost ``O(capacity^3)`` once; predictions then cost ``O(capacity^2)`` each.
      ``condition(factor(kernel, data, lam), data)``.
    """
    return condition(factor(kernel, data, lam, jitter=jitter), data, prior_mean=prior_mean)


@exact_matmuls
def cholesky_append(chol: Array, start, b: Array, c: Array, floor=None) -> Array:
    """The Cholesky factor of a masked Gram matrix extended by ``q`` rows written at ``start``.

    ``chol`` ``(C, C)`` factors the padded matrix ``[[A, 0], [0, I]]`` whose rows ``>= start`` are
    padding (identity). Rows ``start .. start + q - 1`` become ``[B, D]``: ``b`` ``(q, C)`` their
    covariances with the rows before ``start`` (columns ``>= start`` are ignored), ``c`` ``(q, q)``
    their own block (noise and jitter included). With ``L_11`` the factor of ``A``, the block
    Cholesky identity (Golub and Van Loan 2013, sec. 4.2.9)

        [[A, B^T], [B, D]] = [[L_11, 0], [L_21, L_22]] [[L_11, 0], [L_21, L_22]]^T,
        L_21 = B L_11^-T   (one triangular solve, O(C^2 q)),
        L_22 = chol(D - L_21 L_21^T)   (O(q^3)),

    gives the new factor; rows after ``start + q`` stay identity. ``start`` may be traced (an
    int32 scalar); ``q`` is static. ``start + q <= C`` is the caller's to ensure. ``floor``
    ``(q,)``, if given, is a lower bound on the diagonal of the Schur complement
    ``D - L_21 L_21^T`` (its exact value is at least the noise): it is applied there before the
    ``q x q`` factorisation.

    Returns:
      ``(C, C)`` the extended lower factor (NaN rows if ``D - L_21 L_21^T`` is not positive
      definite, as ``jnp.linalg.cholesky`` reports failure).
    """
    capacity = chol.shape[-1]
    start = jnp.asarray(start, jnp.int32)
    zero = jnp.zeros((), jnp.int32)
    before = jnp.arange(capacity) < start
    b = jnp.where(before[None, :], b, 0.0)
    # chol's rows >= start are identity, so the solve leaves columns >= start of L_21 at zero.
    l21 = solve_lower(chol, b.T).T  # (q, C)
    schur = c - l21 @ l21.T
    if floor is not None:
        diag = jnp.diagonal(schur)
        schur = schur + jnp.diag(jnp.maximum(diag, floor) - diag)
    l22 = linalg.cholesky(schur)
    rows = l21 + jax.lax.dynamic_update_slice(jnp.zeros_like(l21), l22, (zero, start))
    return jax.lax.dynamic_update_slice(chol, rows, (start, zero))


@exact_matmuls
def append(kernel: Kernel, post: Posterior, data: Data, start, q: int, lam, *, prior_mean=0.0,
           jitter=None) -> Posterior:
    """``fit(kernel, data, lam)`` by extending ``post``, fitted on ``data``'s first ``start`` rows.

    ``data`` holds those rows and ``q`` (static) more at ``start .. start + q - 1`` (the buffer
    after ``ntkbo.data.append`` of a ``(q, d)`` batch); ``kernel``, ``lam`` and ``prior_mean`` are
    the ones ``post`` was fitted with: ``factor_append`` on ``post``'s factor, then ``condition``
    (``O(C^2 q)`` in all instead of ``fit``'s ``O(C^3)``).

    Returns:
      The ``Posterior`` of the ``start + q`` rows.
    """
    f = factor_append(kernel, Factor(post.chol), data, start, q, lam, jitter=jitter)
    return condition(f, data, prior_mean=prior_mean)


def _cross(kernel: Kernel, post: Posterior, xs: Array) -> Array:
    """``k(xs, X)`` ``(n, capacity)`` with padding columns zeroed."""
    return jnp.where(post.mask[None, :], kernel(xs, post.x), 0.0)


@exact_matmuls
def with_inverse(post: Posterior) -> Posterior:
    """``post`` carrying ``chol^-1`` ``(C, C)``, computed once as the triangular solve
    ``solve_lower(chol, I)`` (each column a forward substitution, as accurate as a solve).

    Afterwards ``v = chol^-1 k(X, x)`` in ``variance`` and ``covariance`` is the matrix product
    ``k(x, X) chol^-T``, and so is its derivative, instead of a triangular solve and its
    transposed solve: ``O(C^3 / 3)`` once, then ``O(C^2)`` per point as before, but as products,
    which an accelerator runs in parallel where a solve with few right-hand sides runs row
    after row (the acquisition ascent's few restarts at every step). The variance is the same
    up to rounding (``tests/test_gp.py``).
    """
    eye = jnp.eye(post.chol.shape[-1], dtype=post.chol.dtype)
    return post._replace(chol_inv=solve_lower(post.chol, eye))


def _whitened(kernel: Kernel, post: Posterior, xs: Array) -> Array:
    """``chol^-1 k(X, xs)`` ``(capacity, n)``: by ``chol_inv`` when ``post`` carries it, else by a
    triangular solve."""
    cross = _cross(kernel, post, xs)
    if post.chol_inv is None:
        return solve_lower(post.chol, cross.T)
    return post.chol_inv @ cross.T


@exact_matmuls
def mean(kernel: Kernel, post: Posterior, xs: Array) -> Array:
    """Posterior mean ``(n,)`` at ``xs`` ``(n, d)``."""
    return post.prior_mean + _cross(kernel, post, xs) @ post.alpha


@exact_matmuls
def variance(kernel: Kernel, post: Posterior, xs: Array) -> Array:
    """Posterior variance ``(n,)`` of the latent ``f`` (noise excluded), clipped at zero."""
    v = _whitened(kernel, post, xs)
    return jnp.maximum(kernel_diag(kernel, xs) - jnp.sum(v * v, axis=0), 0.0)


@exact_matmuls
def covariance(kernel: Kernel, post: Posterior, xs: Array, xs2: Array | None = None) -> Array:
    """Posterior covariance ``(n1, n2)`` of the latent ``f`` between ``xs`` and ``xs2``."""
    xs2 = xs if xs2 is None else xs2
    v1 = _whitened(kernel, post, xs)
    v2 = v1 if xs2 is xs else _whitened(kernel, post, xs2)
    return kernel(xs, xs2) - v1.T @ v2


@exact_matmuls
def predict(kernel: Kernel, post: Posterior, xs: Array, full_cov: bool = False):
    """``(mean (n,), variance (n,))``, or ``(mean, covariance (n, n))`` when ``full_cov``."""
    mu = mean(kernel, post, xs)
    return mu, (covariance(kernel, post, xs) if full_cov else variance(kernel, post, xs))


@exact_matmuls
def sample_gaussian(key, mu: Array, cov: Array, num_samples: int | None = None, jitter=None):
    """Joint draws from ``N(mu, cov)`` via a jittered Cholesky factor.

    Returns ``(n,)`` or ``(num_samples, n)``.
    """
    n = mu.shape[-1]
    jitter = default_jitter(cov.dtype) if jitter is None else jitter
    scale = jnp.maximum(jnp.mean(jnp.abs(jnp.diag(cov))), jnp.finfo(cov.dtype).tiny)
    chol = linalg.cholesky(cov + jitter * scale * jnp.eye(n, dtype=cov.dtype))
    shape = (n,) if num_samples is None else (num_samples, n)
    z = jax.random.normal(key, shape, mu.dtype)
    return mu + z @ chol.T


@exact_matmuls
def sample(key, kernel: Kernel, post: Posterior, xs: Array, num_samples: int | None = None,
           jitter=None) -> Array:
    """Joint posterior samples of ``f`` at ``xs`` ``(n, d)``: ``(n,)`` or ``(num_samples, n)``."""
    mu, cov = predict(kernel, post, xs, full_cov=True)
    return sample_gaussian(key, mu, cov, num_samples, jitter)


@exact_matmuls
def log_marginal_likelihood(kernel: Kernel, data: Data, lam, *, prior_mean=0.0,
                            jitter=None) -> Array:
    """``log p(y | X) = -1/2 r^T (K + lam I)^-1 r - 1/2 log|K + lam I| - n/2 log(2 pi)``.

    ``r = y - prior_mean`` on the ``n = count`` valid rows (Rasmussen and Williams 2006, eq. 2.30).
    Differentiable in the kernel's hyper-parameters and ``lam`` (use it through ``jax.grad``): the
    derivative in the Gram matrix is R&W eq. 5.9's ``(alpha alpha^T - (K + lam I)^-1) / 2``
    (``_gaussian_log_density``), one triangular solve and one product after the factorisation,
    instead of reverse mode through the Cholesky factor and the solves.
    """
    m = data_mask(data)
    gram = _masked_gram(kernel, data.x, m, _noise(kernel, data, m, lam, jitter))
    r = jnp.where(m, data.y - prior_mean, 0.0)
    # Padding contributes log(1) = 0 to the log-determinant and 0 to the quadratic form.
    return _gaussian_log_density(gram, r) - 0.5 * jnp.sum(m) * jnp.log(2.0 * jnp.pi)


@jax.custom_vjp
def _gaussian_log_density(gram: Array, r: Array) -> Array:
    """``-1/2 r^T A^-1 r - 1/2 log|A|`` of a symmetric positive definite ``A = gram`` (``C, C``)."""
    return _gaussian_log_density_fwd(gram, r)[0]


def _gaussian_log_density_fwd(gram, r):
    chol = linalg.cholesky(gram)
    alpha = cholesky_solve(chol, r)
    value = -0.5 * r @ alpha - jnp.sum(jnp.log(jnp.diag(chol)))
    return value, (chol, alpha)


def _gaussian_log_density_bwd(res, g):
    # d/dA = (alpha alpha^T - A^-1) / 2 (symmetric), A^-1 = L^-T L^-1; d/dr = -alpha.
    chol, alpha = res
    inv_chol = solve_lower(chol, jnp.eye(chol.shape[-1], dtype=chol.dtype))
    a_inv = jnp.matmul(inv_chol.T, inv_chol, precision=jax.lax.Precision.HIGHEST)
    return g * 0.5 * (jnp.outer(alpha, alpha) - a_inv), -g * alpha


_gaussian_log_density.defvjp(_gaussian_log_density_fwd, _gaussian_log_density_bwd)


@exact_matmuls
def profiled_log_marginal_likelihood(kernel: Kernel, data: Data, lam, *, jitter=None) -> Array:
    """``max_m log p(y | X, m)``: the log marginal likelihood (R&W eq. 2.30) of a GP with a
    constant prior mean ``m``, at the ``m`` that maximises it, in closed form.

    With ``A = K + lam I`` (jitter included, as ``log_marginal_likelihood``'s) over the ``n =
    count`` valid rows and ``1`` the ones there, the maximiser is the generalised least squares
    estimate ``m* = 1^T A^-1 y / 1^T A^-1 1`` (R&W section 2.7, "Incorporating explicit basis
    functions", with one constant basis function and a vague prior on its coefficient; ``gls_mean``)
    and the value ``-1/2 r^T A^-1 r - 1/2 log|A| - n/2 log(2 pi)`` with ``r = y - m* 1``. This is
    the likelihood of BoTorch's ``SingleTaskGP`` with its ``ConstantMean`` profiled out (not the
    restricted likelihood of R&W eq. 2.45, which integrates the mean out). With no valid row it
    is 0.

    Differentiable in the kernel's hyper-parameters and ``lam``: ``dm*`` does not enter the
    derivative (``d/dm`` vanishes at ``m*``), so the derivative in ``A`` is eq. 5.9's
    ``(alpha alpha^T - A^-1) / 2`` with ``alpha = A^-1 (y - m* 1)``, and in ``y`` it is
    ``-alpha``, as for ``log_marginal_likelihood``. Cost: one factorisation and a solve with two
    right-hand sides.
    """
    m = data_mask(data)
    gram = _masked_gram(kernel, data.x, m, _noise(kernel, data, m, lam, jitter))
    y = jnp.where(m, data.y, 0.0)
    return (_profiled_gaussian_log_density(gram, y, m.astype(gram.dtype))
            - 0.5 * jnp.sum(m) * jnp.log(2.0 * jnp.pi))


def _gls(chol: Array, y: Array, ones: Array) -> tuple[Array, Array, Array]:
    """``(m*, A^-1 y, A^-1 1)`` of ``A = chol chol^T``; ``m* = 0`` where ``1^T A^-1 1 = 0``
    (no valid row)."""
    solved = cholesky_solve(chol, jnp.stack([y, ones], axis=-1))
    a_y, a_1 = solved[:, 0], solved[:, 1]
    den = ones @ a_1
    ok = den > 0
    return jnp.where(ok, (ones @ a_y) / jnp.where(ok, den, 1.0), 0.0), a_y, a_1


@jax.custom_vjp
def _profiled_gaussian_log_density(gram: Array, y: Array, ones: Array) -> Array:
    """``max_m -1/2 (y - m 1)^T A^-1 (y - m 1) - 1/2 log|A|`` of ``A = gram`` (``C, C``), ``1 =
    ones`` (the valid rows' indicator; not differentiated)."""
    return _profiled_gaussian_log_density_fwd(gram, y, ones)[0]


def _profiled_gaussian_log_density_fwd(gram, y, ones):
    chol = linalg.cholesky(gram)
    m, a_y, a_1 = _gls(chol, y, ones)
    alpha = a_y - m * a_1  # A^-1 (y - m* 1)
    value = -0.5 * (y - m * ones) @ alpha - jnp.sum(jnp.log(jnp.diag(chol)))
    return value, (chol, alpha)


def _profiled_gaussian_log_density_bwd(res, g):
    # At m* the derivative in m is zero, so those in A and y are _gaussian_log_density's at
    # r = y - m* 1; ones is a mask (zero cotangent).
    d_gram, d_y = _gaussian_log_density_bwd(res, g)
    return d_gram, d_y, jnp.zeros_like(d_y)


_profiled_gaussian_log_density.defvjp(_profiled_gaussian_log_density_fwd,
                                      _profiled_gaussian_log_density_bwd)


@exact_matmuls
def gls_mean(f: Factor, data: Data) -> Array:
    """The constant prior mean that maximises the likelihood of ``data``'s valid rows, ``()``:
    the generalised least squares estimate ``m* = 1^T A^-1 y / 1^T A^-1 1`` (R&W section 2.7,
    one constant basis function under a vague prior), ``A = chol chol^T`` from the ``Factor``
    ``f`` of ``data`` (``K + lam I`` plus jitter over the valid rows) and ``1`` the valid rows'
    indicator. Padding and failed rows do not count (``ntkbo.data.mask``); 0 with no valid row.

    ``condition(f, data, prior_mean=gls_mean(f, data))`` is then the posterior of the GP whose
    constant mean was fitted with the other hyper-parameters (``profiled_log_marginal_likelihood``).
    """
    m = data_mask(data)
    return _gls(f.chol, jnp.where(m, data.y, 0.0), m.astype(f.chol.dtype))[0]


# ---------------------------------------------------------------------------------------------
# Infinite ensembles of networks trained by gradient descent (Lee et al. 2019).


class EnsemblePosterior(NamedTuple):
    """Train-set quantities of ``gd_ensemble``: a pytree of arrays.

    Attributes:
      x, mask: training inputs and valid rows.
      evals, evecs: eigendecomposition of the masked, regularised train-train kernel of mode ``get``.
      y: ``(capacity,)`` targets, zero on padding.
      nngp: ``(capacity, capacity)`` masked NNGP train-train kernel (unregularised).
      count: number of valid rows ``N`` (the MSE normalisation).
    """

    x: Array
    mask: Array
    evals: Array
    evecs: Array
    y: Array
    nngp: Array
    count: Array


@exact_matmuls
def gd_ensemble(nngp: Kernel, ntk: Kernel, data: Data, lam=0.0, get: str = "ntk"
                ) -> EnsemblePosterior:
    """Prepares the trained-ensemble posterior of ``get`` in ``{"ntk", "nngp"}``.

    ``get="ntk"`` trains every layer (the NTK regime); ``get="nngp"`` trains only the readout, for
    which the ensemble at ``t = inf`` is the Bayesian NNGP posterior. ``lam`` is added to the diagonal of
    the train-train kernel of mode ``get`` (neural-tangents' ``diag_reg`` with
    ``diag_reg_absolute_scale=True``).
    """
    if get not in ("ntk", "nngp"):
        raise ValueError(f"get must be 'ntk' or 'nngp', got {get!r}")
    m = data_mask(data)
    both = m[:, None] & m[None, :]
    k_nngp = jnp.where(both, nngp(data.x, data.x), 0.0)
    k_get = k_nngp if get == "nngp" else jnp.where(both, ntk(data.x, data.x), 0.0)
    k_get = k_get + jnp.diag(jnp.where(m, jnp.asarray(lam, k_get.dtype), 1.0))
    evals, evecs = linalg.eigh(k_get)
    return EnsemblePosterior(data.x, m, evals, evecs, jnp.where(m, data.y, 0.0), k_nngp,
                             jnp.sum(m))


def _spectral(post: EnsemblePosterior, t, factor: float = 1.0) -> Array:
    """``A(t) = V diag((1 - exp(-factor * e t / N)) / e) V^T``; ``t = inf`` gives ``Theta_r^-1``."""
    e = jnp.maximum(post.evals, 0.0)
    n = jnp.maximum(post.count, 1).astype(e.dtype)
    t = jnp.asarray(t, e.dtype)
    safe_e = jnp.where(e > 0, e, 1.0)
    finite = -jnp.expm1(-factor * safe_e * t / n) / safe_e
    # As e -> 0, (1 - exp(-e t / N)) / e -> t / N (a direction training has not moved yet).
    finite = jnp.where(e > 0, finite, factor * t / n)
    w = jnp.where(jnp.isinf(t), 1.0 / safe_e, finite)
    return (post.evecs * w) @ post.evecs.T


@exact_matmuls
def gd_ensemble_predict(nngp: Kernel, ntk: Kernel, post: EnsemblePosterior, xs: Array, t=jnp.inf,
                        get: str = "ntk", compute_cov: bool = True):
    """Mean ``(n,)`` and covariance ``(n, n)`` at ``xs`` of the trained ensemble at time ``t``.

    ``t`` is training time times learning rate, for the loss ``(1/2N) sum (f - y)^2`` (neural-tangents'
    convention); ``t = jnp.inf`` gives the converged ensemble. ``get`` must match ``gd_ensemble``.
    """
    col = post.mask[None, :]
    k_td_nngp = jnp.where(col, nngp(xs, post.x), 0.0)
    k_td = k_td_nngp if get == "nngp" else jnp.where(col, ntk(xs, post.x), 0.0)
    a = _spectral(post, t)
    mu = k_td @ (a @ post.y)
    if not compute_cov:
        return mu
    k_tt = nngp(xs, xs)
    if get == "nngp":
        # Training the readout only: cov = K_tt - K_td A(2t) K_dt (neural-tangents, get="nngp").
        return mu, k_tt - k_td @ _spectral(post, t, factor=2.0) @ k_td.T
    term_1 = a @ k_td.T
    term_2 = k_td @ a @ k_td_nngp.T
    return mu, k_tt + term_1.T @ post.nngp @ term_1 - term_2 - term_2.T
