"""Tests for ntkbo.benchmarks.

Every problem is checked against an independent float64 implementation written from its formula
with Python loops (``REFERENCES`` below, no code shared with the library), at random points of its
box and at its minimisers. Known optima are checked three ways: ``f(optimizer) == optimum``; no
uniform sample and no scipy L-BFGS-B run (on the reference implementation) goes below the optimum;
and, for the values the library computes (separable functions), an independent scipy computation
and the published digits agree. Tolerances are stated where they are used.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from ntkbo import benchmarks as B

PI = math.pi

# ----------------------------------------------------------------------------------------------
# independent reference implementations (float64, loops), written from the formulas


def r_ackley(x):
    d = len(x)
    s1 = sum(v * v for v in x) / d
    s2 = sum(math.cos(2 * PI * v) for v in x) / d
    return -20 * math.exp(-0.2 * math.sqrt(s1)) - math.exp(s2) + 20 + math.e


def r_levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    s = math.sin(PI * w[0]) ** 2
    for i in range(len(x) - 1):
        s += (w[i] - 1) ** 2 * (1 + 10 * math.sin(PI * w[i] + 1) ** 2)
    return s + (w[-1] - 1) ** 2 * (1 + math.sin(2 * PI * w[-1]) ** 2)


def r_michalewicz_term(i, v, m=10):  # i is 1-based
    return -math.sin(v) * math.sin(i * v * v / PI) ** (2 * m)


def r_michalewicz(x):
    return sum(r_michalewicz_term(i + 1, v) for i, v in enumerate(x))


def r_rastrigin(x):
    return 10 * len(x) + sum(v * v - 10 * math.cos(2 * PI * v) for v in x)


def r_styblinski_tang(x):
    return sum(v**4 - 16 * v**2 + 5 * v for v in x) / 2


def r_rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (x[i] - 1) ** 2 for i in range(len(x) - 1))


def r_griewank(x):
    s, p = 0.0, 1.0
    for i, v in enumerate(x):
        s += v * v / 4000
        p *= math.cos(v / math.sqrt(i + 1))
    return s - p + 1


def r_sphere(x):
    return sum(v * v for v in x)


def r_sum_of_squares(x):
    return sum((i + 1) * v * v for i, v in enumerate(x))


def r_dixon_price(x):
    s = (x[0] - 1) ** 2
    for i in range(1, len(x)):
        s += (i + 1) * (2 * x[i] ** 2 - x[i - 1]) ** 2
    return s


def r_cosine_mixture(x):
    return sum(v * v for v in x) - 0.1 * sum(math.cos(5 * PI * v) for v in x)


def r_cosine_mixture_pinnbo(x):
    return 0.1 * sum(math.cos(5 * PI * v) for v in x) + sum(v * v for v in x)


def r_schwefel(x):
    return 418.9829 * len(x) - sum(v * math.sin(math.sqrt(abs(v))) for v in x)


def r_goucb_f1(x):
    return -(25 / (1 + math.exp(-(sum(x) + 1))) + 1)


def r_branin(x):
    x1, x2 = x
    b, c, r, s, t = 5.1 / (4 * PI**2), 5 / PI, 6, 10, 1 / (8 * PI)
    return (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def _r_hartmann(x, A, P):
    alpha = [1.0, 1.2, 3.0, 3.2]
    total = 0.0
    for i in range(4):
        inner = sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(len(x)))
        total += alpha[i] * math.exp(-inner)
    return -total


def r_hartmann3(x):  # Dixon & Szego (1978), P_41 = 0.03815
    A = [[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]]
    P = [
        [0.3689, 0.1170, 0.2673],
        [0.4699, 0.4387, 0.7470],
        [0.1091, 0.8732, 0.5547],
        [0.03815, 0.5743, 0.8828],
    ]
    return _r_hartmann(x, A, P)


def r_hartmann6(x):  # SFU
    A = [
        [10, 3, 17, 3.5, 1.7, 8],
        [0.05, 10, 17, 0.1, 8, 14],
        [3, 3.5, 1.7, 10, 17, 8],
        [17, 8, 0.05, 10, 0.1, 14],
    ]
    P = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ]
    return _r_hartmann(x, A, P)


def _r_shekel(x, m):  # Dixon & Szego (1978): wells a_i, widths c_i
    a = [
        (4, 4, 4, 4),
        (1, 1, 1, 1),
        (8, 8, 8, 8),
        (6, 6, 6, 6),
        (3, 7, 3, 7),
        (2, 9, 2, 9),
        (5, 5, 3, 3),
        (8, 1, 8, 1),
        (6, 2, 6, 2),
        (7, 3.6, 7, 3.6),
    ]
    c = [0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5]
    return -sum(1 / (sum((x[j] - a[i][j]) ** 2 for j in range(4)) + c[i]) for i in range(m))


def r_dropwave(x):
    r2 = x[0] ** 2 + x[1] ** 2
    return -(1 + math.cos(12 * math.sqrt(r2))) / (0.5 * r2 + 2)


def r_simionescu(x):
    return 0.1 * x[0] * x[1]


def r_six_hump_camel(x):
    x1, x2 = x
    return (4 - 2.1 * x1**2 + x1**4 / 3) * x1**2 + x1 * x2 + (-4 + 4 * x2**2) * x2**2


def r_eggholder(x):
    x1, x2 = x
    return -(x2 + 47) * math.sin(math.sqrt(abs(x2 + x1 / 2 + 47))) - x1 * math.sin(
        math.sqrt(abs(x1 - (x2 + 47)))
    )


def r_goldstein_price(x):
    x1, x2 = x
    f1 = 1 + (x1 + x2 + 1) ** 2 * (19 - 14 * x1 + 3 * x1**2 - 14 * x2 + 6 * x1 * x2 + 3 * x2**2)
    f2 = 30 + (2 * x1 - 3 * x2) ** 2 * (
        18 - 32 * x1 + 12 * x1**2 + 48 * x2 - 36 * x1 * x2 + 27 * x2**2
    )
    return f1 * f2


def r_beam_deflection(x):
    t = x[0]
    return (
        math.sin(20 * t) * math.exp(2 * t)
        + math.sin(4 * PI * math.exp(2 * t))
        + 0.4 * t**3
        + 0.2 * t**2
        + 6
    )


REFERENCES = {
    "ackley": r_ackley,
    "levy": r_levy,
    "michalewicz": r_michalewicz,
    "rastrigin": r_rastrigin,
    "styblinski_tang": r_styblinski_tang,
    "rosenbrock": r_rosenbrock,
    "griewank": r_griewank,
    "sphere": r_sphere,
    "sum_of_squares": r_sum_of_squares,
    "dixon_price": r_dixon_price,
    "cosine_mixture": r_cosine_mixture,
    "cosine_mixture_pinnbo": r_cosine_mixture_pinnbo,
    "schwefel": r_schwefel,
    "goucb_f1": r_goucb_f1,
    "branin": r_branin,
    "hartmann3": r_hartmann3,
    "hartmann6": r_hartmann6,
    "shekel5": functools.partial(_r_shekel, m=5),
    "shekel7": functools.partial(_r_shekel, m=7),
    "shekel10": functools.partial(_r_shekel, m=10),
    "dropwave": r_dropwave,
    "simionescu": r_simionescu,
    "six_hump_camel": r_six_hump_camel,
    "eggholder": r_eggholder,
    "goldstein_price": r_goldstein_price,
    "beam_deflection": r_beam_deflection,
}

# standard domains as the references give them (SFU unless the docstring says otherwise)
DOMAINS = {
    "ackley": (-32.768, 32.768),
    "levy": (-10, 10),
    "michalewicz": (0, PI),
    "rastrigin": (-5.12, 5.12),
    "styblinski_tang": (-5, 5),
    "rosenbrock": (-5, 10),
    "griewank": (-600, 600),
    "sphere": (-5.12, 5.12),
    "sum_of_squares": (-10, 10),
    "dixon_price": (-10, 10),
    "cosine_mixture": (-1, 1),
    "cosine_mixture_pinnbo": (-1, 1),
    "schwefel": (-500, 500),
    "goucb_f1": (-5, 5),
    "branin": ([-5, 0], [10, 15]),
    "hartmann3": (0, 1),
    "hartmann6": (0, 1),
    "shekel5": (0, 10),
    "shekel7": (0, 10),
    "shekel10": (0, 10),
    "dropwave": (-5.12, 5.12),
    "simionescu": (-1.25, 1.25),
    "six_hump_camel": ([-3, -2], [3, 2]),
    "eggholder": (-512, 512),
    "goldstein_price": (-2, 2),
    "beam_deflection": (0, 1),
}

FIXED_DIM = {
    "branin": 2,
    "hartmann3": 3,
    "hartmann6": 6,
    "shekel5": 4,
    "shekel7": 4,
    "shekel10": 4,
    "dropwave": 2,
    "simionescu": 2,
    "six_hump_camel": 2,
    "eggholder": 2,
    "goldstein_price": 2,
    "beam_deflection": 1,
}
MIN_DIM = {"rosenbrock": 2}


def cases():
    """(name, dim): each fixed-dimension problem at its dimension, the others at d = 3."""
    return [(name, FIXED_DIM.get(name, 3)) for name in sorted(REFERENCES)]


CASES = cases()
IDS = [f"{n}-{d}" for n, d in CASES]
# the smallest dimension where a formula has an edge case: Levy's and Dixon-Price's sums over
# i < d are empty at d = 1 (and Dixon-Price has one minimiser, not two), Rosenbrock's needs d >= 2
EDGE_CASES = [("levy", 1), ("dixon_price", 1), ("rosenbrock", 2), ("ackley", 1)]
N_SAMPLES = 2048  # uniform points per case for the lower-bound check; the first 16 are compared


@functools.lru_cache(maxsize=None)
def problem(name, dim):
    return B.get(name, dim)


class Evaluated(NamedTuple):
    x: np.ndarray  # (k + N_SAMPLES, d): the k listed minimisers, then uniform points of the box
    k: int
    f: np.ndarray  # problem.fn_batch(x) (itself jax.jit of jax.vmap of fn)
    f_grad: np.ndarray  # jax.vmap(jax.value_and_grad(fn))(x): the values ...
    grad: np.ndarray  # ... and the gradients


@functools.lru_cache(maxsize=None)
def evaluated(name, dim):
    """Each case is compiled (once, all under one jax.jit) and evaluated once; the tests below
    share the results."""
    p = problem(name, dim)
    lo, hi = np.asarray(p.bounds)
    rng = np.random.default_rng(sum(map(ord, name)) + dim)
    xs = np.asarray(p.optimizer)
    x = np.concatenate([xs, lo + (hi - lo) * rng.uniform(size=(N_SAMPLES, dim))])

    @jax.jit
    def run(x):
        return (p.fn_batch(x),) + jax.vmap(jax.value_and_grad(p.fn))(x)

    f, f_grad, grad = (np.asarray(a) for a in run(jnp.asarray(x)))
    return Evaluated(x, len(xs), f, f_grad, grad)


def reference_values(name, xs):
    return np.array([REFERENCES[name](list(map(float, x))) for x in np.asarray(xs)])


def scale(value):
    return max(1.0, abs(value))


# ----------------------------------------------------------------------------------------------
# the catalogue


# Problems with black-box constraints (tests/test_constrained_problems.py) and with a PDE
# (tests/test_pde_benchmarks.py) are tested in their own files.
CONSTRAINED = {"ackley_constrained", "branin_constrained", "gas_transmission",
               "hartmann6_constrained", "simionescu_constrained", "speed_reducer"}
PHYSICS = {"cosine_mixture_pde", "dropwave_pde", "euler_beam", "heat_equation_1",
           "heat_equation_2", "heat_equation_3", "michalewicz_pde", "rastrigin_pde",
           "styblinski_tang_pde"}
# Problems tested in a file of their own: the GP sample path (tests/test_gp_sample.py).
OWN_FILE = {"gp_sample_1d"}
HOST_TASKS = set(B.tasks.names())  # ntkbo.benchmarks.tasks, tested in tests/test_tasks.py


def test_names_are_the_documented_problems():
    assert B.names() == sorted(set(REFERENCES) | CONSTRAINED | PHYSICS | OWN_FILE | HOST_TASKS)


@pytest.mark.parametrize("name,dim", CASES, ids=IDS)
def test_standard_domain(name, dim):
    p = problem(name, dim)
    lo, hi = DOMAINS[name]
    expected = np.stack([np.broadcast_to(lo, dim), np.broadcast_to(hi, dim)]).astype(float)
    np.testing.assert_array_equal(np.asarray(p.bounds), expected)
    assert p.dim == dim and p.bounds.shape == (2, dim)
    assert p.name == name and p.noise_std == 0.0


# ----------------------------------------------------------------------------------------------
# values against the independent implementation; the listed optima; jit, vmap and grad


@pytest.mark.parametrize("name,dim", CASES, ids=IDS)
def test_matches_reference_at_random_points(name, dim):
    e = evaluated(name, dim)
    rows = slice(e.k, e.k + 16)
    # float64 both sides; they differ only by summation order and libm rounding (~1e-15
    # relative to the largest term), so 1e-11 relative and absolute is tight yet safe
    np.testing.assert_allclose(e.f[rows], reference_values(name, e.x[rows]), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("name,dim", CASES, ids=IDS)
def test_optimizer_attains_optimum(name, dim):
    p, e = problem(name, dim), evaluated(name, dim)
    assert p.optimum is not None and p.optimizer is not None
    assert p.optimizer.ndim == 2 and p.optimizer.shape[1] == dim
    lo, hi = np.asarray(p.bounds)
    assert np.all((e.x[: e.k] >= lo) & (e.x[: e.k] <= hi))
    # Published minimisers are given to >= 12 significant digits except Hartmann3's (6 decimals,
    # SFU): an error delta in x costs ~ |H| delta^2 ~ 1e2 * (5e-7)^2 ~ 3e-11 in f. The library's
    # own minimisers (separable functions) are exact to rounding. Hence 1e-9 for Hartmann3 and
    # 1e-12 * max(1, |f*|) otherwise.
    tol = 1e-9 if name == "hartmann3" else 1e-12 * scale(p.optimum)
    np.testing.assert_allclose(reference_values(name, e.x[: e.k]), p.optimum, rtol=0, atol=tol)
    np.testing.assert_allclose(e.f[: e.k], p.optimum, rtol=0, atol=tol)


@pytest.mark.parametrize("name,dim", EDGE_CASES, ids=[f"{n}-{d}" for n, d in EDGE_CASES])
def test_smallest_dimension(name, dim):
    p = B.get(name, dim)
    lo, hi = np.asarray(p.bounds)
    u = np.random.default_rng(3).uniform(size=(8, dim))
    x = np.concatenate([np.asarray(p.optimizer), lo + (hi - lo) * u])
    f = np.asarray(p.fn_batch(jnp.asarray(x)))
    k = p.optimizer.shape[0]
    np.testing.assert_allclose(f, reference_values(name, x), rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(f[:k], p.optimum, rtol=0, atol=1e-12 * scale(p.optimum))
    assert f.min() >= p.optimum - 1e-12 * scale(p.optimum)


@pytest.mark.parametrize("name,dim", CASES, ids=IDS)
def test_nothing_beats_the_optimum(name, dim):
    """No uniform sample, and no L-BFGS-B run on the reference from the minimisers or from the best
    sample, goes below ``optimum`` (up to 1e-9 relative, L-BFGS-B's own accuracy)."""
    p, e = problem(name, dim), evaluated(name, dim)
    tol = 1e-9 * scale(p.optimum)
    assert e.f.min() >= p.optimum - tol
    lo, hi = np.asarray(p.bounds)
    for x0 in list(e.x[: e.k]) + [e.x[e.k + np.argmin(e.f[e.k :])]]:
        res = optimize.minimize(
            REFERENCES[name], x0, method="L-BFGS-B", bounds=list(zip(lo, hi)),
            options=dict(ftol=1e-15, gtol=1e-12, maxiter=2000),
        )
        assert res.fun >= p.optimum - tol, (x0, res.x, res.fun)


@pytest.mark.parametrize("name,dim", CASES, ids=IDS)
def test_jit_vmap_grad(name, dim):
    p, e = problem(name, dim), evaluated(name, dim)
    # the same float64 arithmetic compiled differently (fusion may reorder sums); Schwefel's
    # f ~ 1e-5 near x* is a difference of terms ~ 4e2, so rounding is ~1e-13 absolute
    np.testing.assert_allclose(e.f_grad, e.f, rtol=1e-13, atol=1e-12)
    # gradients are finite everywhere, including at minimisers where a naive sqrt (Ackley,
    # Drop-Wave at 0) would give NaN ...
    assert e.grad.shape == e.x.shape and np.all(np.isfinite(e.grad))
    # ... and they are the gradients: central differences of the reference at three points.
    # Step h = 1e-6 of the box width: truncation error ~ h^2 |f'''|, rounding ~ 1e-16 |f| / h;
    # both far below the 1e-5 relative tolerance.
    lo, hi = np.asarray(p.bounds)
    for row in range(e.k, e.k + 3):
        x, fd = e.x[row], np.zeros(dim)
        for j in range(dim):
            step = np.zeros(dim)
            step[j] = 1e-6 * (hi[j] - lo[j])
            fd[j] = (REFERENCES[name](list(x + step)) - REFERENCES[name](list(x - step))) / (
                2 * step[j]
            )
        np.testing.assert_allclose(e.grad[row], fd, rtol=1e-5, atol=1e-5 * scale(np.abs(fd).max()))


# ----------------------------------------------------------------------------------------------
# optima against the literature and against an independent computation


def _min_1d(g, lo, hi, n=50_001, polish=4):
    """Independent global 1-D minimum: a numpy grid, then scipy's bounded Brent on the cells of
    its ``polish`` lowest grid points that are local minima (wells of nearly equal depth can swap
    order on a grid)."""
    t = np.linspace(lo, hi, n)
    v = g(t)
    padded = np.concatenate([[np.inf], v, [np.inf]])
    local = np.flatnonzero((v <= padded[:-2]) & (v <= padded[2:]))
    best = (t[local[0]], v[local[0]])
    for k in local[np.argsort(v[local], kind="stable")[:polish]]:
        a, b = t[max(k - 1, 0)], t[min(k + 1, n - 1)]
        res = optimize.minimize_scalar(
            g, bounds=(a, b), method="bounded", options=dict(xatol=1e-13)
        )
        for cand in ((res.x, res.fun), (t[k], v[k])):
            if cand[1] < best[1]:
                best = cand
    return best


def _michalewicz_1d(i):
    return lambda t: -np.sin(t) * np.sin(i * t**2 / PI) ** 20


def test_michalewicz_published_optima():
    # SFU: -1.8013 (d=2), -4.687658 (d=5), -9.66015 (d=10); BoTorch: -1.80130341 at
    # (2.20290552, 1.57079633). Tolerance: half a unit of the last published digit.
    for d, published, digits in [(2, -1.80130341, 8), (5, -4.687658, 6), (10, -9.66015, 5)]:
        assert abs(B.get("michalewicz", d).optimum - published) <= 0.5 * 10.0**-digits
    x2 = np.asarray(B.get("michalewicz", 2).optimizer[0])
    np.testing.assert_allclose(x2, [2.20290552, 1.57079633], atol=0.5e-8 + 1e-9)


@pytest.mark.parametrize("d", [100])
def test_michalewicz_optimum_matches_scipy(d):
    # Brent's xatol 1e-13 puts each 1-D minimum within ~1e-16 of the truth in f
    want = sum(_min_1d(_michalewicz_1d(i), 0.0, PI)[1] for i in range(1, d + 1))
    assert abs(B.get("michalewicz", d).optimum - want) <= 1e-12 * d


def test_styblinski_tang_optimum_is_the_cubic_root():
    # f'(t) = (4t^3 - 32t + 5) / 2 = 0; the minimiser is the root in [-5, 0]. SFU: x* = -2.903534;
    # BoTorch: f*/d = -39.166166 (SFU prints -39.16599, which its own x* does not reproduce).
    roots = np.sort(np.roots([4.0, 0.0, -32.0, 5.0]).real)
    t = roots[0]
    for d in (3, 10):
        p = B.get("styblinski_tang", d)
        np.testing.assert_allclose(np.asarray(p.optimizer), np.full((1, d), t), atol=1e-9)
        assert abs(p.optimum - d * r_styblinski_tang([t])) <= 1e-12 * d
        assert abs(p.optimum / d - -39.166166) <= 0.5e-6
    assert abs(t - -2.903534) <= 0.5e-6
    # on the box [0, 5]^2 the minimiser is the largest root (the middle one is a maximum)
    p = B.get("styblinski_tang", 2, bounds=(0.0, 5.0))
    np.testing.assert_allclose(np.asarray(p.optimizer)[0], [roots[2], roots[2]], atol=1e-9)


@pytest.mark.parametrize(
    "name,dim,g,published",
    [
        # SFU: x* = 420.9687 (f* = 0 to the 4 decimals of its constant 418.9829)
        ("schwefel", 3, lambda t: 418.9829 - t * np.sin(np.sqrt(np.abs(t))), (420.9687, 0.0)),
        # as beam_deflection's docstring states: w_min ~ 0.057604 at x ~ 0.88370
        (
            "beam_deflection",
            1,
            lambda t: np.sin(20 * t) * np.exp(2 * t)
            + np.sin(4 * PI * np.exp(2 * t))
            + 0.4 * t**3
            + 0.2 * t**2
            + 6,
            (0.88370, 0.057604),
        ),
        ("cosine_mixture_pinnbo", 50, lambda t: t**2 + 0.1 * np.cos(5 * PI * t), None),
    ],
)
def test_separable_optima_match_scipy(name, dim, g, published):
    p = B.get(name, dim)
    lo, hi = np.asarray(p.bounds)[:, 0]
    t, v = _min_1d(g, lo, hi)
    assert abs(p.optimum - dim * v) <= 1e-12 * scale(p.optimum)
    # the minimiser itself is determined only to ~sqrt(eps) * scale by any 1-D method; the
    # symmetric Cosine Mixture has two (+-t), either may be listed
    np.testing.assert_allclose(np.abs(np.asarray(p.optimizer)), abs(t), atol=1e-6 * scale(t))
    if published is not None:
        x_pub, f_pub = published
        assert abs(t - x_pub) <= 0.5e-4 * scale(x_pub)
        assert abs(p.optimum / dim - f_pub) <= 1e-4


def test_published_optima_agree_with_sfu():
    """The stored high-precision optima (DIRECTGOLib, closed forms) round to SFU's values."""
    sfu = {  # name: (f*, decimals)
        "branin": (0.397887, 6),
        "hartmann3": (-3.86278, 5),
        "hartmann6": (-3.32237, 5),
        "shekel5": (-10.1532, 4),
        "shekel7": (-10.4029, 4),
        "shekel10": (-10.5364, 4),
        "six_hump_camel": (-1.0316, 4),
        "eggholder": (-959.6407, 4),
        "goldstein_price": (3.0, 12),
        "dropwave": (-1.0, 12),
    }
    for name, (value, decimals) in sfu.items():
        assert abs(B.get(name).optimum - value) <= 0.5 * 10.0**-decimals, name
    assert B.get("cosine_mixture", 7).optimum == pytest.approx(-0.7, abs=1e-15)
    xs = np.asarray(B.get("branin").optimizer)  # the third minimiser, as SFU prints it
    np.testing.assert_allclose(xs[2], [9.42478, 2.475], atol=0.5e-5)
    np.testing.assert_allclose(  # SFU's Hartmann6 minimiser to its printed digits
        np.asarray(B.get("hartmann6").optimizer[0]),
        [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573],
        atol=0.5e-5,
    )


def test_corner_optima():
    p = B.get("simionescu")
    assert p.optimum == pytest.approx(-0.15625, abs=1e-15)
    assert {tuple(x) for x in np.asarray(p.optimizer).tolist()} == {(1.25, -1.25), (-1.25, 1.25)}
    p = B.get("goucb_f1", 20)
    np.testing.assert_array_equal(np.asarray(p.optimizer), np.full((1, 20), 5.0))
    assert p.optimum == pytest.approx(r_goucb_f1([5.0] * 20), abs=1e-12)


# ----------------------------------------------------------------------------------------------
# the Problem type


def test_problem_is_an_immutable_pytree():
    p = B.get("hartmann6", noise_std=0.1)
    leaves = jax.tree_util.tree_leaves(p)
    assert not any(callable(leaf) for leaf in leaves)  # fn is static metadata, not a leaf
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.noise_std = 1.0
    q = p.replace(noise_std=0.0)
    assert q.noise_std == 0.0 and p.noise_std == 0.1 and q.fn is p.fn

    # a problem is an ordinary argument of a jitted function ...
    @jax.jit
    def observe(problem, key, x):
        return problem.evaluate(key, x), problem.fn_batch(x) - problem.optimum, jax.jit(
            problem.fn
        )(x[0])

    x = jnp.full((3, 6), 0.5)
    y, regret, f0 = observe(p, jax.random.PRNGKey(0), x)
    assert y.shape == (3,) and bool(jnp.all(regret > 0))
    assert float(f0) == pytest.approx(r_hartmann6([0.5] * 6), rel=1e-13)
    # ... and observations vmap over keys
    ys = jax.vmap(lambda k: p.evaluate(k, x))(jax.random.split(jax.random.PRNGKey(1), 4))
    assert ys.shape == (4, 3)
    # users can wrap their own objective the same way
    box = jnp.asarray([[-1.0, -1.0], [1.0, 1.0]])
    mine = B.Problem(name="mine", fn=lambda z: jnp.sum(z**2), bounds=box)
    assert mine.dim == 2 and mine.optimum is None and mine.noise_std == 0.0
    np.testing.assert_allclose(np.asarray(mine.fn_batch(jnp.ones((3, 2)))), [2.0, 2.0, 2.0])


def test_float32_inputs_stay_float32():
    # Shekel's constant tables must not promote float32 inputs to float64
    x = jnp.full((2, 4), 4.0, dtype=jnp.float32)
    p = B.get("shekel10", noise_std=0.1)
    assert p.fn_batch(x).dtype == jnp.float32
    assert p.evaluate(jax.random.PRNGKey(0), x).dtype == jnp.float32


def test_evaluate_adds_noise_with_the_requested_std():
    sigma, n = 0.3, 40_000
    p = B.get("levy", 3, noise_std=sigma)
    x = jnp.asarray(np.tile([[0.5, -2.0, 3.0]], (n, 1)))
    key = jax.random.PRNGKey(42)
    y = np.asarray(p.evaluate(key, x))
    eps = y - r_levy([0.5, -2.0, 3.0])
    # the sample std of n normals has relative sd 1/sqrt(2n) = 0.35%; 2% is ~5.7 sd
    assert abs(eps.std(ddof=1) / sigma - 1) < 0.02
    # the sample mean has sd sigma/sqrt(n) = 0.0015; 5 sd
    assert abs(eps.mean()) < 5 * sigma / math.sqrt(n)
    # the same key gives the same observations, another key others
    np.testing.assert_array_equal(np.asarray(p.evaluate(key, x)), y)
    assert not np.allclose(np.asarray(p.evaluate(jax.random.PRNGKey(43), x)), y)
    # noise_std = 0: exactly the function values
    q = p.replace(noise_std=0.0)
    np.testing.assert_array_equal(np.asarray(q.evaluate(key, x)), np.asarray(q.fn_batch(x)))


def test_relative_noise_rule():
    p = B.get("ackley", 10, noise="relative")
    # independent estimate of std(f) from 4,000 numpy-uniform points and the reference. The two
    # estimates (10,000 and 4,000 points) each have relative sd ~ 1/sqrt(2n) times a kurtosis
    # factor ~1, so they differ by ~1.3% sd; 6% is > 4 sd.
    rng = np.random.default_rng(7)
    x = rng.uniform(-32.768, 32.768, size=(4_000, 10))
    std = np.std([r_ackley(list(xi)) for xi in x], ddof=1)
    assert abs(p.noise_std / (0.1 * std) - 1) < 0.06
    # deterministic (fixed key), and linear in noise_scale (same points)
    assert B.get("ackley", 10, noise="relative").noise_std == p.noise_std
    half = B.get("ackley", 10, noise="relative", noise_scale=0.05).noise_std
    assert half == pytest.approx(0.5 * p.noise_std, rel=1e-12)
    assert B.relative_noise_std(B.get("ackley", 10)) == pytest.approx(p.noise_std, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# arguments


def test_other_spellings_resolve():
    assert B.get("Styblinski-Tang", 2).name == "styblinski_tang"
    assert B.get("Michalewics", 3).name == "michalewicz"  # NeuralBO's spelling
    assert B.get("BraninHoo").name == "branin"  # Neural-CBO's code
    assert B.get("Hartmann 6").name == "hartmann6"
    assert B.get("six-hump camel").name == "six_hump_camel"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(name="nope", dim=2), r"name='nope'.*valid names: ackley, .*beam_deflection, .*sum_of_squares"),
        (dict(name="hartman", dim=6), r"name='hartman' .*did you mean .*'hartmann3'"),
        (dict(name=3, dim=2), r"name=3 is not a known problem"),
        (dict(name="branin", dim=3), r"dim=3 is not supported by 'branin'; valid dims: 2"),
        (dict(name="hartmann6", dim=3), r"dim=3 .*valid dims: 6"),
        (dict(name="ackley"), r"dim is required for 'ackley'; valid dims: any integer >= 1"),
        (dict(name="rosenbrock", dim=1), r"dim=1 .*valid dims: any integer >= 2"),
        (dict(name="levy", dim=0), r"dim=0 .*any integer >= 1"),
        (dict(name="levy", dim=2.0), r"dim=2.0 must be an integer"),
        (dict(name="levy", dim=True), r"dim=True must be an integer"),
        (dict(name="levy", dim=2, noise="gaussian"), r"noise='gaussian'.*None, 'relative'"),
        (dict(name="levy", dim=2, noise_std=-1.0), r"noise_std=-1.0 must be"),
        (dict(name="levy", dim=2, noise_std=0.1, noise="relative"), r"either noise_std or"),
        (dict(name="levy", dim=2, noise="relative", noise_scale=0), r"noise_scale=0"),
        (dict(name="levy", dim=2, bounds=[[0, 0, 0], [1, 1, 1]]), r"bounds must have shape"),
        (dict(name="levy", dim=2, bounds=(1.0, -1.0)), r"lower < upper"),
    ],
)
def test_bad_arguments_raise_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        B.get(**kwargs)


def test_bad_batch_shape_raises():
    p = B.get("branin")
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        p.fn_batch(jnp.zeros(2))
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        p.evaluate(jax.random.PRNGKey(0), jnp.zeros((4, 3)))


def test_bounds_override():
    # GO-UCB's Rastrigin on [-5, 5]^20 still contains the global minimiser 0
    p = B.get("rastrigin", 20, bounds=(-5.0, 5.0))
    np.testing.assert_array_equal(np.asarray(p.bounds), np.outer([-5.0, 5.0], np.ones(20)))
    assert p.optimum == 0.0
    # Neural-CBO's Ackley box [-5, 3]^5
    assert B.get("ackley", 5, bounds=(-5, 3)).optimum == 0.0
    # a box keeping two of Branin's three minimisers (f >= 5/(4 pi) on all of R^2)
    p = B.get("branin", bounds=[[0.0, 0.0], [10.0, 15.0]])
    np.testing.assert_allclose(np.asarray(p.optimizer)[:, 0], [PI, 3 * PI])
    # the minimiser excluded: unknown
    p = B.get("ackley", 3, bounds=(1.0, 2.0))
    assert p.optimum is None and p.optimizer is None
    # a published (not global) optimum is kept only on boxes inside the standard domain
    assert B.get("hartmann6", bounds=(0.1, 0.9)).optimum == B.get("hartmann6").optimum
    assert B.get("hartmann6", bounds=(0.0, 2.0)).optimum is None
    # separable optima are recomputed on the new box
    p = B.get("michalewicz", 3, bounds=(0.0, 2.0))
    want = sum(_min_1d(_michalewicz_1d(i), 0.0, 2.0)[1] for i in (1, 2, 3))
    assert abs(p.optimum - want) <= 1e-12
