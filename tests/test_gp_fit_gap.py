"""The objectives of ``benchmarks/gp_fit_gap.py`` against formulas written out independently:
``benchmarks/gp_fit.py``'s float64 likelihood and priors (R&W eq. 2.30 in numpy) and central
finite differences. No BoTorch needed."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import gp_fit_gap as G
from benchmarks import gp_fit
from ntkbo import data as D
from ntkbo import gp as NG
from ntkbo.kernels.stationary import STATIONARY


def _data(n=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, d))
    y = np.sin(4.0 * x).sum(1) + 0.5
    return x, (y - y.mean()) / y.std(ddof=1) + 0.3  # a non-zero mean for the mean's terms


def test_reference_objective_and_gradient():
    """``objective`` (the SciPy reference's) equals ``gp_fit``'s likelihood plus gp's priors for
    gp's ARD objective, and the likelihood plus the ell and noise priors (with the mean) for the
    others; its analytic gradient matches central differences. Tolerances: 1e-9 relative on the
    value (both float64, same sums in another order); 1e-5 on the gradient (differences with
    step 1e-6 have an error of about 1e-7 here). Catches (each checked on a copy) the shared
    lengthscale's prior counted d times, as gp's shared model does not, and a dropped ``-log x``
    term of the log-normal densities."""
    x, y = _data()
    n, d = x.shape
    d2 = (x[:, None, :] - x[None, :, :]).transpose(2, 0, 1) ** 2
    ell, signal, noise, mean = np.array([0.3, 0.5, 0.8]), 0.9, 0.01, 0.2
    lml0 = gp_fit.log_marginal_likelihood(x, y, ell, signal, noise)
    lmlm = gp_fit.log_marginal_likelihood(x, y, ell, signal, noise, mean)
    loc = math.sqrt(2.0) + 0.5 * math.log(d)

    def lognormal(v, mu, s):
        lv = np.log(np.atleast_1d(v))
        return float(np.sum(-0.5 * ((lv - mu) / s) ** 2 - lv - math.log(s * math.sqrt(2 * math.pi))))

    shared_ell = np.full(d, 0.4)
    cases = [
        (G.Spec(), (ell, signal, noise, 0.0), lml0 + gp_fit.gp_log_prior(ell, signal, noise, d)),
        (G.Spec(signal="flat", mean=True), (ell, signal, noise, mean),
         lmlm + lognormal(ell, loc, math.sqrt(3)) + lognormal(noise, -4.0, 1.0)),
        (G.Spec(signal=signal, mean=True, noise_unit=1.3), (ell, signal, noise, mean),
         lmlm + lognormal(ell, loc, math.sqrt(3)) + lognormal(noise / 1.3, -4.0, 1.0)),
        (G.Spec(shared=True), (shared_ell, signal, noise, 0.0),
         gp_fit.log_marginal_likelihood(x, y, shared_ell, signal, noise)
         + lognormal(0.4, loc, math.sqrt(3)) + lognormal(signal, 0.0, 1.0)
         + lognormal(noise, -4.0, 1.0)),
    ]
    for spec, vals, want in cases:
        t = spec.pack(*vals, d)
        value, grad = G.objective(t, spec, d2, y)
        assert abs(-value - want) <= 1e-9 * abs(want), (spec.__dict__, -value, want)
        assert abs(G.map_value(spec, x, y, *vals) * n - want) <= 1e-9 * abs(want)
        eye = np.eye(len(t)) * 1e-6
        fd = np.array([(G.objective(t + e, spec, d2, y)[0] - G.objective(t - e, spec, d2, y)[0])
                       / 2e-6 for e in eye])
        assert np.max(np.abs(fd - grad)) <= 1e-5, (spec.__dict__, fd, grad)


def test_profiled_mean_likelihood():
    """``ntkbo.gp.profiled_log_marginal_likelihood`` in float32 (the fits' precision) is
    ``gp_fit``'s float64 likelihood at the generalised least-squares mean (``gls_mean``, written
    out in numpy), and its gradient that of the float64 profiled likelihood by central
    differences (the mean re-solved at each point). Tolerances: 1e-4 relative on the value, 2e-3
    of the largest entry on the gradient (float32 Cholesky of a 12 x 12 matrix with noise 0.01:
    condition about 1e3, so relative errors of about 1e-4 at most). Catches (each checked on a
    copy) the mean left at 0 (the value off by over 0.1 nats here) and padding rows counted in
    ``1^T A^-1 1`` (capacity 16 > 12 rows)."""
    x, y = _data()
    n, d = x.shape
    lml = NG.profiled_log_marginal_likelihood
    data = D.append(D.empty(16, d, jnp.float32), jnp.asarray(x, jnp.float32),
                    jnp.asarray(y, jnp.float32))

    def f(t):
        k = lambda a, b: STATIONARY["rbf"](a, b, jnp.exp(t[:d]), jnp.exp(t[d]))  # noqa: E731
        return lml(k, data, jnp.exp(t[d + 1]), jitter=0.0)

    def ref(t):
        ell, s, lam = np.exp(t[:d]), math.exp(t[d]), math.exp(t[d + 1])
        return gp_fit.log_marginal_likelihood(x, y, ell, s, lam, G.gls_mean(x, y, ell, s, lam))

    t = np.log([0.3, 0.5, 0.8, 0.9, 0.01])
    want = ref(t)
    assert abs(want - gp_fit.log_marginal_likelihood(x, y, np.exp(t[:d]), 0.9, 0.01)) > 0.1
    got = float(f(jnp.asarray(t, jnp.float32)))
    assert abs(got - want) <= 1e-4 * abs(want), (got, want)
    grad = np.asarray(jax.grad(f)(jnp.asarray(t, jnp.float32)), float)
    fd = np.array([(ref(t + e) - ref(t - e)) / 2e-6 for e in np.eye(len(t)) * 1e-6])
    assert np.max(np.abs(grad - fd)) <= 2e-3 * np.max(np.abs(fd)), (grad, fd)


def test_held_out_predictive_density():
    """``gp_fit.log_predictive_density`` equals the mean Gaussian log density of held-out values
    under ``ntkbo.gp``'s posterior (``fit`` with the prior mean, ``mean``, ``variance`` plus the
    noise), both float64. Tolerance 1e-9 relative: the same algebra, different code and order
    of sums. Catches (checked on a copy) the noise left out of the predictive variance (the
    density off by over 0.1 nats here) and the mean not subtracted from the held-out values."""
    x, y = _data()
    xt, yt = _data(n=30, seed=1)
    d = x.shape[1]
    ell, signal, noise, mean = np.array([0.3, 0.5, 0.8]), 0.9, 0.01, 0.2
    k = lambda a, b: STATIONARY["rbf"](a, b, jnp.asarray(ell), signal)  # noqa: E731
    data = D.append(D.empty(16, d, jnp.float64), jnp.asarray(x), jnp.asarray(y))
    post = NG.fit(k, data, noise, prior_mean=mean, jitter=0.0)
    mu = np.asarray(NG.mean(k, post, jnp.asarray(xt)))
    var = np.asarray(NG.variance(k, post, jnp.asarray(xt))) + noise
    want = float(np.mean(-0.5 * (yt - mu) ** 2 / var - 0.5 * np.log(2 * math.pi * var)))
    got = gp_fit.log_predictive_density(x, y, xt, yt, ell, signal, noise, mean)
    assert abs(got - want) <= 1e-9 * abs(want), (got, want)
    without_noise = np.mean(-0.5 * (yt - mu) ** 2 / (var - noise)
                            - 0.5 * np.log(2 * math.pi * (var - noise)))
    assert abs(without_noise - want) > 0.1  # the noise term matters on these data
