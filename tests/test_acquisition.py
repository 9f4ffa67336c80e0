"""Tests of ntkbo.acquisition against independent float64 references (scipy, quadrature, MC).

References: EI, PI, UCB from their textbook formulas with ``scipy.stats.norm``; log-PI from scipy's
``log_ndtr`` (accurate in the tail); ``log h`` in the far tail from a quadrature of the defining
integral ``h(z) = int_{-inf}^z (z - t) phi(t) dt`` rescaled so that nothing underflows, which shares
no code or formula with the continued fraction used by the library.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special
from scipy.stats import norm

from ntkbo import acquisition as acq

# z grid from far left tail (EI underflows below z ~ -38) to the far right; the 20.1 and 4 points
# straddle jax's log_ndtr and our continued-fraction branch changes.
Z_EXTREME = np.array([-1e8, -1e4, -1e3, -100.0, -40.0, -38.0, -20.1, -20.0, -10.0, -5.0,
                      -4.0001, -4.0, -3.9999, -1.0, -1e-9, 0.0, 1e-9, 0.5, 1.0, 4.0, 10.0, 40.0,
                      1e3, 1e8])
Z_MODERATE = np.linspace(-8.0, 8.0, 161)


def ref_log_h(z: float) -> float:
    """``log h(z)`` by quadrature; for z < -1, with x = -z and t = z - v / x,
    ``h(z) = phi(x) / x**2 * int_0^inf v exp(-v - v**2 / (2 x**2)) dv`` (no underflow)."""
    if z >= -1.0:
        return float(np.log(z * norm.cdf(z) + norm.pdf(z)))
    x = -z
    j, _ = integrate.quad(lambda v: v * np.exp(-v - v * v / (2 * x * x)), 0, np.inf,
                          epsabs=0, epsrel=1e-13, limit=200)
    return float(norm.logpdf(x) + np.log(j) - 2 * np.log(x))


def grid(z, sigma):
    """mu, best, sigma giving standardised improvement z: best = 0, mu = -z sigma."""
    return -z * sigma, sigma, 0.0


@pytest.mark.parametrize("sigma", [1.0, 0.37, 25.0])
def test_ei_pi_ucb_match_scipy_formulas(sigma):
    z = Z_MODERATE
    mu, s, best = grid(z, sigma)
    # The textbook formula loses up to ~z**2 ulps to cancellation at z = -8, hence rtol 1e-12.
    ei_ref = s * (z * norm.cdf(z) + norm.pdf(z))
    np.testing.assert_allclose(acq.expected_improvement(mu, s, best), ei_ref, rtol=1e-12)
    np.testing.assert_allclose(acq.probability_of_improvement(mu, s, best), norm.cdf(z), rtol=1e-13)
    np.testing.assert_allclose(acq.log_probability_of_improvement(mu, s, best), norm.logcdf(z),
                               rtol=1e-13)
    np.testing.assert_allclose(acq.log_expected_improvement(mu, s, best), np.log(ei_ref),
                               rtol=1e-12, atol=1e-12)
    beta = 2.7
    np.testing.assert_allclose(acq.upper_confidence_bound(mu, s, beta),
                               -(mu - np.sqrt(beta) * s), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(acq.posterior_mean(mu), -mu, rtol=0, atol=0)


def test_xi_shifts_the_incumbent():
    mu, s, best, xi = 0.3, 0.8, 1.0, 0.25
    z = (best - xi - mu) / s
    np.testing.assert_allclose(acq.expected_improvement(mu, s, best, xi),
                               s * (z * norm.cdf(z) + norm.pdf(z)), rtol=1e-14)
    np.testing.assert_allclose(acq.probability_of_improvement(mu, s, best, xi), norm.cdf(z),
                               rtol=1e-14)


@pytest.mark.parametrize("sigma", [1.0, 3e-3])
def test_log_ei_accurate_at_extreme_z(sigma):
    z = Z_EXTREME
    mu, s, best = grid(z, sigma)
    ref = np.array([ref_log_h(v) for v in z]) + np.log(sigma)
    out = np.asarray(acq.log_expected_improvement(mu, s, best))
    assert np.all(np.isfinite(out))
    # quad's relative tolerance 1e-13 on the integral is an absolute 1e-13 on its log; the
    # remaining terms are exact up to a few ulps of |log h| (e.g. x**2/2 = 5e15 at z = -1e8).
    np.testing.assert_allclose(out, ref, rtol=1e-14, atol=2e-13)
    # EI itself: relative accuracy wherever it is a normal float, exact 0 where it underflows.
    ei = np.asarray(acq.expected_improvement(mu, s, best))
    normal = np.exp(ref) > np.finfo(np.float64).tiny
    np.testing.assert_allclose(ei[normal], np.exp(ref[normal]), rtol=1e-13)
    assert np.all(ei[z <= -40] == 0.0) and np.all(out[z <= -40] < -800)


def test_log_pi_matches_scipy_log_ndtr_in_the_tail():
    z = Z_EXTREME
    out = np.asarray(acq.log_probability_of_improvement(-z, 1.0, 0.0))
    # scipy's log_ndtr is accurate to a few ulps over the whole range; so is the continued fraction.
    np.testing.assert_allclose(out, special.log_ndtr(z), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(acq.probability_of_improvement(-z, 1.0, 0.0), special.ndtr(z),
                               rtol=1e-13, atol=0)


def ref_dlog_h(z: float) -> float:
    """``d log h / dz = Phi(z) / h(z)``; for z < -1 by quadrature of both as multiples of phi:
    ``Phi(z) / phi(z) = I0 / x``, ``h(z) / phi(z) = I1 / x**2`` with
    ``Ik = int_0^inf v**k exp(-v - v**2 / (2 x**2)) dv`` (x = -z), so the ratio is ``x I0 / I1``."""
    if z >= -1.0:
        return float(norm.cdf(z) / (z * norm.cdf(z) + norm.pdf(z)))
    x = -z
    i0, i1 = (integrate.quad(lambda v: v**k * np.exp(-v - v * v / (2 * x * x)), 0, np.inf,
                             epsabs=0, epsrel=1e-13, limit=200)[0] for k in (0, 1))
    return x * i0 / i1


def test_log_ei_gradient_is_finite_and_matches_analytic():
    # d log EI / d mu = -(1 / sigma) Phi(z) / h(z).
    sigma = 2.0
    z = np.array([-1e4, -1e3, -40.0, -20.0, -5.0, -4.0, -1.0, 0.0, 3.0, 40.0])
    dlog_ei = jax.grad(lambda m: acq.log_expected_improvement(m, sigma, 0.0))
    grad = jax.jit(jax.vmap(dlog_ei))(-z * sigma)
    ref = -np.array([ref_dlog_h(v) for v in z]) / sigma
    # Ratio of two integrals each accurate to 1e-13 relative.
    np.testing.assert_allclose(grad, ref, rtol=1e-12)
    g_sigma = jax.vmap(jax.grad(lambda s: acq.log_expected_improvement(40.0, s, 0.0)))(
        jnp.array([1e-3, 1.0, 1e3]))
    assert np.all(np.isfinite(g_sigma)) and np.all(np.asarray(g_sigma) > 0)


def test_sigma_zero_gives_deterministic_limits_without_nan():
    mu = jnp.array([-1.0, 0.0, 2.0])  # improvements u = best - mu = 1, 0, -2
    best, zero = 0.0, jnp.zeros(3)
    u = best - np.asarray(mu)
    np.testing.assert_array_equal(acq.expected_improvement(mu, zero, best), np.maximum(u, 0))
    np.testing.assert_array_equal(acq.log_expected_improvement(mu, zero, best),
                                  [0.0, -np.inf, -np.inf])
    np.testing.assert_array_equal(acq.probability_of_improvement(mu, zero, best), u > 0)
    np.testing.assert_array_equal(acq.log_probability_of_improvement(mu, zero, best),
                                  [0.0, -np.inf, -np.inf])
    for fn in (acq.expected_improvement, acq.log_expected_improvement,
               acq.probability_of_improvement, acq.log_probability_of_improvement):
        g_mu, g_s = jax.jit(jax.vmap(jax.grad(lambda m, s: fn(m, s, best), (0, 1))))(mu, zero)
        assert np.all(np.isfinite(g_mu)) and np.all(np.isfinite(g_s)), fn.__name__
    # A vanishing but positive sigma tends to the same limits (no overflow in u / sigma).
    tiny = jnp.full(3, 1e-300)
    np.testing.assert_allclose(acq.expected_improvement(mu, tiny, best), np.maximum(u, 0),
                               atol=1e-299)  # u = 0 gives sigma * phi(0) = 4e-301
    np.testing.assert_allclose(acq.log_expected_improvement(mu[:1], tiny[:1], best), 0.0)


def test_sign_convention_prefers_low_mean_and_high_sigma():
    mus = jnp.linspace(-2.0, 2.0, 9)
    sigmas = jnp.linspace(0.1, 3.0, 9)
    best, beta = 0.5, 4.0
    for fn in (acq.expected_improvement, acq.log_expected_improvement,
               acq.probability_of_improvement, acq.log_probability_of_improvement):
        assert np.all(np.diff(fn(mus, 1.0, best)) < 0), fn.__name__  # lower mean is better
    assert np.all(np.diff(acq.upper_confidence_bound(mus, 1.0, beta)) < 0)
    assert np.all(np.diff(acq.posterior_mean(mus)) < 0)
    for fn in (acq.expected_improvement, acq.log_expected_improvement):
        assert np.all(np.diff(fn(1.0, sigmas, best)) > 0), fn.__name__  # more uncertainty is better
    assert np.all(np.diff(acq.upper_confidence_bound(1.0, sigmas, beta)) > 0)
    # PI prefers sigma only when the mean is worse than the incumbent (z < 0).
    assert np.all(np.diff(acq.probability_of_improvement(1.0, sigmas, best)) > 0)


def test_broadcasting_and_dtypes():
    mu, sigma = jnp.zeros((5, 1)), jnp.ones((1, 3))
    for fn in (acq.expected_improvement, acq.log_expected_improvement,
               acq.probability_of_improvement, acq.log_probability_of_improvement):
        assert fn(mu, sigma, jnp.zeros(3)).shape == (5, 3)
    assert acq.upper_confidence_bound(mu, sigma, 2.0).shape == (5, 3)
    assert acq.thompson_independent(jax.random.PRNGKey(0), mu, sigma).shape == (5, 3)
    # float32 inputs stay float32 and keep LogEI finite and accurate where EI underflows.
    z = np.array([-1e3, -40.0, -10.0, 0.0, 10.0], np.float32)
    out = acq.log_expected_improvement(-z, jnp.float32(1.0), jnp.float32(0.0))
    assert out.dtype == jnp.float32
    ref = np.array([ref_log_h(float(v)) for v in z])
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=2e-6)  # a few float32 ulps


def test_probability_of_feasibility():
    mu_c, sigma_c, thr = np.array([-3.0, 0.0, 2.0, 50.0]), 1.5, 0.5
    zc = (thr - mu_c) / sigma_c
    np.testing.assert_allclose(acq.probability_of_feasibility(mu_c, sigma_c, thr), norm.cdf(zc),
                               rtol=1e-14)
    np.testing.assert_allclose(acq.log_probability_of_feasibility(mu_c, sigma_c, thr),
                               norm.logcdf(zc), rtol=1e-14)
    np.testing.assert_array_equal(acq.probability_of_feasibility(jnp.array([0.0, 1.0]), 0.0, 0.0),
                                  [1.0, 0.0])


def test_thompson_independent_moments():
    n = 200_000
    mu, sigma, nu = jnp.array([1.0, -2.0, 0.0]), jnp.array([0.5, 2.0, 0.0]), 1.7
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    draws = -jax.vmap(lambda k: acq.thompson_independent(k, mu, sigma, nu))(keys)  # (n, 3)
    draws = np.asarray(draws)
    sd = np.asarray(nu * sigma)
    # 5 standard errors: the mean's SE is sd / sqrt(n), the variance's is sd**2 sqrt(2 / (n - 1)).
    np.testing.assert_allclose(draws.mean(0), mu, atol=5 * sd.max() / np.sqrt(n))
    np.testing.assert_allclose(draws.var(0), sd**2, atol=5 * sd.max() ** 2 * np.sqrt(2 / (n - 1)))
    assert np.all(draws[:, 2] == 0.0)  # sigma = 0: the draw is the mean
    # Independent across points; same key, same draw.
    assert abs(np.corrcoef(draws[:, 0], draws[:, 1])[0, 1]) < 5 / np.sqrt(n)
    k = jax.random.PRNGKey(3)
    np.testing.assert_array_equal(acq.thompson_independent(k, mu, sigma, nu),
                                  acq.thompson_independent(k, mu, sigma, nu))


def test_thompson_joint_covariance():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    cov = a @ a.T + 0.1 * np.eye(4)
    mu = rng.normal(size=4)
    n = 100_000
    keys = jax.random.split(jax.random.PRNGKey(1), n)
    draws = np.asarray(-jax.vmap(lambda k: acq.thompson_joint(k, mu, cov))(keys))
    # SE of a sample covariance entry: sqrt((S_ii S_jj + S_ij**2) / n); 5 SE per entry.
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(np.cov(draws.T) - cov) < 5 * se)
    assert np.all(np.abs(draws.mean(0) - mu) < 5 * np.sqrt(np.diag(cov) / n))


def test_thompson_joint_rank_deficient_and_batched():
    # Two identical points (rank 2 covariance of 3 points) must give a finite, equal sample.
    x = np.array([0.0, 0.0, 1.0])
    cov = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2)
    for jitter in (None, 0.0):  # 0.0 forces the eigendecomposition fallback
        s = np.asarray(acq.thompson_joint(jax.random.PRNGKey(0), np.zeros(3), cov, jitter=jitter))
        assert np.all(np.isfinite(s))
        np.testing.assert_allclose(s[0], s[1], atol=1e-4)  # jitter 1e-10 gives differences ~1e-5
    batch = acq.thompson_joint(jax.random.PRNGKey(0), np.zeros((2, 3)), np.stack([cov, cov]))
    assert batch.shape == (2, 3) and np.all(np.isfinite(batch))
