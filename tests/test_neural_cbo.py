"""Neural-CBO: building blocks against independent computations, the driver
(vmap, determinism, bookkeeping). Whether it beats random search is a study, not a test:
benchmarks/specs/status_constrained.toml and its committed report."""

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import ntkbo
from ntkbo import acquisition as acq

ncbo = importlib.import_module("ntkbo.algorithms.neural_cbo")
nbo = importlib.import_module("ntkbo.algorithms.neural_bo")

SMALL = dict(network=dict(width=32), training=dict(num_steps=20, optimizer="gd"),
             search=dict(num_candidates=64, num_best=2, num_perturbations=16, chunk_size=64))


def test_select_takes_the_best_ei_among_the_optimistically_feasible():
    # Mutations caught: argmin of log EI (picks 1 or 3), feasibility as LCB < 0 (excludes row 1's
    # 0) or as "any constraint <= 0" (admits 0), infeasible candidates ranked above feasible ones
    # with log EI = -inf, the fallback without the per-constraint scales s_k.
    log_ei = jnp.array([5.0, 1.0, 3.0, -jnp.inf])
    lcb = jnp.array([[1.0, -1.0], [-1.0, 0.0], [-2.0, -3.0], [-1.0, -1.0]])
    i, ok, _ = ncbo.select(log_ei, lcb, jnp.ones(2))
    # candidate 0 has the largest EI but LCB_1 > 0; of 1, 2, 3 (LCB <= 0, 0 included) 2 is best
    assert int(i) == 2 and bool(ok)
    # LCB = 0 is feasible (Alg. 3: LCB_k <= 0): the larger EI at LCB exactly 0 wins
    i, ok, _ = ncbo.select(jnp.array([1.0, 5.0]), jnp.array([[-1.0], [0.0]]), jnp.ones(1))
    assert int(i) == 1 and bool(ok)
    # a feasible candidate with log EI = -inf still beats infeasible ones
    i, ok, _ = ncbo.select(jnp.array([0.0, -jnp.inf]), jnp.array([[1.0], [-1.0]]), jnp.ones(1))
    assert int(i) == 1 and bool(ok)
    # none feasible: the smallest sum_k [LCB_k / s_k]^+; with s = (10, 1) the sums are
    # (0.3, 1.4, 1.2), with s = (1, 10) they are (3, 4.1, 2.1)
    lcb = jnp.array([[3.0, -1.0], [4.0, 1.0], [2.0, 1.0]])
    i, ok, _ = ncbo.select(jnp.zeros(3), lcb, jnp.array([10.0, 1.0]))
    assert int(i) == 0 and not bool(ok)
    i, ok, _ = ncbo.select(jnp.zeros(3), lcb, jnp.array([1.0, 10.0]))
    assert int(i) == 2 and not bool(ok)
    # an observed candidate is passed over by the same rule: without 2, the best feasible EI is
    # candidate 1's; with none feasible, the next least violating (2 observed: 0). Mutation checked:
    # ignoring ``duplicate`` fails both.
    i, ok, r = ncbo.select(log_ei, jnp.array([[1.0, -1.0], [-1.0, 0.0], [-2.0, -3.0],
                                              [-1.0, -1.0]]), jnp.ones(2),
                           jnp.array([False, False, True, False]))
    assert int(i) == 1 and bool(ok) and bool(r)
    i, ok, r = ncbo.select(jnp.zeros(3), lcb, jnp.array([1.0, 10.0]),
                           jnp.array([False, False, True]))
    assert int(i) == 0 and not bool(ok) and bool(r)


def test_incumbent_ranges_over_the_observed_feasible_points():
    # Mutations caught: the incumbent over every evaluated point although some were observed
    # feasible (it would be 0.1, the infeasible point's mean); feasibility read as c > 0 or as
    # "any constraint" instead of "every constraint" (pool {1} or {0, 1, 2}); padding rows in the
    # pool (mean -9 at the masked row 4); no fallback when nothing is feasible (+inf, not -0.5).
    v = jnp.array([0.1, 0.7, 0.4, 2.0, -9.0])
    mask = jnp.array([True, True, True, True, False])
    c_obs = jnp.array([[0.5, -1.0], [-0.2, -0.3], [-1.0, 0.2], [0.0, 0.0], [-5.0, -5.0]])
    pool = ncbo.incumbent_pool(mask, c_obs)
    # feasible iff every c_k <= 0 (0 included): rows 1 and 3
    np.testing.assert_array_equal(pool, [False, True, False, True, False])
    assert float(ncbo.incumbent(v, pool)) == 0.7
    # nothing observed feasible: every evaluated point (the thesis's mu^+), padding excluded
    none = ncbo.incumbent_pool(mask, jnp.abs(c_obs) + 0.1)
    np.testing.assert_array_equal(none, mask)
    assert float(ncbo.incumbent(jnp.array([0.1, -0.5, 0.4, 2.0, -9.0]), none)) == -0.5


def test_lower_confidence_bound_is_optimistic():
    # LCB_k = u_k - beta_k sigma_k - slack (Cor. 4.1.6): more uncertainty makes a constraint look
    # more feasible. Mutations caught: + beta sigma (pessimistic), + slack, beta applied to u.
    u, sigma, beta = jnp.array([0.3, -0.1]), jnp.array([0.2, 0.5]), jnp.array([2.0, 1.0])
    np.testing.assert_allclose(ncbo.lower_confidence_bound(u, sigma, beta, 0.05),
                               [0.3 - 0.4 - 0.05, -0.1 - 0.5 - 0.05], rtol=1e-15)


def test_information_gain_and_beta_rule():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(6, 9))
    mask = np.array([True] * 4 + [False] * 2)
    lam = 0.3
    chol = nbo.dual_factor(jnp.asarray(g), jnp.asarray(mask), lam, jitter=0.0)
    k = g[:4] @ g[:4].T
    ref = 0.5 * np.linalg.slogdet(np.eye(4) + k / lam)[1]
    np.testing.assert_allclose(ncbo.information_gain(chol, jnp.asarray(mask), lam), ref,
                               rtol=1e-12)  # Cholesky vs LU log-determinant, float64 rounding
    # Lemma 4.1.5: beta = B + R sqrt(gamma + 2 + 2 log(1 / delta))
    np.testing.assert_allclose(ncbo.beta_theory(3.0, B=2.0, R=0.5, delta=0.05),
                               2.0 + 0.5 * math.sqrt(3.0 + 2.0 + 2.0 * math.log(20.0)), rtol=1e-15)


def test_constrained_ei_matches_scipy():
    # moderate z only: the textbook formula used as reference cancels in the far tail (z < -5)
    mu, sigma, best = np.array([0.3, -1.0, 1.5]), np.array([0.5, 2.0, 0.4]), 0.5
    mu_c = np.array([[-1.0, 0.5], [0.2, -3.0], [1.0, 1.0]])
    s_c = np.array([[1.0, 0.5], [0.1, 2.0], [3.0, 0.2]])
    z = (best - mu) / sigma
    ei = (best - mu) * norm.cdf(z) + sigma * norm.pdf(z)
    pof = np.prod(norm.cdf(-mu_c / s_c), axis=1)
    np.testing.assert_allclose(acq.constrained_expected_improvement(mu, sigma, best, mu_c, s_c),
                               ei * pof, rtol=1e-13)  # scipy's erfc vs jax's ndtr: ~1e-15
    np.testing.assert_allclose(
        acq.log_constrained_expected_improvement(mu, sigma, best, mu_c, s_c),
        np.log(ei) + np.sum(norm.logcdf(-mu_c / s_c), axis=1), rtol=1e-13)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_constraints"):
        ntkbo.algorithms.neural_cbo(n_constraints=0)
    with pytest.raises(ValueError, match="beta"):
        ntkbo.algorithms.neural_cbo(beta="ucb")
    with pytest.raises(ValueError, match="delta"):
        ntkbo.algorithms.neural_cbo(delta=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        ntkbo.algorithms.neural_cbo(epsilon=-1.0)


@pytest.fixture(scope="module")
def runs():
    problem = ntkbo.benchmarks.get("simionescu_constrained")
    algo = ntkbo.algorithms.neural_cbo(n_constraints=1, **SMALL)
    keys = jax.random.split(jax.random.PRNGKey(11), 2)
    one = ntkbo.minimize(algo, problem, 8, keys[0], n_init=4)
    again = ntkbo.minimize(algo, problem, 8, keys[0], n_init=4)
    many = jax.vmap(lambda k: ntkbo.minimize(algo, problem, 8, k, n_init=4))(keys)
    return problem, algo, one, again, many


def test_neural_cbo_through_minimize_same_key_identical_and_vmap(runs):
    problem, algo, one, again, many = runs
    np.testing.assert_array_equal(one.x, again.x)  # the same key: bit-identical
    np.testing.assert_array_equal(one.y, again.y)
    # vmapped = separate runs; batched matmuls may round differently: 1e-9 on points of size ~1
    np.testing.assert_allclose(many.x[0], one.x, rtol=0, atol=1e-9)
    assert many.x.shape == (2, 8, 2) and many.c.shape == (2, 8, 1)
    assert np.all(np.asarray(one.x) >= -1.25) and np.all(np.asarray(one.x) <= 1.25)


def test_neural_cbo_state_holds_every_function_and_info(runs):
    problem, algo, one, _, _ = runs
    s = one.state
    assert algo.n_constraints == 1 and int(s.data.count) == 8
    np.testing.assert_array_equal(s.data.y[:8], one.y)
    np.testing.assert_array_equal(s.constraint_data[0].y[:8], one.c_obs[:, 0])
    info = one.info
    assert info.lcb.shape == (4, 1, 1) and info.beta.shape == (4, 1)
    # beta = B + R sqrt(gamma + 2 + 2 log 10) with gamma >= 0: at least the gamma = 0 value
    assert np.all(np.asarray(info.beta) >= 1.0 + 0.1 * math.sqrt(2 + 2 * math.log(10)) - 1e-12)
    # the reported LCB is the rule's: a chosen point is estimated feasible whenever any was
    lcb = np.asarray(info.lcb)[:, 0, 0]
    est = np.asarray(info.estimated_feasible)
    assert np.all(lcb[est] <= 0)
    assert np.all(np.asarray(one.update_info.train_ok))


def test_cli_runs_neural_cbo_on_a_constrained_problem(tmp_path, capsys):
    import json

    from ntkbo import cli

    out = tmp_path / "cbo"
    rc = cli.main(["run", "--algo", "neural_cbo", "--problem", "branin_constrained", "--budget",
                   "6", "--seeds", "2", "--n-init", "4", "--out", str(out), "--no-plot", "--set",
                   "network={'width': 32}", "training={'num_steps': 10}",
                   "search={'num_candidates': 64, 'num_perturbations': 16}"])
    assert rc == 0
    rec = json.loads((out / "results.json").read_text())
    problem = ntkbo.benchmarks.get("branin_constrained")
    for run in rec["runs"]:
        c = np.asarray(problem.constraints_batch(jnp.asarray(run["x"])))
        np.testing.assert_allclose(run["c"], c, rtol=1e-12)
        assert run["feasible"] == np.all(c <= 0, axis=1).tolist()
        hand = np.minimum.accumulate(np.maximum(np.asarray(run["f"]) - problem.optimum, 0)
                                     + np.maximum(c[:, 0], 0))
        np.testing.assert_allclose(run["metric"], hand, rtol=1e-12)
    assert rec["n_constraints"] == 1 and "feasible point found" in capsys.readouterr().out


def test_candidate_set_and_posterior_moments_called_directly():
    """The module functions ``suggest`` wires. ``candidate_set``: the Sobol
    points first, then the best points of the incumbent pool in the order of the standardised
    objective (a point outside the pool never a centre), then perturbations in the cube near
    their centres. ``posterior_moments`` in chunks of 7 (with padding) against a dense numpy
    computation of each network's output and of ``|g|^2 - g_X^T (G G^T + lam I)^-1 g_X``.
    Mutations caught: centres ranked worst-first or taken outside the pool; the chunks' padding
    not cut (shape) or their order mixed (values); the constraint network's variance computed
    with the objective's features. The reference uses the autodiff gradient features
    (``grad_features``), the algorithm the per-layer factors (``ntkbo.kernels.structured``)."""
    from ntkbo.algorithms.neural_bo import dual_factor, paper_W_std
    from ntkbo.kernels import grad_features, mlp

    rng = np.random.default_rng(0)
    z = rng.uniform(size=(8, 2))
    y0 = np.array([0.5, -1.0, 2.0, -3.0, 0.1, 9.0, -0.2, 0.0])
    # best in pool: 1, 4 (3 is better but out)
    pool = np.array([True, True, True, False, True, True, False, False])
    cand = np.asarray(ncbo.candidate_set(jax.random.PRNGKey(1), jnp.asarray(z), jnp.asarray(y0),
                                       jnp.asarray(pool), num_candidates=16, num_best=2,
                                       num_perturbations=6, perturb_scale=0.02))
    assert cand.shape == (16 + 2 + 6, 2)
    k_cand, _ = jax.random.split(jax.random.PRNGKey(1))
    unit = np.array([[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(cand[:16], ntkbo.qmc.sobol(k_cand, 16, unit))
    np.testing.assert_array_equal(cand[16:18], z[[1, 4]])
    local = cand[18:]
    assert np.all((local >= 0) & (local <= 1))
    # perturbation j is centred on centre j % 2; 0.02 std: within 0.15 (7.5 std) of it
    assert np.all(np.abs(local - z[[1, 4]][np.arange(6) % 2]) < 0.15)

    d_in, width, lam = 3, 16, 0.01  # the sphere input map: d + 1 inputs
    init_fn, apply_fn, _ = mlp(1, width, W_std=paper_W_std(d_in, 1))
    feats = grad_features(apply_fn)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    params0 = jax.vmap(lambda k: init_fn(k, (-1, d_in))[1])(keys)
    params = jax.tree_util.tree_map(lambda a: a * 1.1, params0)  # "trained": differs from W_0
    mask = jnp.asarray(np.arange(8) < 6)
    ze = ncbo.embed(jnp.asarray(z), "sphere")
    g_data = jax.vmap(feats, in_axes=(None, 0))(ze, params0)
    chol = jax.vmap(lambda g: dual_factor(g, mask, lam))(g_data)
    zc = rng.uniform(size=(17, 2))
    mu, var = ncbo.posterior_moments(apply_fn, params, params0,
                                     ncbo.data_factors(apply_fn, params0, ze), mask, chol,
                                     jnp.asarray(zc), input_map="sphere", chunk_size=7)
    assert mu.shape == var.shape == (2, 17)
    zce = ncbo.embed(jnp.asarray(zc), "sphere")
    for k in range(2):
        pk = jax.tree_util.tree_map(lambda a: a[k], params)
        p0 = jax.tree_util.tree_map(lambda a: a[k], params0)
        np.testing.assert_allclose(mu[k], np.asarray(apply_fn(pk, zce))[:, 0], rtol=1e-12)
        gx, gd = np.asarray(feats(zce, p0)), np.asarray(feats(ze, p0))[:6]
        gram = gd @ gd.T
        gram += (lam + 1e-10 * np.mean(np.diag(gram))) * np.eye(6)  # ntkbo.gp's jitter
        cross = gx @ gd.T
        dense = np.sum(gx * gx, 1) - np.einsum("ij,ji->i", cross, np.linalg.solve(gram, cross.T))
        # float64; the subtraction |g|^2 - ... loses ~1e-12 of |g|^2 ~ 1e1: atol 1e-9
        np.testing.assert_allclose(var[k], np.maximum(dense, 0.0), rtol=1e-7, atol=1e-9)


def test_the_state_carries_each_networks_factor(runs):
    """The ``K + 1`` Cholesky factors of the empirical-NTK Gram matrices at
    ``W_0`` are extended at each update rather than refactored at each suggest. After the run's
    5 updates (the design, then 4 rounds) they equal ``neural_bo.dual_factor`` of the final
    buffer, float64 (a refactor and 4 appended rows agree to ~1e-10 of the largest entry). Mutations caught:
    the factors not extended (identity), rows appended at the new count, the objective's
    features used for the constraint's factor."""
    _, algo, one, _, _ = runs
    s = one.state
    d = s.bounds.shape[-1]
    z = nbo.embed(ntkbo.algorithms.observations.to_unit(s.data.x, s.bounds), "sphere")
    cfg = algo.config.to_json()  # the network and lam the run used (its defaults)
    depth = cfg["network"]["depth"]
    feats = nbo.grad_features(
        nbo.mlp(depth, SMALL["network"]["width"], W_std=nbo.paper_W_std(d + 1, depth))[1])
    _, _, _, m = ncbo.targets(s)
    for k in range(2):
        p0 = jax.tree_util.tree_map(lambda a: a[k], s.params0)
        ref = nbo.dual_factor(feats(z, p0), m, cfg["lam"])
        # Cholesky's backward error is relative to the factor as a whole, not to each entry: with
        # a small lam (1e-4 when measured) entries ~1e-3 of the largest carry ~3e-11 absolute;
        # with 1e-9 of the largest entry each of the three mutations below still fails the test
        # (checked with lam 1e-4 and again with the default 1e-5)
        np.testing.assert_allclose(s.factors.chol[k], ref, rtol=1e-9,
                                   atol=1e-9 * float(np.max(np.abs(ref))))
    # the run's one capacity segment: 8 evaluations need a capacity of 8 (ntkbo.loop.plan)
    assert s.factors.chol.shape == (2, 8, 8)
