"""Dense linear algebra that ``jax.vmap`` cannot deadlock: Cholesky, triangular solves, ``eigh``.

Every kernel model in ntkbo factorises Gram matrices, and users ``jax.vmap`` whole runs over
seeds, so these matrices arrive batched. On CPU, jaxlib 0.10's batched LAPACK kernels (``potrf``,
``trsm``, ``syevd``) split a batch into chunks on XLA:CPU's intra-op thread pool and block until
the chunks finish. When as many such calls run at once as the pool has threads (the thunk
executor runs independent operations concurrently: two solves of one acquisition step, three GPs
of a constrained model), every pool thread waits for chunks that no thread is left to run, and the
program sleeps forever. A batch of one matrix runs inline and cannot hang.

So each function here is the ``jax.numpy`` / ``jax.scipy`` operation on one matrix, with its own
batching rule (``jax.custom_batching.custom_vmap``):

* on CPU, a batch of matrices is factorised one matrix at a time (``jax.lax.map``), each call a
  batch of one;
* on every other backend (``jax.lax.platform_dependent``), the batched kernel runs as before;
* a solve with one shared factor and batched right-hand sides is never looped: the batch becomes
  extra columns of one solve, as ``jax.lax.linalg.triangular_solve``'s own batching rule does.

Unbatched results are those of ``jnp.linalg.cholesky`` and ``jax.scipy.linalg.solve_triangular``
bit for bit (the same LAPACK call). Reverse-mode derivatives are ``jax.custom_vjp`` rules written
with these same functions (so a gradient under ``vmap`` is batch-safe too): the Cholesky rule is
the adjoint of Murray (2016, arXiv:1602.07527, eq. 8), ``jax.lax.linalg``'s forward rule, and the
solve's is the usual ``b_bar = op(A)^-T x_bar``, ``A_bar = -b_bar x^T`` (or ``-x b_bar^T`` for
``op(A) = A^T``) restricted to the triangle read. Forward-mode (``jax.jvp``) through
``cholesky`` and ``solve_triangular`` is not defined; ``eigh`` and ``eigvalsh`` have
forward mode only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

Array = jax.Array

__all__ = ["cholesky", "solve_triangular", "cho_solve", "logdet_spd", "eigh", "eigvalsh"]

_HIGHEST = jax.lax.Precision.HIGHEST


def default_jitter(dtype) -> float:
    """Relative diagonal jitter: 1e-10 in float64, 1e-6 in float32 (times the mean prior variance)."""
    return 1e-10 if jnp.dtype(dtype) == jnp.float64 else 1e-6



def _on_cpu_one_at_a_time(one, batched):
    """``batched(*args)`` except on CPU, where ``jax.lax.map(one)`` runs a batch of one per call."""
    def run(*args):
        return jax.lax.platform_dependent(
            *args, cpu=lambda *a: jax.lax.map(lambda t: one(*t), a), default=batched)
    return run


def _one_at_a_time_on_cpu(fn):
    """``fn`` of one matrix (returning a tuple of arrays), batched by ``_on_cpu_one_at_a_time``."""
    @custom_vmap
    def one(a):
        return fn(a)

    @one.def_vmap
    def rule(axis_size, in_batched, a):
        del axis_size
        out = one(a) if not in_batched[0] else _on_cpu_one_at_a_time(one, fn)(a)
        return out, tuple(in_batched[0] for _ in out)

    return one


def _check_square(a):
    a = jnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"a must have shape (..., n, n), got {a.shape}")
    return a


# -- Cholesky -------------------------------------------------------------------------------------

_cholesky_one = _one_at_a_time_on_cpu(lambda a: (jnp.linalg.cholesky(a),))


@jax.custom_vjp
def _cholesky(a: Array) -> Array:
    return _cholesky_one(a)[0]


def _cholesky_fwd(a):
    chol = _cholesky_one(a)[0]
    return chol, chol


def _cholesky_bwd(chol, chol_bar):
    # Adjoint of L_dot = L phi(L^-1 sym(A_dot) L^-T), phi = lower triangle with halved diagonal:
    # A_bar = sym(L^-T phi(L^T L_bar) L^-1).
    p = jnp.matmul(chol.T, chol_bar, precision=_HIGHEST)
    p = jnp.tril(p) - 0.5 * jnp.diag(jnp.diagonal(p))
    x = _solve(chol, p, True, 1)            # L^-T P
    s = _solve(chol, x.T, True, 1).T        # L^-T P L^-1
    return (0.5 * (s + s.T),)


_cholesky.defvjp(_cholesky_fwd, _cholesky_bwd)


def cholesky(a: Array) -> Array:
    """The lower Cholesky factor of symmetric positive definite ``a`` ``(..., n, n)``.

    ``jnp.linalg.cholesky`` (the input is symmetrised, ``(a + a^T) / 2``; a failed factorisation
    gives NaN), batched one matrix at a time on CPU (module docstring).
    """
    return jnp.vectorize(_cholesky, signature="(n,n)->(n,n)")(_check_square(a))


# -- triangular solves ----------------------------------------------------------------------------

@functools.cache
def _solve_one(lower: bool, trans: int):
    @custom_vmap
    def one(a, b):
        return jax.scipy.linalg.solve_triangular(a, b, lower=lower, trans=trans)

    @one.def_vmap
    def rule(axis_size, in_batched, a, b):
        a_batched, b_batched = in_batched
        if not a_batched:
            if not b_batched:
                return one(a, b), False
            # One factor, many right-hand sides: the batch becomes columns of one solve.
            n, k = b.shape[1:]
            cols = jnp.moveaxis(b, 0, -1).reshape(n, k * axis_size)
            x = one(a, cols).reshape(n, k, axis_size)
            return jnp.moveaxis(x, -1, 0), True
        if not b_batched:
            b = jnp.broadcast_to(b, (axis_size, *b.shape))
        batched = functools.partial(jax.scipy.linalg.solve_triangular, lower=lower, trans=trans)
        return _on_cpu_one_at_a_time(one, batched)(a, b), True

    return one


def _solve(a, b, lower: bool, trans: int):
    return _solve_one(lower, trans)(a, b)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _solve_vjp(a, b, lower, trans):
    return _solve(a, b, lower, trans)


def _solve_fwd(a, b, lower, trans):
    x = _solve(a, b, lower, trans)
    return x, (a, x)


def _solve_bwd(lower, trans, res, x_bar):
    a, x = res
    b_bar = _solve(a, x_bar, lower, 1 - trans)
    if trans:
        a_bar = -jnp.matmul(x, b_bar.T, precision=_HIGHEST)
    else:
        a_bar = -jnp.matmul(b_bar, x.T, precision=_HIGHEST)
    return (jnp.tril(a_bar) if lower else jnp.triu(a_bar)), b_bar


_solve_vjp.defvjp(_solve_fwd, _solve_bwd)


def solve_triangular(a: Array, b: Array, *, lower: bool = False, trans: int | str = 0) -> Array:
    """``op(a)^-1 b`` for triangular ``a`` ``(..., n, n)``: ``jax.scipy.linalg.solve_triangular``.

    ``b`` is ``(..., n, k)``, or ``(..., n)`` for one right-hand side; ``op(a) = a`` for
    ``trans`` 0 or ``"N"``, ``a^T`` for 1 or ``"T"``; only the ``lower`` (or upper) triangle of
    ``a`` is read. Leading dimensions broadcast; a batch of factors is solved one at a time on CPU
    (module docstring).
    """
    codes = {0: 0, 1: 1, "N": 0, "T": 1}
    if trans not in codes:
        raise ValueError(f"trans must be 0, 1, 'N' or 'T', got {trans!r}")
    t = codes[trans]
    a, b = _check_square(a), jnp.asarray(b)
    dtype = jnp.result_type(a, b)
    a, b = a.astype(dtype), b.astype(dtype)
    if b.ndim == a.ndim - 1 or b.ndim == 1:
        return solve_triangular(a, b[..., None], lower=lower, trans=t)[..., 0]
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"b must have shape (..., {a.shape[-1]}, k) to match a {a.shape}, "
                         f"got {b.shape}")
    fn = functools.partial(_solve_vjp, lower=bool(lower), trans=t)
    return jnp.vectorize(fn, signature="(n,n),(n,k)->(n,k)")(a, b)


def cho_solve(chol: Array, b: Array) -> Array:
    """``(L L^T)^-1 b`` for the lower factor ``chol`` ``(..., n, n)`` and ``b`` ``(..., n[, k])``:
    ``jax.scipy.linalg.cho_solve((chol, True), b)`` by two ``solve_triangular`` calls."""
    return solve_triangular(chol, solve_triangular(chol, b, lower=True), lower=True, trans=1)


def logdet_spd(a: Array) -> Array:
    """``log det a`` for symmetric positive definite ``a`` ``(..., n, n)``: ``2 sum log diag L``
    with ``L = cholesky(a)`` (NaN where ``a`` is not positive definite)."""
    chol = cholesky(a)
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


# -- symmetric eigendecomposition -----------------------------------------------------------------

_eigh_one = _one_at_a_time_on_cpu(lambda a: tuple(jnp.linalg.eigh(a)))
_eigvalsh_one = _one_at_a_time_on_cpu(lambda a: (jnp.linalg.eigvalsh(a),))


def eigh(a: Array) -> tuple[Array, Array]:
    """``(w (..., n), v (..., n, n))``: ``jnp.linalg.eigh`` of symmetric ``a`` ``(..., n, n)``
    (ascending eigenvalues, eigenvectors in the columns), one matrix at a time on CPU (module
    docstring). Forward-mode differentiable only."""
    return jnp.vectorize(_eigh_one, signature="(n,n)->(n),(n,n)")(_check_square(a))


def eigvalsh(a: Array) -> Array:
    """``(..., n)``: ``jnp.linalg.eigvalsh`` of symmetric ``a`` ``(..., n, n)`` (ascending), one
    matrix at a time on CPU. Forward-mode differentiable only."""
    return jnp.vectorize(lambda m: _eigvalsh_one(m)[0], signature="(n,n)->(n)")(_check_square(a))
