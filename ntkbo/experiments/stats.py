"""The statistics of a study's report, on ``scipy.stats``.

Everything here works on final values to be *minimised* (best regret, best f, Neural-CBO's metric),
one value per seed:

- ``welch``: one-sided Welch t-test (statistic, Welch-Satterthwaite df, p-value), NeuralBO's Table 2;
- ``welch_against``: every algorithm against a reference, ``H0: mu_alg <= mu_ref`` vs
  ``Ha: mu_alg > mu_ref`` (the reference is better), as NeuralBO's Table 2 reads (Phan-Trong et
  al. 2023, Section 7.1);
- ``bh_adjust``: Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1);
- ``ks_normal``: Kolmogorov-Smirnov normality test of a sample against the normal with the sample's
  own mean and sd (ddof=1), NeuralBO's Table 1, with the exact two-sided Kolmogorov distribution
  (``scipy.stats.kstwo``). Because the mean and sd are estimated from the same sample this is
  *not* Lilliefors' test: its p-values are conservative (too large), exactly as in the paper's
  table;
- ``describe``: mean, sd (ddof=1), median; ``t_interval``: the t-based 95% interval of a mean,
  pointwise along best-so-far curves; ``average_ranks``: ranks of algorithms per problem (1 = best,
  ties averaged) averaged over problems.

The distributions are scipy's: Student's t (``scipy.stats.t``), the normal, the exact and the
limiting Kolmogorov laws (``kstwo``, ``kstwobign``), Smirnov's one-sided law
(``scipy.special.smirnov``), the regularised incomplete beta function; the tests are
``scipy.stats.ttest_ind``, ``kstest``, ``false_discovery_control`` and ``rankdata``, with this
module's conventions on small or degenerate samples (NaN, not an error).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import scipy.special
import scipy.stats

__all__ = [
    "WelchResult", "KSResult", "t_sf", "t_cdf", "t_ppf", "normal_cdf", "betainc",
    "welch", "welch_against", "bh_adjust", "ks_normal", "kolmogorov_sf", "kolmogorov_asymp_sf",
    "smirnov_sf", "describe", "t_interval", "rankdata", "average_ranks", "table2_rows",
]


# ----------------------------------------------------------------------------------------------
# Distribution functions (scipy's, as Python floats)


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function ``I_x(a, b)`` (``scipy.special.betainc``); NaN outside
    ``a, b > 0``, ``0 <= x <= 1``."""
    return float(scipy.special.betainc(a, b, x))


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` (real) degrees of freedom
    (``scipy.stats.t.sf``: accurate in the tail, not ``1 - cdf``); NaN for ``df <= 0``."""
    return float(scipy.stats.t.sf(t, df))


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` (``scipy.stats.t.cdf``)."""
    return float(scipy.stats.t.cdf(t, df))


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the ``t`` with ``t_cdf(t, df) = p`` (``scipy.stats.t.ppf``)."""
    return float(scipy.stats.t.ppf(p, df))


def normal_cdf(z):
    """Standard normal CDF ``Phi(z)`` (elementwise, ``scipy.stats.norm.cdf``); a float for a
    scalar."""
    out = scipy.stats.norm.cdf(np.asarray(z, dtype=float))
    return float(out) if np.ndim(out) == 0 else out


def kolmogorov_asymp_sf(x: float) -> float:
    """Survival function of Kolmogorov's limit law, ``P(K > x) = 2 sum_{k>=1} (-1)^{k-1}
    exp(-2 k^2 x^2)`` (``scipy.stats.kstwobign.sf``)."""
    return float(scipy.stats.kstwobign.sf(x))


def smirnov_sf(n: int, x: float) -> float:
    """Exact one-sided ``P(D_n^+ >= x)`` (Birnbaum & Tingey 1951; ``scipy.special.smirnov``)."""
    return float(scipy.special.smirnov(int(n), x))


def kolmogorov_sf(n: int, d: float) -> float:
    """``P(D_n >= d)`` for the two-sided one-sample KS statistic of ``n`` values
    (``scipy.stats.kstwo.sf(d, n)``: exact, Simard & L'Ecuyer 2011); NaN for ``n <= 0``."""
    n = int(n)
    return float(scipy.stats.kstwo.sf(d, n)) if n > 0 else math.nan


# ----------------------------------------------------------------------------------------------
# Tests


class WelchResult(NamedTuple):
    statistic: float  # (mean_a - mean_b) / sqrt(var_a/n_a + var_b/n_b)
    df: float  # Welch-Satterthwaite degrees of freedom
    pvalue: float


def welch(a, b, alternative: str = "greater") -> WelchResult:
    """Welch's unequal-variance t-test of the means of ``a`` and ``b`` (1-D samples, n >= 2 each).

    ``t = (mean_a - mean_b) / sqrt(s_a^2/n_a + s_b^2/n_b)`` (sample variances with ddof=1), and
    ``df = (s_a^2/n_a + s_b^2/n_b)^2 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1))``.
    ``alternative``: ``'greater'`` (``Ha: mu_a > mu_b``, p = P(T >= t)), ``'less'`` or
    ``'two-sided'``: ``scipy.stats.ttest_ind(a, b, equal_var=False, alternative=...)``.
    NaN when either sample has fewer than two values or both have zero variance.
    """
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.size < 2 or b.size < 2 or not a.var(ddof=1) / a.size + b.var(ddof=1) / b.size > 0:
        return WelchResult(math.nan, math.nan, math.nan)
    res: Any = scipy.stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    return WelchResult(float(res.statistic), float(res.df), float(res.pvalue))


def welch_against(samples: dict, reference: str, alternative: str = "greater") -> dict:
    """NeuralBO's Table 2 for one problem: for every label in ``samples`` (final values to minimise,
    one per seed) but ``reference``, ``welch(samples[label], samples[reference], alternative)``.
    The default ``'greater'`` is the paper's: the p-value of ``H0: mu_label <= mu_reference``
    against ``Ha: mu_label > mu_reference`` (the reference reaches lower values); ``'less'`` asks
    whether each algorithm beats the reference (``Ha: mu_label < mu_reference``, the demo's test
    against random search). Returns ``{label: WelchResult}``."""
    if reference not in samples:
        raise ValueError(f"reference {reference!r} is not one of the algorithms {sorted(samples)}")
    ref = samples[reference]
    return {k: welch(v, ref, alternative) for k, v in samples.items() if k != reference}


def bh_adjust(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values: with the ``m`` finite p-values sorted,
    ``p_adj_(i) = min(1, min_{j >= i} m p_(j) / j)`` (the step-up's running minimum from the largest
    down), returned in the input order; reject at FDR ``q`` where ``p_adj <= q``. NaN entries are
    left NaN and not counted in ``m``: ``scipy.stats.false_discovery_control(p, method='bh')`` on
    the finite entries."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    flat, res = p.ravel(), out.reshape(-1)
    ok = np.flatnonzero(np.isfinite(flat))
    if ok.size == 0:
        return out
    if np.any((flat[ok] < 0) | (flat[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    res[ok] = scipy.stats.false_discovery_control(flat[ok], method="bh")
    return out


class KSResult(NamedTuple):
    statistic: float  # sup |F_n(z) - Phi(z)| of the standardised sample
    pvalue: float
    n: int


def ks_normal(sample, method: str = "exact") -> KSResult:
    """Kolmogorov-Smirnov test of normality as NeuralBO's Table 1: standardise the sample,
    ``z = (x - mean) / sd`` (sd with ddof=1), and test ``z`` against the standard normal:
    ``D = max_i max(i/n - Phi(z_(i)), Phi(z_(i)) - (i-1)/n)``, two-sided
    (``scipy.stats.kstest(z, 'norm', method=method)``). ``method='exact'`` is the exact law of
    ``D`` (``kolmogorov_sf``); ``'asymp'`` is Kolmogorov's limit ``P(K > sqrt(n) D)``. NaN for
    fewer than 3 values or zero sd.
    """
    if method not in ("exact", "asymp"):
        raise ValueError(f"method must be 'exact' or 'asymp', got {method!r}")
    x = np.asarray(sample, dtype=float).ravel()
    n = x.size
    if n < 3:
        return KSResult(math.nan, math.nan, n)
    sd = x.std(ddof=1)
    if not sd > 0:
        return KSResult(math.nan, math.nan, n)
    res = scipy.stats.kstest((x - x.mean()) / sd, "norm", method=method)
    return KSResult(float(res.statistic), float(res.pvalue), n)


# ----------------------------------------------------------------------------------------------
# Descriptives, intervals, ranks


def describe(sample) -> dict:
    """``{'n', 'mean', 'sd' (ddof=1; NaN for n < 2), 'median'}`` of a 1-D sample."""
    x = np.asarray(sample, dtype=float).ravel()
    n = x.size
    if n == 0:
        return {"n": 0, "mean": math.nan, "sd": math.nan, "median": math.nan}
    return {"n": n, "mean": float(x.mean()), "sd": float(x.std(ddof=1)) if n > 1 else math.nan,
            "median": float(np.median(x))}


def t_interval(values, level: float = 0.95, axis: int = 0):
    """Mean and t-based ``level`` interval of the mean along ``axis`` (seeds), pointwise:
    ``mean +- t_{(1+level)/2, n-1} sd / sqrt(n)``. Returns ``(mean, lo, hi)``; for one value the
    interval collapses to the mean (no spread to estimate)."""
    v = np.asarray(values, dtype=float)
    n = v.shape[axis]
    mean = v.mean(axis=axis)
    if n < 2:
        return mean, mean.copy(), mean.copy()
    half = t_ppf(0.5 + level / 2.0, n - 1) * v.std(axis=axis, ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half


def rankdata(values) -> np.ndarray:
    """Ranks 1..n of a 1-D array, ties given the average of the ranks they span
    (``scipy.stats.rankdata(values, method='average')``)."""
    return scipy.stats.rankdata(np.asarray(values, dtype=float).ravel(), method="average")


def average_ranks(table) -> np.ndarray:
    """Average rank of each algorithm (columns) over problems (rows) of a ``(problems, algorithms)``
    table of values to minimise (for example mean final regret): rank 1 is the lowest value in a row,
    ties averaged; NaN entries (an algorithm not run on a problem) are left out of that row's ranking
    and of that algorithm's average."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"table must be (problems, algorithms), got shape {t.shape}")
    ranks = np.full(t.shape, np.nan)
    for i, row in enumerate(t):
        ok = np.isfinite(row)
        ranks[i, ok] = rankdata(row[ok])
    with np.errstate(invalid="ignore"):
        counts = np.isfinite(ranks).sum(0)
        return np.where(counts > 0, np.nansum(ranks, 0) / np.maximum(counts, 1), np.nan)


def table2_rows(samples_by_problem: dict, reference: str, q: float = 0.05,
                alternative: str = "greater") -> list:
    """NeuralBO's Table 2 over a family of problems: every (problem, algorithm != reference) Welch
    test (``alternative`` as ``welch_against``), with Benjamini-Hochberg adjusted p-values over the
    whole family (our reading of the paper: all tests of the table are one family). Returns rows
    ``(problem, label, WelchResult, p_adj, rejected)`` where ``rejected`` is ``p_adj <= q`` (the
    table's T/F)."""
    rows = []
    for prob, samples in samples_by_problem.items():
        if reference not in samples:
            continue
        for label, res in welch_against(samples, reference, alternative).items():
            rows.append([prob, label, res])
    adj = bh_adjust([r[2].pvalue for r in rows])
    return [(p, lab, r, float(a), bool(a <= q)) for (p, lab, r), a in zip(rows, adj)]
