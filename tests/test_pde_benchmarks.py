"""PINN-BO's physics benchmarks (ntkbo.benchmarks.pde, ntkbo.benchmarks.heat): the PDEs N[f] = g
hold for the objectives, the operators are the stated ones, the heat solver is accurate, the beam's
minimum is the published one, and the registry entries."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ntkbo import benchmarks as B
from ntkbo.benchmarks import heat as H
from ntkbo.benchmarks import pde as P
from ntkbo.benchmarks import synthetic as S

EPS = np.finfo(np.float64).eps

SYNTHETIC = [  # registry name, dim (the thesis's), base function
    ("dropwave_pde", None, S.dropwave),
    ("styblinski_tang_pde", 10, S.styblinski_tang),
    ("rastrigin_pde", 20, S.rastrigin),
    ("michalewicz_pde", 30, S.michalewicz),
    ("cosine_mixture_pde", 50, S.cosine_mixture_pinnbo),
    ("euler_beam", None, S.beam_deflection),
]


def random_points(key, bounds, n):
    return B.uniform(key, jnp.asarray(bounds), n)


@pytest.mark.parametrize("name,dim,fn", SYNTHETIC, ids=[s[0] for s in SYNTHETIC])
def test_pde_holds_for_the_objective(name, dim, fn):
    """N[f](x) (autodiff) equals the closed-form g(x) at 64 random points to float64 rounding."""
    p = B.get(name, dim)
    assert p.fn is fn and p.pde is not None
    x = random_points(jax.random.PRNGKey(0), p.bounds, 64)
    lhs = jax.vmap(p.pde.operator(p.fn))(x)
    rhs = jax.vmap(p.pde.rhs)(x)
    assert lhs.shape == rhs.shape
    # Rounding bound: the operator sums products of derivatives; its error is a few eps times the
    # sum of the absolute values of the terms. We bound that sum by the magnitudes of the pieces:
    # |x|.|grad f|, |f|, |g| (first-order operators) or, for the beam, the three terms of
    # (EI w'')'' = EI'' w'' + 2 EI' w''' + EI w'''' (each computed by autodiff below).
    if name == "euler_beam":
        def terms(t):
            ei = lambda s: jnp.exp(s) / P.beam_rho(s)  # noqa: E731
            w = lambda s: S.beam_deflection(jnp.reshape(s, (1,)))  # noqa: E731
            d = [w]
            for _ in range(4):
                d.append(jax.grad(d[-1]))
            return jnp.stack([jax.grad(jax.grad(ei))(t) * d[2](t), 2 * jax.grad(ei)(t) * d[3](t),
                              ei(t) * d[4](t)])
        scale = jnp.sum(jnp.abs(jax.vmap(terms)(x[:, 0])), axis=-1)
        tol = 1e3 * EPS * scale  # four nested derivatives and divisions by rho: 1e3 eps of the terms
    else:
        grad = jax.vmap(jax.grad(p.fn))(x)
        h = jax.vmap(P.michalewicz_h)(x) if name == "michalewicz_pde" else x
        scale = (jnp.sum(jnp.abs(h * grad), axis=-1) + jnp.abs(jax.vmap(p.fn)(x))
                 + jnp.sum(jnp.abs(rhs.reshape(64, -1)), axis=-1))
        if name == "michalewicz_pde":
            # h_i = 1 / D_i with D_i = cot x_i + c_i / tan(theta_i) a cancelling sum: rounding in D_i
            # of eps (|cot x_i| + |c_i / tan theta_i|) moves h_i d_i f by h_i^2 that much |d_i f|
            i = jnp.arange(1, x.shape[-1] + 1)
            parts = jnp.abs(1 / jnp.tan(x)) + jnp.abs(40 * i * x / math.pi / jnp.tan(i * x**2 / math.pi))
            scale = scale + jnp.sum(h**2 * parts * jnp.abs(grad), axis=-1)
        tol = 64 * EPS * scale  # 64 eps: d <= 50 summed terms, each a few roundings
        if rhs.ndim == 2:
            tol = tol[:, None]
    err = jnp.abs(lhs - rhs)
    assert bool(jnp.all(err <= tol)), float(jnp.max(err / tol))


def fd_gradient(f, x, h=1e-5):
    e = np.eye(x.shape[-1]) * h
    return np.array([(f(x + ei) - f(x - ei)) / (2 * h) for ei in e])


def test_operators_match_finite_differences_on_a_generic_function():
    """Each operator applied to a function that does *not* solve the PDE equals a central
    finite-difference evaluation of the stated formula (so the operators are the documented ones,
    independently of autodiff), and the residual is then far from zero (the tests above have
    power)."""
    a = np.array([0.7, -1.3, 0.4])

    def f_np(x):
        return np.sin(a @ x) + 0.3 * np.sum(x**3) + x[0] * x[1]

    def f(x):
        return jnp.sin(jnp.asarray(a) @ x) + 0.3 * jnp.sum(x**3) + x[0] * x[1]

    x = np.array([0.9, 1.1, 0.6])
    g = fd_gradient(f_np, x)
    # central differences with h = 1e-5: truncation h^2 |f'''| ~ 1e-10, rounding eps / h ~ 1e-11
    tol = 1e-8
    assert abs(float(P.sum_of_partials(f)(jnp.asarray(x))) - g.sum()) < tol
    assert abs(float(P.euler_operator(f)(jnp.asarray(x))) - (0.5 * x @ g - f_np(x))) < tol
    assert abs(float(P.RASTRIGIN.residual(f)(jnp.asarray(x)))) > 1.0  # f is no solution
    hm = np.asarray(P.michalewicz_h(jnp.asarray(x)))
    assert abs(float(P.michalewicz_operator(f)(jnp.asarray(x))) - (hm @ g - f_np(x))) < tol
    np.testing.assert_allclose(np.asarray(P.gradient(f)(jnp.asarray(x))), g, atol=tol)
    x2 = x[:2]
    f2_np = lambda y: np.sin(y[0] - 2 * y[1]) + y[0] ** 2 * y[1]  # noqa: E731
    f2 = lambda y: jnp.sin(y[0] - 2 * y[1]) + y[0] ** 2 * y[1]  # noqa: E731
    g2 = fd_gradient(f2_np, x2)
    rot = float(P.divergence_free_rotation(f2)(jnp.asarray(x2)))
    assert abs(rot - (x2[0] * g2[1] - x2[1] * g2[0])) < tol
    assert abs(rot) > 0.1  # a non-radial function is not rotation invariant
    # Laplacian by the 5-point stencil, h = 1e-3: truncation h^2 |f''''| / 12 ~ 1e-7
    hh = 1e-3
    lap_fd = sum((f2_np(x2 + e) - 2 * f2_np(x2) + f2_np(x2 - e)) / hh**2
                 for e in np.eye(2) * hh)
    assert abs(float(P.laplacian(f2)(jnp.asarray(x2))) - lap_fd) < 1e-5
    # the beam operator by nested central differences of EI * w'', Richardson-extrapolated from
    # steps 2e-3 and 1e-3: 1 / rho oscillates fast (e^{4x} sin(4 pi e^{2x})), so the O(hb^2) error
    # is ~1e-3 relative at hb = 1e-3; the extrapolation is O(hb^4), and rounding is
    # ~ eps |w| / hb^4 ~ 2e-4 absolute: we allow 1e-4 relative of |N[w]| ~ 13
    w_np = lambda t: np.sin(3 * t) + t**4  # noqa: E731
    w = lambda t: jnp.sin(3 * t[0]) + t[0] ** 4  # noqa: E731
    rho = lambda t: float(P.beam_rho(jnp.asarray(t)))  # noqa: E731

    def beam_fd(hb, t0=0.3):
        def moment(t):
            return math.exp(t) / rho(t) * (w_np(t + hb) - 2 * w_np(t) + w_np(t - hb)) / hb**2

        return (moment(t0 + hb) - 2 * moment(t0) + moment(t0 - hb)) / hb**2

    rich = (4 * beam_fd(1e-3) - beam_fd(2e-3)) / 3
    beam_ad = float(P.beam_operator(w)(jnp.asarray([0.3])))
    assert abs(beam_ad - rich) < 1e-4 * max(1.0, abs(beam_ad))


def test_pde_problems_share_the_base_functions_and_optima():
    for name, dim, _ in SYNTHETIC[:5]:
        base = B.get(name[:-4] if name != "cosine_mixture_pde" else "cosine_mixture_pinnbo", dim)
        p = B.get(name, dim)
        assert p.fn is base.fn and p.optimum == base.optimum and base.pde is None
        np.testing.assert_array_equal(np.asarray(p.bounds), np.asarray(base.bounds))


def test_euler_beam_minimum():
    """The beam's minimum (0.057604 at x ~ 0.88370, as ``beam_deflection`` states) against a dense
    grid search."""
    p = B.get("euler_beam")
    assert p.pde is P.EULER_BEAM
    t = np.linspace(0.0, 1.0, 200_001)
    v = np.asarray(p.fn_batch(jnp.asarray(t[:, None])))
    i = int(np.argmin(v))
    # grid spacing 5e-6: the grid minimum exceeds the true one by at most |w''| h^2 / 8 ~ 1e-6
    assert p.optimum <= v[i] + 1e-12 and v[i] - p.optimum < 1e-6
    assert abs(float(p.optimizer[0, 0]) - t[i]) < 1e-5
    assert abs(p.optimum - 0.057604) < 5e-7 and abs(float(p.optimizer[0, 0]) - 0.88370) < 5e-5


# ----------------------------------------------------------------------------------------------
# heat


#: The heat tests evaluate the 4096-term series on thousands of points (and the fixture's first
#: user computes each case's optimum on 4 x 4001 boundary points): they run compiled with XLA's
#: optimisations (conftest.py), about 2.5 times faster than without.
RUN_BOUND = pytest.mark.run_bound


@pytest.fixture(scope="module")
def heat_problems():
    return {c: B.get("heat_equation", case=c) for c in H.CASES}


@RUN_BOUND
@pytest.mark.parametrize("case", H.CASES)
def test_heat_laplacian_vanishes(heat_problems, case):
    """The series is harmonic term by term: its autodiff Laplacian is zero to rounding."""
    p = heat_problems[case]
    x = random_points(jax.random.PRNGKey(case), p.bounds, 128)
    lap = jax.vmap(p.pde.operator(p.fn))(x)
    hess = jax.vmap(jax.hessian(p.fn))(x)
    # rounding: the two second derivatives T_xx and -T_yy cancel; each is a sum of NUM_TERMS terms
    # as large as k^2 |c_n| (k <= NUM_TERMS / 2). Bound: 1e3 eps times the largest |T_ii| plus the
    # series' own scale (the sum of k^2 |c_n|, bounding every term).
    sol = H.solve(case)
    k = np.arange(1, H.NUM_TERMS + 1) / 2.0
    series_scale = float(np.sum(k**2 * np.abs(sol.coef)))
    tol = 1e3 * EPS * (np.max(np.abs(np.asarray(hess))) + series_scale)
    assert float(jnp.max(jnp.abs(lap))) <= tol
    assert p.pde is P.LAPLACE and float(jnp.max(jnp.abs(jax.vmap(p.pde.rhs)(x)))) == 0.0


@RUN_BOUND
@pytest.mark.parametrize("case", H.CASES)
def test_heat_boundary_conditions_hold(heat_problems, case):
    """T equals the Dirichlet data on the four sides, at 400 points per side farther than 0.05
    from the corners (the corners themselves are jumps of the data)."""
    p = heat_problems[case]
    sides = H.BOUNDARY_CONDITIONS[case]
    t = np.linspace(0.05, H.L - 0.05, 400)
    zero, full = np.zeros_like(t), np.full_like(t, H.L)
    pts = {"left": (zero, t), "right": (full, t), "bottom": (t, zero), "top": (t, full)}
    values = np.concatenate([np.asarray(getattr(sides, s)(jnp.asarray(t))) for s in pts])
    span = values.max() - values.min()
    for side, (xs, ys) in pts.items():
        temp = -np.asarray(p.fn_batch(jnp.asarray(np.stack([xs, ys], -1))))
        ref = np.asarray(getattr(sides, side)(jnp.asarray(t)))
        # the stated accuracy (module docstring): 1e-6 of the range of the data
        assert np.max(np.abs(temp - ref)) < 1e-6 * span, (side, np.max(np.abs(temp - ref)))


def _fd_laplace(case, n):
    """Independent solver: the 5-point finite-difference Laplacian on an (n+1)^2 grid, Dirichlet
    data at the boundary nodes, solved with scipy's sparse LU. Returns the grid values (n+1, n+1)."""
    sides = H.BOUNDARY_CONDITIONS[case]
    g = np.linspace(0.0, H.L, n + 1)
    u = np.zeros((n + 1, n + 1))  # u[i, j] = T(g[i], g[j])
    u[0, :] = np.asarray(sides.left(jnp.asarray(g)))
    u[-1, :] = np.asarray(sides.right(jnp.asarray(g)))
    u[:, 0] = np.asarray(sides.bottom(jnp.asarray(g)))
    u[:, -1] = np.asarray(sides.top(jnp.asarray(g)))
    m = n - 1
    eye = sp.identity(m)
    t = sp.diags([np.ones(m - 1), -2 * np.ones(m), np.ones(m - 1)], [-1, 0, 1])
    a = sp.kron(t, eye) + sp.kron(eye, t)
    b = np.zeros((m, m))
    b[0, :] -= u[0, 1:-1]
    b[-1, :] -= u[-1, 1:-1]
    b[:, 0] -= u[1:-1, 0]
    b[:, -1] -= u[1:-1, -1]
    u[1:-1, 1:-1] = spla.spsolve(a.tocsc(), b.reshape(-1)).reshape(m, m)
    return u


@RUN_BOUND
@pytest.mark.parametrize("case", H.CASES)
def test_heat_matches_finite_differences(heat_problems, case):
    """Inside the square (distance >= 1 from the boundary) the series agrees with the
    finite-difference solutions on 100^2 and 200^2 grids to the finite-difference error. The data
    jump at the corners, so the FD solution converges at first order there: its 200-grid error is
    then about |FD_100 - FD_200| (a third of it at second order); we allow twice that for the
    pre-asymptotic range, plus 1e-9 of the range."""
    p = heat_problems[case]
    u100, u200 = _fd_laplace(case, 100), _fd_laplace(case, 200)
    idx = np.arange(20, 81, 10)  # nodes of the 100-grid at distance >= 20 h = 1.26
    gx = np.linspace(0.0, H.L, 101)[idx]
    pts = np.array([[a, b] for a in gx for b in gx])
    temp = -np.asarray(p.fn_batch(jnp.asarray(pts))).reshape(len(idx), len(idx))
    c100, c200 = u100[np.ix_(idx, idx)], u200[np.ix_(2 * idx, 2 * idx)]
    span = np.ptp(u200)
    assert np.all(np.abs(temp - c200) <= 2 * np.abs(c100 - c200) + 1e-9 * span)
    assert np.max(np.abs(c100 - c200)) < 1e-2 * span  # and the FD reference itself is converging


@RUN_BOUND
@pytest.mark.parametrize("case", H.CASES)
def test_heat_optimum_is_the_boundary_minimum(heat_problems, case):
    """The reported optimum is attained at the optimiser and no random point of the square (nor of
    its boundary) is lower (maximum principle)."""
    p = heat_problems[case]
    assert abs(float(p.fn(p.optimizer[0])) - p.optimum) < 1e-9 * abs(p.optimum)
    x = random_points(jax.random.PRNGKey(7), p.bounds, 4096)
    assert float(jnp.min(p.fn_batch(x))) >= p.optimum
    t = np.linspace(0.0, H.L, 2001)
    edge = np.concatenate([np.stack(c, -1) for c in ((0 * t, t), (0 * t + H.L, t), (t, 0 * t),
                                                      (t, 0 * t + H.L))])
    # a grid of the boundary is no lower than the refined minimum (up to rounding)
    assert float(jnp.min(p.fn_batch(jnp.asarray(edge)))) >= p.optimum - 1e-9 * abs(p.optimum)


def test_heat_registry_and_bad_cases():
    assert B.get("heat_equation").name == "heat_equation_1"
    assert B.get("Heat-Equation", case=3).name == "heat_equation_3"
    with pytest.raises(ValueError, match=r"case=4 is not valid for 'heat_equation'.*1, 2, 3"):
        B.get("heat_equation", case=4)
    with pytest.raises(ValueError, match=r"case=1 is only accepted by heat_equation"):
        B.get("dropwave_pde", case=1)
    with pytest.raises(ValueError, match=r"case must be one of \(1, 2, 3\)"):
        H.solve(0)
