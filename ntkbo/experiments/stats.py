"""The statistics of a study's report, in plain numpy (scipy is a test dependency only).

Everything here works on final values to be *minimised* (best regret, best f, Neural-CBO's metric),
one value per seed:

- ``welch``: one-sided Welch t-test (statistic, Welch-Satterthwaite df, p-value), NeuralBO's Table 2;
- ``welch_against``: every algorithm against a reference, ``H0: mu_alg <= mu_ref`` vs
  ``Ha: mu_alg > mu_ref`` (the reference is better), as NeuralBO's Table 2 reads (Phan-Trong et
  al. 2023, Section 7.1);
- ``bh_adjust``: Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1);
- ``ks_normal``: Kolmogorov-Smirnov normality test of a sample against the normal with the sample's
  own mean and sd (ddof=1), NeuralBO's Table 1; the p-value is the exact two-sided Kolmogorov
  distribution of ``scipy.stats.kstest(z, 'norm')`` (its default ``method='auto'`` is exact for
  the two-sided test), computed as scipy does it, see ``kolmogorov_sf``. Because the mean and sd are
  estimated from the same sample this is *not* Lilliefors' test: its p-values are conservative
  (too large), exactly as in the paper's table;
- ``describe``: mean, sd (ddof=1), median; ``t_interval``: the t-based 95% interval of a mean,
  pointwise along best-so-far curves; ``average_ranks``: ranks of algorithms per problem (1 = best,
  ties averaged) averaged over problems.

Distribution functions are implemented here: the t distribution's tail through the regularised
incomplete beta function (Lentz's continued fraction, Numerical Recipes 6.4), the normal CDF through
``math.erfc``, the Kolmogorov distribution through Durbin's matrix (Marsaglia, Tsang & Wang 2003),
the Birnbaum-Tingey one-sided formula and the Kolmogorov series for the asymptotic law.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = [
    "WelchResult", "KSResult", "t_sf", "t_cdf", "t_ppf", "normal_cdf", "betainc",
    "welch", "welch_against", "bh_adjust", "ks_normal", "kolmogorov_sf", "kolmogorov_asymp_sf",
    "smirnov_sf", "describe", "t_interval", "rankdata", "average_ranks", "table2_rows",
]


# ----------------------------------------------------------------------------------------------
# Distribution functions


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b) (modified Lentz; Numerical Recipes eq. 6.4.5)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            return h
    raise ArithmeticError(f"betainc's continued fraction did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``.

    The continued fraction converges fast for ``x < (a + 1) / (a + b + 2)``; above that the symmetry
    ``I_x(a, b) = 1 - I_{1-x}(b, a)`` is used (Numerical Recipes 6.4).
    """
    if not (a > 0 and b > 0) or not (0.0 <= x <= 1.0):
        return math.nan
    if x == 0.0 or x == 1.0:
        return x
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
           + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df > 0`` (real) degrees of freedom.

    ``P(|T| > |t|) = I_{df/(df+t^2)}(df/2, 1/2)``; the tail beyond ``|t|`` is half of it, computed
    directly (not as ``1 - cdf``) so that small p-values keep their relative accuracy.
    """
    t, df = float(t), float(df)
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if math.isinf(df):
        return normal_cdf(-t)
    tail = 0.5 * betainc(0.5 * df, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t) = P(T > -t)``."""
    return t_sf(-float(t), df)


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the ``t`` with ``t_cdf(t, df) = p``, by bisection to machine
    precision (the CDF is monotone; 200 halvings of a bracket that holds every double suffice)."""
    if not 0.0 < p < 1.0 or not df > 0:
        return {0.0: -math.inf, 1.0: math.inf}.get(p, math.nan)
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > 1.0 - p:  # bracket: grow until the upper tail is small enough
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if t_sf(mid, df) > 1.0 - p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def normal_cdf(z):
    """Standard normal CDF ``Phi(z) = erfc(-z / sqrt 2) / 2`` (elementwise; accurate in both tails)."""
    z = np.asarray(z, dtype=float)
    out = np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2.0)), otypes=[float])(z)
    return float(out) if out.ndim == 0 else out


def kolmogorov_asymp_sf(x: float) -> float:
    """Survival function of Kolmogorov's limit law, ``P(K > x) = 2 sum_{k>=1} (-1)^{k-1}
    exp(-2 k^2 x^2)`` (scipy's ``kstwobign.sf``); for small ``x`` the dual series
    ``1 - sqrt(2 pi)/x sum_{k>=1} exp(-(2k-1)^2 pi^2 / (8 x^2))`` converges faster."""
    x = float(x)
    if x <= 0:
        return 1.0
    if x < 1.0:
        s = sum(math.exp(-((2 * k - 1) ** 2) * math.pi ** 2 / (8 * x * x)) for k in range(1, 20))
        return 1.0 - math.sqrt(2 * math.pi) / x * s
    s = sum((-1) ** (k - 1) * math.exp(-2.0 * k * k * x * x) for k in range(1, 101))
    return min(1.0, max(0.0, 2.0 * s))


def smirnov_sf(n: int, x: float) -> float:
    """Exact one-sided ``P(D_n^+ >= x)`` (Birnbaum & Tingey 1951):
    ``x sum_{j=0}^{floor(n(1-x))} C(n,j) (1-x-j/n)^{n-j} (x+j/n)^{j-1}``, summed in log space."""
    if x <= 0:
        return 1.0
    if x >= 1:
        return 0.0
    total = 0.0
    for j in range(0, int(math.floor(n * (1.0 - x))) + 1):
        a = 1.0 - x - j / n
        if a <= 0 and n - j > 0:
            continue
        log_term = (math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                    + ((n - j) * math.log(a) if n - j > 0 else 0.0) + (j - 1) * math.log(x + j / n))
        total += math.exp(log_term)
    return min(1.0, max(0.0, x * total))


def _kolmogorov_cdf_durbin(n: int, d: float) -> float:
    """Exact ``P(D_n < d)`` by Durbin's matrix (Marsaglia, Tsang & Wang 2003, J. Stat. Softw. 8):
    ``n!/n^n (H^n)_{kk}`` with ``k = ceil(n d)``, ``H`` of size ``2k-1``; the power is taken by
    squaring with the scale kept in a separate log so that nothing overflows."""
    k = int(math.ceil(n * d))
    m = 2 * k - 1
    h = k - n * d
    idx = np.arange(m)
    diff = idx[:, None] - idx[None, :] + 1  # H_ij = 1/(i-j+1)! for i-j+1 >= 0
    fact = np.array([math.factorial(i) for i in range(m + 1)], dtype=float)
    H = np.where(diff >= 0, 1.0 / fact[np.clip(diff, 0, m)], 0.0)
    hp = h ** np.arange(1, m + 1)
    H[:, 0] -= hp / fact[1:m + 1]
    H[m - 1, :] -= hp[::-1] / fact[1:m + 1][::-1]
    if 2 * h - 1 > 0:
        H[m - 1, 0] += (2 * h - 1) ** m / fact[m]
    # H^n by binary powering with log-scale bookkeeping
    result, log_result = np.eye(m), 0.0
    base, log_base = H, 0.0
    e = n
    while e:
        if e & 1:
            result = result @ base
            log_result += log_base
            s = np.abs(result).max()
            result, log_result = result / s, log_result + math.log(s)
        e >>= 1
        if e:
            base = base @ base
            log_base *= 2
            s = np.abs(base).max()
            base, log_base = base / s, log_base + math.log(s)
    v = result[k - 1, k - 1]
    if v <= 0:
        return 0.0
    return min(1.0, math.exp(math.log(v) + log_result + math.lgamma(n + 1) - n * math.log(n)))


def kolmogorov_sf(n: int, d: float) -> float:
    """``P(D_n >= d)`` for the two-sided one-sample KS statistic: scipy's ``kstwo.sf(d, n)``.

    The branches follow scipy's ``_kolmogn`` (Simard & L'Ecuyer 2011) so the values agree:
    ``n d <= 1/2``: 1; ``n d <= 1``: Ruben-Gambino ``1 - n!/n^n (2nd-1)^n``; ``n d >= n-1``:
    ``2 (1-d)^n``; ``d >= 1/2``: exactly ``2 P(D+ >= d)``; ``n <= 140``: exact (Durbin's matrix where
    scipy uses Durbin's or Pomeranz's, both exact) for ``n d^2 <= 4``, else Miller's ``2 P(D+ >= d)``
    as scipy; ``n > 140``: ``2 P(D+ >= d)`` for ``n d^2 >= 2.2`` (0 beyond 370) as scipy, otherwise
    exact where scipy uses Pelz-Good's approximation when ``n d^{1.5} > 1.4`` (agreement there is
    to that approximation's accuracy, about 1e-5, not to machine precision).
    """
    n, d = int(n), float(d)
    if n <= 0 or math.isnan(d):
        return math.nan
    if d >= 1.0:
        return 0.0
    if d <= 0.0:
        return 1.0
    t = n * d
    if t <= 1.0:
        if t <= 0.5:
            return 1.0
        cdf = math.exp(math.lgamma(n + 1) - n * math.log(n) + n * math.log(2 * t - 1))
        return min(1.0, max(0.0, 1.0 - cdf))
    if t >= n - 1:
        return min(1.0, 2 * (1.0 - d) ** n)
    if d >= 0.5:
        return min(1.0, 2 * smirnov_sf(n, d))
    nd2 = t * d
    if n <= 140:
        if nd2 <= 4:
            return min(1.0, max(0.0, 1.0 - _kolmogorov_cdf_durbin(n, d)))
        return min(1.0, 2 * smirnov_sf(n, d))
    if nd2 >= 370.0:
        return 0.0
    if nd2 >= 2.2:
        return min(1.0, 2 * smirnov_sf(n, d))
    return min(1.0, max(0.0, 1.0 - _kolmogorov_cdf_durbin(n, d)))


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
    ``'two-sided'``; as ``scipy.stats.ttest_ind(a, b, equal_var=False, alternative=...)``.
    NaN when either sample has fewer than two values or both have zero variance.
    """
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    na, nb = a.size, b.size
    if na < 2 or nb < 2:
        return WelchResult(math.nan, math.nan, math.nan)
    va, vb = a.var(ddof=1) / na, b.var(ddof=1) / nb
    se2 = va + vb
    if not se2 > 0:
        return WelchResult(math.nan, math.nan, math.nan)
    t = float((a.mean() - b.mean()) / math.sqrt(se2))
    df = float(se2 ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1)))
    if alternative == "greater":
        p = t_sf(t, df)
    elif alternative == "less":
        p = t_cdf(t, df)
    else:
        p = min(1.0, 2.0 * t_sf(abs(t), df))
    return WelchResult(t, df, p)


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
    left NaN and not counted in ``m``. Equals ``scipy.stats.false_discovery_control(p, method='bh')``
    on finite input."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    flat, res = p.ravel(), out.reshape(-1)
    ok = np.flatnonzero(np.isfinite(flat))
    if ok.size == 0:
        return out
    if np.any((flat[ok] < 0) | (flat[ok] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    m = ok.size
    order = np.argsort(flat[ok], kind="mergesort")
    ps = flat[ok][order]
    adj = ps * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(adj[::-1])[::-1]
    res[ok[order]] = np.minimum(adj, 1.0)
    return out


class KSResult(NamedTuple):
    statistic: float  # sup |F_n(z) - Phi(z)| of the standardised sample
    pvalue: float
    n: int


def ks_normal(sample, method: str = "exact") -> KSResult:
    """Kolmogorov-Smirnov test of normality as NeuralBO's Table 1: standardise the sample,
    ``z = (x - mean) / sd`` (sd with ddof=1), and test ``z`` against the standard normal:
    ``D = max_i max(i/n - Phi(z_(i)), Phi(z_(i)) - (i-1)/n)``, two-sided. ``method='exact'`` is
    the exact law of ``D`` (``kolmogorov_sf``), which is ``scipy.stats.kstest(z, 'norm')``'s default;
    ``'asymp'`` is Kolmogorov's limit ``P(K > sqrt(n) D)``. NaN for fewer than 3 values or zero sd.
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
    z = np.sort((x - x.mean()) / sd)
    cdf = normal_cdf(z)
    i = np.arange(1, n + 1)
    d = float(max(np.max(i / n - cdf), np.max(cdf - (i - 1) / n)))
    p = kolmogorov_sf(n, d) if method == "exact" else kolmogorov_asymp_sf(math.sqrt(n) * d)
    return KSResult(d, p, n)


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
    v = np.asarray(values, dtype=float).ravel()
    order = np.argsort(v, kind="mergesort")
    sv = v[order]
    ranks = np.empty(v.size)
    start = 0
    while start < v.size:
        stop = start + 1
        while stop < v.size and sv[stop] == sv[start]:
            stop += 1
        ranks[order[start:stop]] = 0.5 * (start + 1 + stop)  # mean of ranks start+1 .. stop
        start = stop
    return ranks


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
