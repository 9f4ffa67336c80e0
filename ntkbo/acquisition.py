"""Acquisition functions on posterior moments: EI, LogEI, PI, log-PI, UCB, posterior mean, Thompson.

Sign convention. ntkbo *minimises* the objective ``f`` and *maximises* acquisition functions. Given
the posterior mean ``mu`` and standard deviation ``sigma`` of ``f(x)`` and the best (smallest)
observed value ``best``, with the improvement ``u = best - mu - xi`` and ``z = u / sigma``:

====================================  ==========================================================
``expected_improvement``              ``E[max(best - xi - f(x), 0)] = sigma * h(z)``,
                                      ``h(z) = z * Phi(z) + phi(z)``
``log_expected_improvement``          ``log(sigma) + log h(z)``, stable where EI underflows
``probability_of_improvement``        ``P[f(x) < best - xi] = Phi(z)``
``log_probability_of_improvement``    ``log Phi(z)``, stable in the far tail
``upper_confidence_bound``            ``-(mu - sqrt(beta) * sigma)``: the negated lower bound
``posterior_mean``                    ``-mu`` (greedy / pure exploitation)
``thompson_independent``              ``-(mu + nu * sigma * eps)``, ``eps ~ N(0, I)`` per point
``thompson_joint``                    ``-(mu + L eps)``, ``L L^T = cov + jitter * I``
``probability_of_feasibility``        ``P[c(x) <= threshold] = Phi((threshold - mu_c) / sigma_c)``
``constrained_expected_improvement``  ``EI * prod_k P[c_k(x) <= 0]`` (independent constraints)
====================================  ==========================================================

So every acquisition prefers a lower posterior mean, and EI, PI (for ``z < 0``) and UCB prefer a
higher ``sigma``. A paper that maximises ``f`` maps onto this by negating ``f`` (so ``mu`` and
``best`` too). Constrained versions are products of an acquisition and feasibility probabilities,
i.e. sums in log space: ``log_expected_improvement(...) + log_probability_of_feasibility(...)``
(Gardner et al. 2014).

All functions are pure, elementwise and broadcast their arguments (arrays of any shape; the Thompson
functions take a ``key`` first). ``sigma == 0`` is allowed: EI becomes ``max(u, 0)``, LogEI its log
(``-inf`` when ``u <= 0``), PI the indicator ``u > 0``; no NaN values or NaN gradients are produced.
They compute in the floating dtype of their inputs (float32 inputs stay float32). ``z`` is clipped
to ``|z| <= sqrt(finfo.max) / 4`` (3e153 in float64, 5e18 in float32), so that ``z**2`` stays
finite: beyond it LogEI and log-PI saturate at a huge finite negative value instead of ``-inf``.

References:
    Jones, Schonlau and Welch (1998). Efficient global optimization of expensive black-box
    functions. (EI.)
    Ament, Daulton, Eriksson, Balandat and Bakshy (2023). Unexpected improvements to expected
    improvement for Bayesian optimization. NeurIPS. (LogEI, eq. 9.)
    Kushner (1964) (PI); Srinivas, Krause, Kakade and Seeger (2010) (GP-UCB, ``beta_t``).
    Phan-Trong, Tran-The and Gupta (2023). NeuralBO, Algorithm 1 line 4 (independent Thompson draw).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from ntkbo import linalg
from jax.scipy.special import log_ndtr, ndtr

__all__ = [
    "expected_improvement",
    "log_expected_improvement",
    "probability_of_improvement",
    "log_probability_of_improvement",
    "upper_confidence_bound",
    "posterior_mean",
    "thompson_independent",
    "thompson_joint",
    "joint_normal_draws",
    "probability_of_feasibility",
    "log_probability_of_feasibility",
    "constrained_expected_improvement",
    "log_constrained_expected_improvement",
]

Array = jax.Array

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_TAIL = -4.0  # below this z, use the continued fraction
_CF_TERMS = 32


def _floats(*xs):
    """Converts to the common floating dtype (ints become the default float; f32 stays f32)."""
    dtype = jnp.result_type(*xs, 0.0)
    return [jnp.asarray(x, dtype) for x in xs]


def _zmax(dtype) -> float:
    """A bound on ``|z|`` that keeps ``z**2`` and ``x K(x) ~ x**2`` finite."""
    return float(jnp.finfo(dtype).max) ** 0.5 / 4.0


def _cf_k(x: Array) -> Array:
    """``K(x) = x + 2 / (x + 3 / (x + 4 / ...))``, backward recurrence with ``_CF_TERMS`` terms."""
    t = x
    for k in range(_CF_TERMS, 1, -1):
        t = x + k / t
    return t


def _tail_parts(z: Array):
    """Returns ``(tail, x, k)``: mask ``z < _TAIL``, a safe ``x = -z`` and ``K(x)`` there."""
    tail = z < _TAIL
    x = jnp.where(tail, -z, -_TAIL)  # safe value off the tail keeps gradients finite
    return tail, x, _cf_k(x)


def _phi(z: Array) -> Array:
    return jnp.exp(-0.5 * z * z - _HALF_LOG_2PI)


def _h_parts(z: Array):
    """Returns ``(tail, x, k, h_direct)`` with ``h_direct = z Phi(z) + phi(z)`` off the tail."""
    tail, x, k = _tail_parts(z)
    zd = jnp.where(tail, _TAIL, z)
    return tail, x, k, zd * ndtr(zd) + _phi(zd)


# The derivatives below are closed forms (custom JVPs): d log h / dz = Phi(z) / h(z), which is
# exactly K(x) on the tail, and d log Phi / dz = phi(z) / Phi(z) = x + 1 / K(x) on the tail. They
# are more accurate than differentiating the continued fraction and much cheaper to compile.


@jax.custom_jvp
def _h(z: Array) -> Array:
    """``h(z) = z Phi(z) + phi(z)``, accurate (relative) for all finite ``z``; ``h' = Phi``."""
    tail, x, k, direct = _h_parts(z)
    return jnp.where(tail, _phi(x) / (1.0 + x * k), direct)


@_h.defjvp
def _h_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return _h(z), ndtr(z) * dz


@jax.custom_jvp
def _log_h(z: Array) -> Array:
    """``log h(z)``, accurate for all finite ``z``."""
    tail, x, k, direct = _h_parts(z)
    return jnp.where(tail, -0.5 * x * x - _HALF_LOG_2PI - jnp.log1p(x * k), jnp.log(direct))


@_log_h.defjvp
def _log_h_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    tail, _, k, direct = _h_parts(z)
    zd = jnp.where(tail, _TAIL, z)
    return _log_h(z), jnp.where(tail, k, ndtr(zd) / direct) * dz


@jax.custom_jvp
def _log_ndtr(z: Array) -> Array:
    """``log Phi(z)`` to a few ulps: the continued fraction for ``z < -4`` (jax's ``log_ndtr`` loses
    ~1e-11 relative near ``z = -20``), ``log1p(-Phi(-z))`` for ``z > 0`` (``log(Phi(z))`` loses the
    relative accuracy of the tiny result there)."""
    tail, x, k = _tail_parts(z)
    log_tail = -0.5 * x * x - _HALF_LOG_2PI + jnp.log(k) - jnp.log1p(x * k)
    zp = jnp.where(z > 0, z, 1.0)
    log_right = jnp.log1p(-ndtr(-zp))
    zm = jnp.where(tail | (z > 0), _TAIL, z)
    return jnp.where(tail, log_tail, jnp.where(z > 0, log_right, log_ndtr(zm)))


@_log_ndtr.defjvp
def _log_ndtr_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    tail, x, k = _tail_parts(z)
    zd = jnp.where(tail, _TAIL, z)
    return _log_ndtr(z), jnp.where(tail, x + 1.0 / k, _phi(zd) / ndtr(zd)) * dz


def _standardise(mu, sigma, best, xi):
    """Returns ``(u, s, pos, z)``: improvement, safe sigma, mask ``sigma > 0``, clipped ``z``."""
    mu, sigma, best, xi = _floats(mu, sigma, best, xi)
    u = best - mu - xi
    pos = sigma > 0
    s = jnp.where(pos, sigma, jnp.ones_like(sigma))
    zmax = _zmax(u.dtype)
    z = jnp.clip(u / s, -zmax, zmax)
    return u, s, pos, z


@jax.jit
def expected_improvement(mu, sigma, best, xi=0.0) -> Array:
    """Expected improvement for minimisation.

    ``EI = E[max(best - xi - f, 0)] = sigma * h(z)``, ``z = (best - xi - mu) / sigma``,
    ``h(z) = z Phi(z) + phi(z)``. Evaluated as ``u + sigma h(-z)`` for ``z >= 0`` (using
    ``h(z) - h(-z) = z``) and ``sigma h(z)`` otherwise, so it is accurate (relative) for every ``z``
    and exact ``max(u, 0)`` when ``sigma == 0``. Underflows to 0 for ``z`` below about -38
    (float64); use :func:`log_expected_improvement` there.

    Args:
        mu: posterior mean of the objective, any shape.
        sigma: posterior standard deviation (``>= 0``), broadcastable with ``mu``.
        best: best (smallest) observed value, broadcastable.
        xi: exploration margin (``>= 0`` demands an improvement of at least ``xi``).

    Returns:
        EI with the broadcast shape, ``>= 0``.
    """
    u, s, pos, z = _standardise(mu, sigma, best, xi)
    nonneg = z >= 0
    zn = jnp.where(nonneg, -z, z)  # -|z|, with the gradient of the branch taken
    shz = s * _h(zn)
    ei = jnp.where(nonneg, u + shz, shz)
    return jnp.where(pos, ei, jnp.maximum(u, 0.0))


@jax.jit
def log_expected_improvement(mu, sigma, best, xi=0.0) -> Array:
    """Logarithm of the expected improvement (LogEI, Ament et al. 2023), stable everywhere.

    ``log EI = log(sigma) + log h(z)``; for ``z > 1`` it is ``log(u) + log1p(h(-z) / z)``; for
    ``z < -4`` ``log h`` uses the continued fraction below, so it stays finite and
    accurate where EI underflows (e.g. ``log h(-40) ~ -805.6``). With ``sigma == 0`` it is
    ``log(max(u, 0))`` (``-inf`` for ``u <= 0``, with zero gradient).

    Numerics of ``h``. For ``z >= -4`` ``h`` is evaluated directly (the cancellation in
    ``z Phi(z) + phi(z)`` loses at most ~20 ulps there). For ``z < -4`` with ``x = -z``,
    ``h(z) = phi(x) (1 - x R(x))`` with the Mills ratio ``R(x) = Phi(-x) / phi(x)``; the continued
    fraction ``R(x) = 1 / (x + 1 / K(x))``, ``K(x) = x + 2 / (x + 3 / (x + ...))`` (Laplace) gives
    ``1 - x R(x) = 1 / (1 + x K(x))`` without cancellation, so::

        log h(z) = -x^2 / 2 - log(2 pi) / 2 - log1p(x K(x)),
        log Phi(z) = -x^2 / 2 - log(2 pi) / 2 + log K(x) - log1p(x K(x)).

    This is the LogEI of Ament et al. (2023), who use ``erfcx`` (not available in jax 0.5.3) for the
    same Mills ratio; 32 terms of the fraction are accurate to ~1 ulp for ``x >= 4``, and unlike the
    ``erfcx`` form there is no cancellation for large ``x`` (``z = -1e6`` is as accurate as
    ``z = -5``).

    Args:
        mu, sigma, best, xi: as in :func:`expected_improvement`, broadcastable.

    Returns:
        ``log EI`` with the broadcast shape (``-inf`` only where ``sigma == 0`` and ``u <= 0``).
    """
    u, s, pos, z = _standardise(mu, sigma, best, xi)
    big = z > 1.0  # log(u) + log1p(h(-z) / z) there: exact also when u / sigma was clipped
    lh = _log_h(jnp.where(big, -z, z))
    u_safe = jnp.where(u > 0, u, jnp.ones_like(u))
    z_safe = jnp.where(big, z, jnp.ones_like(z))
    log_big = jnp.log(u_safe) + jnp.log1p(jnp.exp(lh) / z_safe)
    log_ei = jnp.where(big, log_big, jnp.log(s) + lh)
    log_det = jnp.where(u > 0, jnp.log(u_safe), -jnp.inf)
    return jnp.where(pos, log_ei, log_det)


@jax.jit
def probability_of_improvement(mu, sigma, best, xi=0.0) -> Array:
    """Probability of improvement ``P[f < best - xi] = Phi((best - xi - mu) / sigma)``.

    With ``sigma == 0`` it is the indicator ``best - xi - mu > 0``. Shapes broadcast.
    """
    u, _, pos, z = _standardise(mu, sigma, best, xi)
    return jnp.where(pos, ndtr(z), (u > 0).astype(u.dtype))


@jax.jit
def log_probability_of_improvement(mu, sigma, best, xi=0.0) -> Array:
    """``log Phi((best - xi - mu) / sigma)``, accurate in the far left tail (continued fraction).

    With ``sigma == 0`` it is ``0`` where ``best - xi - mu > 0`` and ``-inf`` elsewhere.
    """
    u, _, pos, z = _standardise(mu, sigma, best, xi)
    return jnp.where(pos, _log_ndtr(z), jnp.where(u > 0, 0.0, -jnp.inf).astype(u.dtype))


@jax.jit
def probability_of_feasibility(mu_c, sigma_c, threshold=0.0) -> Array:
    """Probability that ``c(x) <= threshold``: ``Phi((threshold - mu_c) / sigma_c)``.

    ``mu_c``, ``sigma_c``: posterior moments of the constraint function; shapes broadcast. Multiply
    an acquisition by it (or add :func:`log_probability_of_feasibility` to a log-acquisition) for
    the constrained variant (Gardner et al. 2014). Equal to PI with ``best = threshold``, except
    that ``sigma_c == 0`` counts ``mu_c == threshold`` as feasible.
    """
    u, _, pos, z = _standardise(mu_c, sigma_c, threshold, 0.0)
    return jnp.where(pos, ndtr(z), (u >= 0).astype(u.dtype))


@jax.jit
def log_probability_of_feasibility(mu_c, sigma_c, threshold=0.0) -> Array:
    """``log P[c(x) <= threshold]``, stable in the tail; see :func:`probability_of_feasibility`."""
    u, _, pos, z = _standardise(mu_c, sigma_c, threshold, 0.0)
    return jnp.where(pos, _log_ndtr(z), jnp.where(u >= 0, 0.0, -jnp.inf).astype(u.dtype))


@jax.jit
def constrained_expected_improvement(mu, sigma, best, mu_c, sigma_c, xi=0.0) -> Array:
    """Constrained EI (Gardner et al. 2014): ``EI(mu, sigma; best, xi) * prod_k P[c_k(x) <= 0]``
    with independent Gaussian posteriors of the ``K`` constraints.

    Args:
        mu, sigma, best, xi: the objective's, as :func:`expected_improvement`, shape ``(...)``;
            ``best`` should be the best *feasible* observation.
        mu_c, sigma_c: ``(..., K)`` posterior means and standard deviations of the constraints
            (feasible iff ``c_k <= 0``); ``K = 0`` gives plain EI.

    Returns:
        ``(...)``, ``>= 0``.
    """
    pof = jnp.prod(probability_of_feasibility(mu_c, sigma_c, 0.0), axis=-1)
    return expected_improvement(mu, sigma, best, xi) * pof


@jax.jit
def log_constrained_expected_improvement(mu, sigma, best, mu_c, sigma_c, xi=0.0) -> Array:
    """``log`` of :func:`constrained_expected_improvement`, summed in log space (stable where the
    product underflows): ``log_expected_improvement + sum_k log_probability_of_feasibility``."""
    log_pof = jnp.sum(log_probability_of_feasibility(mu_c, sigma_c, 0.0), axis=-1)
    return log_expected_improvement(mu, sigma, best, xi) + log_pof


@jax.jit
def upper_confidence_bound(mu, sigma, beta) -> Array:
    """UCB for minimisation: the negated lower confidence bound ``-(mu - sqrt(beta) * sigma)``.

    ``beta`` is GP-UCB's ``beta_t`` (Srinivas et al. 2010), so the width is ``sqrt(beta) * sigma``.
    Shapes broadcast.
    """
    mu, sigma, beta = _floats(mu, sigma, beta)
    return jnp.sqrt(beta) * sigma - mu


@jax.jit
def posterior_mean(mu) -> Array:
    """Greedy acquisition for minimisation: ``-mu``."""
    (mu,) = _floats(mu)
    return -mu


@jax.jit
def thompson_independent(key, mu, sigma, nu=1.0) -> Array:
    """NeuralBO's per-point Thompson draw as an acquisition: ``-f~``, ``f~ ~ N(mu, nu^2 sigma^2)``.

    Each element gets an independent standard normal (NeuralBO Algorithm 1 line 4: a Gaussian per
    point, not a joint sample path). The draw depends on the element's position in the broadcast
    array, so this is not a smooth function of ``x``: maximise it over a candidate set, without
    gradient refinement (``ntkbo.optimize.maximize_acquisition(..., method="none")``).

    Args:
        key: PRNG key.
        mu: posterior mean, any shape.
        sigma: posterior standard deviation, broadcastable with ``mu``.
        nu: exploration scale ``nu_t``, broadcastable.

    Returns:
        ``-(mu + nu * sigma * eps)`` with the broadcast shape of ``mu, sigma, nu``.
    """
    mu, sigma, nu = _floats(mu, sigma, nu)
    shape = jnp.broadcast_shapes(mu.shape, sigma.shape, nu.shape)
    eps = jax.random.normal(key, shape, mu.dtype)
    return -(mu + nu * sigma * eps)


#: ``joint_normal_draws``: how many times the jitter is multiplied by 100 before giving up.
JOINT_MAX_RETRIES = 4


def joint_normal_draws(key, mu, cov, num_samples: int | None = None, jitter=None,
                       max_retries: int = JOINT_MAX_RETRIES) -> tuple[Array, Array]:
    """Joint draws from ``N(mu, cov)`` by a Cholesky factor that does not fail silently.

    ``L`` factors ``cov + jitter * s * I`` (``s`` the mean ``|diag(cov)|``; ``jitter`` defaults
    to ``ntkbo.gp.default_jitter``: ``1e-10`` in float64, ``1e-6`` in float32), and the draws are
    ``mu + L eps``. Over many close candidates in float32 that factorisation fails (``cov`` is
    numerically rank-deficient; the factor comes back NaN); then the jitter is multiplied by 100
    and the factorisation repeated, up to ``max_retries`` times (a ``lax.while_loop``: no cost
    when the first one succeeds, and the draws are then exactly ``ntkbo.gp.sample_gaussian``'s).
    If every factor fails, the draws are the independent marginals ``mu + sqrt(diag(cov)) eps``.
    Non-finite draws (a non-finite ``mu`` or ``cov``) come back ``+inf``, never NaN, so an argmin or
    argmax over them is not silently an arbitrary candidate.

    Args:
      key: PRNG key; mu: ``(n,)``; cov: ``(n, n)``; num_samples: ``None`` or ``S``.

    Returns:
      ``(draws, retries)``: ``(n,)`` or ``(S, n)``, and an int32 scalar, the number of jitter
      increases used (``0`` normally; ``max_retries + 1`` means the marginal fallback). Report it
      in ``info``: a non-zero value is a round whose draws were made less exact.
    """
    n = mu.shape[-1]
    if jitter is None:
        jitter = 1e-10 if cov.dtype == jnp.float64 else 1e-6
    scale = jnp.maximum(jnp.mean(jnp.abs(jnp.diag(cov))), jnp.finfo(cov.dtype).tiny)
    eye = jnp.eye(n, dtype=cov.dtype)

    def factor(t):
        grow = jnp.asarray(100.0, cov.dtype) ** t.astype(cov.dtype)
        return linalg.cholesky(cov + (jitter * grow * scale) * eye)

    def failed(chol):
        return ~jnp.all(jnp.isfinite(chol))

    chol0 = linalg.cholesky(cov + jitter * scale * eye)  # as ntkbo.gp.sample_gaussian

    def cond(carry):
        t, chol = carry
        return failed(chol) & (t <= max_retries)

    def body(carry):
        t, _ = carry
        return t + 1, jnp.where(t + 1 <= max_retries, factor(t + 1), jnp.nan)

    retries, chol = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), chol0))
    shape = (n,) if num_samples is None else (num_samples, n)
    z = jax.random.normal(key, shape, mu.dtype)
    joint = mu + z @ chol.T
    marginal = mu + z * jnp.sqrt(jnp.maximum(jnp.diag(cov), 0.0))
    draws = jnp.where(failed(chol), marginal, joint)
    return jnp.where(jnp.isfinite(draws), draws, jnp.inf), retries


@jax.jit
def thompson_joint(key, mu, cov, jitter=None) -> Array:
    """A joint posterior sample over a set of points, as an acquisition: ``-(mu + L eps)``.

    ``L`` is the Cholesky factor of ``cov + jitter * mean(diag(cov)) * I``; if that factorisation
    fails (non-finite), the symmetric eigendecomposition with negative eigenvalues clipped to zero
    is used instead, so a rank-deficient ``cov`` (duplicate points) still gives a finite sample.

    Args:
        key: PRNG key.
        mu: ``(..., n)`` posterior mean at ``n`` points.
        cov: ``(..., n, n)`` posterior covariance (symmetric positive semi-definite).
        jitter: diagonal jitter relative to the mean variance; default ``1e-10`` in float64 and
            ``1e-5`` in float32.

    Returns:
        ``(..., n)``: the negated sample; ``E = -mu``, ``Cov = cov`` (up to the jitter).
    """
    mu, cov = _floats(mu, cov)
    if jitter is None:
        jitter = 1e-10 if mu.dtype == jnp.float64 else 1e-5
    n = cov.shape[-1]
    scale = jnp.maximum(jnp.mean(jnp.diagonal(cov, axis1=-2, axis2=-1), axis=-1), 0.0)
    scale = jnp.where(scale > 0, scale, 1.0)[..., None, None]
    cov = 0.5 * (cov + jnp.swapaxes(cov, -1, -2))
    eye = jnp.eye(n, dtype=cov.dtype)
    chol = linalg.cholesky(cov + jitter * scale * eye)
    eps = jax.random.normal(key, jnp.broadcast_shapes(mu.shape, cov.shape[:-1]), mu.dtype)

    def via_eigh(_):
        w, v = linalg.eigh(cov)
        return jnp.einsum("...ij,...j->...i", v, jnp.sqrt(jnp.maximum(w, 0.0)) * eps)

    def via_chol(_):
        return jnp.einsum("...ij,...j->...i", chol, eps)

    ok = jnp.all(jnp.isfinite(chol))
    return -(mu + jax.lax.cond(ok, via_chol, via_eigh, None))
