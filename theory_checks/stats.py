"""Statistics shared by the checks: log-log slopes with confidence intervals and Monte Carlo
tolerances for sample means and covariances of Gaussian vectors.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def loglog_slope(x, y) -> tuple[float, float]:
    """Least-squares slope of ``log y`` on ``log x`` and its standard error ``(slope, se)``."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    res = stats.linregress(lx, ly)
    return float(res.slope), float(res.stderr)


def bootstrap_slope(x, ys, key_seed: int = 0, num: int = 1000, level: float = 0.95,
                    transform=None):
    """Slope of ``log mean(ys) `` on ``log x`` and a percentile bootstrap interval over the runs.

    Args:
      x: ``(n,)`` positive abscissae.
      ys: ``(runs, n)`` positive curves (one per seed); runs are resampled with replacement, the
        same resampled runs at every ``x`` (paired curves keep their pairing).
      transform: ``None`` or a function applied to each mean curve ``(n,)`` before the log (e.g.
        a floor, for means that may be non-positive).

    Returns:
      ``(slope, low, high)``.
    """
    ys = np.asarray(ys, float)
    rng = np.random.default_rng(key_seed)
    tf = (lambda m: m) if transform is None else transform
    slope = loglog_slope(x, tf(ys.mean(0)))[0]
    idx = rng.integers(0, ys.shape[0], size=(num, ys.shape[0]))
    # The least-squares slope of every resample at once: sum(dx dy) / sum(dx^2) with dx, dy the
    # centred logs (the slope loglog_slope's linregress computes, vectorised over resamples).
    dx = np.log(np.asarray(x, float))
    dx = dx - dx.mean()
    ly = np.log(tf(ys[idx].mean(1)))  # (num, n)
    boots = (ly - ly.mean(1, keepdims=True)) @ dx / (dx @ dx)
    a = (1.0 - level) / 2.0
    return slope, float(np.quantile(boots, a)), float(np.quantile(boots, 1.0 - a))


def mean_z(samples, mu, cov) -> np.ndarray:
    """``(sample mean - mu) / sqrt(diag(cov) / M)`` per coordinate; ``samples`` ``(M, n)``."""
    samples = np.asarray(samples, float)
    se = np.sqrt(np.maximum(np.diag(cov), 1e-300) / samples.shape[0])
    return (samples.mean(0) - np.asarray(mu)) / se


def cov_error(samples, cov) -> tuple[float, float]:
    """``(||S - cov||_F, its Monte Carlo scale)`` for the sample covariance ``S`` of ``M`` draws.

    For Gaussian draws ``Var(S_ij) ~ (cov_ij^2 + cov_ii cov_jj) / M``, so the expected squared
    Frobenius error is ``(||cov||_F^2 + tr(cov)^2) / M``; its square root is the scale returned.
    """
    samples = np.asarray(samples, float)
    s = np.cov(samples, rowvar=False)
    cov = np.asarray(cov, float)
    scale = np.sqrt((np.sum(cov**2) + np.trace(cov) ** 2) / samples.shape[0])
    return float(np.linalg.norm(s - cov)), float(scale)


def ks_min_pvalue(samples, mu, var) -> float:
    """Bonferroni-corrected smallest per-point Kolmogorov-Smirnov p-value against
    ``N(mu_i, var_i)``: ``min(1, n * min_i p_i)``."""
    samples = np.asarray(samples, float)
    ps = [stats.kstest((samples[:, i] - mu[i]) / np.sqrt(var[i]), "norm").pvalue
          for i in range(samples.shape[1])]
    return float(min(1.0, len(ps) * min(ps)))
