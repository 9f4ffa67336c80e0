"""The development suite: optima moved off the box centre by fixed shifts and rotations.

References: the loop implementations of ``tests/test_benchmarks.py`` (``REFERENCES``, float64,
written from the formulas) evaluated at ``c + Q (x - c - s)`` computed here in numpy; uniform
samples and L-BFGS-B runs on those references for the optima.
"""

import chex
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from ntkbo import benchmarks as B
from ntkbo.benchmarks import suites
from test_benchmarks import REFERENCES

DEV = B.suite("dev")
FAMILY = {suites._label(m): m.family for m in suites.DEV}


def reference(problem, xs):
    """``f(c + Q (x - c - s))`` row by row, in numpy with the loop reference ``f``."""
    t = problem.fn
    c, s = np.asarray(t.centre), np.asarray(t.shift)
    q = np.eye(c.size) if t.rotation is None else np.asarray(t.rotation)
    family = FAMILY[problem.name.split("_", 1)[1]]
    return np.array([REFERENCES[family](list(c + q @ (x - c - s))) for x in np.atleast_2d(xs)])


def test_suite_spans_the_dimensions_issue_15_asks_for():
    """At least 12 problems from d = 2 to d = 20, including 10-D and 20-D ones."""
    dims = [p.dim for p in DEV.values()]
    assert len(DEV) >= 12 and min(dims) == 2 and max(dims) == 20 and 10 in dims
    assert all(p.name == f"dev_{label}" for label, p in DEV.items())


@pytest.mark.parametrize("label", list(DEV))
def test_values_optimum_and_off_centre_minimiser(label):
    """Catches a transform applied with the wrong sign or order (mutation: ``x - c + s`` in
    ``Transformed.__call__``, or ``Q^T`` for ``Q``): the library's values equal the numpy reference
    at random points (float64, same arithmetic up to summation order: 1e-9 relative); the listed
    minimisers lie in the box, attain ``optimum`` (1e-9 * max(1, |f*|), the published minimisers'
    accuracy) and are away from the centre (max_i |x_i - c_i| / h_i >= 0.2: the target rule draws
    >= 0.4, Michalewicz's shift moves it by up to 0.3 h)."""
    p = DEV[label]
    lo, hi = (np.asarray(b) for b in p.bounds)
    x = lo + (hi - lo) * np.random.default_rng(1).uniform(size=(16, p.dim))
    scale = max(1.0, abs(p.optimum))
    np.testing.assert_allclose(np.asarray(p.fn_batch(jnp.asarray(x))), reference(p, x),
                               rtol=1e-9, atol=1e-9)
    chex.assert_shape(p.optimizer, (None, p.dim))
    chex.assert_type(p.fn_batch(p.optimizer), float)
    xs = np.asarray(p.optimizer)
    assert xs.shape[0] >= 1 and np.all((xs >= lo) & (xs <= hi))
    np.testing.assert_allclose(reference(p, xs), p.optimum, rtol=0, atol=1e-9 * scale)
    c, h = (lo + hi) / 2, (hi - lo) / 2
    assert np.max(np.abs(xs[0] - c) / h) >= 0.2
    if label != "michalewicz10":  # the unshifted minimiser is no longer optimal
        base = B.get(FAMILY[label], p.dim)
        assert reference(p, np.asarray(base.optimizer)[:1])[0] > p.optimum + 1e-6 * scale


@pytest.mark.parametrize("label", list(DEV))
def test_nothing_beats_the_optimum(label):
    """Catches a wrong ``optimum`` (e.g. the unshifted box's Michalewicz minimum, or a minimiser
    mapped outside the box while another region of the rotated box dips lower): 2,048 uniform
    points and L-BFGS-B from the 4 best of them stay >= optimum - 1e-9 * max(1, |f*|)."""
    p = DEV[label]
    lo, hi = (np.asarray(b) for b in p.bounds)
    x = lo + (hi - lo) * np.random.default_rng(2).uniform(size=(2048, p.dim))
    f = np.asarray(p.fn_batch(jnp.asarray(x)))
    tol = 1e-9 * max(1.0, abs(p.optimum))
    assert f.min() >= p.optimum - tol
    for x0 in x[np.argsort(f)[:4]]:
        res = optimize.minimize(lambda v: reference(p, v)[0], x0, method="L-BFGS-B",
                                bounds=list(zip(lo, hi)), options=dict(maxiter=200))
        assert res.fun >= p.optimum - tol, (x0, res.x, res.fun)


def test_hartmann6_minimum_is_global_on_r6():
    """The suite shifts Hartmann-6 outside the unit cube, which is valid only if its published
    minimum is its minimum on all of R^6: 48 L-BFGS-B runs from [-1, 2]^6 never go below it
    (1e-9: L-BFGS-B's accuracy on a smooth function). Catches a suite member whose optimum
    claim rests on an unchecked global bound."""
    f = REFERENCES["hartmann6"]
    starts = np.random.default_rng(3).uniform(-1.0, 2.0, size=(48, 6))
    best = min(optimize.minimize(lambda v: f(list(v)), x0, method="L-BFGS-B").fun for x0 in starts)
    assert best >= B.get("hartmann6").optimum - 1e-9


def test_rotations_are_orthogonal_and_fixed():
    """``Q Q^T = I`` (1e-12: float64 QR) and the suite is rebuilt identically (its draws come from
    the fixed ``SEED``, not from global state)."""
    for p in DEV.values():
        if p.fn.rotation is not None:
            q = np.asarray(p.fn.rotation)
            np.testing.assert_allclose(q @ q.T, np.eye(p.dim), atol=1e-12)
    suites._build.cache_clear()
    again = B.suite("dev")
    assert all(again[k].fn == DEV[k].fn for k in DEV)


def test_unknown_suite_is_named():
    with pytest.raises(ValueError, match="suite name='nope'"):
        B.suite("nope")


def test_registry_names_suite_members():
    # get("dev/<member>") is how specs and the CLI name a suite member: it must be the suite's
    # problem itself (same function, box and optimum), with noise settable. Catches a lookup that
    # builds the family's unshifted problem (its values differ off the optimum).
    member = suites.suite("dev")["ackley10"]
    got = B.get("dev/ackley10", noise_std=0.2)
    x = jnp.linspace(member.bounds[0], member.bounds[1], 7)
    np.testing.assert_array_equal(got.fn_batch(x), member.fn_batch(x))
    np.testing.assert_array_equal(got.bounds, member.bounds)
    assert got.optimum == member.optimum and got.noise_std == 0.2
    assert not np.allclose(B.get("ackley", 10).fn_batch(x), member.fn_batch(x))
    for bad, match in ((dict(name="dev/nope"), "no member 'nope'"),
                       (dict(name="nope/ackley10"), "unknown suite 'nope'"),
                       (dict(name="dev/ackley10", dim=3), "has dim 10"),
                       (dict(name="dev/ackley10", bounds=(0, 1)), "bounds")):
        with pytest.raises(ValueError, match=match):
            B.get(**bad)


# ---- the constrained dev suite: Neural-CBO's four problems, moved (suites module docstring) ----

CONSTRAINED = B.suite("dev_constrained")
BASE = {suites._label(m): m for m in suites.DEV_CONSTRAINED}


def transformed_point(problem, xs):
    """``c + Q (x - c - s)`` row by row in numpy (the identity for a member that is not moved)."""
    t = problem.fn
    if not isinstance(t, suites.Transformed):
        return np.atleast_2d(xs)
    c, s = np.asarray(t.centre), np.asarray(t.shift)
    q = np.eye(c.size) if t.rotation is None else np.asarray(t.rotation)
    return np.array([c + q @ (x - c - s) for x in np.atleast_2d(xs)])


@pytest.mark.parametrize("label", list(CONSTRAINED))
def test_constrained_member_is_its_family_at_the_moved_point(label):
    """Catches constraints left unmoved while the objective moves (mutation: ``constraints =
    base.constraints`` in ``suites._build``), or moved with another transform: objective and
    constraints equal the registry's problem (tested against the thesis's formulas in
    ``test_constrained_problems.py``) at ``c + Q (x - c - s)`` computed here in numpy (float64,
    1e-9 relative: the same arithmetic up to summation order); the listed minimisers are feasible,
    attain ``optimum`` and lie away from the centre (>= 0.4 of the half-width by the target rule;
    Simionescu's are at 0.68); the members that move do move (the family's minimiser is no longer
    optimal there)."""
    p = CONSTRAINED[label]
    base = B.get(BASE[label].family)
    assert p.name == f"dev_constrained_{label}" and p.n_constraints == base.n_constraints
    lo, hi = (np.asarray(b) for b in p.bounds)
    x = lo + (hi - lo) * np.random.default_rng(4).uniform(size=(16, p.dim))
    z = jnp.asarray(transformed_point(p, x))
    np.testing.assert_allclose(p.fn_batch(jnp.asarray(x)), base.fn_batch(z), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(p.constraints_batch(jnp.asarray(x)), base.constraints_batch(z),
                               rtol=1e-9, atol=1e-9)
    xs = np.asarray(p.optimizer)
    assert xs.shape[0] >= 1 and np.all((xs >= lo) & (xs <= hi))
    assert np.all(np.asarray(p.constraints_batch(jnp.asarray(xs))) <= 0)
    scale = max(1.0, abs(p.optimum))
    np.testing.assert_allclose(p.fn_batch(jnp.asarray(xs)), p.optimum, rtol=0,
                               atol=1e-6 * scale)  # the registry's minimisers are float32 values
    c, h = (lo + hi) / 2, (hi - lo) / 2
    assert np.max(np.abs(xs[0] - c) / h) >= 0.4
    if BASE[label].move:
        at_old = jnp.asarray(np.asarray(base.optimizer)[:1])
        worse = p.fn_batch(at_old)[0] > p.optimum + 1e-6 * scale
        assert worse or np.any(np.asarray(p.constraints_batch(at_old)) > 0)


@pytest.mark.parametrize("label", [m for m, b in BASE.items() if b.move])
def test_moved_constrained_optimum_rests_on_a_global_bound(label):
    """A moved member's ``optimum`` is right only if the constrained optimum is also the family's
    minimum on all of ``R^d`` (module docstring): the unconstrained family's optimum equals it
    (Hartmann-6's global bound is checked above, Branin's ``5 / (4 pi)`` and Ackley's 0 are
    closed forms), and no feasible point among 4,096 uniform ones, nor L-BFGS-B from the best 4
    of them on ``f + 1e6 violation``, goes below it. Catches a constrained problem whose optimum
    is only the box's, which a shift would invalidate."""
    p = CONSTRAINED[label]
    family = BASE[label].family.removesuffix("_constrained")
    assert np.isclose(B.get(family, p.dim).optimum, p.optimum, rtol=1e-12, atol=0)
    lo, hi = (np.asarray(b) for b in p.bounds)
    x = lo + (hi - lo) * np.random.default_rng(5).uniform(size=(4096, p.dim))
    f = np.asarray(p.fn_batch(jnp.asarray(x)))
    v = np.maximum(np.asarray(p.constraints_batch(jnp.asarray(x))), 0).sum(axis=1)
    tol = 1e-9 * max(1.0, abs(p.optimum))
    assert np.all(f[v == 0] >= p.optimum - tol)

    def penalised(u):
        u = jnp.asarray(u[None])
        return float(p.fn_batch(u)[0] + 1e6 * jnp.maximum(p.constraints_batch(u), 0).sum())

    for x0 in x[np.argsort(f + 1e6 * v)[:4]]:
        res = optimize.minimize(penalised, x0, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                                options=dict(maxiter=200))
        assert res.fun >= p.optimum - tol, (x0, res.x, res.fun)


def test_constrained_suite_draws_differ_from_the_dev_suite():
    """Branin is in both suites: its rotation and shift must come from the constrained suite's own
    seed (``_SEEDS``), not repeat the dev suite's. Catches the dev seed reused (mutation:
    ``_SEEDS["dev_constrained"] = (SEED,)``)."""
    a, b = DEV["branin2"].fn, CONSTRAINED["branin2"].fn
    assert not np.allclose(a.shift, b.shift) and not np.allclose(a.rotation, b.rotation)
    assert B.get("dev_constrained/hartmann6").constraints == CONSTRAINED["hartmann6"].constraints
