"""Constrained problems: constraint values, known optima, the metric of
Neural-CBO, the drivers' bookkeeping and the ask/tell loop with constraint values."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq, minimize as sp_minimize

import ntkbo
from ntkbo import ask_tell, loop
from ntkbo.benchmarks import constrained as C
from ntkbo.benchmarks.problem import Problem

NAMES = ["branin_constrained", "simionescu_constrained", "ackley_constrained",
         "hartmann6_constrained", "gas_transmission", "speed_reducer"]


# ---- independent numpy transcriptions of the thesis's formulas ----


def np_gas(x):
    x1, x2, x3, x4 = x
    return (8.61e5 * x1**0.5 * x2 * x3 ** (-2 / 3) * x4**-0.5 + 3.69e4 * x3
            + 7.72e8 * x1**-1 * x2**0.219 - 765.43e6 * x1**-1)


def np_gas_c(x):
    return np.array([x[3] * x[1] ** -2 + x[1] ** -2 - 1])


def np_sr(x):
    x1, x2, x3, x4, x5, x6, x7 = x
    return (0.7854 * x2**2 * x1 * (14.9334 * x3 - 43.0934 + 3.3333 * x3**2)
            + 0.7854 * (x5 * x7**2 + x4 * x6**2) - 1.508 * x1 * (x7**2 + x6**2)
            + 7.477 * (x7**3 + x6**3))


def np_sr_c(x):
    x1, x2, x3, x4, x5, x6, x7 = x
    return np.array([
        -x1 * x2**2 * x3 + 27, -x1 * x2**2 * x3**2 + 397.5, -x2 * x6**4 * x3 * x4**-3 + 1.93,
        -x2 * x7**4 * x3 * x5**-3 + 1.93,
        10 * x6**-3 * math.sqrt(16.91e6 + (745 * x4 * x2**-1 * x3**-1) ** 2) - 1100,
        10 * x7**-3 * math.sqrt(157.5e6 + (745 * x5 * x2**-1 * x3**-1) ** 2) - 850,
        x2 * x3 - 40, -x1 * x2**-1 + 5, x1 / x2 - 12,  # c_9 with the sign corrected
        1.5 * x6 - x4 + 1.9, 1.1 * x7 - x5 + 1.9])


def np_simionescu_c(x):
    # the raw formula with atan(x1 / x2) (x2 != 0 here)
    return np.array([x[0] ** 2 + x[1] ** 2 - (1 + 0.2 * math.cos(8 * math.atan(x[0] / x[1]))) ** 2])


def test_constraint_values_match_hand_computations():
    # Branin disc at (0, 0): 2.5^2 + 7.5^2 - 50 = 12.5 (infeasible); at its centre: -50.
    p = ntkbo.benchmarks.get("branin_constrained")
    np.testing.assert_allclose(p.constraints_batch(jnp.array([[0.0, 0.0], [2.5, 7.5]])),
                               [[12.5], [-50.0]], rtol=1e-14)
    assert p.feasible_batch(jnp.array([[0.0, 0.0], [2.5, 7.5]])).tolist() == [False, True]
    # the boundary c = 0 counts as feasible (the sign convention c_k(x) <= 0)
    np.testing.assert_array_equal(ntkbo.benchmarks.Problem(
        name="z", fn=lambda x: x[0], bounds=jnp.array([[0.0], [1.0]]),
        constraints=lambda x: x - x).feasible_batch(jnp.array([[0.5]])), [True])
    rng = np.random.default_rng(0)
    checks = [("simionescu_constrained", np_simionescu_c), ("gas_transmission", np_gas_c),
              ("speed_reducer", np_sr_c)]
    for name, ref in checks:
        p = ntkbo.benchmarks.get(name)
        lo, hi = np.asarray(p.bounds)
        x = lo + (hi - lo) * rng.random((20, p.dim))
        want = np.stack([ref(xi) for xi in x])
        np.testing.assert_allclose(p.constraints_batch(jnp.asarray(x)), want, rtol=1e-11,
                                   atol=1e-9)  # float64 rounding of sums of terms up to ~1e4
    for name, ref in (("gas_transmission", np_gas), ("speed_reducer", np_sr)):
        p = ntkbo.benchmarks.get(name)
        lo, hi = np.asarray(p.bounds)
        x = lo + (hi - lo) * rng.random((20, p.dim))
        np.testing.assert_allclose(p.fn_batch(jnp.asarray(x)), [ref(xi) for xi in x],
                                   rtol=1e-12)
    # Ackley-5 constraints at x = (1, ..., 1): c1 = 1 - 5.5^2, c2 = 1 - 9; Hartmann: |x| - 1
    p = ntkbo.benchmarks.get("ackley_constrained")
    np.testing.assert_allclose(p.constraints_batch(jnp.ones((1, 5))), [[1 - 30.25, -8.0]],
                               rtol=1e-14)
    p = ntkbo.benchmarks.get("hartmann6_constrained")
    np.testing.assert_allclose(p.constraints_batch(jnp.full((1, 6), 0.5)),
                               [[math.sqrt(1.5) - 1]], rtol=1e-14)


@pytest.mark.parametrize("name", NAMES)
def test_optima_hold_at_their_optimisers_and_are_feasible(name):
    p = ntkbo.benchmarks.get(name)
    x = p.optimizer
    # the listed minimisers are the published ones rounded (and nudged inward by ~1e-12): the value
    # agrees to the digits published (2964895.4173: 1.4e-11 relative; 2994.4244658: 1e-10)
    np.testing.assert_allclose(p.fn_batch(x), p.optimum, rtol=1e-9)
    assert np.all(np.asarray(p.constraints_batch(x)) <= 0.0), p.constraints_batch(x)
    assert p.n_constraints == {"ackley_constrained": 2, "speed_reducer": 11}.get(name, 1)


def test_branin_constraint_excludes_the_other_minimisers():
    p = ntkbo.benchmarks.get("branin_constrained")
    others = jnp.array([[-math.pi, 12.275], [3 * math.pi, 2.475]])
    np.testing.assert_allclose(p.fn_batch(others), 5 / (4 * math.pi), rtol=1e-9)
    assert not np.any(np.asarray(p.feasible_batch(others)))


def test_speed_reducer_optimum_from_its_active_constraints():
    """Independent derivation: x1..x4 at their bounds, x6 and x7 solve c5 = c6 = 0, x5 = 1.1 x7
    + 1.9 (c11 = 0); the value is the published 2994.4244658, and a local solver started nearby does
    not find a better feasible point."""
    x1, x2, x3, x4 = 3.5, 0.7, 17.0, 7.3
    x6 = brentq(lambda v: np_sr_c([x1, x2, x3, x4, 8.0, v, 5.2])[4], 2.9, 3.9, xtol=1e-15)
    x7 = brentq(lambda v: np_sr_c([x1, x2, x3, x4, 1.1 * v + 1.9, x6, v])[5], 5.0, 5.5,
                xtol=1e-15)
    x = np.array([x1, x2, x3, x4, 1.1 * x7 + 1.9, x6, x7])
    assert abs(np_sr(x) - 2994.4244658) < 1e-6  # the published value has 8 significant digits
    np.testing.assert_allclose(C.SPEED_REDUCER_MINIMISER[0], x, rtol=1e-11)  # nudged by ~1e-12
    lo, hi = np.asarray(ntkbo.benchmarks.get("speed_reducer").bounds)
    scale = np.array([27, 397.5, 1.93, 1.93, 1100, 850, 40, 5, 12, 1, 1])
    r = sp_minimize(np_sr, x + 0.01 * (hi - lo), method="SLSQP", bounds=list(zip(lo, hi)),
                    constraints={"type": "ineq", "fun": lambda v: -np_sr_c(v) / scale},
                    options=dict(ftol=1e-15, maxiter=500))
    assert r.fun > 2994.4244658 - 1e-4 or np.max(np_sr_c(r.x)) > 0  # SLSQP's tolerance ~1e-6


def test_gas_transmission_optimum_by_an_independent_solver():
    """On the active constraint x4 = x2^2 - 1 with x1 at its upper bound, Nelder-Mead in (x2, x3)
    reaches the published optimum 2964895.4173, and from random feasible starts SLSQP finds nothing
    better."""
    g = lambda v: np_gas([50.0, v[0], v[1], v[0] ** 2 - 1])  # noqa: E731
    r = sp_minimize(g, [1.2, 25.0], method="Nelder-Mead",
                    options=dict(xatol=1e-12, fatol=1e-9, maxiter=4000))
    assert abs(r.fun - C.GAS_OPTIMUM) < 1e-3  # the published value has 4 decimals
    lo, hi = np.asarray(ntkbo.benchmarks.get("gas_transmission").bounds)
    rng = np.random.default_rng(1)
    for _ in range(5):
        u0 = rng.random(4)
        rs = sp_minimize(lambda u: np_gas(lo + u * (hi - lo)) / 1e6, u0, method="SLSQP",
                         bounds=[(0, 1)] * 4,
                         constraints={"type": "ineq", "fun": lambda u: -np_gas_c(lo + u * (hi - lo))},
                         options=dict(ftol=1e-14, maxiter=500))
        xs = lo + rs.x * (hi - lo)
        if np_gas_c(xs)[0] <= 1e-9:  # feasible up to SLSQP's tolerance: cost ~1e-9 relative
            assert np_gas(xs) > C.GAS_OPTIMUM * (1 - 1e-8)


# ---- the drivers ----------------------------------------------------------------------------


def hand_metric(f, c, f_star):
    out, best = [], np.inf
    for fi, ci in zip(f, c):
        best = min(best, max(fi - f_star, 0.0) + sum(max(v, 0.0) for v in ci))
        out.append(best)
    return np.array(out)


def test_metric_feasibility_and_best_point_match_hand_computations():
    p = ntkbo.benchmarks.get("simionescu_constrained")
    r = ntkbo.minimize(ntkbo.algorithms.random_search(), p, 12, jax.random.PRNGKey(3), n_init=4)
    c = np.asarray(p.constraints_batch(r.x))
    np.testing.assert_allclose(r.c, c, rtol=1e-14)
    np.testing.assert_array_equal(r.c_obs, r.c)  # noise-free constraints
    np.testing.assert_array_equal(r.feasible, np.all(c <= 0, axis=1))
    np.testing.assert_allclose(r.metric, hand_metric(np.asarray(r.f), c, -0.072), rtol=1e-14)
    feas = np.all(c <= 0, axis=1)
    assert feas.any()  # with these keys some point is feasible: the best is the best feasible one
    i = np.flatnonzero(feas)[np.argmin(np.asarray(r.y)[feas])]
    np.testing.assert_array_equal(r.best_x, r.x[i])
    assert bool(r.best_feasible) and r.best_y == r.y[i]
    # a tiny explicit case: f* = 1, f = (3, 1.5, 0.5), c = ((1, -1), (-2, 0.25), (-1, -1))
    np.testing.assert_allclose(
        loop.best_regret_plus_violation(jnp.array([3.0, 1.5, 0.5]),
                                        jnp.array([[1.0, -1.0], [-2.0, 0.25], [-1.0, -1.0]]), 1.0),
        [3.0, 0.75, 0.0])


def test_no_feasible_point_gives_the_least_violating_point():
    p = Problem(name="never", fn=lambda x: jnp.sum(x**2), bounds=jnp.array([[-1.0, -1.0],
                                                                          [1.0, 1.0]]),
                optimum=0.0, constraints=lambda x: jnp.stack([1.0 + x[0], 0.5 + x[1]]))
    r = ntkbo.minimize(ntkbo.algorithms.random_search(), p, 10, jax.random.PRNGKey(0), n_init=3)
    viol = np.sum(np.maximum(np.asarray(r.c), 0), axis=1)
    assert not bool(r.best_feasible) and not np.any(r.feasible)
    np.testing.assert_array_equal(r.best_x, r.x[np.argmin(viol)])
    np.testing.assert_allclose(r.metric, hand_metric(np.asarray(r.f), np.asarray(r.c), 0.0),
                               rtol=1e-14)


def test_unconstrained_algorithms_see_the_objective_and_problems_without_constraints_unchanged():
    p = ntkbo.benchmarks.get("branin_constrained")
    plain = ntkbo.benchmarks.get("branin")
    key = jax.random.PRNGKey(7)
    a = ntkbo.minimize(ntkbo.algorithms.random_search(), p, 10, key, n_init=3)
    b = ntkbo.minimize(ntkbo.algorithms.random_search(), plain, 10, key, n_init=3)
    np.testing.assert_array_equal(a.x, b.x)  # same points and noise stream as without constraints
    np.testing.assert_array_equal(a.y, b.y)
    assert b.c.shape == (10, 0) and bool(np.all(b.feasible))
    assert b.best_y == b.y.min()  # unconstrained: the best observation, as before
    np.testing.assert_allclose(b.metric, np.minimum.accumulate(np.maximum(b.f - plain.optimum, 0)),
                               rtol=1e-14)


def test_constraint_noise_is_recorded_and_separate_from_the_objective_noise():
    p = ntkbo.benchmarks.get("branin_constrained").replace(noise_std=0.5, constraint_noise_std=2.0)
    r = ntkbo.minimize(ntkbo.algorithms.random_search(), p, 200, jax.random.PRNGKey(1), n_init=5)
    e = np.asarray(r.c_obs - r.c)[:, 0]
    # 200 N(0, 2^2) residuals: sample std within 15% (a 4-sigma band for s.d. ~5%) and mean ~0
    assert abs(e.std() / 2.0 - 1) < 0.2 and abs(e.mean()) < 4 * 2.0 / math.sqrt(200)
    np.testing.assert_array_equal(r.c, p.constraints_batch(r.x))
    assert abs(np.corrcoef(e, np.asarray(r.y - r.f))[0, 1]) < 0.3  # independent draws
    noisy = ntkbo.benchmarks.get("speed_reducer", noise="relative", noise_scale=0.05)
    lo, hi = np.asarray(noisy.bounds)
    xs = lo + (hi - lo) * np.random.default_rng(0).random((10_000, 7))
    ref = 0.05 * np.std(np.stack([np_sr_c(x) for x in xs]), axis=0, ddof=1)
    # the rule's estimate on its own 10,000 points vs ours: two Monte-Carlo estimates of std
    np.testing.assert_allclose(noisy.constraint_noise_std, ref, rtol=0.1)


def test_constrained_algorithm_needs_a_matching_problem():
    algo = ntkbo.algorithms.gp(acquisition="cei", n_constraints=2)
    with pytest.raises(ValueError, match="n_constraints"):
        ntkbo.minimize(algo, ntkbo.benchmarks.get("branin_constrained"), 8, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="acquisition='cei'"):
        ntkbo.algorithms.gp(acquisition="ei", n_constraints=1)


def test_gp_cei_runs_and_keeps_every_functions_data():
    p = ntkbo.benchmarks.get("branin_constrained")
    algo = ntkbo.algorithms.get("gp_cei", n_constraints=1, fit=dict(enabled=False),
                                search=dict(num_candidates=128, num_restarts=2, num_steps=5))
    r = ntkbo.minimize(algo, p, 9, jax.random.PRNGKey(2), n_init=5)
    assert r.x.shape == (9, 2) and np.all(np.isfinite(r.info.acq_value))
    s = r.state
    assert int(s.objective.data.count) == 9 and int(s.constraints[0].data.count) == 9
    np.testing.assert_allclose(s.constraints[0].data.y[:9], r.c_obs[:, 0], rtol=0)


# ---- ask/tell ---------------------------------------------------------------------------------


def test_ask_tell_with_constraints_validates_and_loses_nothing():
    p = ntkbo.benchmarks.get("branin_constrained")
    algo = ntkbo.algorithms.gp(acquisition="cei", n_constraints=1, fit=dict(enabled=False),
                               search=dict(num_candidates=64, num_restarts=2, num_steps=3))
    study = ask_tell.start(algo, p.bounds, jax.random.PRNGKey(0), n_init=3)
    for _ in range(3):
        x, study = ask_tell.ask(algo, study)
        study = ask_tell.tell(algo, study, x, p.fn_batch(x), p.constraints_batch(x))
    xs, ys = ask_tell.observations(study)
    cs = ask_tell.constraint_observations(algo, study)
    np.testing.assert_allclose(cs, p.constraints_batch(jnp.asarray(xs)), rtol=1e-14)
    x, study = ask_tell.ask(algo, study)
    bad = [
        (None, "c .* is required"),
        ([[0.0, 1.0]], r"c must have shape \(1, 1\)"),
    ]
    for c, match in bad:
        with pytest.raises(ValueError, match=match):
            ask_tell.tell(algo, study, x, p.fn_batch(x), c)
        np.testing.assert_array_equal(ask_tell.observations(study)[1], ys)  # nothing lost
        np.testing.assert_array_equal(ask_tell.constraint_observations(algo, study), cs)
    with pytest.raises(ValueError, match="does not model constraints"):
        rs = ntkbo.algorithms.random_search()
        st = ask_tell.start(rs, p.bounds, jax.random.PRNGKey(0), n_init=1)
        ask_tell.tell(rs, st, np.zeros((1, 2)), [1.0], [[0.0]])
    study = ask_tell.tell(algo, study, x, p.fn_batch(x), p.constraints_batch(x))
    assert ask_tell.constraint_observations(algo, study).shape == (4, 1)
    # A NaN constraint value is a failed evaluation: recorded, flagged, never the best.
    x, study = ask_tell.ask(algo, study)
    study = ask_tell.tell(algo, study, x, [-1e9], [[np.nan]])
    assert ask_tell.failed(study).tolist() == [False] * 4 + [True]
    assert ask_tell.best(study)[1] > -1e9
