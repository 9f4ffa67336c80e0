"""Tests of ntkbo.qmc and ntkbo.optimize.

Quasi-random points are checked against scipy's Sobol' implementation (same direction numbers), the
net property that scrambling preserves, and the discrepancy of i.i.d. uniform points. The optimiser
is checked on a family of test acquisitions whose maximiser is known in closed form; each method is
compiled once and ``vmap``-ed over keys, boxes and problems, which also exercises ``jit``/``vmap``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import qmc as scipy_qmc

from ntkbo import acquisition, qmc
from ntkbo.optimize import (DISTINCT_POOL, MIN_DISTANCE, argmax_distinct, maximize_acquisition,
                            maximize_acquisition_batch, maximize_over_candidates, near_observed)

GENERATORS = (qmc.sobol, qmc.kronecker, qmc.uniform)


def unit_box(d, dtype=jnp.float64):
    return jnp.stack([jnp.zeros(d, dtype), jnp.ones(d, dtype)])


# ------------------------------------------------------------------------------------------- qmc


@pytest.mark.parametrize("d", [1, 7, qmc.SOBOL_MAX_DIM])
def test_sobol_unscrambled_equals_scipy(d):
    ours = qmc.sobol(None, 512, unit_box(d), scramble=False)
    ref = scipy_qmc.Sobol(d, scramble=False).random(512)
    np.testing.assert_array_equal(ours, ref)  # both are exact dyadic fractions


def test_scrambled_sobol_keeps_the_net_property():
    n, d = 256, qmc.SOBOL_MAX_DIM
    for seed in range(2):
        x = np.asarray(qmc.sobol(jax.random.PRNGKey(seed), n, unit_box(d)))
        cells = np.floor(x * n).astype(int)
        # Every coordinate of the first 2**m points has one point in each of the 2**m cells ...
        assert all(len(np.unique(cells[:, j])) == n for j in range(d))
        # ... and the first two coordinates form a (0, 8, 2)-net: one point per 16 x 16 cell.
        assert len({(a // 16, b // 16) for a, b in cells[:, :2]}) == n


def test_kronecker_alpha_is_the_generalised_golden_ratio():
    alpha1 = qmc._kronecker_alpha(1) / 2.0**32
    np.testing.assert_allclose(alpha1, [(np.sqrt(5) - 1) / 2], atol=2**-32)
    roots = np.roots([1, 0, -1, -1])  # x**3 = x + 1: the plastic number
    phi2 = roots[np.isreal(roots)].real.max()
    np.testing.assert_allclose(qmc._kronecker_alpha(2) / 2.0**32, [1 / phi2, 1 / phi2**2],
                               atol=2**-32)


def test_quasi_random_points_beat_uniform_discrepancy():
    n, d = 256, 5
    rng = np.random.default_rng(0)
    uniform_ref = np.median([scipy_qmc.discrepancy(rng.random((n, d))) for _ in range(20)])
    for gen in (qmc.sobol, qmc.kronecker):
        disc = [scipy_qmc.discrepancy(np.asarray(gen(jax.random.PRNGKey(s), n, unit_box(d))))
                for s in range(5)]
        # Low-discrepancy sets have L2 discrepancy O(log(n)**d / n) against O(n**-1/2) for i.i.d.
        # points: about 6x smaller here (measured); a factor 2 leaves a wide margin.
        assert max(disc) < 0.5 * uniform_ref, gen.__name__


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_points_in_box_deterministic_and_dtype(dtype):
    bounds = jnp.array([[-3.0, 0.5, 10.0], [-1.0, 0.5, 1e4]], dtype)  # includes a zero-width side
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    for gen in GENERATORS:
        x = gen(k1, 100, bounds)
        assert x.shape == (100, 3) and x.dtype == dtype
        assert jnp.all((x >= bounds[0]) & (x <= bounds[1]))
        np.testing.assert_array_equal(x, gen(k1, 100, bounds))
        assert not np.allclose(x, gen(k2, 100, bounds))
    batched = jax.vmap(lambda k: qmc.sobol(k, 100, bounds))(jnp.stack([k1, k2]))
    np.testing.assert_array_equal(batched[1], qmc.sobol(k2, 100, bounds))  # vmap == single call


def test_qmc_argument_errors():
    with pytest.raises(ValueError, match="kronecker"):
        qmc.sobol(jax.random.PRNGKey(0), 4, unit_box(qmc.SOBOL_MAX_DIM + 1))
    with pytest.raises(ValueError, match="shape"):
        qmc.uniform(jax.random.PRNGKey(0), 4, jnp.zeros((3, 2)))
    with pytest.raises(ValueError, match="positive"):
        qmc.kronecker(jax.random.PRNGKey(0), 0, unit_box(2))


# -------------------------------------------------------------------------------------- optimize


def family(x, c, amp, cut):
    """Test acquisition ``-|x - c|^2 + amp * sum(cos(2 pi (x - c)) - 1)``, NaN where ``x_0 > cut``.

    Separable and maximised coordinatewise at ``clip(c, lower, upper)`` when ``amp = 0`` (concave);
    for ``amp > 0`` and ``c`` in the box it is a shifted Rastrigin function (many local maxima) with
    global maximum 0 at ``c``. The NaN region tests that non-finite values count as ``-inf``.
    """
    r = x - c
    f = -jnp.sum(r**2, -1) + amp * jnp.sum(jnp.cos(2 * jnp.pi * r) - 1, -1)
    return jnp.where(x[:, 0] <= cut, f, jnp.nan)


NUM_STEPS = 200


def run_problem(method, key, bounds, c, amp, cut, x_best):
    acq_fn = functools.partial(family, c=c, amp=amp, cut=cut)
    return maximize_acquisition(key, acq_fn, bounds, x_best=x_best, num_candidates=1024,
                                num_restarts=16, num_steps=NUM_STEPS, method=method)


@functools.lru_cache(maxsize=None)
def solver(method):
    """One compiled optimiser per method: (key, bounds, c, amp, cut, x_best) -> result."""
    return jax.jit(functools.partial(run_problem, method))


def solve_all(method, batch):
    """Solves every problem of the batch (same shapes: one compilation); stacked results."""
    out = [solver(method)(*(a[i] for a in batch)) for i in range(len(batch[0]))]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *out)


def problems():
    """A batch of problems: interior, boundary, multimodal, random boxes, NaN region."""
    rng = np.random.default_rng(0)
    rows = [  # bounds, c, amp, cut
        ([[-1, -1], [1, 1]], [0.3, -0.7], 0.0, np.inf),  # interior maximiser
        ([[-1, -1], [1, 1]], [0.3, 2.0], 0.0, np.inf),  # on the upper bound of x_1
        ([[-1, -1], [1, 1]], [-3.0, -1.5], 0.0, np.inf),  # at the corner (-1, -1)
        ([[-2.5, -2.5], [2.5, 2.5]], [0.37, -0.21], 10.0, np.inf),  # Rastrigin, global max at c
        ([[-2.5, -2.5], [2.5, 2.5]], [-1.1, 0.9], 10.0, np.inf),
        ([[-1, -1], [1, 1]], [0.9, 0.2], 0.0, 0.5),  # maximiser in the NaN region x_0 > 0.5
    ]
    for _ in range(6):  # random boxes, maximiser often outside: a bounds property test
        lo = rng.uniform(-5, 5, 2)
        hi = lo + rng.uniform(0.1, 3, 2)
        rows.append(([lo, hi], rng.uniform(-8, 8, 2), float(rng.uniform(0, 3)), np.inf))
    bounds, c, amp, cut = (jnp.asarray(np.array(col, dtype=float)) for col in zip(*rows))
    # Points to perturb: one NaN row (ignored) and one far outside the box (clipped into it).
    x_best = jnp.stack([jnp.full((len(rows), 2), jnp.nan), bounds[:, 1] + 10.0], axis=1)
    keys = jax.random.split(jax.random.PRNGKey(42), len(rows))
    return keys, bounds, c, amp, cut, x_best


def expected_maximiser(bounds, c, amp, cut):
    """Closed form: the clip of c for amp = 0; c itself for the Rastrigin rows (c in the box)."""
    return np.clip(np.asarray(c), np.asarray(bounds[:, 0]), np.asarray(bounds[:, 1]))


# Accuracy of the maximiser after NUM_STEPS steps (measured: pgd ~2e-6, lbfgs ~1e-15,
# adam ~2e-6 on the Rastrigin rows whose curvature is ~400); "none" is a 1024-point candidate search
# in 2-D, whose spacing is ~0.03 box widths, but the test for it is only that it beats no candidate.
TOL = {"adam": 1e-4, "pgd": 1e-4, "lbfgs": 1e-6}


@pytest.mark.parametrize("method", ["none", "adam", "pgd", "lbfgs"])
def test_maximize_acquisition_properties(method):
    keys, bounds, c, amp, cut, x_best = problems()
    x, value, info = solve_all(method, (keys, bounds, c, amp, cut, x_best))
    lo, hi = bounds[:, 0], bounds[:, 1]

    # Always inside the box (exactly: projected), finite, and value == acq_fn(x).
    assert jnp.all((x >= lo) & (x <= hi))
    assert jnp.all(jnp.isfinite(value)) and jnp.all(info.success)
    recomputed = jax.jit(jax.vmap(lambda xi, ci, a, t: family(xi[None], ci, a, t)[0]))(
        x, c, amp, cut)
    np.testing.assert_allclose(value, recomputed, rtol=1e-12, atol=1e-15)

    # Refinement never lowers the value: per start, and overall against the candidates alone
    # (the "none" solver sees the same candidates for the same key).
    assert jnp.all(info.refined_values >= info.start_values)
    assert jnp.all(info.value_after >= info.value_before)
    _, value_none, info_none = solve_all("none", (keys, bounds, c, amp, cut, x_best))
    np.testing.assert_array_equal(info.value_before, value_none)
    assert jnp.all(value >= value_none)
    assert jnp.all(info_none.value_before == jnp.max(info_none.start_values, axis=-1))

    # Row 5's maximiser (0.9, 0.2) is in the NaN region: the result stays out of it. (Gradient
    # steps stall at the NaN wall x_0 = 0.5, which is not a bound, so no accuracy is claimed.)
    assert x[5, 0] <= 0.5
    if method != "none":  # rows 0-4 have a closed-form maximiser; the random rows need not
        expected = expected_maximiser(bounds[:5], c[:5], amp[:5], cut[:5])
        np.testing.assert_allclose(x[:5], expected, atol=TOL[method])
        assert jnp.all(info.improved[:5])
        # Maximisers on the bounds are reached exactly thanks to the projection.
        assert x[1, 1] == 1.0 and jnp.all(x[2] == -1.0)


def test_deterministic_and_vmap_matches_single_calls():
    keys, bounds, c, amp, cut, x_best = problems()
    i = 3  # a multimodal problem, solved for several keys at once and one key at a time
    batched = jax.jit(jax.vmap(
        lambda k: run_problem("pgd", k, bounds[i], c[i], amp[i], cut[i], x_best[i])))
    many = jax.random.split(keys[i], 4)
    x1, v1, info1 = batched(many)
    x2, v2, _ = batched(many)
    np.testing.assert_array_equal(x1, x2)  # same keys, bit-identical results
    np.testing.assert_array_equal(v1, v2)
    for j, k in enumerate(many):
        xs, vs, _ = solver("pgd")(k, bounds[i], c[i], amp[i], cut[i], x_best[i])
        # vmap vectorises differently, so agreement is up to rounding of the same iterations.
        np.testing.assert_allclose(xs, x1[j], atol=1e-9)
        np.testing.assert_allclose(vs, v1[j], atol=1e-9)
    # Different keys give different candidate sets.
    assert not np.array_equal(info1.start_values[0], info1.start_values[1])


def test_no_finite_value_is_reported_not_raised():
    bounds = unit_box(3)
    f = jax.jit(lambda k: maximize_acquisition(k, lambda x: jnp.full(x.shape[0], jnp.nan), bounds,
                                               num_candidates=64, num_steps=3, method="none"))
    x, value, info = f(jax.random.PRNGKey(0))
    assert value == -jnp.inf and info.num_finite == 0 and not info.success
    assert jnp.all((x >= 0) & (x <= 1))


def test_x_best_is_a_candidate_and_chunking_changes_nothing():
    bounds = unit_box(4)
    c = jnp.array([0.123, 0.456, 0.789, 0.321])
    acq_fn = lambda x: -jnp.sum((x - c) ** 2, -1)  # noqa: E731
    run = jax.jit(lambda k, chunk: maximize_acquisition(
        k, acq_fn, bounds, x_best=jnp.stack([c, jnp.full(4, jnp.nan)]), num_candidates=100,
        num_perturbations=37, method="none", chunk_size=chunk), static_argnums=1)
    key = jax.random.PRNGKey(5)
    x, value, info = run(key, None)
    np.testing.assert_array_equal(x, c)  # the given point is the exact maximiser
    assert value == 0.0 and info.num_finite == 100 + 2 + 37
    x_c, value_c, info_c = run(key, 16)  # 139 candidates in 9 chunks of 16 (padded)
    np.testing.assert_array_equal(x_c, x)
    np.testing.assert_allclose(info_c.start_values, info.start_values, rtol=1e-15)


def test_candidates_layout_and_perturbation_noise():
    from ntkbo.optimize import _candidates

    bounds = jnp.array([[-100.0, 0.0], [100.0, 10.0]])
    x_best = jnp.array([[0.0, 5.0], [jnp.nan, 1.0]])  # second row is padding
    scale, n_pert = 0.01, 4000
    cand = jax.jit(lambda k: _candidates(k, bounds, 64, "sobol", x_best, n_pert, scale))(
        jax.random.PRNGKey(0))
    assert cand.shape == (64 + 2 + n_pert, 2) and jnp.all(jnp.isfinite(cand))
    assert jnp.all((cand >= bounds[0]) & (cand <= bounds[1]))
    np.testing.assert_array_equal(cand[64], x_best[0])
    # Perturbations of row 0 (every other one) are N(x_best, (scale * width)^2); the box is wide
    # enough (>= 25 sd) that clipping never happens. 5 standard errors for mean and variance.
    z = (np.asarray(cand[66::2]) - np.asarray(x_best[0])) / (scale * np.array([200.0, 10.0]))
    m = len(z)
    assert np.all(np.abs(z.mean(0)) < 5 / np.sqrt(m))
    assert np.all(np.abs(z.var(0) - 1) < 5 * np.sqrt(2 / m))
    # Perturbations of the padding row are uniform fill-ins: spread over the whole box.
    fill = np.asarray(cand[67::2])
    assert fill[:, 0].std() > 40 and fill[:, 1].std() > 2  # uniform sd: 57.7 and 2.89


def test_thompson_candidate_search_and_batch():
    # NeuralBO-style: independent per-point draws around a quadratic mean, candidate search only.
    bounds = jnp.array([[-1.0, -1.0], [1.0, 1.0]])
    c = jnp.array([0.25, -0.5])

    def ts(key, x):
        mu = jnp.sum((x - c) ** 2, -1)
        return acquisition.thompson_independent(key, mu, 0.01 * jnp.ones_like(mu), nu=1.0)

    run = jax.jit(lambda k: maximize_acquisition_batch(
        k, ts, bounds, 4, num_candidates=1024, method="none"))
    x, values, info = run(jax.random.PRNGKey(0))
    assert x.shape == (4, 2) and values.shape == (4,) and info.value_after.shape == (4,)
    assert jnp.all((x >= bounds[0]) & (x <= bounds[1]))
    # The best draw is within a few noise levels of the mean's minimum 0: |x - c|^2 <~ 4 * 0.01.
    assert jnp.all(jnp.sum((x - c) ** 2, -1) < 0.04)
    assert len({tuple(np.asarray(r)) for r in x}) == 4  # separate draws, separate points
    np.testing.assert_array_equal(run(jax.random.PRNGKey(0))[0], x)


def test_argument_errors():
    bounds, f = unit_box(2), lambda x: -jnp.sum(x**2, -1)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="method"):
        maximize_acquisition(key, f, bounds, method="newton")
    with pytest.raises(ValueError, match="num_restarts"):
        maximize_acquisition(key, f, bounds, num_candidates=4, num_restarts=5)
    with pytest.raises(ValueError, match="bounds"):
        maximize_acquisition(key, f, jnp.array([[1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"\(n,\)"):  # raised while tracing, before compiling
        jax.jit(lambda k: maximize_acquisition(k, lambda x: x, bounds, method="none"))(key)
    # the caller's own candidates: their shape and count against num_restarts, named
    with pytest.raises(ValueError, match=r"candidates must have shape \(n, 2\)"):
        maximize_over_candidates(f, bounds, jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="num_restarts"):
        maximize_over_candidates(f, bounds, jnp.zeros((4, 2)), num_restarts=5)
    with pytest.raises(ValueError, match="method"):
        maximize_over_candidates(f, bounds, jnp.zeros((4, 2)), num_restarts=2, method="newton")


# ---------------------------------------------------------------------- no observed point twice


def test_near_observed_equals_brute_force():
    # Against a numpy double loop over the Chebyshev distance in units of the box's width; NaN
    # rows (buffer padding) never match. Exact: both compare the same float64 differences.
    rng = np.random.default_rng(3)
    box = jnp.asarray([[-5.0, 0.0, 2.0], [10.0, 15.0, 2.5]])
    width = np.asarray(box[1] - box[0])
    observed = np.asarray(box[0]) + width * rng.random((9, 3))
    observed[4] = np.nan
    points = np.concatenate([observed[:3] + 0.5e-4 * width * rng.uniform(-1, 1, (3, 3)),
                             observed[5:7] + 3e-4 * width, np.asarray(box[0]) + width *
                             rng.random((5, 3)), observed[4:5]])
    points[-1] = 0.0
    got = np.asarray(near_observed(jnp.asarray(points), jnp.asarray(observed), box, 1e-4))
    want = [any(np.all(np.abs(p - o) / width <= 1e-4) for o in observed if np.all(np.isfinite(o)))
            for p in points]
    np.testing.assert_array_equal(got, want)
    assert got[:3].all() and not got[3:].any()


@pytest.mark.parametrize("method", ["pgd", "none"])
def test_an_observed_maximiser_is_replaced_by_the_best_distinct_point(method):
    # The acquisition peaks at an observed point x0 (a candidate through x_best): the plain
    # search returns x0; with observed=x0 the result is the best point of the search's pool that
    # is at least MIN_DISTANCE from x0 in some coordinate, as recomputed here from the info's
    # refined values. Mutation checked: dropping stage 5 from _maximize_over fails the second
    # assertion block.
    box = unit_box(2)
    x0 = jnp.asarray([[0.3, 0.7]])
    acq = lambda x: -jnp.sum((x - x0) ** 2, axis=-1)  # noqa: E731
    kw = dict(num_candidates=64, num_restarts=4, x_best=x0, num_steps=20, method=method)
    x, v, info = maximize_acquisition(jax.random.PRNGKey(0), acq, box, **kw)
    np.testing.assert_array_equal(x, x0[0])
    assert not bool(info.replaced)
    x, v, info = maximize_acquisition(jax.random.PRNGKey(0), acq, box, observed=x0, **kw)
    assert bool(info.replaced)
    assert float(jnp.max(jnp.abs(x - x0[0]))) > MIN_DISTANCE
    np.testing.assert_allclose(v, acq(x[None])[0], rtol=1e-12)
    # it is the best distinct point among the refined starts (the pool's head)
    refined = np.asarray(info.refined_values)
    assert float(v) >= refined[refined < -MIN_DISTANCE**2].max(initial=-np.inf) - 1e-15
    # an observed point elsewhere changes nothing
    far = jnp.asarray([[0.9, 0.1], [jnp.nan, jnp.nan]])
    x, _, info = maximize_acquisition(jax.random.PRNGKey(0), acq, box, observed=far, **kw)
    np.testing.assert_array_equal(x, x0[0])
    assert not bool(info.replaced)


def test_a_crowded_pool_still_yields_a_distinct_point():
    # The best 100 candidates all sit on an observed corner (as perturbations of it clipped to the
    # box do), more than the pool of num_restarts + DISTINCT_POOL best holds; the 28 others are
    # distinct with lower values. The result is the best of those the spread part of the pool
    # holds, never the corner. Mutation checked: without the spread candidates (the pool only the
    # best ones) the corner is returned and replaced is False.
    box = unit_box(2)
    corner = jnp.asarray([0.0, 1.0])
    others = jnp.stack([jnp.linspace(0.2, 0.8, 28), jnp.linspace(0.1, 0.6, 28)], axis=1)
    cand = jnp.concatenate([jnp.broadcast_to(corner, (100, 2)), others])
    acq = lambda x: -jnp.sum((x - corner) ** 2, axis=-1)  # noqa: E731
    x, v, info = maximize_over_candidates(acq, box, cand, num_restarts=2, method="none",
                                          observed=corner[None])
    assert bool(info.replaced)
    spread = np.arange(0, 128, 128 // DISTINCT_POOL)[:DISTINCT_POOL]
    held = np.asarray(cand)[spread[spread >= 100]]
    np.testing.assert_array_equal(x, held[np.argmax(np.asarray(acq(jnp.asarray(held))))])


def test_argmax_distinct_keeps_a_duplicate_only_without_alternative():
    v = jnp.asarray([1.0, 3.0, 2.0, -jnp.inf])
    i, r = argmax_distinct(v, jnp.asarray([False, True, False, False]))
    assert int(i) == 2 and bool(r)
    # only a -inf entry is distinct: it is still taken (a noise-free repeat teaches nothing)
    i, r = argmax_distinct(v, jnp.asarray([True, True, True, False]))
    assert int(i) == 3 and bool(r)
    i, r = argmax_distinct(v, jnp.asarray([True, True, True, True]))  # no alternative: stays
    assert int(i) == 1 and not bool(r)
    with pytest.raises(ValueError, match="observed must have shape"):
        maximize_acquisition(jax.random.PRNGKey(0), lambda x: -jnp.sum(x**2, -1), unit_box(2),
                             num_candidates=8, num_restarts=2, observed=jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match="min_distance must be"):
        maximize_acquisition(jax.random.PRNGKey(0), lambda x: -jnp.sum(x**2, -1), unit_box(2),
                             num_candidates=8, num_restarts=2, min_distance=-1.0)
